//! Cameras and doorbells of the house, independent of the controller (issue 30): which
//! controls show pictures ([`camera_kind`]), what their bell history is
//! ([`bell_events`]), what a picture request asks for ([`PictureAsk`]), what comes back
//! ([`CameraPicture`]) and why nothing came ([`CameraFailure`]).
//!
//! Per the Loxone Structure File docs (intercom-alerts.md §1): an `Intercom` (Door Controller)
//! is a Loxone Intercom (`details.deviceType` 1, or 2 for the XL) or a custom camera
//! (`deviceType` 0); it keeps its unanswered rings in the `lastBellEvents` state as
//! `YYYYMMDDHHMMSS|...` (Miniserver local time), each with a picture. An `IntercomV2` has a
//! `bell` state and a video stream, but no bell pictures.
//!
//! The house asks the controller for a picture ([`super::Controller::picture`]) only after
//! deciding here that the control is a camera and, for a bell event, that the event is one
//! the Miniserver lists: a made-up timestamp never reaches a camera.

use std::fmt;

use super::model::{Control, ControlKind};

/// What kind of picture source a control is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CameraKind {
    /// A Loxone Intercom or Intercom XL (`Intercom`, `deviceType` 1 or 2): a still picture,
    /// a stream, and a picture for each ring.
    LoxoneIntercom,
    /// A third-party camera on a Door Controller (`Intercom`, `deviceType` 0): a JPEG or MJPEG
    /// URL; bell pictures when the block has them (`lastBellEventImages`).
    CustomCamera,
    /// An `IntercomV2`: an MJPEG stream at its `address`, no bell pictures.
    IntercomV2,
}

impl CameraKind {
    /// Words for answers: `"Loxone Intercom"`, `"camera"`, `"Intercom (2nd gen.)"`.
    pub fn describe(self) -> &'static str {
        match self {
            CameraKind::LoxoneIntercom => "Loxone Intercom",
            CameraKind::CustomCamera => "camera",
            CameraKind::IntercomV2 => "Intercom (2nd gen.)",
        }
    }

    /// Whether rings of this kind have pictures (`camimage`), per the Structure File docs.
    pub fn has_bell_pictures(self) -> bool {
        !matches!(self, CameraKind::IntercomV2)
    }

    /// `snake_case` name for structured answers.
    pub fn as_str(self) -> &'static str {
        match self {
            CameraKind::LoxoneIntercom => "loxone_intercom",
            CameraKind::CustomCamera => "custom_camera",
            CameraKind::IntercomV2 => "intercom_v2",
        }
    }
}

/// The camera kind of `c`, or `None` for a control that shows no pictures. The one place
/// that decides it.
pub fn camera_kind(c: &Control) -> Option<CameraKind> {
    match c.kind {
        ControlKind::Intercom => {
            let device_type = c.details.get("deviceType").and_then(|v| {
                v.as_i64()
                    .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
            });
            Some(match device_type {
                Some(0) => CameraKind::CustomCamera,
                _ => CameraKind::LoxoneIntercom,
            })
        }
        ControlKind::IntercomV2 => Some(CameraKind::IntercomV2),
        _ => None,
    }
}

/// The rings in a `lastBellEvents` text, oldest first: every `|`-separated entry that is a
/// Miniserver local time `YYYYMMDDHHMMSS` (14 digits); a single ring without `|` counts too.
/// Anything else is skipped.
pub fn bell_events(text: &str) -> Vec<String> {
    let mut out: Vec<String> = text
        .split('|')
        .map(str::trim)
        .filter(|s| s.len() == 14 && s.bytes().all(|b| b.is_ascii_digit()))
        .map(str::to_string)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// `YYYYMMDDHHMMSS` as `YYYY-MM-DD HH:MM:SS` (the text stays Miniserver local time).
pub fn stamp_text(stamp: &str) -> String {
    if stamp.len() != 14 || !stamp.bytes().all(|b| b.is_ascii_digit()) {
        return stamp.to_string();
    }
    format!(
        "{}-{}-{} {}:{}:{}",
        &stamp[0..4],
        &stamp[4..6],
        &stamp[6..8],
        &stamp[8..10],
        &stamp[10..12],
        &stamp[12..14]
    )
}

/// Which picture is wanted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PictureAsk {
    /// The camera's picture now.
    Now,
    /// The picture of the ring at this Miniserver local time (`YYYYMMDDHHMMSS`), one of
    /// [`bell_events`].
    BellEvent(String),
}

/// What the controller needs besides the control to fetch a picture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PictureRequest {
    pub kind: CameraKind,
    pub ask: PictureAsk,
    /// An IntercomV2's `address` state (`host[:port]`), where its stream is.
    pub address: Option<String>,
    /// Longest side of the picture handed out, in pixels.
    pub max_side: u32,
}

/// How a picture was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Obtained {
    /// A still JPEG from the camera.
    Still,
    /// The first frame of the camera's MJPEG stream.
    StreamFrame,
    /// The Miniserver's stored picture of a ring (`camimage`).
    BellPicture,
}

impl Obtained {
    /// Words for answers.
    pub fn describe(self) -> &'static str {
        match self {
            Obtained::Still => "still picture from the camera",
            Obtained::StreamFrame => "first frame of the camera's video stream",
            Obtained::BellPicture => "picture the Miniserver stored for the ring",
        }
    }

    /// `snake_case` name for structured answers.
    pub fn as_str(self) -> &'static str {
        match self {
            Obtained::Still => "still",
            Obtained::StreamFrame => "stream_frame",
            Obtained::BellPicture => "bell_picture",
        }
    }
}

/// A picture ready to hand out: a JPEG of `width` x `height`, scaled from the source.
#[derive(Clone, PartialEq)]
pub struct CameraPicture {
    pub jpeg: Vec<u8>,
    pub width: u32,
    pub height: u32,
    pub source_width: u32,
    pub source_height: u32,
    pub obtained: Obtained,
    /// Bytes read from the camera or Miniserver for it.
    pub bytes_read: u64,
}

impl fmt::Debug for CameraPicture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Pictures of people are never logged.
        write!(
            f,
            "CameraPicture({}x{}, {:?}, {} bytes)",
            self.width,
            self.height,
            self.obtained,
            self.jpeg.len()
        )
    }
}

/// Why a camera gave no picture (after the Miniserver was asked); see
/// [`super::ControllerError::Camera`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CameraFailure {
    /// The camera refused the user and password Loxone Config has for it.
    Unauthorized,
    /// No complete picture within the deadline.
    Timeout,
    /// More bytes than the limit without a complete picture.
    TooLarge,
    /// Something else came: an HTML page, another picture format, nothing.
    NotAPicture,
    /// A JPEG that cannot be decoded (or is too large in pixels).
    Undecodable,
    /// The camera could not be reached or answered with an error status.
    Unreachable,
    /// Another picture from the same camera was still being fetched.
    Busy,
    /// Loxone Config gives this camera no usable address.
    NoAddress,
}

impl CameraFailure {
    /// `snake_case` name for `details.reason`.
    pub fn as_str(self) -> &'static str {
        match self {
            CameraFailure::Unauthorized => "camera_unauthorized",
            CameraFailure::Timeout => "camera_timeout",
            CameraFailure::TooLarge => "camera_too_large",
            CameraFailure::NotAPicture => "camera_not_a_picture",
            CameraFailure::Undecodable => "camera_undecodable",
            CameraFailure::Unreachable => "camera_unreachable",
            CameraFailure::Busy => "camera_busy",
            CameraFailure::NoAddress => "camera_no_address",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_follow_type_and_device_type() {
        let mut c = Control::new("u", "Door", ControlKind::Intercom);
        assert_eq!(camera_kind(&c), Some(CameraKind::LoxoneIntercom));
        c.details.insert("deviceType".into(), 0.into());
        assert_eq!(camera_kind(&c), Some(CameraKind::CustomCamera));
        c.details.insert("deviceType".into(), "2".into());
        assert_eq!(camera_kind(&c), Some(CameraKind::LoxoneIntercom));
        let v2 = Control::new("v", "V2", ControlKind::IntercomV2);
        assert_eq!(camera_kind(&v2), Some(CameraKind::IntercomV2));
        assert!(!CameraKind::IntercomV2.has_bell_pictures());
        assert_eq!(
            camera_kind(&Control::new("s", "S", ControlKind::Switch)),
            None
        );
    }

    #[test]
    fn bell_events_are_fourteen_digits_each() {
        assert_eq!(
            bell_events("20151001075008|20151001074904"),
            ["20151001074904", "20151001075008"]
        );
        assert_eq!(bell_events("20151001074904"), ["20151001074904"]);
        assert!(bell_events("").is_empty());
        assert_eq!(bell_events("x|2015|20151001074904|"), ["20151001074904"]);
        assert_eq!(stamp_text("20261127101500"), "2026-11-27 10:15:00");
    }
}

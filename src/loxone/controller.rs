//! The Loxone client as the house's [`Controller`]: actions become commands
//! ([`super::commands`]), answers become values, and [`LoxoneError`] is mapped once to the
//! controller-independent [`ControllerError`].

use crate::home::{
    Action, CameraFailure, CameraKind, CameraPicture, Control, Controller, ControllerError,
    Obtained, PictureAsk, PictureRequest, Secret, Value,
};

use super::camera::{resolve_placeholders, CameraError, CameraSource, Credentials, VideoInfo};
use super::client::{parse_number_prefix, Client, LlAnswer, LoxoneError};
use super::commands::command_for;
use super::picture::{self, PictureError, PictureLimits};

impl From<CameraError> for ControllerError {
    fn from(e: CameraError) -> Self {
        let failure = match &e {
            CameraError::BadUrl(_) => CameraFailure::NoAddress,
            CameraError::Busy { .. } => CameraFailure::Busy,
            CameraError::Connection(_) | CameraError::Status(_) => CameraFailure::Unreachable,
            CameraError::Timeout { .. } => CameraFailure::Timeout,
            CameraError::TooLarge { .. } => CameraFailure::TooLarge,
            CameraError::Unauthorized { .. } => CameraFailure::Unauthorized,
            CameraError::NotAPicture(_) | CameraError::NoFrame(_) => CameraFailure::NotAPicture,
            CameraError::Picture(_) => CameraFailure::Undecodable,
        };
        ControllerError::Camera {
            failure,
            message: e.to_string(),
        }
    }
}

impl From<PictureError> for ControllerError {
    fn from(e: PictureError) -> Self {
        CameraError::from(e).into()
    }
}

impl From<LoxoneError> for ControllerError {
    fn from(e: LoxoneError) -> Self {
        match e {
            LoxoneError::Connection(m) => ControllerError::Connection(m),
            LoxoneError::Unavailable => {
                ControllerError::Connection("the Miniserver is restarting (503)".into())
            }
            LoxoneError::Unauthorized => ControllerError::Unauthorized(
                "check HOME_USER and HOME_PASS (401 Unauthorized)".into(),
            ),
            // Passed on only when the fresh login could not follow; the next request logs in.
            e @ LoxoneError::TokenUnknown => ControllerError::Connection(e.to_string()),
            LoxoneError::LockedOut { remaining_secs } => {
                ControllerError::LockedOut { remaining_secs }
            }
            LoxoneError::NotFound(m) => ControllerError::NotFound(m),
            LoxoneError::Forbidden(m) => ControllerError::Rejected {
                code: 403,
                message: m,
            },
            LoxoneError::Status { code, message } => ControllerError::Rejected { code, message },
            LoxoneError::BadAnswer(m) => ControllerError::Rejected {
                code: 0,
                message: m,
            },
            LoxoneError::WrongVisuPassword => ControllerError::VisuPasswordWrong,
            LoxoneError::InvalidSegment(m) => ControllerError::InvalidValue(m),
        }
    }
}

/// The answer's value as a number when it is one (units such as `"31.0 Liter"` or `"21.5°"`
/// are dropped), else as text (`"hsv(20,100,50)"`, dates, names).
fn answer_value(a: &LlAnswer) -> Option<Value> {
    let text = a.value_text()?;
    let trimmed = text.trim();
    let numeric_len = trimmed
        .char_indices()
        .take_while(|(i, c)| {
            c.is_ascii_digit() || *c == '.' || (*i == 0 && (*c == '-' || *c == '+'))
        })
        .count();
    let rest = &trimmed[numeric_len..];
    Some(match parse_number_prefix(trimmed) {
        Some(n) if !rest.chars().any(|c| c.is_ascii_digit()) => Value::Number(n),
        _ => Value::Text(text),
    })
}

impl Controller for Client {
    fn act(&self, control: &Control, action: &Action) -> Result<Option<Value>, ControllerError> {
        let cmd = command_for(control, action).map_err(ControllerError::Unsupported)?;
        let answer = self.command(&cmd.target, &cmd.segments)?;
        Ok(answer_value(&answer))
    }

    fn act_secured(
        &self,
        control: &Control,
        action: &Action,
        visu_password: &Secret,
    ) -> Result<Option<Value>, ControllerError> {
        let cmd = command_for(control, action).map_err(ControllerError::Unsupported)?;
        let answer = self.secured_command(&cmd.target, &cmd.segments, visu_password.expose())?;
        Ok(answer_value(&answer))
    }

    /// Bell pictures come from the Miniserver (`camimage`, bounded like a camera fetch); the
    /// current picture from the camera itself: an IntercomV2's stream at its `address` with the
    /// Miniserver user's credentials, otherwise the `alertImage` (a still) or else the
    /// `streamUrl` of the control's `securedDetails`, with its own credentials (or the
    /// Miniserver user's when the URL is the Miniserver itself).
    fn picture(
        &self,
        control: &Control,
        request: &PictureRequest,
    ) -> Result<CameraPicture, ControllerError> {
        let limits = PictureLimits {
            max_side: request.max_side,
            ..PictureLimits::default()
        };
        if let PictureAsk::BellEvent(stamp) = &request.ask {
            let max = self.cameras().limits().max_bytes;
            let body = match self.camimage(&control.uuid, stamp, max) {
                Err(LoxoneError::NotFound(_)) => {
                    return Err(ControllerError::InvalidValue(format!(
                        "the Miniserver has no picture of a ring of {} at {stamp:?}",
                        control.name
                    )))
                }
                Err(LoxoneError::BadAnswer(m)) if m.contains("larger than") => {
                    return Err(CameraError::TooLarge { limit: max }.into())
                }
                other => other?,
            };
            let pic = picture::scale_jpeg(&body, &limits)?;
            return Ok(CameraPicture {
                bytes_read: body.len() as u64,
                jpeg: pic.jpeg,
                width: pic.width,
                height: pic.height,
                source_width: pic.source_width,
                source_height: pic.source_height,
                obtained: Obtained::BellPicture,
            });
        }
        let source = self.camera_source(control, request)?;
        let (pic, fetched) = self
            .cameras()
            .fetch_picture(&control.uuid, &source, &limits)?;
        Ok(CameraPicture {
            jpeg: pic.jpeg,
            width: pic.width,
            height: pic.height,
            source_width: pic.source_width,
            source_height: pic.source_height,
            obtained: match fetched.obtained {
                super::camera::Obtained::Still => Obtained::Still,
                super::camera::Obtained::StreamFrame => Obtained::StreamFrame,
            },
            bytes_read: fetched.bytes_read,
        })
    }

    fn read(&self, control: &Control) -> Result<Value, ControllerError> {
        let answer = self.read_value(&control.uuid)?;
        answer_value(&answer).ok_or_else(|| ControllerError::Rejected {
            code: 0,
            message: format!("no value in the answer for {}", control.uuid),
        })
    }
}

impl Client {
    /// Where the current picture of `control` comes from; only the Miniserver's own data
    /// (the V2's `address` state, `securedDetails`) name it.
    fn camera_source(
        &self,
        control: &Control,
        request: &PictureRequest,
    ) -> Result<CameraSource, ControllerError> {
        let miniserver = Credentials {
            user: self.user().to_string(),
            password: self.password().to_string(),
        };
        let no_address = |why: String| ControllerError::Camera {
            failure: CameraFailure::NoAddress,
            message: format!("{}: {why}", control.name),
        };
        if request.kind == CameraKind::IntercomV2 {
            let address = request
                .address
                .as_deref()
                .ok_or_else(|| no_address("no address reported".into()))?;
            let url = format!("http://{}/mjpg/video.mjpg", address.trim());
            return Ok(CameraSource::new(&url, Some(miniserver))?);
        }
        let details = self.secured_details(&control.uuid)?;
        let video = VideoInfo::parse(&details).map_err(no_address)?;
        let url = video
            .alert_image
            .clone()
            .or_else(|| video.stream_url.clone())
            .ok_or_else(|| {
                no_address("Loxone Config gives it no picture or stream URL (videoInfo)".into())
            })?;
        let url = resolve_placeholders(&url, self.base_url());
        let source = CameraSource::new(&url, video.credentials)?;
        let on_miniserver = source.origin().eq_ignore_ascii_case(self.base_url());
        Ok(if on_miniserver {
            source.or_credentials(Some(miniserver))
        } else {
            source
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ll(v: &str) -> LlAnswer {
        LlAnswer {
            control: String::new(),
            value: serde_json::Value::String(v.into()),
            code: 200,
            extra: Default::default(),
        }
    }

    #[test]
    fn values_are_numbers_or_text() {
        assert_eq!(answer_value(&ll("75.000")), Some(Value::Number(75.0)));
        assert_eq!(answer_value(&ll("31.0 Liter")), Some(Value::Number(31.0)));
        assert_eq!(answer_value(&ll("-2.5°")), Some(Value::Number(-2.5)));
        assert_eq!(
            answer_value(&ll("hsv(20,100,50)")),
            Some(Value::Text("hsv(20,100,50)".into()))
        );
        assert_eq!(
            answer_value(&ll("2017-11-22 18:41:01")),
            Some(Value::Text("2017-11-22 18:41:01".into()))
        );
    }

    #[test]
    fn errors_map_to_spec_codes() {
        let e: ControllerError = LoxoneError::Connection("refused".into()).into();
        assert_eq!(e.code(), "CONNECTION_ERROR");
        let e: ControllerError = LoxoneError::NotFound("x".into()).into();
        assert_eq!(e.code(), "DEVICE_NOT_FOUND");
        let e: ControllerError = LoxoneError::LockedOut { remaining_secs: 9 }.into();
        assert!(e.to_string().contains("9 s"));
    }
}

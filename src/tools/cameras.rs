//! Cameras and doorbells (issue 30): `get_camera_image`, `list_doorbell_events`.
//!
//! `get_camera_image` returns a picture of an intercom or camera (by name, `"Name Room"`, room
//! or UUID, as `control_device` resolves devices) as an MCP `image` content block (JPEG,
//! base64, long side at most the house's picture size, 640 px by default), beside the usual
//! text envelope; `structuredContent` has the same facts without the bytes. Its permission is
//! [`Permission::Cameras`]: only admin keys and keys whose owner set `cameras` may call it;
//! every call is written to the audit log (key, camera, time, bytes; never the picture) and
//! its answers are never cached ([`HomeTools::call_shared`](super::HomeTools::call_shared)).
//!
//! `list_doorbell_events` lists the house's intercoms and cameras, whether each is ringing
//! (`bell`), and the rings the Miniserver keeps in `lastBellEvents`: the unanswered ones
//! (per the Structure File docs, an answered ring is not listed), each with its Miniserver
//! timestamp (the `bell_event` to ask `get_camera_image` for) and the time in the owner's time
//! zone. `home://doorbells` is the same list, and subscribers are told when it changes.

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::args;
use super::view;
use super::{Caller, Ctx, Permission, Tool, ToolError, READ_ONLY};
use crate::home::camera;
use crate::home::{Control, ControllerError, Home, PictureAsk};

/// Where a tool's `data` carries its picture: [`super::success`] moves it into an `image`
/// content block (`{"mime_type", "base64"}`), so neither the text nor `structuredContent`
/// ever holds the bytes.
pub(crate) const IMAGE_FIELD: &str = "__image";

pub(super) fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "get_camera_image",
            title: "Camera picture",
            description: "Picture of an intercom or camera (JPEG, <= 640 px), now or of a ring (bell_event, or latest).",
            permission: Permission::Cameras,
            annotations: READ_ONLY,
            input_schema: || {
                args::closed(
                    json!({
                        "device": {"type": "string", "description": "Name, room or UUID"},
                        "room": args::room_schema(),
                        "bell_event": {"type": "string", "description": "YYYYMMDDHHMMSS or latest"}
                    }),
                    &["device"],
                )
            },
            data_schema: || json!({"type": "object", "required": ["camera", "taken_at", "picture"]}),
            run: get_camera_image,
        },
        Tool {
            name: "list_doorbell_events",
            title: "Doorbell rings",
            description: "Intercoms: ringing or not, unanswered rings (newest first).",
            permission: Permission::Read,
            annotations: READ_ONLY,
            input_schema: || {
                args::closed(
                    json!({
                        "device": {"type": "string"},
                        "room": args::room_schema(),
                        "limit": {"type": "integer", "minimum": 1, "maximum": 50}
                    }),
                    &[],
                )
            },
            data_schema: || {
                args::listing_schema(
                    "doorbells",
                    args::item_schema(&["name", "events"]),
                    &[],
                )
            },
            run: list_doorbell_events,
        },
    ]
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CameraArgs {
    device: String,
    room: Option<String>,
    bell_event: Option<String>,
}

/// A camera control by name, `"Name Room"`, room or UUID: the resolver of `control_device`
/// limited to cameras; a room with exactly one camera names it.
fn resolve_camera<'h>(
    home: &'h Home,
    device: &str,
    room: Option<&str>,
) -> Result<&'h Control, ToolError> {
    let is_camera = |c: &Control| camera::camera_kind(c).is_some();
    match home.resolve_control(device, room, &is_camera) {
        Ok(c) => Ok(c),
        Err(e) => {
            // "Außenbereich": the one camera of that room.
            if room.is_none() {
                if let Ok(r) = home.resolve_room(device) {
                    let in_room: Vec<&Control> = home
                        .controls
                        .iter()
                        .filter(|c| c.room.as_deref() == Some(r.uuid.as_str()) && is_camera(c))
                        .collect();
                    if let [one] = in_room.as_slice() {
                        return Ok(one);
                    }
                }
            }
            Err(e.into())
        }
    }
}

/// `"20261127101500"`, `"2026-11-27 10:15:00"` or `"latest"` (the newest listed ring) as
/// the ring's timestamp; `None` when `text` is none of these.
fn bell_stamp(text: &str, known: Option<&[String]>) -> Result<String, ToolError> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("latest") {
        return known.and_then(|k| k.last().cloned()).ok_or_else(|| {
            ToolError::Controller(ControllerError::InvalidValue(
                "bell_event \"latest\": no rings are known for this intercom".into(),
            ))
        });
    }
    let digits: String = t.chars().filter(char::is_ascii_digit).collect();
    let only_separators = t
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '-' | ' ' | ':' | 'T' | '.'));
    if digits.len() == 14 && only_separators {
        Ok(digits)
    } else {
        Err(ToolError::InvalidParams(format!(
            "bell_event: {t:?} is not YYYYMMDDHHMMSS (Miniserver time) or \"latest\""
        )))
    }
}

fn get_camera_image(
    house: &Ctx,
    a: &Map<String, Value>,
    caller: &Caller,
) -> Result<Value, ToolError> {
    let a: CameraArgs = args::parse(a)?;
    let home = house.home();
    let c = resolve_camera(&home, &a.device, a.room.as_deref())?;
    caller.check_access(house, c)?;
    let kind = camera::camera_kind(c).ok_or_else(|| {
        ToolError::InvalidParams(format!("{} is not a camera or intercom", c.name))
    })?;
    let ask = match &a.bell_event {
        Some(e) => PictureAsk::BellEvent(bell_stamp(e, house.bell_events(c).as_deref())?),
        None => PictureAsk::Now,
    };
    let time = house.time();
    let fetched_at = crate::home::time::now();
    let pic = house.picture(c, ask.clone())?;
    let (taken_at, when) = match &ask {
        PictureAsk::BellEvent(stamp) => (
            time.parse_compact(stamp, None)
                .map(|t| time.format(t))
                .unwrap_or_else(|| camera::stamp_text(stamp)),
            "the time of the ring (Miniserver clock)",
        ),
        PictureAsk::Now => (time.format(fetched_at), "when it was fetched"),
    };
    let label = view::label(&home, c);
    let summary = format!(
        "{label}, {}: {} taken {taken_at} ({when}); {}x{} JPEG",
        kind.describe(),
        pic.obtained.describe(),
        pic.width,
        pic.height
    );
    use base64::Engine;
    let base64 = base64::engine::general_purpose::STANDARD.encode(&pic.jpeg);
    Ok(json!({
        "camera": {
            "uuid": c.uuid,
            "name": c.name,
            "room": view::room_of(&home, c),
            "kind": kind.as_str(),
        },
        "taken_at": taken_at,
        "time_zone": time.name(),
        "bell_event": match &ask { PictureAsk::BellEvent(s) => Some(s.clone()), PictureAsk::Now => None },
        "obtained": pic.obtained.as_str(),
        "picture": {
            "mime_type": "image/jpeg",
            "width": pic.width,
            "height": pic.height,
            "bytes": pic.jpeg.len(),
            "source_width": pic.source_width,
            "source_height": pic.source_height,
            "bytes_read": pic.bytes_read,
        },
        "summary": summary,
        IMAGE_FIELD: {"mime_type": "image/jpeg", "base64": base64},
    }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DoorbellArgs {
    device: Option<String>,
    room: Option<String>,
    limit: Option<i64>,
}

fn list_doorbell_events(
    house: &Ctx,
    a: &Map<String, Value>,
    caller: &Caller,
) -> Result<Value, ToolError> {
    let a: DoorbellArgs = args::parse(a)?;
    let limit = match a.limit {
        Some(n) if (1..=50).contains(&n) => n as usize,
        Some(n) => {
            return Err(ToolError::InvalidParams(format!(
                "limit: must be 1-50 (got {n})"
            )))
        }
        None => 10,
    };
    let home = house.home();
    let only = match &a.device {
        Some(d) => Some(resolve_camera(&home, d, a.room.as_deref())?.uuid.clone()),
        None => None,
    };
    let room = args::room_uuid(&home, a.room.as_deref())?;
    let time = house.time();
    let mut out = Vec::new();
    for c in &home.controls {
        let Some(kind) = camera::camera_kind(c) else {
            continue;
        };
        if only.as_ref().is_some_and(|u| *u != c.uuid)
            || (only.is_none() && room.as_ref().is_some_and(|r| c.room.as_ref() != Some(r)))
            || caller.permits(&home, c).is_err()
        {
            continue;
        }
        let ringing = house
            .state_text(c, "bell")
            .and_then(|t| t.trim().parse::<f64>().ok())
            .map(|b| b > 0.0);
        let known = house.bell_events(c);
        let events: Vec<Value> = known
            .iter()
            .flatten()
            .rev()
            .take(limit)
            .map(|stamp| {
                json!({
                    "bell_event": stamp,
                    "time": time.parse_compact(stamp, None).map(|t| time.format(t)),
                    "answered": false,
                    "has_picture": kind.has_bell_pictures(),
                })
            })
            .collect();
        out.push(json!({
            "uuid": c.uuid,
            "name": c.name,
            "room": view::room_of(&home, c),
            "kind": kind.as_str(),
            "ringing": ringing,
            "events_known": known.is_some(),
            "events": events,
            "pictures": kind.has_bell_pictures(),
        }));
    }
    if let (Some(d), true) = (&a.device, out.is_empty()) {
        return Err(ToolError::InvalidParams(format!(
            "{d} is not an intercom or camera"
        )));
    }
    let n = out.len();
    Ok(json!({"doorbells": out, "total": n, "time_zone": time.name()}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::home::CameraKind;

    #[test]
    fn bell_events_are_read_in_three_forms() {
        let known = vec!["20261127101500".to_string(), "20261127121003".to_string()];
        assert_eq!(
            bell_stamp("20261127101500", None).unwrap(),
            "20261127101500"
        );
        assert_eq!(
            bell_stamp("2026-11-27 10:15:00", None).unwrap(),
            "20261127101500"
        );
        assert_eq!(
            bell_stamp("latest", Some(&known)).unwrap(),
            "20261127121003"
        );
        assert!(bell_stamp("latest", None).is_err());
        assert!(bell_stamp("yesterday", None).is_err());
        assert!(bell_stamp("../../2026112710150", None).is_err());
    }

    #[test]
    fn camera_kinds_are_described() {
        assert_eq!(CameraKind::IntercomV2.as_str(), "intercom_v2");
    }
}

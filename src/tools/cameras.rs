//! Cameras and doorbells (issue 30): `get_camera_image`, `list_doorbell_events`.
//!
//! `get_camera_image` returns a picture of an intercom or camera (by name, `"Name Room"`, room
//! or UUID, as `control_device` resolves devices) as an MCP `image` content block (JPEG,
//! base64, long side at most the house's picture size, 640 px by default), beside the usual
//! text envelope; `structuredContent` has the same facts without the bytes. It shows pictures
//! of people ([`Tool::shows_pictures`]): only keys with the `cameras` grant (admin keys, and
//! keys whose owner set `cameras`) may call it, the gate refusing the others before anything
//! reaches a camera; every call is written to the audit log ([`audit_target`]: key, camera,
//! bytes; never the picture); its answers are never cached, and no workflow may hold it. It
//! only reads (`readOnlyHint`).
//!
//! `list_doorbell_events` lists the house's intercoms and cameras, whether each is ringing
//! (`bell`), and the rings the Miniserver keeps in `lastBellEvents`: the unanswered ones
//! (per the Structure File docs, an answered ring is not listed), each with its Miniserver
//! timestamp (the `bell_event` to ask `get_camera_image` for) and the time in the owner's time
//! zone. `home://doorbells` is the same list, and subscribers are told when it changes.

use serde_json::{json, Value};

use super::args;
use super::schema::{tool_args, Limit};
use super::view;
use super::{Caller, Ctx, Reach, Tool, ToolError};
use crate::home::camera;
use crate::home::{Control, ControllerError, Family, Home, PictureAsk};
use crate::mcp::Content;

/// Where `get_camera_image`'s `data` carries its picture until the answer is rendered:
/// [`take_image`] moves it into an `image` content block, so neither the text nor
/// `structuredContent` ever holds the bytes.
const IMAGE_FIELD: &str = "__image";

pub fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "get_camera_image",
            "Camera picture",
            "Picture of an intercom or camera (JPEG), now or of a ring (bell_event: YYYYMMDDHHMMSS or latest).",
            get_camera_image,
        )
        .reach(Reach::Controls { room: "room" })
        .per_control()
        .shows_pictures()
        .data(|| json!({"type": "object", "required": ["camera", "taken_at", "picture"]})),
        Tool::new(
            "list_doorbell_events",
            "Doorbell rings",
            "Intercoms: ringing or not, unanswered rings (newest first).",
            list_doorbell_events,
        )
        .lists(Reach::Room { room: "room", family: Family::Access })
        .data(|| args::listing_schema("doorbells", args::item_schema(&["name", "events"]), &[])),
    ]
}

/// The `image` content block of a picture tool's `data`, taken out of it (`None` when it
/// holds no picture).
pub(super) fn take_image(data: &mut Value) -> Option<Content> {
    let image = data.as_object_mut()?.remove(IMAGE_FIELD)?;
    Some(Content::Image {
        data: image["base64"].as_str()?.to_string(),
        mime_type: image["mime_type"].as_str()?.to_string(),
    })
}

/// The audit target of a picture handed out, from the tool's `data`
/// ([`crate::audit::picture_target`]: `"{camera name} ({room}): {bytes} bytes"`).
pub(super) fn audit_target(data: &Value) -> Option<String> {
    let bytes = data.pointer("/picture/bytes")?.as_u64()?;
    let name = data.pointer("/camera/name")?.as_str()?;
    let camera = match data.pointer("/camera/room").and_then(Value::as_str) {
        Some(room) => format!("{name} ({room})"),
        None => name.to_string(),
    };
    Some(crate::audit::picture_target(&camera, bytes))
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
            if let (None, Ok(r)) = (room, home.resolve_room(device)) {
                let in_room: Vec<&Control> = home
                    .controls_in_room(&r.uuid)
                    .into_iter()
                    .filter(|c| is_camera(c))
                    .collect();
                if let [one] = in_room.as_slice() {
                    return Ok(one);
                }
            }
            Err(e.into())
        }
    }
}

/// `"20261127101500"`, `"2026-11-27 10:15:00"` or `"latest"` (the newest of `known`, the
/// rings the Miniserver lists) as the ring's timestamp.
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

tool_args! {
    /// The arguments of `get_camera_image`.
    struct CameraArgs {
        device: String { about: "Name, room or UUID" },
        room: Option<String>,
        bell_event: Option<String>,
    }
}

fn get_camera_image(house: &Ctx, a: CameraArgs, caller: &Caller) -> Result<Value, ToolError> {
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
    let (taken_at, when, bell_event) = match ask {
        PictureAsk::BellEvent(stamp) => (
            time.parse_compact(&stamp, None)
                .map(|t| time.format(t))
                .unwrap_or_else(|| camera::stamp_text(&stamp)),
            "the time of the ring (Miniserver clock)",
            Some(stamp),
        ),
        PictureAsk::Now => (time.format(fetched_at), "when it was fetched", None),
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
        "bell_event": bell_event,
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

tool_args! {
    /// The arguments of `list_doorbell_events`.
    struct DoorbellArgs {
        device: Option<String>,
        room: Option<String>,
        limit: Limit,
    }
}

fn list_doorbell_events(house: &Ctx, a: DoorbellArgs, caller: &Caller) -> Result<Value, ToolError> {
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
        let wanted = match &only {
            Some(u) => *u == c.uuid && caller.permits(&home, c).is_ok(),
            None => args::listed(&home, caller, room.as_ref(), c),
        };
        if !wanted {
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
            .take(a.limit.0)
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

    /// The picture leaves `data` for its block; the audit target names camera and bytes.
    #[test]
    fn the_picture_goes_to_its_block_and_the_audit_names_only_its_size() {
        let mut data = json!({
            "camera": {"name": "Haustür", "room": "Außenbereich"},
            "picture": {"bytes": 1234},
            IMAGE_FIELD: {"mime_type": "image/jpeg", "base64": "AAAA"},
        });
        assert_eq!(
            audit_target(&data).as_deref(),
            Some("Haustür (Außenbereich): 1234 bytes")
        );
        match take_image(&mut data) {
            Some(Content::Image {
                data: b64,
                mime_type,
            }) => {
                assert_eq!((b64.as_str(), mime_type.as_str()), ("AAAA", "image/jpeg"))
            }
            other => panic!("{other:?}"),
        }
        assert!(data.get(IMAGE_FIELD).is_none());
        assert!(take_image(&mut data).is_none());
    }
}

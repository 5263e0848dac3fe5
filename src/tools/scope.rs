//! Which tool calls a key limited to rooms or categories may make (issue 6; the gate asks
//! [`check`] through `HomeTools::check_scope` before the call runs).
//!
//! Two layers keep a scoped key inside its part of the house:
//! 1. **Every command** is checked at the last moment ([`super::Caller::act`]): a control
//!    outside the scope is refused with `INSUFFICIENT_PERMISSIONS`, whatever tool, batch or
//!    workflow step sends it. This is the guarantee.
//! 2. **Before the call**, [`check`] refuses what would read or reach outside the scope, and is
//!    an allow-list (fail closed): tools not listed here, workflows among them, are refused.
//!
//! | tools | a key limited to rooms needs | to categories needs |
//! |---|---|---|
//! | `control_device`, `set_dimmer`, `control_multiple_devices`, `arm_alarm`, `disarm_alarm`, `acknowledge_alarm`, `control_audio_zone`, `set_audio_volume` | a `room` argument, if given, in scope (devices are checked per command) | (per command) |
//! | room-wide: `control_room_lights`, `room_all_on`, `control_room_rolladen`, `set_room_temperature`, `set_room_mode`, `control_room_devices`; `control_*_unified` with `scope: room` | the room in scope | the family (lighting, blinds, climate; `device_type(s)`) listed |
//! | house-wide: `control_all_lights`, `control_all_rolladen`; `control_*_unified` with `scope: category` or `system` | refused | the family listed |
//! | reads with a `room` filter: `list_devices`, `get_*_status`, `get_temperature_sensors`, `discover_rolladen_capabilities`, `get_home_summary` | `room` given and in scope | the family listed (`list_devices`: a `category` in scope; `get_home_summary`: refused) |
//! | `get_zone_temperature` | the controller in scope | the controller in scope |
//! | `list_rooms` | allowed: lists only the key's rooms | allowed |
//! | anything else (workflows, ...) | refused | refused |

use serde_json::{Map, Value};

use crate::home::model::{Family, Home, TypeFamily};
use crate::home::Scope;
use crate::home::Word;

/// `Ok` when tool `name` with `args` stays inside `scope` as far as the arguments tell (see
/// the module docs); `Err` with the reason otherwise.
pub fn check(
    home: &Home,
    name: &str,
    args: &Map<String, Value>,
    scope: &Scope,
) -> Result<(), String> {
    let arg = |k: &str| args.get(k).and_then(Value::as_str);
    let room = |key: &str, required: bool| -> Result<(), String> {
        match arg(key) {
            Some(q) => {
                let r = home
                    .resolve_room(q)
                    .map_err(|e| format!("room {q:?}: {e}"))?;
                if scope.allows_room(home, Some(&r.uuid)) {
                    Ok(())
                } else {
                    Err(format!("room {} is outside this key's rooms", r.name))
                }
            }
            None if required && scope.limits_rooms() => Err(format!(
                "this key is limited to rooms ({}): name one in `{key}`",
                scope.rooms.join(", ")
            )),
            None => Ok(()),
        }
    };
    let family = |f: Family| {
        if scope.allows_family(f) {
            Ok(())
        } else {
            Err(format!("{} is outside this key's categories", f.as_str()))
        }
    };
    let house_wide = |f: Family| {
        if scope.limits_rooms() {
            Err("house-wide operations are outside a key limited to rooms; name a room".into())
        } else {
            family(f)
        }
    };
    let unified = |f: Family| match arg("scope").unwrap_or("") {
        "device" => Ok(()),
        "room" => {
            let target = arg("target").ok_or("scope room needs a target room")?;
            let r = home
                .resolve_room(target)
                .map_err(|e| format!("room {target:?}: {e}"))?;
            if !scope.allows_room(home, Some(&r.uuid)) {
                return Err(format!("room {} is outside this key's rooms", r.name));
            }
            family(f)
        }
        _ => house_wide(f),
    };
    match name {
        "control_device"
        | "set_dimmer"
        | "control_multiple_devices"
        | "arm_alarm"
        | "disarm_alarm"
        | "acknowledge_alarm"
        | "control_audio_zone"
        | "set_audio_volume" => room("room", false),
        "control_room_lights" => room("room", true).and(family(Family::Lighting)),
        "room_all_on" => room("room_id", true).and(family(Family::Lighting)),
        "control_room_rolladen" => room("room", true).and(family(Family::Blinds)),
        "set_room_temperature" | "set_room_mode" => room("room", true).and(family(Family::Climate)),
        "control_room_devices" => {
            room("room", true)?;
            if !scope.limits_categories() {
                return Ok(());
            }
            let mut kinds: Vec<&str> = arg("device_type").into_iter().collect();
            if let Some(Value::Array(list)) = args.get("device_types") {
                kinds.extend(list.iter().filter_map(Value::as_str));
            }
            if kinds.is_empty() {
                return Err(
                    "this key is limited to categories: name them in device_type(s)".into(),
                );
            }
            // A generic type (Switch, Pushbutton, ...) has no family of its own: each control's
            // category decides, and the scope check at actuation refuses those outside the key.
            kinds.into_iter().try_for_each(|k| match home.word(k) {
                Ok(Word::Family(f)) => family(f),
                Ok(Word::Type(t)) => match t.type_family() {
                    TypeFamily::Fixed(f) => family(f),
                    TypeFamily::ByCategory => Ok(()),
                },
                Ok(Word::Category(_)) if scope.allows_category_name(home, k) => Ok(()),
                Ok(Word::Category(c)) => {
                    Err(format!("{} is outside this key's categories", c.name))
                }
                Err(e) => Err(e.to_string()),
            })
        }
        "control_all_lights" => house_wide(Family::Lighting),
        "control_all_rolladen" => house_wide(Family::Blinds),
        "control_lights_unified" => unified(Family::Lighting),
        "control_rolladen_unified" => unified(Family::Blinds),
        "list_devices" => {
            room("room", true)?;
            match arg("category") {
                Some(c) if scope.allows_category_name(home, c) => Ok(()),
                Some(c) => Err(format!("category {c:?} is outside this key's categories")),
                None if scope.limits_categories() => Err(format!(
                    "this key is limited to categories ({}): name one in `category`",
                    scope.categories.join(", ")
                )),
                None => Ok(()),
            }
        }
        "get_lights_status" => room("room", true).and(family(Family::Lighting)),
        "get_blinds_status" | "discover_rolladen_capabilities" => {
            room("room", true).and(family(Family::Blinds))
        }
        "get_climate_status" | "get_temperature_sensors" => {
            room("room", true).and(family(Family::Climate))
        }
        "get_audio_status" => room("room", true).and(family(Family::Audio)),
        "get_security_status" => room("room", true).and(family(Family::Security)),
        "get_sensors_status" => room("room", true).and(family(Family::Sensors)),
        "get_home_summary" => {
            if scope.limits_categories() {
                return Err(
                    "the summary covers every category; this key is limited to some".into(),
                );
            }
            room("room", true)
        }
        "get_zone_temperature" => {
            // The tool's own resolution (a room name first, then a controller), so the check
            // sees exactly the controllers the tool would read.
            let q = arg("zone_id").ok_or("zone_id is required")?;
            let (_, controllers) =
                super::climate::zone_controllers(home, q).map_err(|e| e.to_string())?;
            match controllers.iter().find(|c| !scope.contains(home, c)) {
                None => Ok(()),
                Some(c) => Err(format!(
                    "{} is outside this key's rooms and categories",
                    c.name
                )),
            }
        }
        // Lists only the key's rooms (see `devices::list_rooms`).
        "list_rooms" => Ok(()),
        _ => Err("not available to keys limited to rooms or categories".into()),
    }
}

//! MCP resources of the home server: read-only JSON views of the house under the `home://`
//! scheme, computed on every read from the house model and the live values.
//!
//! Most resources are a tool's `data` read with fixed arguments (`home://lighting` is
//! `get_lights_status`, `home://rooms/{room}/devices` is `list_devices` for that room), so a
//! resource and its tool never disagree; a few are composed here ([`system`] status,
//! capabilities and categories; [`detail`]: one device, a room overview, weather).
//!
//! URIs: fixed ones are listed by `resources/list` (with one overview per room, at most
//! [`MAX_LISTED_ROOMS`]); parametrised ones are RFC 6570 templates
//! (`resources/templates/list`). Template values are matched forgivingly and each resource
//! has one *canonical* URI ([`canonical_uri`]), the form [`affected_uris`] reports:
//!
//! * `{room}`: the room's slug ([`slug`]: the folded name, accents and case dropped, every run
//!   of other characters one `-`; "Gäste WC" -> `gaste-wc`), or its UUID when two rooms share a
//!   slug. Reads also accept the name in any case and accents (percent-encoded) or the UUID.
//! * `{category}`: a device family (`lighting`, `blinds`, ... synonyms such as `lights`
//!   accepted) or one of the user's Loxone categories by slug, name or UUID (canonical: its
//!   slug, or UUID when not unique). A family name wins over a Loxone category of that name.
//! * `{type}`: a Loxone control type present in the house (`Jalousie`), any case.
//! * `{uuid}`: a control's or sub-control's UUID.
//!
//! Errors: a URI that is not a URI of this scheme's grammar (no `scheme://`, empty segments,
//! `?` or `#`, bad percent-encoding) is -32602; a well-formed URI naming nothing (another
//! scheme, unknown path, unknown room/category/type/UUID) is -32002 `Resource not found`
//! naming the URI, with `details` a JSON text `{"uri", "reason", "suggestions"}`.

mod affected;
pub(crate) mod complete;
mod detail;
mod system;

pub use crate::home::names::slug;
pub use affected::{affected_uris, AffectedIndex};
pub use complete::complete;

use serde_json::{json, Map, Value};

use crate::home::resolve::{fold, ResolveError};
use crate::home::{Family, Home, Room, Word};
use crate::mcp::{ResourceContents, ResourceDescriptor, ResourceTemplate, RpcError};
use crate::tools::{Caller, Ctx, ToolError};

/// The MIME type of every home resource.
pub const MIME: &str = "application/json";

/// Most per-room overviews `resources/list` adds after the fixed resources.
pub const MAX_LISTED_ROOMS: usize = 50;

/// Largest listing a resource returns (the tools' maximum `limit`).
const LIMIT: i64 = 500;

/// The fixed resources: URI, name, description.
pub const FIXED: &[(&str, &str, &str)] = &[
    ("home://alerts", "House alerts", "The Miniserver's own alerts (Message Center / System Status): active entries first, most severe first, with severity, room, affected device, since when, read/confirmed, and the newest notifications (list_alerts)."),
    ("home://summary", "Home summary", "What is on, open, playing, armed: lights on, blinds not open, open windows, temperature against target per room, audio, presence, alarms, alerts (get_home_summary)."),
    ("home://rooms", "Rooms", "All rooms with their number of devices per family (list_rooms)."),
    ("home://devices/all", "All devices", "Every device with type, family, Loxone category, room and current state (list_devices, at most 500)."),
    ("home://system/status", "System status", "Miniserver identity, structure file version, link status to the Miniserver, whether commands are stopped (and since when), counts of rooms, categories, devices and known values."),
    ("home://system/capabilities", "System capabilities", "Device families and control types present, secured controls, the tool, resource and prompt catalogue sizes and the features of this server."),
    ("home://system/categories", "Categories", "Device families and the user's Loxone categories with their number of devices and resource URIs."),
    ("home://sensors", "All sensors", "Every sensor with its reading: temperature, humidity, motion, door/window, brightness, meters, other (get_sensors_status)."),
    ("home://sensors/door-window", "Door and window sensors", "Door/window contacts (open true/false) and window monitors (number open)."),
    ("home://sensors/temperature", "Temperature sensors", "Temperature sensors with their reading in °C."),
    ("home://sensors/motion", "Motion sensors", "Motion and presence detectors (true/false)."),
    ("home://sensors/humidity", "Humidity sensors", "Humidity sensors in %."),
    ("home://sensors/brightness", "Brightness sensors", "Brightness sensors in lx."),
    ("home://lighting", "Lighting", "Every light with on/off and level (get_lights_status)."),
    ("home://blinds", "Blinds", "Every blind with its position in percent closed, 0 = open (get_blinds_status)."),
    ("home://climate", "Climate", "Room climate controllers: temperature, target, mode (get_climate_status)."),
    ("home://audio", "Audio", "Audio zones: play state, volume, source (get_audio_status)."),
    ("home://security", "Security", "Alarm systems and safety sensors: armed, alarm levels (get_security_status)."),
    ("home://energy", "Energy", "Meters and energy managers with their current values, and the kWh of today and this month (get_energy)."),
    ("home://weather", "Weather", "Weather station and outdoor sensors with their readings; an empty list when the house has none."),
    ("home://doorbells", "Doorbells", "Intercoms and cameras: ringing or not, and their unanswered rings with times in the owner's time zone (list_doorbell_events); updated when someone rings."),
    ("home://workflows", "Workflows", "Stored workflows with their steps (list_workflows)."),
];

/// The resource templates: URI template, name, description.
pub const TEMPLATES: &[(&str, &str, &str)] = &[
    ("home://rooms/{room}/devices", "Devices of a room", "The devices of one room with their current state. room: slug (gaste-wc), name (accents optional) or UUID."),
    ("home://rooms/{room}/overview", "Room overview", "One room's statistics: devices per family, lights on, blinds not open, temperature against target, open windows, audio, presence; with the room's summary."),
    ("home://devices/{room}", "Devices of a room (short form)", "The same as home://rooms/{room}/devices, addressed by room slug (home://devices/wohnzimmer)."),
    ("home://devices/{uuid}", "One device", "A device with its record, primary state, every named state with value and age from the live store, and its sub-controls."),
    ("home://devices/category/{category}", "Devices by category", "Devices of a family (lighting, blinds, climate, audio, security, access, sensors, energy, other) or of one of the user's Loxone categories."),
    ("home://devices/type/{type}", "Devices by type", "Devices of one Loxone control type present in the house (Jalousie, LightControllerV2, ...)."),
    ("home://climate/{room}", "Climate of a room", "The climate controllers of one room (get_climate_status for that room)."),
    ("home://history/{device}{?state,period,from,to,resolution}", "History of a device", "What get_history answers for the device (name or UUID) and the query's state, period or from/to and resolution; default the last 24 hours."),
];

/// What a URI names, resolved against the house.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Target {
    /// A tool's `data` with these arguments.
    Tool(&'static str, Value),
    /// A room overview (room UUID).
    Overview(String),
    /// One control or sub-control (UUID).
    Device(String),
    Status,
    Capabilities,
    Categories,
    Weather,
    /// `home://energy`: the energy devices, and today's and this month's kWh.
    Energy,
}

/// A URI resolved: what it names and its canonical form.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Resolved {
    pub canonical: String,
    pub target: Target,
}

/// `resources/list`: the fixed resources, then one overview per room (at most
/// [`MAX_LISTED_ROOMS`]).
pub fn list(home: &Home) -> Vec<ResourceDescriptor> {
    let mut out: Vec<ResourceDescriptor> = FIXED
        .iter()
        .map(|(uri, name, description)| ResourceDescriptor {
            uri: (*uri).into(),
            name: (*name).into(),
            title: Some((*name).into()),
            description: Some((*description).into()),
            mime_type: Some(MIME.into()),
        })
        .collect();
    out.extend(
        home.rooms
            .iter()
            .take(MAX_LISTED_ROOMS)
            .map(|r| ResourceDescriptor {
                uri: format!("home://rooms/{}/overview", room_key(home, r)),
                name: format!("Room overview: {}", r.name),
                title: Some(format!("{} overview", r.name)),
                description: Some(format!(
                    "Statistics and summary of the room {} (devices per family, lights on, blinds, temperature, windows).",
                    r.name
                )),
                mime_type: Some(MIME.into()),
            }),
    );
    out
}

/// `resources/templates/list`.
pub fn templates() -> Vec<ResourceTemplate> {
    TEMPLATES
        .iter()
        .map(|(t, name, description)| ResourceTemplate {
            uri_template: (*t).into(),
            name: (*name).into(),
            title: Some((*name).into()),
            description: Some((*description).into()),
            mime_type: Some(MIME.into()),
        })
        .collect()
}

/// `resources/read`: the JSON contents of `uri` (its text is the resource's JSON; the
/// contents carry the URI as asked). `prompts` are the names of the server's prompts, which
/// `home://system/capabilities` lists (the dispatcher above both hands them in).
pub fn read(ctx: &Ctx, uri: &str, prompts: &[&str]) -> Result<Vec<ResourceContents>, RpcError> {
    let home = ctx.home();
    let resolved = resolve(&home, uri)?;
    let data = compute(ctx, &home, &resolved, prompts)?;
    Ok(vec![ResourceContents::text(uri, MIME, data.to_string())])
}

/// The JSON value of a resolved resource.
fn compute(ctx: &Ctx, home: &Home, r: &Resolved, prompts: &[&str]) -> Result<Value, RpcError> {
    match &r.target {
        Target::Tool(name, args) => run_tool(ctx, name, args),
        Target::Overview(room) => detail::overview(ctx, home, room),
        Target::Device(uuid) => detail::device(ctx, home, uuid, &r.canonical),
        Target::Status => Ok(system::status(ctx, home)),
        Target::Capabilities => Ok(system::capabilities(ctx, home, prompts)),
        Target::Categories => Ok(system::categories(home)),
        Target::Weather => Ok(detail::weather(ctx, home)),
        Target::Energy => energy(ctx),
    }
}

/// `home://energy`: `list_devices` of the energy family, plus `today` and `this_month`, the
/// answers of `get_energy` for those periods (`null` when the house has no meter).
fn energy(ctx: &Ctx) -> Result<Value, RpcError> {
    let mut data = run_tool(
        ctx,
        "list_devices",
        &json!({"category": "energy", "limit": LIMIT}),
    )?;
    for (key, period) in [("today", "today"), ("this_month", "this month")] {
        data[key] = run_tool(ctx, "get_energy", &json!({"period": period})).unwrap_or(Value::Null);
    }
    Ok(data)
}

/// Whether `uri` names a resource (for `resources/subscribe`): exactly the readable URIs.
pub fn check(home: &Home, uri: &str) -> Result<(), RpcError> {
    resolve(home, uri).map(|_| ())
}

/// The canonical form of a readable URI (room slug, family or category slug, exact Loxone
/// type, lowercase UUID): compare subscriptions with [`affected_uris`] in this form.
pub fn canonical_uri(home: &Home, uri: &str) -> Result<String, RpcError> {
    resolve(home, uri).map(|r| r.canonical)
}

/// A room's key in URIs: its slug, or its UUID when another room has the same slug.
pub fn room_key(home: &Home, room: &Room) -> String {
    let s = slug(&room.name);
    if s.is_empty() || home.rooms.iter().filter(|r| slug(&r.name) == s).count() > 1 {
        room.uuid.clone()
    } else {
        s
    }
}

/// -32002 for `uri` with a reason and suggestions (JSON text in `details`).
pub(crate) fn not_found(uri: &str, reason: &str, suggestions: Vec<String>) -> RpcError {
    RpcError {
        code: RpcError::RESOURCE_NOT_FOUND,
        message: format!("Resource not found: {uri}"),
        details: Some(
            json!({"uri": uri, "reason": reason, "suggestions": suggestions}).to_string(),
        ),
    }
}

fn malformed(uri: &str, why: &str) -> RpcError {
    RpcError::invalid_params(format!("malformed resource URI {uri:?}: {why}"))
        .with_details("home resource URIs look like home://rooms/wohnzimmer/devices; see resources/list and resources/templates/list")
}

/// Splits `home://a/b/c` into decoded segments; errors per the module doc.
fn segments(uri: &str) -> Result<Vec<String>, RpcError> {
    let Some((scheme, rest)) = uri.split_once("://") else {
        return Err(malformed(uri, "no scheme://"));
    };
    if scheme.is_empty()
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    {
        return Err(malformed(uri, "bad scheme"));
    }
    if scheme != "home" {
        return Err(not_found(
            uri,
            "only home:// resources exist here",
            vec!["home://summary".into()],
        ));
    }
    // Only the history template takes a query (RFC 6570 form-style `{?...}`).
    let rest = match rest.split_once('?') {
        Some((path, _)) if path.starts_with("history/") && !rest.contains('#') => path,
        _ if rest.contains(['?', '#']) => {
            return Err(malformed(uri, "query and fragment are not supported"));
        }
        _ => rest,
    };
    if rest.is_empty() {
        return Err(malformed(uri, "no path"));
    }
    rest.split('/')
        .map(|s| {
            if s.is_empty() {
                Err(malformed(uri, "empty path segment"))
            } else {
                percent_decode(s).ok_or_else(|| malformed(uri, "bad percent-encoding"))
            }
        })
        .collect()
}

/// Decodes `%XX` escapes (UTF-8); `None` for a bad escape or invalid UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Resolves a URI against the house.
pub(crate) fn resolve(home: &Home, uri: &str) -> Result<Resolved, RpcError> {
    let segs = segments(uri)?;
    let s: Vec<&str> = segs.iter().map(String::as_str).collect();
    let tool = |name: &'static str, args: Value| Target::Tool(name, args);
    let sensors = |t: &str| tool("get_sensors_status", json!({"type": t, "limit": LIMIT}));
    let fixed = |target: Target| {
        Ok(Resolved {
            canonical: uri.to_string(),
            target,
        })
    };
    match s.as_slice() {
        ["summary"] => fixed(tool("get_home_summary", json!({}))),
        ["alerts"] => fixed(tool("list_alerts", json!({"limit": LIMIT}))),
        ["rooms"] => fixed(tool("list_rooms", json!({"limit": LIMIT}))),
        ["system", "status"] => fixed(Target::Status),
        ["system", "capabilities"] => fixed(Target::Capabilities),
        ["system", "categories"] => fixed(Target::Categories),
        ["sensors"] => fixed(tool("get_sensors_status", json!({"limit": LIMIT}))),
        ["sensors", "door-window"] => fixed(sensors("door_window")),
        ["sensors", "temperature"] => fixed(sensors("temperature")),
        ["sensors", "motion"] => fixed(sensors("motion")),
        ["sensors", "humidity"] => fixed(sensors("humidity")),
        ["sensors", "brightness"] => fixed(sensors("brightness")),
        ["lighting"] => fixed(tool("get_lights_status", json!({"limit": LIMIT}))),
        ["blinds"] => fixed(tool("get_blinds_status", json!({"limit": LIMIT}))),
        ["climate"] => fixed(tool("get_climate_status", json!({"limit": LIMIT}))),
        ["audio"] => fixed(tool("get_audio_status", json!({"limit": LIMIT}))),
        ["security"] => fixed(tool("get_security_status", json!({"limit": LIMIT}))),
        ["doorbells"] => fixed(tool("list_doorbell_events", json!({"limit": 50}))),
        ["energy"] => fixed(Target::Energy),
        ["history", device] => history(home, uri, device),
        ["weather"] => fixed(Target::Weather),
        ["workflows"] => fixed(tool("list_workflows", json!({"limit": LIMIT}))),
        ["devices", "all"] => fixed(tool("list_devices", json!({"limit": LIMIT}))),
        ["rooms", room, "devices"] => {
            let r = find_room(home, uri, room)?;
            Ok(Resolved {
                canonical: format!("home://rooms/{}/devices", room_key(home, r)),
                target: room_devices(r),
            })
        }
        ["rooms", room, "overview"] => {
            let r = find_room(home, uri, room)?;
            Ok(Resolved {
                canonical: format!("home://rooms/{}/overview", room_key(home, r)),
                target: Target::Overview(r.uuid.clone()),
            })
        }
        ["climate", room] => {
            let r = find_room(home, uri, room)?;
            Ok(Resolved {
                canonical: format!("home://climate/{}", room_key(home, r)),
                target: tool(
                    "get_climate_status",
                    json!({"room": r.uuid, "limit": LIMIT}),
                ),
            })
        }
        ["devices", "category", category] => {
            let (canonical, mut args) = find_category(home, uri, category)?;
            args["limit"] = json!(LIMIT);
            Ok(Resolved {
                canonical,
                target: tool("list_devices", args),
            })
        }
        ["devices", "type", kind] => {
            let t = find_type(home, uri, kind)?;
            Ok(Resolved {
                canonical: format!("home://devices/type/{t}"),
                target: tool("list_devices", json!({"type": t, "limit": LIMIT})),
            })
        }
        ["devices", rest @ ..] if !rest.is_empty() => {
            let id = rest.join("/");
            if let Some(c) = home
                .control(&id)
                .or_else(|| home.control(&id.to_lowercase()))
            {
                return Ok(Resolved {
                    canonical: format!("home://devices/{}", c.uuid),
                    target: Target::Device(c.uuid.clone()),
                });
            }
            let room_uuid = home.rooms.iter().any(|r| r.uuid == id.to_lowercase());
            if rest.len() > 1 || (looks_like_uuid(&id) && !room_uuid) {
                return Err(not_found(uri, "no device has this UUID", Vec::new()));
            }
            let r = find_room(home, uri, &id)?;
            Ok(Resolved {
                canonical: format!("home://devices/{}", room_key(home, r)),
                target: room_devices(r),
            })
        }
        _ => Err(not_found(
            uri,
            "no such resource; see resources/list and resources/templates/list",
            Vec::new(),
        )),
    }
}

/// The parameters `home://history/{device}{?state,period,from,to,resolution}` takes.
const HISTORY_PARAMS: [&str; 5] = ["state", "period", "from", "to", "resolution"];

/// `home://history/{device}{?...}`: `get_history` with the device (a name, decoded, or a
/// UUID) and the query's parameters (percent-decoded, `+` as a space). Canonical: the device's
/// UUID and the parameters in template order.
fn history(home: &Home, uri: &str, device: &str) -> Result<Resolved, RpcError> {
    let query = uri.split_once('?').map_or("", |(_, q)| q);
    let mut args = json!({});
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if !HISTORY_PARAMS.contains(&k) {
            return Err(malformed(
                uri,
                &format!("unknown parameter {k:?}; use {}", HISTORY_PARAMS.join(", ")),
            ));
        }
        let v = percent_decode(&v.replace('+', " "))
            .ok_or_else(|| malformed(uri, "bad percent-encoding"))?;
        args[k] = json!(v);
    }
    let c = home
        .resolve_control(device, None, &|_| true)
        .map_err(|e| not_found(uri, &e.to_string(), Vec::new()))?;
    args["device"] = json!(c.uuid);
    let shown: Vec<String> = HISTORY_PARAMS
        .iter()
        .filter_map(|k| {
            let v = args.get(*k)?.as_str()?;
            Some(format!(
                "{k}={}",
                percent_encoding::utf8_percent_encode(v, percent_encoding::NON_ALPHANUMERIC)
            ))
        })
        .collect();
    let canonical = match shown.is_empty() {
        true => format!("home://history/{}", c.uuid),
        false => format!("home://history/{}?{}", c.uuid, shown.join("&")),
    };
    Ok(Resolved {
        canonical,
        target: Target::Tool("get_history", args),
    })
}

fn room_devices(r: &Room) -> Target {
    Target::Tool("list_devices", json!({"room": r.uuid, "limit": LIMIT}))
}

/// Whether `s` has the shape of a Loxone UUID (hex groups with dashes).
fn looks_like_uuid(s: &str) -> bool {
    s.len() >= 20 && s.contains('-') && s.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}

/// The room a template value names: slug, UUID, or a name as [`Home::resolve_room`] takes it.
pub(crate) fn find_room<'h>(home: &'h Home, uri: &str, value: &str) -> Result<&'h Room, RpcError> {
    let lower = value.to_lowercase();
    let exact: Vec<&Room> = home
        .rooms
        .iter()
        .filter(|r| r.uuid == lower || slug(&r.name) == lower)
        .collect();
    if let [r] = exact.as_slice() {
        return Ok(r);
    }
    match home.resolve_room(value) {
        Ok(r) => Ok(r),
        Err(ResolveError::NotFound { suggestions, .. }) => {
            let mut keys: Vec<String> = suggestions
                .iter()
                .map(|c| room_suggestion(home, &c.uuid))
                .collect();
            if keys.is_empty() {
                // Rooms starting like the value, else every room (bounded).
                let start: String = slug(value).chars().take(3).collect();
                keys = home
                    .rooms
                    .iter()
                    .map(|r| room_key(home, r))
                    .filter(|k| !start.is_empty() && k.starts_with(&start))
                    .collect();
                if keys.is_empty() {
                    keys = home
                        .rooms
                        .iter()
                        .take(20)
                        .map(|r| room_key(home, r))
                        .collect();
                }
            }
            Err(not_found(uri, &format!("no room {value:?}"), keys))
        }
        Err(ResolveError::Ambiguous { candidates, .. }) => Err(not_found(
            uri,
            &format!("{value:?} names several rooms; use one of the suggestions"),
            candidates
                .iter()
                .map(|c| room_suggestion(home, &c.uuid))
                .collect(),
        )),
    }
}

fn room_suggestion(home: &Home, uuid: &str) -> String {
    home.room(uuid)
        .map(|r| room_key(home, r))
        .unwrap_or_else(|| uuid.to_string())
}

/// The `{category}` value, read by [`Home::word`] as every tool reads it: `(canonical URI,
/// list_devices arguments)`. A family or a category lists `{category}`; a control type is the
/// type's resource (`home://devices/type/{type}`, so subscriptions to either match).
fn find_category(home: &Home, uri: &str, value: &str) -> Result<(String, Value), RpcError> {
    match home.word(value) {
        Ok(Word::Family(f)) => Ok((
            format!("home://devices/category/{}", f.as_str()),
            json!({"category": f.as_str()}),
        )),
        Ok(Word::Category(c)) => Ok((
            format!("home://devices/category/{}", home.category_key(c)),
            json!({"category": c.uuid}),
        )),
        Ok(Word::Type(k)) => Ok((
            format!("home://devices/type/{}", k.as_str()),
            json!({"type": k.as_str()}),
        )),
        Err(e) => {
            let mut suggestions: Vec<String> =
                Family::ALL.iter().map(|f| f.as_str().to_string()).collect();
            suggestions.extend(home.categories.iter().map(|c| home.category_key(c)));
            Err(not_found(uri, &e.to_string(), suggestions))
        }
    }
}

/// The `{type}` value: the exact Loxone type present in the house.
fn find_type(home: &Home, uri: &str, value: &str) -> Result<String, RpcError> {
    let folded = fold(value);
    let present = home.types_present();
    match present.iter().find(|t| fold(t) == folded) {
        Some(t) => Ok((*t).to_string()),
        None => Err(not_found(
            uri,
            &format!("no control of type {value:?} in this house"),
            present.iter().map(|t| (*t).to_string()).collect(),
        )),
    }
}

/// Runs a read-only tool of the catalogue and returns its `data`.
pub(crate) fn run_tool(ctx: &Ctx, name: &str, args: &Value) -> Result<Value, RpcError> {
    let tool = ctx
        .catalogue
        .iter()
        .find(|t| t.name == name)
        .ok_or_else(|| RpcError::internal(format!("resource needs the missing tool {name}")))?;
    let args: Map<String, Value> = args.as_object().cloned().unwrap_or_default();
    let caller = Caller::new("resource");
    tool.invoke(ctx, &args, &caller).map_err(|e| match e {
        ToolError::Resolve(e) => RpcError {
            code: RpcError::RESOURCE_NOT_FOUND,
            message: "Resource not found".into(),
            details: Some(e.to_string()),
        },
        ToolError::InvalidParams(m) => RpcError::invalid_params(m),
        ToolError::Controller(e) => {
            RpcError::internal(format!("the house could not be read: {e}")).with_details(e.code())
        }
        // A question the house cannot answer as asked (a history's range or state).
        ToolError::Refused {
            code: "INVALID_PARAMETERS",
            message,
        } => RpcError::invalid_params(message),
        ToolError::Refused {
            code: "DEVICE_NOT_FOUND",
            message,
        } => RpcError {
            code: RpcError::RESOURCE_NOT_FOUND,
            message: "Resource not found".into(),
            details: Some(message),
        },
        ToolError::Refused { code, message } => RpcError::internal(message).with_details(code),
        // Resources run read-only tools, which never ask.
        ToolError::InputRequired(e) => e,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_fold_and_dash() {
        assert_eq!(slug("Gäste WC"), "gaste-wc");
        assert_eq!(slug("Bad (OG)"), "bad-og");
        assert_eq!(slug("  Wohnzimmer "), "wohnzimmer");
        assert_eq!(slug("Straße/Einfahrt"), "strasse-einfahrt");
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(
            percent_decode("G%C3%A4ste%20WC").as_deref(),
            Some("Gäste WC")
        );
        assert_eq!(percent_decode("%zz"), None);
        assert_eq!(percent_decode("%C3"), None);
    }

    #[test]
    fn malformed_and_unknown_are_told_apart() {
        let home = Home::default();
        assert_eq!(resolve(&home, "rooms").unwrap_err().code, -32602);
        assert_eq!(resolve(&home, "home://rooms//x").unwrap_err().code, -32602);
        assert_eq!(resolve(&home, "home://rooms?x=1").unwrap_err().code, -32602);
        assert_eq!(
            resolve(&home, "file:///etc/passwd").unwrap_err().code,
            -32002
        );
        assert_eq!(resolve(&home, "home://nothing").unwrap_err().code, -32002);
    }
}

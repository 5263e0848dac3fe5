//! The lean tool profile (issue 33), from outside: two fresh demo houses, each behind its own
//! `serve`; every action of the full catalogue (its tools' documented examples on the demo
//! house) is called by name on one house with a full key, and through the lean front doors on
//! the other with a lean key; what each simulator received (its request log's commands) must
//! be the same, and so must each answer's outcome (and for reads the answer itself), and at the
//! end the states of every control that got a command. The tools lean leaves out on purpose
//! are named here ([`LEFT_OUT`]); a tool of the full catalogue that is neither exercised nor
//! named fails the test. A lean key sees only the lean tools and is refused a full one by
//! name; the sizes of both catalogues are in `tool_list`.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::support;
use home_mcp::auth::Role;
use home_mcp::home::Profile;
use support::mcp::McpHttp;
use support::server::{Miniserver, Served};
use support::wait::wait_until;
use support::wire::commands_since;

/// The tools of the full catalogue lean leaves out on purpose, and why (docs/tools.md says
/// the same).
const LEFT_OUT: &[(&str, &str)] = &[(
    "create_workflow",
    "writing a program of tool calls is not for a small model; lean runs, shows and deletes \
     the owner's stored workflows",
)];

/// The demo house's Message Center (its alerts).
const MESSAGE_CENTER: &str = "1d5c3cf2-0230-600e-ffff504f94d0e5a1";

const FULL_KEY: &str = "homekey_admin_1_00000000000000000000000000000001";
const LEAN_KEY: &str = "homekey_admin_2_00000000000000000000000000000002";
/// A lean operator key without the cameras grant.
const LEAN_OPERATOR: &str = "homekey_operator_3_00000000000000000000000000000003";

/// An admin key whose owner lets the model confirm (so house-wide and alarm actions run with
/// `confirm: true` and reach the simulator) with tool profile `profile`.
fn key(id: &str, profile: Profile) -> home_mcp::auth::ApiKey {
    home_mcp::auth::ApiKey {
        model_confirms: true,
        profile: Some(profile),
        name: format!("{profile} key"),
        ..support::gate::key(id, Role::Admin)
    }
}

/// A demo house behind `serve` that knows both keys. Its room temperatures stay still (no
/// drift toward the targets): two houses started apart must answer reads alike.
fn house() -> (Miniserver, Served) {
    let ms = Miniserver::serve(home_mcp::sim::Simulator::demo_with(
        home_mcp::sim::SimConfig {
            temp_drift_per_minute: 0.0,
            ..home_mcp::sim::SimConfig::default()
        },
    ));
    let operator = home_mcp::auth::ApiKey {
        profile: Some(Profile::Lean),
        ..support::gate::key(LEAN_OPERATOR, Role::Operator)
    };
    let keys = serde_json::to_string(&[
        key(FULL_KEY, Profile::Full),
        key(LEAN_KEY, Profile::Lean),
        operator,
    ])
    .expect("key records");
    let served = Served::start(
        &ms,
        "[auth]\nsecurity_level = \"staging\"\n",
        &[
            ("HOME_KEY_BACKEND", "env"),
            ("HOME_API_KEYS", &keys),
            ("HOME_VISU_PASS", "1234"),
        ],
    );
    served.wait_states();
    (ms, served)
}

/// One action: the full call, and the lean call(s) that stand for it.
struct Pair {
    full: (&'static str, Value),
    lean: Vec<(&'static str, Value)>,
}

fn pair(full: &'static str, fa: Value, lean: &'static str, la: Value) -> Pair {
    Pair {
        full: (full, fa),
        lean: vec![(lean, la)],
    }
}

/// The actions: each tool's documented examples (docs/tools.md, the tools' descriptions) on
/// the demo house, in an order in which each starts from the same house on both sides.
fn pairs() -> Vec<Pair> {
    let alert = "4d430000-0000-4000-ffff000000000001";
    vec![
        // What is on and what is wrong.
        pair("get_home_summary", json!({}), "house_status", json!({})),
        pair(
            "get_home_summary",
            json!({"room": "Küche"}),
            "house_status",
            json!({"room": "Küche"}),
        ),
        pair("list_alerts", json!({}), "alerts", json!({})),
        pair(
            "list_alerts",
            json!({"historic": true, "limit": 5}),
            "alerts",
            json!({"historic": true, "limit": 5}),
        ),
        // The owner's workflows ("Abend" is stored on both houses first, by the full key),
        // read while the house stands still.
        pair("list_workflows", json!({}), "workflows", json!({})),
        pair(
            "get_workflow",
            json!({"name": "Abend"}),
            "workflows",
            json!({"action": "show", "name": "Abend"}),
        ),
        pair(
            "execute_workflow",
            json!({"name": "Abend", "dry_run": true}),
            "workflows",
            json!({"action": "run", "name": "Abend", "dry_run": true}),
        ),
        pair(
            "execute_workflow_demo",
            json!({"dry_run": true}),
            "workflows",
            json!({"action": "demo", "dry_run": true}),
        ),
        // History and energy (closed periods: the two houses started a moment apart).
        pair(
            "get_history",
            json!({"device": "Stromzähler", "period": "yesterday"}),
            "history",
            json!({"device": "Stromzähler", "period": "yesterday"}),
        ),
        pair(
            "get_history",
            json!({"device": "Raumregelung", "room": "Bad", "period": "yesterday", "resolution": "hour"}),
            "history",
            json!({"device": "Raumregelung", "room": "Bad", "period": "yesterday", "resolution": "hour"}),
        ),
        pair(
            "get_energy",
            json!({"period": "last month", "compare_with": "2026-09"}),
            "history",
            json!({"period": "last month", "compare_with": "2026-09"}),
        ),
        pair(
            "get_energy",
            json!({"period": "yesterday", "breakdown": "hour"}),
            "history",
            json!({"period": "yesterday", "breakdown": "hour"}),
        ),
        // Who is at the door.
        pair("list_doorbell_events", json!({}), "door", json!({})),
        pair(
            "list_doorbell_events",
            json!({"room": "Außenbereich"}),
            "door",
            json!({"action": "rings", "room": "Außenbereich"}),
        ),
        pair(
            "get_camera_image",
            json!({"device": "Haustür"}),
            "door",
            json!({"action": "picture", "device": "Haustür"}),
        ),
        // Finding devices.
        pair(
            "list_rooms",
            json!({}),
            "find_devices",
            json!({"what": "rooms"}),
        ),
        pair(
            "list_rooms",
            json!({"name": "zimmer"}),
            "find_devices",
            json!({"what": "rooms", "name": "zimmer"}),
        ),
        pair(
            "list_devices",
            json!({"room": "Küche", "category": "lighting"}),
            "find_devices",
            json!({"room": "Küche", "category": "lighting"}),
        ),
        pair(
            "list_devices",
            json!({"type": "Jalousie", "limit": 3}),
            "find_devices",
            json!({"type": "Jalousie", "limit": 3}),
        ),
        pair(
            "discover_rolladen_capabilities",
            json!({"room": "Wohnzimmer"}),
            "find_devices",
            json!({"what": "blinds", "room": "Wohnzimmer"}),
        ),
        // Status per family.
        pair(
            "get_lights_status",
            json!({"room": "Wohnzimmer"}),
            "house_status",
            json!({"about": "lights", "room": "Wohnzimmer"}),
        ),
        pair(
            "get_lights_status",
            json!({"name": "licht"}),
            "house_status",
            json!({"about": "lights", "name": "licht"}),
        ),
        pair(
            "get_blinds_status",
            json!({}),
            "house_status",
            json!({"about": "blinds"}),
        ),
        pair(
            "get_climate_status",
            json!({}),
            "house_status",
            json!({"about": "climate"}),
        ),
        pair(
            "get_climate_status",
            json!({"room": "Bad"}),
            "house_status",
            json!({"about": "climate", "room": "Bad"}),
        ),
        pair("get_audio_status", json!({}), "audio", json!({})),
        pair("get_security_status", json!({}), "alarm", json!({})),
        pair(
            "get_sensors_status",
            json!({"name": "Präsenz"}),
            "house_status",
            json!({"about": "sensors", "name": "Präsenz"}),
        ),
        pair(
            "get_temperature_sensors",
            json!({}),
            "house_status",
            json!({"about": "temperatures"}),
        ),
        pair(
            "get_zone_temperature",
            json!({"zone_id": "Küche"}),
            "climate",
            json!({"room": "Küche"}),
        ),
        // One device.
        pair(
            "control_device",
            json!({"device": "Deckenlicht", "room": "Küche", "action": "off"}),
            "control",
            json!({"target": "Deckenlicht", "room": "Küche", "action": "off"}),
        ),
        pair(
            "control_device",
            json!({"device": "Deckenlicht Wohnzimmer", "action": "dim", "value": 40}),
            "control",
            json!({"target": "Deckenlicht Wohnzimmer", "action": "dim", "value": 40}),
        ),
        pair(
            "control_device",
            json!({"device": "Markise", "action": "down"}),
            "control",
            json!({"target": "Markise", "action": "down"}),
        ),
        pair(
            "control_device",
            json!({"device": "Lichtsteuerung Schlafzimmer", "action": "mood", "mood": "Lesen"}),
            "control",
            json!({"target": "Lichtsteuerung Schlafzimmer", "action": "mood", "mood": "Lesen"}),
        ),
        pair(
            "control_device",
            json!({"device": "Garagenlicht", "action": "ein", "dry_run": true}),
            "control",
            json!({"target": "Garagenlicht", "action": "ein", "dry_run": true}),
        ),
        pair(
            "control_device",
            json!({"device": "LED-Streifen", "action": "color", "hue": 120, "saturation": 80, "value": 70}),
            "control",
            json!({"target": "LED-Streifen", "action": "color", "hue": 120, "saturation": 80, "value": 70}),
        ),
        pair(
            "control_device",
            json!({"device": "LED-Streifen", "action": "white", "kelvin": 3000}),
            "control",
            json!({"target": "LED-Streifen", "action": "white", "kelvin": 3000}),
        ),
        pair(
            "control_device",
            json!({"device": "Lichtszenen", "action": "mood", "scene": 2}),
            "control",
            json!({"target": "Lichtszenen", "action": "mood", "scene": 2}),
        ),
        pair(
            "control_device",
            json!({"device": "Bewässerungsdauer", "action": "set", "number": 10}),
            "control",
            json!({"target": "Bewässerungsdauer", "action": "set", "number": 10}),
        ),
        pair(
            "control_device",
            json!({"device": "Lüftungsstufe", "action": "select", "number": 1}),
            "control",
            json!({"target": "Lüftungsstufe", "action": "select", "number": 1}),
        ),
        pair(
            "control_device",
            json!({"device": "Notiz", "action": "text", "text": "Milch kaufen"}),
            "control",
            json!({"target": "Notiz", "action": "text", "text": "Milch kaufen"}),
        ),
        pair(
            "set_dimmer",
            json!({"device_id": "Spiegelleuchte", "level": 60}),
            "control",
            json!({"target": "Spiegelleuchte", "action": "dim", "value": 60}),
        ),
        Pair {
            full: (
                "control_multiple_devices",
                json!({"operations": [
                {"device": "Garagenlicht", "action": "on"},
                {"device": "Gartenbeleuchtung", "action": "on"}]}),
            ),
            lean: vec![
                ("control", json!({"target": "Garagenlicht", "action": "on"})),
                (
                    "control",
                    json!({"target": "Gartenbeleuchtung", "action": "on"}),
                ),
            ],
        },
        // A room, a category, the house.
        pair(
            "control_room_lights",
            json!({"room": "Küche", "action": "on"}),
            "control",
            json!({"scope": "room", "target": "Küche", "action": "on"}),
        ),
        pair(
            "control_room_lights",
            json!({"room": "Küche", "action": "off", "dry_run": true}),
            "control",
            json!({"scope": "room", "target": "Küche", "action": "off", "dry_run": true}),
        ),
        pair(
            "room_all_on",
            json!({"room_id": "Wohnzimmer"}),
            "control",
            json!({"scope": "room", "target": "Wohnzimmer", "action": "on"}),
        ),
        pair(
            "control_lights_unified",
            json!({"scope": "category", "target": "lighting", "action": "off", "dry_run": true}),
            "control",
            json!({"scope": "category", "target": "lighting", "action": "off", "dry_run": true}),
        ),
        pair(
            "control_lights_unified",
            json!({"scope": "room", "target": "Bad", "action": "brightness", "value": 70}),
            "control",
            json!({"scope": "room", "target": "Bad", "action": "brightness", "value": 70}),
        ),
        pair(
            "control_all_lights",
            json!({"action": "off", "confirm": true}),
            "control",
            json!({"scope": "house", "target": "house", "action": "off", "confirm": true}),
        ),
        pair(
            "control_room_rolladen",
            json!({"room": "Küche", "action": "down"}),
            "control",
            json!({"scope": "room", "target": "Küche", "action": "down"}),
        ),
        pair(
            "control_room_rolladen",
            json!({"room": "Wohnzimmer", "action": "position", "position": 30}),
            "control",
            json!({"scope": "room", "target": "Wohnzimmer", "action": "position", "value": 30}),
        ),
        pair(
            "control_rolladen_unified",
            json!({"scope": "room", "target": "Schlafzimmer", "action": "shade"}),
            "control",
            json!({"scope": "room", "target": "Schlafzimmer", "action": "shade"}),
        ),
        pair(
            "control_all_rolladen",
            json!({"action": "up", "confirm": true}),
            "control",
            json!({"scope": "house", "target": "house", "action": "up", "confirm": true}),
        ),
        pair(
            "control_room_devices",
            json!({"room": "Küche", "action": "off", "device_type": "other"}),
            "control",
            json!({"scope": "room", "target": "Küche", "action": "off", "family": "other"}),
        ),
        // Climate.
        pair(
            "set_room_temperature",
            json!({"room": "Bad", "temperature": 22.5}),
            "climate",
            json!({"room": "Bad", "temperature": 22.5}),
        ),
        pair(
            "set_room_mode",
            json!({"room": "Kinderzimmer", "mode": "eco", "duration_minutes": 60}),
            "climate",
            json!({"room": "Kinderzimmer", "mode": "eco", "duration_minutes": 60}),
        ),
        // Music.
        pair(
            "control_audio_zone",
            json!({"zone": "Küchenradio", "action": "play"}),
            "audio",
            json!({"zone": "Küchenradio", "action": "play"}),
        ),
        pair(
            "set_audio_volume",
            json!({"zone": "Musik", "volume": 30}),
            "audio",
            json!({"zone": "Musik", "action": "volume", "volume": 30}),
        ),
        // The alarm.
        pair(
            "arm_alarm",
            json!({"alarm": "Alarmanlage", "room": "Zentral", "confirm": true}),
            "alarm",
            json!({"action": "arm", "alarm": "Alarmanlage", "room": "Zentral", "confirm": true}),
        ),
        pair(
            "disarm_alarm",
            json!({"alarm": "Alarmanlage Garage", "confirm": true}),
            "alarm",
            json!({"action": "disarm", "alarm": "Alarmanlage Garage", "confirm": true}),
        ),
        pair(
            "acknowledge_alarm",
            json!({"alarm": "Alarmanlage", "room": "Zentral", "confirm": true}),
            "alarm",
            json!({"action": "acknowledge", "alarm": "Alarmanlage", "room": "Zentral", "confirm": true}),
        ),
        // Alerts.
        pair(
            "confirm_alert",
            json!({"alert": alert}),
            "alerts",
            json!({"action": "confirm", "alert": alert}),
        ),
        // Running and deleting a workflow.
        pair(
            "execute_workflow",
            json!({"name": "Abend"}),
            "workflows",
            json!({"action": "run", "name": "Abend"}),
        ),
        pair(
            "delete_workflow",
            json!({"name": "Abend"}),
            "workflows",
            json!({"action": "delete", "name": "Abend"}),
        ),
    ]
}

/// A command line as the simulator logged it, without what differs between two houses and
/// sessions: the query (the token) and a secured command's hash (`ios/{hash}/` -> `io/`).
fn normalised(line: &str) -> String {
    let path = line.split(' ').nth(1).unwrap_or(line);
    let path = path.split('?').next().unwrap_or(path);
    match path.strip_prefix("/jdev/sps/ios/") {
        Some(rest) => format!(
            "/jdev/sps/io/{}",
            rest.split_once('/').map_or("", |(_, r)| r)
        ),
        None => path.to_string(),
    }
}

/// The UUID of a normalised command (`/jdev/sps/io/{uuid}/...`).
fn uuid_of(command: &str) -> Option<String> {
    command
        .strip_prefix("/jdev/sps/io/")
        .and_then(|r| r.split('/').next())
        .map(str::to_string)
}

/// `text` with every ISO 8601 time in it (`2026-11-27T18:53:30.000Z`) replaced by `<time>`:
/// the two demo houses started a moment apart, and their alerts carry the times of their
/// start.
fn without_times(text: &str) -> String {
    const SHAPE: &[u8] = b"dddd-dd-ddTdd:dd:dd";
    let b = text.as_bytes();
    let fits = |i: usize| {
        b.len() >= i + SHAPE.len()
            && SHAPE.iter().enumerate().all(|(k, s)| match s {
                b'd' => b[i + k].is_ascii_digit(),
                c => b[i + k] == *c,
            })
    };
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        if fits(i) {
            i += SHAPE.len();
            while i < b.len() && (b[i] == b'.' || b[i].is_ascii_digit()) {
                i += 1;
            }
            if i < b.len() && b[i] == b'Z' {
                i += 1;
            }
            out.push_str("<time>");
        } else {
            let c = text[i..].chars().next().expect("a char");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// `value` without what differs between two equal answers at two moments or through two
/// keys: times, ages, who confirmed, latencies.
fn steady(value: &Value) -> Value {
    const VOLATILE: [&str; 10] = [
        "timestamp",
        "created_at",
        "age_secs",
        "fetched_at",
        "confirmed_by",
        "elapsed_ms",
        "duration_ms",
        "started_at",
        "finished_at",
        "verified",
    ];
    match value {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !VOLATILE.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), steady(v)))
                .collect::<Map<_, _>>(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(steady).collect()),
        Value::String(s) => Value::String(without_times(s)),
        v => v.clone(),
    }
}

/// The outcome of a `tools/call` answer: `ok`, or the error's code (a tool error's §7.1 code,
/// or `rpc <code>` for a JSON-RPC error).
fn outcome(answer: &Value) -> String {
    if let Some(e) = answer.get("error") {
        return format!("rpc {}: {}", e["code"], e["message"]);
    }
    let r = &answer["result"];
    if r["isError"] == true {
        let text = r["content"][0]["text"].as_str().unwrap_or_default();
        let v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        return format!("error {}", v["error"]["code"]);
    }
    "ok".into()
}

/// Calls `tool` on `c`, returning the JSON-RPC answer and the normalised commands the
/// simulator received meanwhile.
fn act(c: &mut McpHttp, ms: &Miniserver, tool: &str, arguments: &Value) -> (Value, Vec<String>) {
    let mark = ms.sim.request_count();
    let answer = c.rpc("tools/call", json!({"name": tool, "arguments": arguments}));
    let commands = commands_since(&ms.sim, mark)
        .iter()
        .map(|l| normalised(l))
        .collect();
    (answer, commands)
}

#[test]
fn every_full_action_is_reachable_through_lean_with_the_same_effect() {
    let (full_ms, full_served) = house();
    let (lean_ms, lean_served) = house();
    let mut full = McpHttp::connect(full_served.addr, Some(FULL_KEY));
    let mut lean = McpHttp::connect(lean_served.addr, Some(LEAN_KEY));

    // The workflow the workflow examples use, stored on both houses by the full key (lean
    // leaves create_workflow out on purpose).
    let workflow = json!({"name": "Abend", "steps": [
        {"tool": "control_device", "arguments": {"device": "Garagenlicht", "action": "off"}}]});
    full.ok("create_workflow", workflow.clone());
    McpHttp::connect(lean_served.addr, Some(FULL_KEY)).ok("create_workflow", workflow);

    let catalogue = home_mcp::tools::catalogue();
    let full_tools: BTreeSet<&str> = catalogue
        .iter()
        .filter(|t| t.in_profile(Profile::Full))
        .map(|t| t.name)
        .collect();
    let lean_tools: BTreeSet<&str> = catalogue
        .iter()
        .filter(|t| t.in_profile(Profile::Lean))
        .map(|t| t.name)
        .collect();
    assert!(
        full_tools.len() > 30 && !lean_tools.is_empty(),
        "{full_tools:?}"
    );

    let mut exercised = BTreeSet::new();
    let mut commanded = BTreeSet::new();
    let mut sent = 0;
    let mut failures = Vec::new();
    for p in pairs() {
        let (name, args) = &p.full;
        assert!(full_tools.contains(name), "{name} is a full tool");
        exercised.insert(*name);
        let (full_answer, full_commands) = act(&mut full, &full_ms, name, args);
        let mut lean_commands = Vec::new();
        let mut lean_answers = Vec::new();
        for (lname, largs) in &p.lean {
            assert!(lean_tools.contains(lname), "{lname} is a lean tool");
            let (a, c) = act(&mut lean, &lean_ms, lname, largs);
            lean_answers.push(a);
            lean_commands.extend(c);
        }
        let what = format!("{name} {args} / lean {:?}", p.lean);
        let full_outcome = outcome(&full_answer);
        if full_outcome != "ok" {
            failures.push(format!("{what}: the full call failed: {full_outcome}"));
            continue;
        }
        for a in &lean_answers {
            if outcome(a) != full_outcome {
                failures.push(format!("{what}: outcome {} (full: ok): {a}", outcome(a)));
            }
        }
        if full_commands != lean_commands {
            failures.push(format!(
                "{what}: the simulator received\n  full: {full_commands:?}\n  lean: {lean_commands:?}"
            ));
        }
        if full_commands.is_empty() && p.lean.len() == 1 {
            // A read (or a dry run): the same answer.
            let f = steady(&full_answer["result"]["structuredContent"]["data"]);
            let l = steady(&lean_answers[0]["result"]["structuredContent"]["data"]);
            if f != l {
                failures.push(format!("{what}: answers differ\n  full: {f}\n  lean: {l}"));
            }
        }
        sent += full_commands.len();
        commanded.extend(full_commands.iter().filter_map(|c| uuid_of(c)));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(sent > 20, "the actions sent commands: {sent}");

    // Every full tool is exercised or left out on purpose, with a reason.
    let left_out: BTreeSet<&str> = LEFT_OUT.iter().map(|(t, _)| *t).collect();
    let missing: Vec<&&str> = full_tools
        .iter()
        .filter(|t| !exercised.contains(**t) && !left_out.contains(**t))
        .collect();
    assert!(
        missing.is_empty(),
        "full tools neither reached through lean nor left out on purpose: {missing:?}"
    );
    for (t, why) in LEFT_OUT {
        assert!(full_tools.contains(t) && !why.is_empty(), "{t}");
    }

    // The same house at the end: every control that got a command reports the same states
    // (a blind's position while it travels, and the time left of an alarm's arming delay,
    // are a matter of when they are read: the target, direction and total are compared).
    assert!(!commanded.is_empty());
    // The Message Center reports entries, not states: each entry's id, whether it is
    // historic and whether it was confirmed (not when).
    let settled = |ms: &Miniserver, uuid: &str| {
        if uuid == MESSAGE_CENTER {
            let mut m = Map::new();
            for e in ms.api.message_center_entries(uuid) {
                m.insert(
                    e["entryUuid"].as_str().unwrap_or_default().to_string(),
                    json!([e["isHistoric"], e["confirmedAt"].is_null()]),
                );
            }
            return m;
        }
        let mut s = ms.api.states(uuid);
        for moving in [
            "position",
            "positionLamelle",
            "armedDelay",
            "nextLevelDelay",
        ] {
            s.remove(moving);
        }
        s
    };
    for uuid in &commanded {
        wait_until(
            &format!("{uuid}: the same states in both houses"),
            Duration::from_secs(10),
            || {
                let (f, l) = (settled(&full_ms, uuid), settled(&lean_ms, uuid));
                if f == l {
                    Ok(())
                } else {
                    Err((f, l))
                }
            },
        );
    }
    println!(
        "{} actions of {} full tools reached through lean with the same commands ({sent} \
         commands, {} controls); left out on purpose: {LEFT_OUT:?}",
        pairs().len(),
        exercised.len(),
        commanded.len()
    );
}

#[test]
fn a_lean_key_sees_only_lean_tools_and_is_refused_a_full_one_by_name() {
    let (_ms, served) = house();
    let mut lean = McpHttp::connect(served.addr, Some(LEAN_KEY));
    let listed: Vec<String> = lean.rpc("tools/list", json!({}))["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_default().to_string())
        .collect();
    let lean_names: Vec<&str> = home_mcp::tools::catalogue()
        .iter()
        .filter(|t| t.in_profile(Profile::Lean))
        .map(|t| t.name)
        .collect();
    assert_eq!(listed, lean_names, "a lean key lists the lean tools");
    assert!(listed.len() <= 10, "{listed:?}");

    let answer = lean.rpc(
        "tools/call",
        json!({"name": "control_room_lights", "arguments": {"room": "Küche", "action": "off"}}),
    );
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(
        message.contains("control_room_lights") && message.contains("lean profile"),
        "{answer}"
    );
    // A word the full tool does not take: the message names the door and the tool behind it.
    let answer = lean.rpc(
        "tools/call",
        json!({"name": "control", "arguments": {"target": "Deckenlicht Küche", "action": "fly"}}),
    );
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("control (control_device): action must be one of"),
        "{answer}"
    );

    // The door's picture needs the cameras grant, as get_camera_image does; its rings do not.
    let mut operator = McpHttp::connect(served.addr, Some(LEAN_OPERATOR));
    let (status, refused) =
        operator.try_call("door", json!({"action": "picture", "device": "Haustür"}));
    assert!(
        refused.to_string().contains("INSUFFICIENT_PERMISSIONS")
            || refused.to_string().contains("may not see them"),
        "{status} {refused}"
    );
    let (status, rings) = operator.try_call("door", json!({}));
    assert_eq!(status, 200, "{rings}");
    assert_eq!(rings["result"]["isError"], false, "{rings}");

    // The full key of the same server sees the full catalogue.
    let mut full = McpHttp::connect(served.addr, Some(FULL_KEY));
    let n = full.rpc("tools/list", json!({}))["result"]["tools"]
        .as_array()
        .expect("tools")
        .len();
    assert!(n > 30, "{n}");

    // The instructions of `initialize` name the tools each key has.
    let instructions = |key: &str| {
        let r = support::net::request(
            served.addr,
            "POST",
            "/mcp",
            &[
                "Content-Type: application/json".to_string(),
                "Accept: application/json, text/event-stream".to_string(),
                format!("X-API-Key: {key}"),
            ],
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "lean test", "version": "1"}}})
            .to_string(),
        );
        support::mcp::answer_of(&r, 1)["result"]["instructions"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let lean_text = instructions(LEAN_KEY);
    assert!(
        lean_text.contains("house_status") && !lean_text.contains("get_home_summary"),
        "{lean_text}"
    );
    let full_text = instructions(FULL_KEY);
    assert!(
        full_text.contains("get_home_summary") && !full_text.contains("house_status"),
        "{full_text}"
    );
}

/// The names `tools/list` gives a client with `key` (an API key, or with `bearer` an OAuth
/// access token).
fn listed(addr: std::net::SocketAddr, key: &str, bearer: bool) -> Vec<String> {
    let mut c = if bearer {
        McpHttp::connect_bearer(addr, key)
    } else {
        McpHttp::connect(addr, Some(key))
    };
    c.rpc("tools/list", json!({}))["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The names of the tools `profile` lists.
fn names_in(profile: Profile) -> Vec<String> {
    home_mcp::tools::catalogue()
        .iter()
        .filter(|t| t.in_profile(profile))
        .map(|t| t.name.to_string())
        .collect()
}

#[test]
fn the_owner_chooses_the_profile_per_key_and_as_the_default() {
    use support::keys_cli::{generate, keys};
    use support::net::request_json;
    use support::oauth::{exchange, register, sign_in, VERIFIER};

    let (lean, full) = (names_in(Profile::Lean), names_in(Profile::Full));
    let dir = support::server::TempDir::new("lean-keys");
    let store = dir.join("keys.toml");
    let owner = generate(&store, "admin", &["--name", "owner"])["id"]
        .as_str()
        .expect("id")
        .to_string();
    // The command line: --profile lean is stored with the key; --profile full too; no profile
    // none (the server's default applies); anything else is refused, naming the choices.
    let cli_lean = generate(
        &store,
        "operator",
        &["--name", "local model", "--profile", "lean"],
    );
    assert_eq!(cli_lean["profile"], "lean", "{cli_lean}");
    let cli_full = generate(
        &store,
        "operator",
        &["--name", "laptop", "--profile", "full"],
    );
    assert_eq!(cli_full["profile"], "full", "{cli_full}");
    let cli_default = generate(&store, "operator", &["--name", "tablet"]);
    assert!(cli_default.get("profile").is_none(), "{cli_default}");
    let bad = keys(
        &store,
        &["generate", "--role", "operator", "--profile", "tiny"],
    );
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        !bad.status.success() && err.contains("--profile") && err.contains("full or lean"),
        "{err}"
    );

    // The server's default is lean; a key's own profile wins.
    let ms = Miniserver::demo();
    let config = "[auth]\nsecurity_level = \"staging\"\n[mcp]\nprofile = \"lean\"\n";
    let store_arg = store.display().to_string();
    let served = Served::start_args(&ms, config, &[], &["--key-store", &store_arg]);
    let addr = served.addr;
    let id = |k: &Value| k["id"].as_str().expect("id").to_string();
    assert_eq!(listed(addr, &id(&cli_lean), false), lean, "a lean key");
    assert_eq!(
        listed(addr, &id(&cli_full), false),
        full,
        "a full key under a lean default"
    );
    assert_eq!(
        listed(addr, &id(&cli_default), false),
        lean,
        "no profile: the default"
    );

    // The admin page's API.
    let admin = |method: &str, path: &str, body: Value| {
        let key = format!("X-API-Key: {owner}");
        let (status, _, v) = request_json(
            addr,
            method,
            path,
            &[key.as_str(), "Content-Type: application/json"],
            &body.to_string(),
        );
        (status, v)
    };
    let (status, made) = admin(
        "POST",
        "/admin/api/keys",
        json!({"role": "operator", "name": "ollama", "profile": "full"}),
    );
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["record"]["profile"], "full", "{made}");
    let secret = made["key"].as_str().expect("key").to_string();
    assert_eq!(listed(addr, &secret, false), full);
    let masked = made["record"]["id"]
        .as_str()
        .expect("id")
        .replace('*', "%2A");
    let (status, changed) = admin(
        "PUT",
        &format!("/admin/api/keys/{masked}"),
        json!({"profile": "lean"}),
    );
    assert_eq!(status, 200, "{changed}");
    assert_eq!(
        listed(addr, &secret, false),
        lean,
        "changed on the admin page"
    );
    let (status, refused) = admin(
        "POST",
        "/admin/api/keys",
        json!({"role": "operator", "profile": "tiny"}),
    );
    assert_eq!(status, 400, "{refused}");

    // The OAuth consent page: the owner picks the tools of the client's key.
    for (choice, want) in [("full", &full), ("lean", &lean), ("", &lean)] {
        let client = register(addr, &format!("client {choice:?}"));
        let mut fields = vec![("role", "operator"), ("days", "1")];
        if !choice.is_empty() {
            fields.push(("profile", choice));
        }
        let redirect = sign_in(addr, &client, &owner, &fields);
        let (status, body) = exchange(addr, &client, &redirect["code"], VERIFIER);
        assert_eq!(status, 200, "{body}");
        let token = body["access_token"].as_str().expect("access token");
        assert_eq!(
            &listed(addr, token, true),
            want,
            "consent with tools {choice:?}"
        );
    }
}

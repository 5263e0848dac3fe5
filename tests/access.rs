//! Authorization at the point of actuation (issue 15): a `device` key touches only the
//! controls its allow-list resolves to, whatever tool, batch, workflow or REST route it calls,
//! and reads only those. Everything here runs the real `home-mcp serve` at
//! `SECURITY_LEVEL=production` with keys made by the `keys` command (or the admin API) and
//! takes its verdict from the request lines the simulated Miniserver received.

use std::path::PathBuf;

use home_mcp::sim::{SimConfig, DEMO_STRUCTURE, DEMO_VALUES};
use serde_json::{json, Value};

use crate::support::keys_cli::{generate, keys};
use crate::support::mcp::McpHttp;
use crate::support::net::request_json;
use crate::support::server::{Miniserver, Served, TempDir};
use crate::support::wait::{wait_until, PATIENCE};
use crate::support::wire::commands_since;

/// Dimmer "Deckenlicht" in Wohnzimmer (renamed "Wohnzimmer" by [`light_named_like_its_room`]).
const WZ_LIGHT: &str = "1d5c3a2e-0202-4f52-ffff504f94d0e5a1";
/// LightControllerV2 "Lichtsteuerung" in Wohnzimmer.
const WZ_LIGHT_CONTROLLER: &str = "1d5c3a18-0201-4eb8-ffff504f94d0e5a1";
/// Switch "Deckenlicht" in Küche.
const KITCHEN_LIGHT: &str = "1d5c3a92-0209-520e-ffff504f94d0e5a1";
/// Dimmer "Spiegelleuchte" in Bad.
const MIRROR_LIGHT: &str = "1d5c3b5d-0215-579b-ffff504f94d0e5a1";
/// Dimmer "Schreibtischleuchte" in Büro.
const DESK_LAMP: &str = "1d5c3b9c-0219-5954-ffff504f94d0e5a1";

/// The demo house with the Wohnzimmer's ceiling dimmer named like its room, as many are.
fn light_named_like_its_room() -> String {
    let mut doc: Value = serde_json::from_str(DEMO_STRUCTURE).unwrap();
    doc["controls"][WZ_LIGHT]["name"] = json!("Wohnzimmer");
    doc.to_string()
}

/// A key store made with `home-mcp keys` and `serve` at production level on it.
struct Production {
    dir: TempDir,
    store: PathBuf,
    admin: String,
    served: Option<Served>,
}

impl Production {
    /// A store with one admin key; `serve` is started by [`Production::serve`].
    fn new() -> Production {
        let dir = TempDir::new("access");
        let store = dir.join("keys.toml");
        let admin = generate(&store, "admin", &[])["id"]
            .as_str()
            .unwrap()
            .to_string();
        Production {
            dir,
            store,
            admin,
            served: None,
        }
    }

    /// `keys generate --role device --expires-days 30 --device D...` (names stored as given).
    fn device_key(&self, devices: &[&str]) -> String {
        self.device_key_with(devices, &[])
    }

    /// [`Self::device_key`] with more `keys generate` options (`--model-confirms yes`).
    fn device_key_with(&self, devices: &[&str], more: &[&'static str]) -> String {
        let mut args = vec!["--expires-days", "30"];
        args.extend_from_slice(more);
        for d in devices {
            args.extend(["--device", d]);
        }
        generate(&self.store, "device", &args)["id"]
            .as_str()
            .unwrap()
            .to_string()
    }

    fn serve(&mut self, ms: &Miniserver) {
        self.serve_with(ms, "");
    }

    /// [`Production::serve`] with more configuration (TOML).
    fn serve_with(&mut self, ms: &Miniserver, config: &str) {
        let store = self.store.display().to_string();
        self.served = Some(Served::start_args(
            ms,
            &format!("[auth]\nsecurity_level = \"production\"\n{config}"),
            &[("HOME_KEY_BACKEND", "file")],
            &["--key-store", &store],
        ));
    }

    fn addr(&self) -> std::net::SocketAddr {
        self.served.as_ref().expect("served").addr
    }

    fn mcp(&self, key: &str) -> McpHttp {
        McpHttp::connect(self.addr(), Some(key))
    }

    /// A REST request with `key`: (status, JSON body).
    fn rest(&self, key: &str, method: &str, path: &str, body: &Value) -> (u16, Value) {
        let auth = format!("X-API-Key: {key}");
        let (s, _, b) = request_json(
            self.addr(),
            method,
            path,
            &[auth.as_str(), "Content-Type: application/json"],
            &body.to_string(),
        );
        (s, b)
    }
}

/// What a call by a limited key came back with.
#[derive(Debug)]
enum Answer {
    /// Refused as a whole (`INSUFFICIENT_PERMISSIONS`: a tool error, or HTTP 403).
    Refused(String),
    /// Done; the `data` (with `skipped` naming what was left out).
    Done(Value),
}

fn mcp_answer(c: &mut McpHttp, tool: &str, args: &Value) -> Answer {
    let (status, v) = c.try_call(tool, args.clone());
    if status == 403 {
        return Answer::Refused(v.to_string());
    }
    assert_eq!(status, 200, "{tool} {args}: {v}");
    let r = &v["result"];
    assert!(v.get("error").is_none(), "{tool} {args}: {v}");
    if r["isError"] == true {
        let text = r["content"][0]["text"].as_str().unwrap_or_default();
        let e: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        assert_eq!(
            e["error"]["code"], "INSUFFICIENT_PERMISSIONS",
            "{tool} {args}: an error other than a refusal: {text}"
        );
        return Answer::Refused(text.to_string());
    }
    Answer::Done(r["structuredContent"]["data"].clone())
}

fn rest_answer(status: u16, body: Value, what: &str) -> Answer {
    match status {
        200 => Answer::Done(body),
        403 => {
            assert_eq!(body["error"]["code"], "INSUFFICIENT_PERMISSIONS", "{what}");
            Answer::Refused(body.to_string())
        }
        s => panic!("{what}: HTTP {s} {body}"),
    }
}

/// The commands the Miniserver received since `mark`, each checked to target `allowed` (the
/// one control the key may touch); `Err` names a command to anything else.
fn commands_only_to(ms: &Miniserver, mark: usize, allowed: &str) -> Result<Vec<String>, String> {
    let sent = commands_since(&ms.sim, mark);
    match sent.iter().find(|l| !l.contains(allowed)) {
        Some(l) => Err(format!(
            "a command beyond the key's control: {l} (all: {sent:?})"
        )),
        None => Ok(sent),
    }
}

/// The first case, from outside: a key allowed only the light named "Wohnzimmer" did
/// drive the room's blinds (`control_rolladen_unified` scope room) and its light controller.
#[test]
fn a_light_named_like_its_room_gives_no_reach_into_the_room() {
    let ms = Miniserver::start(
        &light_named_like_its_room(),
        Some(DEMO_VALUES),
        SimConfig::default(),
    );
    let mut p = Production::new();
    let device = p.device_key(&["Wohnzimmer"]);
    p.serve(&ms);
    let mut c = p.mcp(&device);

    let mark = ms.sim.request_count();
    let a = mcp_answer(
        &mut c,
        "control_rolladen_unified",
        &json!({"scope": "room", "target": "Wohnzimmer", "action": "down"}),
    );
    assert!(matches!(a, Answer::Refused(_)), "{a:?}");
    let a = mcp_answer(
        &mut c,
        "control_device",
        &json!({"device": "Raffstore Süd", "action": "down"}),
    );
    match &a {
        Answer::Refused(m) => assert!(m.contains("Raffstore Süd (Wohnzimmer)"), "{m}"),
        Answer::Done(d) => panic!("a blind outside the key: {d}"),
    }
    assert_eq!(
        commands_since(&ms.sim, mark),
        Vec::<String>::new(),
        "no blind was sent anything"
    );

    // The room's lights: only the allowed one, the light controller named as skipped.
    let mark = ms.sim.request_count();
    let a = mcp_answer(
        &mut c,
        "control_lights_unified",
        &json!({"scope": "room", "target": "Wohnzimmer", "action": "on"}),
    );
    let Answer::Done(data) = a else {
        panic!("the allowed light is in the room: {a:?}")
    };
    let skipped = data["skipped"].to_string();
    assert!(skipped.contains("Lichtsteuerung (Wohnzimmer)"), "{data}");
    let sent = commands_only_to(&ms, mark, WZ_LIGHT).unwrap();
    assert!(!sent.is_empty(), "the allowed light was switched: {data}");
    assert!(ms.commands_to(WZ_LIGHT_CONTROLLER).is_empty());

    // By its own name it works as before.
    let mark = ms.sim.request_count();
    let a = mcp_answer(
        &mut c,
        "control_device",
        &json!({"device": "Wohnzimmer", "action": "off"}),
    );
    assert!(matches!(a, Answer::Done(_)), "{a:?}");
    assert_eq!(commands_only_to(&ms, mark, WZ_LIGHT).unwrap().len(), 1);
}

/// A name in two rooms grants nothing (the issue: adding `room` reached both), and the admin
/// API refuses it listing both rooms; "name (room)" resolves to one UUID that keeps working.
#[test]
fn a_name_in_two_rooms_grants_nothing_and_is_refused_at_creation() {
    let ms = Miniserver::demo();
    let mut p = Production::new();
    let ambiguous = p.device_key(&["Deckenlicht"]);
    p.serve(&ms);
    // Checked at start: the log names the key and the entry that grants nothing.
    let masked = masked_id(&p, &ambiguous);
    let served = p.served.as_ref().unwrap();
    wait_until("the ambiguous entry is logged at start", PATIENCE, || {
        let log = served.log();
        match log.iter().find(|l| l.contains("grants nothing")) {
            Some(l) if l.contains("\"Deckenlicht\"") && l.contains(&masked) => Ok(()),
            other => Err(other.cloned()),
        }
    });
    let mut c = p.mcp(&ambiguous);
    let mark = ms.sim.request_count();
    for room in ["Küche", "Wohnzimmer"] {
        let a = mcp_answer(
            &mut c,
            "control_device",
            &json!({"device": "Deckenlicht", "room": room, "action": "on"}),
        );
        assert!(matches!(a, Answer::Refused(_)), "{room}: {a:?}");
    }
    let a = mcp_answer(
        &mut c,
        "control_lights_unified",
        &json!({"scope": "device", "target": "Deckenlicht", "room": "Küche", "action": "on"}),
    );
    assert!(matches!(a, Answer::Refused(_)), "{a:?}");
    assert_eq!(commands_since(&ms.sim, mark), Vec::<String>::new());

    // The key shows why its entry grants nothing, with both candidates.
    let (s, listed) = p.rest(&p.admin, "GET", "/admin/api/keys", &Value::Null);
    assert_eq!(s, 200, "{listed}");
    let rec = listed["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["role"] == "device")
        .expect("the device key is listed")
        .clone();
    let entry = &rec["devices"][0];
    assert_eq!(entry["entry"], "Deckenlicht", "{rec}");
    let rooms: Vec<&str> = entry["candidates"]
        .as_array()
        .unwrap_or_else(|| panic!("candidates on {rec}"))
        .iter()
        .filter_map(|c| c["room"].as_str())
        .collect();
    assert_eq!(rooms.len(), 2, "{entry}");
    assert!(rooms.contains(&"Küche") && rooms.contains(&"Wohnzimmer"));

    // Creating such a key is refused, naming both rooms.
    let (s, refused) = p.rest(
        &p.admin,
        "POST",
        "/admin/api/keys",
        &json!({"role": "device", "expires_days": 30, "allowed_devices": ["Deckenlicht"]}),
    );
    assert_eq!(s, 400, "{refused}");
    let m = refused["error"]["message"].as_str().unwrap();
    assert!(m.contains("Küche") && m.contains("Wohnzimmer"), "{m}");

    // Named with its room it resolves to one UUID, stored on the key, and works.
    let (s, created) = p.rest(
        &p.admin,
        "POST",
        "/admin/api/keys",
        &json!({"role": "device", "expires_days": 30, "allowed_devices": ["Deckenlicht (Küche)"]}),
    );
    assert_eq!(s, 201, "{created}");
    assert_eq!(created["record"]["allowed_devices"], json!([KITCHEN_LIGHT]));
    assert_eq!(created["record"]["devices"][0]["room"], "Küche");
    let key = created["key"].as_str().unwrap();
    let mut k = p.mcp(key);
    let mark = ms.sim.request_count();
    let a = mcp_answer(
        &mut k,
        "control_device",
        &json!({"device": "Deckenlicht", "room": "Küche", "action": "on"}),
    );
    assert!(matches!(a, Answer::Done(_)), "{a:?}");
    let a = mcp_answer(
        &mut k,
        "control_device",
        &json!({"device": "Deckenlicht", "room": "Wohnzimmer", "action": "on"}),
    );
    assert!(matches!(a, Answer::Refused(_)), "{a:?}");
    assert_eq!(commands_only_to(&ms, mark, KITCHEN_LIGHT).unwrap().len(), 1);

    // An update is resolved the same way: refused when ambiguous, else the new UUIDs replace
    // the old ones and take effect on the next call.
    let path = format!("/admin/api/keys/{key}");
    let (s, refused) = p.rest(
        &p.admin,
        "PUT",
        &path,
        &json!({"allowed_devices": ["Deckenlicht"]}),
    );
    assert_eq!(s, 400, "{refused}");
    let (s, updated) = p.rest(
        &p.admin,
        "PUT",
        &path,
        &json!({"allowed_devices": ["Spiegelleuchte"]}),
    );
    assert_eq!(s, 200, "{updated}");
    assert_eq!(
        updated["record"]["allowed_devices"],
        json!([MIRROR_LIGHT]),
        "{updated}"
    );
    let mark = ms.sim.request_count();
    let a = mcp_answer(
        &mut k,
        "control_device",
        &json!({"device": "Deckenlicht", "room": "Küche", "action": "off"}),
    );
    assert!(matches!(a, Answer::Refused(_)), "{a:?}");
    let a = mcp_answer(
        &mut k,
        "control_device",
        &json!({"device": "Spiegelleuchte", "action": "on"}),
    );
    assert!(matches!(a, Answer::Done(_)), "{a:?}");
    assert_eq!(commands_only_to(&ms, mark, MIRROR_LIGHT).unwrap().len(), 1);

    // `keys generate --structure` refuses the ambiguous name too, listing both rooms.
    let structure = p.dir.join("LoxAPP3.json");
    std::fs::write(&structure, DEMO_STRUCTURE).unwrap();
    let o = keys(
        &p.store,
        &[
            "generate",
            "--role",
            "device",
            "--device",
            "Deckenlicht",
            "--structure",
            structure.to_str().unwrap(),
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("Küche") && err.contains("Wohnzimmer"), "{err}");
    let o = generate(
        &p.store,
        "device",
        &[
            "--device",
            "Küche/Deckenlicht",
            "--structure",
            structure.to_str().unwrap(),
        ],
    );
    assert_eq!(o["allowed_devices"], json!([KITCHEN_LIGHT]), "{o}");
}

/// Every room- and house-wide tool, batch, workflow and REST route called by a device key
/// allowed only the desk lamp (Büro) acts on the lamp at most, or is refused as a whole.
#[test]
fn room_and_house_wide_calls_reach_only_the_allowed_control() {
    let ms = Miniserver::demo();
    let mut p = Production::new();
    // The owner lets the model confirm house-wide calls for this key (who confirms is
    // confirm.rs's matter): what reaches the house is this test's.
    let device = p.device_key_with(&["Schreibtischleuchte"], &["--model-confirms", "yes"]);
    // The lamp is sent a command by most of the calls below, faster than the outbound limit
    // of a real house allows one control.
    p.serve_with(&ms, "[miniserver]\nmax_commands_per_control = 1000\n");
    // A workflow made by the admin that touches the lamp and the hallway light.
    let mut admin = p.mcp(&p.admin);
    admin.ok(
        "create_workflow",
        json!({"name": "abends", "steps": [
            {"tool": "control_device", "arguments": {"device": "Flurlicht", "action": "on"}},
            {"tool": "control_room_lights", "arguments": {"room": "Büro", "action": "off"}}]}),
    );
    let mut c = p.mcp(&device);
    // (tool, arguments, whether the lamp is among what it addresses)
    let calls: Vec<(&str, Value, bool)> = vec![
        (
            "control_room_lights",
            json!({"room": "Büro", "action": "on"}),
            true,
        ),
        ("room_all_on", json!({"room_id": "Büro"}), true),
        (
            "control_all_lights",
            json!({"action": "off", "confirm": true}),
            true,
        ),
        (
            "control_lights_unified",
            json!({"scope": "system", "action": "on", "confirm": true}),
            true,
        ),
        (
            "control_lights_unified",
            json!({"scope": "category", "target": "lighting", "action": "off", "confirm": true}),
            true,
        ),
        (
            "control_lights_unified",
            json!({"scope": "room", "target": "Küche", "action": "on"}),
            false,
        ),
        (
            "control_room_rolladen",
            json!({"room": "Büro", "action": "down"}),
            false,
        ),
        (
            "control_all_rolladen",
            json!({"action": "down", "confirm": true}),
            false,
        ),
        (
            "control_rolladen_unified",
            json!({"scope": "room", "target": "Büro", "action": "down"}),
            false,
        ),
        (
            "control_rolladen_unified",
            json!({"scope": "system", "action": "up", "confirm": true}),
            false,
        ),
        (
            "control_room_devices",
            json!({"room": "Büro", "action": "on", "device_type": "lighting"}),
            true,
        ),
        (
            "set_room_temperature",
            json!({"room": "Büro", "temperature": 21.5}),
            false,
        ),
        (
            "set_room_mode",
            json!({"room": "Bad", "mode": "eco"}),
            false,
        ),
        (
            "control_audio_zone",
            json!({"zone": "Badradio", "action": "play"}),
            false,
        ),
        (
            "set_audio_volume",
            json!({"zone": "Bad", "volume": 20}),
            false,
        ),
        (
            "control_multiple_devices",
            json!({"operations": [
            {"device": "Schreibtischleuchte", "action": "off"},
            {"device": "Raffstore", "action": "down"},
            {"device": "Deckenlicht", "room": "Küche", "action": "on"}]}),
            true,
        ),
        (
            "control_device",
            json!({"device": "Raffstore", "action": "down"}),
            false,
        ),
        (
            "set_dimmer",
            json!({"device_id": "Spiegelleuchte", "level": 40}),
            false,
        ),
        ("execute_workflow", json!({"name": "abends"}), true),
    ];
    for (tool, args, reaches_lamp) in &calls {
        let mark = ms.sim.request_count();
        let a = mcp_answer(&mut c, tool, args);
        let sent = commands_only_to(&ms, mark, DESK_LAMP)
            .unwrap_or_else(|e| panic!("{tool} {args}: {e}; answer {a:?}"));
        match (&a, reaches_lamp) {
            (Answer::Done(data), true) => {
                assert!(
                    !sent.is_empty(),
                    "{tool} {args}: the lamp got nothing: {data}"
                )
            }
            (Answer::Refused(_), false) => assert!(sent.is_empty()),
            _ => panic!("{tool} {args}: {a:?}"),
        }
    }
    // What a batch left out is named.
    let mark = ms.sim.request_count();
    let batch = &calls
        .iter()
        .find(|(t, _, _)| *t == "control_multiple_devices")
        .expect("a batch among the calls")
        .1;
    let Answer::Done(data) = mcp_answer(&mut c, "control_multiple_devices", batch) else {
        panic!("the batch holds the lamp")
    };
    let skipped = data["skipped"].to_string();
    assert!(
        skipped.contains("Raffstore (Büro)") && skipped.contains("Deckenlicht (Küche)"),
        "{data}"
    );
    commands_only_to(&ms, mark, DESK_LAMP).unwrap();
    // The workflow's other step was refused, not sent.
    let mark = ms.sim.request_count();
    let Answer::Done(run) = mcp_answer(&mut c, "execute_workflow", &json!({"name": "abends"}))
    else {
        panic!("the workflow runs its allowed step")
    };
    assert!(
        run.to_string().contains("INSUFFICIENT_PERMISSIONS"),
        "{run}"
    );
    commands_only_to(&ms, mark, DESK_LAMP).unwrap();

    // REST routes: the same rule.
    let rest: Vec<(&str, &str, Value, bool)> = vec![
        ("POST", "/api/devices/Raffstore/on", Value::Null, false),
        (
            "POST",
            "/api/devices/control",
            json!({"device": "Raffstore", "action": "down"}),
            false,
        ),
        (
            "POST",
            "/tools/call",
            json!({"tool": "control_room_rolladen", "arguments": {"room": "Büro", "action": "down"}}),
            false,
        ),
        (
            "POST",
            "/tools/call",
            json!({"tool": "control_room_lights", "arguments": {"room": "Büro", "action": "off"}}),
            true,
        ),
        (
            "POST",
            "/api/devices/Schreibtischleuchte/on",
            Value::Null,
            true,
        ),
    ];
    for (method, path, body, reaches_lamp) in &rest {
        let mark = ms.sim.request_count();
        let (s, b) = p.rest(&device, method, path, body);
        let what = format!("{method} {path} {body}");
        let a = rest_answer(s, b, &what);
        let sent = commands_only_to(&ms, mark, DESK_LAMP).unwrap_or_else(|e| panic!("{what}: {e}"));
        match (&a, reaches_lamp) {
            (Answer::Done(_), true) => assert!(!sent.is_empty(), "{what}: {a:?}"),
            (Answer::Refused(_), false) => assert!(sent.is_empty()),
            _ => panic!("{what}: {a:?}"),
        }
    }
}

/// A device key lists and reads only its controls; reads of rooms or the whole house are
/// refused.
#[test]
fn a_device_key_reads_only_its_controls() {
    let ms = Miniserver::demo();
    let mut p = Production::new();
    let device = p.device_key(&["Schreibtischleuchte", "Deckenlicht (Küche)"]);
    p.serve(&ms);
    let mut c = p.mcp(&device);
    let names = |v: &Value, list: &str| -> Vec<String> {
        let mut n: Vec<String> = v[list]
            .as_array()
            .unwrap_or_else(|| panic!("{list} in {v}"))
            .iter()
            .map(|d| d["uuid"].as_str().unwrap().to_string())
            .collect();
        n.sort();
        n
    };
    let mut both = vec![DESK_LAMP.to_string(), KITCHEN_LIGHT.to_string()];
    both.sort();
    assert_eq!(names(&c.ok("list_devices", json!({})), "devices"), both);
    assert_eq!(names(&c.ok("get_lights_status", json!({})), "lights"), both);
    assert_eq!(
        names(&c.ok("list_devices", json!({"room": "Büro"})), "devices"),
        [DESK_LAMP]
    );
    for (tool, list) in [
        ("get_blinds_status", "blinds"),
        ("discover_rolladen_capabilities", "blinds"),
        ("get_climate_status", "zones"),
        ("get_temperature_sensors", "sensors"),
        ("get_audio_status", "zones"),
        ("get_sensors_status", "sensors"),
        ("get_security_status", "alarms"),
    ] {
        let data = c.ok(tool, json!({}));
        assert_eq!(names(&data, list), Vec::<String>::new(), "{tool}: {data}");
        // The admin's answer to the same call is not empty: the filter took something out.
        let all = p.mcp(&p.admin).ok(tool, json!({}));
        assert!(!names(&all, list).is_empty(), "{tool} as admin: {all}");
    }
    for (tool, args) in [
        ("get_home_summary", json!({})),
        ("list_rooms", json!({})),
        ("get_zone_temperature", json!({"zone_id": "Küche"})),
        ("list_workflows", json!({})),
    ] {
        let a = mcp_answer(&mut c, tool, &args);
        assert!(matches!(a, Answer::Refused(_)), "{tool}: {a:?}");
    }
    // Resources describe the whole house: refused at the gate.
    let r = c.post(&json!({"jsonrpc": "2.0", "id": 99, "method": "resources/list"}));
    assert_eq!(r.status, 403, "{r:?}");
    // The same read by the admin is the whole house (and no cached filtered answer).
    let mut admin = p.mcp(&p.admin);
    let all = admin.ok("list_devices", json!({}));
    assert!(all["devices"].as_array().unwrap().len() > 2, "{all}");
    assert_eq!(names(&c.ok("list_devices", json!({})), "devices"), both);
}

/// The masked id of `key` as the server logs it (`homekey_device_2_a1b2****`).
fn masked_id(p: &Production, key: &str) -> String {
    let (_, listed) = p.rest(&p.admin, "GET", "/admin/api/keys", &Value::Null);
    let prefix: String = key.split('_').take(3).collect::<Vec<_>>().join("_");
    listed["keys"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|k| k["id"].as_str())
        .find(|id| id.starts_with(&format!("{prefix}_")))
        .unwrap_or_else(|| panic!("{prefix} among {listed}"))
        .to_string()
}

/// Names are resolved again when the structure file changes: an entry stored as a name that
/// no longer names a control grants nothing and shows so on the key; an entry resolved to a
/// UUID when the key was made keeps working after its control is renamed.
#[test]
fn entries_are_resolved_again_when_the_structure_changes() {
    let ms = Miniserver::demo();
    let mut p = Production::new();
    let by_name = p.device_key(&["Deckenlicht (Küche)"]);
    // The shortest structure check the configuration takes.
    p.serve_with(&ms, "[miniserver]\nstructure_check_secs = 10\n");
    let (s, created) = p.rest(
        &p.admin,
        "POST",
        "/admin/api/keys",
        &json!({"role": "device", "expires_days": 30, "allowed_devices": ["Deckenlicht (Küche)"]}),
    );
    assert_eq!(s, 201, "{created}");
    let by_uuid = created["key"].as_str().unwrap().to_string();

    let mut doc: Value = serde_json::from_str(DEMO_STRUCTURE).unwrap();
    doc["controls"][KITCHEN_LIGHT]["name"] = json!("Hängelampe");
    doc["lastModified"] = json!("2030-01-01 00:00:00");
    ms.sim.replace_structure(&doc.to_string()).unwrap();
    let mut admin = p.mcp(&p.admin);
    wait_until("the server reads the new structure file", PATIENCE, || {
        let d = admin.ok("list_devices", json!({"room": "Küche"}));
        if d.to_string().contains("Hängelampe") {
            Ok(())
        } else {
            Err(d)
        }
    });

    // The server logs the entry that stopped resolving when it reads the file, naming the
    // key, before anyone uses it.
    let served = p.served.as_ref().unwrap();
    let name_key = masked_id(&p, &by_name);
    wait_until("the unresolved entry is logged", PATIENCE, || {
        let log = served.log();
        match log.iter().find(|l| l.contains("grants nothing")) {
            Some(l) if l.contains("Deckenlicht (Küche)") && l.contains(&name_key) => Ok(()),
            other => Err(other.cloned()),
        }
    });
    let mut old = p.mcp(&by_name);
    let mark = ms.sim.request_count();
    let a = mcp_answer(
        &mut old,
        "control_device",
        &json!({"device": KITCHEN_LIGHT, "action": "on"}),
    );
    assert!(matches!(a, Answer::Refused(_)), "{a:?}");
    assert_eq!(commands_since(&ms.sim, mark), Vec::<String>::new());
    let (_, listed) = p.rest(&p.admin, "GET", "/admin/api/keys", &Value::Null);
    let shown = listed["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["allowed_devices"] == json!(["Deckenlicht (Küche)"]))
        .expect("the key stored by name")
        .clone();
    assert!(shown["devices"][0]["error"].is_string(), "{shown}");

    let mut new = p.mcp(&by_uuid);
    let mark = ms.sim.request_count();
    let a = mcp_answer(
        &mut new,
        "control_device",
        &json!({"device": "Hängelampe", "action": "on"}),
    );
    assert!(matches!(a, Answer::Done(_)), "{a:?}");
    assert_eq!(commands_only_to(&ms, mark, KITCHEN_LIGHT).unwrap().len(), 1);
}

/// The refusals table of `docs/security.md` (issue 28: it said 403/-32003 for per-device
/// refusals): at the gate a key without the permission (a monitor's `control_device`) or a
/// device key's house-wide method gets HTTP 403 with JSON-RPC -32003; a device key's call on
/// a control it is not allowed gets a tool error (HTTP 200, `isError`, `INSUFFICIENT_PERMISSIONS`
/// in the error object) on MCP and 403 `INSUFFICIENT_PERMISSIONS` on REST; nothing is sent.
#[test]
fn refusals_take_the_shapes_the_security_page_names() {
    let ms = Miniserver::demo();
    let mut p = Production::new();
    let device = p.device_key(&["Schreibtischleuchte"]);
    let monitor = generate(&p.store, "monitor", &["--expires-days", "30"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    p.serve(&ms);
    let mark = ms.sim.request_count();
    let other = json!({"device": KITCHEN_LIGHT, "action": "on"});

    // Per control, in the tool: a tool error on MCP.
    let (status, v) = p.mcp(&device).try_call("control_device", other.clone());
    assert_eq!(status, 200, "{v}");
    assert!(v.get("error").is_none(), "not a JSON-RPC error: {v}");
    assert_eq!(v["result"]["isError"], true, "{v}");
    let text = v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    let e: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    assert_eq!(e["error"]["code"], "INSUFFICIENT_PERMISSIONS", "{text}");
    // ... and 403 on REST.
    let (status, body) = p.rest(
        &device,
        "POST",
        "/tools/call",
        &json!({"tool": "control_device", "arguments": other}),
    );
    assert_eq!(
        (status, &body["error"]["code"]),
        (403, &json!("INSUFFICIENT_PERMISSIONS")),
        "{body}"
    );

    // At the gate: 403 with -32003.
    let (status, v) = p.mcp(&monitor).try_call("control_device", other.clone());
    assert_eq!(
        (status, &v["error"]["code"], &v["error"]["data"]["code"]),
        (403, &json!(-32003), &json!("INSUFFICIENT_PERMISSIONS")),
        "a monitor's command: {v}"
    );
    let r = p
        .mcp(&device)
        .post(&json!({"jsonrpc": "2.0", "id": 5, "method": "resources/list"}));
    assert_eq!(r.status, 403, "{r:?}");
    assert_eq!(r.json()["error"]["code"], -32003, "{r:?}");
    assert_eq!(commands_since(&ms.sim, mark), Vec::<String>::new());
}

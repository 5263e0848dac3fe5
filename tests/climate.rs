//! The climate tools end to end through the real Loxone client against the simulator: room
//! modes on Intelligent Room Controller V2 (`setOperatingMode`, `override`, `stopOverride`) and
//! v1 (`mode`, `starttimer`, `stoptimer`), zone temperatures and the climate status, on the
//! demo house and on every fixture structure file with room controllers; and every bad-input
//! class.

use crate::support;
use support::*;

use serde_json::{json, Value};

use home_mcp::app::App;
use home_mcp::home::{Value as StateValue, LOXONE_EPOCH_UNIX};
use home_mcp::sim::Simulator;
use home_mcp::tools::HomeTools;
use support::between::{assert_between, demo_reading_at_call};

/// UUID of the room controller in `room` (demo house).
fn controller(app: &App, room: &str) -> String {
    support::find::room_controller(&app.house.home(), Some(room))
        .uuid
        .clone()
}

fn loxone_now() -> f64 {
    (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        - LOXONE_EPOCH_UNIX) as f64
}

fn set_mode(tools: &HomeTools, room: &str, args: Value) -> Value {
    let mut a = json!({"room": room});
    a.as_object_mut()
        .unwrap()
        .extend(args.as_object().unwrap().clone());
    let data = ok(tools, "set_room_mode", a);
    assert_batch(&data);
    data
}

/// A batch answer in which every item went through (dry run: was planned).
fn assert_batch(data: &Value) {
    assert_eq!(data["scope"], "room", "{data}");
    let s = &data["summary"];
    let done = if data["dry_run"] == true {
        &s["planned"]
    } else {
        &s["succeeded"]
    };
    assert_eq!(done, &s["total"], "{data}");
    assert_eq!(s["failed"], 0, "{data}");
    assert_eq!(s["not_attempted"], 0, "{data}");
    let results = data["results"].as_array().unwrap();
    assert_eq!(s["total"], results.len());
    for r in results {
        assert_eq!(
            r["status"],
            if data["dry_run"] == true {
                "planned"
            } else {
                "ok"
            }
        );
    }
}

/// The commands of result `i` without the `<uuid>/` prefix (which must be the device's).
fn commands(data: &Value, i: usize) -> Vec<String> {
    let r = &data["results"][i];
    let prefix = format!("{}/", r["device"]["uuid"].as_str().unwrap());
    r["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let c = c.as_str().unwrap();
            c.strip_prefix(&prefix)
                .unwrap_or_else(|| panic!("{c} goes to the device"))
                .to_string()
        })
        .collect()
}

#[test]
fn room_mode_v2_operating_modes_and_overrides() {
    let (app, tools) = demo();
    let sim = sim(&app);
    let irc = controller(&app, "Wohnzimmer");

    let data = set_mode(&tools, "wohnzimmer", json!({"mode": "cooling"}));
    assert_eq!(data["target"], "Wohnzimmer");
    assert_eq!(data["action"], "cooling");
    assert!(data["value"].is_null());
    assert!(data["duration_minutes"].is_null());
    assert_eq!(data["results"][0]["device"]["uuid"], irc.as_str());
    assert_eq!(
        data["results"][0]["commands"],
        json!([format!("{irc}/setOperatingMode/2")])
    );
    assert_eq!(sim.state(&irc, "operatingMode"), Some(2.0));
    set_mode(&tools, "Wohnzimmer", json!({"mode": "heating"}));
    assert_eq!(sim.state(&irc, "operatingMode"), Some(1.0));

    // Eco for 90 minutes: override to mode 0 ending in 90 minutes (Loxone epoch seconds).
    let data = set_mode(
        &tools,
        "Wohnzimmer",
        json!({"mode": "eco", "duration_minutes": 90}),
    );
    assert_eq!(data["duration_minutes"], 90);
    assert_eq!(data["value"], 90.0);
    assert!(data["results"][0].get("note").is_none(), "{data}");
    assert_eq!(sim.state(&irc, "activeMode"), Some(0.0));
    // Eco target = comfort 22 - absentMinOffset 3.
    assert_eq!(sim.state(&irc, "tempTarget"), Some(19.0));
    let entries: Value =
        serde_json::from_str(&sim.state_text(&irc, "overrideEntries").unwrap()).unwrap();
    let end = entries[0]["end"].as_f64().unwrap();
    let expected = loxone_now() + 90.0 * 60.0;
    assert!((end - expected).abs() < 60.0, "end {end} vs {expected}");

    set_mode(&tools, "Wohnzimmer", json!({"mode": "comfort"}));
    assert_eq!(sim.state(&irc, "activeMode"), Some(1.0));
    set_mode(&tools, "Wohnzimmer", json!({"mode": "off"}));
    assert_eq!(sim.state(&irc, "activeMode"), Some(2.0));
    assert_eq!(sim.state(&irc, "tempTarget"), Some(6.0), "frost protection");

    // Auto: automatic operating mode and the override ends (back to the scheduled comfort).
    let data = set_mode(&tools, "Wohnzimmer", json!({"mode": "auto"}));
    assert_eq!(commands(&data, 0), ["setOperatingMode/0", "stopOverride"]);
    assert_eq!(sim.state(&irc, "operatingMode"), Some(0.0));
    assert_eq!(sim.state(&irc, "activeMode"), Some(1.0));
    assert_eq!(sim.state_text(&irc, "overrideEntries").unwrap(), "[]");
    assert_eq!(sim.state(&irc, "tempTarget"), Some(22.0));
    // Auto without a running override leaves the active mode alone.
    set_mode(&tools, "Wohnzimmer", json!({"mode": "auto"}));
    assert_eq!(sim.state(&irc, "activeMode"), Some(1.0));
}

#[test]
fn room_mode_dry_run_sends_nothing() {
    let (app, tools) = demo();
    let sim = sim(&app);
    let irc = controller(&app, "Wohnzimmer");
    let office = controller(&app, "Büro");
    let data = set_mode(
        &tools,
        "Wohnzimmer",
        json!({"mode": "eco", "duration_minutes": 30, "dry_run": true}),
    );
    assert_eq!(data["dry_run"], true);
    assert_eq!(data["summary"]["planned"], 1);
    let cmd = &commands(&data, 0)[0];
    assert!(cmd.starts_with("override/0/"), "{cmd}");
    assert_eq!(sim.state(&irc, "activeMode"), Some(1.0));
    let data = set_mode(&tools, "Büro", json!({"mode": "auto", "dry_run": true}));
    assert_eq!(commands(&data, 0), ["mode/0", "stoptimer"]);
    assert_eq!(sim.state(&office, "mode"), Some(0.0));
    let data = set_mode(&tools, "Büro", json!({"mode": "heating", "dry_run": true}));
    assert_eq!(commands(&data, 0), ["mode/3"]);
    assert_eq!(sim.state(&office, "mode"), Some(0.0), "not sent");
}

#[test]
fn room_mode_v1_modes_and_timers() {
    let (app, tools) = demo();
    let sim = sim(&app);
    let irc = controller(&app, "Büro");

    let data = set_mode(&tools, "buro", json!({"mode": "heating"}));
    assert_eq!(data["results"][0]["device"]["type"], "IRoomController");
    assert_eq!(commands(&data, 0), ["mode/3"]);
    assert_eq!(sim.state(&irc, "mode"), Some(3.0));
    set_mode(&tools, "Büro", json!({"mode": "cooling"}));
    assert_eq!(sim.state(&irc, "mode"), Some(4.0));

    // Eco without a duration: v1 only has timers, 240 minutes by default.
    let data = set_mode(&tools, "Büro", json!({"mode": "eco"}));
    assert_eq!(commands(&data, 0), ["starttimer/0/14400"]);
    // The header has the duration as asked (none); the item says which one it used.
    assert!(data["duration_minutes"].is_null());
    let note = data["results"][0]["note"].as_str().unwrap();
    assert!(note.contains("duration_minutes 240"), "{note}");
    assert_eq!(sim.state(&irc, "overrideTotal"), Some(14400.0));
    // Eco is relative: comfort 21.5 + (-3).
    assert_eq!(sim.state(&irc, "tempTarget"), Some(18.5));

    set_mode(
        &tools,
        "Büro",
        json!({"mode": "comfort", "duration_minutes": 30}),
    );
    assert_eq!(sim.state(&irc, "overrideTotal"), Some(1800.0));
    assert_eq!(sim.state(&irc, "tempTarget"), Some(21.5));
    set_mode(
        &tools,
        "Büro",
        json!({"mode": "off", "duration_minutes": 60}),
    );
    assert_eq!(sim.state(&irc, "tempTarget"), Some(6.0), "empty house");

    let data = set_mode(&tools, "Büro", json!({"mode": "auto"}));
    assert_eq!(commands(&data, 0), ["mode/0", "stoptimer"]);
    assert_eq!(sim.state(&irc, "mode"), Some(0.0));
    assert_eq!(sim.state(&irc, "override"), Some(0.0));
    assert_eq!(sim.state(&irc, "tempTarget"), Some(21.5));
}

/// UUID of the demo house's Climate Controller ("Heizung & Kühlung", Keller).
const DEMO_CLIMATE: &str = "1d5c3c41-0224-5dd7-ffff504f94d0e5a1";

#[test]
fn room_mode_sets_the_climate_controller() {
    let (app, tools) = demo();
    let sim = sim(&app);
    for (mode, auto_mode) in [
        ("heating", 1.0),
        ("cooling", 2.0),
        ("off", -1.0),
        ("auto", 0.0),
    ] {
        let data = set_mode(&tools, "keller", json!({"mode": mode}));
        assert_eq!(data["target"], "Keller");
        assert_eq!(data["action"], mode);
        let r = &data["results"][0];
        assert_eq!(r["device"]["type"], "ClimateController");
        assert_eq!(commands(&data, 0), [format!("autoMode/{auto_mode}")]);
        assert!(r["note"].as_str().unwrap().contains("whole house"), "{r}");
        assert_eq!(
            sim.state(DEMO_CLIMATE, "autoMode"),
            Some(auto_mode),
            "{mode}"
        );
    }
    let data = set_mode(
        &tools,
        "Keller",
        json!({"mode": "heating", "dry_run": true}),
    );
    assert_eq!(commands(&data, 0), ["autoMode/1"]);
    assert_eq!(sim.state(DEMO_CLIMATE, "autoMode"), Some(0.0), "not sent");
}

#[test]
fn room_mode_climate_controller_next_to_room_controllers() {
    // The demo house with its Climate Controller moved into the living room, next to the
    // room controller there.
    let mut doc: Value = serde_json::from_str(include_str!("../assets/demo-house.json")).unwrap();
    let living = doc["controls"]["1d5c3a56-0205-506a-ffff504f94d0e5a1"]["room"].clone();
    doc["controls"][DEMO_CLIMATE]["room"] = living;
    let f = support::sim_house(&doc.to_string());
    let irc = "1d5c3a56-0205-506a-ffff504f94d0e5a1";

    // Comfort: the room controller takes it, the Climate Controller cannot (its item's error).
    let data = ok(
        &f.tools,
        "set_room_mode",
        json!({"room": "Wohnzimmer", "mode": "comfort", "duration_minutes": 60}),
    );
    assert_eq!(data["duration_minutes"], 60);
    assert_eq!(data["summary"]["total"], 2, "{data}");
    assert_eq!(data["summary"]["succeeded"], 1);
    assert_eq!(data["summary"]["failed"], 1);
    let results = data["results"].as_array().unwrap();
    let by_type = |t: &str| {
        results
            .iter()
            .find(|r| r["device"]["type"] == t)
            .unwrap_or_else(|| panic!("no {t} in {data}"))
    };
    let room = by_type("IRoomControllerV2");
    assert_eq!(room["status"], "ok");
    assert_eq!(f.sim.state(irc, "activeMode"), Some(1.0));
    let cc = by_type("ClimateController");
    assert_eq!(cc["status"], "error");
    assert_eq!(cc["commands"], json!([]));
    assert_eq!(cc["error"]["code"], "INVALID_PARAMETERS");
    let m = cc["error"]["message"].as_str().unwrap();
    assert!(m.contains("does not support mode comfort"), "{m}");
    assert!(
        m.contains("auto (heating and cooling), heating, cooling"),
        "{m}"
    );

    // Cooling reaches both.
    let data = set_mode(&f.tools, "Wohnzimmer", json!({"mode": "cooling"}));
    assert_eq!(data["summary"]["succeeded"], 2);
    assert_eq!(f.sim.state(irc, "operatingMode"), Some(2.0));
    assert_eq!(f.sim.state(DEMO_CLIMATE, "autoMode"), Some(2.0));
    // Auto: the room controller also ends its override; the Climate Controller has none.
    let data = set_mode(&f.tools, "Wohnzimmer", json!({"mode": "auto"}));
    let cc = data["results"]
        .as_array()
        .unwrap()
        .iter()
        .position(|r| r["device"]["type"] == "ClimateController")
        .unwrap();
    assert_eq!(commands(&data, cc), ["autoMode/0"]);
    assert_eq!(
        commands(&data, 1 - cc),
        ["setOperatingMode/0", "stopOverride"]
    );
    assert_eq!(f.sim.state(DEMO_CLIMATE, "autoMode"), Some(0.0));
}

#[test]
fn simulated_v1_timer_runs_out() {
    use base64::prelude::{Engine as _, BASE64_STANDARD};
    let sim = Simulator::demo();
    let auth = format!("Basic {}", BASE64_STANDARD.encode("demo:demo"));
    let peer = std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
    let office = "1d5c3bb3-021b-59f5-ffff504f94d0e5a1";
    let get = |cmd: &str| {
        sim.handle(
            "GET",
            &format!("/jdev/sps/io/{office}/{cmd}"),
            Some(&auth),
            peer,
        )
    };
    // An hour's timer is certainly running after the test's few seconds.
    assert_eq!(get("starttimer/0/3600").status, 200);
    assert_eq!(sim.state(office, "tempTarget"), Some(18.5));
    let left = sim.state(office, "override").unwrap();
    assert!(left > 0.0 && left <= 3600.0, "{left}");
    assert_eq!(sim.state(office, "overrideTotal"), Some(3600.0));
    // A 0.3 s timer runs out: the override ends and the target returns to comfort.
    assert_eq!(get("starttimer/0/0.3").status, 200);
    assert_eq!(sim.state(office, "overrideTotal"), Some(0.3));
    wait_until("the 0.3 s timer runs out", PATIENCE, || {
        match (
            sim.state(office, "override"),
            sim.state(office, "tempTarget"),
        ) {
            (Some(0.0), Some(21.5)) => Ok(()),
            seen => Err(seen),
        }
    });
    // Bad timers are refused.
    assert_eq!(get("starttimer/9/60").status, 400);
    assert_eq!(get("starttimer/1/0").status, 400);
    assert_eq!(get("starttimer/1").status, 400);
}

#[test]
fn room_mode_bad_inputs() {
    let (_app, tools) = demo();
    let m = invalid_params(
        &tools,
        "set_room_mode",
        json!({"room": "Küche", "mode": "turbo"}),
    );
    assert!(m.contains("mode must be one of auto, heating"), "{m}");
    let m = invalid_params(&tools, "set_room_mode", json!({"mode": "eco"}));
    assert!(m.contains("`room`"), "{m}");
    let m = invalid_params(&tools, "set_room_mode", json!({"room": "Küche"}));
    assert!(m.contains("`mode`"), "{m}");
    let m = invalid_params(
        &tools,
        "set_room_mode",
        json!({"room": "Küche", "mode": "auto", "duration_minutes": 30}),
    );
    assert!(
        m.contains("duration_minutes does not go with mode auto"),
        "{m}"
    );
    let m = invalid_params(
        &tools,
        "set_room_mode",
        json!({"room": "Küche", "mode": "eco", "duration_minutes": 0}),
    );
    assert!(
        m.contains("duration_minutes must be between 1 and 10080"),
        "{m}"
    );
    let m = invalid_params(
        &tools,
        "set_room_mode",
        json!({"room": "Küche", "mode": "eco", "minutes": 5}),
    );
    assert!(m.contains("`minutes`"), "{m}");

    let e = tool_error(
        &tools,
        "set_room_mode",
        json!({"room": "Dachboden", "mode": "eco"}),
    );
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
    let e = tool_error(
        &tools,
        "set_room_mode",
        json!({"room": "Garage", "mode": "eco"}),
    );
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("Garage has no room controller"),
        "{e}"
    );
    // The cellar has only the house-wide Climate Controller: comfort means nothing to it.
    let e = tool_error(
        &tools,
        "set_room_mode",
        json!({"room": "Keller", "mode": "comfort"}),
    );
    assert_eq!(e["code"], "INVALID_PARAMETERS");
    let m = e["message"].as_str().unwrap();
    assert!(m.contains("nothing in Keller supports it"), "{m}");
    assert!(m.contains("Heizung & Kühlung (ClimateController)"), "{m}");
    let e = tool_error(
        &tools,
        "set_room_mode",
        json!({"room": "Keller", "mode": "off", "duration_minutes": 30}),
    );
    assert_eq!(e["code"], "INVALID_PARAMETERS");
    assert!(e["message"].as_str().unwrap().contains("no timer"), "{e}");

    let m = invalid_params(
        &tools,
        "set_room_temperature",
        json!({"room": "Bad", "temperature": 20, "dry_run": "yes"}),
    );
    assert!(m.contains("must be of type"), "{m}");
    let m = invalid_params(
        &tools,
        "set_room_temperature",
        json!({"room": "Bad", "temperature": 4.5}),
    );
    assert!(m.contains("temperature must be between 5 and 35"), "{m}");
}

#[test]
fn zone_temperature_by_room_or_controller() {
    // Polling only: named states stay unknown (null) unless the test sets them, whatever the
    // timing of a WebSocket link; values read from the simulator during the call.
    let (app, tools) = demo_reading_at_call();
    let sim = sim(&app);
    let kitchen = controller(&app, "Küche");
    // The simulator's room temperature drifts toward the target: the tool shows it as read
    // between these two readings.
    let before = sim.state(&kitchen, "tempActual").unwrap();
    let data = ok(&tools, "get_zone_temperature", json!({"zone_id": "kuche"}));
    let after = sim.state(&kitchen, "tempActual").unwrap();
    assert_eq!(data["room"], "Küche");
    assert_eq!(data["unit"], "°C");
    assert_between(&data, data["temperature"].as_f64().unwrap(), before, after);
    assert_eq!(data["controllers"][0]["uuid"], kitchen.as_str());
    assert_eq!(data["controllers"][0]["type"], "IRoomControllerV2");
    // The target is a named state: not readable over HTTP, so null, not guessed.
    assert!(data["target"].is_null(), "{data}");
    assert!(data["controllers"][0]["mode"].is_null());

    // Once the live state store knows tempTarget and operatingMode, they are reported.
    let home = app.house.home();
    let c = home.control(&kitchen).unwrap();
    let states = app.house.states();
    states.set(c.state("tempTarget").unwrap(), StateValue::Number(21.0));
    states.set(c.state("operatingMode").unwrap(), StateValue::Number(1.0));
    states.set(c.state("activeMode").unwrap(), StateValue::Number(0.0));
    states.set(c.state("openWindow").unwrap(), StateValue::Number(1.0));
    let data = ok(&tools, "get_zone_temperature", json!({"zone_id": kitchen}));
    assert_eq!(data["target"], 21.0);
    assert_eq!(data["controllers"][0]["mode"], "heating");
    assert_eq!(data["controllers"][0]["override"], "eco");
    assert_eq!(data["controllers"][0]["open_window"], true);

    // A controller by room-qualified name; the v1 controller of the office.
    let office = controller(&app, "Büro");
    let before = sim.state(&office, "tempActual").unwrap();
    let data = ok(
        &tools,
        "get_zone_temperature",
        json!({"zone_id": "Raumregelung Büro"}),
    );
    let after = sim.state(&office, "tempActual").unwrap();
    assert_eq!(data["room"], "Büro");
    assert_eq!(data["controllers"][0]["type"], "IRoomController");
    assert_between(&data, data["temperature"].as_f64().unwrap(), before, after);

    // The plain controller name exists in six rooms.
    let e = tool_error(
        &tools,
        "get_zone_temperature",
        json!({"zone_id": "Raumregelung"}),
    );
    assert_eq!(e["code"], "INVALID_PARAMETERS");
    assert!(e["message"].as_str().unwrap().contains("Küche"), "{e}");
    let e = tool_error(
        &tools,
        "get_zone_temperature",
        json!({"zone_id": "Dachboden"}),
    );
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
    let e = tool_error(&tools, "get_zone_temperature", json!({"zone_id": "Garage"}));
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
    assert!(e["message"].as_str().unwrap().contains("Garage"), "{e}");
    let e = tool_error(&tools, "get_zone_temperature", json!({"zone_id": "Musik"}));
    assert_eq!(e["code"], "INVALID_PARAMETERS");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("Musik (Wohnzimmer) is of type AudioZoneV2, not a room controller"),
        "{e}"
    );
    let m = invalid_params(&tools, "get_zone_temperature", json!({}));
    assert!(m.contains("`zone_id`"), "{m}");
    let m = invalid_params(&tools, "get_zone_temperature", json!({"zone_id": 3}));
    assert!(m.contains("must be of type"), "{m}");
}

#[test]
fn climate_status_lists_every_controller() {
    // Polling only: named states stay unknown (null) unless the test sets them, whatever the
    // timing of a WebSocket link; values read from the simulator during the call.
    let (app, tools) = demo_reading_at_call();
    // The simulator's room temperatures, which drift toward their targets, just before and
    // just after the call: each zone shows one read between the two.
    let temperatures = || -> std::collections::BTreeMap<String, f64> {
        let home = app.house.home();
        let found: std::collections::BTreeMap<String, f64> = home
            .controls
            .iter()
            .filter(|c| support::find::is_room_controller(c))
            .map(|c| {
                (
                    c.uuid.clone(),
                    sim(&app).state(&c.uuid, "tempActual").unwrap(),
                )
            })
            .collect();
        assert_eq!(found.len(), 6, "the demo's room controllers: {found:?}");
        found
    };
    let before = temperatures();
    let data = ok(&tools, "get_climate_status", json!({}));
    let after = temperatures();
    let zones = data["zones"].as_array().unwrap();
    assert_eq!(zones.len(), 6, "{data}");
    assert_eq!(data["total"], 6);
    for z in zones {
        let t = z["temperature"].as_f64().expect("actual read over HTTP");
        let uuid = z["uuid"].as_str().unwrap();
        assert_between(z, t, before[uuid], after[uuid]);
        assert_eq!(z["unit"], "°C");
        for k in ["target", "mode", "override", "open_window"] {
            assert!(z.get(k).is_some(), "{k} in {z}");
        }
    }
    assert_eq!(
        zones
            .iter()
            .filter(|z| z["type"] == "IRoomController")
            .count(),
        1
    );
    let cc = &data["climate_controllers"][0];
    assert_eq!(cc["name"], "Heizung & Kühlung");
    assert_eq!(cc["room"], "Keller");
    assert_eq!(cc["current_mode"], 1.0);
    assert!(cc["info_text"].is_null());

    let bath = ok(&tools, "get_climate_status", json!({"room": "Bad"}));
    assert_eq!(bath["total"], 1);
    assert_eq!(bath["zones"][0]["room"], "Bad");
    assert_eq!(bath["climate_controllers"], json!([]));
    let limited = ok(&tools, "get_climate_status", json!({"limit": 2}));
    assert_eq!(limited["zones"].as_array().unwrap().len(), 2);
    assert_eq!(limited["total"], 6);

    let m = invalid_params(&tools, "get_climate_status", json!({"limit": 0}));
    assert!(m.contains("limit must be between 1 and 500"), "{m}");
    let e = tool_error(&tools, "get_climate_status", json!({"room": "Dachboden"}));
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
    drop(app);
}

#[test]
fn set_room_temperature_reaches_v1_and_v2() {
    let (app, tools) = demo();
    let sim = sim(&app);
    let office = controller(&app, "Büro");
    let data = ok(
        &tools,
        "set_room_temperature",
        json!({"room": "Büro", "temperature": 22.5}),
    );
    assert_batch(&data);
    assert_eq!(data["target"], "Büro");
    assert_eq!(data["action"], "temperature");
    assert_eq!(data["value"], 22.5);
    assert_eq!(data["results"][0]["device"]["type"], "IRoomController");
    assert_eq!(commands(&data, 0), ["settemp/1/22.5"]);
    assert_eq!(sim.state(&office, "temperatures[1]"), Some(22.5));
    assert_eq!(sim.state(&office, "tempTarget"), Some(22.5));
    let bath = controller(&app, "Bad");
    let before = sim.state(&bath, "comfortTemperature");
    let data = ok(
        &tools,
        "set_room_temperature",
        json!({"room": "Bad", "temperature": 24, "dry_run": true}),
    );
    assert_batch(&data);
    assert_eq!(data["summary"]["planned"], 1);
    assert_eq!(commands(&data, 0), ["setComfortTemperature/24"]);
    assert_eq!(sim.state(&bath, "comfortTemperature"), before, "not sent");
    ok(
        &tools,
        "set_room_temperature",
        json!({"room": "Bad", "temperature": 24}),
    );
    assert_eq!(sim.state(&bath, "comfortTemperature"), Some(24.0));
}

// ---------------------------------------------------------------------------------------------
// The Miniserver out of reach.

#[test]
fn miniserver_down_gives_connection_error() {
    let tools = support::unreachable::unreachable_demo();
    let e = tool_error(
        &tools,
        "set_room_mode",
        json!({"room": "Wohnzimmer", "mode": "eco"}),
    );
    assert_eq!(e["code"], "CONNECTION_ERROR");
    assert!(
        e["message"].as_str().unwrap().contains("cannot reach"),
        "{e}"
    );
    let e = tool_error(
        &tools,
        "set_room_temperature",
        json!({"room": "Wohnzimmer", "temperature": 21}),
    );
    assert_eq!(e["code"], "CONNECTION_ERROR");
    // A dry run sends nothing, so it still answers.
    let data = ok(
        &tools,
        "set_room_mode",
        json!({"room": "Wohnzimmer", "mode": "heating", "dry_run": true}),
    );
    assert_eq!(data["summary"]["planned"], 1);
    let e = tool_error(&tools, "get_zone_temperature", json!({"zone_id": "Küche"}));
    assert_eq!(e["code"], "CONNECTION_ERROR");
    // The status list still answers from the structure and says why values are missing.
    let data = ok(&tools, "get_climate_status", json!({}));
    assert!(data["warning"].as_str().unwrap().contains("unavailable"));
    assert!(data["zones"][0]["temperature"].is_null());
}

// ---------------------------------------------------------------------------------------------
// Every fixture structure file with room controllers.

/// (controller UUID, room UUID) of every control of `kind` in the fixture.
fn of_kind(f: &SimHouse, kind: &str) -> Vec<(String, String)> {
    f.house
        .home()
        .controls
        .iter()
        .filter(|c| c.kind.as_str() == kind)
        .map(|c| {
            (
                c.uuid.clone(),
                c.room.clone().expect("controller has a room"),
            )
        })
        .collect()
}

const V1_FIXTURES: [&str; 2] = [
    "Smarteon-loxone-java-showroom.json",
    "SolarNetwork-solarnetwork-loxone-evident-test.json",
];
const V2_FIXTURES: [&str; 1] = ["TheJack75-Loxone.NET-uk-demo-miniserver.json"];

#[test]
fn fixtures_v1_room_controllers() {
    for file in V1_FIXTURES {
        let f = support::fixture_house(file);
        let list = of_kind(&f, "IRoomController");
        assert!(!list.is_empty(), "{file}");
        for (irc, room) in list {
            set_mode(&f.tools, &room, json!({"mode": "cooling"}));
            assert_eq!(f.sim.state(&irc, "mode"), Some(4.0), "{file}");
            set_mode(
                &f.tools,
                &room,
                json!({"mode": "comfort", "duration_minutes": 15}),
            );
            assert_eq!(f.sim.state(&irc, "overrideTotal"), Some(900.0), "{file}");
            set_mode(&f.tools, &room, json!({"mode": "auto"}));
            assert_eq!(f.sim.state(&irc, "mode"), Some(0.0), "{file}");
            assert_eq!(f.sim.state(&irc, "override"), Some(0.0), "{file}");
            ok(
                &f.tools,
                "set_room_temperature",
                json!({"room": room, "temperature": 21}),
            );
            assert_eq!(f.sim.state(&irc, "temperatures[1]"), Some(21.0), "{file}");
            let data = ok(&f.tools, "get_zone_temperature", json!({"zone_id": irc}));
            assert_eq!(data["controllers"][0]["type"], "IRoomController");
            assert!(data["temperature"].is_number(), "{file}: {data}");
        }
        let status = ok(&f.tools, "get_climate_status", json!({}));
        assert!(status["total"].as_u64().unwrap() >= 1, "{file}");
    }
}

#[test]
fn fixtures_v2_room_controllers() {
    for file in V2_FIXTURES {
        let f = support::fixture_house(file);
        let list = of_kind(&f, "IRoomControllerV2");
        assert_eq!(list.len(), 9, "{file}");
        for (irc, room) in list {
            set_mode(&f.tools, &room, json!({"mode": "heating"}));
            assert_eq!(f.sim.state(&irc, "operatingMode"), Some(1.0), "{file}");
            set_mode(
                &f.tools,
                &room,
                json!({"mode": "eco", "duration_minutes": 120}),
            );
            assert_eq!(f.sim.state(&irc, "activeMode"), Some(0.0), "{file}");
            set_mode(&f.tools, &room, json!({"mode": "off"}));
            assert_eq!(f.sim.state(&irc, "activeMode"), Some(2.0), "{file}");
            set_mode(&f.tools, &room, json!({"mode": "auto"}));
            assert_eq!(f.sim.state(&irc, "operatingMode"), Some(0.0), "{file}");
            assert_eq!(
                f.sim.state_text(&irc, "overrideEntries").as_deref(),
                Some("[]")
            );
            ok(
                &f.tools,
                "set_room_temperature",
                json!({"room": room, "temperature": 20.5}),
            );
            assert_eq!(f.sim.state(&irc, "comfortTemperature"), Some(20.5));
            let data = ok(&f.tools, "get_zone_temperature", json!({"zone_id": room}));
            assert_eq!(data["controllers"][0]["uuid"], irc.as_str());
        }
        let status = ok(&f.tools, "get_climate_status", json!({}));
        assert_eq!(status["total"], 9);
        assert_eq!(
            status["climate_controllers"][0]["name"],
            "Climate Controller"
        );
    }
}

//! Every command mapping, against the simulator running each real structure file in
//! `tests/fixtures/` that has the control type: the server starts on the simulated Miniserver
//! exactly as on a real one (api info, structure file over HTTP), `control_device` sends the
//! command through the Loxone client, and the simulator's state shows the effect.

use crate::support;

use std::collections::BTreeSet;

use home_mcp::home::{Control, ControlKind, Home};
use serde_json::{json, Value};
use support::fixture_app::{fixture_app, FixtureApp, FIXTURES};
use support::{call, fixture_text, text, wait_until, PATIENCE};

type Fixture = FixtureApp;

fn start(name: &'static str) -> Fixture {
    fixture_app(name, None)
}

/// The fixture's structure file as JSON.
fn structure(name: &str) -> Value {
    serde_json::from_str(&fixture_text(name)).unwrap()
}

/// Like [`start`], the simulator starting from `values` (`{uuid: {state: value}}`).
fn start_with(name: &'static str, values: Option<&Value>) -> Fixture {
    fixture_app(name, values.map(Value::to_string).as_deref())
}

/// Every control and sub-control of `kind`, at most `max` of them.
fn controls_of(home: &Home, kind: &ControlKind, max: usize) -> Vec<Control> {
    fn walk(list: &[Control], kind: &ControlKind, out: &mut Vec<Control>) {
        for c in list {
            if &c.kind == kind {
                out.push(c.clone());
            }
            walk(&c.sub_controls, kind, out);
        }
    }
    let mut out = Vec::new();
    walk(&home.controls, kind, &mut out);
    out.truncate(max);
    out
}

/// Calls `control_device` on `c`; returns the envelope's data, or panics with the error.
fn control(f: &Fixture, c: &Control, args: Value) -> Value {
    let mut a = args;
    a["device"] = json!(c.uuid);
    let r = call(&f.tools, "control_device", a.clone()).unwrap_or_else(|e| {
        panic!("{}: {} {a}: {e:?}", f.name, c.name);
    });
    let t = text(&r);
    assert!(!r.is_error, "{}: {} ({}) {a}: {t}", f.name, c.name, c.kind);
    t["data"].clone()
}

/// One mapping check: for every control of `kind` in every fixture that has it, run `check`.
/// Returns the fixtures that had the type, so a test can assert its coverage.
fn each(kind: ControlKind, check: impl Fn(&Fixture, &Control)) -> BTreeSet<&'static str> {
    let mut seen = BTreeSet::new();
    for name in FIXTURES {
        let f = start(name);
        let home = f.app.house.home();
        for c in controls_of(&home, &kind, 4) {
            if c.is_secured || home.guards_access(&c) {
                continue;
            }
            check(&f, &c);
            seen.insert(*name);
        }
    }
    seen
}

fn num(f: &Fixture, c: &Control, state: &str) -> f64 {
    f.sim
        .state(&c.uuid, state)
        .unwrap_or_else(|| panic!("{}: {} has no state {state}", f.name, c.name))
}

fn txt(f: &Fixture, c: &Control, state: &str) -> String {
    f.sim
        .state_text(&c.uuid, state)
        .unwrap_or_else(|| panic!("{}: {} has no text state {state}", f.name, c.name))
}

#[test]
fn switch_on_off() {
    let seen = each(ControlKind::Switch, |f, c| {
        control(f, c, json!({"action": "on"}));
        assert_eq!(num(f, c, "active"), 1.0, "{}", c.name);
        control(f, c, json!({"action": "aus"}));
        assert_eq!(num(f, c, "active"), 0.0, "{}", c.name);
    });
    assert_eq!(seen.len(), 2, "{seen:?}");
}

#[test]
fn pushbutton_pulse() {
    let seen = each(ControlKind::Pushbutton, |f, c| {
        let d = control(f, c, json!({"action": "pulse"}));
        assert_eq!(d["command"], "pulse");
        assert_eq!(d["reported_value"], 1.0, "the pulse answer");
        assert_eq!(
            num(f, c, "active"),
            0.0,
            "a pulse leaves the button released"
        );
    });
    assert!(seen.len() >= 3, "{seen:?}");
}

#[test]
fn dimmer_levels() {
    let seen = each(ControlKind::Dimmer, |f, c| {
        control(f, c, json!({"action": "on", "value": 40}));
        assert_eq!(num(f, c, "position"), 40.0);
        control(f, c, json!({"action": "off"}));
        assert_eq!(num(f, c, "position"), 0.0);
        control(f, c, json!({"action": "on"}));
        assert_eq!(num(f, c, "position"), 40.0, "on restores the last level");
    });
    assert_eq!(seen.len(), 2, "{seen:?}");
}

#[test]
fn light_controller_v1_scenes() {
    let seen = each(ControlKind::LightController, |f, c| {
        control(f, c, json!({"action": "scene", "scene": 3}));
        assert_eq!(num(f, c, "activeScene"), 3.0);
        control(f, c, json!({"action": "off"}));
        assert_eq!(num(f, c, "activeScene"), 0.0);
        control(f, c, json!({"action": "on"}));
        assert_eq!(num(f, c, "activeScene"), 9.0, "on = scene 9 (all on)");
    });
    assert_eq!(seen.len(), 1, "{seen:?}");
}

#[test]
fn light_controller_v2_moods_and_brightness() {
    let seen = each(ControlKind::LightControllerV2, |f, c| {
        control(f, c, json!({"action": "on"}));
        assert_eq!(txt(f, c, "activeMoods"), "[777]");
        control(f, c, json!({"action": "off"}));
        assert_eq!(txt(f, c, "activeMoods"), "[778]");
        // Master brightness only where the structure file lists a masterValue sub-control;
        // otherwise a clear error that names the circuits to dim instead.
        match c
            .sub_controls
            .iter()
            .find(|s| s.uuid.ends_with("/masterValue"))
        {
            Some(master) => {
                let d = control(f, c, json!({"action": "dim", "value": 35}));
                assert_eq!(d["command"], "35");
                assert_eq!(num(f, master, "position"), 35.0, "{}", c.name);
            }
            None => {
                let r = call(
                    &f.tools,
                    "control_device",
                    json!({"device": c.uuid, "action": "dim", "value": 35}),
                )
                .unwrap();
                let e = &text(&r)["error"];
                assert_eq!(e["code"], "INVALID_PARAMETERS", "{e}");
                let m = e["message"].as_str().unwrap();
                assert!(m.contains("no master brightness"), "{m}");
                for s in &c.sub_controls {
                    assert!(m.contains(&s.name), "{m}");
                }
            }
        }
    });
    assert_eq!(seen.len(), 1, "{seen:?}");
}

#[test]
fn color_picker_v2_colours() {
    let seen = each(ControlKind::ColorPickerV2, |f, c| {
        control(
            f,
            c,
            json!({"action": "color", "hue": 120, "saturation": 50, "value": 80}),
        );
        assert_eq!(txt(f, c, "color"), "hsv(120,50,80)");
        control(
            f,
            c,
            json!({"action": "white", "kelvin": 3000, "value": 60}),
        );
        assert_eq!(txt(f, c, "color"), "temp(60,3000)");
        control(f, c, json!({"action": "off"}));
        assert_eq!(txt(f, c, "color"), "temp(0,3000)");
    });
    assert_eq!(seen.len(), 1, "{seen:?}");
}

#[test]
fn central_light_controller_all_off() {
    // Lights of the central blocks whose state was checked after "all off".
    let checked = std::cell::Cell::new(0);
    let seen = each(ControlKind::CentralLightController, |f, c| {
        control(f, c, json!({"action": "off"}));
        let home = f.app.house.home();
        let children = c.details["controls"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for child in children {
            let uuid = child["uuid"].as_str().unwrap_or_default();
            let Some(ch) = home.control(uuid) else {
                continue;
            };
            match ch.kind {
                ControlKind::LightControllerV2 => {
                    assert_eq!(txt(f, ch, "activeMoods"), "[778]", "{}", ch.name)
                }
                ControlKind::LightController => assert_eq!(num(f, ch, "activeScene"), 0.0),
                ControlKind::Switch => assert_eq!(num(f, ch, "active"), 0.0),
                ControlKind::Dimmer => assert_eq!(num(f, ch, "position"), 0.0),
                _ => continue,
            }
            checked.set(checked.get() + 1);
        }
        let r = call(
            &f.tools,
            "control_device",
            json!({"device": c.uuid, "action": "on"}),
        )
        .unwrap();
        assert!(r.is_error, "the central block only switches off");
    });
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert!(
        checked.get() > 0,
        "no central block lists a light it switched off"
    );
}

#[test]
fn jalousie_positions() {
    let seen = each(ControlKind::Jalousie, |f, c| {
        control(f, c, json!({"action": "down"}));
        assert_eq!(num(f, c, "targetPosition"), 1.0);
        assert_eq!(num(f, c, "down"), 1.0, "moving down");
        control(f, c, json!({"action": "stop"}));
        assert_eq!(num(f, c, "down"), 0.0);
        control(f, c, json!({"action": "down", "value": 30}));
        assert!((num(f, c, "targetPosition") - 0.3).abs() < 1e-9);
        control(f, c, json!({"action": "up"}));
        assert_eq!(num(f, c, "targetPosition"), 0.0);
    });
    assert_eq!(seen.len(), 2, "{seen:?}");
}

#[test]
fn central_jalousie_moves_its_blinds() {
    // Blinds of the central blocks whose target was checked.
    let checked = std::cell::Cell::new(0);
    let seen = each(ControlKind::CentralJalousie, |f, c| {
        control(f, c, json!({"action": "down"}));
        let home = f.app.house.home();
        for child in c.details["controls"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            let uuid = child["uuid"].as_str().unwrap_or_default();
            if let Some(ch) = home.control(uuid) {
                if ch.kind == ControlKind::Jalousie {
                    assert_eq!(num(f, ch, "targetPosition"), 1.0, "{}", ch.name);
                    checked.set(checked.get() + 1);
                }
            }
        }
        control(f, c, json!({"action": "stop"}));
    });
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(checked.get() > 0, "no central block lists a blind it moved");
}

#[test]
fn up_down_digital_pulses() {
    let seen = each(ControlKind::UpDownDigital, |f, c| {
        let d = control(f, c, json!({"action": "up"}));
        assert_eq!(d["command"], "PulseUp");
        assert_eq!(d["reported_value"], 1.0);
        let d = control(f, c, json!({"action": "runter"}));
        assert_eq!(d["command"], "PulseDown");
    });
    assert_eq!(seen.len(), 1, "{seen:?}");
}

/// A value inside the control's own range: the middle of details.min..max (or 0..100).
fn middle(c: &Control) -> f64 {
    let min = c.details.get("min").and_then(Value::as_f64).unwrap_or(0.0);
    let max = c
        .details
        .get("max")
        .and_then(Value::as_f64)
        .unwrap_or(100.0);
    ((min + max) / 2.0).round()
}

#[test]
fn sliders_and_value_selectors() {
    let mut seen = each(ControlKind::Slider, |f, c| {
        let v = middle(c);
        control(f, c, json!({"action": "set", "number": v}));
        assert_eq!(num(f, c, "value"), v, "{}", c.name);
    });
    seen.extend(each(ControlKind::ValueSelector, |f, c| {
        let v = middle(c);
        control(f, c, json!({"action": "set", "number": v}));
        assert_eq!(num(f, c, "value"), v, "{}", c.name);
    }));
    assert_eq!(seen.len(), 2, "{seen:?}");
}

#[test]
fn radio_outputs() {
    let seen = each(ControlKind::Radio, |f, c| {
        let first = c.details["outputs"]
            .as_object()
            .and_then(|o| o.keys().filter_map(|k| k.parse::<u32>().ok()).min());
        if let Some(id) = first {
            control(f, c, json!({"action": "select", "number": id}));
            assert_eq!(num(f, c, "activeOutput"), id as f64, "{}", c.name);
        }
        control(f, c, json!({"action": "off"}));
        assert_eq!(num(f, c, "activeOutput"), 0.0);
    });
    assert_eq!(seen.len(), 1, "{seen:?}");
}

#[test]
fn text_inputs() {
    let seen = each(ControlKind::TextInput, |f, c| {
        control(
            f,
            c,
            json!({"action": "text", "text": "Grüße aus dem Test"}),
        );
        assert_eq!(txt(f, c, "text"), "Grüße aus dem Test");
    });
    assert_eq!(seen.len(), 1, "{seen:?}");
}

#[test]
fn read_only_types_take_no_commands() {
    for kind in [
        ControlKind::InfoOnlyAnalog,
        ControlKind::InfoOnlyDigital,
        ControlKind::PresenceDetector,
        ControlKind::WindowMonitor,
    ] {
        let mut tried = 0;
        for name in FIXTURES {
            let f = start(name);
            let home = f.app.house.home();
            for c in controls_of(&home, &kind, 2) {
                let r = call(
                    &f.tools,
                    "control_device",
                    json!({"device": c.uuid, "action": "on"}),
                )
                .unwrap();
                assert!(r.is_error, "{}: {} took a command", f.name, c.name);
                assert!(text(&r)["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("read-only"));
                tried += 1;
            }
        }
        assert!(tried > 0, "no fixture has a {kind}");
    }
}

/// Calls a tool that must succeed; returns the envelope's data.
fn tool(f: &Fixture, name: &str, args: Value) -> Value {
    let r = call(&f.tools, name, args.clone())
        .unwrap_or_else(|e| panic!("{}: {name} {args}: {e:?}", f.name));
    let t = text(&r);
    assert!(!r.is_error, "{}: {name} {args}: {t}", f.name);
    t["data"].clone()
}

#[test]
fn climate_controller_modes_via_its_room() {
    let seen = each(ControlKind::ClimateController, |f, c| {
        let home = f.app.house.home();
        let room = home
            .room_name(c)
            .expect("the climate controller has a room");
        for (mode, auto_mode) in [
            ("heating", 1.0),
            ("cooling", 2.0),
            ("off", -1.0),
            ("auto", 0.0),
        ] {
            let d = tool(f, "set_room_mode", json!({"room": room, "mode": mode}));
            assert_eq!(d["target"], room);
            let r = d["results"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["device"]["uuid"] == c.uuid.as_str())
                .unwrap_or_else(|| panic!("{}: {} not in {d}", f.name, c.name))
                .clone();
            assert_eq!(r["status"], "ok", "{r}");
            assert_eq!(
                r["commands"],
                json!([format!("{}/autoMode/{auto_mode}", c.uuid)])
            );
            assert_eq!(num(f, c, "autoMode"), auto_mode, "{}: {mode}", f.name);
        }
        // Comfort is for room controllers: refused when the room has none, else the climate
        // controller's own item fails.
        let r = call(
            &f.tools,
            "set_room_mode",
            json!({"room": room, "mode": "comfort"}),
        )
        .unwrap();
        let t = text(&r);
        if r.is_error {
            assert_eq!(t["error"]["code"], "INVALID_PARAMETERS", "{t}");
        } else {
            let item = t["data"]["results"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["device"]["uuid"] == c.uuid.as_str())
                .unwrap()
                .clone();
            assert_eq!(item["error"]["code"], "INVALID_PARAMETERS", "{item}");
        }
        assert_eq!(num(f, c, "autoMode"), 0.0, "comfort left it alone");
    });
    assert_eq!(
        seen,
        BTreeSet::from(["TheJack75-Loxone.NET-uk-demo-miniserver.json"])
    );
}

#[test]
fn smoke_alarm_acknowledge() {
    let mut seen = BTreeSet::new();
    for name in FIXTURES {
        // Every smoke alarm of the file starts in the main alarm, sounding (and, to see every
        // state reset, with a test alarm running).
        let doc = structure(name);
        let smoke = support::house::uuids_of_type(&doc, "SmokeAlarm");
        if smoke.is_empty() {
            continue;
        }
        let values: serde_json::Map<String, Value> = smoke
            .iter()
            .map(|u| {
                let v = json!({"level": 2, "nextLevel": 2, "acousticAlarm": 1, "testAlarm": 1});
                (u.clone(), v)
            })
            .collect();
        let f = start_with(name, Some(&Value::Object(values)));
        let home = f.app.house.home();
        for uuid in &smoke {
            let c = home.control(uuid).expect("smoke alarm in the model");
            assert!(!c.is_secured, "{}: {}", f.name, c.name);
            assert_eq!(num(&f, c, "level"), 2.0);
            // The security status of this alarm once it shows `level` (a named state that
            // arrives over the live link, after the app has started).
            let entry_at = |level: f64| {
                wait_until(&format!("{}: level {level}", c.name), PATIENCE, || {
                    let status = tool(&f, "get_security_status", json!({}));
                    let entry = status["smoke_alarms"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|s| s["uuid"] == c.uuid.as_str())
                        .unwrap_or_else(|| panic!("{}: {} not listed", f.name, c.name))
                        .clone();
                    if entry["level"] == level {
                        Ok(entry)
                    } else {
                        Err(entry)
                    }
                })
            };
            assert_eq!(entry_at(2.0)["alarm"], true, "{}", f.name);

            // By name (unique in these files), as a user says it.
            let d = tool(
                &f,
                "acknowledge_alarm",
                json!({"confirm": true, "alarm": c.name}),
            );
            assert_eq!(d["action"], "acknowledge");
            assert_eq!(d["alarm"]["uuid"], c.uuid.as_str(), "{}: {d}", f.name);
            assert_eq!(d["secured_command"], false);
            for s in ["level", "nextLevel", "acousticAlarm", "testAlarm"] {
                assert_eq!(num(&f, c, s), 0.0, "{}: {} {s}", f.name, c.name);
            }
            assert_eq!(entry_at(0.0)["alarm"], false, "{}", f.name);
            // By UUID, on an alarm already quiet: still sent, states stay 0.
            let d = tool(
                &f,
                "acknowledge_alarm",
                json!({"confirm": true, "alarm": c.uuid}),
            );
            assert_eq!(d["alarm"]["name"], c.name.as_str());
            assert_eq!(num(&f, c, "level"), 0.0);
            seen.insert(*name);
        }
    }
    assert_eq!(
        seen,
        BTreeSet::from([
            "Smarteon-loxone-java-showroom.json",
            "TheJack75-Loxone.NET-uk-demo-miniserver.json"
        ])
    );
}

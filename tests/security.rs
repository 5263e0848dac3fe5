//! The security tools end to end: secured arm/disarm/acknowledge through the real Loxone client
//! (getvisusalt + `jdev/sps/ios/{hash}/...`) against the simulator, which checks the hash with
//! its own implementation; the demo house and every fixture with an Alarm; wrong, missing and
//! configured PINs; unsecured alarms; the PIN never in logs or errors; the simulator refusing
//! plain commands to secured controls; `get_security_status`. No tool takes the PIN as an
//! argument (issue 20): here it is configured on the server (several houses with different
//! configured PINs share one simulator where a test needs a right and a wrong one); the page a
//! person types it on is tested in `human.rs`.

use crate::support;
use support::*;

use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};

use home_mcp::app::App;
use home_mcp::config::{Config, MiniserverConfig, Timeouts};
use home_mcp::home::{House, Secret};
use home_mcp::loxone::client::Client;
use home_mcp::loxone::secured::{visu_hash, HashAlg, KeySalt};
use home_mcp::loxone::structure::parse_structure;
use home_mcp::mcp::Handler;
use home_mcp::sim::{
    SimConfig, SimServer, Simulator, VisuHash, DEMO_PASSWORD, DEMO_STRUCTURE, DEMO_USER,
    DEMO_VALUES, DEMO_VISU_PASSWORD,
};
use home_mcp::tools::HomeTools;

const ALARM: &str = "1d5c3c5b-0225-5e8d-ffff504f94d0e5a1";
const GARAGE_ALARM: &str = "1d5c3c68-0226-5ee8-ffff504f94d0e5a1";
const CENTRAL: &str = "1d5c3c75-0227-5f43-ffff504f94d0e5a1";
const SMOKE: &str = "1d5c3bdf-021d-5b29-ffff504f94d0e5a1";

/// Every log line of this test binary, to prove the PIN never reaches a log.
static LOG: OnceLock<Mutex<Vec<String>>> = OnceLock::new();

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, r: &log::Record) {
        let line = format!("{} {}", r.target(), r.args());
        LOG.get_or_init(Default::default).lock().unwrap().push(line);
    }
    fn flush(&self) {}
}

fn capture_logs() {
    LOG.get_or_init(Default::default);
    if log::set_boxed_logger(Box::new(Capture)).is_ok() {
        log::set_max_level(log::LevelFilter::Trace);
    }
}

fn logs() -> Vec<String> {
    LOG.get_or_init(Default::default).lock().unwrap().clone()
}

/// A house on `structure` served by its own simulator (`config`), with an optional configured
/// visualisation password.
struct Rig {
    sim: Arc<Simulator>,
    server: SimServer,
    structure: String,
    tools: HomeTools,
}

impl Rig {
    /// Another server (house and tools) on the same simulator, with `visu` configured.
    fn configured(&self, visu: Option<&str>) -> HomeTools {
        tools_on(&self.server, &self.structure, visu)
    }
}

fn tools_on(server: &SimServer, structure: &str, visu: Option<&str>) -> HomeTools {
    let ms = MiniserverConfig {
        base_url: server.base_url(),
        user: DEMO_USER.into(),
        password: DEMO_PASSWORD.into(),
    };
    let client = Client::new(&ms, &Timeouts::default());
    let home = parse_structure(structure).expect("structure");
    let house = House::new(home, Arc::new(client), Duration::ZERO)
        .with_visu_password(visu.map(Secret::new));
    HomeTools::new(Arc::new(house))
}

fn rig(structure: &str, values: Option<&str>, config: SimConfig, visu: Option<&str>) -> Rig {
    let sim = Arc::new(Simulator::new(structure, values, config).expect("simulator"));
    let server = SimServer::start(sim.clone(), "127.0.0.1:0").expect("server");
    let tools = tools_on(&server, structure, visu);
    Rig {
        sim,
        server,
        structure: structure.to_string(),
        tools,
    }
}

fn demo_rig(visu: Option<&str>) -> Rig {
    rig(
        DEMO_STRUCTURE,
        Some(DEMO_VALUES),
        SimConfig::default(),
        visu,
    )
}

/// The demo structure with `edit` applied.
fn demo_edited(edit: impl FnOnce(&mut Value)) -> String {
    let mut doc: Value = serde_json::from_str(DEMO_STRUCTURE).unwrap();
    edit(&mut doc);
    doc.to_string()
}

#[test]
fn visu_hash_matches_an_independent_vector() {
    // Computed with Python's hashlib/hmac: key text "1234567890abcdef" sent hex-encoded,
    // salt "73616c74", PIN "1234".
    let ks = KeySalt {
        key: "31323334353637383930616263646566".into(),
        salt: "73616c74".into(),
        alg: HashAlg::Sha256,
    };
    assert_eq!(
        visu_hash("1234", &ks),
        "f4ea92045180506d2b62446e57cbfbfb4c63aca257d833463874e7967b35f7ff"
    );
}

#[test]
fn getvisusalt_has_the_getkey2_shape() {
    let sim = Simulator::demo();
    let auth = format!(
        "Basic {}",
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "demo:demo")
    );
    let peer = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let r = sim.handle("GET", "/jdev/sys/getvisusalt/demo", Some(&auth), peer);
    assert_eq!(r.status, 200);
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["LL"]["code"], 200);
    assert_eq!(v["LL"]["value"]["hashAlg"], "SHA256");
    let ks = KeySalt::from_value(&v["LL"]["value"]).unwrap();
    // A second call gives a fresh key.
    let r2 = sim.handle("GET", "/jdev/sys/getvisusalt/demo", Some(&auth), peer);
    let v2: Value = serde_json::from_str(&r2.body).unwrap();
    assert_ne!(v["LL"]["value"]["key"], v2["LL"]["value"]["key"]);
    // Right hash: the command runs; the same hash again: the key is used up (500).
    let url = format!("/jdev/sps/ios/{}/{ALARM}/on/1", visu_hash("1234", &ks));
    let ok: Value = serde_json::from_str(&sim.handle("GET", &url, Some(&auth), peer).body).unwrap();
    assert_eq!(ok["LL"]["Code"], "200");
    assert_eq!(sim.state(ALARM, "armed"), Some(1.0));
    let again: Value =
        serde_json::from_str(&sim.handle("GET", &url, Some(&auth), peer).body).unwrap();
    assert_eq!(again["LL"]["Code"], "500");
    // Unknown user and no auth.
    let r = sim.handle("GET", "/jdev/sys/getvisusalt/nobody", Some(&auth), peer);
    assert_eq!(r.status, 404);
    let r = sim.handle("GET", "/jdev/sys/getvisusalt/demo", None, peer);
    assert_eq!(r.status, 401);
}

#[test]
fn simulator_refuses_plain_commands_to_secured_controls() {
    let sim = Simulator::demo();
    let auth = format!(
        "Basic {}",
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "demo:demo")
    );
    let peer = IpAddr::V4(Ipv4Addr::LOCALHOST);
    for (uuid, cmd) in [(ALARM, "on"), (ALARM, "delayedon/1"), (CENTRAL, "on")] {
        let r = sim.handle(
            "GET",
            &format!("/jdev/sps/io/{uuid}/{cmd}"),
            Some(&auth),
            peer,
        );
        let v: Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(v["LL"]["Code"], "403", "{cmd}: {}", r.body);
    }
    assert_eq!(sim.state(ALARM, "armed"), Some(0.0));
    assert_eq!(sim.state(ALARM, "armedDelay"), Some(0.0));
    // Reads stay allowed; unsecured controls take plain commands.
    let r = sim.handle("GET", &format!("/jdev/sps/io/{ALARM}"), Some(&auth), peer);
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["LL"]["Code"], "200");
    let r = sim.handle(
        "GET",
        &format!("/jdev/sps/io/{SMOKE}/confirm"),
        Some(&auth),
        peer,
    );
    assert!(r.body.contains("\"Code\": \"200\""), "{}", r.body);
}

#[test]
fn arm_and_disarm_the_central_alarm_with_the_pin() {
    let r = demo_rig(Some(DEMO_VISU_PASSWORD));
    // Default target: the central alarm (two alarms and one central alarm in the demo).
    let data = ok(&r.tools, "arm_alarm", json!({"confirm": true}));
    assert_eq!(data["alarm"]["uuid"], CENTRAL);
    assert_eq!(data["action"], "arm");
    assert_eq!(data["delayed"], true);
    assert_eq!(data["motion"], Value::Null);
    assert_eq!(data["secured_command"], true);
    // The house alarm counts down its exit delay; the garage alarm was armed already.
    assert!(r.sim.state(ALARM, "armedDelay").unwrap() > 0.0);
    assert_eq!(r.sim.state(ALARM, "armed"), Some(0.0));
    assert_eq!(r.sim.state(GARAGE_ALARM, "armed"), Some(1.0));
    let data = ok(&r.tools, "disarm_alarm", json!({"confirm": true}));
    assert_eq!(data["action"], "disarm");
    for a in [ALARM, GARAGE_ALARM] {
        assert_eq!(r.sim.state(a, "armedDelay"), Some(0.0));
        assert_eq!(r.sim.state(a, "armed"), Some(0.0));
    }
}

#[test]
fn arm_one_alarm_at_once_without_motion_then_disarm() {
    let r = demo_rig(Some(DEMO_VISU_PASSWORD));
    let data = ok(
        &r.tools,
        "arm_alarm",
        json!({"confirm": true, "alarm": "Alarmanlage Garage", "delayed": false, "motion": false}),
    );
    assert_eq!(data["alarm"]["uuid"], GARAGE_ALARM);
    assert_eq!(data["armed"], true);
    assert_eq!(data["motion"], false);
    assert_eq!(r.sim.state(GARAGE_ALARM, "armed"), Some(1.0));
    assert_eq!(r.sim.state(GARAGE_ALARM, "disabledMove"), Some(1.0));
    assert_eq!(r.sim.state(ALARM, "armed"), Some(0.0));
    // By room instead of name.
    let data = ok(
        &r.tools,
        "disarm_alarm",
        json!({"confirm": true, "room": "Garage"}),
    );
    assert_eq!(data["alarm"]["uuid"], GARAGE_ALARM);
    assert_eq!(data["armed"], false);
    assert_eq!(r.sim.state(GARAGE_ALARM, "armed"), Some(0.0));
}

#[test]
fn acknowledge_quits_alarms_and_confirms_smoke_alarms() {
    let values = {
        let mut v: Value = serde_json::from_str(DEMO_VALUES).unwrap();
        v[ALARM]["armed"] = 1.into();
        v[ALARM]["level"] = 3.into();
        v[SMOKE]["level"] = 2.into();
        v.to_string()
    };
    let r = rig(
        DEMO_STRUCTURE,
        Some(&values),
        SimConfig::default(),
        Some(DEMO_VISU_PASSWORD),
    );
    let data = ok(
        &r.tools,
        "acknowledge_alarm",
        json!({"confirm": true, "alarm": ALARM}),
    );
    assert_eq!(data["action"], "acknowledge");
    assert_eq!(r.sim.state(ALARM, "level"), Some(0.0));
    assert_eq!(r.sim.state(ALARM, "armed"), Some(1.0), "still armed");
    // The smoke alarm is not secured: no password needed.
    let data = ok(
        &r.tools,
        "acknowledge_alarm",
        json!({"confirm": true, "alarm": "Rauchmelder"}),
    );
    assert_eq!(data["secured_command"], false);
    assert_eq!(r.sim.state(SMOKE, "level"), Some(0.0));
}

#[test]
fn wrong_pin_is_refused_and_never_echoed() {
    capture_logs();
    let r = demo_rig(Some(DEMO_VISU_PASSWORD));
    ok(
        &r.tools,
        "arm_alarm",
        json!({"confirm": true, "alarm": ALARM, "delayed": false}),
    );
    // Distinctive: the captured log holds the lines of every test running in this binary, and
    // a plain number like 97531 turns up in their ids and hashes by chance.
    let pin = "wrong-pin-97531";
    let wrong = r.configured(Some(pin));
    let e = tool_error(
        &wrong,
        "disarm_alarm",
        json!({"confirm": true, "alarm": ALARM}),
    );
    assert_eq!(e["code"], "INVALID_PARAMETERS");
    let msg = e["message"].as_str().unwrap();
    assert!(msg.contains("wrong"), "{msg}");
    assert!(!e.to_string().contains(pin), "{e}");
    assert_eq!(r.sim.state(ALARM, "armed"), Some(1.0), "still armed");
    // A PIN passed as an argument (the model has none to pass) is refused without quoting it,
    // and nothing is sent.
    let before = r.sim.requests().len();
    for code in [json!(pin), json!({"pin": pin})] {
        let m = invalid_params(
            &r.tools,
            "disarm_alarm",
            json!({"confirm": true, "alarm": ALARM, "code": code}),
        );
        assert!(m.contains("`code`") && !m.contains(pin), "{m}");
    }
    assert_eq!(r.sim.requests().len(), before, "nothing sent");
    // The right one works; neither PIN ever reached a log line.
    ok(
        &r.tools,
        "disarm_alarm",
        json!({"confirm": true, "alarm": ALARM}),
    );
    assert_eq!(r.sim.state(ALARM, "armed"), Some(0.0));
    let lines = logs();
    assert!(
        lines.iter().any(|l| l.contains("write by")),
        "logs captured"
    );
    for l in &lines {
        assert!(!l.contains(pin), "PIN in log: {l}");
        assert!(
            !l.contains(":1234") && !l.contains("\"1234\""),
            "PIN in log: {l}"
        );
    }
}

#[test]
fn missing_pin_says_how_to_configure_it() {
    let r = demo_rig(None);
    let e = tool_error(
        &r.tools,
        "disarm_alarm",
        json!({"confirm": true, "alarm": ALARM}),
    );
    assert_eq!(e["code"], "INVALID_PARAMETERS");
    let msg = e["message"].as_str().unwrap();
    assert!(msg.contains("HOME_VISU_PASS"), "{msg}");
    assert!(
        !msg.contains("code"),
        "the model is not invited to ask for the password: {msg}"
    );
    let e = tool_error(&r.tools, "arm_alarm", json!({"confirm": true}));
    assert!(e["message"].as_str().unwrap().contains("visu_password"));
    assert_eq!(r.sim.state(ALARM, "armedDelay"), Some(0.0), "nothing sent");
}

#[test]
fn configured_pin_is_used_and_no_argument_overrides_it() {
    let r = demo_rig(Some(DEMO_VISU_PASSWORD));
    ok(
        &r.tools,
        "arm_alarm",
        json!({"confirm": true, "alarm": ALARM, "delayed": false}),
    );
    assert_eq!(r.sim.state(ALARM, "armed"), Some(1.0));
    let m = invalid_params(
        &r.tools,
        "disarm_alarm",
        json!({"confirm": true, "alarm": ALARM, "code": "1111"}),
    );
    assert!(m.contains("`code`") && !m.contains("1111"), "{m}");
    assert_eq!(r.sim.state(ALARM, "armed"), Some(1.0), "still armed");
    ok(
        &r.tools,
        "disarm_alarm",
        json!({"confirm": true, "alarm": ALARM}),
    );
    assert_eq!(r.sim.state(ALARM, "armed"), Some(0.0));

    // A wrongly configured PIN is reported as wrong.
    let r = demo_rig(Some("9999"));
    let e = tool_error(
        &r.tools,
        "disarm_alarm",
        json!({"confirm": true, "alarm": ALARM}),
    );
    assert!(e["message"].as_str().unwrap().contains("wrong"));
}

#[test]
fn config_pin_reaches_the_demo_app() {
    let config = Config {
        visu_password: Some(Secret::new(DEMO_VISU_PASSWORD)),
        ..Config::default()
    };
    let app = App::start(&config, true).expect("demo starts");
    let tools = HomeTools::new(app.house.clone());
    ok(
        &tools,
        "arm_alarm",
        json!({"confirm": true, "alarm": ALARM, "delayed": false}),
    );
    assert_eq!(sim(&app).state(ALARM, "armed"), Some(1.0));
    ok(
        &tools,
        "disarm_alarm",
        json!({"confirm": true, "alarm": ALARM}),
    );
    assert_eq!(sim(&app).state(ALARM, "armed"), Some(0.0));
}

#[test]
fn sha1_miniservers_work_too() {
    let config = SimConfig {
        visu_hash: VisuHash::Sha1,
        visu_password: "pässwörd€".into(),
        ..SimConfig::default()
    };
    let r = rig(DEMO_STRUCTURE, Some(DEMO_VALUES), config, Some("pässwörd€"));
    ok(
        &r.tools,
        "arm_alarm",
        json!({"confirm": true, "alarm": ALARM, "delayed": false}),
    );
    assert_eq!(r.sim.state(ALARM, "armed"), Some(1.0));
}

#[test]
fn unsecured_alarm_takes_plain_commands_without_a_pin() {
    let structure = demo_edited(|d| d["controls"][GARAGE_ALARM]["isSecured"] = false.into());
    let r = rig(&structure, Some(DEMO_VALUES), SimConfig::default(), None);
    let data = ok(
        &r.tools,
        "arm_alarm",
        json!({"confirm": true, "alarm": GARAGE_ALARM, "delayed": false}),
    );
    assert_eq!(data["secured_command"], false);
    assert_eq!(r.sim.state(GARAGE_ALARM, "armed"), Some(1.0));
    // No password configured, none needed.
    ok(
        &r.tools,
        "disarm_alarm",
        json!({"confirm": true, "alarm": GARAGE_ALARM}),
    );
    assert_eq!(r.sim.state(GARAGE_ALARM, "armed"), Some(0.0));
}

#[test]
fn several_alarms_without_a_central_alarm_are_ambiguous() {
    let structure = demo_edited(|d| {
        d["controls"].as_object_mut().unwrap().remove(CENTRAL);
    });
    let r = rig(&structure, Some(DEMO_VALUES), SimConfig::default(), None);
    let e = tool_error(&r.tools, "arm_alarm", json!({"confirm": true}));
    assert_eq!(e["code"], "INVALID_PARAMETERS");
    let msg = e["message"].as_str().unwrap();
    assert!(
        msg.contains("Alarmanlage") && msg.contains("Alarmanlage Garage"),
        "{msg}"
    );
    assert_eq!(e["details"]["candidates"].as_array().unwrap().len(), 2);
    // No alarm at all.
    let none = demo_edited(|d| {
        let c = d["controls"].as_object_mut().unwrap();
        for u in [CENTRAL, ALARM, GARAGE_ALARM] {
            c.remove(u);
        }
    });
    let r = rig(&none, None, SimConfig::default(), None);
    let e = tool_error(&r.tools, "disarm_alarm", json!({"confirm": true}));
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
}

#[test]
fn bad_arguments_are_invalid_params() {
    let r = demo_rig(None);
    let m = invalid_params(
        &r.tools,
        "arm_alarm",
        json!({"confirm": true, "delayed": "yes"}),
    );
    assert!(m.contains("must be of type"), "{m}");
    for field in ["pin", "code"] {
        let m = invalid_params(
            &r.tools,
            "arm_alarm",
            json!({"confirm": true, field: "1234"}),
        );
        assert!(
            m.contains(&format!("`{field}`")) && !m.contains("1234"),
            "{m}"
        );
    }
    let m = invalid_params(
        &r.tools,
        "arm_alarm",
        json!({"confirm": true, "alarm": "Alarm Zentral", "motion": false}),
    );
    assert!(m.contains("motion"), "{m}");
    let m = invalid_params(&r.tools, "get_security_status", json!({"limit": 0}));
    assert!(m.contains("limit"), "{m}");
    // A name that is not an alarm.
    let e = tool_error(
        &r.tools,
        "disarm_alarm",
        json!({"confirm": true, "alarm": "Garagentor"}),
    );
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
    assert_eq!(r.sim.state(ALARM, "armed"), Some(0.0));
}

/// Every structure file in tests/fixtures with an Alarm: secured arm and disarm through the
/// client against the simulator on that file, and a wrong PIN refused.
#[test]
fn secured_alarms_of_every_fixture() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    let mut tested = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let home = parse_structure(&text).unwrap();
        let alarms: Vec<_> = home
            .controls
            .iter()
            .filter(|c| c.kind == home_mcp::home::ControlKind::Alarm)
            .map(|c| (c.uuid.clone(), c.is_secured))
            .collect();
        if alarms.is_empty() {
            continue;
        }
        let r = rig(&text, None, SimConfig::default(), Some(DEMO_VISU_PASSWORD));
        let wrong = r.configured(Some("4321"));
        for (uuid, secured) in alarms {
            let file = path.display();
            let data = ok(
                &r.tools,
                "arm_alarm",
                json!({"confirm": true, "alarm": uuid, "delayed": false}),
            );
            assert_eq!(data["secured_command"], secured, "{file}");
            assert_eq!(r.sim.state(&uuid, "armed"), Some(1.0), "{file}");
            if secured {
                let e = tool_error(
                    &wrong,
                    "disarm_alarm",
                    json!({"confirm": true, "alarm": uuid}),
                );
                assert_eq!(e["code"], "INVALID_PARAMETERS", "{file}");
                assert_eq!(r.sim.state(&uuid, "armed"), Some(1.0), "{file}");
            }
            ok(
                &r.tools,
                "disarm_alarm",
                json!({"confirm": true, "alarm": uuid}),
            );
            assert_eq!(r.sim.state(&uuid, "armed"), Some(0.0), "{file}");
            tested += 1;
        }
    }
    assert!(tested >= 2, "fixtures with alarms: {tested}");
}

#[test]
fn security_status_reports_alarms_smoke_and_gates() {
    let r = demo_rig(None);
    ok(
        &r.configured(Some(DEMO_VISU_PASSWORD)),
        "arm_alarm",
        json!({"confirm": true, "alarm": GARAGE_ALARM, "delayed": false}),
    );
    let data = ok(&r.tools, "get_security_status", json!({}));
    let alarms = data["alarms"].as_array().unwrap();
    assert_eq!(alarms.len(), 3, "{data}");
    let by = |uuid: &str| alarms.iter().find(|a| a["uuid"] == uuid).unwrap().clone();
    assert_eq!(by(GARAGE_ALARM)["armed"], true);
    assert_eq!(by(ALARM)["armed"], false);
    assert_eq!(by(CENTRAL)["armed"], false, "not all alarms armed");
    assert_eq!(by(CENTRAL)["alarms"].as_array().unwrap().len(), 2);
    // Named states are not known over HTTP: null, not a guess.
    assert_eq!(by(ALARM)["level"], Value::Null);
    assert_eq!(data["any_armed"], true);
    assert_eq!(data["smoke_alarms"][0]["level"], 0.0);
    assert_eq!(data["smoke_alarms"][0]["alarm"], false);
    let gates: Vec<&Value> = data["access"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["type"] == "Gate")
        .collect();
    assert_eq!(gates.len(), 2);
    assert!(gates.iter().all(|g| g["open_percent"].is_number()));
    assert_eq!(data["visu_password_configured"], false);
    assert_eq!(data["truncated"], false);

    let data = ok(
        &r.tools,
        "get_security_status",
        json!({"room": "Garage", "limit": 1}),
    );
    assert_eq!(data["alarms"].as_array().unwrap().len(), 1);
    assert_eq!(data["alarms"][0]["uuid"], GARAGE_ALARM);
    let e = tool_error(
        &r.tools,
        "get_security_status",
        json!({"room": "Dachboden"}),
    );
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
}

#[test]
fn tools_are_listed_with_permissions_and_hints() {
    let r = demo_rig(None);
    let list = r.tools.list_tools();
    let get = |n: &str| list.iter().find(|t| t.name == n).unwrap();
    for n in ["arm_alarm", "disarm_alarm", "acknowledge_alarm"] {
        let t = get(n);
        assert!(t.description.contains("(permission: security)"), "{n}");
        assert!(!t.annotations.read_only_hint, "{n}");
        assert_eq!(t.input_schema["additionalProperties"], false);
        assert!(t.output_schema.is_some());
    }
    assert!(get("disarm_alarm").annotations.destructive_hint);
    assert!(!get("arm_alarm").annotations.destructive_hint);
    let s = get("get_security_status");
    assert!(s.annotations.read_only_hint);
    assert!(s.description.contains("(permission: read)"));
}

#[test]
fn control_device_still_refuses_secured_alarms() {
    let r = demo_rig(Some(DEMO_VISU_PASSWORD));
    let e = tool_error(
        &r.tools,
        "control_device",
        json!({"device": ALARM, "action": "on"}),
    );
    assert_eq!(e["code"], "INSUFFICIENT_PERMISSIONS");
    assert_eq!(r.sim.state(ALARM, "armed"), Some(0.0));
}

#[test]
fn repeated_wrong_pins_pause_secured_commands() {
    // The owner configured a wrong PIN (a person typing wrong ones on the page: human.rs).
    let r = demo_rig(Some("0000"));
    for _ in 0..home_mcp::home::pin::RUN {
        let e = tool_error(
            &r.tools,
            "arm_alarm",
            json!({"confirm": true, "alarm": ALARM}),
        );
        assert_eq!(e["code"], "INVALID_PARAMETERS");
    }
    // Now the PIN is not tried any more: nothing reaches the Miniserver.
    let secured = || crate::support::wire::secured_requests(&r.sim);
    let before = secured();
    let e = tool_error(
        &r.tools,
        "arm_alarm",
        json!({"confirm": true, "alarm": ALARM}),
    );
    assert_eq!(e["code"], "RATE_LIMIT_EXCEEDED");
    assert_eq!(secured(), before, "nothing sent");
    assert!(e["message"].as_str().unwrap().contains("pause"), "{e}");
    assert_eq!(r.sim.state(ALARM, "armedDelay"), Some(0.0));
    // Unsecured controls are not affected.
    ok(
        &r.tools,
        "acknowledge_alarm",
        json!({"confirm": true, "alarm": "Rauchmelder"}),
    );
}

#[test]
fn secret_never_prints() {
    let s = Secret::new("1234");
    assert_eq!(format!("{s:?}"), "***");
    assert_eq!(format!("{:?}", Some(&s)), "Some(***)");
    assert_eq!(s.expose(), "1234");
}

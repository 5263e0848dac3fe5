//! The Miniserver simulator against the protocol facts of loxone-protocol.md §2, §3.1, §5, §6
//! and the real answers in `shared/fixtures/loxapp3/captures/answers.json`.

use std::collections::{BTreeSet, HashMap};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::wait_true;

use base64::prelude::{Engine as _, BASE64_STANDARD};
use home_mcp::sim::{
    CodeKey, SimConfig, SimResponse, SimServer, Simulator, DEMO_STRUCTURE, DEMO_VALUES,
};
use serde_json::Value;

const PEER: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 168, 2, 240));
const HTML_401: &str = "<html><head><title>error</title></head><body><errorcode>401</errorcode> <errordetail>Unauthorized</errordetail></body></html>";

fn basic(user: &str, pass: &str) -> String {
    format!("Basic {}", BASE64_STANDARD.encode(format!("{user}:{pass}")))
}

fn demo() -> Simulator {
    Simulator::demo()
}

fn get(sim: &Simulator, url: &str) -> SimResponse {
    sim.handle("GET", url, Some(&basic("demo", "demo")), PEER)
}

/// `LL.value` of a 200 answer, as the string it is.
fn value(resp: &SimResponse) -> String {
    assert_eq!(resp.status, 200, "body: {}", resp.body);
    let v: Value = serde_json::from_str(&resp.body).expect("JSON body");
    v["LL"]["value"].as_str().expect("string value").to_string()
}

fn structure() -> Value {
    serde_json::from_str(DEMO_STRUCTURE).unwrap()
}

/// uuidAction of the control called `name` in room `room`.
fn uuid(name: &str, room: &str) -> String {
    let doc = structure();
    let room_uuid = doc["rooms"]
        .as_object()
        .unwrap()
        .values()
        .find(|r| r["name"] == room)
        .unwrap_or_else(|| panic!("room {room}"))["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    doc["controls"]
        .as_object()
        .unwrap()
        .values()
        .find(|c| c["name"] == name && c["room"] == room_uuid.as_str())
        .unwrap_or_else(|| panic!("control {name} in {room}"))["uuidAction"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn cfg_api_answers_without_auth() {
    let sim = demo();
    let r = sim.handle("GET", "/jdev/cfg/api", None, PEER);
    assert_eq!(r.status, 200);
    assert_eq!(
        r.body,
        "{\"LL\": { \"control\": \"dev/cfg/api\", \"value\": \"{'snr': '50:4F:94:D0:E5:A1', \
         'version':'14.5.12.7', 'hasEventSlots':true, 'isInTrust':false, 'local':true}\", \
         \"Code\": \"200\"}}"
    );
    let r = sim.handle("GET", "/jdev/cfg/apiKey", None, PEER);
    let v = value(&r);
    assert!(v.starts_with("{'snr': '50:4F:94:D0:E5:A1', 'version':'14.5.12.7', 'key':'"));
    assert!(v.contains("'httpsStatus':0") && v.contains("'local':true"));
    assert!(v.contains("'address':'192.168.178.77'"));
    // Single quotes: a client must swap them before parsing (§2.2).
    let parsed: Value = serde_json::from_str(&v.replace('\'', "\"")).unwrap();
    assert_eq!(parsed["version"], "14.5.12.7");
}

#[test]
fn unauthorized_without_or_with_wrong_credentials() {
    let sim = demo();
    for auth in [None, Some(basic("demo", "wrong")), Some("Bearer x".into())] {
        let r = sim.handle("GET", "/jdev/sps/LoxAPPversion3", auth.as_deref(), PEER);
        assert_eq!(r.status, 401);
        assert_eq!(r.content_type, "text/html");
        assert_eq!(r.body, HTML_401);
    }
}

#[test]
fn utf8_password_works_and_latin1_does_not() {
    let config = SimConfig {
        user: "jürgen".into(),
        password: "pässwörd€".into(),
        ..SimConfig::default()
    };
    let sim = Simulator::demo_with(config);
    let ok = sim.handle(
        "GET",
        "/jdev/sps/LoxAPPversion3",
        Some(&basic("jürgen", "pässwörd€")),
        PEER,
    );
    assert_eq!(ok.status, 200);
    // The same credentials in Windows-1252 (PyLoxone issue #448): refused.
    let mut latin = b"j\xfcrgen:p\xe4ssw\xf6rd\x80".to_vec();
    latin.shrink_to_fit();
    let header = format!("Basic {}", BASE64_STANDARD.encode(&latin));
    let r = sim.handle("GET", "/jdev/sps/LoxAPPversion3", Some(&header), PEER);
    assert_eq!(r.status, 401);
}

#[test]
fn lockout_after_failures_even_for_right_credentials() {
    let config = SimConfig {
        max_failed_logins: 3,
        lockout: Duration::from_secs(2),
        ..SimConfig::default()
    };
    let sim = Simulator::demo_with(config);
    let wrong = basic("demo", "nope");
    // A success resets the count.
    for _ in 0..2 {
        assert_eq!(
            sim.handle("GET", "/jdev/sps/io/Notiz", Some(&wrong), PEER)
                .status,
            401
        );
    }
    assert_eq!(get(&sim, "/jdev/sps/io/Notiz").status, 200);
    for _ in 0..3 {
        assert_eq!(
            sim.handle("GET", "/jdev/sps/io/Notiz", Some(&wrong), PEER)
                .status,
            401
        );
    }
    let r = get(&sim, "/jdev/sps/io/Notiz");
    assert_eq!(r.status, 403);
    assert_eq!(
        r.body,
        "<html><head><title>error</title></head><body><errorcode>403</errorcode> \
         <errordetail><errortext>Forbidden</errortext> <description>IP 192.168.2.240 \
         temporarily blocked, too many failed login attempts;</description> \
         <remaining>2</remaining></errordetail></body></html>"
    );
    // Other IPs are not affected; cfg/api stays open.
    let other = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 9));
    let r = sim.handle(
        "GET",
        "/jdev/sps/io/Notiz",
        Some(&basic("demo", "demo")),
        other,
    );
    assert_eq!(r.status, 200);
    assert_eq!(sim.handle("GET", "/jdev/cfg/api", None, PEER).status, 200);
    // After the lock-out the right credentials work again.
    wait_true("the lock-out to end", || {
        get(&sim, "/jdev/sps/io/Notiz").status == 200
    });
}

#[test]
fn structure_file_and_version() {
    let sim = demo();
    let r = get(&sim, "/data/LoxAPP3.json");
    assert_eq!(r.status, 200);
    assert_eq!(r.content_type, "application/json");
    assert_eq!(r.body, DEMO_STRUCTURE);
    let r = get(&sim, "/jdev/sps/LoxAPPversion3");
    assert_eq!(value(&r), structure()["lastModified"].as_str().unwrap());
    assert!(r.body.contains("\"control\": \"dev/sps/LoxAPPversion3\""));
}

/// The `snr` of `/jdev/cfg/api` of a simulator serving the demo house with `serial` as its
/// `msInfo.serialNr`, or why it does not start.
fn snr_with_serial(serial: &str) -> Result<String, String> {
    let mut doc = structure();
    doc["msInfo"]["serialNr"] = Value::from(serial);
    let sim =
        Simulator::new(&doc.to_string(), None, SimConfig::default()).map_err(|e| e.to_string())?;
    let r = sim.handle("GET", "/jdev/cfg/api", None, PEER);
    let v = value(&r);
    let snr = v
        .split("'snr': '")
        .nth(1)
        .and_then(|rest| rest.split('\'').next());
    Ok(snr.expect("an snr").to_string())
}

#[test]
fn serial_numbers_from_the_field_are_served() {
    // As loxone-protocol.md §2.2 has it: msInfo.serialNr without colons, `snr` with.
    assert_eq!(
        snr_with_serial("504F94D0E5A1").unwrap(),
        "50:4F:94:D0:E5:A1"
    );
    // Written as `snr` shows it, or with dashes: the same serial.
    assert_eq!(
        snr_with_serial("50:4F:94:D0:E5:A1").unwrap(),
        "50:4F:94:D0:E5:A1"
    );
    assert_eq!(
        snr_with_serial("50-4F-94-D0-E5-A1").unwrap(),
        "50:4F:94:D0:E5:A1"
    );
    // 14 characters: served as they are.
    assert_eq!(
        snr_with_serial("504F94D0E5A1B2").unwrap(),
        "50:4F:94:D0:E5:A1:B2"
    );
    // Nothing to serve, or a quote that would break the single-quoted answer.
    for bad in ["", "::", "504F'94D0E5A1"] {
        let e = snr_with_serial(bad).unwrap_err();
        assert!(e.contains("msInfo.serialNr"), "{bad:?}: {e}");
    }
}

#[test]
fn a_duplicate_uuid_action_keeps_the_first_control() {
    let light = uuid("Deckenlicht", "Küche");
    let mut doc = structure();
    // A later key with the light's uuidAction (in capitals) and a sub-control of its own.
    let mut copy = doc["controls"][&light].clone();
    copy["name"] = Value::from("Kopie");
    copy["uuidAction"] = Value::from(light.to_uppercase());
    copy["subControls"] = serde_json::json!({"zz-copy/AI1": {"name": "Spot", "type": "Switch"}});
    doc["controls"]["zz-copy"] = copy;
    let sim = Simulator::new(&doc.to_string(), None, SimConfig::default())
        .expect("a duplicate does not stop the simulator");
    // The first one answers under its UUID and name; the copy is not there at all.
    assert_eq!(value(&get(&sim, &format!("/jdev/sps/io/{light}/on"))), "1");
    assert_eq!(sim.state(&light, "active"), Some(1.0));
    assert_eq!(get(&sim, "/jdev/sps/io/Kopie").status, 404);
    assert_eq!(get(&sim, "/jdev/sps/io/zz-copy/AI1").status, 404);
    assert_eq!(sim.state("zz-copy/AI1", "active"), None);
}

#[test]
fn switch_on_off_reads_back() {
    let sim = demo();
    let u = uuid("Deckenlicht", "Küche");
    let r = get(&sim, &format!("/jdev/sps/io/{u}/off"));
    assert_eq!(
        r.body,
        format!("{{\"LL\": {{ \"control\": \"dev/sps/io/{u}/off\", \"value\": \"0\", \"Code\": \"200\"}}}}")
    );
    assert_eq!(sim.state(&u, "active"), Some(0.0));
    assert_eq!(value(&get(&sim, &format!("/jdev/sps/io/{u}/On"))), "1");
    assert_eq!(value(&get(&sim, &format!("/jdev/sps/io/{u}"))), "1");
    assert_eq!(value(&get(&sim, &format!("/jdev/sps/io/{u}/state"))), "1");
    assert_eq!(sim.state(&u, "active"), Some(1.0));
}

#[test]
fn dimmer_clamps_and_restores() {
    let sim = demo();
    let u = uuid("Nachtlicht", "Kinderzimmer"); // min 5, max 60
    assert_eq!(value(&get(&sim, &format!("/jdev/sps/io/{u}/80"))), "60.000");
    assert_eq!(value(&get(&sim, &format!("/jdev/sps/io/{u}/2"))), "5.000");
    assert_eq!(
        value(&get(&sim, &format!("/jdev/sps/io/{u}/33.5"))),
        "33.500"
    );
    assert_eq!(value(&get(&sim, &format!("/jdev/sps/io/{u}/off"))), "0.000");
    assert_eq!(value(&get(&sim, &format!("/jdev/sps/io/{u}/on"))), "33.500");
    assert_eq!(get(&sim, &format!("/jdev/sps/io/{u}/bright")).status, 404);
    assert_eq!(get(&sim, &format!("/jdev/sps/io/{u}/3x")).status, 400);
    assert_eq!(sim.state(&u, "position"), Some(33.5));
}

#[test]
fn light_controller_v2_moods_and_master_value() {
    let sim = demo();
    let u = uuid("Lichtsteuerung", "Wohnzimmer");
    assert_eq!(value(&get(&sim, &format!("/jdev/sps/io/{u}"))), "1.000");
    assert_eq!(
        value(&get(&sim, &format!("/jdev/sps/io/{u}/changeTo/2"))),
        "2.000"
    );
    assert_eq!(sim.state_text(&u, "activeMoods").as_deref(), Some("[2]"));
    get(&sim, &format!("/jdev/sps/io/{u}/addMood/3"));
    assert_eq!(sim.state_text(&u, "activeMoods").as_deref(), Some("[2,3]"));
    get(&sim, &format!("/jdev/sps/io/{u}/removeMood/2"));
    assert_eq!(sim.state_text(&u, "activeMoods").as_deref(), Some("[3]"));
    assert_eq!(
        value(&get(&sim, &format!("/jdev/sps/io/{u}/changeTo/778"))),
        "778.000"
    );
    assert_eq!(sim.state(&u, "activeMoodsNum"), Some(778.0));
    assert_eq!(
        get(&sim, &format!("/jdev/sps/io/{u}/changeTo/99")).status,
        400
    );
    assert_eq!(
        get(&sim, &format!("/jdev/sps/io/{u}/changeTo/x")).status,
        400
    );
    assert_eq!(
        value(&get(&sim, &format!("/jdev/sps/io/{u}/plus"))),
        "1.000"
    );

    let master = format!("{u}/masterValue");
    let r = get(&sim, &format!("/jdev/sps/io/{master}/55"));
    assert!(r
        .body
        .contains(&format!("\"control\": \"dev/sps/io/{master}/55\"")));
    assert_eq!(value(&r), "55.000");
    assert_eq!(sim.state(&master, "position"), Some(55.0));
    assert_eq!(
        value(&get(&sim, &format!("/jdev/sps/io/{master}"))),
        "55.000"
    );
    // Sub-control UUIDs match case-insensitively, the suffix too.
    let upper = format!("{}/MASTERVALUE/state", u.to_uppercase());
    assert_eq!(
        value(&get(&sim, &format!("/jdev/sps/io/{upper}"))),
        "55.000"
    );
    // Colour picker circuit.
    let picker = format!("{u}/AI3");
    assert_eq!(
        value(&get(&sim, &format!("/jdev/sps/io/{picker}/hsv(120,50,40)"))),
        "hsv(120,50,40)"
    );
    assert_eq!(
        value(&get(&sim, &format!("/jdev/sps/io/{picker}/temp(80,3000)"))),
        "temp(80,3000)"
    );
}

#[test]
fn jalousie_moves_over_time() {
    // A 10 min full travel for what is seen on the way (certainly still on its way, however
    // busy the machine), a 200 ms one for what is seen when it has arrived.
    let slow = || {
        Simulator::demo_with(SimConfig {
            blind_travel: Duration::from_secs(600),
            ..SimConfig::default()
        })
    };
    let sim = Simulator::demo_with(SimConfig {
        blind_travel: Duration::from_millis(200),
        ..SimConfig::default()
    });
    let u = uuid("Raffstore Süd", "Wohnzimmer");
    assert_eq!(sim.state(&u, "position"), Some(0.4));
    // Commands take percent, the state is 0..1.
    let moving = slow();
    get(&moving, &format!("/jdev/sps/io/{u}/manualPosition/100"));
    assert_eq!(moving.state(&u, "down"), Some(1.0));
    assert_eq!(moving.state(&u, "targetPosition"), Some(1.0));
    let p = moving.state(&u, "position").unwrap();
    assert!((0.4..1.0).contains(&p), "still moving: {p}");
    get(&sim, &format!("/jdev/sps/io/{u}/manualPosition/100"));
    assert_eq!(sim.state(&u, "targetPosition"), Some(1.0));
    wait_true("the blind down", || sim.state(&u, "position") == Some(1.0));
    assert_eq!(sim.state(&u, "down"), Some(0.0));
    assert_eq!(value(&get(&sim, &format!("/jdev/sps/io/{u}"))), "1.000");
    // FullUp then stop freezes part-way.
    let slow = slow();
    get(&slow, &format!("/jdev/sps/io/{u}/FullUp"));
    wait_true("the blind moving up", || {
        slow.state(&u, "position").unwrap() < 0.4
    });
    get(&slow, &format!("/jdev/sps/io/{u}/stop"));
    let frozen = slow.state(&u, "position").unwrap();
    assert!(frozen > 0.0 && frozen < 0.4, "frozen at {frozen}");
    // Real time must pass to show that it stays (it would move on at every tick).
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(slow.state(&u, "position"), Some(frozen));
    assert_eq!(slow.state(&u, "up"), Some(0.0));
    get(&sim, &format!("/jdev/sps/io/{u}/manualLamelle/25"));
    assert_eq!(sim.state(&u, "targetPositionLamelle"), Some(0.25));
    assert_eq!(
        get(&sim, &format!("/jdev/sps/io/{u}/manualPosition")).status,
        400
    );
    assert_eq!(
        get(&sim, &format!("/jdev/sps/io/{u}/manualPosition/abc")).status,
        400
    );
    // The central block moves every blind.
    let central = uuid("Beschattung Zentral", "Zentral");
    get(&sim, &format!("/jdev/sps/io/{central}/FullDown"));
    let kueche = uuid("Rollladen Küche", "Küche");
    let buero = uuid("Raffstore", "Büro");
    wait_true("every blind down", || {
        sim.state(&u, "position") == Some(1.0) && sim.state(&buero, "position") == Some(1.0)
    });
    assert_eq!(sim.state(&kueche, "position"), Some(1.0));
    // Gate: open moves up to 1 with active 1 while on its way.
    let gate = uuid("Garagentor", "Garage");
    get(&moving, &format!("/jdev/sps/io/{gate}/open"));
    assert_eq!(moving.state(&gate, "active"), Some(1.0));
    get(&sim, &format!("/jdev/sps/io/{gate}/open"));
    wait_true("the gate open", || {
        sim.state(&gate, "position") == Some(1.0)
    });
    assert_eq!(sim.state(&gate, "active"), Some(0.0));
}

/// The demo house with its secured controls unsecured, for plain `sps/io` commands (secured
/// commands are tested in tests/security.rs).
fn unsecured_structure() -> String {
    DEMO_STRUCTURE.replace("\"isSecured\": true", "\"isSecured\": false")
}

#[test]
fn alarm_arms_after_delay() {
    let sim = Simulator::new(
        &unsecured_structure(),
        Some(DEMO_VALUES),
        SimConfig::default(),
    )
    .unwrap();
    let u = uuid("Alarmanlage", "Zentral");
    // The demo's 30 s delay counts down from when the command was taken (after `sent`): the
    // delay left is at most 30 s and at least 30 s less the time since `sent` (load only
    // makes that time longer, so the bound only gets looser).
    let sent = Instant::now();
    assert_eq!(
        value(&get(&sim, &format!("/jdev/sps/io/{u}/delayedon/1"))),
        "0"
    );
    let delay = sim.state(&u, "armedDelay").unwrap();
    let since = sent.elapsed().as_secs_f64();
    assert!(
        delay >= 30.0 - since - 1e-6 && delay <= 30.0,
        "{delay} after {since} s"
    );
    assert_eq!(value(&get(&sim, &format!("/jdev/sps/io/{u}/off"))), "0");
    assert_eq!(sim.state(&u, "armedDelay"), Some(0.0));

    // Delays of 10 min, to see it counting (certainly not armed yet, however busy the
    // machine), and of 0.2 s, to watch it arm.
    let with_delay = |secs: f64| {
        let mut values: Value = serde_json::from_str(DEMO_VALUES).unwrap();
        values[&u]["armedDelayTotal"] = secs.into();
        Simulator::new(
            &unsecured_structure(),
            Some(&values.to_string()),
            SimConfig::default(),
        )
        .unwrap()
    };
    let counting = with_delay(600.0);
    get(&counting, &format!("/jdev/sps/io/{u}/delayedon/0"));
    assert_eq!(counting.state(&u, "armed"), Some(0.0));
    assert_eq!(counting.state(&u, "disabledMove"), Some(1.0));
    assert!(counting.state(&u, "armedDelay").unwrap() > 0.0);
    let sim = with_delay(0.2);
    get(&sim, &format!("/jdev/sps/io/{u}/delayedon/0"));
    wait_true("the alarm armed", || sim.state(&u, "armed") == Some(1.0));
    assert_eq!(sim.state(&u, "disabledMove"), Some(1.0));
    assert_eq!(value(&get(&sim, &format!("/jdev/sps/io/{u}"))), "1");
    // The central alarm disarms every alarm.
    let central = uuid("Alarm Zentral", "Zentral");
    get(&sim, &format!("/jdev/sps/io/{central}/off"));
    assert_eq!(sim.state(&u, "armed"), Some(0.0));
    assert_eq!(
        sim.state(&uuid("Alarmanlage Garage", "Garage"), "armed"),
        Some(0.0)
    );
}

#[test]
fn room_controller_v2_comfort_temperature_and_override() {
    let sim = demo();
    let wz = uuid("Raumregelung", "Wohnzimmer"); // comfort mode
    assert_eq!(value(&get(&sim, &format!("/jdev/sps/io/{wz}"))), "21.800");
    get(
        &sim,
        &format!("/jdev/sps/io/{wz}/setComfortTemperature/23.5"),
    );
    assert_eq!(sim.state(&wz, "comfortTemperature"), Some(23.5));
    assert_eq!(sim.state(&wz, "tempTarget"), Some(23.5));
    let sz = uuid("Raumregelung", "Schlafzimmer"); // eco mode, offset 3
    get(&sim, &format!("/jdev/sps/io/{sz}/setComfortTemperature/20"));
    assert_eq!(sim.state(&sz, "tempTarget"), Some(17.0));
    get(&sim, &format!("/jdev/sps/io/{sz}/override/1/3600"));
    assert_eq!(sim.state(&sz, "activeMode"), Some(1.0));
    assert_eq!(sim.state(&sz, "tempTarget"), Some(20.0));
    assert!(sim
        .state_text(&sz, "overrideEntries")
        .unwrap()
        .contains("\"reason\":1"));
    get(&sim, &format!("/jdev/sps/io/{sz}/stopOverride"));
    assert_eq!(sim.state(&sz, "tempTarget"), Some(17.0));
    get(&sim, &format!("/jdev/sps/io/{sz}/setManualTemperature/22"));
    get(&sim, &format!("/jdev/sps/io/{sz}/setOperatingMode/4"));
    assert_eq!(sim.state(&sz, "tempTarget"), Some(22.0));
    assert_eq!(
        get(&sim, &format!("/jdev/sps/io/{sz}/setOperatingMode/9")).status,
        400
    );
    // v1 controller: settemp of the active index moves the target.
    let v1 = uuid("Raumregelung", "Büro");
    get(&sim, &format!("/jdev/sps/io/{v1}/settemp/1/22.5"));
    assert_eq!(sim.state(&v1, "temperatures[1]"), Some(22.5));
    assert_eq!(sim.state(&v1, "tempTarget"), Some(22.5));
    assert_eq!(
        get(&sim, &format!("/jdev/sps/io/{v1}/settemp/9/20")).status,
        400
    );
}

#[test]
fn audio_zone_v2_volume_is_clamped() {
    let sim = demo();
    let u = uuid("Musik", "Wohnzimmer");
    assert_eq!(value(&get(&sim, &format!("/jdev/sps/io/{u}"))), "2.000");
    get(&sim, &format!("/jdev/sps/io/{u}/volume/150"));
    assert_eq!(sim.state(&u, "volume"), Some(100.0));
    get(&sim, &format!("/jdev/sps/io/{u}/volume/-5"));
    assert_eq!(sim.state(&u, "volume"), Some(0.0));
    get(&sim, &format!("/jdev/sps/io/{u}/volUp"));
    assert_eq!(sim.state(&u, "volume"), Some(3.0));
    assert_eq!(
        value(&get(&sim, &format!("/jdev/sps/io/{u}/pause"))),
        "1.000"
    );
    // The central zone stops all zones.
    get(
        &sim,
        &format!("/jdev/sps/io/{}/off", uuid("Audio Zentral", "Zentral")),
    );
    assert_eq!(sim.state(&u, "power"), Some(0.0));
    // v1 zone clamps to maxVolume.
    let bad = uuid("Badradio", "Bad");
    get(&sim, &format!("/jdev/sps/io/{bad}/volume/95"));
    assert_eq!(sim.state(&bad, "volume"), Some(80.0));
}

#[test]
fn names_are_targets() {
    let sim = demo();
    let r = get(&sim, "/jdev/sps/io/Gartenbeleuchtung/on");
    assert!(r
        .body
        .contains("\"control\": \"dev/sps/io/Gartenbeleuchtung/on\""));
    assert_eq!(value(&r), "1");
    assert_eq!(
        value(&get(&sim, "/jdev/sps/io/Au%C3%9Fentemperatur")),
        "7.500"
    );
    assert_eq!(value(&get(&sim, "/jdev/sps/io/Luftfeuchtigkeit")), "58.000");
    // Names match exactly; a shared name is ambiguous.
    assert_eq!(get(&sim, "/jdev/sps/io/gartenbeleuchtung/on").status, 404);
    assert_eq!(get(&sim, "/jdev/sps/io/Deckenlicht/on").status, 404);
    // TextInput takes the URL-decoded rest of the path.
    let r = get(&sim, "/jdev/sps/io/Notiz/Gr%C3%BC%C3%9Fe%20an%20alle");
    assert_eq!(value(&r), "Grüße an alle");
    assert_eq!(
        sim.state_text("Notiz", "text").as_deref(),
        Some("Grüße an alle")
    );
    // Value blocks clamp; radio takes known ids only.
    assert_eq!(
        value(&get(&sim, "/jdev/sps/io/Bew%C3%A4sserungsdauer/90")),
        "60.000"
    );
    assert_eq!(value(&get(&sim, "/jdev/sps/io/L%C3%BCftung/-3")), "0.000");
    assert_eq!(
        value(&get(&sim, "/jdev/sps/io/L%C3%BCftungsstufe/4")),
        "4.000"
    );
    assert_eq!(
        value(&get(&sim, "/jdev/sps/io/L%C3%BCftungsstufe/next")),
        "0.000"
    );
    assert_eq!(get(&sim, "/jdev/sps/io/L%C3%BCftungsstufe/7").status, 400);
    // Scenes of the v1 light controller.
    assert_eq!(value(&get(&sim, "/jdev/sps/io/Lichtszenen/off")), "0.000");
    assert_eq!(value(&get(&sim, "/jdev/sps/io/Lichtszenen/plus")), "1.000");
    assert_eq!(value(&get(&sim, "/jdev/sps/io/Lichtszenen/on")), "9.000");
    // Pushbutton pulse answers 1 and stays 0.
    assert_eq!(
        value(&get(&sim, "/jdev/sps/io/T%C3%BCr%C3%B6ffner/pulse")),
        "1"
    );
    assert_eq!(sim.state("Türöffner", "active"), Some(0.0));
}

#[test]
fn all_lists_every_output() {
    let sim = demo();
    let u = uuid("Alarmanlage", "Zentral");
    let r = get(&sim, &format!("/jdev/sps/io/{u}/all"));
    let v: Value = serde_json::from_str(&r.body).unwrap();
    let ll = &v["LL"];
    assert_eq!(ll["control"], format!("dev/sps/io/{u}/all"));
    assert_eq!(ll["value"], "0");
    assert_eq!(ll["Code"], "200");
    let outputs: HashMap<String, Value> = ll
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.starts_with("output"))
        .map(|(_, o)| (o["name"].as_str().unwrap().to_string(), o.clone()))
        .collect();
    let doc = structure();
    assert_eq!(
        outputs.len(),
        doc["controls"][&u]["states"].as_object().unwrap().len()
    );
    assert_eq!(outputs["armed"]["value"], 0);
    assert_eq!(outputs["armedDelayTotal"]["value"], 30.0);
    assert!(ll["output0"]["nr"] == 1);
    // Shape like the loxone-java capture: `"output0": {"name": ..., "nr": 1, "value": ...}`.
    // Outputs come in state-name order (serde_json maps are sorted).
    assert!(r
        .body
        .contains(", \"output0\": {\"name\": \"armed\", \"nr\": 1, \"value\": 0}"));
    assert!(r
        .body
        .contains("{\"name\": \"jLocked\", \"nr\": 6, \"value\": \"\"}"));
    assert!(r.body.contains("\"value\": 30.000}"));
}

#[test]
fn unknown_control_and_command_are_404_in_both_modes() {
    let sim = demo();
    let html_404 = "<html><head><title>error</title></head><body><errorcode>404</errorcode> <errordetail>Not Found</errordetail></body></html>";
    let r = get(&sim, "/jdev/sps/io/0000aaaa-0000-0000-ffff000000000000/on");
    assert_eq!((r.status, r.body.as_str()), (404, html_404));
    let r = get(&sim, "/jdev/sps/io/Gartenbeleuchtung/dance");
    assert_eq!(r.status, 404);
    let r = get(&sim, "/jdev/sps/io/Au%C3%9Fentemperatur/5");
    assert_eq!(r.status, 404, "read-only blocks take no commands");
    assert_eq!(get(&sim, "/jdev/sps/nosuch").status, 404);

    let sim = Simulator::demo_with(SimConfig {
        not_found_in_envelope: true,
        ..SimConfig::default()
    });
    let r = get(&sim, "/jdev/sps/io/Nirgendwo/on");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.body,
        "{\"LL\": { \"control\": \"dev/sps/io/Nirgendwo/on\", \"value\": \"\", \"Code\": \"404\"}}"
    );
    let r = get(&sim, "/jdev/sps/io/Gartenbeleuchtung/dance");
    assert!(r.status == 200 && r.body.contains("\"Code\": \"404\""));
    let r = get(&sim, "/jdev/sps/io/Bew%C3%A4sserungsdauer/1.2.3");
    assert!(r.status == 200 && r.body.contains("\"Code\": \"400\""));
}

#[test]
fn lower_case_code_key() {
    let sim = Simulator::demo_with(SimConfig {
        code_key: CodeKey::LowerCode,
        ..SimConfig::default()
    });
    let r = get(&sim, "/jdev/sps/io/Gartenbeleuchtung/on");
    assert!(r.body.ends_with("\"code\": \"200\"}}"), "{}", r.body);
    assert!(!r.body.contains("\"Code\""));
    let r = sim.handle("GET", "/jdev/cfg/api", None, PEER);
    assert!(r.body.contains("\"code\": \"200\""));
}

#[test]
fn timed_switch_counts_down() {
    let sim = demo();
    let u = uuid("Flurlicht", "Flur");
    // The 120 s count-down starts when the pulse is taken (after `sent`): at most 120 s
    // left, and at least 120 s less the time since `sent` (load only loosens that bound).
    let sent = Instant::now();
    assert_eq!(value(&get(&sim, &format!("/jdev/sps/io/{u}/pulse"))), "1");
    let left = sim.state(&u, "deactivationDelay").unwrap();
    let since = sent.elapsed().as_secs_f64();
    assert!(
        left >= 120.0 - since - 1e-6 && left <= 120.0,
        "{left} after {since} s"
    );
    assert_eq!(value(&get(&sim, &format!("/jdev/sps/io/{u}/on"))), "1");
    assert_eq!(sim.state(&u, "deactivationDelay"), Some(-1.0));
    assert_eq!(value(&get(&sim, &format!("/jdev/sps/io/{u}/off"))), "0");
}

#[test]
fn real_socket_with_ureq() {
    let server = SimServer::start(Arc::new(demo()), "127.0.0.1:0").unwrap();
    assert_ne!(server.addr().port(), 0);
    let base = server.base_url();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut r = agent.get(format!("{base}/jdev/cfg/api")).call().unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(r
        .body_mut()
        .read_to_string()
        .unwrap()
        .contains("dev/cfg/api"));
    let mut r = agent
        .get(format!("{base}/jdev/sps/io/Gartenbeleuchtung/on"))
        .header("Authorization", basic("demo", "demo"))
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(r
        .headers()
        .get("content-type")
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("application/json"));
    let body = r.body_mut().read_to_string().unwrap();
    assert_eq!(
        body,
        "{\"LL\": { \"control\": \"dev/sps/io/Gartenbeleuchtung/on\", \"value\": \"1\", \"Code\": \"200\"}}"
    );
    let mut r = agent
        .get(format!("{base}/data/LoxAPP3.json"))
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    assert!(r.headers().contains_key("www-authenticate"));
    assert_eq!(r.body_mut().read_to_string().unwrap(), HTML_401);
    let mut r = agent
        .get(format!("{base}/data/LoxAPP3.json"))
        .header("Authorization", basic("demo", "demo"))
        .call()
        .unwrap();
    assert_eq!(r.body_mut().read_to_string().unwrap(), DEMO_STRUCTURE);
    drop(server); // joins the workers
}

#[test]
fn demo_house_is_complete() {
    let doc = structure();
    let rooms = doc["rooms"].as_object().unwrap();
    let controls = doc["controls"].as_object().unwrap();
    assert!(rooms.len() >= 8, "{} rooms", rooms.len());
    assert!(controls.len() >= 40, "{} controls", controls.len());
    let types: BTreeSet<&str> = controls
        .values()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    for t in [
        "Switch",
        "Pushbutton",
        "TimedSwitch",
        "Dimmer",
        "EIBDimmer",
        "LightController",
        "LightControllerV2",
        "CentralLightController",
        "Jalousie",
        "CentralJalousie",
        "Gate",
        "IRoomController",
        "IRoomControllerV2",
        "ClimateController",
        "AudioZone",
        "AudioZoneV2",
        "CentralAudioZone",
        "Alarm",
        "CentralAlarm",
        "SmokeAlarm",
        "InfoOnlyAnalog",
        "InfoOnlyDigital",
        "PresenceDetector",
        "WindowMonitor",
        "Meter",
        "UpDownDigital",
        "UpDownAnalog",
        "Slider",
        "ValueSelector",
        "Radio",
        "TextInput",
    ] {
        assert!(types.contains(t), "missing {t}");
    }
    let mut by_name: HashMap<&str, BTreeSet<&str>> = HashMap::new();
    for c in controls.values() {
        by_name
            .entry(c["name"].as_str().unwrap())
            .or_default()
            .insert(c["room"].as_str().unwrap());
    }
    assert!(by_name["Deckenlicht"].len() >= 2);
    assert!(rooms.values().any(|r| r["name"] == "Küche"));
    assert!(rooms
        .values()
        .any(|r| r["name"].as_str().unwrap().contains('ß')));
    // msInfo and every state UUID in Loxone form, unique.
    let serial = doc["msInfo"]["serialNr"].as_str().unwrap();
    assert!(serial.len() == 12 && serial.chars().all(|c| c.is_ascii_hexdigit()));
    let mut seen = BTreeSet::new();
    fn collect<'a>(c: &'a Value, seen: &mut BTreeSet<&'a str>) {
        for s in c["states"].as_object().into_iter().flat_map(|m| m.values()) {
            let list: Vec<&Value> = match s.as_array() {
                Some(a) => a.iter().collect(),
                None => vec![s],
            };
            for u in list {
                let u = u.as_str().unwrap();
                let parts: Vec<&str> = u.split('-').collect();
                assert_eq!(
                    parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
                    [8, 4, 4, 16],
                    "{u}"
                );
                assert!(seen.insert(u), "duplicate state uuid {u}");
            }
        }
        for sub in c["subControls"]
            .as_object()
            .into_iter()
            .flat_map(|m| m.values())
        {
            collect(sub, seen);
        }
    }
    for c in controls.values() {
        collect(c, &mut seen);
    }
    // The embedded values load.
    let sim = Simulator::demo();
    assert_eq!(sim.state("Außentemperatur", "value"), Some(7.5));
}

#[test]
fn odd_urls_never_panic() {
    let sim = demo();
    let pieces = [
        "",
        "/",
        "//",
        "jdev",
        "sps",
        "io",
        "cfg",
        "api",
        "all",
        "state",
        "on",
        "off",
        "%",
        "%zz",
        "%C3%",
        "%00",
        "..",
        "?",
        "#",
        "changeTo",
        "778",
        "-1",
        "1e309",
        "NaN",
        "inf",
        "hsv(",
        "hsv(1,2)",
        "temp(1,2,3)",
        "manualPosition",
        "override",
        "settemp",
        "volume",
        "Deckenlicht",
        "Lichtsteuerung",
        "Notiz",
        "masterValue",
        "AI3",
        "data",
        "LoxAPP3.json",
        "ü",
        "€",
        "\u{0}",
        "x".repeat(300).leak(),
    ];
    let uuids: Vec<String> = structure()["controls"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let mut seed: u64 = 0x5eed;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((seed >> 33) as usize) % n
    };
    let auth = basic("demo", "demo");
    for i in 0..600 {
        let mut url = String::from(if i % 2 == 0 { "/jdev/sps/io/" } else { "/" });
        if i % 3 == 0 {
            url.push_str(&uuids[next(uuids.len())]);
            url.push('/');
        }
        for _ in 0..next(5) {
            url.push_str(pieces[next(pieces.len())]);
            url.push('/');
        }
        let method = if i % 50 == 0 { "POST" } else { "GET" };
        let r = sim.handle(method, &url, Some(&auth), PEER);
        assert!(
            [200, 400, 404, 405].contains(&r.status),
            "{url} -> {}",
            r.status
        );
    }
    for header in ["Basic", "Basic !!!", "Basic Og==", "basic ZGVtbzpkZW1v", ""] {
        let r = sim.handle(
            "GET",
            "/jdev/sps/io/Notiz",
            Some(header),
            IpAddr::V4(Ipv4Addr::LOCALHOST),
        );
        assert!([200, 401, 403].contains(&r.status));
    }
}

/// A ValueSelector whose structure file names no `min`/`max` (a real one, from the Smarteon
/// fixture) announces the range its commands are clamped to: `min` 0 and `max` 100 in its
/// states, not 0 and 0 (which told the server no value but 0 was allowed, while the simulator
/// took 50; whether a `set 50` was refused depended on whether the initial tables had reached
/// the server yet).
#[test]
fn a_value_selector_announces_the_range_it_clamps_to() {
    let text = crate::support::fixture_text("Smarteon-loxone-client-kotlin-sample-app.json");
    let sim = Simulator::new(&text, None, SimConfig::default()).expect("simulator");
    let doc: Value = serde_json::from_str(&text).unwrap();
    let selectors: Vec<(&String, &Value)> = doc["controls"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, c)| c["type"] == "ValueSelector" && c["details"].get("max").is_none())
        .collect();
    assert!(!selectors.is_empty(), "the fixture has such ValueSelectors");
    for (uuid, _) in selectors {
        assert_eq!(sim.state(uuid, "min"), Some(0.0), "{uuid}");
        assert_eq!(sim.state(uuid, "max"), Some(100.0), "{uuid}");
        value(&get(&sim, &format!("/jdev/sps/io/{uuid}/150")));
        assert_eq!(
            sim.state(uuid, "value"),
            Some(100.0),
            "clamped at the announced max"
        );
    }
}

//! Live state against the simulator on loopback: the change bus never blocks on a slow
//! subscriber, the polling fallback brings changes made on the Miniserver itself into the store
//! and onto the bus, the link status follows the Miniserver going away and coming back, a new
//! structure file is noticed and loaded, and control tools report whether their commands had an
//! effect. Every wait is bounded by `support::PATIENCE` and only bounds a failure.

use crate::support;
use support::*;

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde_json::json;

use home_mcp::config::{MiniserverConfig, Timeouts};
use home_mcp::home::{
    Action, Bus, Change, Control, Controller, ControllerError, Event, House, LinkMode, Source,
    StateStore, Value,
};
use home_mcp::loxone::client::Client;
use home_mcp::loxone::poll::{PollConfig, Poller};
use home_mcp::loxone::structure::parse_structure;
use home_mcp::sim::{SimServer, Simulator, DEMO_STRUCTURE};
use home_mcp::tools::HomeTools;
use support::drive::MiniserverApi;
use support::find::listed;
use support::live::next_event;
use support::wait::finishes;

const KITCHEN_LIGHT: &str = "1d5c3a92-0209-520e-ffff504f94d0e5a1";

fn client_for(base_url: String) -> Arc<Client> {
    let ms = MiniserverConfig {
        base_url,
        user: "demo".into(),
        password: "demo".into(),
    };
    // Generous: on a busy machine a loopback request can take a while, and a timeout would
    // count as the Miniserver going away (and coming back, a reconnect). The Miniserver
    // really going away (its listener closed) is a refused connection, seen at once.
    let t = Timeouts {
        connect: PATIENCE / 4,
        request: PATIENCE / 4,
        ..Timeouts::default()
    };
    Arc::new(Client::new(&ms, &t))
}

/// The demo simulator on a free port, a house on it and a fast poller.
struct Live {
    sim: Arc<Simulator>,
    server: Option<SimServer>,
    house: Arc<House>,
    client: Arc<Client>,
}

fn live() -> Live {
    let sim = Arc::new(Simulator::demo());
    let server = SimServer::start(sim.clone(), "127.0.0.1:0").unwrap();
    let client = client_for(server.base_url());
    let house = Arc::new(House::new(
        parse_structure(DEMO_STRUCTURE).unwrap(),
        client.clone(),
        Duration::from_secs(5),
    ));
    Live {
        sim,
        server: Some(server),
        house,
        client,
    }
}

fn poll_fast(l: &Live) -> Poller {
    Poller::start(
        l.house.clone(),
        l.client.clone(),
        PollConfig {
            interval: Duration::from_millis(100),
            structure_check: Duration::from_millis(100),
        },
    )
    .unwrap()
}

fn change(seq: u64) -> Event {
    Event::Change(Change {
        uuid: format!("u{}", seq % 7),
        control: None,
        value: Value::Number(seq as f64),
        at: SystemTime::now(),
        seq,
        source: Source::Event,
    })
}

#[test]
fn store_numbers_changes_and_ignores_repeats() {
    let s = StateStore::new();
    let t = SystemTime::now();
    assert_eq!(s.apply("a", Value::Number(1.0), t, Source::Poll), Some(1));
    assert_eq!(s.apply("a", Value::Number(1.0), t, Source::Poll), None);
    assert_eq!(
        s.apply("a", Value::Text("x".into()), t, Source::Event),
        Some(2)
    );
    assert_eq!(s.get("a").unwrap().source, Source::Event);
    assert_eq!(s.seq(), 2);
    assert!(s.get("missing").is_none());
}

#[test]
fn a_subscriber_that_never_reads_blocks_nobody() {
    let bus = Arc::new(Bus::default());
    let stuck = bus.subscribe(8);
    let reader = bus.subscribe(10_000);
    // Publishing to a subscriber that never reads must not wait for it: the publisher thread
    // finishes all 10,000 events while `stuck` reads nothing (no speed target: a blocking
    // publish would never finish, and the wait only bounds that failure).
    let publisher = bus.clone();
    finishes(
        "publishing 10,000 events while one subscriber never reads",
        move || {
            for i in 1..=10_000 {
                publisher.publish(change(i));
            }
        },
    );
    for i in 1..=10_000 {
        match reader.try_recv() {
            Some(Event::Change(c)) => assert_eq!(c.seq, i),
            other => panic!("event {i} missing: {other:?}"),
        }
    }
    assert_eq!(reader.try_recv(), None);
    assert!(!reader.take_lagged());
    assert_eq!(stuck.dropped(), 10_000 - 8);
    assert!(
        stuck.take_lagged(),
        "the stuck subscriber is told it lagged"
    );
    assert!(!stuck.is_closed());
    // One more drop than the bus allows, and it is unsubscribed.
    let small = Bus::new(5);
    let s = small.subscribe(1);
    for i in 0..10 {
        small.publish(change(i));
    }
    assert!(s.is_closed());
    assert_eq!(small.subscriber_count(), 0);
}

#[test]
fn departed_subscribers_are_removed() {
    let bus = Bus::default();
    let keep = bus.subscribe(4);
    let gone = bus.subscribe(4);
    drop(gone);
    assert_eq!(bus.publish(change(1)), 1);
    assert_eq!(bus.subscriber_count(), 1);
    assert!(keep.try_recv().is_some());
}

#[test]
fn polling_brings_a_change_made_on_the_miniserver_to_store_and_bus() {
    let l = live();
    let sub = l.house.bus().subscribe(1024);
    let _poller = poll_fast(&l);
    wait_true("first poll round", || {
        l.house.link().mode() == LinkMode::Polling
    });
    assert!(l.house.states().get(KITCHEN_LIGHT).is_some());
    let before = l.house.states().get(KITCHEN_LIGHT).unwrap().value;
    let cmd = if before == Value::Number(0.0) {
        "on"
    } else {
        "off"
    };
    let want = if cmd == "on" { 1.0 } else { 0.0 };
    // On the Miniserver itself, over its HTTP API as a wall button would, not through us.
    let ms = MiniserverApi::demo(l.server.as_ref().unwrap().addr());
    ms.command(KITCHEN_LIGHT, cmd);
    assert_eq!(ms.state(KITCHEN_LIGHT, "active"), want);
    let e = next_event(
        &sub,
        "the polled change on the bus",
        |e| matches!(e, Event::Change(c) if c.uuid == KITCHEN_LIGHT && c.value == Value::Number(want)),
    );
    let Event::Change(c) = e else { unreachable!() };
    assert_eq!(c.value, Value::Number(want));
    assert_eq!(c.control.as_deref(), Some(KITCHEN_LIGHT));
    assert_eq!(c.source, Source::Poll);
    assert_eq!(
        l.house.states().get(KITCHEN_LIGHT).unwrap().value,
        Value::Number(want)
    );
    let snap = l.house.link().snapshot();
    assert!(snap.events_received > 0);
    assert!(snap.last_event_at.is_some());
    assert_eq!(snap.to_json()["degraded"], true);
    // What a client reads: the Miniserver's new state.
    let tools = HomeTools::new(l.house.clone());
    let light = listed(&tools, "Küche", KITCHEN_LIGHT);
    assert_eq!(light["state"]["on"], want == 1.0, "{light}");
}

#[test]
fn link_goes_disconnected_and_comes_back() {
    let mut l = live();
    let poller = poll_fast(&l);
    wait_true("polling", || l.house.link().mode() == LinkMode::Polling);
    let addr = l.server.as_ref().unwrap().addr();
    l.server = None; // the Miniserver goes away
    wait_true("disconnected", || {
        l.house.link().mode() == LinkMode::Disconnected
    });
    let snap = l.house.link().snapshot();
    assert!(snap.last_error.is_some(), "{snap:?}");
    assert_eq!(snap.reconnects, 0);
    // While disconnected, remembered values are answered with their age, without a request.
    let home = l.house.home();
    let light = home.control(KITCHEN_LIGHT).unwrap();
    let v = l
        .house
        .value(light)
        .expect("stale value while disconnected");
    assert_eq!(v.source, Source::Poll);
    // The same remembered value, older at every later read (no new read replaced it).
    let first_age = v.age_secs();
    wait_until("the remembered value to age", PATIENCE, || {
        let later = l
            .house
            .value(light)
            .expect("still answered while disconnected");
        if later.seq == v.seq && later.age_secs() > first_age {
            Ok(())
        } else {
            Err((later.seq, later.age_secs(), first_age))
        }
    });
    let tools = HomeTools::new(l.house.clone());
    let data = ok(&tools, "list_devices", json!({"room": "Küche"}));
    assert_eq!(data["link"], "disconnected");
    assert!(data["age_secs"].is_number(), "{data}");
    // And back.
    l.server = Some(SimServer::start(l.sim.clone(), &addr.to_string()).unwrap());
    wait_true("polling again", || {
        l.house.link().mode() == LinkMode::Polling
    });
    assert_eq!(l.house.link().snapshot().reconnects, 1);
    // Stopping returns (no speed target: the wait only bounds a stop that hangs).
    finishes("the poller's stop", move || poller.stop());
}

#[test]
fn structure_change_reloads_the_house_and_is_announced() {
    let l = live();
    let sub = l.house.bus().subscribe(1024);
    let _poller = poll_fast(&l);
    wait_true("polling", || l.house.link().mode() == LinkMode::Polling);
    let old = l.house.home().last_modified.clone();
    let new_text = DEMO_STRUCTURE
        .replacen(&old, "2026-01-02 03:04:05", 1)
        .replacen("\"Deckenlicht\"", "\"Deckenleuchte\"", 1);
    assert_ne!(new_text, DEMO_STRUCTURE);
    l.sim.replace_structure(&new_text).unwrap();
    let e = next_event(&sub, "the structure change", |e| {
        matches!(e, Event::StructureChanged { .. })
    });
    assert_eq!(
        e,
        Event::StructureChanged {
            old_version: old,
            new_version: "2026-01-02 03:04:05".into()
        }
    );
    let home = l.house.home();
    assert_eq!(home.last_modified, "2026-01-02 03:04:05");
    assert!(home.controls.iter().any(|c| c.name == "Deckenleuchte"));
    // A bad structure text is refused by the hook.
    assert!(l.sim.replace_structure("{ not json").is_err());
    assert!(l.sim.replace_structure("{}").is_err());
}

/// How many of the request lines `sim` received after `mark` ask for `path`.
fn asked(sim: &Simulator, mark: usize, path: &str) -> usize {
    sim.requests_since(mark)
        .iter()
        .filter(|line| line.split(' ').nth(1).is_some_and(|p| p.starts_with(path)))
        .count()
}

#[test]
fn an_unreadable_structure_file_is_fetched_once_per_version() {
    const FILE: &str = "/data/LoxAPP3.json";
    const VERSION: &str = "/jdev/sps/LoxAPPversion3";
    let l = live();
    let _poller = poll_fast(&l);
    wait_true("polling", || l.house.link().mode() == LinkMode::Polling);
    let old = l.house.home().last_modified.clone();
    let mark = l.sim.request_count();
    // JSON, but without `controls`: a file that cannot be read at all.
    l.sim
        .replace_structure(r#"{"lastModified": "2030-01-01 00:00:00", "rooms": {}}"#)
        .unwrap();
    wait_true("the file rejected", || {
        l.house.rejected_structure().is_some()
    });
    let rejected = l.house.rejected_structure().unwrap();
    assert_eq!(rejected.version, "2030-01-01 00:00:00");
    assert_eq!(rejected.error, "structure file: controls is missing");
    assert_eq!(l.house.home().last_modified, old, "the old model stays");
    // Three more version checks, each answered with the same version: none fetches the file.
    let after = l.sim.request_count();
    wait_true("three more version checks", || {
        asked(&l.sim, after, VERSION) >= 3
    });
    assert_eq!(
        asked(&l.sim, mark, FILE),
        1,
        "{:#?}",
        l.sim.requests_since(mark)
    );
    assert!(l.house.rejected_structure().is_some());

    // The next version is fetched: a readable file with one control of the wrong type, whose
    // warning the new model carries.
    let mut doc: serde_json::Value = serde_json::from_str(DEMO_STRUCTURE).unwrap();
    doc["lastModified"] = json!("2030-01-02 00:00:00");
    doc["controls"][KITCHEN_LIGHT] = json!(7);
    l.sim.replace_structure(&doc.to_string()).unwrap();
    wait_true("the new model", || {
        l.house.home().last_modified == "2030-01-02 00:00:00"
    });
    assert_eq!(l.house.rejected_structure(), None);
    let home = l.house.home();
    let paths: Vec<_> = home.warnings.iter().map(|w| w.path.as_str()).collect();
    assert_eq!(paths, [format!("controls.{KITCHEN_LIGHT}")]);
    assert!(home.control(KITCHEN_LIGHT).is_none());
    // The old model's controls but the spoilt one.
    assert_eq!(
        home.controls.len() + 1,
        parse_structure(DEMO_STRUCTURE).unwrap().controls.len()
    );
    assert_eq!(asked(&l.sim, mark, FILE), 2);
}

/// A controller that forwards everything to the simulator except commands to one control,
/// which it claims to have sent (a device that does not respond).
struct Deaf {
    inner: Arc<Client>,
    ignore: Mutex<Option<String>>,
}

impl Controller for Deaf {
    /// The Loxone client's own wording of the command (what dry runs and answers show).
    fn command(
        &self,
        c: &home_mcp::home::Control,
        a: &home_mcp::home::Action,
    ) -> Result<home_mcp::home::Command, home_mcp::home::ControllerError> {
        home_mcp::loxone::commands::house_command(c, a)
    }
    fn act(&self, c: &Control, a: &Action) -> Result<Option<Value>, ControllerError> {
        if self.ignore.lock().unwrap().as_deref() == Some(c.uuid.as_str()) {
            return Ok(None);
        }
        self.inner.act(c, a)
    }
    fn read(&self, c: &Control) -> Result<Value, ControllerError> {
        self.inner.read(c)
    }
}

#[test]
fn room_lights_report_which_commands_took_effect() {
    // Through the app (verification on by default).
    let (_app, tools) = demo();
    let data = ok(
        &tools,
        "control_room_lights",
        json!({"room": "Küche", "action": "off"}),
    );
    let data2 = ok(
        &tools,
        "control_room_lights",
        json!({"room": "Küche", "action": "on"}),
    );
    for d in [&data, &data2] {
        let results = d["results"].as_array().unwrap();
        assert!(!results.is_empty());
        for r in results {
            assert_eq!(r["verified"], true, "{r}");
        }
        let n = results.len();
        assert_eq!(d["summary"]["confirmed"], n);
        assert_eq!(
            d["verification"],
            format!("{n} of {n} lights confirmed"),
            "{d}"
        );
    }
    // A dry run verifies nothing.
    let dry = ok(
        &tools,
        "control_room_lights",
        json!({"room": "Küche", "action": "off", "dry_run": true}),
    );
    assert_eq!(dry["verification"], serde_json::Value::Null);
    assert_eq!(dry["results"][0]["verified"], serde_json::Value::Null);
}

#[test]
fn a_device_that_does_not_respond_is_not_confirmed() {
    let l = live();
    let deaf = Arc::new(Deaf {
        inner: l.client.clone(),
        ignore: Mutex::new(None),
    });
    let house = Arc::new(
        House::new(
            parse_structure(DEMO_STRUCTURE).unwrap(),
            deaf.clone(),
            Duration::from_secs(5),
        )
        .with_verify_timeout(Duration::from_millis(400)),
    );
    let tools = HomeTools::new(house);
    ok(
        &tools,
        "control_room_lights",
        json!({"room": "Küche", "action": "off"}),
    );
    *deaf.ignore.lock().unwrap() = Some(KITCHEN_LIGHT.into());
    // The deaf light's verification gives up after the house's 400 ms verify timeout (the
    // answer's "did not respond" is the verdict, not how long it took).
    let data = ok(
        &tools,
        "control_room_lights",
        json!({"room": "Küche", "action": "on"}),
    );
    let results = data["results"].as_array().unwrap();
    assert!(
        results.iter().any(|r| r["device"]["uuid"] == KITCHEN_LIGHT),
        "the deaf light is among the results: {data}"
    );
    let n = results.len();
    for r in results {
        let deaf_one = r["device"]["uuid"] == KITCHEN_LIGHT;
        assert_eq!(r["status"], "ok");
        assert_eq!(r["verified"], !deaf_one, "{r}");
    }
    assert_eq!(data["summary"]["confirmed"], n - 1);
    assert_eq!(
        data["verification"],
        format!(
            "{} of {n} lights confirmed; Deckenlicht (Küche) did not respond",
            n - 1
        )
    );
    // control_device says the same.
    let one = ok(
        &tools,
        "control_device",
        json!({"device": "Deckenlicht", "room": "Küche", "action": "on"}),
    );
    assert_eq!(one["verified"], false);
    *deaf.ignore.lock().unwrap() = None;
    let one = ok(
        &tools,
        "control_device",
        json!({"device": "Deckenlicht", "room": "Küche", "action": "on"}),
    );
    assert_eq!(one["verified"], true);
}

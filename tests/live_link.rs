//! The server following the house live over the WebSocket (`--demo`): the link comes up in
//! mode `websocket`, named states (targets, moods) reach the tools, a change made on the
//! Miniserver reaches a bus subscriber tagged with its control, and a command is verified
//! from the event stream.

use crate::support;

use std::time::{Duration, Instant};

use home_mcp::app::App;
use home_mcp::home::bus::Event;
use home_mcp::home::link::LinkMode;
use serde_json::json;
use support::{demo, ok, sim};

const WAIT: Duration = Duration::from_secs(20);

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn uuid_of(app: &App, name: &str, room: &str) -> String {
    app.house
        .home()
        .resolve_control(name, Some(room), &|_| true)
        .unwrap()
        .uuid
        .clone()
}

#[test]
fn named_states_arrive_and_tools_show_them() {
    let (app, tools) = demo();
    wait_for("the WebSocket link", || {
        app.house.link().mode() == LinkMode::WebSocket
    });
    let irc = uuid_of(&app, "Raumregelung", "Wohnzimmer");
    let target_uuid = app
        .house
        .home()
        .control(&irc)
        .unwrap()
        .state("tempTarget")
        .unwrap()
        .to_string();
    wait_for("tempTarget in the store", || {
        app.house.states().get(&target_uuid).is_some()
    });
    let want = sim(&app).state(&irc, "tempTarget").unwrap();
    let d = ok(
        &tools,
        "get_zone_temperature",
        json!({"zone_id": "Wohnzimmer"}),
    );
    assert_eq!(d["target"], json!(want), "{d}");
    // The initial tables hold every state of the house (hundreds).
    wait_for("the initial tables", || {
        app.house.link().snapshot().events_received > 100
    });
}

#[test]
fn a_change_on_the_miniserver_reaches_a_subscriber() {
    let (app, _tools) = demo();
    wait_for("the WebSocket link", || {
        app.house.link().mode() == LinkMode::WebSocket
    });
    let light = uuid_of(&app, "Nachtlicht", "Kinderzimmer");
    let position = app
        .house
        .home()
        .control(&light)
        .unwrap()
        .state("position")
        .unwrap()
        .to_string();
    let sub = app.house.bus().subscribe(4096);
    // Someone presses a switch: the command reaches the Miniserver, not through us.
    let url = format!("/jdev/sps/io/{light}/55");
    let r = sim(&app).handle(
        "GET",
        &url,
        Some("Basic ZGVtbzpkZW1v"),
        "127.0.0.1".parse().unwrap(),
    );
    assert_eq!(r.status, 200);
    let deadline = Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match sub.recv_timeout(left) {
            // The initial tables may still be arriving: wait for the position to read 55.
            Some(Event::Change(c)) if c.uuid == position && c.value.as_f64() == Some(55.0) => {
                assert_eq!(c.control.as_deref(), Some(light.as_str()), "{c:?}");
                break;
            }
            Some(_) => {}
            None => panic!("no change for the light within {WAIT:?}"),
        }
    }
}

#[test]
fn commands_are_verified_from_the_event_stream() {
    // A generous wait for the effect: this machine may be busy with parallel tests.
    let mut config = home_mcp::config::Config::default();
    config.server.verify_timeout = Duration::from_secs(10);
    let app = App::start(&config, true).expect("demo starts");
    let tools = home_mcp::tools::HomeTools::new(app.house.clone());
    wait_for("the WebSocket link", || {
        app.house.link().mode() == LinkMode::WebSocket
    });
    let d = ok(
        &tools,
        "control_room_lights",
        json!({"room": "Küche", "action": "off"}),
    );
    let results = d["results"].as_array().unwrap();
    assert!(!results.is_empty());
    for r in results {
        assert_eq!(r["verified"], true, "{r}");
    }
    // Let the "off" reach the store before switching back: the simulator's WebSocket session
    // sends differences every 100 ms, so an off/on within one tick would show no change at all.
    let light = uuid_of(&app, "Deckenlicht", "Küche");
    let active = app
        .house
        .home()
        .control(&light)
        .unwrap()
        .state("active")
        .unwrap()
        .to_string();
    wait_for("the off event", || {
        app.house
            .states()
            .get(&active)
            .and_then(|v| v.value.as_f64())
            == Some(0.0)
    });
    let d = ok(
        &tools,
        "control_room_lights",
        json!({"room": "Küche", "action": "on"}),
    );
    for r in d["results"].as_array().unwrap() {
        assert_eq!(r["verified"], true, "{r}");
    }
}

#[test]
fn polling_takes_over_when_the_websocket_is_refused() {
    use home_mcp::config::{Config, MiniserverConfig};
    use home_mcp::sim::{SimConfig, SimServer, Simulator};
    use std::sync::Arc;
    // A Miniserver whose firmware has no token login: the WebSocket cannot be used.
    let sim = Arc::new(Simulator::demo_with(SimConfig {
        token_auth: false,
        ..SimConfig::default()
    }));
    let server = SimServer::start(sim.clone(), "127.0.0.1:0").unwrap();
    let mut config = Config {
        miniserver: Some(MiniserverConfig {
            base_url: server.base_url(),
            user: "demo".into(),
            password: "demo".into(),
        }),
        ..Config::default()
    };
    config.poll.interval = Duration::from_secs(1);
    let dir = std::env::temp_dir().join(format!("home-mcp-live-{}", std::process::id()));
    config.server.data_dir = dir.clone();
    let app = App::start(&config, false).expect("starts on old firmware");
    wait_for("polling mode", || {
        app.house.link().mode() == LinkMode::Polling
    });
    let snap = app.house.link().snapshot();
    assert!(snap.last_error.is_some(), "the reason is kept: {snap:?}");
    // Changes made on the Miniserver still arrive, by polling.
    let light = uuid_of(&app, "Nachtlicht", "Kinderzimmer");
    let sub = app.house.bus().subscribe(4096);
    let r = sim.handle(
        "GET",
        &format!("/jdev/sps/io/{light}/42"),
        Some("Basic ZGVtbzpkZW1v"),
        "127.0.0.1".parse().unwrap(),
    );
    assert_eq!(r.status, 200);
    let deadline = Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match sub.recv_timeout(left) {
            Some(Event::Change(c)) if c.uuid == light && c.value.as_f64() == Some(42.0) => break,
            Some(_) => {}
            None => panic!("the polled change did not arrive"),
        }
    }
    assert_eq!(app.house.link().mode(), LinkMode::Polling);
    drop(app);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

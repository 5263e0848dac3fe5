//! The server following the house live over the WebSocket (`--demo`): the link comes up in
//! mode `websocket`, named states (targets, moods) reach the tools, a change made at the
//! Miniserver (over its HTTP API, as a wall button would) reaches a bus subscriber tagged with
//! its control and then what a client reads, and a command is verified from the event stream.

use crate::support;

use std::time::Duration;

use home_mcp::app::App;
use home_mcp::config::Config;
use home_mcp::home::bus::Event;
use home_mcp::home::link::LinkMode;
use home_mcp::tools::HomeTools;
use serde_json::{json, Value};
use support::drive::MiniserverApi;
use support::find::listed;
use support::live::{next_event, state_uuid, wait_websocket};
use support::{demo, ok, test_config, uuid_of, wait_for, wait_true, PATIENCE};

/// Every result of a `control_room_lights` answer is verified (and there are results).
fn assert_all_verified(data: &Value) {
    let results = data["results"].as_array().expect("results");
    assert!(!results.is_empty(), "the room has lights: {data}");
    for r in results {
        assert_eq!(r["verified"], true, "{r}");
    }
}

#[test]
fn named_states_arrive_and_tools_show_them() {
    let (app, tools) = demo();
    wait_websocket(&app);
    let irc = uuid_of(&app, "Raumregelung", "Wohnzimmer");
    let target_uuid = state_uuid(&app, &irc, "tempTarget");
    wait_true("tempTarget in the store", || {
        app.house.states().get(&target_uuid).is_some()
    });
    // The oracle: the Miniserver's own answer over its API.
    let want = MiniserverApi::of(&app).state(&irc, "tempTarget");
    let d = ok(
        &tools,
        "get_zone_temperature",
        json!({"zone_id": "Wohnzimmer"}),
    );
    assert_eq!(d["target"], json!(want), "{d}");
    // The initial tables hold every state of the house (hundreds).
    wait_true("the initial tables", || {
        app.house.link().snapshot().events_received > 100
    });
}

#[test]
fn a_change_on_the_miniserver_reaches_a_subscriber() {
    let (app, _tools) = demo();
    wait_websocket(&app);
    let light = uuid_of(&app, "Nachtlicht", "Kinderzimmer");
    let position = state_uuid(&app, &light, "position");
    let sub = app.house.bus().subscribe(4096);
    // Someone presses a switch: the command reaches the Miniserver over its API, not us.
    let ms = MiniserverApi::of(&app);
    ms.command(&light, "55");
    assert_eq!(ms.state(&light, "position"), 55.0);
    // The initial tables may still be arriving: wait for the position to read 55.
    let e = next_event(
        &sub,
        "the light's position 55 on the bus",
        |e| matches!(e, Event::Change(c) if c.uuid == position && c.value.as_f64() == Some(55.0)),
    );
    let Event::Change(c) = e else { unreachable!() };
    assert_eq!(c.control.as_deref(), Some(light.as_str()), "{c:?}");
    assert_eq!(
        app.house.states().get(&position).map(|v| v.value.as_f64()),
        Some(Some(55.0))
    );
}

#[test]
fn a_change_on_the_miniserver_is_what_the_next_read_shows() {
    // Remembered values stay fresh for an hour: with the link live, the pushed events keep
    // them current, so a read never needs to ask the Miniserver.
    let mut config = test_config();
    config.miniserver_timeouts.value_max_age = Duration::from_secs(3600);
    let app = App::start(&config, true).expect("demo starts");
    let tools = HomeTools::new(app.house.clone());
    wait_websocket(&app);
    let light = uuid_of(&app, "Deckenlicht", "Küche");
    let active = state_uuid(&app, &light, "active");
    let ms = MiniserverApi::of(&app);
    assert_eq!(
        ms.state(&light, "active"),
        1.0,
        "the demo starts with it on"
    );
    assert_eq!(listed(&tools, "Küche", &light)["state"]["on"], true);
    let sub = app.house.bus().subscribe(4096);
    // A wall button turns it off; the Miniserver pushes the change.
    ms.command(&light, "off");
    assert_eq!(ms.state(&light, "active"), 0.0);
    next_event(
        &sub,
        "the light's active 0 on the bus",
        |e| matches!(e, Event::Change(c) if c.uuid == active && c.value.as_f64() == Some(0.0)),
    );
    // The push has arrived: the very next read says off.
    let entry = listed(&tools, "Küche", &light);
    assert_eq!(entry["state"]["on"], false, "{entry}");
}

#[test]
fn commands_are_verified_from_the_event_stream() {
    // Verification waits for the effect up to this long and returns as soon as it is seen:
    // the bound only decides when a missing effect counts as "not confirmed".
    let mut config = Config::default();
    config.server.verify_timeout = PATIENCE;
    let app = App::start(&config, true).expect("demo starts");
    let tools = HomeTools::new(app.house.clone());
    wait_websocket(&app);
    let d = ok(
        &tools,
        "control_room_lights",
        json!({"room": "Küche", "action": "off"}),
    );
    assert_all_verified(&d);
    let results = d["results"].as_array().unwrap();
    // Let every light's "off" reach the store before switching back: the simulator's
    // WebSocket session sends differences every 100 ms, so an off/on within one tick would
    // show no change at all (and could not be confirmed).
    let home = app.house.home();
    let primaries: Vec<String> = results
        .iter()
        .map(|r| {
            let uuid = r["device"]["uuid"].as_str().expect("a device uuid");
            let c = home.control(uuid).expect("a control of the house");
            c.state("active")
                .or_else(|| c.state("position"))
                .unwrap_or_else(|| panic!("{} has no active/position state", c.name))
                .to_string()
        })
        .collect();
    wait_for("every kitchen light's off event", || {
        let values: Vec<Option<f64>> = primaries
            .iter()
            .map(|p| app.house.states().get(p).and_then(|v| v.value.as_f64()))
            .collect();
        (values.iter().all(|v| *v == Some(0.0)), values)
    });
    let light = uuid_of(&app, "Deckenlicht", "Küche");
    let d = ok(
        &tools,
        "control_room_lights",
        json!({"room": "Küche", "action": "on"}),
    );
    assert_all_verified(&d);
    // The Miniserver agrees.
    assert_eq!(MiniserverApi::of(&app).state(&light, "active"), 1.0);
}

#[test]
fn polling_takes_over_when_the_websocket_is_refused() {
    use home_mcp::config::MiniserverConfig;
    use home_mcp::sim::{SimConfig, DEMO_STRUCTURE, DEMO_VALUES};
    use support::server::{Miniserver, TempDir};
    // A Miniserver whose firmware has no token login: the WebSocket cannot be used.
    let ms = Miniserver::start(
        DEMO_STRUCTURE,
        Some(DEMO_VALUES),
        SimConfig {
            token_auth: false,
            ..SimConfig::default()
        },
    );
    let dir = TempDir::new("live-link");
    let mut config = Config {
        miniserver: Some(MiniserverConfig {
            base_url: ms.server.base_url(),
            user: ms.api.user.clone(),
            password: ms.api.password.clone(),
        }),
        ..test_config()
    };
    config.poll.interval = Duration::from_secs(1);
    config.server.data_dir = dir.0.clone();
    let app = App::start(&config, false).expect("starts on old firmware");
    let tools = HomeTools::new(app.house.clone());
    wait_true("polling mode", || {
        app.house.link().mode() == LinkMode::Polling
    });
    let snap = app.house.link().snapshot();
    assert!(snap.last_error.is_some(), "the reason is kept: {snap:?}");
    // Changes made on the Miniserver still arrive, by polling.
    let light = uuid_of(&app, "Nachtlicht", "Kinderzimmer");
    assert_ne!(
        listed(&tools, "Kinderzimmer", &light)["state"]["level"],
        42.0
    );
    let sub = app.house.bus().subscribe(4096);
    ms.api.command(&light, "42");
    assert_eq!(ms.api.state(&light, "position"), 42.0);
    next_event(
        &sub,
        "the polled change",
        |e| matches!(e, Event::Change(c) if c.uuid == light && c.value.as_f64() == Some(42.0)),
    );
    assert_eq!(app.house.link().mode(), LinkMode::Polling);
    // And a client reads what the Miniserver says.
    let after = listed(&tools, "Kinderzimmer", &light);
    assert_eq!(after["state"]["level"], 42.0, "{after}");
    drop(app);
}

/// `home::Primary` (which pushed state is a control's value, per type) against the wire: for
/// every control of the demo house and of each real structure file that has a primary state,
/// the value made from the pushed states is what the Miniserver answers for the control over
/// HTTP (`jdev/sps/io/{uuid}`), the simulator being the oracle.
#[test]
fn the_pushed_primary_value_is_what_the_miniserver_answers() {
    use home_mcp::home::{Primary, Value as V};
    let check = |what: &str, app: &App, api: &support::drive::MiniserverApi| {
        wait_websocket(app);
        let home = app.house.home();
        let with_primary: Vec<_> = home
            .controls
            .iter()
            .filter(|c| Primary::of(c) != Primary::None)
            .collect();
        assert!(
            !with_primary.is_empty(),
            "{what}: no control has a primary state"
        );
        for c in with_primary {
            // Wait out the initial tables (and a room temperature's drift between reads).
            support::wait_until(
                &format!("{what}: {} ({}) pushed = answered", c.name, c.kind),
                PATIENCE,
                || {
                    let answered = api.value(&c.uuid);
                    let pushed = Primary::of(c).read(c, app.house.states()).map(|v| v.value);
                    let same = match (&pushed, answered.parse::<f64>()) {
                        (Some(V::Number(p)), Ok(a)) => (p - a).abs() < 1e-6,
                        (Some(V::Text(p)), _) => *p == answered,
                        _ => false,
                    };
                    if same {
                        Ok(())
                    } else {
                        Err((pushed, answered))
                    }
                },
            );
        }
    };
    let (app, _) = demo();
    check("demo", &app, &MiniserverApi::of(&app));
    for name in support::fixture_app::FIXTURES {
        let f = support::fixture_app::fixture_app(name, None);
        let api = support::drive::MiniserverApi::demo(f.server.addr());
        check(name, &f.app, &api);
    }
}

#[test]
fn a_command_whose_state_already_holds_is_verified_at_once() {
    use crate::support::mcp::McpHttp;
    use crate::support::server::{Miniserver, Served};
    // Küche / Deckenlicht, a Switch that is on in the demo house.
    const KITCHEN_LIGHT: &str = "1d5c3a92-0209-520e-ffff504f94d0e5a1";
    let ms = Miniserver::demo();
    // The longest verification wait: a command whose effect is waited for and never comes
    // ends `verified: false` after it.
    let served = Served::start(&ms, "[server]\nverify_timeout_ms = 30000\n", &[]);
    served.wait_link("websocket");
    assert_eq!(
        ms.api.state(KITCHEN_LIGHT, "active"),
        1.0,
        "on to begin with"
    );
    let mut mcp = McpHttp::connect(served.addr, None);
    let started = std::time::Instant::now();
    let data = mcp.ok(
        "control_device",
        json!({"device": KITCHEN_LIGHT, "action": "on"}),
    );
    eprintln!(
        "`on` to a light that is on answered in {:?}",
        started.elapsed()
    );
    // The Miniserver pushes no change for it (the state holds), so only a check against the
    // value before the command can confirm it.
    assert_eq!(data["verified"], true, "{data}");
    // A room whose lights are all off already, switched off again: each confirmed.
    mcp.ok(
        "control_room_lights",
        json!({"room": "Küche", "action": "off"}),
    );
    wait_for("the kitchen's lights off at the Miniserver", || {
        let v = ms.api.state(KITCHEN_LIGHT, "active");
        (v == 0.0, v)
    });
    let data = mcp.ok(
        "control_room_lights",
        json!({"room": "Küche", "action": "off"}),
    );
    assert_all_verified(&data);
}

//! The live link thread against the simulator over a real loopback WebSocket: token login,
//! the full tables, a command's change arriving, reconnect with a full resync after a drop,
//! no login attempts during a lock-out (close 4003), an address that refuses connections (a
//! restarting Miniserver) asked again soon, and old firmware reported as unsupported.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::drive::MiniserverApi;
use crate::support::wait::finishes;
use crate::support::{recv_matching, wait_true};
use crossbeam_channel::{unbounded, Receiver, Sender};
use home_mcp::config::{MiniserverConfig, Timeouts};
use home_mcp::home::ControllerError;
use home_mcp::loxone::client::Client;
use home_mcp::loxone::live::{Link, LinkConfig, LinkEvent, LinkSink};
use home_mcp::loxone::ws::EventValue;
use home_mcp::sim::{SimConfig, SimServer, Simulator};

struct ChannelSink(Mutex<Sender<LinkEvent>>);

impl LinkSink for ChannelSink {
    fn report(&self, event: LinkEvent) {
        let _ = self.0.lock().unwrap().send(event);
    }
}

fn start(
    sim: Simulator,
    cfg: LinkConfig,
) -> (Arc<Simulator>, SimServer, Link, Receiver<LinkEvent>) {
    let sim = Arc::new(sim);
    let server = SimServer::start(sim.clone(), "127.0.0.1:0").unwrap();
    let client = Arc::new(Client::new(
        &MiniserverConfig {
            base_url: server.base_url(),
            user: "demo".into(),
            password: "demo".into(),
        },
        &Timeouts::default(),
    ));
    let (tx, rx) = unbounded();
    let link = Link::spawn(client, cfg, Arc::new(ChannelSink(Mutex::new(tx))));
    (sim, server, link, rx)
}

fn quick() -> LinkConfig {
    LinkConfig {
        poll: Duration::from_millis(50),
        retry_base: Duration::from_millis(100),
        retry_max: Duration::from_millis(400),
        lockout: Duration::from_secs(2),
        ..LinkConfig::default()
    }
}

/// The first link event `want` accepts (within [`PATIENCE`]).
fn until(rx: &Receiver<LinkEvent>, want: impl FnMut(&LinkEvent) -> bool) -> LinkEvent {
    recv_matching(rx, "a matching link event", want)
}

/// The light `light` (a uuidAction) set to `value` over the Miniserver's HTTP API, as a wall
/// button would.
fn press(server: &SimServer, light: &str, value: &str) {
    MiniserverApi::demo(server.addr()).command(light, value);
}

fn events_count(e: &LinkEvent) -> usize {
    match e {
        LinkEvent::Events(ev) => ev.len(),
        _ => 0,
    }
}

/// The uuidAction of control `name` and the UUID of its state `state`.
fn uuids_of(sim: &Simulator, name: &str, state: &str) -> (String, String) {
    let home = home_mcp::loxone::structure::parse_structure(&sim.structure_text()).unwrap();
    let c = home
        .controls
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("{name}"));
    (c.uuid.clone(), c.state(state).unwrap().to_string())
}

#[test]
fn connects_resyncs_after_a_drop_and_delivers_changes() {
    let (sim, server, mut link, rx) = start(Simulator::demo(), quick());
    until(&rx, |e| *e == LinkEvent::Connected);
    // The initial tables: every state of the house (hundreds of values).
    let first = until(&rx, |e| events_count(e) > 100);
    let initial = events_count(&first);

    // A command made on the Miniserver (here: over HTTP, not through the link) arrives.
    let (light, active) = uuids_of(&sim, "Nachtlicht", "position");
    press(&server, &light, "60");
    until(&rx, |e| match e {
        LinkEvent::Events(ev) => ev
            .iter()
            .any(|s| s.uuid == active && matches!(s.value, EventValue::Number(v) if v > 0.0)),
        _ => false,
    });

    // The link drops: it reports it, reconnects, and gets the full tables again.
    sim.ws_drop_connections();
    until(&rx, |e| matches!(e, LinkEvent::Disconnected { .. }));
    until(&rx, |e| *e == LinkEvent::Connected);
    let again = until(&rx, |e| events_count(e) > 100);
    assert_eq!(events_count(&again), initial, "a full resync");
    link.stop();
}

/// The link blocked with 4003 (the Miniserver's lock-out), with `lockout` configured:
/// returns the report of the blocked attempt.
fn blocked(lockout: Duration) -> (Arc<Simulator>, SimServer, Link, Receiver<LinkEvent>) {
    let (sim, server, link, rx) = start(Simulator::demo(), LinkConfig { lockout, ..quick() });
    until(&rx, |e| *e == LinkEvent::Connected);
    // The Miniserver now blocks this client: close 4003 right after opening.
    sim.set_ws_refuse(true);
    sim.ws_drop_connections();
    until(&rx, |e| matches!(e, LinkEvent::Disconnected { .. }));
    // The next attempt meets 4003 and reports the lock-out.
    let blocked = until(&rx, |e| match e {
        LinkEvent::Disconnected { error, .. } => error.contains("4003") || error.contains("403"),
        _ => false,
    });
    let LinkEvent::Disconnected { retry_in, .. } = blocked else {
        unreachable!()
    };
    assert!(
        retry_in >= lockout,
        "{retry_in:?} for a lock-out of {lockout:?}"
    );
    (sim, server, link, rx)
}

#[test]
fn no_login_during_a_lock_out() {
    // An hour's lock-out: certainly not over during the test.
    let (sim, _server, mut link, rx) = blocked(Duration::from_secs(3600));
    sim.set_ws_refuse(false);
    // Real time must pass to show that nothing is tried: without the lock-out the link would
    // retry within `retry_max` (400 ms), and every attempt is reported (connected or not).
    std::thread::sleep(Duration::from_millis(1500));
    let tried: Vec<LinkEvent> = rx.try_iter().collect();
    assert_eq!(tried, vec![], "attempts during the lock-out");
    assert_eq!(sim.ws_session_count(), 0);
    link.stop();
}

#[test]
fn the_link_comes_back_after_a_lock_out() {
    let (sim, _server, mut link, rx) = blocked(Duration::from_millis(500));
    sim.set_ws_refuse(false);
    until(&rx, |e| *e == LinkEvent::Connected);
    link.stop();
}

/// Issue 28: while the Miniserver's address refuses connections (it is restarting), the link
/// asks again within `retry_refused` however often it was refused, where its backoff for other
/// failures would have grown to `retry_max`: it is back soon after the Miniserver listens.
#[test]
fn a_refusing_address_is_asked_again_within_retry_refused() {
    let port = crate::support::closed_port();
    let client = Arc::new(Client::new(
        &MiniserverConfig {
            base_url: format!("http://127.0.0.1:{port}"),
            user: "demo".into(),
            password: "demo".into(),
        },
        &Timeouts::default(),
    ));
    let refused = Duration::from_millis(300);
    let cfg = LinkConfig {
        retry_base: Duration::from_millis(100),
        retry_max: Duration::from_secs(60),
        retry_refused: refused,
        ..quick()
    };
    let (tx, rx) = unbounded();
    let mut link = Link::spawn(client, cfg, Arc::new(ChannelSink(Mutex::new(tx))));
    // Eight failures: the plain backoff would be at 12.8 s by then.
    for _ in 0..8 {
        match until(&rx, |e| matches!(e, LinkEvent::Disconnected { .. })) {
            LinkEvent::Disconnected { error, retry_in } => {
                assert!(error.to_lowercase().contains("refused"), "{error}");
                assert!(retry_in <= refused, "{retry_in:?}");
            }
            _ => unreachable!(),
        }
    }
    link.stop();
}

#[test]
fn old_firmware_without_tokens_is_reported_unsupported() {
    let sim = Simulator::demo_with(SimConfig {
        token_auth: false,
        ..SimConfig::default()
    });
    let (_sim, _server, mut link, rx) = start(sim, quick());
    let e = until(&rx, |e| !matches!(e, LinkEvent::Disconnected { .. }));
    assert!(matches!(e, LinkEvent::Unsupported { .. }), "{e:?}");
    link.stop();
}

#[test]
fn stop_ends_the_session_promptly() {
    let (sim, _server, mut link, rx) = start(Simulator::demo(), quick());
    until(&rx, |e| *e == LinkEvent::Connected);
    assert_eq!(sim.ws_session_count(), 1);
    // `stop` returns and the session ends (no speed target: the waits only bound a hang).
    finishes("the link's stop", move || link.stop());
    wait_true("the session to end", || sim.ws_session_count() == 0);
}

#[test]
fn a_slow_miniserver_beyond_the_request_timeout_is_a_connection_error() {
    let sim = Arc::new(Simulator::demo());
    let server = SimServer::start(sim.clone(), "127.0.0.1:0").unwrap();
    sim.set_delay(Duration::from_millis(300));
    assert_eq!(sim.delay(), Duration::from_millis(300));
    let ms = MiniserverConfig {
        base_url: server.base_url(),
        user: "demo".into(),
        password: "demo".into(),
    };
    let impatient = Client::new(
        &ms,
        &Timeouts {
            connect: Duration::from_millis(100),
            request: Duration::from_millis(100),
            ..Timeouts::default()
        },
    );
    let (light, _) = uuids_of(&sim, "Nachtlicht", "position");
    let err = impatient.command(&light, &["on".to_string()]).unwrap_err();
    assert_eq!(
        ControllerError::from(err.clone()).code(),
        "CONNECTION_ERROR",
        "{err:?}"
    );
    // A patient client gets its answer, late (only "at least": a busy machine cannot make
    // a delayed answer come sooner).
    let patient = Client::new(&ms, &Timeouts::default());
    let t = Instant::now();
    patient.command(&light, &["on".to_string()]).unwrap();
    assert!(
        t.elapsed() >= Duration::from_millis(300),
        "{:?}",
        t.elapsed()
    );
    let on = MiniserverApi::demo(server.addr()).state(&light, "position");
    assert!(on > 0.0, "on: position {on}");
    // Switched off, the patient client still gets its answers (how fast is not a verdict).
    sim.set_delay(Duration::ZERO);
    assert_eq!(sim.delay(), Duration::ZERO);
    patient.command(&light, &["off".to_string()]).unwrap();
    assert_eq!(
        MiniserverApi::demo(server.addr()).state(&light, "position"),
        0.0
    );
}

#[test]
fn the_link_works_with_a_delay_below_its_timeouts() {
    let sim = Simulator::demo();
    sim.set_delay(Duration::from_millis(300));
    let (sim, server, mut link, rx) = start(sim, quick());
    // Login (key exchange, getkey2, getjwt) and enablebinstatusupdate each come late.
    until(&rx, |e| *e == LinkEvent::Connected);
    until(&rx, |e| events_count(e) > 100);
    let (light, active) = uuids_of(&sim, "Nachtlicht", "position");
    // The press's answer comes late (only "at least": load cannot make it sooner).
    let t = Instant::now();
    press(&server, &light, "60");
    assert!(
        t.elapsed() >= Duration::from_millis(300),
        "{:?}",
        t.elapsed()
    );
    until(&rx, |e| match e {
        LinkEvent::Events(ev) => ev
            .iter()
            .any(|s| s.uuid == active && matches!(s.value, EventValue::Number(v) if v > 0.0)),
        _ => false,
    });
    link.stop();
}

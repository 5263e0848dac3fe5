//! Token authentication and command encryption (loxone-protocol.md §3.2-3.4) end to end: the
//! real client against the simulator on loopback, which checks hashes and decrypts with its own
//! implementation (src/sim/auth.rs). Crypto round trips, capture parsing, login with SHA1 and
//! SHA256, `autht` commands, refresh, kill, wrong password, lock-out, Basic fallback.

use std::sync::Arc;
use std::time::Duration;

use crate::support::net::request;
use crate::support::server::SimProcess;
use crate::support::{wait_until, PATIENCE};

use home_mcp::config::{AuthMode, MiniserverConfig, Timeouts};
use home_mcp::loxone::client::{parse_ll, Client, LoxoneError};
use home_mcp::loxone::crypto::{PublicKey, SessionKey};
use home_mcp::loxone::secured::{HashAlg, KeySalt};
use home_mcp::loxone::token::{TokenAuth, TokenRequest};
use home_mcp::sim::{sim_rsa, SimConfig, SimServer, Simulator, VisuHash, DEMO_USER};

const LIGHT: &str = "Partymodus";

fn start(config: SimConfig) -> (Arc<Simulator>, SimServer) {
    let sim = Arc::new(Simulator::demo_with(config));
    let server = SimServer::start(sim.clone(), "127.0.0.1:0").expect("sim starts");
    (sim, server)
}

fn client(server: &SimServer, password: &str, mode: AuthMode) -> Client {
    let ms = MiniserverConfig {
        base_url: server.base_url(),
        user: DEMO_USER.into(),
        password: password.into(),
    };
    Client::with_auth(&ms, &Timeouts::default(), mode)
}

/// A plain GET on the simulator, no credentials: (status, body).
fn raw_get(server: &SimServer, path: &str) -> (u16, String) {
    let r = request::<&str>(server.addr(), "GET", &format!("/{path}"), &[], "");
    (r.status, r.body)
}

fn sim_public_key() -> PublicKey {
    PublicKey::parse(sim_rsa().expect("embedded key parses").public_key_line()).unwrap()
}

#[test]
fn rsa_key_exchange_round_trips_with_the_sim_key() {
    let pk = sim_public_key();
    let sk = SessionKey::new();
    let payload = sk.rsa_encrypted_key_iv(&pk).unwrap();
    let recovered = sim_rsa().unwrap().recover_session_key(&payload).unwrap();
    // The recovered key decrypts what the client encrypted.
    let path = sk.encrypt_command("jdev/sps/enablebinstatusupdate");
    let cipher = path.strip_prefix("jdev/sys/enc/").unwrap();
    assert_eq!(
        recovered.decrypt_command(cipher).unwrap(),
        "jdev/sps/enablebinstatusupdate"
    );
    // And the client decrypts what the simulator encrypts (fenc answers).
    let answer = recovered.encrypt_answer("{\"LL\":{\"code\":200}}");
    assert_eq!(
        sk.decrypt_answer(answer.as_bytes()).unwrap(),
        "{\"LL\":{\"code\":200}}"
    );
    // Negative: garbage payloads and ciphers are errors, not panics.
    let sim = sim_rsa().unwrap();
    assert!(sim.recover_session_key("not base64!").is_err());
    assert!(sim.recover_session_key("QUJD").is_err());
    let other = SessionKey::new();
    let foreign = other.encrypt_command("jdev/sys/getkey");
    assert!(recovered
        .decrypt_command(foreign.strip_prefix("jdev/sys/enc/").unwrap())
        .is_err());
    // The PEM forms of the same key parse too.
    let line = sim.public_key_line();
    let b64 = line
        .trim_start_matches("-----BEGIN CERTIFICATE-----")
        .trim_end_matches("-----END CERTIFICATE-----");
    let pem = format!("-----BEGIN PUBLIC KEY-----\n{b64}\n-----END PUBLIC KEY-----\n");
    assert_eq!(PublicKey::parse(&pem).unwrap(), pk);
}

#[test]
fn getkey2_capture_parses() {
    let ll = parse_ll(include_bytes!(
        "fixtures/captures/Smarteon-loxone-java-getkey2-answer.json"
    ))
    .unwrap();
    assert_eq!(ll.code, 200);
    let ks = KeySalt::from_value(&ll.value).unwrap();
    assert_eq!(ks.alg, HashAlg::Sha1);
    // The key is hex of ASCII hex text, as §3.2 says.
    let text = String::from_utf8(hex::decode(&ks.key).unwrap()).unwrap();
    assert_eq!(text, "ACF3D142C784A705E33BCD6A3741340A6B34B3BD");
    let gettoken = parse_ll(include_bytes!(
        "fixtures/captures/Smarteon-loxone-java-gettoken-401-answer.json"
    ))
    .unwrap();
    assert_eq!(gettoken.code, 401);
}

fn login_and_command(alg: VisuHash) {
    let (sim, server) = start(SimConfig {
        user_hash: alg,
        ..SimConfig::default()
    });
    let c = client(&server, "demo", AuthMode::Auto);
    assert_eq!(c.auth_in_use(), "none");
    c.command(LIGHT, &["on".to_string()])
        .expect("command with a token");
    assert_eq!(c.auth_in_use(), "token");
    assert_eq!(sim.state(LIGHT, "active"), Some(1.0));
    assert!(c.token_valid_until().is_some());
    c.command(LIGHT, &["off".to_string()]).unwrap();
    assert_eq!(sim.state(LIGHT, "active"), Some(0.0));
    assert!(c.structure_file().unwrap().len() > 1000);
}

#[test]
fn token_login_sha1() {
    login_and_command(VisuHash::Sha1);
}

#[test]
fn token_login_sha256() {
    login_and_command(VisuHash::Sha256);
}

#[test]
fn token_only_mode_sends_no_basic_auth() {
    // With token auth a request carries no Authorization header: a plain GET with the autht
    // query of a fresh TokenAuth works, without it 401.
    let (_sim, server) = start(SimConfig::default());
    let c = client(&server, "demo", AuthMode::Token);
    let auth = TokenAuth::acquire(
        &mut c.exchange(),
        DEMO_USER,
        "demo",
        &TokenRequest::default(),
    )
    .unwrap();
    let (status, _) = raw_get(&server, "jdev/sps/io/Partymodus");
    assert_eq!(status, 401);
    let (status, body) = raw_get(
        &server,
        &format!("jdev/sps/io/Partymodus?{}", auth.autht_query()),
    );
    assert_eq!(status, 200, "{body}");
    // checktoken agrees with validUntil.
    assert_eq!(
        auth.check(&mut c.exchange()).unwrap(),
        auth.token().valid_until
    );
}

#[test]
fn refresh_replaces_the_token_and_kill_ends_it() {
    let (_sim, server) = start(SimConfig::default());
    let c = client(&server, "demo", AuthMode::Token);
    let mut auth = TokenAuth::acquire(
        &mut c.exchange(),
        DEMO_USER,
        "demo",
        &TokenRequest::default(),
    )
    .unwrap();
    let old_query = auth.autht_query();
    auth.refresh(&mut c.exchange()).unwrap();
    let new_query = auth.autht_query();
    assert_ne!(old_query, new_query);
    // The old token is gone, the new one works.
    assert_eq!(
        raw_get(&server, &format!("jdev/sps/io/Partymodus?{old_query}")).0,
        401
    );
    assert_eq!(
        raw_get(&server, &format!("jdev/sps/io/Partymodus?{new_query}")).0,
        200
    );
    auth.kill(&mut c.exchange()).unwrap();
    assert_eq!(
        raw_get(&server, &format!("jdev/sps/io/Partymodus?{new_query}")).0,
        401
    );
}

#[test]
fn client_refreshes_a_short_token_before_expiry() {
    let (_sim, server) = start(SimConfig {
        token_lifetime: Duration::from_secs(4),
        ..SimConfig::default()
    });
    let c = client(&server, "demo", AuthMode::Token);
    c.login().unwrap();
    let first = c.token_valid_until().unwrap();
    // Half of the 4 s lifetime left -> the next request refreshes first (real time must pass
    // for that: requests go on until it happened).
    wait_until("the token refreshed", PATIENCE, || {
        c.read_value(LIGHT).expect("requests keep working");
        let now = c.token_valid_until().unwrap();
        if now > first {
            Ok(())
        } else {
            Err(now)
        }
    });
    // Client-level kill: the next request logs in again.
    c.kill_token().unwrap();
    assert_eq!(c.token_valid_until(), None);
    c.read_value(LIGHT).unwrap();
    assert!(c.token_valid_until().is_some());
}

#[test]
fn plain_getjwt_is_refused() {
    let (_sim, server) = start(SimConfig::default());
    let (status, _) = raw_get(
        &server,
        "jdev/sys/getjwt/00/demo/2/098802e1-02b4-603c-ffffeee000d80cfd/test",
    );
    assert_eq!(status, 400);
    // An enc request that does not decrypt is 401.
    let (status, _) = raw_get(&server, "jdev/sys/enc/QUJD?sk=QUJD");
    assert_eq!(status, 401);
}

#[test]
fn wrong_password_is_401_without_a_retry_storm() {
    let (sim, server) = start(SimConfig::default());
    let c = client(&server, "wrong", AuthMode::Auto);
    assert_eq!(
        c.command(LIGHT, &["on".to_string()]),
        Err(LoxoneError::Unauthorized)
    );
    // The back-off answers without sending anything: the Miniserver sees no request.
    let sent = sim.request_count();
    for _ in 0..10 {
        assert_eq!(
            c.command(LIGHT, &["on".to_string()]),
            Err(LoxoneError::Unauthorized)
        );
    }
    assert_eq!(sim.requests_since(sent), Vec::<String>::new());
    // Only one failed login was booked: the right password from the same IP still works.
    let good = client(&server, "demo", AuthMode::Auto);
    good.command(LIGHT, &["on".to_string()]).unwrap();
    assert_eq!(good.auth_in_use(), "token");
}

#[test]
fn lockout_is_honoured_by_token_login() {
    let (_sim, server) = start(SimConfig {
        max_failed_logins: 2,
        lockout: Duration::from_secs(60),
        ..SimConfig::default()
    });
    // Two fresh clients with a wrong password use up the allowance.
    for _ in 0..2 {
        let bad = client(&server, "wrong", AuthMode::Token);
        assert_eq!(bad.login(), Err(LoxoneError::Unauthorized));
    }
    let good = client(&server, "demo", AuthMode::Token);
    match good.login() {
        Err(LoxoneError::LockedOut { remaining_secs }) => assert!(remaining_secs > 0),
        other => panic!("expected a lock-out, got {other:?}"),
    }
    // The client remembers it and sends nothing more.
    assert!(matches!(
        good.command(LIGHT, &["on".to_string()]),
        Err(LoxoneError::LockedOut { .. })
    ));
}

#[test]
fn old_firmware_falls_back_to_basic() {
    let (sim, server) = start(SimConfig {
        token_auth: false,
        ..SimConfig::default()
    });
    let c = client(&server, "demo", AuthMode::Auto);
    c.command(LIGHT, &["on".to_string()]).unwrap();
    assert_eq!(c.auth_in_use(), "basic");
    assert_eq!(sim.state(LIGHT, "active"), Some(1.0));
    // Token-only mode does not fall back.
    let t = client(&server, "demo", AuthMode::Token);
    assert!(matches!(
        t.command(LIGHT, &["off".to_string()]),
        Err(LoxoneError::NotFound(_))
    ));
    // Basic mode never asks for tokens, also on current firmware.
    let (_sim2, server2) = start(SimConfig::default());
    let b = client(&server2, "demo", AuthMode::Basic);
    b.command(LIGHT, &["on".to_string()]).unwrap();
    assert_eq!(b.auth_in_use(), "basic");
}

/// The library client, as `mode`, for the simulator process `sim` with `password`.
fn client_of(sim: &SimProcess, password: &str, mode: AuthMode) -> Client {
    let ms = MiniserverConfig {
        base_url: format!("http://{}", sim.api.addr),
        user: DEMO_USER.into(),
        password: password.into(),
    };
    Client::with_auth(&ms, &Timeouts::default(), mode)
}

/// The simulator's log once everything before now is in it: a marker, a request with a wrong
/// password from another loopback address (127.0.0.2, so it neither counts toward this
/// address's lock-out nor can be mistaken for one of its refusals), is refused and logged
/// after every earlier line (the log is one stream). Counting the marker's own lines rather
/// than all refusals: an earlier refusal still on its way could otherwise pass for the marker.
fn settled_log(sim: &SimProcess) -> Vec<String> {
    const MARK: &str = "failed login from 127.0.0.2";
    let before = count(&sim.log(), MARK);
    assert_eq!(marker(sim.api.addr), 401, "the marker is refused");
    wait_until("the simulator logs the marker", PATIENCE, || {
        let log = sim.log();
        if count(&log, MARK) > before {
            Ok(log)
        } else {
            Err(log)
        }
    })
}

/// Sends `GET /jdev/sps/io/x` with the wrong user `x:y` from 127.0.0.2 to `addr`; the status.
fn marker(addr: std::net::SocketAddr) -> u16 {
    use std::io::{Read, Write};
    let socket =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("a socket");
    let from: std::net::SocketAddr = "127.0.0.2:0".parse().unwrap();
    socket.bind(&from.into()).expect("bind 127.0.0.2");
    socket
        .connect_timeout(&addr.into(), Duration::from_secs(10))
        .expect("connect to the simulator");
    let mut stream: std::net::TcpStream = socket.into();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream
        .write_all(
            b"GET /jdev/sps/io/x HTTP/1.1\r\nHost: sim\r\nAuthorization: Basic eDp5\r\nConnection: close\r\n\r\n",
        )
        .expect("send the marker");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// How many of `log`'s lines contain `text`.
fn count(log: &[String], text: &str) -> usize {
    log.iter().filter(|l| l.contains(text)).count()
}

fn demo_house() -> std::path::PathBuf {
    format!("{}/assets/demo-house.json", env!("CARGO_MANIFEST_DIR")).into()
}

/// Issue 28: a command after a Miniserver restart (the simulator process killed and started
/// again on its port) carries the old token, which the Miniserver no longer knows (401). That
/// is no wrong password: the client logs in again at once (one token issued) and sends the
/// command once more, which goes through at its first call; nothing backs off, and the next
/// command needs no login.
#[test]
fn a_token_the_restarted_miniserver_does_not_know_leads_to_one_fresh_login() {
    let sim = SimProcess::start(&demo_house());
    let c = client_of(&sim, "demo", AuthMode::Token);
    c.command(LIGHT, &["off".to_string()]).unwrap();
    assert_eq!(c.auth_in_use(), "token");
    let sim = sim.restart();
    c.command(LIGHT, &["on".to_string()])
        .expect("the command goes through at its first call");
    assert_eq!(sim.api.state(LIGHT, "active"), 1.0);
    assert_eq!(c.blocked(), None);
    let log = settled_log(&sim);
    assert_eq!(count(&log, "token issued"), 1, "{log:#?}");
    // The stale token was the only refusal the Miniserver saw (the other is the marker).
    assert_eq!(count(&log, "failed login"), 2, "{log:#?}");
    // The next command needs no login.
    c.command(LIGHT, &["off".to_string()]).unwrap();
    assert_eq!(sim.api.state(LIGHT, "active"), 0.0);
    let log = settled_log(&sim);
    assert_eq!(count(&log, "token issued"), 1, "{log:#?}");
}

/// Issue 28: the same restart with the password changed in it: the stale token's 401 leads to
/// one fresh login, whose refused `getjwt` is a wrong password: the client backs off (30 s,
/// told by `blocked_for`), and ten more commands and logins bring no further login to the
/// Miniserver. Two refusals in all, below its lock-out: the right password still works from
/// this address.
#[test]
fn a_password_changed_with_the_restart_is_tried_once_then_backs_off() {
    let sim = SimProcess::start(&demo_house());
    let c = client_of(&sim, "demo", AuthMode::Token);
    c.command(LIGHT, &["off".to_string()]).unwrap();
    let sim = sim.restart_args(&["--password", "changed"]);
    assert_eq!(
        c.command(LIGHT, &["on".to_string()]),
        Err(LoxoneError::Unauthorized)
    );
    let (e, left) = c.blocked_for().expect("the client backs off");
    assert_eq!(e, LoxoneError::Unauthorized);
    assert!(
        left > Duration::from_secs(20) && left <= Duration::from_secs(30),
        "{left:?}"
    );
    for _ in 0..10 {
        assert_eq!(
            c.command(LIGHT, &["on".to_string()]),
            Err(LoxoneError::Unauthorized)
        );
        assert_eq!(c.login(), Err(LoxoneError::Unauthorized));
    }
    let log = settled_log(&sim);
    assert_eq!(count(&log, "with a wrong hash"), 1, "{log:#?}");
    // The stale token, the wrong password, the marker.
    assert_eq!(count(&log, "failed login"), 3, "{log:#?}");
    assert_eq!(count(&log, "blocked for"), 0, "{log:#?}");
    let right = client_of(&sim, "changed", AuthMode::Token);
    right.command(LIGHT, &["on".to_string()]).unwrap();
}

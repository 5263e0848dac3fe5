//! `home-mcp check` (issue 22) as a home owner runs it: the real binary against `home-mcp sim`
//! as a process. A good set-up passes every line (exit 0); each broken part fails its own line
//! with the fix (exit 1): a wrong password, an unreachable host, a lock-out, a user without
//! state updates, a missing admin key, a development-level server on every address. No line
//! shows the Miniserver password or an API key.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use crate::support::keys_cli::generate;
use crate::support::net::closed_port;
use crate::support::process::bin;
use crate::support::server::{SimProcess, TempDir};

/// The Miniserver password of these tests' simulators: distinct, so the output can be searched
/// for it.
const PASSWORD: &str = "pw-of-check-22";

/// Every check's name, in the order `check` prints them.
const CHECKS: [&str; 11] = [
    "configuration",
    "Miniserver address",
    "firmware (cfg/api)",
    "lock-out",
    "login",
    "structure file",
    "state updates",
    "visualisation password",
    "stop switch",
    "key store",
    "listen address",
];

fn demo_structure() -> PathBuf {
    format!("{}/assets/demo-house.json", env!("CARGO_MANIFEST_DIR")).into()
}

/// A simulator with [`PASSWORD`] and `extra` arguments.
fn sim(extra: &[&str]) -> SimProcess {
    let mut args = vec!["--password", PASSWORD];
    args.extend_from_slice(extra);
    SimProcess::start_args(&demo_structure(), &args)
}

/// A set-up: a config file with its data directory, and a key store.
struct Setup {
    dir: TempDir,
    /// The admin key's secret, when one was made.
    admin_key: Option<String>,
}

impl Setup {
    /// A data directory with an admin key (`with_admin`) or an empty key store, and a config
    /// file listing `extra` TOML lines after `[server] data_dir`.
    fn new(with_admin: bool, extra: &str) -> Setup {
        let dir = TempDir::new("check");
        let admin_key = with_admin.then(|| {
            generate(&dir.join("keys.toml"), "admin", &["--name", "owner"])["id"]
                .as_str()
                .expect("the key's secret")
                .to_string()
        });
        if !with_admin {
            std::fs::write(dir.join("keys.toml"), "").unwrap();
        }
        let config = format!(
            "[server]\ndata_dir = {:?}\n{extra}",
            dir.0.display().to_string()
        );
        std::fs::write(dir.join("config.toml"), config).unwrap();
        Setup { dir, admin_key }
    }

    fn config(&self) -> PathBuf {
        self.dir.join("config.toml")
    }
}

/// `home-mcp check --config FILE` with the Miniserver at `host` (HOME_HOST), user `demo` and
/// `password`. Its own deadlines bound it (connect, request, WebSocket login, state updates).
fn check(config: &Path, host: &str, password: &str) -> Output {
    check_env(config, host, password, &[])
}

/// [`check`] with further environment variables.
fn check_env(config: &Path, host: &str, password: &str, env: &[(&str, &str)]) -> Output {
    bin()
        .arg("check")
        .arg("--config")
        .arg(config)
        .env("HOME_HOST", host)
        .env("HOME_USER", "demo")
        .env("HOME_PASS", password)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("run home-mcp check")
}

/// The line of check `name` in `stdout`, failing with the whole output when missing.
fn line<'a>(stdout: &'a str, name: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.get(5..).is_some_and(|rest| rest.starts_with(name)))
        .unwrap_or_else(|| panic!("no line for {name:?} in:\n{stdout}"))
}

/// Asserts `out` failed (exit 1) on the line `name` with a fix containing `fix`, every line
/// of [`CHECKS`] present with its time, and no secret shown; returns the output.
fn fails_on(out: &Output, name: &str, fix: &str, secrets: &[&str]) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "exit code; stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let l = line(&stdout, name);
    assert!(l.starts_with("FAIL"), "{name} should fail:\n{stdout}");
    // The README's troubleshooting shows this failure with the same fix.
    crate::docs::readme_shows_check_failure(l);
    assert!(
        l.split("; fix: ").nth(1).is_some_and(|f| f.contains(fix)),
        "{name}: fix should mention {fix:?}:\n{stdout}"
    );
    every_line_timed(&stdout);
    no_secret(&stdout, &stderr, secrets);
    stdout
}

/// Every check has its line, with a time in milliseconds.
fn every_line_timed(stdout: &str) {
    for name in CHECKS {
        let l = line(stdout, name);
        assert!(l.contains(" ms  "), "{name}: no time in {l:?}");
    }
}

fn no_secret(stdout: &str, stderr: &str, secrets: &[&str]) {
    for s in secrets.iter().chain(&[PASSWORD]) {
        assert!(
            !stdout.contains(s) && !stderr.contains(s),
            "a secret was printed:\n{stdout}\n{stderr}"
        );
    }
}

fn host(sim: &SimProcess) -> String {
    sim.api.addr.to_string()
}

#[test]
fn every_check_passes_on_a_good_set_up() {
    let sim = sim(&[]);
    // The demo house's Virtual Status as the stop switch (on).
    let setup = Setup::new(true, "[safety]\nstop_switch = \"KI-Assistent\"\n");
    // The demo house's visualisation password, tried on its secured control.
    let visu = home_mcp::sim::DEMO_VISU_PASSWORD;
    let out = check_env(
        &setup.config(),
        &host(&sim),
        PASSWORD,
        &[("HOME_VISU_PASS", visu)],
    );
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    for name in CHECKS {
        let l = line(&stdout, name);
        assert!(l.starts_with("ok"), "{name} should pass:\n{stdout}");
    }
    every_line_timed(&stdout);
    assert!(
        line(&stdout, "firmware (cfg/api)").contains(home_mcp::sim::FIRMWARE_VERSION),
        "{stdout}"
    );
    assert!(
        line(&stdout, "state updates").contains("values over the WebSocket"),
        "{stdout}"
    );
    assert!(
        line(&stdout, "visualisation password").contains("accepted"),
        "{stdout}"
    );
    // `home-mcp sim` starts every state at 0: the switch reads off, which is no fault.
    assert!(
        line(&stdout, "stop switch")
            .contains("\"KI-Assistent\" (InfoOnlyDigital in Zentral) reads off"),
        "{stdout}"
    );
    let key = setup.admin_key.as_deref().unwrap();
    no_secret(&stdout, &stderr, &[key]);
}

#[test]
fn a_wrong_password_fails_the_login_line() {
    let sim = sim(&[]);
    let setup = Setup::new(true, "");
    let out = check(&setup.config(), &host(&sim), "not-the-password");
    let stdout = fails_on(&out, "login", "HOME_PASS", &["not-the-password"]);
    assert!(line(&stdout, "lock-out").starts_with("ok"), "{stdout}");
    assert!(
        line(&stdout, "structure file").starts_with("skip"),
        "{stdout}"
    );
}

#[test]
fn an_unreachable_host_fails_the_address_line() {
    let port = closed_port();
    let setup = Setup::new(true, "");
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let out = check(&setup.config(), &addr.to_string(), PASSWORD);
    let stdout = fails_on(&out, "Miniserver address", "reachable", &[]);
    assert!(
        line(&stdout, "Miniserver address").contains("no TCP connection"),
        "{stdout}"
    );
    assert!(line(&stdout, "login").starts_with("skip"), "{stdout}");
    // The checks that do not need the Miniserver still run.
    assert!(line(&stdout, "key store").starts_with("ok"), "{stdout}");
}

#[test]
fn a_lock_out_fails_its_own_line_with_the_remaining_seconds() {
    // One wrong login locks this address out, as five do on a Miniserver.
    let sim = sim(&["--max-failed-logins", "1"]);
    let setup = Setup::new(true, "");
    let first = check(&setup.config(), &host(&sim), "not-the-password");
    fails_on(&first, "login", "HOME_PASS", &["not-the-password"]);
    let out = check(&setup.config(), &host(&sim), PASSWORD);
    let stdout = fails_on(&out, "lock-out", "wait until the lock-out ends", &[]);
    let l = line(&stdout, "lock-out");
    let secs: u64 = l
        .split("locked out for ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no remaining seconds in {l:?}"));
    assert!((1..=60).contains(&secs), "{l}");
    assert!(line(&stdout, "login").starts_with("skip"), "{stdout}");
}

#[test]
fn a_user_without_state_updates_fails_that_line() {
    let sim = sim(&["--no-state-updates"]);
    let setup = Setup::new(true, "");
    let out = check(&setup.config(), &host(&sim), PASSWORD);
    let stdout = fails_on(&out, "state updates", "rights", &[]);
    // The structure file is still served: the symptom Loxone users report.
    assert!(
        line(&stdout, "structure file").starts_with("ok"),
        "{stdout}"
    );
    assert!(line(&stdout, "login").starts_with("ok"), "{stdout}");
}

#[test]
fn a_key_store_without_an_admin_key_fails_that_line() {
    let sim = sim(&[]);
    let setup = Setup::new(false, "");
    let out = check(&setup.config(), &host(&sim), PASSWORD);
    let stdout = fails_on(&out, "key store", "keys generate --role admin", &[]);
    assert!(line(&stdout, "state updates").starts_with("ok"), "{stdout}");
}

#[test]
fn development_level_on_every_address_fails_the_listen_line() {
    let sim = sim(&[]);
    let setup = Setup::new(true, "listen = \"0.0.0.0:3001\"\n");
    let out = check(&setup.config(), &host(&sim), PASSWORD);
    let key = setup.admin_key.clone().unwrap();
    let stdout = fails_on(&out, "listen address", "security_level", &[&key]);
    assert!(
        line(&stdout, "listen address").contains("0.0.0.0:3001"),
        "{stdout}"
    );
}

#[test]
fn a_wrong_visualisation_password_fails_that_line() {
    let sim = sim(&[]);
    let setup = Setup::new(true, "");
    let out = check_env(
        &setup.config(),
        &host(&sim),
        PASSWORD,
        &[("HOME_VISU_PASS", "9999")],
    );
    fails_on(&out, "visualisation password", "HOME_VISU_PASS", &["9999"]);
}

#[test]
fn a_stop_switch_that_names_no_control_fails_that_line_with_the_nearest_names() {
    let sim = sim(&[]);
    let setup = Setup::new(true, "[safety]\nstop_switch = \"Assistent aus\"\n");
    let out = check(&setup.config(), &host(&sim), PASSWORD);
    let stdout = fails_on(&out, "stop switch", "Virtual Status", &[]);
    assert!(
        line(&stdout, "stop switch").contains("KI-Assistent"),
        "{stdout}"
    );
}

#[test]
fn a_configuration_that_does_not_parse_fails_the_first_line() {
    let setup = Setup::new(true, "");
    std::fs::write(setup.config(), "[server\n").unwrap();
    let out = check(&setup.config(), "127.0.0.1:1", PASSWORD);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        line(&stdout, "configuration").starts_with("FAIL"),
        "{stdout}"
    );
}

/// Needs the `tls` feature: without it the product speaks plain HTTP to the Miniserver only.
#[cfg(feature = "tls")]
#[test]
fn a_certificate_for_another_host_fails_the_cfg_api_line() {
    use crate::support::tls::{https_listener, OTHER_HOST_CERT, OTHER_HOST_KEY};
    let addr = https_listener(OTHER_HOST_CERT, OTHER_HOST_KEY);
    let setup = Setup::new(true, "");
    let out = check(&setup.config(), &format!("https://{addr}"), PASSWORD);
    let stdout = fails_on(&out, "firmware (cfg/api)", "certificate", &[]);
    assert!(
        line(&stdout, "Miniserver address").starts_with("ok"),
        "{stdout}"
    );
    assert!(line(&stdout, "login").starts_with("skip"), "{stdout}");
}

//! `home-mcp check`: checks a set-up before the service runs it, one line per check with its
//! result, its time and, when it fails, what to do.
//!
//! The checks, in order: the configuration parses; the Miniserver's address resolves and
//! takes a TCP connection; `jdev/cfg/api` answers over HTTP or HTTPS (the certificate must name
//! the host) with the firmware version; the address is not locked out; token login; the
//! structure file; state updates arrive over the WebSocket within [`STATE_UPDATES_WITHIN`] (a
//! Loxone user without enough rights gets the structure file but no events); the
//! visualisation password against a secured control, when one is configured; the stop switch
//! names exactly one control (its candidates when not) and what it reads; the key store
//! is readable and holds an active admin key; the listen address agrees with the security
//! level. Everything goes through the product's own Miniserver client
//! ([`crate::loxone::client::Client`], [`crate::loxone::live::Link`]). No line ever shows a
//! password, token or key.

use std::fmt;
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Sender};

use crate::auth::gate::SecurityLevel;
use crate::auth::store::{open_store, Backend};
use crate::auth::Role;
use crate::config::{Config, LiveMode};
use crate::home::model::Home;
use crate::loxone::client::{Client, LoxoneError};
use crate::loxone::live::{Link, LinkConfig, LinkEvent, LinkSink};

/// How long after the WebSocket login the first state values must have arrived.
pub const STATE_UPDATES_WITHIN: Duration = Duration::from_secs(5);

/// The result of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Passed.
    Ok,
    /// Failed: the set-up needs the line's fix.
    Fail,
    /// Not run, because a check it depends on failed.
    Skip,
}

/// One check's line.
#[derive(Debug, Clone)]
pub struct Line {
    /// Short name of what is checked (`login`, `state updates`, ...).
    pub name: &'static str,
    pub outcome: Outcome,
    /// How long the check took.
    pub took: Duration,
    /// What was found (never a secret).
    pub detail: String,
    /// What to do, for a failed check.
    pub fix: Option<String>,
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mark = match self.outcome {
            Outcome::Ok => "ok  ",
            Outcome::Fail => "FAIL",
            Outcome::Skip => "skip",
        };
        write!(
            f,
            "{mark} {:<22} {:>6} ms  {}",
            self.name,
            self.took.as_millis(),
            self.detail
        )?;
        if let Some(fix) = &self.fix {
            write!(f, "; fix: {fix}")?;
        }
        Ok(())
    }
}

/// All lines of one `check` run.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub lines: Vec<Line>,
}

impl Report {
    /// `true` when no check failed (skipped ones only follow a failure).
    pub fn passed(&self) -> bool {
        self.lines.iter().all(|l| l.outcome != Outcome::Fail)
    }

    fn ok(&mut self, name: &'static str, took: Duration, detail: impl Into<String>) {
        self.push(name, Outcome::Ok, took, detail.into(), None);
    }

    fn fail(&mut self, name: &'static str, took: Duration, detail: impl Into<String>, fix: &str) {
        self.push(
            name,
            Outcome::Fail,
            took,
            detail.into(),
            Some(fix.to_string()),
        );
    }

    fn skip(&mut self, name: &'static str, why: &str) {
        self.push(name, Outcome::Skip, Duration::ZERO, why.to_string(), None);
    }

    fn push(
        &mut self,
        name: &'static str,
        outcome: Outcome,
        took: Duration,
        detail: String,
        fix: Option<String>,
    ) {
        let line = Line {
            name,
            outcome,
            took,
            detail,
            fix,
        };
        // Shown as it happens: a slow check is visible while it runs.
        println!("{line}");
        self.lines.push(line);
    }
}

/// What `check` is asked to look at.
pub struct CheckArgs<'a> {
    /// `--config FILE`.
    pub config: Option<&'a Path>,
    /// `--key-store PATH` (else `<data_dir>/keys.toml` or the `HOME_KEY_BACKEND` default).
    pub key_store: Option<PathBuf>,
    /// The process environment (`HOME_HOST`, `HOME_USER`, `HOME_PASS`, `HOME_KEY_BACKEND`, ...).
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

/// Runs every check, printing each line to stdout as it completes.
pub fn run(args: &CheckArgs<'_>) -> Report {
    let mut report = Report::default();
    let started = Instant::now();
    let config = match Config::load(args.config, args.env) {
        Ok(c) => c,
        Err(e) => {
            report.fail(
                "configuration",
                started.elapsed(),
                e.to_string(),
                "correct the setting named above (see docs/ and `home-mcp serve --help`)",
            );
            return report;
        }
    };
    let shown = args
        .config
        .map_or("environment only".to_string(), |p| p.display().to_string());
    report.ok(
        "configuration",
        started.elapsed(),
        format!("{shown} parses"),
    );
    miniserver(&config, &mut report);
    key_store(&config, args, &mut report);
    listen(&config, &mut report);
    report
}

/// The Miniserver checks' names, in order (the ones after a failure are skipped).
const MINISERVER_CHECKS: [&str; 8] = [
    "Miniserver address",
    "firmware (cfg/api)",
    "lock-out",
    "login",
    "structure file",
    "state updates",
    "visualisation password",
    "stop switch",
];

fn skip_rest(report: &mut Report, from: usize, why: &str) {
    for name in &MINISERVER_CHECKS[from..] {
        report.skip(name, why);
    }
}

/// The Miniserver checks, in order; a failure skips the ones that need it.
fn miniserver(config: &Config, report: &mut Report) {
    let ms = match config.require_miniserver() {
        Ok(ms) => ms,
        Err(e) => {
            report.fail(
                "Miniserver address",
                Duration::ZERO,
                e.to_string(),
                "set HOME_HOST, HOME_USER and HOME_PASS (or [miniserver] host, user, password)",
            );
            skip_rest(report, 1, "needs the Miniserver settings");
            return;
        }
    };
    let timeouts = config.miniserver_timeouts;

    // Name resolution and TCP.
    let t = Instant::now();
    let (host, port) = host_port(&ms.base_url);
    let addrs: Vec<_> = match (host.as_str(), port).to_socket_addrs() {
        Ok(a) => a.collect(),
        Err(e) => {
            report.fail(
                "Miniserver address",
                t.elapsed(),
                format!("{host}: name not resolved ({e})"),
                "use the Miniserver's IP address in HOME_HOST, or fix the name in DNS/mDNS",
            );
            skip_rest(report, 1, "needs the Miniserver address");
            return;
        }
    };
    let mut connected = None;
    let mut last_err = String::from("no address");
    for a in &addrs {
        match TcpStream::connect_timeout(a, timeouts.connect) {
            Ok(_) => {
                connected = Some(*a);
                break;
            }
            Err(e) => last_err = format!("{a}: {e}"),
        }
    }
    let Some(addr) = connected else {
        report.fail(
            "Miniserver address",
            t.elapsed(),
            format!("{host}:{port} takes no TCP connection ({last_err})"),
            "check that the Miniserver is on and reachable from this machine (same network, \
             port in HOME_HOST)",
        );
        skip_rest(report, 1, "needs a connection");
        return;
    };
    report.ok(
        "Miniserver address",
        t.elapsed(),
        format!("{host}:{port} resolves to {addr}, TCP connects"),
    );

    let client = Arc::new(Client::with_auth(ms, &timeouts, config.miniserver_auth));
    // Firmware and cfg/api (HTTP, or HTTPS with the certificate's host name).
    let t = Instant::now();
    match client.api_info() {
        Ok(info) => report.ok(
            "firmware (cfg/api)",
            t.elapsed(),
            format!(
                "{} answers: firmware {}, serial {}",
                ms.base_url, info.version, info.serial
            ),
        ),
        Err(e) => {
            let text = e.to_string();
            let fix = if is_certificate_error(&text) {
                "the Miniserver's certificate does not verify (it must come from a public CA \
                 and name this host): use the host name it is issued for (Gen 2: \
                 <serial>.dns.loxonecloud.com), or http:// on the local network"
            } else {
                "check HOME_HOST (http:// or https://, host, port): the address answers TCP \
                 but not as a Miniserver"
            };
            report.fail("firmware (cfg/api)", t.elapsed(), text, fix);
            skip_rest(report, 2, "needs cfg/api");
            return;
        }
    }

    // Lock-out and login: one login attempt answers both.
    let t = Instant::now();
    let login = client.login();
    let took = t.elapsed();
    match &login {
        Err(LoxoneError::LockedOut { remaining_secs }) => {
            report.fail(
                "lock-out",
                took,
                format!("this address is locked out for {remaining_secs} s more"),
                "wait until the lock-out ends, then correct the password before trying again \
                 (each wrong login extends it)",
            );
            skip_rest(report, 3, "needs the lock-out to end");
            return;
        }
        _ => report.ok("lock-out", took, "this address is not locked out"),
    }
    match login {
        Ok(()) => report.ok(
            "login",
            took,
            format!(
                "user {:?} logged in ({} auth)",
                ms.user,
                client.auth_in_use()
            ),
        ),
        Err(LoxoneError::Unauthorized) => {
            report.fail(
                "login",
                took,
                format!("the Miniserver refused user {:?}", ms.user),
                "correct HOME_USER / HOME_PASS (the user in Loxone Config, not the \
                 visualisation password); a few more wrong logins lock this address out",
            );
            skip_rest(report, 4, "needs the login");
            return;
        }
        Err(e) => {
            report.fail(
                "login",
                took,
                e.to_string(),
                "check the Miniserver user and its firmware; `[miniserver] auth = \"basic\"` for \
                 firmware without token login",
            );
            skip_rest(report, 4, "needs the login");
            return;
        }
    }

    // The structure file.
    let t = Instant::now();
    let home = match client
        .structure_file()
        .map_err(|e| e.to_string())
        .and_then(|b| {
            crate::loxone::structure::parse_structure_bytes(&b).map_err(|e| e.to_string())
        }) {
        Ok(h) => {
            report.ok(
                "structure file",
                t.elapsed(),
                format!(
                    "{} controls in {} rooms, last modified {}",
                    h.controls.len(),
                    h.rooms.len(),
                    h.last_modified
                ),
            );
            Some(h)
        }
        Err(e) => {
            report.fail(
                "structure file",
                t.elapsed(),
                e,
                "give the Miniserver user the right to read the configuration in Loxone Config \
                 (user rights), and save the configuration to the Miniserver",
            );
            None
        }
    };

    state_updates(config, &client, report);
    visu_password(config, &client, home.as_ref(), report);
    stop_switch(config, &client, home.as_ref(), report);
    let _ = client.kill_token();
}

/// State updates over the WebSocket: the first values must arrive within
/// [`STATE_UPDATES_WITHIN`] of the login.
fn state_updates(config: &Config, client: &Arc<Client>, report: &mut Report) {
    if config.miniserver_live == LiveMode::Polling {
        report.ok(
            "state updates",
            Duration::ZERO,
            "not used: [miniserver] live = \"polling\"",
        );
        return;
    }
    struct Probe(Sender<LinkEvent>);
    impl LinkSink for Probe {
        fn report(&self, event: LinkEvent) {
            let _ = self.0.try_send(event);
        }
    }
    let (tx, rx) = bounded(16);
    let link_config = LinkConfig {
        login_timeout: Duration::from_secs(10),
        ..LinkConfig::default()
    };
    let t = Instant::now();
    let mut link = Link::spawn(client.clone(), link_config.clone(), Arc::new(Probe(tx)));
    let mut deadline = t + link_config.login_timeout + STATE_UPDATES_WITHIN;
    let mut connected_at = None;
    let result: Result<String, (String, &str)> = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(LinkEvent::Connected) => {
                let now = Instant::now();
                connected_at = Some(now);
                deadline = now + STATE_UPDATES_WITHIN;
            }
            Ok(LinkEvent::Events(events)) if !events.is_empty() => {
                break Ok(format!(
                    "{} values over the WebSocket, the first {} ms after login",
                    events.len(),
                    connected_at.map_or(0, |c| c.elapsed().as_millis())
                ));
            }
            Ok(LinkEvent::Events(_)) => {}
            Ok(LinkEvent::Disconnected { error, .. }) => {
                let fix = session_failure_fix(&error);
                break Err((format!("the WebSocket session failed: {error}"), fix));
            }
            Ok(LinkEvent::Unsupported { error, .. }) => {
                break Err((
                    format!("the WebSocket cannot be used: {error}"),
                    "update the Miniserver firmware (token login, 10.2 or later), or set \
                     [miniserver] live = \"polling\" to follow it by HTTP polling",
                ))
            }
            Err(_) if connected_at.is_some() => {
                break Err((
                    format!(
                        "logged in over the WebSocket, but no state update arrived within {} s",
                        STATE_UPDATES_WITHIN.as_secs()
                    ),
                    RIGHTS_FIX,
                ))
            }
            Err(_) => {
                break Err((
                    "no WebSocket login within the deadline".to_string(),
                    "check that the Miniserver's WebSocket (/ws/rfc6455) is reachable",
                ))
            }
        }
    };
    link.stop();
    match result {
        Ok(detail) => report.ok("state updates", t.elapsed(), detail),
        Err((detail, fix)) => report.fail("state updates", t.elapsed(), detail, fix),
    }
}

/// The fix for a WebSocket session that ended before state updates flowed: a refused
/// `enablebinstatusupdate` is the user's rights, anything else the way to the WebSocket.
fn session_failure_fix(error: &str) -> &'static str {
    if error.contains("enablebinstatusupdate") {
        RIGHTS_FIX
    } else {
        "check that the Miniserver's WebSocket (/ws/rfc6455) is reachable (no proxy in \
         between) and that the user may log in by token"
    }
}

/// What to do when the Miniserver user gets no state updates.
const RIGHTS_FIX: &str = "the Miniserver user lacks rights: in Loxone Config give the user the \
     rights to the visualisation (or make it a member of a group with full access), then save \
     to the Miniserver";

/// The configured visualisation password, against the first secured control (a read through
/// `jdev/sps/ios`, which checks the password's hash and changes nothing).
fn visu_password(config: &Config, client: &Client, home: Option<&Home>, report: &mut Report) {
    const NAME: &str = "visualisation password";
    let Some(password) = &config.visu_password else {
        report.ok(NAME, Duration::ZERO, "none configured");
        return;
    };
    let Some(home) = home else {
        report.skip(NAME, "needs the structure file");
        return;
    };
    let Some(control) = home.controls.iter().find(|c| c.is_secured) else {
        report.ok(
            NAME,
            Duration::ZERO,
            "configured; no secured control to try it on",
        );
        return;
    };
    let t = Instant::now();
    match client.secured_command(&control.uuid, &[], password.expose()) {
        Ok(_) => report.ok(
            NAME,
            t.elapsed(),
            format!("accepted by the secured control {:?}", control.name),
        ),
        Err(LoxoneError::WrongVisuPassword) => report.fail(
            NAME,
            t.elapsed(),
            format!("refused by the secured control {:?}", control.name),
            "correct HOME_VISU_PASS ([miniserver] visu_password): the user's visualisation \
             password set in Loxone Config",
        ),
        Err(e) => report.fail(
            NAME,
            t.elapsed(),
            format!("secured control {:?}: {e}", control.name),
            "check the user's rights to the secured control in Loxone Config",
        ),
    }
}

/// `[safety] stop_switch` names exactly one control that can serve as one (a Virtual Status,
/// Virtual Input or Switch; [`crate::home::stop::resolve_stop_switch`], the rule the server
/// starts with), and what it reads now.
fn stop_switch(config: &Config, client: &Client, home: Option<&Home>, report: &mut Report) {
    const NAME: &str = "stop switch";
    let Some(query) = &config.stop_switch else {
        report.ok(
            NAME,
            Duration::ZERO,
            "none configured ([safety] stop_switch); only the admin page's stop",
        );
        return;
    };
    let Some(home) = home else {
        report.skip(NAME, "needs the structure file");
        return;
    };
    let t = Instant::now();
    let control = match crate::home::stop::resolve_stop_switch(home, query) {
        Ok(c) => c,
        Err(e) => {
            report.fail(
                NAME,
                t.elapsed(),
                format!("[safety] stop_switch {query:?}: {e}"),
                "name exactly one Virtual Status (or Virtual Input, Switch) of the structure \
                 file: its name, \"name (room)\" or its UUID",
            );
            return;
        }
    };
    let what = format!(
        "{:?} ({}{})",
        control.name,
        control.kind.as_str(),
        control
            .room
            .as_deref()
            .and_then(|r| home.room(r))
            .map(|r| format!(" in {}", r.name))
            .unwrap_or_default()
    );
    // The read the house's controller does (`jdev/sps/io/{uuid}`).
    let reading =
        crate::home::Controller::read(client, control).map(|v| crate::home::SwitchReading::of(&v));
    match reading {
        Ok(crate::home::SwitchReading::On) => {
            report.ok(NAME, t.elapsed(), format!("{what} reads on: commands flow"))
        }
        Ok(crate::home::SwitchReading::Off) => report.ok(
            NAME,
            t.elapsed(),
            format!("{what} reads off: the assistant is stopped until a person switches it on"),
        ),
        Ok(crate::home::SwitchReading::Unknown(m)) => report.fail(
            NAME,
            t.elapsed(),
            format!("{what}: {m}; the assistant would stay stopped"),
            "name a control whose value is 1 (on) or 0 (off)",
        ),
        Err(e) => report.fail(
            NAME,
            t.elapsed(),
            format!("{what} cannot be read: {e}"),
            "give the Miniserver user the right to read it in Loxone Config",
        ),
    }
}

/// The key store is readable and holds an active admin key.
fn key_store(config: &Config, args: &CheckArgs<'_>, report: &mut Report) {
    const NAME: &str = "key store";
    let t = Instant::now();
    let backend = match Backend::from_env(args.env) {
        Ok(b) => b,
        Err(e) => {
            report.fail(
                NAME,
                t.elapsed(),
                e,
                "set HOME_KEY_BACKEND to file, env, memory or sqlite",
            );
            return;
        }
    };
    let path = args
        .key_store
        .clone()
        .unwrap_or_else(|| config.key_store_path(backend));
    let keys = open_store(backend, &path, args.env)
        .map_err(|e| e.to_string())
        .and_then(|s| s.list().map_err(|e| e.to_string()));
    match keys {
        Err(e) => report.fail(
            NAME,
            t.elapsed(),
            format!("{}: {e}", path.display()),
            "make the key store readable by the service user (or pass --key-store PATH)",
        ),
        Ok(keys) => {
            let admins = keys
                .iter()
                .filter(|k| k.role == Role::Admin && k.active)
                .count();
            if admins == 0 {
                report.fail(
                    NAME,
                    t.elapsed(),
                    format!(
                        "{}: {} keys, no active admin key",
                        path.display(),
                        keys.len()
                    ),
                    "create one with `home-mcp keys generate --role admin --name owner`",
                );
            } else {
                report.ok(
                    NAME,
                    t.elapsed(),
                    format!("{}: {} keys, {admins} admin", path.display(), keys.len()),
                );
            }
        }
    }
}

/// The listen address against the security level: development answers without a key, so it
/// must stay on loopback; production off loopback needs `allowed_hosts`.
fn listen(config: &Config, report: &mut Report) {
    const NAME: &str = "listen address";
    let listen = config.server.listen;
    let level = config.auth.level;
    let shown = format!("{listen} at {} level", level_name(level));
    if let Err(e) = config.check_serve() {
        report.fail(
            NAME,
            Duration::ZERO,
            format!("{shown}: {e}"),
            "set [server] allowed_hosts to the names and addresses the server is reached by",
        );
    } else if level == SecurityLevel::Development
        && !config.auth.required
        && !listen.ip().is_loopback()
    {
        report.fail(
            NAME,
            Duration::ZERO,
            format!("{shown}: anyone on the network may use it without a key"),
            "listen on 127.0.0.1, or set security_level = \"staging\" or \"production\" \
             ([auth] or SECURITY_LEVEL) and use API keys",
        );
    } else {
        report.ok(NAME, Duration::ZERO, shown);
    }
}

fn level_name(level: SecurityLevel) -> &'static str {
    match level {
        SecurityLevel::Development => "development",
        SecurityLevel::Staging => "staging",
        SecurityLevel::Production => "production",
    }
}

/// Host and port of a base URL (`http://host[:port]`, `https://[v6]:port`).
fn host_port(base_url: &str) -> (String, u16) {
    let (rest, default_port) = match base_url.split_once("://") {
        Some(("https", r)) => (r, 443),
        Some((_, r)) => (r, 80),
        None => (base_url, 80),
    };
    let authority = rest.split('/').next().unwrap_or(rest);
    if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']').unwrap_or((v6, ""));
        let port = after
            .strip_prefix(':')
            .and_then(|p| p.parse().ok())
            .unwrap_or(default_port);
        return (host.to_string(), port);
    }
    match authority.rsplit_once(':') {
        Some((h, p)) => (h.to_string(), p.parse().unwrap_or(default_port)),
        None => (authority.to_string(), default_port),
    }
}

/// Whether a connection error is about the TLS certificate (rustls names the reason).
fn is_certificate_error(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    [
        "certificate",
        "notvalidforname",
        "unknownissuer",
        "tls",
        "handshake",
    ]
    .iter()
    .any(|w| t.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_port_reads_each_base_url_form() {
        assert_eq!(host_port("http://192.168.1.7"), ("192.168.1.7".into(), 80));
        assert_eq!(host_port("https://ms.local"), ("ms.local".into(), 443));
        assert_eq!(
            host_port("http://127.0.0.1:8080/"),
            ("127.0.0.1".into(), 8080)
        );
        assert_eq!(host_port("https://[::1]:8443"), ("::1".into(), 8443));
    }

    #[test]
    fn a_refused_enablebinstatusupdate_is_the_users_rights() {
        assert_eq!(
            session_failure_fix("enablebinstatusupdate answered 403"),
            RIGHTS_FIX
        );
        assert_ne!(session_failure_fix("connection reset"), RIGHTS_FIX);
    }

    #[test]
    fn certificate_errors_are_recognised() {
        assert!(is_certificate_error(
            "connection failed: invalid peer certificate: NotValidForName"
        ));
        assert!(!is_certificate_error(
            "connection failed: Connection refused"
        ));
    }
}

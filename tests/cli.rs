//! The command line as a user meets it: help, version, usage errors (exit 2), missing
//! Miniserver settings, stdio ending on EOF, and `sim` serving a real fixture structure file.

use std::io::Write;
use std::net::SocketAddr;
use std::process::{Child, Command, Output, Stdio};

use serde_json::{json, Value};

use crate::support::keys_cli::generate;
use crate::support::net::{free_port, request, try_request};
use crate::support::process::{bin, Kill};
use crate::support::server::{Miniserver, Served, TempDir};
use crate::support::wait::{wait_until, PATIENCE};

/// The showroom structure file of a real Miniserver.
const SHOWROOM: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/Smarteon-loxone-java-showroom.json"
);

/// A simulated Miniserver serving the showroom structure file.
fn showroom() -> Miniserver {
    Miniserver::start(
        &std::fs::read_to_string(SHOWROOM).unwrap(),
        None,
        Default::default(),
    )
}

/// [`bin`] in a clean environment for the settings we read, so the developer's own do not
/// leak in.
fn home_mcp() -> Command {
    let mut c = bin();
    for k in [
        "HOME_HOST",
        "HOME_USER",
        "HOME_PASS",
        "HOME_LISTEN",
        "HOME_LOG_LEVEL",
        "HOME_DATA_DIR",
        "HOME_VISU_PASS",
        "HOME_KEY_BACKEND",
        "SECURITY_LEVEL",
    ] {
        c.env_remove(k);
    }
    c
}

/// Waits until `child` exits (within [`PATIENCE`]; `what` names the wait).
fn wait_exit(child: &mut Child, what: &str) -> std::process::ExitStatus {
    wait_until(what, PATIENCE, || match child.try_wait() {
        Ok(Some(status)) => Ok(status),
        Ok(None) => Err("still running".to_string()),
        Err(e) => Err(e.to_string()),
    })
}

/// Polls `GET /health` at `addr` until `want` accepts its JSON; fails with the last answer.
fn health_until(addr: SocketAddr, want: impl Fn(&Value) -> bool) -> Value {
    wait_until("a /health answer that matches", PATIENCE, || {
        let r = try_request::<&str>(addr, "GET", "/health", &[], "")?;
        match serde_json::from_str::<Value>(&r.body) {
            Ok(v) if want(&v) => Ok(v),
            _ => Err(r.body),
        }
    })
}

fn run(args: &[&str]) -> Output {
    home_mcp()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run home-mcp")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn help_and_version_everywhere() {
    for args in [
        vec!["--help"],
        vec!["serve", "--help"],
        vec!["stdio", "--help"],
        vec!["sim", "--help"],
    ] {
        let o = run(&args);
        assert!(o.status.success(), "{args:?}");
        assert!(stdout(&o).contains("USAGE"), "{args:?}: {}", stdout(&o));
    }
    for args in [
        vec!["--version"],
        vec!["serve", "--version"],
        vec!["stdio", "-V"],
        vec!["sim", "--version"],
    ] {
        let o = run(&args);
        assert!(o.status.success(), "{args:?}");
        assert_eq!(
            stdout(&o).trim(),
            format!("home-mcp {}", env!("CARGO_PKG_VERSION"))
        );
    }
}

#[test]
fn usage_errors_exit_2() {
    for (args, needle) in [
        (vec![], "a command is needed"),
        (vec!["fly"], "unknown command"),
        (vec!["serve", "--bogus"], "--bogus"),
        (vec!["stdio", "--demo", "--listen", "x"], "--listen"),
        (vec!["serve", "--workers", "0"], "--workers"),
        (vec!["serve", "--workers", "many"], "--workers"),
        (vec!["serve", "--listen", "nowhere"], "--listen"),
        (vec!["sim"], "--structure"),
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{args:?}");
    }
}

#[test]
fn missing_miniserver_settings_are_explained() {
    let o = run(&["stdio"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("HOME_HOST") && e.contains("--demo"), "{e}");
    assert!(stdout(&o).is_empty(), "stdout stays clean in stdio mode");

    let o = home_mcp()
        .args(["stdio"])
        .env("HOME_HOST", "192.0.2.1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("HOME_USER"), "{}", stderr(&o));

    let o = home_mcp()
        .args(["serve", "--config", "/nonexistent/home-mcp.toml"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("/nonexistent/home-mcp.toml"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn stdio_answers_and_exits_on_eof() {
    let mut child = home_mcp()
        .args(["stdio", "--demo"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#).unwrap();
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )
        .unwrap();
        writeln!(stdin, r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"list_rooms","arguments":{{}}}}}}"#).unwrap();
        writeln!(stdin, "{{not json").unwrap();
        // stdin is closed at the end of this block (the EOF); the answers are a few lines:
        // they fit in the pipe while nobody reads them.
    }
    wait_exit(&mut child, "stdio to exit after EOF");
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success());
    let lines: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).expect("stdout carries only JSON-RPC"))
        .collect();
    assert_eq!(lines.len(), 3, "initialize, tools/call, parse error");
    assert_eq!(lines[0]["result"]["serverInfo"]["name"], "home-mcp");
    assert_eq!(lines[1]["result"]["isError"], false);
    assert_eq!(lines[2]["error"]["code"], -32700);
}

#[test]
fn sim_serves_a_real_structure_file() {
    let port = free_port();
    let _sim = Kill(
        home_mcp()
            .args([
                "sim",
                "--structure",
                SHOWROOM,
                "--listen",
                &format!("127.0.0.1:{port}"),
            ])
            .args(["--user", "admin", "--password", "pässwort"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    // admin:pässwort
    let auth = ["Authorization: Basic YWRtaW46cMOkc3N3b3J0"];
    let r = wait_until("the sim to answer", PATIENCE, || {
        try_request(addr, "GET", "/jdev/sps/LoxAPPversion3", &auth, "")
    });
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.body.contains("2017-11-22 18:41:01"), "{r:?}");

    let o = run(&["sim", "--structure", "/nonexistent.json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/nonexistent.json"));
}

#[test]
fn health_reports_the_live_link_and_degrades_to_polling() {
    // The demo: live over the simulator's WebSocket.
    let port = free_port();
    let _demo = Kill(
        home_mcp()
            .args(["serve", "--demo", "--listen", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Connected first, then the initial tables (hundreds of states) arrive.
    let h = health_until(([127, 0, 0, 1], port).into(), |v| {
        v["miniserver"]["link"]["mode"] == "websocket"
            && v["miniserver"]["link"]["events_received"].as_u64() > Some(100)
    });
    assert_eq!(h["status"], "ok", "{h}");
    assert!(h["reason"].is_null(), "{h}");

    // A Miniserver (the showroom) followed by polling only: degraded, and says why.
    let ms = showroom();
    let served = Served::start(
        &ms,
        "[miniserver]\nlive = \"polling\"\npoll_interval_secs = 1\n",
        &[],
    );
    let h = health_until(served.addr, |v| {
        v["miniserver"]["link"]["mode"] == "polling"
    });
    assert_eq!(h["status"], "degraded", "{h}");
    assert!(h["reason"].as_str().unwrap().contains("polling"), "{h}");
}

#[test]
fn sigterm_stops_cleanly_and_kills_the_tokens() {
    let port = free_port();
    let dir = TempDir::new("cli-sigterm");
    let log = dir.join("serve.log");
    let mut child = home_mcp()
        .args(["serve", "--demo", "--listen", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    health_until(([127, 0, 0, 1], port).into(), |v| {
        v["miniserver"]["link"]["mode"] == "websocket"
    });
    let st = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let status = wait_exit(&mut child, "serve to stop after SIGTERM");
    assert!(status.success(), "{status:?}");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("shutting down"), "{text}");
    assert!(
        text.contains("sim: token killed"),
        "the WebSocket token: {text}"
    );
    assert!(
        text.contains("Miniserver token killed"),
        "the HTTP token: {text}"
    );
    assert!(
        !text.contains("no admin API key"),
        "--demo keeps its keys in memory: no hint to create one on disk: {text}"
    );
}

/// The whole set-up: `keys generate --role operator` writes the store that `serve` reads; without
/// the key a staging server answers 401, with it the call goes through.
#[test]
fn serve_reads_the_keys_the_keys_command_writes() {
    let dir = TempDir::new("cli-keys");
    let store = dir.join("keys.toml");
    let o = home_mcp()
        .args(["keys", "generate", "--role", "operator", "--name", "test"])
        .args(["--key-store", store.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let key = out
        .split_whitespace()
        .find(|w| w.starts_with("homekey_operator_"))
        .unwrap_or_else(|| panic!("no key printed: {out}"))
        .to_string();

    let ms = showroom();
    let served = Served::start_args(
        &ms,
        "",
        &[("SECURITY_LEVEL", "staging")],
        &["--key-store", store.to_str().unwrap()],
    );
    let call = |key: Option<&str>| {
        let mut headers = vec!["Content-Type: application/json".to_string()];
        headers.extend(key.map(|k| format!("X-API-Key: {k}")));
        request(
            served.addr,
            "POST",
            "/tools/call",
            &headers,
            r#"{"tool":"list_rooms"}"#,
        )
    };
    let denied = call(None);
    assert_eq!(denied.status, 401, "{denied:?}");
    assert!(denied.body.contains("INVALID_API_KEY"), "{denied:?}");
    let wrong = call(Some("homekey_operator_1_00000000000000000000000000000000"));
    assert_eq!(wrong.status, 401, "{wrong:?}");
    assert!(
        !wrong.body.contains("00000000000000000000000000000000")
            && !wrong.head.contains("00000000000000000000000000000000"),
        "the key is masked: {wrong:?}"
    );
    let ok = call(Some(&key));
    assert_eq!(ok.status, 200, "{ok:?}");
    assert!(ok.header("x-ratelimit-remaining").is_some(), "{ok:?}");
}

/// Runs `stdio --demo --key-store store` with `HOME_STDIO_KEY=key`, feeding `lines`; the
/// output lines (JSON) and the exit status.
fn stdio_as(
    store: &std::path::Path,
    key: &str,
    lines: &[&str],
) -> (Vec<serde_json::Value>, Output) {
    let mut child = home_mcp()
        .args(["stdio", "--demo", "--key-store"])
        .arg(store)
        .env("HOME_STDIO_KEY", key)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut stdin = child.stdin.take().unwrap();
        for l in lines {
            let _ = writeln!(stdin, "{l}");
        }
    }
    let o = child.wait_with_output().unwrap();
    let out = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).expect("stdout carries only JSON-RPC"))
        .collect();
    (out, o)
}

#[test]
fn stdio_runs_as_home_stdio_key_when_given() {
    let dir = TempDir::new("cli-stdio-key");
    let store = dir.join("keys.toml");
    let key = generate(&store, "monitor", &["--name", "desktop"])["id"]
        .as_str()
        .expect("the key in `id`")
        .to_string();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let read = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_rooms","arguments":{}}}"#;
    let write = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"control_device","arguments":{"device":"Deckenlicht","room":"Küche","action":"on"}}}"#;
    let batch = format!("[{read},{write}]");
    let (out, o) = stdio_as(&store, &key, &[init, read, write, &batch]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(out.len(), 4, "{out:?}");
    assert_eq!(out[0]["result"]["serverInfo"]["name"], "home-mcp");
    assert_eq!(out[1]["result"]["isError"], false, "a monitor key reads");
    assert_eq!(out[2]["id"], 3);
    assert_eq!(
        out[2]["error"]["code"], -32003,
        "a monitor key does not switch: {}",
        out[2]
    );
    assert_eq!(out[2]["error"]["data"]["code"], "INSUFFICIENT_PERMISSIONS");
    // The batch is refused whole: one error per request, each with its id.
    let refused: Vec<(Value, Value)> = out[3]
        .as_array()
        .unwrap_or_else(|| panic!("an array of errors: {}", out[3]))
        .iter()
        .map(|e| (e["id"].clone(), e["error"]["code"].clone()))
        .collect();
    assert_eq!(
        refused,
        [(json!(2), json!(-32003)), (json!(3), json!(-32003))],
        "batch refused whole: {}",
        out[3]
    );
    assert!(stderr(&o).contains("as key \"desktop\""), "{}", stderr(&o));
    assert!(
        !stderr(&o).contains(&key),
        "the key never appears in the log"
    );

    // An unknown key: the server does not start.
    let (out, o) = stdio_as(
        &store,
        "homekey_admin_9_00000000000000000000000000000000",
        &[init],
    );
    assert!(!o.status.success());
    assert!(out.is_empty());
    assert!(
        stderr(&o).contains("HOME_STDIO_KEY") && stderr(&o).contains("unknown API key"),
        "{}",
        stderr(&o)
    );
}

//! The command line as a user meets it: help, version, usage errors (exit 2), missing
//! Miniserver settings, stdio ending on EOF, and `sim` serving a real fixture structure file.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_home-mcp"));
    // A clean environment for the settings we read, so the developer's own do not leak in.
    for k in [
        "HOME_HOST",
        "HOME_USER",
        "HOME_PASS",
        "HOME_LISTEN",
        "HOME_LOG_LEVEL",
        "HOME_DATA_DIR",
        "HOME_VISU_PASS",
        "HOME_STDIO_KEY",
        "HOME_KEY_BACKEND",
        "SECURITY_LEVEL",
    ] {
        c.env_remove(k);
    }
    c
}

fn run(args: &[&str]) -> Output {
    bin()
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

    let o = bin()
        .args(["stdio"])
        .env("HOME_HOST", "192.0.2.1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("HOME_USER"), "{}", stderr(&o));

    let o = bin()
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
    let mut child = bin()
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
    } // stdin closed here
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "stdio did not exit after EOF");
        std::thread::sleep(Duration::from_millis(20));
    }
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
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/Smarteon-loxone-java-showroom.json"
    );
    let mut child = bin()
        .args([
            "sim",
            "--structure",
            fixture,
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .args(["--user", "admin", "--password", "pässwort"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let body = loop {
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
            s.write_all(b"GET /jdev/sps/LoxAPPversion3 HTTP/1.1\r\nHost: x\r\nAuthorization: Basic YWRtaW46cMOkc3N3b3J0\r\nConnection: close\r\n\r\n")
                .unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).unwrap();
            break out;
        }
        assert!(Instant::now() < deadline, "sim did not start");
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = child.kill();
    let _ = child.wait();
    assert!(body.starts_with("HTTP/1.1 200"), "{body}");
    assert!(body.contains("2017-11-22 18:41:01"), "{body}");

    let o = run(&["sim", "--structure", "/nonexistent.json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/nonexistent.json"));
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// GET `path` on the server at `port`; the body, or `None` while it does not answer.
fn get(port: u16, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out.split_once("\r\n\r\n")?.1.to_string())
}

/// Polls `/health` until `want` accepts its JSON; panics after 30 s.
fn health_until(port: u16, want: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = None;
    loop {
        if let Some(body) = get(port, "/health") {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&body) {
                if want(&v) {
                    return v;
                }
            }
            last = Some(body);
        }
        assert!(
            Instant::now() < deadline,
            "health never matched; last answer: {last:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

struct Kill(std::process::Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn health_reports_the_live_link_and_degrades_to_polling() {
    // The demo: live over the simulator's WebSocket.
    let port = free_port();
    let _demo = Kill(
        bin()
            .args(["serve", "--demo", "--listen", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Connected first, then the initial tables (hundreds of states) arrive.
    let h = health_until(port, |v| {
        v["miniserver"]["link"]["mode"] == "websocket"
            && v["miniserver"]["link"]["events_received"].as_u64() > Some(100)
    });
    assert_eq!(h["status"], "ok", "{h}");
    assert!(h["reason"].is_null(), "{h}");

    // A Miniserver followed by polling only: degraded, and says why.
    let ms_port = free_port();
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/Smarteon-loxone-java-showroom.json"
    );
    let _ms = Kill(
        bin()
            .args([
                "sim",
                "--structure",
                fixture,
                "--listen",
                &format!("127.0.0.1:{ms_port}"),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", ms_port)).is_err() {
        assert!(Instant::now() < deadline, "sim did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let dir = std::env::temp_dir().join(format!("home-mcp-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("config.toml");
    std::fs::write(
        &cfg,
        "[miniserver]\nlive = \"polling\"\npoll_interval_secs = 1\n",
    )
    .unwrap();
    let port = free_port();
    let _server = Kill(
        bin()
            .args([
                "serve",
                "--config",
                cfg.to_str().unwrap(),
                "--listen",
                &format!("127.0.0.1:{port}"),
            ])
            .env("HOME_HOST", format!("127.0.0.1:{ms_port}"))
            .env("HOME_USER", "demo")
            .env("HOME_PASS", "demo")
            .env("HOME_DATA_DIR", dir.join("data"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let h = health_until(port, |v| v["miniserver"]["link"]["mode"] == "polling");
    assert_eq!(h["status"], "degraded", "{h}");
    assert!(h["reason"].as_str().unwrap().contains("polling"), "{h}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigterm_stops_cleanly_and_kills_the_tokens() {
    let port = free_port();
    let log = std::env::temp_dir().join(format!("home-mcp-sigterm-{}.log", std::process::id()));
    let mut child = bin()
        .args(["serve", "--demo", "--listen", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    health_until(port, |v| v["miniserver"]["link"]["mode"] == "websocket");
    let t = Instant::now();
    let st = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(t.elapsed() < Duration::from_secs(15), "still running");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    let text = std::fs::read_to_string(&log).unwrap();
    let _ = std::fs::remove_file(&log);
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

/// The whole set-up: `keys generate --role admin` writes the store that `serve` reads; without
/// the key a staging server answers 401, with it the call goes through.
#[test]
fn serve_reads_the_keys_the_keys_command_writes() {
    let dir = std::env::temp_dir().join(format!("home-mcp-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = dir.join("keys.toml");
    let o = bin()
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

    let ms_port = free_port();
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/Smarteon-loxone-java-showroom.json"
    );
    let _ms = Kill(
        bin()
            .args([
                "sim",
                "--structure",
                fixture,
                "--listen",
                &format!("127.0.0.1:{ms_port}"),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", ms_port)).is_err() {
        assert!(Instant::now() < deadline, "sim did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let port = free_port();
    let _server = Kill(
        bin()
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--key-store", store.to_str().unwrap()])
            .env("HOME_HOST", format!("127.0.0.1:{ms_port}"))
            .env("HOME_USER", "demo")
            .env("HOME_PASS", "demo")
            .env("HOME_DATA_DIR", dir.join("data"))
            .env("SECURITY_LEVEL", "staging")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    health_until(port, |v| v["status"].is_string());
    let call = |key: Option<&str>| -> String {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let body = r#"{"tool":"list_rooms"}"#;
        let auth = key
            .map(|k| format!("X-API-Key: {k}\r\n"))
            .unwrap_or_default();
        s.write_all(
            format!(
                "POST /tools/call HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    };
    let denied = call(None);
    assert!(denied.starts_with("HTTP/1.1 401"), "{denied}");
    assert!(denied.contains("INVALID_API_KEY"), "{denied}");
    let wrong = call(Some("homekey_operator_1_00000000000000000000000000000000"));
    assert!(wrong.starts_with("HTTP/1.1 401"), "{wrong}");
    assert!(
        !wrong.contains("00000000000000000000000000000000"),
        "the key is masked: {wrong}"
    );
    let ok = call(Some(&key));
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    assert!(
        ok.contains("X-RateLimit-Remaining") || ok.contains("x-ratelimit-remaining"),
        "{ok}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `stdio --demo --key-store store` with `HOME_STDIO_KEY=key`, feeding `lines`; the
/// output lines (JSON) and the exit status.
fn stdio_as(
    store: &std::path::Path,
    key: &str,
    lines: &[&str],
) -> (Vec<serde_json::Value>, Output) {
    let mut child = bin()
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
    let dir = std::env::temp_dir().join(format!("home-mcp-stdio-key-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = dir.join("keys.toml");
    let o = run(&[
        "keys",
        "generate",
        "--role",
        "monitor",
        "--name",
        "desktop",
        "--json",
        "--key-store",
        store.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let generated: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let key = generated["id"]
        .as_str()
        .or(generated["key"].as_str())
        .expect("the key")
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
    assert!(
        out[3]["id"].is_null() && out[3]["error"]["code"] == -32003,
        "batch refused whole"
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
    let _ = std::fs::remove_dir_all(&dir);
}

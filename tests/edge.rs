//! The HTTP edge from outside (issue 14, connections and requests): hostile connections
//! against the real `serve` binary, most under the packaged unit's `LimitNOFILE=1024`. Each
//! test checks that `/health` and an MCP client (unkeyed, development level on loopback) are
//! answered while the attack is open, and that the server is alive afterwards. Attackers
//! connect from other loopback addresses (127.0.0.2...) so that the per-client cap of the
//! legitimate client (127.0.0.1) is its own. Latencies are printed, never asserted.

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::mcp::McpHttp;
use crate::support::net::try_request;
use crate::support::server::{Miniserver, Served};
use crate::support::{wait_until, PATIENCE};

/// The packaged unit's `LimitNOFILE`.
const NOFILE: u32 = 1024;

/// A TCP connection to `addr` from the loopback address `127.0.0.{host}`.
fn connect_from(host: u8, addr: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    let local = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, host)), 0);
    socket.bind(&local.into())?;
    socket.connect_timeout(&addr.into(), PATIENCE)?;
    let stream: TcpStream = socket.into();
    stream.set_read_timeout(Some(PATIENCE))?;
    stream.set_write_timeout(Some(PATIENCE))?;
    Ok(stream)
}

/// `/health` answers 200 and an MCP client lists the rooms; prints how long each took.
fn answered(served: &Served, during: &str) {
    let t = Instant::now();
    wait_until(
        &format!("/health {during}"),
        PATIENCE,
        || match try_request::<&str>(served.addr, "GET", "/health", &[], "") {
            Ok(r) if r.status == 200 => Ok(()),
            other => Err(other.map(|r| r.status)),
        },
    );
    let health_ms = t.elapsed().as_secs_f64() * 1000.0;
    let t = Instant::now();
    let mut mcp = McpHttp::connect(served.addr, None);
    let rooms = mcp.ok("list_rooms", json!({}));
    assert!(rooms.to_string().contains("Küche"), "{rooms}");
    println!(
        "{during}: /health {health_ms:.1} ms, MCP initialize + list_rooms {:.1} ms",
        t.elapsed().as_secs_f64() * 1000.0
    );
}

/// Open descriptors and threads of process `pid`.
fn fds_and_threads(pid: u32) -> (usize, usize) {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0);
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let threads = status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    (fds, threads)
}

/// Whether the server closed `s` (EOF or reset; data is read and dropped).
fn closed_by_server(s: &TcpStream) -> bool {
    let mut s = s;
    s.set_nonblocking(true).ok();
    let mut buf = [0u8; 512];
    let closed = loop {
        match s.read(&mut buf) {
            Ok(0) => break true,
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::WouldBlock => break false,
            Err(_) => break true,
        }
    };
    s.set_nonblocking(false).ok();
    closed
}

/// Writes `head` (errors ignored: the server may close early) and reads the status code of
/// the answer, or `None` when the connection ends without one.
fn status_of(s: &mut TcpStream, head: &[u8]) -> Option<u16> {
    let _ = s.write_all(head);
    let mut raw = Vec::new();
    let mut buf = [0u8; 1024];
    while !raw.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&raw);
    text.strip_prefix("HTTP/1.1 ")
        .and_then(|t| t.get(..3))
        .and_then(|c| c.parse().ok())
}

#[test]
fn an_idle_connection_flood_beyond_the_cap_does_not_stop_the_server() {
    let ms = Miniserver::demo();
    let served = Served::start_limited(&ms, NOFILE);
    let (fds0, threads0) = fds_and_threads(served.pid());
    // 600 idle connections from 12 addresses (50 each, under the per-client cap of 64),
    // beyond the global cap of 384: the newest evict the ones idle the longest.
    let mut idle = Vec::new();
    for n in 0..600 {
        idle.push(connect_from(2 + (n % 12) as u8, served.addr).expect("connect"));
    }
    answered(&served, "during 600 idle connections");
    let (fds, threads) = fds_and_threads(served.pid());
    let closed = idle.iter().filter(|s| closed_by_server(s)).count();
    println!(
        "fds {fds0} -> {fds}, threads {threads0} -> {threads}; {closed} of 600 closed by the server"
    );
    assert!(fds < NOFILE as usize - 100, "{fds} descriptors open");
    assert!(closed >= 600 - 384, "only {closed} of 600 evicted");
    drop(idle);
    answered(&served, "after the flood");
}

#[test]
fn one_client_cannot_take_more_than_its_share_of_connections() {
    let ms = Miniserver::demo();
    let served = Served::start_limited_with(
        &ms,
        "[server]\nmax_connections_per_client = 8\nrequest_deadline_secs = 60\n",
        NOFILE,
    );
    // Idle connections beyond the share end the client's own oldest idle ones.
    let idle: Vec<TcpStream> = (0..20)
        .map(|_| connect_from(2, served.addr).expect("connect"))
        .collect();
    // The 20th is admitted after the 12 before it evicted their elders: ordering, not time.
    answered(&served, "with 20 idle connections from one client");
    let open = idle.iter().filter(|s| !closed_by_server(s)).count();
    println!("{open} of 20 idle connections from 127.0.0.2 still open");
    assert!(open <= 8, "{open} open");
    // Connections in the middle of a request are not evicted: beyond the share, 503. Each
    // asks for `100 Continue`: once it has it, the server is reading its body.
    let busy: Vec<TcpStream> = (0..8)
        .map(|_| {
            let mut s = connect_from(3, served.addr).expect("connect");
            let head = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n";
            assert_eq!(status_of(&mut s, head), Some(100));
            s
        })
        .collect();
    // The ninth sends nothing: a refusal closes at once, and data the server never read would
    // turn that close into a reset that can overtake the 503.
    let mut ninth = connect_from(3, served.addr).expect("connect");
    assert_eq!(status_of(&mut ninth, b""), Some(503));
    answered(&served, "with 8 half-sent requests from one client");
    drop(busy);
    answered(&served, "afterwards");
}

#[test]
fn oversized_request_heads_are_refused() {
    let ms = Miniserver::demo();
    let served = Served::start_limited(&ms, NOFILE);
    let line = format!(
        "GET /health?{} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        "a".repeat(20_000)
    );
    let mut many = String::from("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    for n in 0..1000 {
        many.push_str(&format!("X-H{n}: v\r\n"));
    }
    many.push_str("\r\n");
    let big = format!(
        "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: {}\r\n\r\n",
        "b".repeat(200_000)
    );
    for (what, head, want) in [
        ("request line of 20 KB", line, 414),
        ("1,000 headers", many, 431),
        ("a header of 200 KB", big, 431),
    ] {
        let mut s = connect_from(2, served.addr).expect("connect");
        let got = status_of(&mut s, head.as_bytes());
        println!("{what}: {got:?}");
        assert_eq!(got, Some(want), "{what}");
        answered(&served, &format!("after a {what}"));
    }
}

#[test]
fn bodies_declared_too_large_are_refused_at_once_and_leave_nothing_behind() {
    let ms = Miniserver::demo();
    let served = Served::start_limited(&ms, NOFILE);
    answered(&served, "before");
    let (fds0, threads0) = fds_and_threads(served.pid());
    let head = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 900000000000\r\n\r\n{}";
    let t = Instant::now();
    // 500 of them, 50 at a time held open until all 50 are answered.
    for round in 0..10 {
        let mut open: Vec<TcpStream> = (0..50)
            .map(|_| connect_from(2 + round, served.addr).expect("connect"))
            .collect();
        for s in &mut open {
            // Answered without any of the declared body: 413 before we send more.
            assert_eq!(status_of(s, head), Some(413));
        }
        if round == 5 {
            answered(&served, "with 50 refused 900 GB requests open");
        }
    }
    println!("500 x 413 in {:.0} ms", t.elapsed().as_secs_f64() * 1000.0);
    let after = wait_until(
        "threads and descriptors back near baseline",
        PATIENCE,
        || {
            let (fds, threads) = fds_and_threads(served.pid());
            if fds <= fds0 + 8 && threads <= threads0 + 8 {
                Ok((fds, threads))
            } else {
                Err((fds, threads))
            }
        },
    );
    println!("fds/threads {:?} -> {after:?}", (fds0, threads0));
    answered(&served, "after 500 refused 900 GB requests");
}

#[test]
fn slow_bodies_and_heads_cost_a_connection_not_a_worker_and_end_at_the_deadline() {
    let ms = Miniserver::demo();
    let served = Served::start_limited_with(&ms, "[server]\nrequest_deadline_secs = 3\n", NOFILE);
    // Four slow bodies (twice the two workers), a byte every 200 ms of 5,000 declared, and two
    // slow heads (a header line growing by a byte every 200 ms).
    let slow: Vec<_> = (0..6)
        .map(|n| {
            let addr = served.addr;
            std::thread::spawn(move || {
                let mut s = connect_from(2 + n, addr).expect("connect");
                let (what, head): (&str, &[u8]) = if n < 4 {
                    ("body", b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n")
                } else {
                    ("head", b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                };
                // Before the first byte: the server's deadline cannot start earlier.
                let t = Instant::now();
                s.write_all(head).unwrap();
                let mut sent = 0;
                while s.write_all(b"x").is_ok() && sent < 5000 {
                    sent += 1;
                    if closed_by_server(&s) {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
                (what, sent, t.elapsed())
            })
        })
        .collect();
    answered(&served, "with 4 slow bodies and 2 slow heads open");
    for h in slow {
        let (what, sent, took) = h.join().unwrap();
        println!(
            "slow {what} dropped after {sent} bytes, {:.1} s",
            took.as_secs_f64()
        );
        assert!(sent < 5000, "the whole slow {what} was taken");
        assert!(
            took >= Duration::from_secs(3),
            "slow {what} dropped before the deadline"
        );
    }
    answered(&served, "after the slow bodies and heads");
}

#[test]
fn ambiguous_framing_is_refused() {
    let ms = Miniserver::demo();
    let served = Served::start_limited(&ms, NOFILE);
    let cases: [(&str, &[u8]); 3] = [
        (
            "two Content-Length",
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nContent-Length: 40\r\n\r\n{}",
        ),
        (
            "Content-Length and Transfer-Encoding",
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        ),
        (
            "a Content-Length that is not a number",
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2x\r\n\r\n{}",
        ),
    ];
    for (what, head) in cases {
        let mut s = connect_from(2, served.addr).expect("connect");
        assert_eq!(status_of(&mut s, head), Some(400), "{what}");
    }
    answered(&served, "after ambiguous framing");
}

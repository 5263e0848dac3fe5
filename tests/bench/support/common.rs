// Shared by the benches (`include!("support/common.rs")`): free ports, the RSS of a process,
// a child process killed on drop, and a keep-alive GET against the simulated Miniserver.

/// HTTP Basic auth of the simulator's demo user (`demo:demo`).
#[allow(dead_code)]
const BASIC_DEMO: &str = "Basic ZGVtbzpkZW1v";

/// A free TCP port on loopback.
#[allow(dead_code)]
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Resident set size of process `pid` in KiB (`VmRSS` of `/proc/<pid>/status`; 0 elsewhere).
#[allow(dead_code)]
fn rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// A child process, killed and reaped when dropped.
#[allow(dead_code)]
struct Proc(std::process::Child);
impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A keep-alive GET with Basic auth on the simulator; returns the status (the body is read
/// and dropped).
#[allow(dead_code)]
fn get(
    reader: &mut std::io::BufReader<std::net::TcpStream>,
    writer: &mut std::net::TcpStream,
    path: &str,
) -> u16 {
    use std::io::{BufRead, Read, Write};
    let req =
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: {BASIC_DEMO}\r\n\r\n");
    writer.write_all(req.as_bytes()).unwrap();
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut len = 0usize;
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().unwrap();
            }
        }
    }
    let mut buf = vec![0; len];
    reader.read_exact(&mut buf).unwrap();
    status
}

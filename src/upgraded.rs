//! Timeouts on a connection tiny_http has handed over (`Request::upgrade`, for a WebSocket).
//!
//! The upgraded stream is a boxed `ReadWrite` that gives no access to its socket, yet a
//! WebSocket session needs a read timeout (to look at its outgoing queue while the client is
//! silent) and a write timeout (to drop a client that stopped reading). The socket is found
//! among the process's open descriptors by its peer address and local port. Used by the
//! dashboard's WebSocket and the simulator's. [`header`] reads a request's header (the
//! WebSocket handshake's, and every route's of the HTTP transport).

use std::net::SocketAddr;
use std::time::Duration;

/// Value of the first header called `name` (case-insensitive).
pub fn header<'a>(request: &'a tiny_http::Request, name: &str) -> Option<&'a str> {
    request
        .headers()
        .iter()
        .find(|h| h.field.as_str().as_str().eq_ignore_ascii_case(name))
        .map(|h| h.value.as_str())
}

/// Sets `read` and `write` timeouts on the accepted socket whose peer is `peer` and whose
/// local port is `local_port` (found through `/proc/self/fd` or `/dev/fd`). Returns whether
/// such a socket was found and both timeouts set; `false` on systems without either folder
/// (then reads block until the client sends something).
#[cfg(unix)]
pub fn set_timeouts(peer: SocketAddr, local_port: u16, read: Duration, write: Duration) -> bool {
    use std::os::fd::{BorrowedFd, RawFd};
    for dir in ["/proc/self/fd", "/dev/fd"] {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut found = false;
        for entry in entries.flatten() {
            let Some(fd) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<RawFd>().ok())
            else {
                continue;
            };
            if fd < 0 {
                continue;
            }
            // SAFETY: `fd` is only used for the duration of these calls. If another thread
            // closes it meanwhile, the calls fail with EBADF or reach whatever reuses the
            // number; the timeouts are only set when local port and peer match this
            // connection, whose socket stays open (the caller holds its stream).
            let fd = unsafe { BorrowedFd::borrow_raw(fd) };
            let sock = socket2::SockRef::from(&fd);
            let (Ok(p), Ok(l)) = (sock.peer_addr(), sock.local_addr()) else {
                continue;
            };
            if p.as_socket() == Some(peer) && l.as_socket().map(|a| a.port()) == Some(local_port) {
                found |= sock.set_read_timeout(Some(read)).is_ok()
                    && sock.set_write_timeout(Some(write)).is_ok();
            }
        }
        return found;
    }
    false
}

/// Without Unix descriptor folders nothing can be found.
#[cfg(not(unix))]
pub fn set_timeouts(
    _peer: SocketAddr,
    _local_port: u16,
    _read: Duration,
    _write: Duration,
) -> bool {
    false
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn finds_the_accepted_socket_by_peer_and_port() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let client = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (accepted, peer) = listener.accept().unwrap();
        let (read, write) = (Duration::from_millis(70), Duration::from_millis(90));
        assert!(set_timeouts(peer, port, read, write));
        let near = |d: Option<Duration>, want: Duration| {
            d.is_some_and(|d| d.abs_diff(want) < Duration::from_millis(5))
        };
        assert!(near(accepted.read_timeout().unwrap(), read));
        assert!(near(accepted.write_timeout().unwrap(), write));
        assert!(
            client.read_timeout().unwrap().is_none(),
            "the other end is untouched"
        );
        let nobody: SocketAddr = "127.0.0.1:1".parse().unwrap();
        assert!(
            !set_timeouts(nobody, port, read, write),
            "no such connection"
        );
    }
}

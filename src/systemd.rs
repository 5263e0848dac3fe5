//! `sd_notify` by hand (no crate): with `Type=notify`, systemd passes `NOTIFY_SOCKET` (a
//! filesystem path, or `@name` for the abstract namespace) and waits for `READY=1` before it
//! calls the service started. Outside systemd this does nothing.

use std::os::unix::net::UnixDatagram;

/// Sends `state` (e.g. `READY=1`, `STOPPING=1`, `STATUS=...`) to systemd; `Ok(false)` when
/// not run by systemd with a notify socket.
pub fn notify(state: &str) -> std::io::Result<bool> {
    let Some(socket) = std::env::var_os("NOTIFY_SOCKET") else {
        return Ok(false);
    };
    let socket = socket.to_string_lossy().into_owned();
    let dgram = UnixDatagram::unbound()?;
    if let Some(name) = socket.strip_prefix('@') {
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())?;
        dgram.send_to_addr(state.as_bytes(), &addr)?;
    } else {
        dgram.send_to(state.as_bytes(), &socket)?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    #[test]
    fn notify_reaches_a_socket_path() {
        let dir = std::env::temp_dir().join(format!("home-mcp-notify-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("notify.sock");
        let _ = std::fs::remove_file(&path);
        let server = std::os::unix::net::UnixDatagram::bind(&path).unwrap();
        // The variable is read from the process environment; this test is the only user.
        std::env::set_var("NOTIFY_SOCKET", &path);
        let sent = super::notify("READY=1");
        std::env::remove_var("NOTIFY_SOCKET");
        assert!(sent.unwrap());
        let mut buf = [0u8; 64];
        let n = server.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

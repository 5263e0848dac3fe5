//! `sd_notify` by hand (no crate): with `Type=notify`, systemd passes `NOTIFY_SOCKET` (a
//! filesystem path, or `@name` for the abstract namespace) and waits for `READY=1` before it
//! calls the service started. Outside systemd this does nothing. Also the unit's state
//! directory (`StateDirectory=home-mcp`): where systemd says it is ([`state_directory`]), and
//! whether this is the packaged binary on a system that has it ([`packaged`]).

use std::os::unix::net::UnixDatagram;
use std::path::Path;

/// The state directory of the Debian package's unit (`StateDirectory=home-mcp`).
pub const UNIT_STATE_DIRECTORY: &str = "/var/lib/home-mcp";

/// The state directory systemd passes in `STATE_DIRECTORY` (read through `env`): the first of
/// its `:`-separated list; `None` outside a unit with `StateDirectory=`.
pub fn state_directory(env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    env("STATE_DIRECTORY")
        .and_then(|d| d.split(':').next().map(str::to_string))
        .filter(|d| !d.trim().is_empty())
}

/// True for the packaged binary (`/usr/bin/home-mcp`) on a system where the unit's state
/// directory exists: then commands run by hand (`keys`, `serve`) default to the directory the
/// service uses.
pub fn packaged() -> bool {
    std::env::current_exe().is_ok_and(|p| p == Path::new("/usr/bin/home-mcp"))
        && Path::new(UNIT_STATE_DIRECTORY).is_dir()
}

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

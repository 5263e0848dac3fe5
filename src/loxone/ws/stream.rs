//! The byte stream under a Miniserver WebSocket: plain TCP for `ws://` (Gen 1 and local
//! Gen 2), TLS for `wss://` (Gen 2 over HTTPS, feature `tls`).
//!
//! TLS is rustls with the *ring* provider and the Mozilla roots of `webpki-roots`, the same
//! crates ureq uses for HTTPS, so `wss://` adds no crate to the tree. [`WsStream`] owns the
//! `TcpStream` either way, and timeouts are set on that socket ([`WsStream::set_timeout`]):
//! a TLS read or write that waits longer fails with `WouldBlock`/`TimedOut` exactly like a
//! plain one, and the rustls state survives it (the next call continues).
//!
//! Built without `tls`, only [`WsStream::Plain`] exists and `wss://` is refused with
//! [`WsError::Tls`] before any connection is made.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use super::WsError;

/// A connected stream: plain TCP or TLS over TCP. Read and Write go through TLS when it is
/// there.
pub enum WsStream {
    /// `ws://`: the socket itself.
    Plain(TcpStream),
    /// `wss://`: a rustls client session over the socket (handshake done).
    #[cfg(feature = "tls")]
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl WsStream {
    /// The TCP socket underneath (for timeouts, addresses, shutdown).
    pub fn tcp(&self) -> &TcpStream {
        match self {
            WsStream::Plain(s) => s,
            #[cfg(feature = "tls")]
            WsStream::Tls(s) => s.get_ref(),
        }
    }

    /// Sets the read and the write timeout of the socket (`None`: block). Errors: the OS
    /// refuses (e.g. a zero duration).
    pub fn set_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.tcp().set_read_timeout(timeout)?;
        self.tcp().set_write_timeout(timeout)
    }

    /// Whether the stream is encrypted (`wss://`).
    pub fn is_tls(&self) -> bool {
        !matches!(self, WsStream::Plain(_))
    }
}

impl Read for WsStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            WsStream::Plain(s) => s.read(buf),
            #[cfg(feature = "tls")]
            WsStream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for WsStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            WsStream::Plain(s) => s.write(buf),
            #[cfg(feature = "tls")]
            WsStream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            WsStream::Plain(s) => s.flush(),
            #[cfg(feature = "tls")]
            WsStream::Tls(s) => s.flush(),
        }
    }
}

/// Wraps `tcp` (timeouts already set) in TLS for `host` (a DNS name or an IP address; the
/// certificate must name it and chain to a Mozilla root) and completes the TLS handshake, so
/// the WebSocket handshake after it sees only HTTP errors. Errors: [`WsError::Tls`] (bad
/// certificate, the peer does not speak TLS, closed during the handshake), `Timeout` (the
/// socket's timeout passed), `Io`.
#[cfg(feature = "tls")]
pub(crate) fn tls(host: &str, mut tcp: TcpStream) -> Result<WsStream, WsError> {
    use std::io::ErrorKind;
    use std::sync::{Arc, OnceLock};

    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    let config = CONFIG
        .get_or_init(|| {
            let roots = rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            };
            rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .map(|b| Arc::new(b.with_root_certificates(roots).with_no_client_auth()))
            .map_err(|e| e.to_string())
        })
        .clone()
        .map_err(WsError::Tls)?;
    let name = rustls::pki_types::ServerName::try_from(host.to_string())
        .map_err(|e| WsError::Url(format!("{host}: not a TLS server name ({e})")))?;
    let mut conn =
        rustls::ClientConnection::new(config, name).map_err(|e| WsError::Tls(e.to_string()))?;
    while conn.is_handshaking() {
        if let Err(e) = conn.complete_io(&mut tcp) {
            return Err(match e.kind() {
                ErrorKind::WouldBlock | ErrorKind::TimedOut => WsError::Timeout,
                ErrorKind::InvalidData => WsError::Tls(e.to_string()),
                ErrorKind::UnexpectedEof => {
                    WsError::Tls("the server closed the connection during the TLS handshake".into())
                }
                _ => WsError::Io(e),
            });
        }
    }
    Ok(WsStream::Tls(Box::new(rustls::StreamOwned::new(conn, tcp))))
}

/// Without the `tls` feature there is no TLS: `wss://` is refused.
#[cfg(not(feature = "tls"))]
pub(crate) fn tls(host: &str, _tcp: TcpStream) -> Result<WsStream, WsError> {
    Err(tls_unavailable(host))
}

/// The error for `wss://` in a build without the `tls` feature.
pub(crate) fn tls_unavailable(host: &str) -> WsError {
    WsError::Tls(format!(
        "wss://{host}: this build has no TLS (build with the `tls` feature)"
    ))
}

//! A loopback HTTPS listener presenting a fixed certificate (`tests/fixtures/tls/`), for what
//! a client must do when a Miniserver's certificate does not verify: it completes or fails
//! the TLS handshake with each client and then closes the connection (no HTTP is served; the
//! product refuses the certificate before it would send a request). Rustls, as the product.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The self-signed certificate for `other.example` and its key (PEM).
pub const OTHER_HOST_CERT: &str = include_str!("../fixtures/tls/other-host.crt");
pub const OTHER_HOST_KEY: &str = include_str!("../fixtures/tls/other-host.key");

/// Starts the listener on a free loopback port with `cert_pem` and `key_pem`; it lives for
/// the rest of the test run (one thread, one connection at a time, 10 s per handshake).
pub fn https_listener(cert_pem: &str, key_pem: &str) -> SocketAddr {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
        .collect::<Result<_, _>>()
        .expect("a PEM certificate");
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).expect("a PEM private key");
    let config = Arc::new(
        rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .expect("a certificate and its key"),
    );
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut tcp) = stream else { continue };
            let _ = tcp.set_read_timeout(Some(Duration::from_secs(10)));
            let _ = tcp.set_write_timeout(Some(Duration::from_secs(10)));
            let Ok(mut tls) = rustls::ServerConnection::new(config.clone()) else {
                continue;
            };
            while tls.is_handshaking() {
                if tls.complete_io(&mut tcp).is_err() {
                    break;
                }
            }
        }
    });
    addr
}

use std::io::Result as IoResult;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr};

use crate::connection::Connection;
#[cfg(any(feature = "ssl-openssl", feature = "ssl-rustls"))]
use crate::ssl::SslStream;

pub(crate) enum Stream {
    Http(Connection),
    #[cfg(any(feature = "ssl-openssl", feature = "ssl-rustls"))]
    Https(SslStream),
}

impl Clone for Stream {
    fn clone(&self) -> Self {
        match self {
            Stream::Http(tcp_stream) => Stream::Http(tcp_stream.try_clone().unwrap()),
            #[cfg(any(feature = "ssl-openssl", feature = "ssl-rustls"))]
            Stream::Https(ssl_stream) => Stream::Https(ssl_stream.clone()),
        }
    }
}

impl From<Connection> for Stream {
    fn from(tcp_stream: Connection) -> Self {
        Stream::Http(tcp_stream)
    }
}

impl Stream {
    /// PATCH(limits): [`Clone::clone`] without the panic: duplicating a TCP socket needs a
    /// descriptor, and a server at its `RLIMIT_NOFILE` has none.
    fn try_clone(&self) -> IoResult<Self> {
        match self {
            Stream::Http(tcp_stream) => tcp_stream.try_clone().map(Stream::Http),
            #[cfg(any(feature = "ssl-openssl", feature = "ssl-rustls"))]
            Stream::Https(ssl_stream) => Ok(Stream::Https(ssl_stream.clone())),
        }
    }

    fn secure(&self) -> bool {
        match self {
            Stream::Http(_) => false,
            #[cfg(any(feature = "ssl-openssl", feature = "ssl-rustls"))]
            Stream::Https(_) => true,
        }
    }

    fn peer_addr(&mut self) -> IoResult<Option<SocketAddr>> {
        match self {
            Stream::Http(tcp_stream) => tcp_stream.peer_addr(),
            #[cfg(any(feature = "ssl-openssl", feature = "ssl-rustls"))]
            Stream::Https(ssl_stream) => ssl_stream.peer_addr(),
        }
    }

    fn shutdown(&mut self, how: Shutdown) -> IoResult<()> {
        match self {
            Stream::Http(tcp_stream) => tcp_stream.shutdown(how),
            #[cfg(any(feature = "ssl-openssl", feature = "ssl-rustls"))]
            Stream::Https(ssl_stream) => ssl_stream.shutdown(how),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> IoResult<usize> {
        match self {
            Stream::Http(tcp_stream) => tcp_stream.read(buf),
            #[cfg(any(feature = "ssl-openssl", feature = "ssl-rustls"))]
            Stream::Https(ssl_stream) => ssl_stream.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> IoResult<usize> {
        match self {
            Stream::Http(tcp_stream) => tcp_stream.write(buf),
            #[cfg(any(feature = "ssl-openssl", feature = "ssl-rustls"))]
            Stream::Https(ssl_stream) => ssl_stream.write(buf),
        }
    }

    fn flush(&mut self) -> IoResult<()> {
        match self {
            Stream::Http(tcp_stream) => tcp_stream.flush(),
            #[cfg(any(feature = "ssl-openssl", feature = "ssl-rustls"))]
            Stream::Https(ssl_stream) => ssl_stream.flush(),
        }
    }
}

pub struct RefinedTcpStream {
    stream: Stream,
    close_read: bool,
    close_write: bool,
    /// PATCH(limits): the request deadline of the connection (read side only).
    deadline: Option<std::sync::Arc<crate::limits::Deadline>>,
    /// PATCH(limits): the socket's own read timeout, restored between requests.
    idle_timeout: Option<std::time::Duration>,
    /// PATCH(limits): the read timeout was shortened for a deadline.
    shortened: bool,
}

impl RefinedTcpStream {
    /// PATCH(limits): an error instead of a panic when the socket cannot be duplicated (out
    /// of descriptors): the panic ended the accept thread, and with it the server.
    pub(crate) fn new<S>(stream: S) -> IoResult<(RefinedTcpStream, RefinedTcpStream)>
    where
        S: Into<Stream>,
    {
        let stream: Stream = stream.into();

        let (read, write) = (stream.try_clone()?, stream);

        let read = RefinedTcpStream {
            stream: read,
            close_read: true,
            close_write: false,
            deadline: None,
            idle_timeout: None,
            shortened: false,
        };

        let write = RefinedTcpStream {
            stream: write,
            close_read: false,
            close_write: true,
            deadline: None,
            idle_timeout: None,
            shortened: false,
        };

        Ok((read, write))
    }

    /// Returns true if this struct wraps around a secure connection.
    #[inline]
    pub(crate) fn secure(&self) -> bool {
        self.stream.secure()
    }

    /// PATCH(limits): reads of this (read) side honour `deadline`.
    pub(crate) fn set_deadline(&mut self, deadline: std::sync::Arc<crate::limits::Deadline>) {
        match &self.stream {
            Stream::Http(c) => {
                self.idle_timeout = c.read_timeout().ok().flatten();
                self.deadline = Some(deadline);
            }
            #[cfg(any(feature = "ssl-openssl", feature = "ssl-rustls"))]
            Stream::Https(_) => {}
        }
    }

    pub(crate) fn peer_addr(&mut self) -> IoResult<Option<SocketAddr>> {
        self.stream.peer_addr()
    }

    /// PATCH(limits): sends the end of the stream (FIN) now, for a lingering close.
    pub(crate) fn shutdown_write(&mut self) {
        self.stream.shutdown(Shutdown::Write).ok();
    }
}

impl Drop for RefinedTcpStream {
    fn drop(&mut self) {
        if self.close_read {
            self.stream.shutdown(Shutdown::Read).ok();
        }

        if self.close_write {
            self.stream.shutdown(Shutdown::Write).ok();
        }
    }
}

impl Read for RefinedTcpStream {
    fn read(&mut self, buf: &mut [u8]) -> IoResult<usize> {
        // PATCH(limits): a read never waits past the request deadline.
        let at = self.deadline.as_ref().and_then(|d| d.get());
        let conn = match &mut self.stream {
            Stream::Http(conn) => conn,
            #[cfg(any(feature = "ssl-openssl", feature = "ssl-rustls"))]
            other => return other.read(buf),
        };
        match at {
            None => {
                if self.shortened {
                    conn.set_read_timeout(self.idle_timeout)?;
                    self.shortened = false;
                }
                conn.read(buf)
            }
            Some(at) => {
                let timed_out = || {
                    std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "request deadline exceeded",
                    )
                };
                let left = at.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    return Err(timed_out());
                }
                let wait = self.idle_timeout.map_or(left, |idle| idle.min(left));
                conn.set_read_timeout(Some(wait))?;
                self.shortened = true;
                match conn.read(buf) {
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) && std::time::Instant::now() >= at =>
                    {
                        Err(timed_out())
                    }
                    other => other,
                }
            }
        }
    }
}

impl Write for RefinedTcpStream {
    fn write(&mut self, buf: &[u8]) -> IoResult<usize> {
        self.stream.write(buf)
    }

    fn flush(&mut self) -> IoResult<()> {
        self.stream.flush()
    }
}

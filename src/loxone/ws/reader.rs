//! A blocking reader of Miniserver WebSocket messages over `tungstenite::WebSocket<S>`.
//!
//! The Miniserver sends each answer as two WebSocket messages: an 8-byte binary header and
//! then the payload (none for keepalive and out-of-service). [`Reader::next_message`] reads
//! until it has a complete pair and returns it as an [`Incoming`]:
//!
//! 1. an 8-byte binary message starting with `0x03` is a header; an *estimated* one (any
//!    non-zero info byte) is remembered and the next header replaces it, or, if the next
//!    message is not a header, that message is taken as its payload (lxcommunicator does the
//!    same);
//! 2. after an exact header, ids 5 and 6 return at once; a zero length returns an empty
//!    answer; otherwise the next message is the payload: a text frame is a [`Incoming::Text`]
//!    (the `LL` JSON answer, or a text file such as `LoxAPP3.json`), a binary frame after id 1
//!    a [`Incoming::File`], after ids 2/3/4/7 the decoded [`Incoming::Events`];
//! 3. pings and pongs are skipped (tungstenite answers pings on the next read or write).
//!
//! Timeouts: the reader never waits longer than the stream's read timeout (set it on the
//! socket; [`Reader::connect`] does); a timeout is [`WsError::Timeout`] and keeps the
//! half-read state, so calling again continues where it stopped. A dropped connection is
//! [`Incoming::Closed`]`(None)`, a close frame `Closed(Some(code))`; after either, every call
//! is [`WsError::Closed`].

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use log::debug;
use tungstenite::client::IntoClientRequest;
use tungstenite::handshake::HandshakeError;
use tungstenite::http::HeaderValue;
use tungstenite::{Message, WebSocket};

use super::frame::{Header, Identifier, HEADER_LEN, HEADER_MAGIC};
use super::stream::{self, WsStream};
use super::tables::{decode_table, StateEvent};
use super::{WsError, SUB_PROTOCOL};

/// One complete message from the Miniserver.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A text answer (header id 0: `{"LL":{"control":"jdev/...","value":...,"code":"200"}}`)
    /// or a text file (id 1, e.g. `LoxAPP3.json`). Empty for a zero-length answer.
    Text(String),
    /// A binary file (id 1, e.g. an image).
    File(Vec<u8>),
    /// Decoded state events of one table (ids 2, 3, 4, 7); empty for a zero-length table.
    Events(Vec<StateEvent>),
    /// Answer to `keepalive` (id 6).
    Keepalive,
    /// The Miniserver goes out of service (id 5, firmware update); the socket closes next.
    OutOfService,
    /// The connection ended: `Some(code)` from a close frame (4003 blocked, 4007 firmware
    /// update, ... see [`super::close_code`]), `None` when it was dropped without one.
    Closed(Option<u16>),
}

/// Where the reader is between header and payload.
#[derive(Debug, Clone, Copy)]
enum Pending {
    /// Expecting a header.
    Header,
    /// An estimated header came; expecting the exact header (or the payload).
    Estimated(Header),
    /// An exact header came; expecting its payload.
    Payload(Header),
}

/// Reads typed messages off a Miniserver WebSocket and sends commands on it.
pub struct Reader<S> {
    ws: WebSocket<S>,
    pending: Pending,
    closed: bool,
}

impl<S: Read + Write> Reader<S> {
    /// Wraps an open WebSocket (client role, handshake done).
    pub fn new(ws: WebSocket<S>) -> Self {
        Reader {
            ws,
            pending: Pending::Header,
            closed: false,
        }
    }

    /// Sends one command as a text frame (`jdev/sps/enablebinstatusupdate`, `keepalive`,
    /// `jdev/sps/io/{uuid}/on`, ...). Errors: [`WsError::Closed`] once the session ended,
    /// [`WsError::Timeout`] when the write timeout passed, else `Io`/`Protocol`.
    pub fn send_text(&mut self, command: &str) -> Result<(), WsError> {
        if self.closed {
            return Err(WsError::Closed);
        }
        self.ws
            .send(Message::text(command))
            .map_err(|e| self.map_err(e))
    }

    /// Sends a close frame with code 1000 and flushes it; the peer's close arrives as
    /// [`Incoming::Closed`]. Errors as [`Reader::send_text`].
    pub fn close(&mut self) -> Result<(), WsError> {
        if self.closed {
            return Err(WsError::Closed);
        }
        self.ws.close(None).map_err(|e| self.map_err(e))?;
        self.ws.flush().map_err(|e| self.map_err(e))
    }

    /// Blocks (at most the stream's read timeout) until the next complete message. Errors:
    /// [`WsError::Timeout`] (call again), [`WsError::Closed`] after `Closed` was returned,
    /// `Frame`/`Table`/`Unexpected` for input that breaks the protocol (the session should be
    /// dropped), `Io`/`Protocol` from the socket.
    pub fn next_message(&mut self) -> Result<Incoming, WsError> {
        if self.closed {
            return Err(WsError::Closed);
        }
        loop {
            let msg = match self.ws.read() {
                Ok(m) => m,
                Err(e) => {
                    return match self.map_err(e) {
                        WsError::Closed => Ok(Incoming::Closed(None)),
                        other => Err(other),
                    }
                }
            };
            match msg {
                Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => continue,
                Message::Close(frame) => {
                    self.closed = true;
                    self.pending = Pending::Header;
                    return Ok(Incoming::Closed(frame.map(|f| u16::from(f.code))));
                }
                Message::Text(t) => {
                    let pending = std::mem::replace(&mut self.pending, Pending::Header);
                    return match pending {
                        Pending::Payload(h) if is_table(h.id) => Err(WsError::Unexpected(format!(
                            "text frame after a {:?} header",
                            h.id
                        ))),
                        Pending::Header => {
                            debug!("loxone ws: text frame without header");
                            Ok(Incoming::Text(t.as_str().to_string()))
                        }
                        _ => Ok(Incoming::Text(t.as_str().to_string())),
                    };
                }
                Message::Binary(b) => {
                    if let Some(m) = self.binary(&b)? {
                        return Ok(m);
                    }
                }
            }
        }
    }

    /// Handles one binary message; `None` when more messages are needed.
    fn binary(&mut self, b: &[u8]) -> Result<Option<Incoming>, WsError> {
        let looks_like_header = b.len() == HEADER_LEN && b[0] == HEADER_MAGIC;
        match self.pending {
            Pending::Payload(h) => {
                self.pending = Pending::Header;
                payload(h, b).map(Some)
            }
            Pending::Estimated(h) if !looks_like_header => {
                self.pending = Pending::Header;
                payload(h, b).map(Some)
            }
            Pending::Header if !looks_like_header => Err(WsError::Unexpected(format!(
                "binary frame of {} bytes without a header",
                b.len()
            ))),
            Pending::Header | Pending::Estimated(_) => {
                let h = Header::parse(b)?;
                if h.is_estimated() {
                    self.pending = Pending::Estimated(h);
                    return Ok(None);
                }
                self.pending = Pending::Header;
                Ok(match h.id {
                    Identifier::Keepalive => Some(Incoming::Keepalive),
                    Identifier::OutOfService => Some(Incoming::OutOfService),
                    _ if h.length == 0 => Some(empty(h.id)),
                    _ => {
                        self.pending = Pending::Payload(h);
                        None
                    }
                })
            }
        }
    }

    /// Maps a tungstenite error; marks the reader closed when the peer is gone.
    fn map_err(&mut self, e: tungstenite::Error) -> WsError {
        use tungstenite::error::ProtocolError;
        use tungstenite::Error as E;
        let gone = match &e {
            E::ConnectionClosed | E::AlreadyClosed => true,
            E::Protocol(ProtocolError::ResetWithoutClosingHandshake) => true,
            E::Io(io) => matches!(
                io.kind(),
                ErrorKind::UnexpectedEof
                    | ErrorKind::ConnectionReset
                    | ErrorKind::ConnectionAborted
                    | ErrorKind::BrokenPipe
            ),
            _ => false,
        };
        if gone {
            self.closed = true;
            return WsError::Closed;
        }
        match e {
            E::Io(io) if matches!(io.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                WsError::Timeout
            }
            E::Io(io) => WsError::Io(io),
            other => WsError::Protocol(other.to_string()),
        }
    }

    /// The WebSocket.
    pub fn get_ref(&self) -> &WebSocket<S> {
        &self.ws
    }

    /// Whether the session ended (a `Closed` was returned or a send found the peer gone).
    pub fn is_closed(&self) -> bool {
        self.closed
    }
}

impl Reader<WsStream> {
    /// Opens `ws://host[:port]/ws/rfc6455` (plain TCP, port 80 by default) or
    /// `wss://host[:port]/ws/rfc6455` (TLS, port 443 by default; feature `tls`) with
    /// `Sec-WebSocket-Protocol: remotecontrol`. `timeout` bounds the TCP connect, the TLS
    /// handshake and the WebSocket handshake, and stays the socket's read and write timeout
    /// (so [`Reader::next_message`] returns [`WsError::Timeout`] after it; change it with
    /// [`WsStream::set_timeout`] on `get_ref().get_ref()`).
    /// Errors: `Url` (neither `ws://` nor `wss://`, no host), `Tls` (`wss://` in a build
    /// without `tls`, a certificate that does not verify, a peer that does not speak TLS),
    /// `Refused(status)` when the server answers the upgrade with an HTTP error, `Timeout`,
    /// `Io`, `Protocol`.
    pub fn connect(url: &str, timeout: Duration) -> Result<Self, WsError> {
        let mut req = url
            .into_client_request()
            .map_err(|e| WsError::Url(e.to_string()))?;
        let secure = match req.uri().scheme_str() {
            Some("ws") => false,
            Some("wss") => true,
            _ => return Err(WsError::Url(format!("{url}: only ws:// and wss://"))),
        };
        let host = req
            .uri()
            .host()
            .ok_or_else(|| WsError::Url(format!("{url}: no host")))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        if secure && !cfg!(feature = "tls") {
            // Refused before any connection is made.
            return Err(stream::tls_unavailable(&host));
        }
        let port = req
            .uri()
            .port_u16()
            .unwrap_or(if secure { 443 } else { 80 });
        req.headers_mut().insert(
            "Sec-WebSocket-Protocol",
            HeaderValue::from_static(SUB_PROTOCOL),
        );
        let addrs = (host.as_str(), port)
            .to_socket_addrs()
            .map_err(WsError::Io)?;
        let mut last = None;
        let mut stream = None;
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, timeout) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let stream = match (stream, last) {
            (Some(s), _) => s,
            (None, Some(e)) if e.kind() == ErrorKind::TimedOut => return Err(WsError::Timeout),
            (None, Some(e)) => return Err(WsError::Io(e)),
            (None, None) => return Err(WsError::Url(format!("{url}: host has no address"))),
        };
        stream
            .set_read_timeout(Some(timeout))
            .map_err(WsError::Io)?;
        stream
            .set_write_timeout(Some(timeout))
            .map_err(WsError::Io)?;
        stream.set_nodelay(true).map_err(WsError::Io)?;
        let stream = if secure {
            stream::tls(&host, stream)?
        } else {
            WsStream::Plain(stream)
        };
        match tungstenite::client(req, stream) {
            Ok((ws, _)) => Ok(Reader::new(ws)),
            Err(HandshakeError::Interrupted(_)) => Err(WsError::Timeout),
            Err(HandshakeError::Failure(tungstenite::Error::Http(resp))) => {
                Err(WsError::Refused(resp.status().as_u16()))
            }
            Err(HandshakeError::Failure(tungstenite::Error::Io(e)))
                if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
            {
                Err(WsError::Timeout)
            }
            Err(HandshakeError::Failure(tungstenite::Error::Io(e))) => Err(WsError::Io(e)),
            Err(HandshakeError::Failure(e)) => Err(WsError::Protocol(e.to_string())),
        }
    }
}

fn is_table(id: Identifier) -> bool {
    matches!(
        id,
        Identifier::ValueTable
            | Identifier::TextTable
            | Identifier::DaytimerTable
            | Identifier::WeatherTable
    )
}

/// The message for a zero-length payload.
fn empty(id: Identifier) -> Incoming {
    match id {
        Identifier::BinaryFile => Incoming::File(Vec::new()),
        id if is_table(id) => Incoming::Events(Vec::new()),
        _ => Incoming::Text(String::new()),
    }
}

/// The message for a binary payload after header `h`.
fn payload(h: Header, b: &[u8]) -> Result<Incoming, WsError> {
    if h.length as usize != b.len() && !h.is_estimated() {
        debug!(
            "loxone ws: {:?} header announced {} bytes, frame has {}",
            h.id,
            h.length,
            b.len()
        );
    }
    match h.id {
        Identifier::Text => Ok(Incoming::Text(String::from_utf8_lossy(b).into_owned())),
        Identifier::BinaryFile => Ok(Incoming::File(b.to_vec())),
        id => Ok(Incoming::Events(decode_table(id, b)?)),
    }
}

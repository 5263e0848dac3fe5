//! The Miniserver's WebSocket protocol (loxone-protocol.md §4): the wire format and a
//! blocking reader, shared by the client link and the simulator.
//!
//! A session upgrades `ws://{host}:{port}/ws/rfc6455` ([`WS_PATH`]) with the sub-protocol
//! `remotecontrol` ([`SUB_PROTOCOL`]). Commands go out as text frames (`jdev/...`,
//! `keepalive`); every answer is an 8-byte binary [`frame::Header`] followed (for most
//! identifiers) by one payload frame: a text frame with the `LL` JSON answer, or a binary
//! frame with an event table ([`tables`]). [`reader::Reader`] pairs headers with payloads
//! and yields typed [`reader::Incoming`] messages.
//!
//! Layout: [`frame`] (header parse/encode, the "estimated" flag), [`tables`] (value, text,
//! daytimer and weather tables, Loxone's UUID byte order), [`reader`] (the blocking reader and
//! connect), [`stream`] (plain TCP for `ws://`, rustls for `wss://` behind the `tls` feature). Authentication (key exchange, token) lives elsewhere; this module only
//! moves frames.

pub mod frame;
pub mod login;
pub mod reader;
pub mod stream;
pub mod tables;

use std::fmt;

pub use frame::{FrameError, Header, Identifier};
pub use reader::{Incoming, Reader};
pub use stream::WsStream;
pub use tables::{DaytimerEntry, EventValue, StateEvent, TableError, WeatherEntry};

/// Path of the Miniserver's WebSocket endpoint.
pub const WS_PATH: &str = "/ws/rfc6455";
/// The `Sec-WebSocket-Protocol` a Miniserver expects.
pub const SUB_PROTOCOL: &str = "remotecontrol";

/// Close codes of the Miniserver (loxone-protocol.md §4.5).
pub mod close_code {
    /// Too many failed logins: the IP is blocked; sent right after opening.
    pub const BLOCKED: u16 = 4003;
    /// Firmware update.
    pub const FIRMWARE_UPDATE: u16 = 4007;
    /// No event slots left (31 clients receive events at most).
    pub const NO_EVENT_SLOTS: u16 = 4008;
}

/// Why a WebSocket operation failed.
#[derive(Debug)]
pub enum WsError {
    /// The stream's read timeout passed with no complete message. Nothing is lost: call
    /// [`Reader::next_message`] again.
    Timeout,
    /// The URL is not `ws://` or `wss://host[:port]/path` (carries why).
    Url(String),
    /// TLS failed for `wss://`: the certificate does not verify, the peer does not speak TLS,
    /// or this build has no TLS (feature `tls` off). Carries rustls' reason.
    Tls(String),
    /// The server answered the upgrade with this HTTP status instead of 101 (e.g. 403 while
    /// the IP is locked out).
    Refused(u16),
    /// A socket error other than a timeout or a dropped connection.
    Io(std::io::Error),
    /// A WebSocket protocol violation (bad framing, sub-protocol missing, ...).
    Protocol(String),
    /// A binary message that should have been a header is not one.
    Frame(FrameError),
    /// An event table could not be decoded.
    Table(TableError),
    /// A frame the header sequence does not allow (e.g. a binary frame with no header before
    /// it, or a text frame after a table header).
    Unexpected(String),
    /// The session is closed ([`Incoming::Closed`] was already returned, or sending failed
    /// because the peer went away).
    Closed,
}

impl fmt::Display for WsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WsError::Timeout => write!(f, "timed out waiting for the Miniserver"),
            WsError::Url(e) => write!(f, "bad WebSocket URL: {e}"),
            WsError::Tls(e) => write!(f, "WebSocket TLS: {e}"),
            WsError::Refused(s) => write!(f, "WebSocket upgrade refused with HTTP {s}"),
            WsError::Io(e) => write!(f, "WebSocket I/O: {e}"),
            WsError::Protocol(e) => write!(f, "WebSocket protocol: {e}"),
            WsError::Frame(e) => write!(f, "Loxone header: {e}"),
            WsError::Table(e) => write!(f, "Loxone event table: {e}"),
            WsError::Unexpected(e) => write!(f, "unexpected frame: {e}"),
            WsError::Closed => write!(f, "WebSocket closed"),
        }
    }
}

impl std::error::Error for WsError {}

impl From<FrameError> for WsError {
    fn from(e: FrameError) -> Self {
        WsError::Frame(e)
    }
}

impl From<TableError> for WsError {
    fn from(e: TableError) -> Self {
        WsError::Table(e)
    }
}

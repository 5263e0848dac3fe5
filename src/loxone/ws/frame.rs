//! The 8-byte binary header the Miniserver sends before every WebSocket payload
//! (loxone-protocol.md §4.2).
//!
//! ```text
//! byte 0    0x03 (always)
//! byte 1    identifier: 0 text, 1 binary file, 2 value table, 3 text table, 4 daytimer table,
//!           5 out-of-service, 6 keepalive answer, 7 weather table
//! byte 2    info flags: "estimated" (the length is a guess, an exact header follows)
//! byte 3    reserved
//! bytes 4-7 payload length in bytes, u32 little-endian
//! ```
//!
//! Which bit of byte 2 means "estimated" is disputed: the official lxcommunicator and PyLoxone
//! read `0x80`, loxone-java and openHAB `0x01`. [`Header::parse`] therefore treats *any*
//! non-zero info byte as estimated and keeps the raw byte in [`Header::info`]; the reader
//! then takes the next header as the exact one. [`Header::encode`] writes what it is given;
//! [`Header::estimated`] builds one with `0x80`, the simulator's choice when it tests them.

use std::fmt;

/// First byte of every header.
pub const HEADER_MAGIC: u8 = 0x03;
/// Size of a header in bytes.
pub const HEADER_LEN: usize = 8;
/// Info byte of an estimated header as [`Header::estimated`] writes it (lxcommunicator's bit).
pub const ESTIMATED_FLAG: u8 = 0x80;

/// What the payload after a header is (byte 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Identifier {
    /// 0: a text message follows (an `LL` JSON answer), as a WebSocket text frame.
    Text,
    /// 1: a file follows (binary frame, or a text frame for text files such as LoxAPP3.json).
    BinaryFile,
    /// 2: a table of value events (24 bytes each).
    ValueTable,
    /// 3: a table of text events.
    TextTable,
    /// 4: a table of daytimer events.
    DaytimerTable,
    /// 5: the Miniserver goes out of service (firmware update); no payload, the socket closes.
    OutOfService,
    /// 6: answer to `keepalive`; no payload.
    Keepalive,
    /// 7: a table of weather events.
    WeatherTable,
}

impl Identifier {
    /// The identifier for byte 1, or `None` for values above 7.
    pub fn from_byte(b: u8) -> Option<Identifier> {
        Some(match b {
            0 => Identifier::Text,
            1 => Identifier::BinaryFile,
            2 => Identifier::ValueTable,
            3 => Identifier::TextTable,
            4 => Identifier::DaytimerTable,
            5 => Identifier::OutOfService,
            6 => Identifier::Keepalive,
            7 => Identifier::WeatherTable,
            _ => return None,
        })
    }

    /// Byte 1 of the header.
    pub fn byte(self) -> u8 {
        match self {
            Identifier::Text => 0,
            Identifier::BinaryFile => 1,
            Identifier::ValueTable => 2,
            Identifier::TextTable => 3,
            Identifier::DaytimerTable => 4,
            Identifier::OutOfService => 5,
            Identifier::Keepalive => 6,
            Identifier::WeatherTable => 7,
        }
    }

    /// Whether a payload frame follows this header (all but out-of-service and keepalive).
    pub fn has_payload(self) -> bool {
        !matches!(self, Identifier::OutOfService | Identifier::Keepalive)
    }
}

/// A parsed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// What follows.
    pub id: Identifier,
    /// Raw info byte (byte 2); non-zero means the length is an estimate.
    pub info: u8,
    /// Payload length in bytes (exact unless [`Header::is_estimated`]).
    pub length: u32,
}

/// Why 8 bytes are not a header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// The message is not 8 bytes long (carries the length seen).
    Length(usize),
    /// Byte 0 is not `0x03` (carries the byte seen).
    Magic(u8),
    /// Byte 1 is not an identifier 0..=7 (carries the byte seen).
    Identifier(u8),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Length(n) => write!(f, "header must be 8 bytes, got {n}"),
            FrameError::Magic(b) => write!(f, "header must start with 0x03, got {b:#04x}"),
            FrameError::Identifier(b) => write!(f, "unknown header identifier {b}"),
        }
    }
}

impl std::error::Error for FrameError {}

impl Header {
    /// An exact header (info byte 0).
    pub fn new(id: Identifier, length: u32) -> Header {
        Header {
            id,
            info: 0,
            length,
        }
    }

    /// An estimated header (info byte [`ESTIMATED_FLAG`]); an exact one must follow.
    pub fn estimated(id: Identifier, length: u32) -> Header {
        Header {
            id,
            info: ESTIMATED_FLAG,
            length,
        }
    }

    /// Whether the length is only an estimate: any non-zero info byte (`0x80` per
    /// lxcommunicator/PyLoxone, `0x01` per loxone-java/openHAB).
    pub fn is_estimated(&self) -> bool {
        self.info != 0
    }

    /// Parses exactly 8 bytes. Never panics; see [`FrameError`] for what is refused.
    pub fn parse(bytes: &[u8]) -> Result<Header, FrameError> {
        let b: &[u8; HEADER_LEN] = bytes
            .try_into()
            .map_err(|_| FrameError::Length(bytes.len()))?;
        if b[0] != HEADER_MAGIC {
            return Err(FrameError::Magic(b[0]));
        }
        let id = Identifier::from_byte(b[1]).ok_or(FrameError::Identifier(b[1]))?;
        Ok(Header {
            id,
            info: b[2],
            length: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        })
    }

    /// The 8 bytes of this header (byte 3, reserved, is 0).
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let l = self.length.to_le_bytes();
        [
            HEADER_MAGIC,
            self.id.byte(),
            self.info,
            0,
            l[0],
            l[1],
            l[2],
            l[3],
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_identifier() {
        for b in 0..=7u8 {
            let id = Identifier::from_byte(b).unwrap();
            let h = Header::new(id, 0x0102_0304);
            let bytes = h.encode();
            assert_eq!(bytes, [3, b, 0, 0, 4, 3, 2, 1]);
            assert_eq!(Header::parse(&bytes), Ok(h));
        }
        assert_eq!(Identifier::from_byte(8), None);
    }
}

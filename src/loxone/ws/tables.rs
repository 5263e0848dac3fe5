//! The Miniserver's binary event tables (loxone-protocol.md §4.3), decoded.
//!
//! One WebSocket binary frame holds a whole table of one kind, entries back to back, all
//! little-endian:
//!
//! | header id | entry |
//! |---|---|
//! | 2 value   | `uuid[16] value:f64` (24 bytes) |
//! | 3 text    | `uuid[16] icon[16] len:u32 text[len]` + zero padding to a multiple of 4 |
//! | 4 daytimer| `uuid[16] default:f64 n:i32` + n × `mode:i32 from:i32 to:i32 needActivate:i32 value:f64` |
//! | 7 weather | `uuid[16] lastUpdate:u32 n:i32` + n × (5 × i32, 6 × f64) (68 bytes) |
//!
//! UUIDs use Loxone's byte order (§4.4): `Data1` u32 LE, `Data2` u16 LE, `Data3` u16 LE, then
//! 8 bytes as they are; the text form is `%08x-%04x-%04x-%016x` (four groups, lowercase), the
//! form the structure file uses. [`uuid_from_bytes`] converts (the simulator's
//! `crate::sim::tables` encodes).
//!
//! Decoders never panic: a truncated entry or a negative count is a [`TableError`] naming the
//! byte offset of the entry that could not be read (so a caller can keep the entries before
//! it by decoding `&bytes[..offset]`). Texts that are not valid UTF-8 are decoded lossily
//! (one bad text must not cost the whole table).

use std::fmt;

use super::frame::Identifier;

/// A value of one state, as the event tables carry it.
#[derive(Debug, Clone, PartialEq)]
pub enum EventValue {
    /// Value table (id 2): a number (unit as the state defines it: 0..1 for blind positions,
    /// °C for temperatures, ...).
    Number(f64),
    /// Text table (id 3): UTF-8 text (often JSON) and the icon UUID (all zeros,
    /// `00000000-0000-0000-0000000000000000`, when there is none).
    Text { text: String, icon: String },
    /// Daytimer table (id 4).
    Daytimer {
        /// Value when no entry is active.
        default_value: f64,
        entries: Vec<DaytimerEntry>,
    },
    /// Weather table (id 7).
    Weather {
        /// Last update, seconds since 2009-01-01 00:00 (Loxone epoch).
        last_update: u32,
        entries: Vec<WeatherEntry>,
    },
}

/// One switching period of a daytimer (24 bytes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DaytimerEntry {
    /// Operating mode the entry applies to.
    pub mode: i32,
    /// Start, minutes since midnight.
    pub from: i32,
    /// End, minutes since midnight.
    pub to: i32,
    /// Whether the entry needs an activation trigger (0/1).
    pub need_activate: i32,
    /// Value during the period.
    pub value: f64,
}

/// One forecast hour of a weather table (68 bytes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WeatherEntry {
    /// Hours since 2009-01-01 (Loxone epoch) per the documentation.
    pub timestamp: i32,
    pub weather_type: i32,
    /// Degrees.
    pub wind_direction: i32,
    /// W/m².
    pub solar_radiation: i32,
    /// Percent.
    pub relative_humidity: i32,
    /// °C.
    pub temperature: f64,
    /// °C.
    pub perceived_temperature: f64,
    /// °C.
    pub dew_point: f64,
    /// mm.
    pub precipitation: f64,
    /// km/h.
    pub wind_speed: f64,
    /// hPa.
    pub barometric_pressure: f64,
}

/// One state change: the state's UUID (four-group lowercase form) and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct StateEvent {
    pub uuid: String,
    pub value: EventValue,
}

impl StateEvent {
    /// A value-table event.
    pub fn number(uuid: impl Into<String>, value: f64) -> StateEvent {
        StateEvent {
            uuid: uuid.into(),
            value: EventValue::Number(value),
        }
    }

    /// A text-table event without icon.
    pub fn text(uuid: impl Into<String>, text: impl Into<String>) -> StateEvent {
        StateEvent {
            uuid: uuid.into(),
            value: EventValue::Text {
                text: text.into(),
                icon: NULL_UUID.into(),
            },
        }
    }
}

/// The all-zero UUID, as the text table carries "no icon".
pub const NULL_UUID: &str = "00000000-0000-0000-0000000000000000";

/// Why a table could not be decoded or encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableError {
    /// An entry starting at byte `offset` needs `needed` bytes but only `available` remain.
    Truncated {
        offset: usize,
        needed: usize,
        available: usize,
    },
    /// A daytimer or weather entry at `offset` declares a negative entry count.
    NegativeCount { offset: usize, count: i32 },
    /// The identifier is not a table (0, 1, 5, 6).
    NotATable(Identifier),
    /// Encoding: a UUID string is not 32 hex digits in Loxone's form (carries the string).
    BadUuid(String),
    /// Encoding: an event's value is of another kind than the table (carries the UUID).
    WrongKind(String),
    /// Encoding: a text longer than `u32::MAX` bytes or a count above `i32::MAX`.
    TooLong(String),
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TableError::Truncated {
                offset,
                needed,
                available,
            } => write!(
                f,
                "entry at byte {offset} needs {needed} bytes, {available} remain"
            ),
            TableError::NegativeCount { offset, count } => {
                write!(f, "entry at byte {offset} has a negative count {count}")
            }
            TableError::NotATable(id) => write!(f, "identifier {id:?} is not an event table"),
            TableError::BadUuid(s) => write!(f, "not a Loxone UUID: {s:?}"),
            TableError::WrongKind(u) => write!(f, "event {u} does not belong in this table"),
            TableError::TooLong(u) => write!(f, "event {u} is too long to encode"),
        }
    }
}

impl std::error::Error for TableError {}

/// Text form of 16 binary UUID bytes: `Data1` u32 LE, `Data2` u16 LE, `Data3` u16 LE, then
/// `Data4` as is, printed `%08x-%04x-%04x-` + 16 hex digits (no fourth hyphen). Example:
/// `64 9a 86 0f 00 02 9b 0a ff ff d4 c7 5d ba f5 3c` → `0f869a64-0200-0a9b-ffffd4c75dbaf53c`.
pub fn uuid_from_bytes(b: &[u8; 16]) -> String {
    let d1 = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let d2 = u16::from_le_bytes([b[4], b[5]]);
    let d3 = u16::from_le_bytes([b[6], b[7]]);
    let mut s = format!("{d1:08x}-{d2:04x}-{d3:04x}-");
    for x in &b[8..] {
        s.push_str(&format!("{x:02x}"));
    }
    s
}

/// A bounds-checked little-endian cursor over one table.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// Fails with `Truncated` (reported at `entry`) unless `n` bytes remain.
    fn need(&self, entry: usize, n: usize) -> Result<(), TableError> {
        if self.remaining() < n {
            return Err(TableError::Truncated {
                offset: entry,
                needed: n + (self.pos - entry),
                available: self.bytes.len() - entry,
            });
        }
        Ok(())
    }

    fn take(&mut self, n: usize) -> &'a [u8] {
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        s
    }

    fn uuid(&mut self) -> String {
        let b: [u8; 16] = self.take(16).try_into().unwrap_or([0; 16]);
        uuid_from_bytes(&b)
    }

    fn u32(&mut self) -> u32 {
        let b = self.take(4);
        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }

    fn i32(&mut self) -> i32 {
        self.u32() as i32
    }

    fn f64(&mut self) -> f64 {
        let b: [u8; 8] = self.take(8).try_into().unwrap_or([0; 8]);
        f64::from_le_bytes(b)
    }

    /// A count (i32) and that many items of `size` bytes each, read by `item`; a negative
    /// count is `NegativeCount`, too few bytes `Truncated`, both at `entry`.
    fn list<T>(
        &mut self,
        entry: usize,
        size: usize,
        mut item: impl FnMut(&mut Self) -> T,
    ) -> Result<Vec<T>, TableError> {
        let n = self.i32();
        let count = usize::try_from(n).map_err(|_| TableError::NegativeCount {
            offset: entry,
            count: n,
        })?;
        self.need(entry, count.saturating_mul(size))?;
        Ok((0..count).map(|_| item(self)).collect())
    }
}

/// Zero bytes after a text of `n` bytes, to the next multiple of 4.
pub(crate) fn pad4(n: usize) -> usize {
    (4 - n % 4) % 4
}

/// Decodes the entries of one table back to back: `entry` reads one, starting at the byte
/// offset it is given, with at least `min` bytes there (else `Truncated` at that offset).
fn entries(
    bytes: &[u8],
    min: usize,
    mut entry: impl FnMut(&mut Cursor, usize) -> Result<StateEvent, TableError>,
) -> Result<Vec<StateEvent>, TableError> {
    let mut c = Cursor { bytes, pos: 0 };
    let mut out = Vec::with_capacity(bytes.len() / min);
    while c.remaining() > 0 {
        let at = c.pos;
        c.need(at, min)?;
        out.push(entry(&mut c, at)?);
    }
    Ok(out)
}

/// Decodes a value table (id 2): 24-byte entries. A trailing partial entry is `Truncated`.
pub fn decode_value_table(bytes: &[u8]) -> Result<Vec<StateEvent>, TableError> {
    entries(bytes, 24, |c, _| Ok(StateEvent::number(c.uuid(), c.f64())))
}

/// Decodes a text table (id 3). The padding after the last text may be missing (it is not
/// needed to find the end).
pub fn decode_text_table(bytes: &[u8]) -> Result<Vec<StateEvent>, TableError> {
    entries(bytes, 36, |c, entry| {
        let uuid = c.uuid();
        let icon = c.uuid();
        let len = c.u32() as usize;
        c.need(entry, len)?;
        let text = String::from_utf8_lossy(c.take(len)).into_owned();
        let pad = pad4(len).min(c.remaining());
        c.take(pad);
        Ok(StateEvent {
            uuid,
            value: EventValue::Text { text, icon },
        })
    })
}

/// Decodes a daytimer table (id 4).
pub fn decode_daytimer_table(bytes: &[u8]) -> Result<Vec<StateEvent>, TableError> {
    entries(bytes, 28, |c, entry| {
        let uuid = c.uuid();
        let default_value = c.f64();
        let entries = c.list(entry, 24, |c| DaytimerEntry {
            mode: c.i32(),
            from: c.i32(),
            to: c.i32(),
            need_activate: c.i32(),
            value: c.f64(),
        })?;
        Ok(StateEvent {
            uuid,
            value: EventValue::Daytimer {
                default_value,
                entries,
            },
        })
    })
}

/// Decodes a weather table (id 7).
pub fn decode_weather_table(bytes: &[u8]) -> Result<Vec<StateEvent>, TableError> {
    entries(bytes, 24, |c, entry| {
        let uuid = c.uuid();
        let last_update = c.u32();
        let entries = c.list(entry, 68, |c| WeatherEntry {
            timestamp: c.i32(),
            weather_type: c.i32(),
            wind_direction: c.i32(),
            solar_radiation: c.i32(),
            relative_humidity: c.i32(),
            temperature: c.f64(),
            perceived_temperature: c.f64(),
            dew_point: c.f64(),
            precipitation: c.f64(),
            wind_speed: c.f64(),
            barometric_pressure: c.f64(),
        })?;
        Ok(StateEvent {
            uuid,
            value: EventValue::Weather {
                last_update,
                entries,
            },
        })
    })
}

/// Decodes the table a header announced: ids 2, 3, 4, 7; anything else is `NotATable`.
pub fn decode_table(id: Identifier, bytes: &[u8]) -> Result<Vec<StateEvent>, TableError> {
    match id {
        Identifier::ValueTable => decode_value_table(bytes),
        Identifier::TextTable => decode_text_table(bytes),
        Identifier::DaytimerTable => decode_daytimer_table(bytes),
        Identifier::WeatherTable => decode_weather_table(bytes),
        other => Err(TableError::NotATable(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding() {
        assert_eq!([0, 1, 2, 3, 4, 5].map(pad4), [0, 3, 2, 1, 0, 3]);
    }
}

//! The Miniserver's side of the binary event tables (loxone-protocol.md §4.3; the layout is
//! described where the client decodes them, [`crate::loxone::ws::tables`]): what the
//! simulator sends. The encoders produce exactly what the decoders read, so
//! `encode(decode(x)) == x` for every well-formed table.

use crate::loxone::ws::frame::Identifier;
use crate::loxone::ws::tables::{pad4, EventValue, StateEvent, TableError};

/// Binary form of a UUID string: 32 hex digits (any case) with hyphens anywhere ignored, so
/// both the Loxone form `0f869a64-0200-0a9b-ffffd4c75dbaf53c` and the five-group RFC form are
/// accepted. Errors with [`TableError::BadUuid`] otherwise.
pub fn uuid_to_bytes(s: &str) -> Result<[u8; 16], TableError> {
    let bad = || TableError::BadUuid(s.to_string());
    let digits: Vec<u8> = s.bytes().filter(|&c| c != b'-').collect();
    if digits.len() != 32 || !digits.iter().all(u8::is_ascii_hexdigit) {
        return Err(bad());
    }
    let mut raw = [0u8; 16];
    for (i, pair) in digits.chunks(2).enumerate() {
        let hex = std::str::from_utf8(pair).map_err(|_| bad())?;
        raw[i] = u8::from_str_radix(hex, 16).map_err(|_| bad())?;
    }
    // raw is big-endian text order; swap Data1..Data3 into little-endian.
    let mut b = raw;
    b[0..4].reverse();
    b[4..6].reverse();
    b[6..8].reverse();
    Ok(b)
}

/// The table identifier an event belongs in.
pub fn table_of(value: &EventValue) -> Identifier {
    match value {
        EventValue::Number(_) => Identifier::ValueTable,
        EventValue::Text { .. } => Identifier::TextTable,
        EventValue::Daytimer { .. } => Identifier::DaytimerTable,
        EventValue::Weather { .. } => Identifier::WeatherTable,
    }
}

fn count(n: usize, uuid: &str) -> Result<[u8; 4], TableError> {
    i32::try_from(n)
        .map(i32::to_le_bytes)
        .map_err(|_| TableError::TooLong(uuid.to_string()))
}

/// Encodes events of one kind into the table `id` (2, 3, 4 or 7). Errors: `NotATable`,
/// `WrongKind` when an event's value belongs in another table, `BadUuid`, `TooLong`.
pub fn encode_table(id: Identifier, events: &[StateEvent]) -> Result<Vec<u8>, TableError> {
    if !matches!(
        id,
        Identifier::ValueTable
            | Identifier::TextTable
            | Identifier::DaytimerTable
            | Identifier::WeatherTable
    ) {
        return Err(TableError::NotATable(id));
    }
    let mut out = Vec::new();
    for e in events {
        if table_of(&e.value) != id {
            return Err(TableError::WrongKind(e.uuid.clone()));
        }
        out.extend_from_slice(&uuid_to_bytes(&e.uuid)?);
        match &e.value {
            EventValue::Number(v) => out.extend_from_slice(&v.to_le_bytes()),
            EventValue::Text { text, icon } => {
                out.extend_from_slice(&uuid_to_bytes(icon)?);
                let len =
                    u32::try_from(text.len()).map_err(|_| TableError::TooLong(e.uuid.clone()))?;
                out.extend_from_slice(&len.to_le_bytes());
                out.extend_from_slice(text.as_bytes());
                out.resize(out.len() + pad4(text.len()), 0);
            }
            EventValue::Daytimer {
                default_value,
                entries,
            } => {
                out.extend_from_slice(&default_value.to_le_bytes());
                out.extend_from_slice(&count(entries.len(), &e.uuid)?);
                for d in entries {
                    for v in [d.mode, d.from, d.to, d.need_activate] {
                        out.extend_from_slice(&v.to_le_bytes());
                    }
                    out.extend_from_slice(&d.value.to_le_bytes());
                }
            }
            EventValue::Weather {
                last_update,
                entries,
            } => {
                out.extend_from_slice(&last_update.to_le_bytes());
                out.extend_from_slice(&count(entries.len(), &e.uuid)?);
                for w in entries {
                    for v in [
                        w.timestamp,
                        w.weather_type,
                        w.wind_direction,
                        w.solar_radiation,
                        w.relative_humidity,
                    ] {
                        out.extend_from_slice(&v.to_le_bytes());
                    }
                    for v in [
                        w.temperature,
                        w.perceived_temperature,
                        w.dew_point,
                        w.precipitation,
                        w.wind_speed,
                        w.barometric_pressure,
                    ] {
                        out.extend_from_slice(&v.to_le_bytes());
                    }
                }
            }
        }
    }
    Ok(out)
}

/// [`encode_table`] for value events.
pub fn encode_value_table(events: &[StateEvent]) -> Result<Vec<u8>, TableError> {
    encode_table(Identifier::ValueTable, events)
}

/// [`encode_table`] for text events.
pub fn encode_text_table(events: &[StateEvent]) -> Result<Vec<u8>, TableError> {
    encode_table(Identifier::TextTable, events)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loxone::ws::tables::uuid_from_bytes;

    #[test]
    fn uuid_round_trip_and_rfc_form() {
        let b = uuid_to_bytes("0F869A64-0200-0A9B-FFFF-D4C75DBAF53C").unwrap();
        assert_eq!(uuid_from_bytes(&b), "0f869a64-0200-0a9b-ffffd4c75dbaf53c");
        assert!(uuid_to_bytes("0f869a64").is_err());
        assert!(uuid_to_bytes("zz869a64-0200-0a9b-ffffd4c75dbaf53c").is_err());
        assert!(uuid_to_bytes("+f869a64-0200-0a9b-ffffd4c75dbaf53c").is_err());
        // Multi-byte characters must not panic the hex slicing.
        assert!(uuid_to_bytes("ää869a64-0200-0a9b-ffffd4c75dbaf5").is_err());
    }
}

//! Synthetic structure files of any size, for benchmarks and tests: `controls` lighting
//! controls (even-numbered ones `Switch`, odd-numbered ones `Dimmer`, as in the demo house)
//! spread round-robin over `rooms` rooms, in two categories, with a few `globalStates`.
//!
//! UUIDs follow Loxone's `8-4-4-16` hex form and are derived from the index, so the same
//! arguments always give the same text: rooms `10xxxxxx-…`, categories `30xxxxxx-…`, controls
//! `20xxxxxx-0000-…` and their states `20xxxxxx-00ss-…` (`ss` the state's number). The file
//! parses with `loxone::structure::parse_structure` and starts a [`super::Simulator`] (unit
//! tests below); `tests/bench/live.rs` uses it for the 1000-control house.

use serde_json::{json, Map, Value};

/// The serial number of synthetic houses (12 hex digits).
pub const SYNTH_SERIAL: &str = "504F94000001";

fn uuid(group: u32, index: usize, sub: u16) -> String {
    format!(
        "{:08x}-{sub:04x}-0000-ffff504f94000001",
        group + index as u32
    )
}

/// A structure file (`LoxAPP3.json` text) with `controls` Switch/Dimmer controls over `rooms`
/// rooms (at least 1). Every state starts at 0 in a simulator without initial values.
pub fn synthetic_structure(controls: usize, rooms: usize) -> String {
    let rooms = rooms.max(1);
    let mut room_map = Map::new();
    for r in 0..rooms {
        let id = uuid(0x1000_0000, r, 0);
        room_map.insert(
            id.clone(),
            json!({"uuid": id, "name": format!("Room {:03}", r + 1), "isFavorite": false,
                   "defaultRating": 0, "type": 0}),
        );
    }
    let lights = uuid(0x3000_0000, 0, 0);
    let general = uuid(0x3000_0000, 1, 0);
    let cats = json!({
        lights.clone(): {"uuid": lights, "name": "Lights", "isFavorite": false,
                         "defaultRating": 0, "type": "lights"},
        general.clone(): {"uuid": general, "name": "General", "isFavorite": false,
                          "defaultRating": 0, "type": "undefined"},
    });
    let mut control_map = Map::new();
    for i in 0..controls {
        let id = uuid(0x2000_0000, i, 0);
        let dimmer = i % 2 == 1;
        let names: &[&str] = if dimmer {
            &["jLocked", "position", "min", "max", "step"]
        } else {
            &["jLocked", "active"]
        };
        let states: Map<String, Value> = names
            .iter()
            .enumerate()
            .map(|(s, n)| {
                (
                    n.to_string(),
                    Value::String(uuid(0x2000_0000, i, s as u16 + 1)),
                )
            })
            .collect();
        let room = uuid(0x1000_0000, i % rooms, 0);
        let kind = if dimmer { "Dimmer" } else { "Switch" };
        control_map.insert(
            id.clone(),
            json!({
                "uuidAction": id,
                "name": format!("{kind} {:04}", i + 1),
                "type": kind,
                "isFavorite": false,
                "isSecured": false,
                "defaultRating": 0,
                "room": room,
                "cat": if dimmer { &lights } else { &general },
                "details": {"jLockable": true},
                "states": states,
            }),
        );
    }
    let globals: Map<String, Value> = ["operatingMode", "sunrise", "sunset", "miniserverTime"]
        .iter()
        .enumerate()
        .map(|(g, n)| (n.to_string(), Value::String(uuid(0x4000_0000, g, 0))))
        .collect();
    json!({
        "lastModified": "2026-01-01 00:00:00",
        "msInfo": {
            "serialNr": SYNTH_SERIAL,
            "msName": format!("Synthetic {controls}"),
            "projectName": "Synthetic house",
            "localUrl": "127.0.0.1",
            "miniserverType": 2,
            "languageCode": "ENG",
            "tempUnit": 0,
        },
        "globalStates": globals,
        "operatingModes": {},
        "rooms": room_map,
        "cats": cats,
        "controls": control_map,
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::home::ControlKind;
    use crate::loxone::structure::parse_structure;
    use crate::sim::{SimConfig, Simulator};

    #[test]
    fn parses_with_every_control_and_room() {
        let text = synthetic_structure(1000, 50);
        let home = parse_structure(&text).unwrap();
        assert_eq!(home.rooms.len(), 50);
        assert_eq!(home.controls.len(), 1000);
        let dimmers = home
            .controls
            .iter()
            .filter(|c| c.kind == ControlKind::Dimmer)
            .count();
        assert_eq!(dimmers, 500);
        assert!(home.controls.iter().all(|c| c.room.is_some()));
        assert_eq!(home.ms_info.serial_nr, SYNTH_SERIAL);
        assert_eq!(synthetic_structure(1000, 50), text, "deterministic");
    }

    #[test]
    fn starts_a_simulator_that_obeys_commands() {
        let text = synthetic_structure(10, 3);
        let sim = Simulator::new(&text, None, SimConfig::default()).unwrap();
        let dimmer = uuid(0x2000_0000, 1, 0);
        let switch = uuid(0x2000_0000, 2, 0);
        let peer = "127.0.0.1".parse().unwrap();
        let auth = Some("Basic ZGVtbzpkZW1v");
        let r = sim.handle("GET", &format!("/jdev/sps/io/{dimmer}/42"), auth, peer);
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(sim.state(&dimmer, "position"), Some(42.0));
        let r = sim.handle("GET", &format!("/jdev/sps/io/{switch}/on"), auth, peer);
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(sim.state(&switch, "active"), Some(1.0));
    }
}

//! Feeds the live link into the house: state events become values in the [`House`]'s store
//! (published on its bus, tagged with the control they belong to), and the link's health
//! becomes the house's [`LinkMode`]: `websocket` while the socket is up, `disconnected` when it
//! drops (the polling thread then takes over and reports `polling`, degraded).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use super::live::{LinkEvent, LinkSink};
use super::ws::{EventValue, StateEvent};
use crate::home::link::LinkMode;
use crate::home::state::Source;
use crate::home::{Control, Home, House, StateRef, Value};

/// State UUID -> uuidAction of its control, and the model it was built from.
type StateIndex = (Option<Arc<Home>>, HashMap<String, String>);

/// The [`LinkSink`] of the running server.
pub struct HouseFeed {
    house: Arc<House>,
    index: RwLock<StateIndex>,
}

impl HouseFeed {
    pub fn new(house: Arc<House>) -> Self {
        HouseFeed {
            house,
            index: RwLock::new((None, HashMap::new())),
        }
    }

    /// The control owning state `uuid` (rebuilding the index when the structure changed).
    fn control_of(&self, uuid: &str) -> Option<String> {
        let home = self.house.home();
        {
            let idx = self.index.read().unwrap_or_else(|e| e.into_inner());
            if idx.0.as_ref().is_some_and(|h| Arc::ptr_eq(h, &home)) {
                return idx.1.get(uuid).cloned();
            }
        }
        let map = state_index(&home);
        let found = map.get(uuid).cloned();
        *self.index.write().unwrap_or_else(|e| e.into_inner()) = (Some(home), map);
        found
    }

    fn apply(&self, events: Vec<StateEvent>) {
        let at = SystemTime::now();
        let n = events.len() as u64;
        for ev in events {
            let value = match ev.value {
                EventValue::Number(n) => Value::Number(n),
                EventValue::Text { text, .. } => Value::Text(text),
                // Daytimer and weather tables carry schedules and forecasts, not device
                // states; they are not kept yet.
                EventValue::Daytimer { .. } | EventValue::Weather { .. } => continue,
            };
            let control = self.control_of(&ev.uuid);
            self.house
                .record(&ev.uuid, control.as_deref(), value, at, Source::Event);
        }
        self.house.link().events(n, at);
    }
}

impl LinkSink for HouseFeed {
    fn report(&self, event: LinkEvent) {
        match event {
            LinkEvent::Connected => self.house.link().set_mode(LinkMode::WebSocket),
            LinkEvent::Events(ev) => self.apply(ev),
            LinkEvent::Disconnected { error, .. } | LinkEvent::Unsupported { error, .. } => {
                self.house.link().websocket_lost(&error)
            }
        }
    }
}

/// State UUID -> control uuidAction, over controls and sub-controls (a control's own
/// uuidAction maps to itself: it is often also its main state).
fn state_index(home: &Home) -> HashMap<String, String> {
    fn walk(list: &[Control], map: &mut HashMap<String, String>) {
        for c in list {
            map.insert(c.uuid.clone(), c.uuid.clone());
            for r in c.states.values() {
                match r {
                    StateRef::Uuid(u) => {
                        map.entry(u.clone()).or_insert_with(|| c.uuid.clone());
                    }
                    StateRef::Uuids(us) => {
                        for u in us {
                            map.entry(u.clone()).or_insert_with(|| c.uuid.clone());
                        }
                    }
                }
            }
            walk(&c.sub_controls, map);
        }
    }
    let mut map = HashMap::new();
    walk(&home.controls, &mut map);
    map
}

#[cfg(test)]
mod tests {
    //! The feed against the shapes a real Miniserver sends: the value and text tables of the
    //! Smarteon showroom capture (`tests/fixtures/captures`), decoded by the real table
    //! decoder, and single events for the demo house's state UUIDs (which are not the
    //! controls' uuidActions). Expected values and owners come from the capture's research
    //! decode and the raw structure JSON, never from the feed's own index.

    use std::collections::HashMap;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;
    use crate::home::{Action, Controller, ControllerError, Event};
    use crate::loxone::structure::parse_structure;
    use crate::loxone::ws::tables::{
        decode_text_table, decode_value_table, DaytimerEntry, TableError,
    };
    use crate::sim::tables::encode_text_table;

    const SHOWROOM: &str = include_str!("../../tests/fixtures/Smarteon-loxone-java-showroom.json");
    const CAPTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/captures/");
    /// Demo house, Küche / Deckenlicht (Switch): its uuidAction and its `active` state.
    const SWITCH: &str = "1d5c3a92-0209-520e-ffff504f94d0e5a1";
    const SWITCH_ACTIVE: &str = "1d5c3a94-0209-521c-ffffa3c7e19b52d4";
    /// Demo house, Büro / Notiz (TextInput): its uuidAction and its `text` state.
    const NOTE: &str = "1d5c3bcb-021c-5a9d-ffff504f94d0e5a1";
    const NOTE_TEXT: &str = "1d5c3bcc-021c-5aa4-ffffa3c7e19b52d4";

    /// A Miniserver that is not reachable over HTTP: every read fails and is counted, so a
    /// test sees whether an answer came from the pushed events or needed a read.
    #[derive(Default)]
    struct NoHttp {
        reads: AtomicUsize,
    }

    impl Controller for NoHttp {
        fn command(
            &self,
            c: &Control,
            a: &Action,
        ) -> Result<crate::home::Command, ControllerError> {
            crate::loxone::commands::house_command(c, a)
        }
        fn act(&self, _: &Control, _: &Action) -> Result<Option<Value>, ControllerError> {
            Err(ControllerError::Connection("no HTTP in this test".into()))
        }
        fn read(&self, _: &Control) -> Result<Value, ControllerError> {
            self.reads.fetch_add(1, Ordering::SeqCst);
            Err(ControllerError::Connection("no HTTP in this test".into()))
        }
    }

    /// A house on `structure` whose remembered values stay fresh for an hour (far longer
    /// than a test runs), fed by a [`HouseFeed`].
    fn fed(structure: &str) -> (Arc<House>, HouseFeed, Arc<NoHttp>) {
        let ctl = Arc::new(NoHttp::default());
        let house = Arc::new(House::new(
            parse_structure(structure).expect("the structure parses"),
            ctl.clone(),
            Duration::from_secs(3600),
        ));
        let feed = HouseFeed::new(house.clone());
        (house, feed, ctl)
    }

    fn capture(name: &str) -> (Vec<u8>, serde_json::Value) {
        let base = format!("{CAPTURES}Smarteon-loxone-java-showroom-{name}");
        let hex_text = std::fs::read_to_string(format!("{base}.hex")).unwrap();
        let json = std::fs::read_to_string(format!("{base}.decoded.json")).unwrap();
        (
            hex::decode(hex_text.trim()).unwrap(),
            serde_json::from_str(&json).unwrap(),
        )
    }

    /// State UUID -> the uuidActions of every control (or sub-control) of the raw structure
    /// JSON that lists it among its states (arrays of UUIDs included); a control's own
    /// uuidAction is its own (Loxone sends events for it too).
    fn owners(structure: &str) -> HashMap<String, Vec<String>> {
        fn walk(c: &serde_json::Value, out: &mut HashMap<String, Vec<String>>) {
            let action = c["uuidAction"].as_str().unwrap().to_string();
            out.entry(action.to_lowercase())
                .or_default()
                .push(action.clone());
            for s in c["states"].as_object().into_iter().flat_map(|m| m.values()) {
                let list: Vec<&str> = match s {
                    serde_json::Value::String(u) => vec![u.as_str()],
                    serde_json::Value::Array(a) => a.iter().filter_map(|u| u.as_str()).collect(),
                    _ => vec![],
                };
                for u in list {
                    let v = out.entry(u.to_lowercase()).or_default();
                    if !v.contains(&action) {
                        v.push(action.clone());
                    }
                }
            }
            for sub in c["subControls"]
                .as_object()
                .into_iter()
                .flat_map(|m| m.values())
            {
                walk(sub, out);
            }
        }
        let doc: serde_json::Value = serde_json::from_str(structure).unwrap();
        let mut out = HashMap::new();
        for c in doc["controls"].as_object().unwrap().values() {
            walk(c, &mut out);
        }
        out
    }

    /// Every change published so far: state UUID -> (control, value) of its latest change.
    fn changes(sub: &crate::home::Subscription) -> HashMap<String, (Option<String>, Value)> {
        let mut out = HashMap::new();
        while let Some(e) = sub.try_recv() {
            if let Event::Change(c) = e {
                assert_eq!(c.source, Source::Event, "{c:?}");
                out.insert(c.uuid, (c.control, c.value));
            }
        }
        out
    }

    #[test]
    fn the_captured_value_table_becomes_values_tagged_with_their_controls() {
        let (house, feed, ctl) = fed(SHOWROOM);
        let sub = house.bus().subscribe(4096);
        let (bytes, json) = capture("value-events");
        let events = decode_value_table(&bytes).unwrap();
        let expected = json["events"].as_array().unwrap();
        assert_eq!(events.len(), expected.len());
        feed.report(LinkEvent::Events(events));

        let owners = owners(SHOWROOM);
        let published = changes(&sub);
        // The latest value of each UUID in the capture, in order.
        let mut want: HashMap<String, f64> = HashMap::new();
        for x in expected {
            want.insert(
                x["uuid"].as_str().unwrap().to_string(),
                x["value"].as_f64().unwrap(),
            );
        }
        let mut owned = 0;
        let mut global = 0;
        for (uuid, v) in &want {
            let stored = house.states().get(uuid).unwrap_or_else(|| panic!("{uuid}"));
            assert_eq!(stored.value, Value::Number(*v), "{uuid}");
            assert_eq!(stored.source, Source::Event);
            let (control, value) = published
                .get(uuid)
                .unwrap_or_else(|| panic!("no change published for {uuid}"));
            assert_eq!(value, &Value::Number(*v), "{uuid}");
            match owners.get(uuid).map(Vec::as_slice) {
                // A state of exactly one control (or its own uuidAction): tagged with that
                // control's uuidAction.
                Some([one]) => {
                    assert_eq!(control.as_deref(), Some(one.as_str()), "{uuid}");
                    if one != uuid {
                        owned += 1;
                    }
                }
                // Listed by a control and one of its sub-controls: not judged here.
                Some(_) => {}
                // globalStates and UUIDs of no control: no control.
                None => {
                    assert_eq!(control, &None, "{uuid}");
                    global += 1;
                }
            }
        }
        assert!(owned >= 30, "only {owned} control states in the capture");
        assert!(global >= 4, "only {global} global states in the capture");
        // The Alarm's `armed`, a state UUID that is not the Alarm's uuidAction.
        let armed = "0f86a2fe-0378-3e08-ffffb2d4efc8b5b6";
        assert_eq!(owners[armed].len(), 1);
        assert_eq!(
            published[armed].0.as_deref(),
            Some(owners[armed][0].as_str())
        );
        // Every event is counted; nothing was read over HTTP.
        let snap = house.link().snapshot();
        assert_eq!(snap.events_received, expected.len() as u64);
        assert!(snap.last_event_at.is_some());
        assert_eq!(ctl.reads.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn the_captured_text_table_becomes_text_values() {
        let (house, feed, _) = fed(SHOWROOM);
        let sub = house.bus().subscribe(64);
        let (bytes, json) = capture("text-events");
        // The capture's last entry is truncated at the source: take the complete ones.
        let Err(TableError::Truncated { offset, .. }) = decode_text_table(&bytes) else {
            panic!("the capture ends in a truncated entry")
        };
        let events = decode_text_table(&bytes[..offset]).unwrap();
        assert_eq!(events.len(), 5);
        feed.report(LinkEvent::Events(events));
        let published = changes(&sub);
        for x in &json["events"].as_array().unwrap()[..5] {
            let uuid = x["uuid"].as_str().unwrap();
            let text = x["text"].as_str().unwrap();
            assert_eq!(
                house.states().get(uuid).map(|s| s.value),
                Some(Value::Text(text.into())),
                "{uuid}"
            );
            // globalStates or no structure entry at all: no control.
            assert_eq!(published[uuid], (None, Value::Text(text.into())));
        }
    }

    #[test]
    fn a_text_event_for_a_controls_text_state_is_tagged_with_the_control() {
        let (house, feed, _) = fed(crate::sim::DEMO_STRUCTURE);
        assert_eq!(owners(crate::sim::DEMO_STRUCTURE)[NOTE_TEXT], vec![NOTE]);
        let sub = house.bus().subscribe(64);
        // Through the wire format: a text table with an icon UUID, as the Miniserver sends.
        let wire = encode_text_table(&[StateEvent {
            uuid: NOTE_TEXT.into(),
            value: EventValue::Text {
                text: "Müll rausbringen".into(),
                icon: "00000000-0000-0000-0000000000000000".into(),
            },
        }])
        .unwrap();
        feed.report(LinkEvent::Events(decode_text_table(&wire).unwrap()));
        let want = Value::Text("Müll rausbringen".into());
        assert_eq!(
            house.states().get(NOTE_TEXT).map(|s| s.value),
            Some(want.clone())
        );
        assert_eq!(changes(&sub)[NOTE_TEXT], (Some(NOTE.to_string()), want));
    }

    #[test]
    fn a_repeated_value_is_not_a_change_and_a_new_one_is() {
        let (house, feed, _) = fed(crate::sim::DEMO_STRUCTURE);
        let sub = house.bus().subscribe(64);
        feed.report(LinkEvent::Events(vec![StateEvent::number(
            SWITCH_ACTIVE,
            1.0,
        )]));
        feed.report(LinkEvent::Events(vec![StateEvent::number(
            SWITCH_ACTIVE,
            1.0,
        )]));
        feed.report(LinkEvent::Events(vec![StateEvent::number(
            SWITCH_ACTIVE,
            0.0,
        )]));
        let mut seen = Vec::new();
        while let Some(Event::Change(c)) = sub.try_recv() {
            assert_eq!(c.control.as_deref(), Some(SWITCH));
            seen.push(c.value);
        }
        assert_eq!(seen, vec![Value::Number(1.0), Value::Number(0.0)]);
        assert_eq!(
            house.states().get(SWITCH_ACTIVE).map(|s| s.value),
            Some(Value::Number(0.0))
        );
        assert_eq!(house.link().snapshot().events_received, 3);
    }

    #[test]
    fn schedules_and_forecasts_are_counted_but_not_kept() {
        let (house, feed, _) = fed(crate::sim::DEMO_STRUCTURE);
        let sub = house.bus().subscribe(64);
        let daytimer = StateEvent {
            uuid: SWITCH_ACTIVE.into(),
            value: EventValue::Daytimer {
                default_value: 21.5,
                entries: vec![DaytimerEntry {
                    mode: 3,
                    from: 360,
                    to: 1320,
                    need_activate: 0,
                    value: 22.0,
                }],
            },
        };
        let weather = StateEvent {
            uuid: NOTE_TEXT.into(),
            value: EventValue::Weather {
                last_update: 565_000_000,
                entries: vec![],
            },
        };
        feed.report(LinkEvent::Events(vec![daytimer, weather]));
        assert!(house.states().get(SWITCH_ACTIVE).is_none());
        assert!(house.states().get(NOTE_TEXT).is_none());
        assert_eq!(sub.try_recv(), None);
        assert_eq!(house.link().snapshot().events_received, 2);
    }

    #[test]
    fn link_reports_set_the_mode() {
        let (house, feed, _) = fed(crate::sim::DEMO_STRUCTURE);
        feed.report(LinkEvent::Connected);
        assert_eq!(house.link().mode(), LinkMode::WebSocket);
        feed.report(LinkEvent::Disconnected {
            error: "closed by the Miniserver".into(),
            retry_in: Duration::from_secs(1),
        });
        let snap = house.link().snapshot();
        assert_eq!(snap.mode, LinkMode::Disconnected);
        assert_eq!(snap.last_error.as_deref(), Some("closed by the Miniserver"));
        feed.report(LinkEvent::Connected);
        assert_eq!(house.link().mode(), LinkMode::WebSocket);
        feed.report(LinkEvent::Unsupported {
            error: "no token support".into(),
            retry_in: Duration::from_secs(60),
        });
        let snap = house.link().snapshot();
        assert_eq!(snap.mode, LinkMode::Disconnected);
        assert_eq!(snap.last_error.as_deref(), Some("no token support"));
    }

    #[test]
    fn a_new_structure_is_indexed_for_later_events() {
        let (house, feed, _) = fed(crate::sim::DEMO_STRUCTURE);
        feed.report(LinkEvent::Events(vec![StateEvent::number(
            SWITCH_ACTIVE,
            1.0,
        )]));
        // The structure changes: the switch is gone, the showroom's Alarm is there.
        house.replace_home(parse_structure(SHOWROOM).unwrap());
        let sub = house.bus().subscribe(64);
        let armed = "0f86a2fe-0378-3e08-ffffb2d4efc8b5b6";
        feed.report(LinkEvent::Events(vec![
            StateEvent::number(SWITCH_ACTIVE, 0.0),
            StateEvent::number(armed, 1.0),
        ]));
        let got = changes(&sub);
        assert_eq!(
            got[SWITCH_ACTIVE].0, None,
            "the old house's control is gone"
        );
        assert_eq!(
            got[armed].0.as_deref(),
            Some(owners(SHOWROOM)[armed][0].as_str())
        );
    }

    /// Issue 13: the pushed value is stored under the state UUID (`active`), but
    /// `House::value` looks up the control's uuidAction, so a read of the switch does not see
    /// the event and asks the Miniserver over HTTP instead (here: fails, no HTTP).
    #[test]
    fn a_pushed_state_answers_the_controls_read_without_http() {
        let (house, feed, ctl) = fed(crate::sim::DEMO_STRUCTURE);
        feed.report(LinkEvent::Connected);
        feed.report(LinkEvent::Events(vec![StateEvent::number(
            SWITCH_ACTIVE,
            1.0,
        )]));
        let home = house.home();
        let switch = home.control(SWITCH).unwrap();
        assert_eq!(switch.state("active"), Some(SWITCH_ACTIVE));
        let v = house
            .value(switch)
            .expect("the pushed value, without a read");
        assert_eq!(v.value, Value::Number(1.0));
        assert_eq!(ctl.reads.load(Ordering::SeqCst), 0);
    }
}

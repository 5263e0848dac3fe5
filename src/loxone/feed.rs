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
                self.house.link().failed(&error)
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

//! The response caches (spec §8): cached reads do not ask the Miniserver again, writes and
//! state changes invalidate, TTLs expire, identical concurrent reads are coalesced, 0 turns a
//! cache off, errors are never kept.

use crate::support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use serde_json::{json, Value as Json};

use home_mcp::home::{Action, Control, Controller, ControllerError, House, LinkMode, Value};
use home_mcp::loxone::feed::HouseFeed;
use home_mcp::loxone::live::{LinkEvent, LinkSink};
use home_mcp::loxone::structure::parse_structure;
use home_mcp::loxone::ws::StateEvent;
use home_mcp::mcp::{Handler, RequestContext, ResourceContents};
use home_mcp::tools::cache::CacheConfig;
use home_mcp::tools::HomeTools;
use support::{call, ok, text, wait_until, PATIENCE};

/// A controller that remembers values (0 until acted on), counts reads and can be slow or down.
#[derive(Default)]
struct Counting {
    values: Mutex<HashMap<String, f64>>,
    reads: AtomicUsize,
    delay_ms: AtomicUsize,
    down: AtomicBool,
}

impl Counting {
    fn reads(&self) -> usize {
        self.reads.load(Ordering::SeqCst)
    }
    fn set(&self, uuid: &str, v: f64) {
        self.values.lock().unwrap().insert(uuid.to_string(), v);
    }
}

impl Controller for Counting {
    /// The Loxone client's own wording of the command (what dry runs and answers show).
    fn command(
        &self,
        c: &home_mcp::home::Control,
        a: &home_mcp::home::Action,
    ) -> Result<home_mcp::home::Command, home_mcp::home::ControllerError> {
        home_mcp::loxone::commands::house_command(c, a)
    }
    fn act(&self, control: &Control, action: &Action) -> Result<Option<Value>, ControllerError> {
        let v = match action {
            Action::On => 1.0,
            Action::Off => 0.0,
            Action::Level(x) => *x,
            _ => return Ok(None),
        };
        self.set(&control.uuid, v);
        Ok(None)
    }
    fn read(&self, control: &Control) -> Result<Value, ControllerError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        let ms = self.delay_ms.load(Ordering::SeqCst);
        if ms > 0 {
            std::thread::sleep(Duration::from_millis(ms as u64));
        }
        if self.down.load(Ordering::SeqCst) {
            return Err(ControllerError::Connection("connection refused".into()));
        }
        let v = self.values.lock().unwrap().get(&control.uuid).copied();
        Ok(Value::Number(v.unwrap_or(0.0)))
    }
}

/// The demo house on a counting controller. Remembered values are always re-read (max age
/// zero), so every uncached read shows in the counter.
fn house() -> (Arc<House>, Arc<Counting>) {
    let home = parse_structure(include_str!("../assets/demo-house.json")).unwrap();
    let ctl = Arc::new(Counting::default());
    let house = House::new(home, ctl.clone(), Duration::ZERO).with_verify_timeout(Duration::ZERO);
    // Polling, not disconnected: a disconnected house answers remembered values without asking.
    house.link().set_mode(LinkMode::Polling);
    (Arc::new(house), ctl)
}

fn tools(house: &Arc<House>, tool_secs: u64, resource_secs: u64) -> HomeTools {
    tools_ttl(
        house,
        Duration::from_secs(tool_secs),
        Duration::from_secs(resource_secs),
    )
}

fn tools_ttl(house: &Arc<House>, tool_ttl: Duration, resource_ttl: Duration) -> HomeTools {
    HomeTools::new(house.clone()).with_caches(CacheConfig {
        tool_ttl,
        resource_ttl,
    })
}

const KITCHEN: &str = "Küche";
const LIGHT: &str = "Deckenlicht Küche";

fn kitchen(tools: &HomeTools) -> Json {
    text(&call(tools, "list_devices", json!({"room": KITCHEN})).unwrap())
}

/// The UUID of the kitchen's ceiling light ([`LIGHT`]).
fn light_uuid(house: &House) -> String {
    support::find::uuid_in(&house.home(), "Deckenlicht", KITCHEN)
}

fn light_entry(envelope: &Json) -> Json {
    envelope["data"]["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "Deckenlicht")
        .cloned()
        .unwrap_or_else(|| panic!("{LIGHT} listed: {envelope}"))
}

/// The Miniserver pushes `value` for the light's `active` state, as it does when someone
/// presses the wall switch: a value event with the state's UUID (not the control's
/// uuidAction) through the real feed of the live link.
fn push_light(house: &Arc<House>, value: f64) {
    let home = house.home();
    let light = home.control(&light_uuid(house)).unwrap();
    let active = light.state("active").expect("a switch has `active`");
    assert_ne!(active, light.uuid, "a state UUID of its own");
    HouseFeed::new(house.clone())
        .report(LinkEvent::Events(vec![StateEvent::number(active, value)]));
}

/// Reads once so that every value is known: a computation that learns new values is answered
/// but not kept (the house changed while it ran).
fn warm(tools: &HomeTools) {
    kitchen(tools);
}

#[test]
fn a_cached_read_does_not_ask_the_miniserver_again() {
    let (house, ctl) = house();
    let tools = tools(&house, 30, 60);
    warm(&tools);
    let before = ctl.reads();
    let first = kitchen(&tools);
    let filled = ctl.reads();
    assert!(filled > before, "the first read asks the Miniserver");
    let second = kitchen(&tools);
    assert_eq!(
        ctl.reads(),
        filled,
        "the second read is answered from the cache"
    );
    // Same answer, timestamp included (the cached one); only the ages of its values grow.
    assert_eq!(without_ages(first), without_ages(second));
    // Argument order does not matter; other arguments are other entries.
    let args: serde_json::Map<String, Json> =
        serde_json::from_str(r#"{"limit": 100, "room": "Küche"}"#).unwrap();
    let reordered: serde_json::Map<String, Json> =
        serde_json::from_str(r#"{"room": "Küche", "limit": 100}"#).unwrap();
    let ctx = RequestContext::default();
    tools.call_tool("list_devices", args, &ctx).unwrap();
    let n = ctl.reads();
    tools.call_tool("list_devices", reordered, &ctx).unwrap();
    assert_eq!(ctl.reads(), n);
}

#[test]
fn a_command_invalidates_at_once() {
    let (house, ctl) = house();
    let tools = tools(&house, 30, 60);
    warm(&tools);
    let before = light_entry(&kitchen(&tools));
    ok(
        &tools,
        "control_device",
        json!({"device": LIGHT, "action": "on"}),
    );
    let n = ctl.reads();
    let after = light_entry(&kitchen(&tools));
    assert!(ctl.reads() > n, "asked the Miniserver again");
    assert_ne!(before, after, "the new state is shown immediately");

    // A command through the house itself (REST device paths, other callers) too.
    let light = house.home().control(&light_uuid(&house)).unwrap().clone();
    kitchen(&tools);
    house.act(&light, &Action::Off, "test").unwrap();
    assert_eq!(light_entry(&kitchen(&tools)), before);
}

#[test]
fn a_state_change_invalidates() {
    let (house, ctl) = house();
    let tools = tools(&house, 30, 60);
    warm(&tools);
    let before = light_entry(&kitchen(&tools));
    assert_eq!(light_entry(&kitchen(&tools)), before);
    assert_eq!(before["state"]["on"], false, "{before}");
    // Someone presses the wall switch: the Miniserver's light is on, and it pushes the new
    // value of the switch's state.
    let uuid = light_uuid(&house);
    ctl.set(&uuid, 1.0);
    let n = ctl.reads();
    push_light(&house, 1.0);
    let after = light_entry(&kitchen(&tools));
    assert!(ctl.reads() > n, "computed again: {after}");
    assert_eq!(after["state"]["on"], true, "{after}");
}

#[test]
fn entries_expire() {
    // Both sides of the TTL: an hour-long entry is still answered after the test's few
    // seconds (a margin no busy machine crosses); a 20 ms entry expires (the deadline only
    // bounds "it happens at all").
    let (house, ctl) = house();
    let long = tools(&house, 3600, 3600);
    warm(&long);
    kitchen(&long);
    let n = ctl.reads();
    kitchen(&long);
    assert_eq!(ctl.reads(), n, "not expired within its hour");
    let short = tools_ttl(&house, Duration::from_millis(20), Duration::from_millis(20));
    warm(&short);
    kitchen(&short);
    let n = ctl.reads();
    support::wait_true("the 20 ms entry to expire", || {
        kitchen(&short);
        ctl.reads() > n
    });
}

#[test]
fn zero_turns_the_caches_off() {
    let (house, ctl) = house();
    let tools = tools(&house, 0, 0);
    warm(&tools);
    let n = ctl.reads();
    kitchen(&tools);
    let one = ctl.reads() - n;
    kitchen(&tools);
    assert_eq!(ctl.reads() - n, 2 * one);
    let uri = "home://devices/all";
    let ctx = RequestContext::default();
    tools.read_resource(uri, &ctx).unwrap();
    let m = ctl.reads();
    tools.read_resource(uri, &ctx).unwrap();
    assert!(ctl.reads() > m);
}

/// Eight identical requests at once, answered from the entry filled before: none reaches the
/// Miniserver, and all get the same answer. (That identical requests *in flight* share one
/// computation is tested where the waiters can be seen joining the flight, deterministically:
/// `tools::cache::tests::identical_requests_in_flight_share_one_computation`.)
#[test]
fn identical_concurrent_reads_are_coalesced() {
    let (house, ctl) = house();
    let tools = Arc::new(tools(&house, 30, 60));
    warm(&tools);
    let n = ctl.reads();
    kitchen(&tools);
    let one = ctl.reads() - n;
    assert!(one > 0);
    tools
        .call("list_rooms", serde_json::Map::new(), &caller())
        .unwrap();
    ctl.delay_ms.store(30, Ordering::SeqCst);
    let start = ctl.reads();
    let threads = 8;
    let barrier = Arc::new(Barrier::new(threads));
    let answers: Vec<Json> = (0..threads)
        .map(|_| {
            let tools = tools.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                kitchen(&tools)
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    assert_eq!(
        ctl.reads() - start,
        0,
        "the entry filled before answered them all"
    );
    assert!(answers.windows(2).all(|w| w[0] == w[1]));
}

#[test]
fn concurrent_reads_after_a_change_share_one_computation() {
    let (house, ctl) = house();
    let tools = Arc::new(tools(&house, 30, 60));
    warm(&tools);
    kitchen(&tools);
    let n = ctl.reads();
    kitchen(&tools);
    assert_eq!(ctl.reads(), n);
    let uuid = light_uuid(&house);
    ctl.set(&uuid, 1.0);
    push_light(&house, 1.0);
    // The read the change causes is known too, so the computation learns nothing new and its
    // answer is kept: however the six threads are scheduled (all on one computation, or some
    // after it on the kept answer), the Miniserver is read exactly once per computation. The
    // sharing itself is tested at the cache, with the waiters seen on the flight
    // (`src/tools/cache.rs`).
    house.record(
        &uuid,
        Some(&uuid),
        Value::Number(1.0),
        std::time::SystemTime::now(),
        home_mcp::home::Source::Read,
    );
    ctl.delay_ms.store(30, Ordering::SeqCst);
    let barrier = Arc::new(Barrier::new(6));
    let handles: Vec<_> = (0..6)
        .map(|_| {
            let tools = tools.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                light_entry(&kitchen(&tools))
            })
        })
        .collect();
    let entries: Vec<Json> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(entries[0]["state"]["on"], true, "{}", entries[0]);
    let reads = ctl.reads() - n;
    let per_call = {
        let off = HomeTools::new(house.clone());
        ctl.delay_ms.store(0, Ordering::SeqCst);
        let m = ctl.reads();
        kitchen(&off);
        ctl.reads() - m
    };
    assert_eq!(reads, per_call, "six concurrent reads, one computation");
    assert!(entries.windows(2).all(|w| w[0] == w[1]));
}

#[test]
fn errors_are_not_cached() {
    let (house, ctl) = house();
    let tools = tools(&house, 30, 60);
    ctl.down.store(true, Ordering::SeqCst);
    // A listing whose values could not be read (success with a warning).
    let first = kitchen(&tools);
    assert!(first["data"]["warning"].is_string(), "{first}");
    let n = ctl.reads();
    kitchen(&tools);
    assert!(ctl.reads() > n, "asked again");
    // A tool error (isError).
    let r = call(&tools, "get_lights_status", json!({"room": KITCHEN})).unwrap();
    let n = ctl.reads();
    let again = call(&tools, "get_lights_status", json!({"room": KITCHEN})).unwrap();
    assert_eq!(r.is_error, again.is_error);
    assert!(ctl.reads() > n, "asked again");
    // A JSON-RPC error.
    assert!(call(&tools, "list_devices", json!({"room": 7})).is_err());
    assert!(call(&tools, "list_devices", json!({"room": 7})).is_err());
    // Back up: values are shown at once.
    ctl.down.store(false, Ordering::SeqCst);
    let up = kitchen(&tools);
    assert!(up["data"]["warning"].is_null(), "{up}");
}

/// The contents as JSON, without the ages of values (they grow while an answer is cached).
fn resource_text(r: &[ResourceContents]) -> Json {
    Json::Array(
        r.iter()
            .map(|c| {
                let text = c.text.as_deref().unwrap_or_default();
                without_ages(serde_json::from_str(text).unwrap_or(Json::String(text.into())))
            })
            .collect(),
    )
}

#[test]
fn resources_are_cached_and_invalidated() {
    let (house, ctl) = house();
    let tools = tools(&house, 30, 60);
    let ctx = RequestContext::default();
    let uri = "home://devices/all";
    tools.read_resource(uri, &ctx).unwrap();
    let first = tools.read_resource(uri, &ctx).unwrap();
    let n = ctl.reads();
    let second = tools.read_resource(uri, &ctx).unwrap();
    assert_eq!(ctl.reads(), n, "answered from the cache");
    assert_eq!(resource_text(&first), resource_text(&second));
    ok(
        &tools,
        "control_device",
        json!({"device": LIGHT, "action": "on"}),
    );
    let third = tools.read_resource(uri, &ctx).unwrap();
    assert!(ctl.reads() > n);
    assert_ne!(resource_text(&second), resource_text(&third));
    // Unknown URIs stay errors, every time.
    assert!(tools.read_resource("home://nope", &ctx).is_err());
    assert!(tools.read_resource("home://nope", &ctx).is_err());
}

fn caller() -> home_mcp::tools::Caller {
    home_mcp::tools::Caller::new("test")
}

/// On the demo house over real HTTP (simulator, real client, values always re-read): an
/// uncached read asks the Miniserver, a cached repeat asks it nothing and answers the same
/// envelope, timestamp included. (What that saves in time is for `tests/bench/`, not a test.)
#[test]
fn cached_repeats_on_the_demo_house_do_not_reach_the_miniserver() {
    use home_mcp::config::{MiniserverConfig, Timeouts};
    use home_mcp::loxone::client::Client;
    let sh = support::sim_house(home_mcp::sim::DEMO_STRUCTURE);
    let client = Client::new(
        &MiniserverConfig {
            base_url: sh.server.base_url(),
            user: home_mcp::sim::DEMO_USER.into(),
            password: home_mcp::sim::DEMO_PASSWORD.into(),
        },
        &Timeouts::default(),
    );
    let house = Arc::new(House::new(
        parse_structure(home_mcp::sim::DEMO_STRUCTURE).unwrap(),
        Arc::new(client),
        Duration::ZERO,
    ));
    house.link().set_mode(LinkMode::Polling);
    let off = HomeTools::new(house.clone());
    // An hour-long TTL: the repeats certainly fall within it.
    let on = tools(&house, 3600, 3600);
    for tool in ["list_devices", "get_home_summary"] {
        let before = sh.sim.request_count();
        ok(&off, tool, json!({}));
        let mid = sh.sim.request_count();
        assert!(mid > before, "{tool} uncached reads the Miniserver");
        ok(&off, tool, json!({}));
        assert!(sh.sim.request_count() > mid, "{tool} uncached, again");
        let first = text(&call(&on, tool, json!({})).unwrap());
        let filled = sh.sim.request_count();
        for _ in 0..20 {
            // The same answer, except the ages of its values, which grow while it is cached.
            assert_eq!(
                without_ages(text(&call(&on, tool, json!({})).unwrap())),
                without_ages(first.clone()),
                "{tool}"
            );
        }
        assert_eq!(
            sh.sim.requests_since(filled),
            Vec::<String>::new(),
            "{tool} cached repeats reached the Miniserver"
        );
    }
}

#[test]
fn a_workflow_change_invalidates_the_workflow_list() {
    let (house, _) = house();
    let tools = tools(&house, 30, 60);
    assert_eq!(ok(&tools, "list_workflows", json!({}))["total"], 0);
    assert_eq!(ok(&tools, "list_workflows", json!({}))["total"], 0);
    ok(
        &tools,
        "create_workflow",
        json!({"name": "Abend", "steps": [
            {"tool": "control_device", "arguments": {"device": LIGHT, "action": "off"}}
        ]}),
    );
    assert_eq!(ok(&tools, "list_workflows", json!({}))["total"], 1);
}

#[test]
fn a_value_pushed_before_a_reconnect_is_not_current_until_the_new_tables_come() {
    let (house, ctl) = house();
    let feed = HouseFeed::new(house.clone());
    let light = house.home().control(&light_uuid(&house)).unwrap().clone();
    feed.report(LinkEvent::Connected);
    push_light(&house, 1.0);
    let reads = ctl.reads();
    assert_eq!(house.value(&light).unwrap().value, Value::Number(1.0));
    assert_eq!(
        ctl.reads(),
        reads,
        "a pushed value is current while the link is up"
    );
    // The Miniserver restarts with the light off; the link reconnects.
    feed.report(LinkEvent::Disconnected {
        error: "the Miniserver closed the WebSocket".into(),
        retry_in: Duration::ZERO,
    });
    ctl.set(&light.uuid, 0.0);
    feed.report(LinkEvent::Connected);
    // Before the new session's tables arrive the old push is not current: the Miniserver is
    // asked, and says off.
    assert_eq!(house.value(&light).unwrap().value, Value::Number(0.0));
    assert_eq!(ctl.reads(), reads + 1, "asked once");
    // The new tables bring it; from then on the push is current again.
    push_light(&house, 0.0);
    let reads = ctl.reads();
    assert_eq!(house.value(&light).unwrap().value, Value::Number(0.0));
    assert_eq!(ctl.reads(), reads);
}

/// `v` without its `age_secs` fields (they grow while an answer is cached).
fn without_ages(mut v: Json) -> Json {
    fn strip(v: &mut Json) {
        match v {
            Json::Object(map) => {
                map.remove("age_secs");
                map.values_mut().for_each(strip);
            }
            Json::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    v
}

/// The largest `age_secs` anywhere in `v`.
fn oldest(v: &Json) -> Option<f64> {
    match v {
        Json::Object(map) => map
            .iter()
            .filter_map(|(k, x)| match k.as_str() {
                "age_secs" => x.as_f64(),
                _ => oldest(x),
            })
            .reduce(f64::max),
        Json::Array(items) => items.iter().filter_map(oldest).reduce(f64::max),
        _ => None,
    }
}

#[test]
fn a_cached_answer_says_how_old_its_values_are_now() {
    let (house, _ctl) = house();
    // An hour: the entry outlives any stall of a busy machine.
    let tools = tools(&house, 3600, 3600);
    warm(&tools);
    let first = kitchen(&tools);
    let first_age = oldest(&first).expect("the listing gives the age of its values");
    // Served from the cache (the same computation: the same timestamp), its values are as old
    // as they are now, not as they were when it was computed.
    wait_until("a cached answer with older values", PATIENCE, || {
        let again = kitchen(&tools);
        assert_eq!(
            again["timestamp"], first["timestamp"],
            "served from the cache"
        );
        match oldest(&again) {
            Some(age) if age > first_age => Ok(()),
            other => Err(other),
        }
    });
}

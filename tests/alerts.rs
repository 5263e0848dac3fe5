//! The Miniserver's Message Center and its notifications in the house (issue 31): read from
//! the structure files' `messageCenter` block, entries raised and cleared at the simulator
//! reaching the house's alerts and its change bus, marking read and confirming reaching the
//! simulator, and bad input (unknown entries, actions not offered, entry lists that are not
//! JSON or too large). The oracle is the simulator's own `getEntries` answer.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use home_mcp::config::MiniserverConfig;
use home_mcp::home::{
    AlertEvent, AlertOp, ControllerError, Event, House, MessageCenter, NotificationLevel, Severity,
};
use home_mcp::loxone::client::Client;
use home_mcp::loxone::structure::parse_structure_bytes;
use serde_json::json;

use crate::support::drive::MiniserverApi;
use crate::support::house::{demo, sim};
use crate::support::live::next_event;
use crate::support::unreachable::{demo_home, quick_timeouts};
use crate::support::wait::{wait_until, PATIENCE};
use crate::support::wire::commands_to;

/// The demo house's Message Center (`assets/demo-house.json`, block `messageCenter`).
const MC: &str = "1d5c3cf2-0230-600e-ffff504f94d0e5a1";

/// The alert event an event of the bus carries, if any.
fn alert(e: &Event) -> Option<&AlertEvent> {
    match e {
        Event::Alert(a) => Some(a),
        _ => None,
    }
}

fn fixture(name: &str) -> home_mcp::home::Home {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    parse_structure_bytes(&std::fs::read(&path).unwrap()).unwrap()
}

#[test]
fn real_structure_files_name_their_message_center() {
    // The two newer real files have the block (firmware 10.0+), the two older ones not.
    let kotlin = fixture("Smarteon-loxone-client-kotlin-sample-app.json");
    assert_eq!(
        kotlin.message_center,
        Some(MessageCenter {
            uuid: "1c8b2764-0053-364c-fffffd5438c1b69c".into(),
            name: "Stav systému".into(),
            changed: Some("1c8b2764-0053-364b-fffffd5438c1b69c".into()),
        })
    );
    let uk = fixture("TheJack75-Loxone.NET-uk-demo-miniserver.json");
    assert_eq!(
        uk.message_center
            .as_ref()
            .map(|m| (m.uuid.as_str(), m.name.as_str())),
        Some(("12576ed6-0069-9723-fffff618466b9d15", "System status"))
    );
    assert!(uk.global_states.contains_key("notifications"));
    for older in [
        "Smarteon-loxone-java-showroom.json",
        "SolarNetwork-solarnetwork-loxone-evident-test.json",
    ] {
        assert_eq!(fixture(older).message_center, None, "{older}");
    }
    assert_eq!(
        demo_home().message_center.map(|m| m.uuid),
        Some(MC.to_string())
    );
}

#[test]
fn the_message_center_reaches_the_house_and_confirming_reaches_the_simulator() {
    let (app, _tools) = demo();
    let ms = MiniserverApi::of(&app);
    let house = &app.house;
    // The seeded entries, as the simulator lists them, reach the house.
    let listed = ms.message_center_entries(MC);
    let active = listed
        .iter()
        .find(|e| e["isHistoric"] == false)
        .expect("the simulator starts with an active entry");
    let seeded = active["entryUuid"].as_str().unwrap().to_string();
    let snap = wait_until("the seeded entries in the house", PATIENCE, || {
        let s = house.alerts();
        if s.entries.len() == listed.len() {
            Ok(s)
        } else {
            Err(s)
        }
    });
    let a = snap.get(&seeded).expect("the active entry");
    assert!(a.is_active());
    assert_eq!(a.title, active["title"].as_str().unwrap());
    assert_eq!(
        a.severity,
        Severity::from_level(active["severity"].as_i64().unwrap())
    );
    assert_eq!(a.room.as_deref(), active["roomUuid"].as_str());
    assert!(a.offers(1005), "the warning offers the confirm action");
    assert!(
        snap.entries.iter().any(|e| e.historic),
        "and a historic one"
    );

    // Raised at the simulator: on the bus, then in the house.
    let sub = house.bus().subscribe(1024);
    let id = ms.drive("messagecenter/raise?title=Extension%20offline&severity=4&room=Keller");
    let ev = next_event(
        &sub,
        "the raised entry on the bus",
        |e| matches!(alert(e), Some(AlertEvent::Raised(a)) if a.id == id),
    );
    let Some(AlertEvent::Raised(raised)) = alert(&ev) else {
        unreachable!()
    };
    assert_eq!(raised.severity, Severity::Critical);
    assert_eq!(raised.title, "Extension offline");
    let keller = house.home().resolve_room("Keller").unwrap().uuid.clone();
    assert_eq!(raised.room.as_deref(), Some(keller.as_str()));

    // Marked read, then confirmed, through the house: the simulator says so.
    let read = house.act_on_alert(&id, AlertOp::Read, "test").unwrap();
    assert!(ms.message_center_entry(MC, &id)["readAt"].is_number());
    assert!(read.read_at.is_some());
    let confirmed = house.act_on_alert(&id, AlertOp::Confirm, "test").unwrap();
    let at_sim = ms.message_center_entry(MC, &id);
    assert!(at_sim["confirmedAt"].is_number(), "{at_sim}");
    assert_eq!(at_sim["isHistoric"], true, "{at_sim}");
    assert!(confirmed.historic && confirmed.confirmed_at.is_some());
    next_event(
        &sub,
        "the confirmed entry cleared on the bus",
        |e| matches!(alert(e), Some(AlertEvent::Cleared(a)) if a.id == id),
    );

    // Cleared at the simulator (its cause gone): cleared in the house.
    let other = ms.drive("messagecenter/raise?title=Kein%20Internet&severity=2");
    next_event(
        &sub,
        "the second entry raised",
        |e| matches!(alert(e), Some(AlertEvent::Raised(a)) if a.id == other),
    );
    ms.drive(&format!("messagecenter/clear/{other}"));
    next_event(
        &sub,
        "the second entry cleared",
        |e| matches!(alert(e), Some(AlertEvent::Cleared(a)) if a.id == other && a.historic),
    );
    assert!(!house.alerts().get(&other).unwrap().is_active());
}

#[test]
fn unknown_entries_and_actions_not_offered_send_nothing() {
    let (app, _tools) = demo();
    let ms = MiniserverApi::of(&app);
    let house = &app.house;
    let id = ms.drive("messagecenter/raise?title=Nur%20lesen&confirm=0");
    wait_until("the entry in the house", PATIENCE, || {
        house.alerts().get(&id).cloned().ok_or("not yet")
    });
    let before = commands_to(sim(&app), MC).len();
    assert_eq!(
        house.act_on_alert("no-such-entry", AlertOp::Confirm, "test"),
        Err(ControllerError::NoSuchAlert("no-such-entry".into()))
    );
    let e = house
        .act_on_alert(&id, AlertOp::Confirm, "test")
        .unwrap_err();
    assert!(
        matches!(&e, ControllerError::ActionNotOffered { offered, .. } if offered.is_empty()),
        "{e:?}"
    );
    assert_eq!(e.code(), "INVALID_PARAMETERS");
    // A path in an id never reaches a URL: it names no entry.
    assert!(matches!(
        house.act_on_alert("../../dev/sps/io/x/on", AlertOp::Read, "test"),
        Err(ControllerError::NoSuchAlert(_))
    ));
    let sent: Vec<String> = commands_to(sim(&app), MC)
        .into_iter()
        .skip(before)
        .collect();
    assert!(sent.is_empty(), "nothing but reads was sent: {sent:?}");
    assert!(ms.message_center_entry(MC, &id)["confirmedAt"].is_null());
}

#[test]
fn notifications_pushed_by_the_miniserver_reach_the_bus_once() {
    let (app, _tools) = demo();
    crate::support::live::wait_websocket(&app);
    let ms = MiniserverApi::of(&app);
    let sub = app.house.bus().subscribe(1024);
    let uid = ms.drive("notify?title=Waschmaschine&message=fertig&lvl=2");
    let ev = next_event(
        &sub,
        "the notification on the bus",
        |e| matches!(alert(e), Some(AlertEvent::Notification(n)) if n.uid == uid),
    );
    let Some(AlertEvent::Notification(n)) = alert(&ev) else {
        unreachable!()
    };
    assert_eq!(
        (n.title.as_str(), n.message.as_str()),
        ("Waschmaschine", "fertig")
    );
    assert_eq!(n.level, NotificationLevel::Error);
    // After a reconnect the initial table carries it again: not told twice.
    sim(&app).ws_drop_connections();
    let second = ms.drive("notify?title=Post&message=da");
    next_event(
        &sub,
        "the next notification",
        |e| matches!(alert(e), Some(AlertEvent::Notification(n)) if n.uid == second),
    );
    let told: Vec<_> = app
        .house
        .alerts()
        .notifications
        .iter()
        .map(|n| n.uid.clone())
        .collect();
    assert_eq!(told.iter().filter(|u| **u == uid).count(), 1, "{told:?}");
}

/// A one-request Miniserver on loopback that answers every request with `body` (an `LL`
/// envelope), for entry lists no simulator would send.
fn answering(body: Vec<u8>) -> (MiniserverConfig, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let handle = std::thread::spawn(move || {
        if let Ok((mut s, _)) = listener.accept() {
            let mut buf = [0u8; 4096];
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let _ = s.read(&mut buf);
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes());
            let _ = s.write_all(&body);
        }
    });
    let config = MiniserverConfig {
        base_url: format!("http://{addr}"),
        user: "demo".into(),
        password: "demo".into(),
    };
    (config, handle)
}

#[test]
fn entry_lists_that_are_not_json_or_too_large_are_errors() {
    let huge = "x".repeat(2 * 1024 * 1024);
    let cases = [
        (
            json!({"LL": {"control": "x", "value": "{\"entries\": [", "Code": "200"}}).to_string(),
            "not JSON",
        ),
        (
            json!({"LL": {"control": "x", "value": huge, "Code": "200"}}).to_string(),
            "larger than",
        ),
    ];
    for (body, expect) in cases {
        let (ms, server) = answering(body.into_bytes());
        let client = Client::with_auth(&ms, &quick_timeouts(), home_mcp::config::AuthMode::Basic);
        let house = House::new(demo_home(), Arc::new(client), Duration::from_secs(5));
        let e = house.refresh_alerts().unwrap_err();
        assert!(e.to_string().contains(expect), "{expect}: {e}");
        let snap = house.alerts();
        assert!(snap.entries.is_empty());
        assert!(snap.last_error.unwrap().contains(expect));
        server.join().unwrap();
    }
}

#[test]
fn clients_that_declared_logging_hear_of_alerts_at_a_matching_level() {
    use crate::support::server::Miniserver;

    let ms = Miniserver::demo();
    let mut c = stdio_on(&ms);
    let set = c.rpc("logging/setLevel", json!({"level": "warning"}));
    assert!(set.get("result").is_some(), "{set}");
    // An info entry first, then a critical one: the first log message about an alert must be
    // the critical one (messages keep the order of events; info is below "warning").
    let info = ms
        .api
        .drive("messagecenter/raise?title=Nur%20Info&severity=1");
    let critical = ms
        .api
        .drive("messagecenter/raise?title=Extension%20offline&severity=4");
    // (The seeded warning may be told too, when the server's first read of the Message
    // Center comes after setLevel: it is about another entry.)
    let ours = [info.clone(), critical.clone()];
    let m = c.next_matching("a log message about one of the two entries", |v| {
        v["method"] == "notifications/message"
            && v["params"]["logger"] == "home.alerts"
            && ours
                .iter()
                .any(|id| v["params"]["data"]["alert"]["id"] == id.as_str())
    });
    let p = &m["params"];
    assert_eq!(
        p["data"]["alert"]["id"],
        critical.as_str(),
        "not the info one ({info}): {m}"
    );
    assert_eq!(p["level"], "critical", "{m}");
    assert_eq!(p["data"]["event"], "alert_raised");
    assert!(
        p["data"]["message"]
            .as_str()
            .unwrap()
            .contains("Extension offline"),
        "{m}"
    );
    // A pushed notification of level 2 (error) is told at "error".
    let uid = ms
        .api
        .drive("notify?title=Wasser&message=Keller%20nass&lvl=2");
    let m = c.next_matching("a log message about the notification", |v| {
        v["method"] == "notifications/message"
            && v["params"]["data"]["notification"]["uid"] == uid.as_str()
    });
    assert_eq!(m["params"]["level"], "error", "{m}");
}

#[test]
fn list_alerts_and_confirm_alert_answer_as_the_simulator_lists() {
    use crate::support::house::{ok, tool_error};
    let (app, tools) = demo();
    let ms = MiniserverApi::of(&app);
    let listed = ms.message_center_entries(MC);
    let seeded = listed
        .iter()
        .find(|e| e["isHistoric"] == false)
        .unwrap()
        .clone();
    let id = seeded["entryUuid"].as_str().unwrap();
    let data = ok(&tools, "list_alerts", json!({}));
    assert_eq!(data["available"], true);
    let first = &data["active"][0];
    assert_eq!(first["id"], id, "{data}");
    assert_eq!(first["title"], seeded["title"]);
    assert_eq!(first["severity"], "warning");
    assert_eq!(first["room"], "Flur", "the room by name");
    assert_eq!(first["can_confirm"], true);
    assert_eq!(data["counts"]["warning"], 1);
    assert!(data.get("historic").is_none(), "only on request");
    let with_past = ok(&tools, "list_alerts", json!({"historic": true}));
    let past = with_past["historic"].as_array().unwrap();
    assert_eq!(
        past.len(),
        listed.iter().filter(|e| e["isHistoric"] == true).count()
    );
    // The resource is the tool's answer.
    let r = home_mcp::mcp::Handler::read_resource(
        &tools,
        "home://alerts",
        &home_mcp::mcp::RequestContext::default(),
    )
    .unwrap();
    let res: serde_json::Value = serde_json::from_str(r[0].text.as_deref().unwrap()).unwrap();
    assert_eq!(res["active"][0]["id"], id);

    // Unknown ids and confirming what cannot be confirmed are refused, naming why.
    let e = tool_error(&tools, "confirm_alert", json!({"alert": "nope"}));
    assert_eq!(e["code"], "INVALID_PARAMETERS", "{e}");
    let hist = past[0]["id"].as_str().unwrap();
    let e = tool_error(&tools, "confirm_alert", json!({"alert": hist}));
    assert_eq!(e["code"], "INVALID_PARAMETERS", "{e}");
    assert!(
        e["message"].as_str().unwrap().contains("does not offer"),
        "{e}"
    );

    // Read, then confirmed: the simulator says so, and the entry leaves the active list.
    let read = ok(
        &tools,
        "confirm_alert",
        json!({"alert": id, "action": "read"}),
    );
    assert_eq!(read["action"], "read");
    assert!(ms.message_center_entry(MC, id)["readAt"].is_number());
    let done = ok(&tools, "confirm_alert", json!({"alert": id}));
    assert_eq!(done["alert"]["confirmed"], true, "{done}");
    let at_sim = ms.message_center_entry(MC, id);
    assert!(at_sim["confirmedAt"].is_number() && at_sim["isHistoric"] == true);
    let after = ok(&tools, "list_alerts", json!({}));
    assert!(
        after["active"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["id"] != id),
        "{after}"
    );
}

#[test]
fn the_summary_shows_the_houses_alerts_first() {
    use crate::support::house::ok;
    let (app, tools) = demo();
    let ms = MiniserverApi::of(&app);
    wait_until("the seeded entry in the house", PATIENCE, || {
        (!app.house.alerts().entries.is_empty())
            .then_some(())
            .ok_or("not yet")
    });
    let id = ms.drive("messagecenter/raise?title=Extension%20offline&severity=4&room=Keller");
    wait_until("the raised entry in the house", PATIENCE, || {
        app.house.alerts().get(&id).cloned().ok_or("not yet")
    });
    let summary = ok(&tools, "get_home_summary", json!({}));
    let alerts: Vec<&str> = summary["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    assert!(
        alerts[0].starts_with("critical: Extension offline (Keller)"),
        "most severe first: {alerts:?}"
    );
    assert!(alerts[1].starts_with("warning: "), "{alerts:?}");
    // A room summary shows that room's entries.
    let keller = ok(&tools, "get_home_summary", json!({"room": "Keller"}));
    let text = keller["alerts"].to_string();
    assert!(
        text.contains("Extension offline") && !text.contains("warning: "),
        "{text}"
    );
}

#[test]
fn a_subscriber_of_home_alerts_hears_of_a_raised_entry() {
    use crate::support::server::Miniserver;

    let ms = Miniserver::demo();
    let mut c = stdio_on(&ms);
    let sub = c.rpc("resources/subscribe", json!({"uri": "home://alerts"}));
    assert!(sub.get("result").is_some(), "{sub}");
    let id = ms
        .api
        .drive("messagecenter/raise?title=Kein%20Internet&severity=2");
    // An update may come first for the entries the server found at start (the demo's battery
    // warning): each update is read, until one shows the raised entry (each wait is bounded).
    let mut text = String::new();
    for _ in 0..10 {
        c.next_matching("notifications/resources/updated home://alerts", |v| {
            v["method"] == "notifications/resources/updated"
                && v["params"]["uri"] == "home://alerts"
        });
        let read = c.rpc("resources/read", json!({"uri": "home://alerts"}));
        text = read["result"]["contents"][0]["text"]
            .as_str()
            .unwrap()
            .to_string();
        if text.contains(&id) {
            return;
        }
    }
    panic!("ten updates of home://alerts, none with the raised entry {id}; last: {text}");
}

/// `home-mcp stdio` (the real binary, an initialized session) on the Miniserver `ms`.
fn stdio_on(ms: &crate::support::server::Miniserver) -> crate::support::mcp::McpStdio {
    let host = format!("http://{}", ms.api.addr);
    crate::support::mcp::McpStdio::start(
        &[],
        &[
            ("HOME_HOST", host.as_str()),
            ("HOME_USER", "demo"),
            ("HOME_PASS", "demo"),
        ],
    )
}

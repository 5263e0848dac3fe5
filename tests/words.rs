//! One word, one set of controls (issue 27): a word for a group of controls (a family, one of
//! the owner's Loxone categories, a control type) means the same controls in `list_devices
//! {category}`, a dry run of `control_*_unified` with scope `category`, a key limited to that
//! category, and `home://devices/category/{word}`. Asked from outside: MCP over HTTP against
//! the real `serve` binary on a simulator serving a real structure file; what a scoped key may
//! touch is judged by what reaches the simulator. And light moods by the owner's names.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{json, Value};

use home_mcp::auth::Role;
use home_mcp::sim::{SimConfig, DEMO_STRUCTURE, DEMO_VALUES};

use crate::support::gate::key;
use crate::support::house::fixture_text;
use crate::support::mcp::McpHttp;
use crate::support::server::{Miniserver, Served};
use crate::support::wait::wait_until;
use crate::support::wire::commands_since;

/// A harmless command per type for probing what a key may touch: lights and switches off,
/// blinds stop. Other types are left out (their commands open, arm or play something).
fn probe(kind: &str) -> Option<&'static str> {
    match kind {
        "LightControllerV2"
        | "LightController"
        | "CentralLightController"
        | "Dimmer"
        | "EIBDimmer"
        | "Switch"
        | "TimedSwitch" => Some("off"),
        "Jalousie" | "CentralJalousie" => Some("stop"),
        _ => None,
    }
}

/// `(uuid, type)` of every top-level control of the structure file (the oracle's universe).
fn controls_of(structure: &str) -> Vec<(String, String)> {
    let doc: Value = serde_json::from_str(structure).unwrap();
    doc["controls"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(u, c)| (u.clone(), c["type"].as_str().unwrap().to_string()))
        .collect()
}

fn uuids(devices: &Value) -> BTreeSet<String> {
    devices
        .as_array()
        .unwrap_or_else(|| panic!("a device list: {devices}"))
        .iter()
        .map(|d| d["uuid"].as_str().unwrap().to_string())
        .collect()
}

/// One word in one house: which unified tool, and which of the word's controls that tool
/// works on (by type, from the listing).
struct Case {
    word: &'static str,
    tool: &'static str,
    worked: fn(&str) -> bool,
}

fn lights(kind: &str) -> bool {
    kind != "CentralLightController"
}

fn jalousies(kind: &str) -> bool {
    kind == "Jalousie"
}

/// Runs every case on the house `structure`: one server, an unscoped key for listings and
/// resources, and one key limited to each case's word.
fn one_word_one_set(house: &str, structure: &str, values: Option<&str>, cases: &[Case]) {
    let ms = Miniserver::start(structure, values, SimConfig::default());
    let open = format!("homekey_operator_1_{}", "ab".repeat(16));
    let mut keys = vec![key(&open, Role::Operator)];
    let scoped: Vec<String> = (0..cases.len())
        .map(|i| format!("homekey_operator_{}_{}", i + 2, "cd".repeat(16)))
        .collect();
    for (case, secret) in cases.iter().zip(&scoped) {
        let mut k = key(secret, Role::Operator);
        k.categories = vec![case.word.to_string()];
        keys.push(k);
    }
    // No verification wait: the probe below only looks at what reaches the simulator.
    let served = Served::start_with_keys(
        &ms,
        &keys,
        "[auth]\nsecurity_level = \"staging\"\n[server]\nverify_timeout_ms = 0\n",
    );
    let mut mcp = McpHttp::connect(served.addr, Some(&open));
    let universe = controls_of(structure);

    for (case, secret) in cases.iter().zip(&scoped) {
        let word = case.word;
        // list_devices {category}
        let listed = mcp.ok("list_devices", json!({"category": word, "limit": 500}));
        let set = uuids(&listed["devices"]);
        assert_eq!(listed["total"], set.len(), "{house} {word}: one page");
        assert!(!set.is_empty(), "{house} {word}: the word names controls");

        // home://devices/category/{word}
        let read = mcp.rpc(
            "resources/read",
            json!({"uri": format!("home://devices/category/{word}")}),
        );
        let text = read["result"]["contents"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{house} {word}: {read}"));
        let content: Value = serde_json::from_str(text).unwrap();
        assert_eq!(uuids(&content["devices"]), set, "{house} {word}: resource");

        // A dry run of the unified tool with scope category: the word's controls it works on.
        let types: std::collections::BTreeMap<String, String> = listed["devices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                (
                    d["uuid"].as_str().unwrap().to_string(),
                    d["type"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let want: BTreeSet<String> = set
            .iter()
            .filter(|u| (case.worked)(&types[*u]))
            .cloned()
            .collect();
        assert!(!want.is_empty(), "{house} {word}: the tool has work");
        let action = if case.tool == "control_lights_unified" {
            "off"
        } else {
            "down"
        };
        let dry = mcp.ok(
            case.tool,
            json!({"scope": "category", "target": word, "action": action, "dry_run": true}),
        );
        let planned: BTreeSet<String> = dry["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["device"]["uuid"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(planned, want, "{house} {word}: {} dry run", case.tool);

        // What a key limited to the word may touch, judged at the simulator: every probed
        // control of the house gets a harmless command through that key.
        let mut scoped_mcp = McpHttp::connect(served.addr, Some(secret));
        let probed: Vec<&(String, String)> = universe
            .iter()
            .filter(|(_, t)| probe(t).is_some())
            .collect();
        let inside = probed.iter().filter(|(u, _)| set.contains(u)).count();
        assert!(
            inside > 0 && inside < probed.len(),
            "{house} {word}: probes inside ({inside}) and outside the word"
        );
        let mut touched = BTreeSet::new();
        for (uuid, kind) in &probed {
            let mark = ms.sim.request_count();
            let r = scoped_mcp.call(
                "control_device",
                json!({"device": uuid, "action": probe(kind).unwrap()}),
            );
            let sent = commands_since(&ms.sim, mark);
            if sent.iter().any(|l| l.contains(uuid.as_str())) {
                touched.insert(uuid.clone());
            } else {
                assert_eq!(r["isError"], true, "{house} {word}: {uuid} ({kind}): {r}");
            }
        }
        let want_touched: BTreeSet<String> = probed
            .iter()
            .map(|(u, _)| u.clone())
            .filter(|u| set.contains(u))
            .collect();
        assert_eq!(
            touched, want_touched,
            "{house} {word}: what the key touched"
        );
    }
}

/// The UK demo Miniserver, whose Loxone category is called "Lighting": the category word the
/// issue names, and "blinds", a family word that is no category there.
#[test]
fn one_word_names_one_set_in_the_uk_house() {
    one_word_one_set(
        "UK",
        &fixture_text("TheJack75-Loxone.NET-uk-demo-miniserver.json"),
        None,
        &[
            Case {
                word: "Lighting",
                tool: "control_lights_unified",
                worked: lights,
            },
            Case {
                word: "blinds",
                tool: "control_rolladen_unified",
                worked: jalousies,
            },
        ],
    );
}

/// The German demo house: its own category "Beleuchtung" (no family word) and the family
/// word "blinds".
#[test]
fn one_word_names_one_set_in_the_german_house() {
    one_word_one_set(
        "demo",
        DEMO_STRUCTURE,
        Some(DEMO_VALUES),
        &[
            Case {
                word: "Beleuchtung",
                tool: "control_lights_unified",
                worked: lights,
            },
            Case {
                word: "blinds",
                tool: "control_rolladen_unified",
                worked: jalousies,
            },
        ],
    );
}

/// The SolarNetwork test Miniserver files two window motors (Jalousie blocks) under
/// "Window", so its "Shading" category is not the blinds family: "Shading", a family word, is
/// the blinds family for every reader (tools, keys, resources alike).
#[test]
fn one_word_names_one_set_where_category_and_family_differ() {
    one_word_one_set(
        "SolarNetwork",
        &fixture_text("SolarNetwork-solarnetwork-loxone-evident-test.json"),
        None,
        &[Case {
            word: "Shading",
            tool: "control_rolladen_unified",
            worked: jalousies,
        }],
    );
}

/// The living room's LightControllerV2 of the demo house and its moods (demo values).
fn living_room_light(structure: &str) -> String {
    let doc: Value = serde_json::from_str(structure).unwrap();
    let room = doc["rooms"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, r)| r["name"] == "Wohnzimmer")
        .map(|(u, _)| u.clone())
        .expect("a Wohnzimmer");
    doc["controls"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, c)| c["type"] == "LightControllerV2" && c["room"] == room.as_str())
        .map(|(u, _)| u.clone())
        .expect("a LightControllerV2 in the Wohnzimmer")
}

/// The path of a request line (`GET /jdev/sps/io/... HTTP/1.1`, query dropped).
fn path(line: &str) -> &str {
    let p = line.split(' ').nth(1).unwrap_or("");
    p.split('?').next().unwrap_or("")
}

/// The id the simulator's `moodList` gives the mood `name` of `light` (the oracle).
fn mood_id(ms: &Miniserver, light: &str, name: &str) -> u64 {
    let list = ms.sim.state_text(light, "moodList").expect("a moodList");
    let list: Value = serde_json::from_str(&list).unwrap();
    list.as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .and_then(|m| m["id"].as_u64())
        .unwrap_or_else(|| panic!("{name} in {list}"))
}

/// "Switch the living room to Fernsehen": the mood by the owner's name reaches the Miniserver
/// as `changeTo/{id}`, `activeMoods` says so, and the answer is verified; an unknown name is
/// an invalid argument (-32602) that lists the moods and sends nothing (never `plus`).
#[test]
fn a_light_mood_by_its_name() {
    let ms = Miniserver::demo();
    let served = Served::start(&ms, "", &[]);
    let mut mcp = McpHttp::connect(served.addr, None);
    let light = living_room_light(DEMO_STRUCTURE);
    let id = mood_id(&ms, &light, "Fernsehen");
    // The moods arrive with the Miniserver's event stream after the start: until then a name
    // is refused with a pointer to the id (a dry run sends nothing).
    wait_until(
        "the moods over the event stream",
        Duration::from_secs(20),
        || {
            let r = mcp.rpc(
                "tools/call",
                json!({"name": "control_device", "arguments":
                {"device": light, "action": "mood", "mood": "Fernsehen", "dry_run": true}}),
            );
            match r.get("error") {
                Some(e) => Err(e.clone()),
                None => Ok(()),
            }
        },
    );

    let mark = ms.sim.request_count();
    let data = mcp.ok(
        "control_device",
        json!({"device": light, "action": "mood", "mood": "fernsehen"}),
    );
    let sent = commands_since(&ms.sim, mark);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(
        path(&sent[0]).ends_with(&format!("{light}/changeTo/{id}")),
        "{sent:?}"
    );
    assert_eq!(
        ms.sim.state_text(&light, "activeMoods").as_deref(),
        Some(format!("[{id}]").as_str())
    );
    assert_eq!(data["verified"], true, "{data}");

    // An unknown name: an error naming the moods, nothing sent.
    let mark = ms.sim.request_count();
    let r = mcp.rpc(
        "tools/call",
        json!({"name": "control_device",
            "arguments": {"device": light, "action": "mood", "mood": "Kino"}}),
    );
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let text = r["error"]["message"].to_string();
    assert!(
        text.contains("Kino") && text.contains("Fernsehen") && text.contains("Abendessen"),
        "{text}"
    );
    assert_eq!(commands_since(&ms.sim, mark), Vec::<String>::new());

    // A name is bounded (the schema's maxLength 100).
    let r = mcp.rpc(
        "tools/call",
        json!({"name": "control_device",
            "arguments": {"device": light, "action": "mood", "mood": "x".repeat(101)}}),
    );
    assert_eq!(r["error"]["code"], -32602, "{r}");

    // In a batch too; a name and an id at once is refused.
    let mark = ms.sim.request_count();
    let off = mood_id(&ms, &light, "Aus");
    let data = mcp.ok(
        "control_multiple_devices",
        json!({"operations": [{"device": light, "action": "mood", "mood": "AUS"}]}),
    );
    assert_eq!(data["results"][0]["status"], "ok", "{data}");
    let sent = commands_since(&ms.sim, mark);
    assert!(
        sent.iter()
            .any(|l| path(l).ends_with(&format!("{light}/changeTo/{off}"))),
        "{sent:?}"
    );
    let r = mcp.rpc(
        "tools/call",
        json!({"name": "control_device",
            "arguments": {"device": light, "action": "mood", "mood": "Fernsehen", "scene": id}}),
    );
    assert_eq!(r["error"]["code"], -32602, "{r}");
}

/// Completions of `{category}` offer the words the readers take, each meaning what it is
/// offered as: every family name, and every Loxone category by a key that reads as that
/// category (its UUID where its name is a family word, as "Lighting" in the UK house).
#[test]
fn category_completions_offer_the_words_the_tools_read() {
    let structure = fixture_text("TheJack75-Loxone.NET-uk-demo-miniserver.json");
    let doc: Value = serde_json::from_str(&structure).unwrap();
    let ms = Miniserver::start(&structure, None, SimConfig::default());
    let served = Served::start(&ms, "", &[]);
    let mut mcp = McpHttp::connect(served.addr, None);
    let r = mcp.rpc(
        "completion/complete",
        json!({"ref": {"type": "ref/resource", "uri": "home://devices/category/{category}"},
            "argument": {"name": "category", "value": ""}}),
    );
    let values: Vec<String> = r["result"]["completion"]["values"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    let cats = doc["cats"].as_object().unwrap();
    assert_eq!(values.len(), 9 + cats.len(), "{values:?}");
    const FAMILIES: [&str; 9] = [
        "lighting", "blinds", "climate", "audio", "security", "access", "sensors", "energy",
        "other",
    ];
    for family in FAMILIES {
        assert!(values.iter().any(|v| v == family), "{family} in {values:?}");
    }
    let read = |mcp: &mut McpHttp, v: &str| -> BTreeSet<String> {
        let r = mcp.rpc(
            "resources/read",
            json!({"uri": format!("home://devices/category/{v}")}),
        );
        let text = r["result"]["contents"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{v}: {r}"));
        uuids(&serde_json::from_str::<Value>(text).unwrap()["devices"])
    };
    // Each category is offered once, by a key that reads as exactly its controls.
    for (uuid, cat) in cats {
        let filed: BTreeSet<String> = doc["controls"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(_, c)| c["cat"] == uuid.as_str())
            .map(|(u, _)| u.clone())
            .collect();
        let offered: Vec<&String> = values
            .iter()
            .filter(|v| !FAMILIES.contains(&v.as_str()))
            .filter(|v| v.as_str() == uuid || read_key_is(v, cat["name"].as_str().unwrap()))
            .collect();
        assert_eq!(offered.len(), 1, "{}: {offered:?}", cat["name"]);
        assert_eq!(read(&mut mcp, offered[0]), filed, "{}", cat["name"]);
    }
    let lighting = cats
        .iter()
        .find(|(_, c)| c["name"] == "Lighting")
        .map(|(u, _)| u.clone())
        .unwrap();
    assert!(
        values.contains(&lighting),
        "Lighting by its UUID: {values:?}"
    );
}

/// Whether the completion value `v` is the slug of the category name `name` (lowercase,
/// runs of other characters one `-`; accents do not occur in this house's names).
fn read_key_is(v: &str, name: &str) -> bool {
    let slug: Vec<String> = name
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect();
    v == slug.join("-")
}

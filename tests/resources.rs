//! MCP resources: every fixed resource and template reads on the demo house and on each real
//! structure file in `tests/fixtures/` (served by the simulator), with the JSON shape and
//! known rooms and devices; unknown URIs, malformed URIs and bad template values; subscribe
//! accept/reject; completion; and which URIs a state change affects.

use crate::support;

use home_mcp::home::{ControlKind, Family, Home};
use home_mcp::mcp::{CompletionRef, Handler, RequestContext, RpcError};
use home_mcp::resources::{self, affected_uris, canonical_uri, AffectedIndex};
use home_mcp::tools::HomeTools;
use serde_json::{Map, Value};
use support::fixture_app::{fixture_app, FIXTURES};

fn read(tools: &HomeTools, uri: &str) -> Result<Value, RpcError> {
    let contents = tools.read_resource(uri, &RequestContext::default())?;
    assert_eq!(contents.len(), 1, "{uri}");
    let c = &contents[0];
    assert_eq!(c.uri, uri);
    assert_eq!(c.mime_type.as_deref(), Some("application/json"));
    Ok(serde_json::from_str(c.text.as_deref().expect("text contents")).expect("JSON text"))
}

fn ok(tools: &HomeTools, uri: &str) -> Value {
    read(tools, uri).unwrap_or_else(|e| panic!("{uri}: {e:?}"))
}

fn err(tools: &HomeTools, uri: &str) -> RpcError {
    match read(tools, uri) {
        Err(e) => e,
        Ok(v) => panic!("{uri} should fail, got {v}"),
    }
}

/// Details of a -32002 as JSON.
fn details(e: &RpcError) -> Value {
    serde_json::from_str(e.details.as_deref().expect("details")).expect("JSON details")
}

/// Every fixed URI of `resources/list` (without the per-room entries).
const FIXED: &[&str] = &[
    "home://summary",
    "home://rooms",
    "home://devices/all",
    "home://system/status",
    "home://system/capabilities",
    "home://system/categories",
    "home://sensors",
    "home://sensors/door-window",
    "home://sensors/temperature",
    "home://sensors/motion",
    "home://sensors/humidity",
    "home://sensors/brightness",
    "home://lighting",
    "home://blinds",
    "home://climate",
    "home://audio",
    "home://security",
    "home://energy",
    "home://weather",
    "home://workflows",
];

/// Reads every fixed resource, every room's templates, every type, family and Loxone
/// category and every top-level device of `home`, checking the shapes.
fn read_everything(tools: &HomeTools, home: &Home) {
    let listed = tools.list_resources();
    for uri in FIXED {
        assert!(listed.iter().any(|r| r.uri == *uri), "{uri} listed");
    }
    for r in &listed {
        assert_eq!(r.mime_type.as_deref(), Some("application/json"));
        ok(tools, &r.uri);
        tools
            .check_subscribable(&r.uri)
            .expect("listed URIs are subscribable");
    }

    let rooms = ok(tools, "home://rooms");
    assert_eq!(rooms["total"], home.rooms.len());
    for r in &home.rooms {
        assert!(
            rooms["rooms"]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| x["name"] == r.name.as_str()),
            "room {} in home://rooms",
            r.name
        );
    }
    let all = ok(tools, "home://devices/all");
    assert_eq!(all["total"], home.controls.len());
    let status = ok(tools, "home://system/status");
    assert_eq!(status["counts"]["rooms"], home.rooms.len());
    assert_eq!(
        status["structure"]["last_modified"],
        home.last_modified.as_str()
    );
    assert!(status["link"]["mode"].is_string());
    let caps = ok(tools, "home://system/capabilities");
    assert_eq!(caps["tools"]["count"], tools.list_tools().len());
    for key in [
        "home://sensors/temperature",
        "home://sensors/motion",
        "home://sensors/door-window",
    ] {
        let v = ok(tools, key);
        assert!(v["sensors"].is_array(), "{key}");
    }
    assert!(ok(tools, "home://weather")["sources"].is_array());
    assert!(ok(tools, "home://workflows")["workflows"].is_array());

    for r in &home.rooms {
        let key = resources::room_key(home, r);
        let devices = ok(tools, &format!("home://rooms/{key}/devices"));
        let n = home.controls_in_room(&r.uuid).len();
        assert_eq!(devices["total"], n, "{}", r.name);
        assert_eq!(ok(tools, &format!("home://devices/{key}"))["total"], n);
        let o = ok(tools, &format!("home://rooms/{key}/overview"));
        assert_eq!(o["room"]["name"], r.name.as_str());
        assert!(o["statistics"]["lights_on"].is_u64());
        assert!(ok(tools, &format!("home://climate/{key}")).is_object());
        // By UUID too, canonicalised to the key.
        let by_uuid = format!("home://rooms/{}/devices", r.uuid);
        ok(tools, &by_uuid);
        assert_eq!(
            canonical_uri(home, &by_uuid).unwrap(),
            format!("home://rooms/{key}/devices")
        );
    }
    for f in Family::ALL {
        let n = home.controls.iter().filter(|c| home.family(c) == f).count();
        let v = ok(tools, &format!("home://devices/category/{f}"));
        assert_eq!(v["total"], n, "{f}");
    }
    for c in &home.categories {
        let key = home.category_key(c);
        let n = home
            .controls
            .iter()
            .filter(|x| x.category.as_deref() == Some(c.uuid.as_str()))
            .count();
        assert_eq!(
            ok(tools, &format!("home://devices/category/{key}"))["total"],
            n
        );
    }
    let mut types: Vec<&str> = home.controls.iter().map(|c| c.kind.as_str()).collect();
    types.sort_unstable();
    types.dedup();
    for t in types {
        let v = ok(tools, &format!("home://devices/type/{t}"));
        assert!(v["devices"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["type"] == t));
    }
    for c in &home.controls {
        let v = ok(tools, &format!("home://devices/{}", c.uuid));
        assert_eq!(v["device"]["uuid"], c.uuid.as_str());
        assert_eq!(v["device"]["name"], c.name.as_str());
        assert!(v["states"].is_object());
        for s in &c.sub_controls {
            assert_eq!(
                ok(tools, &format!("home://devices/{}", s.uuid))["device"]["uuid"],
                s.uuid.as_str()
            );
        }
    }
}

#[test]
fn demo_house_reads_every_resource_and_template() {
    let (app, tools) = support::demo();
    let home = app.house.home();
    read_everything(&tools, &home);

    let listed = tools.list_resources();
    let templates = tools.list_resource_templates();
    assert!(listed.len() >= FIXED.len() + home.rooms.len());
    assert!(FIXED.len() + templates.len() >= 25);
    for t in [
        "home://rooms/{room}/devices",
        "home://rooms/{room}/overview",
        "home://devices/category/{category}",
        "home://devices/type/{type}",
        "home://devices/{room}",
        "home://devices/{uuid}",
        "home://climate/{room}",
    ] {
        assert!(templates.iter().any(|x| x.uri_template == t), "{t}");
    }

    // Known rooms and devices, names in any case and accents.
    let wz = ok(&tools, "home://rooms/wohnzimmer/devices");
    assert!(wz["devices"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["name"] == "Musik"));
    // The same room in another case: the same document, but for what may move between two
    // reads (each device's `state`: the simulated room temperature drifts toward its
    // target; the ages of the values; the link note while the link comes up).
    let without_values = |v: &Value| -> Value {
        let mut v = v.clone();
        let doc = v.as_object_mut().expect("an object");
        doc.remove("age_secs");
        doc.remove("link");
        for d in doc["devices"].as_array_mut().expect("devices") {
            d.as_object_mut().expect("a device").remove("state");
        }
        v
    };
    let wz_again = ok(&tools, "home://rooms/Wohnzimmer/devices");
    assert_eq!(without_values(&wz_again), without_values(&wz));
    let gwc = ok(&tools, "home://rooms/G%C3%A4ste-WC/overview");
    assert_eq!(gwc["room"]["slug"], "gaste-wc");
    assert_eq!(
        ok(&tools, "home://rooms/gäste wc/overview")["room"]["name"],
        "Gäste-WC"
    );
    assert_eq!(
        ok(&tools, "home://devices/küche")["total"],
        ok(&tools, "home://rooms/kuche/devices")["total"]
    );
    let o = ok(&tools, "home://rooms/wohnzimmer/overview");
    assert_eq!(o["statistics"]["audio_playing"], 1);
    assert_eq!(o["statistics"]["presence"], true);
    // The LightControllerV2 and the Dimmer in Beleuchtung; the Partymodus switch is in
    // Allgemein (`undefined`), so "other".
    assert_eq!(o["devices_by_family"]["lighting"], 2);
    let lighting = ok(&tools, "home://devices/category/Beleuchtung");
    assert_eq!(lighting["total"], 15);
    // The family: exactly the controls of Beleuchtung, the one category of type `lights`
    // (the switches in Allgemein and Energie are "other").
    assert_eq!(ok(&tools, "home://devices/category/lights")["total"], 15);
    assert_eq!(
        canonical_uri(&home, "home://devices/category/Lights").unwrap(),
        "home://devices/category/lighting"
    );
    assert_eq!(
        canonical_uri(&home, "home://devices/type/jalousie").unwrap(),
        "home://devices/type/Jalousie"
    );
    assert!(ok(&tools, "home://sensors/temperature")["sensors"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["name"] == "Außentemperatur"));
    let weather = ok(&tools, "home://weather");
    assert!(weather["sources"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["name"] == "Außentemperatur"));
    let sec = ok(&tools, "home://system/capabilities");
    assert!(sec["families"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["family"] == "lighting"));
    assert_eq!(sec["prompts"].as_array().unwrap().len(), 4);
}

#[test]
fn unknown_malformed_and_bad_values_are_told_apart() {
    let (_app, tools) = support::demo();
    for uri in [
        "home://nothing",
        "home://rooms/wohnzimmer/nothing",
        "home://system",
        "file:///etc/passwd",
        "https://example.com/x",
    ] {
        let e = err(&tools, uri);
        assert_eq!(e.code, -32002, "{uri}");
        assert!(e.message.contains(uri), "{uri}: {}", e.message);
        assert_eq!(tools.check_subscribable(uri).unwrap_err().code, -32002);
    }
    for uri in [
        "",
        "rooms",
        "home://",
        "home://rooms//devices",
        "home://rooms?x=1",
        "home://rooms#top",
        "home://rooms/%zz/devices",
        "home://rooms/",
    ] {
        let e = err(&tools, uri);
        assert_eq!(e.code, -32602, "{uri:?}");
        assert_eq!(tools.check_subscribable(uri).unwrap_err().code, -32602);
    }
    // Bad template values: -32002 with suggestions.
    let e = err(&tools, "home://rooms/wohnzimer/devices");
    assert_eq!(e.code, -32002);
    let d = details(&e);
    assert_eq!(d["uri"], "home://rooms/wohnzimer/devices");
    assert!(
        d["suggestions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == "wohnzimmer"),
        "{d}"
    );
    let e = err(&tools, "home://devices/category/kitchenware");
    assert_eq!(e.code, -32002);
    assert!(details(&e)["suggestions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s == "beleuchtung"));
    let e = err(&tools, "home://devices/type/Toaster");
    assert_eq!(e.code, -32002);
    assert!(details(&e)["suggestions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s == "Jalousie"));
    let e = err(&tools, "home://devices/0badc0de-0000-0000-ffff000000000000");
    assert_eq!(e.code, -32002);
    let e = err(&tools, "home://climate/attic");
    assert_eq!(e.code, -32002);
    let e = err(&tools, "home://rooms/nowhere/overview");
    assert_eq!(
        tools
            .check_subscribable("home://rooms/nowhere/overview")
            .unwrap_err(),
        e
    );
    // Subscribable: exactly what reads.
    for uri in [
        "home://rooms/Küche/overview",
        "home://devices/all",
        "home://devices/type/Jalousie",
        "home://climate",
    ] {
        tools.check_subscribable(uri).unwrap();
        ok(&tools, uri);
    }
}

fn complete(tools: &HomeTools, r: CompletionRef, arg: &str, value: &str) -> Vec<String> {
    tools.complete(&r, arg, value, &Map::new()).unwrap().values
}

#[test]
fn completion_of_template_values() {
    let (app, tools) = support::demo();
    let home = app.house.home();
    let res = |t: &str| CompletionRef::Resource(t.into());
    assert_eq!(
        complete(&tools, res("home://rooms/{room}/devices"), "room", "gäs"),
        vec!["gaste-wc"]
    );
    // Accents are ignored: "gä" is "ga".
    assert_eq!(
        complete(&tools, res("home://rooms/{room}/devices"), "room", "gä"),
        vec!["garage", "gaste-wc"]
    );
    assert_eq!(
        complete(&tools, res("home://rooms/{room}/overview"), "room", "KÜ"),
        vec!["kuche"]
    );
    assert_eq!(
        complete(&tools, res("home://rooms/{room}/devices"), "room", "").len(),
        home.rooms.len()
    );
    // A word of the name counts: "Room" of "Guest Room".
    assert_eq!(
        complete(&tools, res("home://climate/{room}"), "room", "roo"),
        vec!["guest-room"]
    );
    let cats = complete(
        &tools,
        res("home://devices/category/{category}"),
        "category",
        "be",
    );
    assert_eq!(cats, vec!["beleuchtung", "beschattung"]);
    assert!(complete(
        &tools,
        res("home://devices/category/{category}"),
        "category",
        "li"
    )
    .contains(&"lighting".to_string()));
    assert_eq!(
        complete(&tools, res("home://devices/type/{type}"), "type", "jal"),
        vec!["Jalousie"]
    );
    let uuids = complete(&tools, res("home://devices/{uuid}"), "uuid", "außen");
    assert!(!uuids.is_empty());
    for u in &uuids {
        assert!(home.control(u).unwrap().name.starts_with("Außen"));
    }
    let c = &home.controls[3];
    assert_eq!(
        complete(&tools, res("home://devices/{uuid}"), "uuid", &c.uuid[..13]),
        vec![c.uuid.clone()]
    );
    let all = tools
        .complete(&res("home://devices/{uuid}"), "uuid", "", &Map::new())
        .unwrap();
    assert!(all.values.len() <= 100);
    assert_eq!(all.total, Some(home.controls.len()));
    assert_eq!(all.has_more, home.controls.len() > 100);
    assert!(complete(&tools, res("home://rooms/{room}/devices"), "nothing", "x").is_empty());
    assert_eq!(
        tools
            .complete(&res("home://unknown/{x}"), "x", "", &Map::new())
            .unwrap_err()
            .code,
        -32602
    );
}

#[test]
fn affected_uris_name_readable_canonical_resources() {
    let (app, tools) = support::demo();
    let home = app.house.home();
    let index = AffectedIndex::new(&home);
    for c in &home.controls {
        let uris = index.uris(&c.uuid, Some(&c.uuid));
        assert_eq!(uris, affected_uris(&home, &c.uuid, None), "{}", c.name);
        assert!(uris.contains(&format!("home://devices/{}", c.uuid)));
        assert!(uris.contains(&"home://devices/all".to_string()));
        assert!(uris.contains(&format!("home://devices/type/{}", c.kind)));
        assert!(uris.contains(&format!("home://devices/category/{}", home.family(c))));
        for u in &uris {
            tools
                .check_subscribable(u)
                .unwrap_or_else(|e| panic!("{u}: {e:?}"));
            assert_eq!(&canonical_uri(&home, u).unwrap(), u, "canonical");
        }
    }
    // A light in the Wohnzimmer.
    let light = home
        .controls
        .iter()
        .find(|c| home.family(c) == Family::Lighting && home.room_name(c) == Some("Wohnzimmer"))
        .unwrap();
    let uris = affected_uris(&home, &light.uuid, Some(&light.uuid));
    for u in [
        "home://lighting",
        "home://summary",
        "home://rooms/wohnzimmer/devices",
        "home://rooms/wohnzimmer/overview",
        "home://devices/wohnzimmer",
        "home://devices/category/beleuchtung",
    ] {
        assert!(uris.contains(&u.to_string()), "{u} in {uris:?}");
    }
    assert!(!uris.contains(&"home://blinds".to_string()));
    assert!(!uris.contains(&"home://rooms/kuche/overview".to_string()));
    // A named state (room controller's tempTarget) counts for its controller, even without
    // the control given.
    let rc = support::find::room_controller(&home, None);
    let target = rc.state("tempTarget").unwrap();
    let uris = affected_uris(&home, target, None);
    assert!(uris.contains(&"home://climate".to_string()));
    assert!(uris.contains(&format!("home://devices/{}", rc.uuid)));
    let key = resources::room_key(&home, home.room(rc.room.as_deref().unwrap()).unwrap());
    assert!(uris.contains(&format!("home://climate/{key}")));
    // Sensors.
    let t = home
        .controls
        .iter()
        .find(|c| c.name == "Außentemperatur")
        .unwrap();
    let uris = affected_uris(&home, &t.uuid, None);
    assert!(uris.contains(&"home://sensors/temperature".to_string()));
    assert!(uris.contains(&"home://weather".to_string()));
    // An alarm affects every room overview.
    let alarm = home
        .controls
        .iter()
        .find(|c| c.kind == ControlKind::Alarm)
        .unwrap();
    let uris = affected_uris(&home, &alarm.uuid, None);
    assert!(uris.contains(&"home://security".to_string()));
    for r in &home.rooms {
        assert!(uris.contains(&format!(
            "home://rooms/{}/overview",
            resources::room_key(&home, r)
        )));
    }
    // Unknown states (global states, other houses) affect nothing.
    assert!(affected_uris(&home, "0000-nothing", None).is_empty());
    assert!(index.uris("0000-nothing", Some("0000-nothing")).is_empty());
    // Sub-controls count for their parent.
    let (p, s) = home
        .controls
        .iter()
        .find_map(|c| c.sub_controls.first().map(|s| (c, s)))
        .expect("the demo house has a control with sub-controls");
    let uris = affected_uris(&home, &s.uuid, Some(&s.uuid));
    assert!(uris.contains(&format!("home://devices/{}", s.uuid)));
    assert!(uris.contains(&format!("home://devices/{}", p.uuid)));
}

#[test]
fn every_fixture_reads_every_resource() {
    for name in FIXTURES {
        let f = fixture_app(name, None);
        let home = f.app.house.home();
        assert!(!home.rooms.is_empty(), "{name}");
        read_everything(&f.tools, &home);
        let index = AffectedIndex::new(&home);
        for c in &home.controls {
            for u in index.uris(&c.uuid, None) {
                f.tools
                    .check_subscribable(&u)
                    .unwrap_or_else(|e| panic!("{name} {u}: {e:?}"));
            }
        }
        let first = &home.rooms[0];
        let typed: String = first.name.chars().take(2).collect();
        let values = complete(
            &f.tools,
            CompletionRef::Resource("home://rooms/{room}/devices".into()),
            "room",
            &typed,
        );
        assert!(
            values.contains(&resources::room_key(&home, first)),
            "{name}: {values:?}"
        );
    }
}

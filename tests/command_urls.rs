//! Values never change the shape of a Miniserver URL (issue 15), from outside: the real
//! `serve` binary against the demo house's simulator, driven over MCP. A TextInput's text
//! with `/`, `..`, `?`, `#`, `%`, spaces and non-ASCII arrives as ONE percent-encoded path
//! segment (asserted on the request line the simulator received, and on the text the
//! simulator decoded from it), through `control_device`, `control_multiple_devices` and a
//! workflow step. Numbers outside the control's own range (a ValueSelector's live min/max, a
//! Slider's or UpDownAnalog's `details.min/max`, percent 0-100), not finite or not numbers
//! are refused with -32602 naming the field and range, and nothing reaches the simulator.

use crate::support;
use support::mcp::McpHttp;
use support::server::{Miniserver, Served};
use support::{wait_until, PATIENCE};

use serde_json::{json, Value};

use support::wire::{commands_since, sent_commands};

/// TextInput "Notiz" (Büro) of `assets/demo-house.json`.
const NOTIZ: &str = "1d5c3bcb-021c-5a9d-ffff504f94d0e5a1";
/// ValueSelector "Bewässerungsdauer" (Außenbereich): no min/max in its details; its live
/// `min`/`max` states are 5 and 60 (`assets/demo-house.values.json`).
const BEWAESSERUNG: &str = "1d5c3c1a-0221-5cc6-ffff504f94d0e5a1";
/// Slider "Lüftung" (Keller): `details.min` 0, `details.max` 100.
const LUEFTUNG: &str = "1d5c3c3a-0223-5da6-ffff504f94d0e5a1";
/// UpDownAnalog "Warmwasser-Solltemperatur" (Keller): `details.min` 40, `details.max` 60.
const WARMWASSER: &str = "1d5c3c36-0223-5d8a-ffff504f94d0e5a1";

/// `text` percent-encoded as one path segment, written out by hand from RFC 3986's `pchar`
/// (unreserved characters, sub-delimiters other than `+`, `:` and `@` stay; everything else as
/// UTF-8 `%XX`), so the expectation does not come from the encoder under test. `+` is escaped
/// because some servers read it as a space.
fn one_segment(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~!$&'()*,;=:@".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Asserts the last command to Notiz is `text` as one encoded segment, the simulator's text
/// is `text`, and no request line ever left the `jdev/sps/io/{uuid}/` prefix.
fn assert_text_arrived(ms: &Miniserver, text: &str, via: &str) {
    let sent = sent_commands(&ms.sim, NOTIZ);
    assert_eq!(
        sent.last().map(String::as_str),
        Some(one_segment(text).as_str()),
        "{via}: the command after the UUID, as received: {sent:?}"
    );
    assert!(
        !sent.last().unwrap().contains('/'),
        "{via}: one segment: {sent:?}"
    );
    assert_eq!(
        ms.sim.state_text(NOTIZ, "text").as_deref(),
        Some(text),
        "{via}: the simulator decoded the segment into the text"
    );
    for line in ms.sim.requests() {
        let path = line.split(' ').nth(1).unwrap_or("");
        assert!(
            !path.contains("/jdev/sys/reboot") && !path.contains("/../"),
            "{via}: a request left its path: {line}"
        );
    }
}

#[test]
fn free_text_arrives_as_one_encoded_segment_through_every_tool() {
    let ms = Miniserver::demo();
    let served = Served::start(&ms, "", &[]);
    let mut mcp = McpHttp::connect(served.addr, None);

    let text = "x/../../../../jdev/sys/reboot";
    mcp.ok(
        "control_device",
        json!({"device": "Notiz", "action": "text", "text": text}),
    );
    assert_text_arrived(&ms, text, "control_device");

    let text = "y/../../jdev/sys/reboot?a=1+2#frag %41 ü";
    let data = mcp.ok(
        "control_multiple_devices",
        json!({"operations": [{"device": "Notiz", "action": "text", "text": text}]}),
    );
    assert_eq!(data["results"][0]["status"], "ok", "{data}");
    assert_text_arrived(&ms, text, "control_multiple_devices");

    let text = "z/..%2F../jdev/sys/reboot";
    mcp.ok(
        "create_workflow",
        json!({"name": "Notiz schreiben", "steps": [{"tool": "control_device",
            "arguments": {"device": "Notiz", "action": "text", "text": text}}]}),
    );
    let run = mcp.ok("execute_workflow", json!({"name": "Notiz schreiben"}));
    assert_text_arrived(&ms, text, &format!("workflow step ({run})"));

    // Dot segments and empty texts are refused, not sent in a form an HTTP stack may drop.
    let before = ms.sim.request_count();
    for bad in ["..", ".", ""] {
        let (status, answer) = mcp.try_call(
            "control_device",
            json!({"device": "Notiz", "action": "text", "text": bad}),
        );
        assert_eq!(status, 200);
        assert_eq!(answer["error"]["code"], -32602, "{bad:?}: {answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains("text"),
            "{answer}"
        );
    }
    let too_long = "a".repeat(256);
    let (_, answer) = mcp.try_call(
        "control_device",
        json!({"device": "Notiz", "action": "text", "text": too_long}),
    );
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(
        answer["error"]["message"].as_str().unwrap().contains("255"),
        "{answer}"
    );
    assert_eq!(commands_since(&ms.sim, before), Vec::<String>::new());
}

/// A `tools/call` that must be refused with -32602 whose message names `field` and `range`.
fn refused(mcp: &mut McpHttp, arguments: Value, field: &str, range: &str) {
    let (status, answer) = mcp.try_call("control_device", arguments.clone());
    assert_eq!(status, 200, "{arguments}: {answer}");
    assert_eq!(answer["error"]["code"], -32602, "{arguments}: {answer}");
    let m = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        m.contains(field) && m.contains(range),
        "{arguments}: the message names {field} and {range}: {m}"
    );
}

#[test]
fn numbers_outside_the_controls_range_are_refused_with_nothing_on_the_wire() {
    let ms = Miniserver::demo();
    let served = Served::start(&ms, "", &[]);
    // The ValueSelector's min/max are live states: pushed over the WebSocket in its initial
    // tables; until they are stored the server knows only the structure file's range.
    served.wait_states();
    let mut mcp = McpHttp::connect(served.addr, None);
    // The initial tables come in more than one frame: wait until the live range is stored, as
    // a dry run (nothing sent) of a value above the simulator's live max shows.
    wait_until("the ValueSelector's live range", PATIENCE, || {
        let (_, answer) = mcp.try_call(
            "control_device",
            json!({"device": BEWAESSERUNG, "action": "set", "number": 61, "dry_run": true}),
        );
        if answer["error"]["code"] == -32602 {
            Ok(())
        } else {
            Err(answer)
        }
    });
    let before = ms.sim.request_count();

    let set =
        |device: &str, number: Value| json!({"device": device, "action": "set", "number": number});
    refused(
        &mut mcp,
        set(BEWAESSERUNG, json!(-1e308)),
        "number",
        "-1000000000",
    );
    refused(&mut mcp, set(BEWAESSERUNG, json!(61)), "value", "5 to 60");
    refused(&mut mcp, set(BEWAESSERUNG, json!(4.99)), "value", "5 to 60");
    refused(
        &mut mcp,
        set(BEWAESSERUNG, json!("NaN")),
        "number",
        "number",
    );
    refused(
        &mut mcp,
        set(BEWAESSERUNG, json!("-1e308")),
        "number",
        "number",
    );
    refused(
        &mut mcp,
        set(BEWAESSERUNG, json!("Infinity")),
        "number",
        "number",
    );
    refused(&mut mcp, set(LUEFTUNG, json!(100.5)), "number", "100");
    refused(&mut mcp, set(WARMWASSER, json!(39)), "number", "40");
    refused(&mut mcp, set(WARMWASSER, json!(1e300)), "number", "60");
    refused(
        &mut mcp,
        json!({"device": "Deckenlicht Wohnzimmer", "action": "dim", "value": 100.5}),
        "value",
        "100",
    );
    refused(
        &mut mcp,
        json!({"device": "Deckenlicht Wohnzimmer", "action": "dim", "value": -1e308}),
        "value",
        "0",
    );
    // The same refusals inside a batch: an item the structure file's range refuses fails the
    // whole call before anything is sent (-32602 naming the item); one refused by the live
    // range when it is sent fails alone.
    let (_, answer) = mcp.try_call(
        "control_multiple_devices",
        json!({"operations": [
            {"device": "Deckenlicht Wohnzimmer", "action": "on"},
            {"device": WARMWASSER, "action": "set", "number": -1e308}
        ]}),
    );
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let m = answer["error"]["message"].as_str().unwrap();
    assert!(
        m.contains("operations[1]") && m.contains("40 and 60"),
        "{m}"
    );
    assert!(m.len() < 200, "the number is shown short: {m}");
    let data = mcp.ok(
        "control_multiple_devices",
        json!({"operations": [{"device": BEWAESSERUNG, "action": "set", "number": 61}]}),
    );
    assert_eq!(data["results"][0]["status"], "error", "{data}");
    assert_eq!(
        data["results"][0]["error"]["code"], "INVALID_PARAMETERS",
        "{data}"
    );
    assert_eq!(
        commands_since(&ms.sim, before),
        Vec::<String>::new(),
        "nothing reached the Miniserver"
    );

    // The edges of each range go through, as they are.
    mcp.ok("control_device", set(BEWAESSERUNG, json!(60)));
    mcp.ok("control_device", set(BEWAESSERUNG, json!(5)));
    mcp.ok("control_device", set(WARMWASSER, json!(40)));
    assert_eq!(sent_commands(&ms.sim, BEWAESSERUNG), vec!["60", "5"]);
    assert_eq!(sent_commands(&ms.sim, WARMWASSER), vec!["40"]);
    assert_eq!(ms.sim.state(BEWAESSERUNG, "value"), Some(5.0));
}

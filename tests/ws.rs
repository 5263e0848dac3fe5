//! The Loxone WebSocket wire format (headers, event tables) against real captures, the
//! blocking reader against crafted frames, and the simulator's `/ws/rfc6455` endpoint over a
//! real loopback WebSocket.

use std::collections::{HashMap, HashSet};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::drive::MiniserverApi;
use crate::support::net::request;
use crate::support::wait::Deadline;
use crate::support::{wait_true, wait_until, PATIENCE};

use home_mcp::loxone::ws::frame::{FrameError, Header, Identifier, ESTIMATED_FLAG};
use home_mcp::loxone::ws::tables::{
    decode_daytimer_table, decode_table, decode_text_table, decode_value_table,
    decode_weather_table, uuid_from_bytes, DaytimerEntry, EventValue, StateEvent, TableError,
    WeatherEntry, NULL_UUID,
};
use home_mcp::loxone::ws::{close_code, Incoming, Reader, WsError, WsStream, SUB_PROTOCOL};
use home_mcp::sim::tables::{encode_table, encode_text_table, encode_value_table, uuid_to_bytes};
use home_mcp::sim::{SimConfig, SimServer, Simulator, DEMO_STRUCTURE};

const CAPTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/captures/");
const SHOWROOM: &str = include_str!("fixtures/Smarteon-loxone-java-showroom.json");

fn capture(name: &str) -> (Vec<u8>, Value) {
    let base = format!("{CAPTURES}Smarteon-loxone-java-showroom-{name}");
    let hex_text = std::fs::read_to_string(format!("{base}.hex")).unwrap();
    let bytes = hex::decode(hex_text.trim()).unwrap();
    let json = std::fs::read_to_string(format!("{base}.decoded.json")).unwrap();
    (bytes, serde_json::from_str(&json).unwrap())
}

// ---------------------------------------------------------------- wire format

#[test]
fn value_capture_decodes_byte_exact_and_round_trips() {
    let (bytes, json) = capture("value-events");
    assert_eq!(bytes.len(), 1896);
    let events = decode_value_table(&bytes).unwrap();
    let expected = json["events"].as_array().unwrap();
    assert_eq!(events.len(), 79);
    assert_eq!(expected.len(), 79);
    for (e, x) in events.iter().zip(expected) {
        assert_eq!(e.uuid, x["uuid"].as_str().unwrap());
        assert_eq!(e.value, EventValue::Number(x["value"].as_f64().unwrap()));
    }
    assert_eq!(encode_value_table(&events).unwrap(), bytes);
    assert_eq!(
        decode_table(Identifier::ValueTable, &bytes).unwrap(),
        events
    );
}

#[test]
fn text_capture_decodes_complete_entries_and_reports_the_truncated_one() {
    let (bytes, json) = capture("text-events");
    assert_eq!(bytes.len(), 1991);
    let expected = json["events"].as_array().unwrap();
    // The source's last entry declares 2,175 text bytes but only 1,683 are present.
    let err = decode_text_table(&bytes).unwrap_err();
    let TableError::Truncated {
        offset,
        needed,
        available,
    } = err
    else {
        panic!("expected Truncated, got {err:?}")
    };
    assert_eq!(needed, 36 + 2175);
    assert_eq!(available, 36 + 1683);
    assert_eq!(offset + available, bytes.len());
    let complete = &bytes[..offset];
    let events = decode_text_table(complete).unwrap();
    assert_eq!(events.len(), 5);
    for (e, x) in events.iter().zip(expected) {
        assert_eq!(e.uuid, x["uuid"].as_str().unwrap());
        let EventValue::Text { text, icon } = &e.value else {
            panic!("text event expected")
        };
        assert_eq!(text, x["text"].as_str().unwrap());
        assert_eq!(icon, x["iconUuid"].as_str().unwrap());
        assert_eq!(text.len() as u64, x["textLength"].as_u64().unwrap());
    }
    assert_eq!(encode_text_table(&events).unwrap(), complete);
    // The truncated entry's visible text matches the research decode.
    let tail = String::from_utf8_lossy(&bytes[offset + 36..]);
    assert!(tail.starts_with(expected[5]["text"].as_str().unwrap().get(..40).unwrap()));
}

#[test]
fn uuid_worked_example() {
    let b = [
        0x64, 0x9a, 0x86, 0x0f, 0x00, 0x02, 0x9b, 0x0a, 0xff, 0xff, 0xd4, 0xc7, 0x5d, 0xba, 0xf5,
        0x3c,
    ];
    assert_eq!(uuid_from_bytes(&b), "0f869a64-0200-0a9b-ffffd4c75dbaf53c");
    assert_eq!(
        uuid_to_bytes("0f869a64-0200-0a9b-ffffd4c75dbaf53c").unwrap(),
        b
    );
    let (bytes, _) = capture("value-events");
    let first = &decode_value_table(&bytes).unwrap()[0];
    assert_eq!(
        first,
        &StateEvent::number("0f869a64-0200-0a9b-ffffd4c75dbaf53c", 5.0)
    );
    assert!(matches!(
        uuid_to_bytes("0f869a64-0200-0a9b"),
        Err(TableError::BadUuid(_))
    ));
}

#[test]
fn header_parse_encode_and_estimated_flags() {
    let h = Header::parse(&[3, 2, 0, 0, 0x68, 0x07, 0, 0]).unwrap();
    assert_eq!(h, Header::new(Identifier::ValueTable, 1896));
    assert!(!h.is_estimated());
    for info in [0x80u8, 0x01] {
        let h = Header::parse(&[3, 3, info, 0, 1, 0, 0, 0]).unwrap();
        assert!(h.is_estimated(), "info {info:#x}");
        assert_eq!(h.id, Identifier::TextTable);
        assert_eq!(h.encode(), [3, 3, info, 0, 1, 0, 0, 0]);
    }
    assert_eq!(
        Header::estimated(Identifier::Text, 5).encode()[2],
        ESTIMATED_FLAG
    );
    assert_eq!(
        Header::new(Identifier::Keepalive, 0).encode(),
        [3, 6, 0, 0, 0, 0, 0, 0]
    );
    assert_eq!(
        Header::parse(&[4, 0, 0, 0, 0, 0, 0, 0]),
        Err(FrameError::Magic(4))
    );
    assert_eq!(
        Header::parse(&[3, 8, 0, 0, 0, 0, 0, 0]),
        Err(FrameError::Identifier(8))
    );
    assert_eq!(Header::parse(&[3, 0, 0]), Err(FrameError::Length(3)));
    assert_eq!(Header::parse(&[0; 9]), Err(FrameError::Length(9)));
    assert!(!Identifier::Keepalive.has_payload());
    assert!(!Identifier::OutOfService.has_payload());
    assert!(Identifier::WeatherTable.has_payload());
}

fn sample_daytimer() -> StateEvent {
    StateEvent {
        uuid: "0f869a64-0200-0a9b-ffffd4c75dbaf53c".into(),
        value: EventValue::Daytimer {
            default_value: 21.5,
            entries: vec![
                DaytimerEntry {
                    mode: 3,
                    from: 360,
                    to: 1320,
                    need_activate: 0,
                    value: 22.0,
                },
                DaytimerEntry {
                    mode: 9,
                    from: 0,
                    to: 1440,
                    need_activate: 1,
                    value: -1.5,
                },
            ],
        },
    }
}

fn sample_weather() -> StateEvent {
    let entry = |h: i32| WeatherEntry {
        timestamp: 150_000 + h,
        weather_type: 2,
        wind_direction: 270,
        solar_radiation: 410,
        relative_humidity: 63,
        temperature: 12.25,
        perceived_temperature: 10.5,
        dew_point: 5.75,
        precipitation: 0.2,
        wind_speed: 14.0,
        barometric_pressure: 1013.25,
    };
    StateEvent {
        uuid: "10a73e3b-017a-1682-ffffacb819d4bca9".into(),
        value: EventValue::Weather {
            last_update: 565_000_000,
            entries: vec![entry(0), entry(1), entry(2)],
        },
    }
}

#[test]
fn daytimer_and_weather_round_trip() {
    let d = vec![sample_daytimer(), sample_daytimer()];
    let bytes = encode_table(Identifier::DaytimerTable, &d).unwrap();
    assert_eq!(bytes.len(), 2 * (28 + 2 * 24));
    assert_eq!(decode_daytimer_table(&bytes).unwrap(), d);
    let w = vec![sample_weather()];
    let bytes = encode_table(Identifier::WeatherTable, &w).unwrap();
    assert_eq!(bytes.len(), 24 + 3 * 68);
    assert_eq!(decode_weather_table(&bytes).unwrap(), w);
    assert_eq!(decode_table(Identifier::WeatherTable, &bytes).unwrap(), w);
    // Texts of every padding length, non-ASCII, and an icon.
    let texts: Vec<StateEvent> = ["", "a", "ab", "abc", "abcd", "Ložnice €"]
        .iter()
        .map(|t| StateEvent {
            uuid: "0f86a2fe-0378-3e15-ffff373f9870b52a".into(),
            value: EventValue::Text {
                text: (*t).into(),
                icon: "0f869a64-0200-0a9b-ffffd4c75dbaf53c".into(),
            },
        })
        .collect();
    let bytes = encode_text_table(&texts).unwrap();
    assert_eq!(bytes.len() % 4, 0);
    assert_eq!(decode_text_table(&bytes).unwrap(), texts);
}

#[test]
fn bad_tables_are_errors() {
    // Negative and absurd counts: errors, no huge allocation.
    let mut d = encode_table(Identifier::DaytimerTable, &[sample_daytimer()]).unwrap();
    d[24..28].copy_from_slice(&(-1i32).to_le_bytes());
    assert_eq!(
        decode_daytimer_table(&d),
        Err(TableError::NegativeCount {
            offset: 0,
            count: -1
        })
    );
    d[24..28].copy_from_slice(&i32::MAX.to_le_bytes());
    assert!(matches!(
        decode_daytimer_table(&d),
        Err(TableError::Truncated { offset: 0, .. })
    ));
    let mut w = encode_table(Identifier::WeatherTable, &[sample_weather()]).unwrap();
    w[20..24].copy_from_slice(&(-7i32).to_le_bytes());
    assert!(matches!(
        decode_weather_table(&w),
        Err(TableError::NegativeCount { count: -7, .. })
    ));
    let mut t = encode_text_table(&[StateEvent::text(NULL_UUID, "hi")]).unwrap();
    t[32..36].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(
        decode_text_table(&t),
        Err(TableError::Truncated { .. })
    ));
    // Encoding refuses what does not fit.
    assert!(matches!(
        encode_value_table(&[StateEvent::text(NULL_UUID, "x")]),
        Err(TableError::WrongKind(_))
    ));
    assert!(matches!(
        encode_value_table(&[StateEvent::number("nope", 1.0)]),
        Err(TableError::BadUuid(_))
    ));
    assert!(matches!(
        encode_table(Identifier::Keepalive, &[]),
        Err(TableError::NotATable(Identifier::Keepalive))
    ));
    assert!(matches!(
        decode_table(Identifier::Text, &[]),
        Err(TableError::NotATable(Identifier::Text))
    ));
    // Empty tables are empty.
    assert_eq!(decode_value_table(&[]).unwrap(), vec![]);
}

/// Every cut point of both captures and a stream of pseudo-random garbage: decoders return
/// errors or events, never panic; a value table cut between entries still decodes.
#[test]
fn truncated_and_garbage_input_never_panics() {
    let (values, _) = capture("value-events");
    for cut in 0..=values.len() {
        let r = decode_value_table(&values[..cut]);
        assert_eq!(r.is_ok(), cut % 24 == 0, "cut {cut}");
        if let Ok(ev) = r {
            assert_eq!(ev.len(), cut / 24);
        }
    }
    let (texts, _) = capture("text-events");
    for cut in 0..=texts.len() {
        let _ = decode_text_table(&texts[..cut]);
        let _ = decode_daytimer_table(&texts[..cut]);
        let _ = decode_weather_table(&texts[..cut]);
    }
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for round in 0..2000 {
        let len = (next() % 300) as usize;
        let mut buf: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        if round % 3 == 0 && len >= 8 {
            buf[0] = 3; // make some of them look like headers
        }
        let _ = Header::parse(&buf);
        if len >= 8 {
            let _ = Header::parse(&buf[..8]);
        }
        for id in 0..=7 {
            let id = Identifier::from_byte(id).unwrap();
            let _ = decode_table(id, &buf);
        }
    }
}

// ---------------------------------------------------------------- reader, crafted frames

const STEP: Duration = Duration::from_millis(100);
/// How long a whole login may take (RSA in a debug build is slow).
const LOGIN: Duration = PATIENCE;

/// A one-shot WebSocket server that sends `frames` and then closes with `close`.
#[allow(clippy::result_large_err)] // tungstenite's callback signature
fn crafted_server(frames: Vec<tungstenite::Message>, close: Option<u16>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        let cb = |req: &tungstenite::handshake::server::Request,
                  mut resp: tungstenite::handshake::server::Response| {
            assert!(req
                .headers()
                .get("Sec-WebSocket-Protocol")
                .is_some_and(|v| v == SUB_PROTOCOL));
            resp.headers_mut().insert(
                "Sec-WebSocket-Protocol",
                tungstenite::http::HeaderValue::from_static(SUB_PROTOCOL),
            );
            Ok(resp)
        };
        let mut ws = tungstenite::accept_hdr(stream, cb).unwrap();
        for f in frames {
            ws.send(f).unwrap();
        }
        if let Some(code) = close {
            let _ = ws.close(Some(tungstenite::protocol::CloseFrame {
                code: code.into(),
                reason: "".into(),
            }));
            let _ = ws.flush();
            let _ = ws.read();
        }
    });
    format!("ws://{addr}/ws/rfc6455")
}

fn binary(b: impl Into<Vec<u8>>) -> tungstenite::Message {
    tungstenite::Message::binary(b.into())
}

/// The next message (within [`PATIENCE`]; the reader's own timeouts are its 100 ms steps).
fn next(r: &mut Reader<WsStream>) -> Incoming {
    wait_until("a message", PATIENCE, || match r.next_message() {
        Ok(m) => Ok(m),
        Err(WsError::Timeout) => Err("read timeouts"),
        Err(e) => panic!("reader: {e}"),
    })
}

#[test]
fn reader_pairs_headers_with_payloads() {
    let (values, _) = capture("value-events");
    let answer = r#"{"LL":{"control":"jdev/sps/enablebinstatusupdate","value":"1","Code":"200"}}"#;
    let frames = vec![
        binary(Header::new(Identifier::Text, answer.len() as u32).encode()),
        tungstenite::Message::text(answer),
        // Estimated (0x80) then exact header, then the table.
        binary(Header::estimated(Identifier::ValueTable, 4096).encode()),
        binary(Header::new(Identifier::ValueTable, values.len() as u32).encode()),
        binary(values.clone()),
        // Estimated (0x01) and directly the payload, as lxcommunicator accepts.
        binary([3, 2, 0x01, 0, 24, 0, 0, 0]),
        binary(values[..24].to_vec()),
        binary(Header::new(Identifier::Keepalive, 0).encode()),
        binary(Header::new(Identifier::ValueTable, 0).encode()),
        binary(Header::new(Identifier::BinaryFile, 3).encode()),
        binary(vec![1, 2, 3]),
        tungstenite::Message::Ping(vec![9].into()),
        binary(Header::new(Identifier::OutOfService, 0).encode()),
    ];
    let url = crafted_server(frames, Some(close_code::FIRMWARE_UPDATE));
    let mut r = open(&url);
    assert_eq!(next(&mut r), Incoming::Text(answer.into()));
    let Incoming::Events(ev) = next(&mut r) else {
        panic!("events expected")
    };
    assert_eq!(ev.len(), 79);
    let Incoming::Events(ev) = next(&mut r) else {
        panic!("events expected")
    };
    assert_eq!(
        ev,
        vec![StateEvent::number(
            "0f869a64-0200-0a9b-ffffd4c75dbaf53c",
            5.0
        )]
    );
    assert_eq!(next(&mut r), Incoming::Keepalive);
    assert_eq!(next(&mut r), Incoming::Events(vec![]));
    assert_eq!(next(&mut r), Incoming::File(vec![1, 2, 3]));
    assert_eq!(next(&mut r), Incoming::OutOfService);
    assert_eq!(next(&mut r), Incoming::Closed(Some(4007)));
    assert!(r.is_closed());
    assert!(matches!(r.next_message(), Err(WsError::Closed)));
    assert!(matches!(r.send_text("keepalive"), Err(WsError::Closed)));
}

#[test]
fn reader_rejects_frames_out_of_sequence() {
    // A table without a header.
    let url = crafted_server(vec![binary(vec![0u8; 24])], None);
    let mut r = open(&url);
    assert!(matches!(next_err(&mut r), WsError::Unexpected(_)));
    // A header with a bad identifier.
    let url = crafted_server(vec![binary([3, 9, 0, 0, 0, 0, 0, 0])], None);
    let mut r = open(&url);
    assert!(matches!(
        next_err(&mut r),
        WsError::Frame(FrameError::Identifier(9))
    ));
    // A text frame where a table was announced.
    let url = crafted_server(
        vec![
            binary(Header::new(Identifier::TextTable, 4).encode()),
            tungstenite::Message::text("oops"),
        ],
        None,
    );
    let mut r = open(&url);
    assert!(matches!(next_err(&mut r), WsError::Unexpected(_)));
    // A truncated table.
    let url = crafted_server(
        vec![
            binary(Header::new(Identifier::ValueTable, 20).encode()),
            binary(vec![0u8; 20]),
        ],
        None,
    );
    let mut r = open(&url);
    assert!(matches!(
        next_err(&mut r),
        WsError::Table(TableError::Truncated { .. })
    ));
    // Dropped without a close frame.
    let url = crafted_server(vec![], None);
    let mut r = open(&url);
    assert_eq!(next(&mut r), Incoming::Closed(None));
}

fn next_err(r: &mut Reader<WsStream>) -> WsError {
    wait_until("a reader error", PATIENCE, || match r.next_message() {
        Err(WsError::Timeout) => Err("read timeouts"),
        Err(e) => Ok(e),
        Ok(m) => panic!("expected an error, got {m:?}"),
    })
}

#[test]
fn connect_refuses_bad_urls_and_reports_http_errors() {
    assert!(matches!(
        Reader::connect("http://127.0.0.1:1/ws/rfc6455", STEP),
        Err(WsError::Url(_))
    ));
    assert!(matches!(
        Reader::connect("not a url", STEP),
        Err(WsError::Url(_))
    ));
    let sim = Arc::new(Simulator::demo());
    let server = SimServer::start(sim, "127.0.0.1:0").unwrap();
    let url = format!("ws://{}/jdev/cfg/api", server.addr());
    assert!(matches!(
        Reader::connect(&url, PATIENCE),
        Err(WsError::Refused(_)) | Err(WsError::Protocol(_))
    ));
}

/// A TCP listener that does not speak TLS: it reads what comes, answers one line of plain
/// HTTP (or nothing when `silent`) and keeps the socket open until the returned guard is
/// dropped (the end of the test), so the client never sees it close.
fn plain_listener(silent: bool) -> (String, crossbeam_channel::Sender<()>) {
    use std::io::{Read, Write};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (guard, held) = crossbeam_channel::bounded::<()>(0);
    std::thread::spawn(move || {
        if let Ok((mut s, _)) = listener.accept() {
            let _ = s.set_read_timeout(Some(PATIENCE));
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
            if !silent {
                let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
            }
            // Until the test drops the guard (recv fails then).
            let _ = held.recv();
        }
    });
    (format!("wss://{addr}/ws/rfc6455"), guard)
}

#[cfg(feature = "tls")]
#[test]
fn wss_to_a_plain_listener_fails_with_a_tls_error_or_the_socket_timeout() {
    // The verdict is the kind of error, not how long it took: the listener keeps its socket
    // open until the test ends, so a client that waited for the peer would never see these.
    let (url, _held) = plain_listener(false);
    let err = Reader::connect(&url, PATIENCE).err().unwrap();
    assert!(matches!(err, WsError::Tls(_)), "{err:?}");
    // A peer that never answers the ClientHello: the socket timeout ends the handshake.
    let (url, _held) = plain_listener(true);
    let err = Reader::connect(&url, Duration::from_millis(300))
        .err()
        .unwrap();
    assert!(matches!(err, WsError::Timeout), "{err:?}");
}

#[cfg(not(feature = "tls"))]
#[test]
fn wss_without_the_tls_feature_is_refused_before_connecting() {
    let (url, _held) = plain_listener(false);
    let err = Reader::connect(&url, STEP).err().unwrap();
    assert!(
        matches!(&err, WsError::Tls(m) if m.contains("`tls` feature")),
        "{err:?}"
    );
}

#[test]
fn plain_ws_streams_are_not_tls_and_take_new_timeouts() {
    let sim = Arc::new(Simulator::demo());
    let server = SimServer::start(sim, "127.0.0.1:0").unwrap();
    let r = connect(&server);
    let stream = r.get_ref().get_ref();
    assert!(!stream.is_tls());
    stream
        .set_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    assert_eq!(
        stream.tcp().read_timeout().unwrap(),
        Some(Duration::from_millis(500))
    );
}

// ---------------------------------------------------------------- simulator

fn start(sim: Simulator) -> (Arc<Simulator>, SimServer) {
    let sim = Arc::new(sim);
    let server = SimServer::start(sim.clone(), "127.0.0.1:0").unwrap();
    (sim, server)
}

fn fast_demo() -> Simulator {
    Simulator::demo_with(SimConfig {
        blind_travel: Duration::from_millis(600),
        ..SimConfig::default()
    })
}

/// Opens `url` (the handshake bounded by [`PATIENCE`] only), then reads in [`STEP`]s.
fn open(url: &str) -> Reader<WsStream> {
    let r = Reader::connect(url, PATIENCE).unwrap_or_else(|e| panic!("{url}: {e}"));
    r.get_ref().get_ref().set_timeout(Some(STEP)).unwrap();
    r
}

fn connect(server: &SimServer) -> Reader<WsStream> {
    open(&format!("ws://{}/ws/rfc6455", server.addr()))
}

/// The `LL` answer: (control, code as number, value).
fn ll(m: &Incoming) -> (String, u16, Value) {
    let Incoming::Text(t) = m else {
        panic!("text answer expected, got {m:?}")
    };
    let v: Value = serde_json::from_str(t).unwrap();
    let ll = &v["LL"];
    let code = ll
        .get("Code")
        .or_else(|| ll.get("code"))
        .and_then(|c| c.as_str().map(str::to_string))
        .unwrap();
    (
        ll["control"].as_str().unwrap().to_string(),
        code.parse().unwrap(),
        ll["value"].clone(),
    )
}

/// The real login: key exchange, getkey2, getjwt encrypted over the socket.
fn login(r: &mut Reader<WsStream>) {
    let pk = home_mcp::loxone::crypto::PublicKey::parse(
        home_mcp::sim::sim_rsa().unwrap().public_key_line(),
    )
    .unwrap();
    home_mcp::loxone::ws::login::login(r, &pk, "demo", "demo", LOGIN).expect("token login");
}

/// Reads until `done` says so over the collected events, or panics after [`PATIENCE`]
/// (checked at every message).
fn events_until(
    r: &mut Reader<WsStream>,
    mut done: impl FnMut(&[StateEvent]) -> bool,
) -> Vec<StateEvent> {
    let deadline = Deadline::new("the events");
    let mut all = Vec::new();
    while !done(&all) {
        match r.next_message() {
            Ok(Incoming::Events(ev)) => all.extend(ev),
            Ok(other) => panic!("unexpected {other:?}"),
            Err(WsError::Timeout) => {}
            Err(e) => panic!("reader: {e}"),
        }
        deadline.check(all.len());
    }
    all
}

/// Every state UUID a structure file lists (controls, sub-controls, globalStates).
fn state_uuids(structure: &str) -> HashSet<String> {
    let doc: Value = serde_json::from_str(structure).unwrap();
    let mut out = HashSet::new();
    let mut add = |v: &Value| match v {
        Value::String(s) => {
            out.insert(s.to_lowercase());
        }
        Value::Array(a) => {
            for s in a.iter().filter_map(Value::as_str) {
                out.insert(s.to_lowercase());
            }
        }
        _ => {}
    };
    for g in doc["globalStates"].as_object().unwrap().values() {
        add(g);
    }
    for c in doc["controls"].as_object().unwrap().values() {
        let subs = c["subControls"]
            .as_object()
            .into_iter()
            .flat_map(|s| s.values());
        for c in std::iter::once(c).chain(subs) {
            for s in c["states"].as_object().into_iter().flat_map(|s| s.values()) {
                add(s);
            }
        }
    }
    out
}

fn initial_tables(server: &SimServer, structure: &str) -> HashMap<String, EventValue> {
    let mut r = connect(server);
    // Before authentication only auth commands are answered.
    r.send_text("jdev/sps/enablebinstatusupdate").unwrap();
    assert_eq!(ll(&next(&mut r)).1, 400);
    login(&mut r);
    r.send_text("jdev/sps/enablebinstatusupdate").unwrap();
    let (control, code, _) = ll(&next(&mut r));
    assert_eq!(
        (control.as_str(), code),
        ("jdev/sps/enablebinstatusupdate", 200)
    );
    let want = state_uuids(structure);
    let got = events_until(&mut r, |ev| {
        ev.iter().filter(|e| want.contains(&e.uuid)).count() >= want.len()
    });
    got.into_iter().map(|e| (e.uuid, e.value)).collect()
}

#[test]
fn initial_tables_hold_every_state_of_the_demo_and_showroom_files() {
    let (sim, server) = start(fast_demo());
    let demo = initial_tables(&server, DEMO_STRUCTURE);
    assert!(state_uuids(DEMO_STRUCTURE)
        .iter()
        .all(|u| demo.contains_key(u)));
    // Values come from the simulated house: the Nachtlicht dimmer's position.
    let pos = sim
        .state("1d5c3b29-0212-562f-ffff504f94d0e5a1", "position")
        .unwrap();
    assert_eq!(
        demo["1d5c3b2b-0212-563d-ffffa3c7e19b52d4"],
        EventValue::Number(pos)
    );
    assert_eq!(sim.ws_snapshot().len(), demo.len());

    let (_sim, server) = start(Simulator::new(SHOWROOM, None, SimConfig::default()).unwrap());
    let show = initial_tables(&server, SHOWROOM);
    let want = state_uuids(SHOWROOM);
    assert!(want.iter().all(|u| show.contains_key(u)));
    // globalStates: operatingMode in the value table, miniserverTime in the text table.
    assert!(matches!(
        show["0f869a64-0200-0a9b-ffffd4c75dbaf53c"],
        EventValue::Number(_)
    ));
    assert!(matches!(
        show["10a73e3b-017a-1682-ffffacb819d4bca9"],
        EventValue::Text { .. }
    ));
}

const NACHTLICHT: &str = "1d5c3b29-0212-562f-ffff504f94d0e5a1";
const NACHTLICHT_POS: &str = "1d5c3b2b-0212-563d-ffffa3c7e19b52d4";
const RAFFSTORE: &str = "1d5c3a34-0203-4f7c-ffff504f94d0e5a1";
const RAFFSTORE_POS: &str = "1d5c3a39-0203-4f9f-ffffa3c7e19b52d4";

/// A logged-in session of the demo with status updates enabled, and the events read so far
/// (the initial tables, and any change that came with them).
fn enabled_with_tables(server: &SimServer) -> (Reader<WsStream>, Vec<StateEvent>) {
    let mut r = connect(server);
    login(&mut r);
    r.send_text("jdev/sps/enablebinstatusupdate").unwrap();
    assert_eq!(ll(&next(&mut r)).1, 200);
    let want = state_uuids(DEMO_STRUCTURE).len();
    let tables = events_until(&mut r, |ev| ev.len() >= want);
    (r, tables)
}

/// A logged-in session of the demo with status updates enabled, past its initial tables.
fn enabled(server: &SimServer) -> Reader<WsStream> {
    enabled_with_tables(server).0
}

fn has(ev: &[StateEvent], uuid: &str, v: f64) -> bool {
    ev.iter()
        .any(|e| e.uuid == uuid && e.value == EventValue::Number(v))
}

#[test]
fn commands_over_ws_and_http_produce_value_events() {
    let (_sim, server) = start(fast_demo());
    let mut r = enabled(&server);
    // Over the WebSocket: answer echoes the command, then the event.
    let cmd = format!("jdev/sps/io/{NACHTLICHT}/40");
    r.send_text(&cmd).unwrap();
    let (control, code, _) = ll(&next(&mut r));
    assert_eq!((control, code), (cmd, 200));
    let ev = events_until(&mut r, |ev| has(ev, NACHTLICHT_POS, 40.0));
    // Only what changed is sent.
    assert!(ev.len() < 5, "{ev:?}");
    // Over HTTP: the event still reaches the WebSocket.
    MiniserverApi::demo(server.addr()).command(NACHTLICHT, "50");
    events_until(&mut r, |ev| has(ev, NACHTLICHT_POS, 50.0));
    // A refused command answers its code and sends nothing.
    r.send_text(&format!("jdev/sps/io/{NACHTLICHT}/bogus"))
        .unwrap();
    assert_eq!(ll(&next(&mut r)).1, 404);
}

#[test]
fn travelling_blinds_send_several_position_events() {
    // A 10 min full travel, events every 100 ms: the blind is still travelling after its
    // first few position updates, however busy the machine.
    let (sim, server) = start(Simulator::demo_with(SimConfig {
        blind_travel: Duration::from_secs(600),
        ..SimConfig::default()
    }));
    let mut r = enabled(&server);
    let start_pos = sim.state(RAFFSTORE, "position").unwrap();
    r.send_text(&format!("jdev/sps/io/{RAFFSTORE}/FullDown"))
        .unwrap();
    assert_eq!(ll(&next(&mut r)).1, 200);
    let ev = events_until(&mut r, |ev| numbers_of(ev, RAFFSTORE_POS).len() >= 3);
    let positions = numbers_of(&ev, RAFFSTORE_POS);
    // Each update further down, none of them there yet.
    assert!(positions[0] > start_pos, "{start_pos} -> {positions:?}");
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
    assert!(positions.iter().all(|p| *p < 1.0), "{positions:?}");
    assert!(sim.state(RAFFSTORE, "position").unwrap() < 1.0);
}

#[test]
fn keepalive_files_and_estimated_headers() {
    let (sim, server) = start(fast_demo());
    let mut r = connect(&server);
    r.send_text("keepalive").unwrap();
    assert_eq!(next(&mut r), Incoming::Keepalive);
    // Unauthenticated jdev/cfg is allowed.
    r.send_text("jdev/cfg/api").unwrap();
    assert_eq!(ll(&next(&mut r)).1, 200);
    login(&mut r);
    r.send_text("data/LoxAPP3.json").unwrap();
    assert_eq!(next(&mut r), Incoming::Text(DEMO_STRUCTURE.into()));
    sim.set_ws_estimated_headers(true);
    r.send_text("jdev/sps/enablebinstatusupdate").unwrap();
    assert_eq!(ll(&next(&mut r)).1, 200);
    let want = state_uuids(DEMO_STRUCTURE).len();
    events_until(&mut r, |ev| ev.len() >= want);
}

#[test]
fn fault_switches_drop_refuse_and_go_out_of_service() {
    let (sim, server) = start(fast_demo());
    // Drop: the open session ends without a close frame.
    let mut r = connect(&server);
    login(&mut r);
    wait_true("one session", || sim.ws_session_count() == 1);
    sim.ws_drop_connections();
    assert_eq!(next(&mut r), Incoming::Closed(None));
    wait_true("no session", || sim.ws_session_count() == 0);
    // A new connection works after a drop.
    let mut r = connect(&server);
    r.send_text("keepalive").unwrap();
    assert_eq!(next(&mut r), Incoming::Keepalive);
    // Out of service: header 5, then the socket closes; new connections too.
    sim.set_ws_out_of_service(true);
    assert_eq!(next(&mut r), Incoming::OutOfService);
    assert_eq!(next(&mut r), Incoming::Closed(None));
    let mut r = connect(&server);
    assert_eq!(next(&mut r), Incoming::OutOfService);
    sim.set_ws_out_of_service(false);
    // Refused: close code 4003 right after opening.
    sim.set_ws_refuse(true);
    let mut r = connect(&server);
    assert_eq!(next(&mut r), Incoming::Closed(Some(close_code::BLOCKED)));
    sim.set_ws_refuse(false);
    let mut r = connect(&server);
    r.send_text("keepalive").unwrap();
    assert_eq!(next(&mut r), Incoming::Keepalive);
    // Stopping the server ends its sessions.
    drop(server);
    assert_eq!(next(&mut r), Incoming::Closed(None));
    wait_true("no session", || sim.ws_session_count() == 0);
}

#[test]
fn token_auth_refuses_strangers_and_plain_http_gets_400() {
    let (_sim, server) = start(fast_demo());
    let mut r = connect(&server);
    // Nothing but auth before a login.
    r.send_text(&format!("jdev/sps/io/{NACHTLICHT}/on"))
        .unwrap();
    assert_eq!(ll(&next(&mut r)).1, 400);
    // enc before keyexchange, and a made-up token.
    r.send_text("jdev/sys/enc/AAAA").unwrap();
    assert_eq!(ll(&next(&mut r)).1, 401);
    r.send_text("authwithtoken/anything/mallory").unwrap();
    assert_eq!(ll(&next(&mut r)).1, 401);
    // A wrong password: getjwt over the socket is refused, the session stays closed.
    let pk = home_mcp::loxone::crypto::PublicKey::parse(
        home_mcp::sim::sim_rsa().unwrap().public_key_line(),
    )
    .unwrap();
    let e = home_mcp::loxone::ws::login::login(&mut r, &pk, "demo", "wrong", LOGIN).unwrap_err();
    assert!(
        matches!(e, home_mcp::loxone::client::LoxoneError::Unauthorized),
        "{e}"
    );
    r.send_text(&format!("jdev/sps/io/{NACHTLICHT}/on"))
        .unwrap();
    assert_eq!(ll(&next(&mut r)).1, 400);
    // A plain GET of the endpoint is not a handshake.
    let r = request::<&str>(server.addr(), "GET", "/ws/rfc6455", &[], "");
    assert_eq!(r.status, 400, "{r:?}");
}

#[test]
fn a_token_from_http_authenticates_the_socket() {
    use home_mcp::config::{MiniserverConfig, Timeouts};
    use home_mcp::loxone::client::Client;
    let (_sim, server) = start(fast_demo());
    let client = Client::new(
        &MiniserverConfig {
            base_url: server.base_url(),
            user: "demo".into(),
            password: "demo".into(),
        },
        &Timeouts::default(),
    );
    let pk = client.public_key().unwrap();
    let mut ex = client.exchange();
    let token = home_mcp::loxone::token::TokenAuth::acquire(
        &mut ex,
        "demo",
        "demo",
        &home_mcp::loxone::token::TokenRequest::default(),
    )
    .unwrap();
    let mut r = connect(&server);
    home_mcp::loxone::ws::login::authenticate_with_token(&mut r, &pk, &token, LOGIN)
        .expect("authwithtoken");
    r.send_text("jdev/sps/enablebinstatusupdate").unwrap();
    assert_eq!(ll(&next(&mut r)).1, 200);
}

#[test]
fn a_delay_makes_websocket_answers_late() {
    let (sim, server) = start(Simulator::demo());
    let mut r = connect(&server);
    sim.set_delay(Duration::from_millis(300));
    // Only "at least": a busy machine cannot make a delayed answer come sooner.
    let t = Instant::now();
    r.send_text("keepalive").unwrap();
    assert_eq!(next(&mut r), Incoming::Keepalive);
    assert!(
        t.elapsed() >= Duration::from_millis(300),
        "{:?}",
        t.elapsed()
    );
    // Switched off, answers still come (how fast is not a verdict).
    sim.set_delay(Duration::ZERO);
    assert_eq!(sim.delay(), Duration::ZERO);
    r.send_text("keepalive").unwrap();
    assert_eq!(next(&mut r), Incoming::Keepalive);
}

/// `tempActual` of a demo v2 room (19.1 °C, target 16) and of the demo's
/// v1 room (20.4 °C, target 21.5).
const IRC_V2_ACTUAL: &str = "1d5c3b0d-0210-556b-ffffa3c7e19b52d4";
const IRC_V1_ACTUAL: &str = "1d5c3bb5-021b-5a03-ffffa3c7e19b52d4";

/// The resolution of a simulated room temperature: `tempActual` moves in steps of 0.1 °C
/// (`SimConfig::temp_drift_per_minute`).
const TEMP_STEP: f64 = 0.1;

/// Whether each value after the first differs from the one before by a whole number (at
/// least one) of [`TEMP_STEP`]s: the drift shows in steps. (How many steps one event carries
/// depends on how late the simulator's tick came, so "one at a time" is no verdict.)
fn in_steps(values: &[f64]) -> bool {
    values.windows(2).all(|w| {
        let d = (w[1] - w[0]).abs();
        let k = (d / TEMP_STEP).round();
        k >= 1.0 && (d - k * TEMP_STEP).abs() < 1e-6
    })
}

fn numbers_of(ev: &[StateEvent], uuid: &str) -> Vec<f64> {
    ev.iter()
        .filter(|e| e.uuid == uuid)
        .filter_map(|e| match e.value {
            EventValue::Number(v) => Some(v),
            _ => None,
        })
        .collect()
}

#[test]
fn room_temperatures_drift_toward_their_targets_as_events() {
    // 1 °C per second: a 0.1 °C step about every WebSocket tick.
    const RATE: f64 = 1.0;
    let (sim, server) = start(Simulator::demo_with(SimConfig {
        temp_drift_per_minute: RATE * 60.0,
        ..SimConfig::default()
    }));
    // The initial tables count: on a busy machine the drift may have ended before the login.
    let (mut r, tables) = enabled_with_tables(&server);
    let reached = |ev: &[StateEvent]| has(ev, IRC_V2_ACTUAL, 16.0) && has(ev, IRC_V1_ACTUAL, 21.5);
    let ev = if reached(&tables) {
        tables
    } else {
        let more = events_until(&mut r, |more| reached(&[&tables[..], more].concat()));
        [tables, more].concat()
    };
    // Cooling (the drift runs from the simulator's start, 19.1 °C, so how far it got before
    // the login is up to the machine's speed: only the direction, the steps and the end are
    // verdicts; how many steps arrive is checked below from a known start).
    let v2 = numbers_of(&ev, IRC_V2_ACTUAL);
    assert!(v2.windows(2).all(|w| w[0] > w[1]), "{v2:?}");
    assert!(in_steps(&v2), "{v2:?}");
    assert_eq!(v2.last(), Some(&16.0));
    // Heating, v1.
    let v1 = numbers_of(&ev, IRC_V1_ACTUAL);
    assert!(v1.windows(2).all(|w| w[0] < w[1]), "{v1:?}");
    assert!(in_steps(&v1), "{v1:?}");
    assert_eq!(v1.last(), Some(&21.5));
    // HTTP reads show the same value; at the target it stays.
    let room = "1d5c3b0b-0210-555d-ffff504f94d0e5a1";
    assert_eq!(sim.state(room, "tempActual"), Some(16.0));
    // Real time must pass to show that nothing moves (three drift ticks at least).
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(sim.state(room, "tempActual"), Some(16.0));
    // A new target turns the drift around.
    for cmd in ["setManualTemperature/16.5", "setOperatingMode/3"] {
        r.send_text(&format!("jdev/sps/io/{room}/{cmd}")).unwrap();
        let deadline = Deadline::new(&format!("the answer to {cmd}"));
        let answer = loop {
            match r.next_message() {
                Ok(Incoming::Events(_)) | Err(WsError::Timeout) => {}
                Ok(other) => break other,
                Err(e) => panic!("reader: {e}"),
            }
            deadline.check("events only");
        };
        assert_eq!(ll(&answer).1, 200);
    }
    assert_eq!(sim.state(room, "tempTarget"), Some(16.5));
    let ev = events_until(&mut r, |ev| has(ev, IRC_V2_ACTUAL, 16.5));
    let up = numbers_of(&ev, IRC_V2_ACTUAL);
    assert!(!up.is_empty());
    assert!(up.iter().all(|v| *v > 16.0), "{up:?}");
    assert!(up.windows(2).all(|w| w[0] < w[1]), "{up:?}");
    assert!(in_steps(&[&[16.0], up.as_slice()].concat()), "{up:?}");
    // From 16.5 toward a far target (13.5 °C away at 1 °C/s): several steps arrive while
    // it is still on its way, each a whole number of 0.1 °C steps up, and none ahead of the
    // rate. The drift starts when the simulator takes the command, after `sent`: a value
    // received `t` after `sent` is at most 16.5 + RATE × t (load only makes `t` longer, so
    // the bound only gets looser).
    let sent = Instant::now();
    r.send_text(&format!("jdev/sps/io/{room}/setManualTemperature/30"))
        .unwrap();
    let deadline = Deadline::new("the answer and three steps toward 30 °C");
    let mut answered = false;
    let mut steps: Vec<(f64, Duration)> = Vec::new();
    while !answered || steps.len() < 3 {
        match r.next_message() {
            Ok(Incoming::Events(e)) => {
                let t = sent.elapsed();
                steps.extend(numbers_of(&e, IRC_V2_ACTUAL).into_iter().map(|v| (v, t)));
            }
            Ok(other) => {
                assert!(!answered, "a second answer: {other:?}");
                assert_eq!(ll(&other).1, 200);
                answered = true;
            }
            Err(WsError::Timeout) => {}
            Err(e) => panic!("reader: {e}"),
        }
        deadline.check((answered, &steps));
    }
    let values: Vec<f64> = steps.iter().map(|(v, _)| *v).collect();
    assert!(values.iter().all(|v| *v > 16.5 && *v < 30.0), "{values:?}");
    assert!(values.windows(2).all(|w| w[0] < w[1]), "{values:?}");
    assert!(
        in_steps(&[&[16.5], values.as_slice()].concat()),
        "{values:?}"
    );
    for (v, t) in &steps {
        assert!(
            v - 16.5 <= RATE * t.as_secs_f64() + 1e-6,
            "{v} °C {t:?} after the command: faster than {RATE} °C/s ({steps:?})"
        );
    }
}

#[test]
fn room_temperatures_stay_still_without_a_drift_rate() {
    let sim = Simulator::demo_with(SimConfig {
        temp_drift_per_minute: 0.0,
        ..SimConfig::default()
    });
    let room = "1d5c3b0b-0210-555d-ffff504f94d0e5a1";
    assert_eq!(sim.state(room, "tempActual"), Some(19.1));
    // Real time must pass to show that nothing drifts.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(sim.state(room, "tempActual"), Some(19.1));
    // Bad rates are no drift either, never a panic.
    for rate in [-1.0, f64::NAN, f64::INFINITY] {
        let sim = Simulator::demo_with(SimConfig {
            temp_drift_per_minute: rate,
            ..SimConfig::default()
        });
        assert_eq!(sim.state(room, "tempActual"), Some(19.1));
    }
}

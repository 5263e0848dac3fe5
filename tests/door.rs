//! Who is at the door (issue 30), below MCP: the simulator's intercoms and cameras as the real
//! Miniserver client and the bounded camera fetcher see them. `securedDetails` plain and
//! encrypted, bell pictures over HTTP and the WebSocket, a JPEG and two MJPEG cameras behind
//! Basic auth, and the attacks a camera can make (silence, 100 MB, HTML, a changed password),
//! each judged by what the simulated devices saw and by the timestamp drawn into the picture.

use std::sync::Arc;
use std::time::Duration;

use home_mcp::loxone::camera::{
    resolve_placeholders, CameraError, CameraSource, Credentials, FetchLimits, Fetcher, Obtained,
    VideoInfo,
};
use home_mcp::loxone::client::{Client, LoxoneError};
use home_mcp::loxone::config::{AuthMode, MiniserverConfig, Timeouts};
use home_mcp::loxone::picture::{PictureLimits, Sniffed};
use home_mcp::loxone::ws::{Incoming, Reader, WsError};
use home_mcp::sim::{
    CameraFault, DetailsForm, SimConfig, SimServer, Simulator, DEMO_PASSWORD, DEMO_USER,
};

use crate::support::picture;
use crate::support::wait::Deadline;
use crate::support::{wait_true, PATIENCE};

/// The demo house's Loxone Intercom (V1), IntercomV2 and custom camera.
const INTERCOM: &str = "1d5c3ca0-022a-60b0-ffff504f94d0e5a1";
const V2: &str = "1d5c3cb0-022a-60c0-ffff504f94d0e5a1";
const CUSTOM: &str = "1d5c3cc0-022a-60d0-ffff504f94d0e5a1";
/// The rings the demo house starts with (`lastBellEvents` in its values file).
const EARLIER_RINGS: [&str; 2] = ["20261127101500", "20261127121003"];

fn start(config: SimConfig) -> (Arc<Simulator>, SimServer) {
    let sim = Arc::new(Simulator::demo_with(config));
    let server = SimServer::start(sim.clone(), "127.0.0.1:0").unwrap();
    (sim, server)
}

fn client(server: &SimServer, mode: AuthMode) -> Client {
    let ms = MiniserverConfig {
        base_url: server.base_url(),
        user: DEMO_USER.into(),
        password: DEMO_PASSWORD.into(),
    };
    Client::with_auth(&ms, &Timeouts::default(), mode)
}

/// The camera source of `uuid` as the product builds it: `securedDetails` through `client`.
fn video_info(client: &Client, uuid: &str) -> VideoInfo {
    VideoInfo::parse(&client.secured_details(uuid).expect("securedDetails")).expect("videoInfo")
}

fn fetcher(deadline: Duration) -> Fetcher {
    Fetcher::new(FetchLimits {
        deadline,
        max_bytes: 4 * 1024 * 1024,
    })
}

#[test]
fn secured_details_come_plain_or_encrypted_as_string_or_object() {
    // Token firmware: the client asks inside command encryption (fenc), the answer is
    // decrypted; the simulator logs the plain command it decrypted.
    let (sim, server) = start(SimConfig::default());
    let c = client(&server, AuthMode::Auto);
    let mark = sim.request_count();
    let v = video_info(&c, INTERCOM);
    let base = sim.camera_base_url(INTERCOM).unwrap();
    assert_eq!(v.alert_image, Some(format!("{base}/jpg/image.jpg")));
    assert_eq!(v.stream_url, Some(format!("{base}/mjpg/video.mjpg")));
    assert_eq!(
        v.credentials,
        Some(Credentials {
            user: "intercom".into(),
            password: "door-4711".into()
        })
    );
    let wire = sim.requests_since(mark);
    assert!(
        wire.iter().any(|l| l.starts_with("GET /jdev/sys/fenc/")),
        "{wire:?}"
    );
    assert!(
        !wire
            .iter()
            .any(|l| l.starts_with("GET /jdev/sps/io/") && !l.contains("autht=")),
        "securedDetails went out in plain: {wire:?}"
    );
    // The value as an object reads the same; strict mode refuses plain requests.
    sim.set_secured_details_form(DetailsForm::Object);
    assert_eq!(video_info(&c, INTERCOM), v);
    sim.set_secured_details_form(DetailsForm::EncryptedOnly);
    assert_eq!(video_info(&c, INTERCOM), v);
    // The custom camera has only a stream; the V2 has no videoInfo of its own.
    let custom = video_info(&c, CUSTOM);
    assert_eq!(custom.alert_image, None);
    assert!(custom.stream_url.unwrap().ends_with("/video.mjpg"));
    assert_eq!(video_info(&c, V2), VideoInfo::default());

    // Old firmware without encryption: asked in plain with Basic auth.
    let (old, old_server) = start(SimConfig {
        token_auth: false,
        ..SimConfig::default()
    });
    let c = client(&old_server, AuthMode::Auto);
    let mark = old.request_count();
    let v = video_info(&c, INTERCOM);
    assert!(v.alert_image.is_some());
    assert!(old
        .requests_since(mark)
        .iter()
        .any(|l| l.contains("/securedDetails")));
    // ... and a Miniserver that insists on encryption says no to that.
    old.set_secured_details_form(DetailsForm::EncryptedOnly);
    assert!(matches!(
        c.secured_details(INTERCOM),
        Err(LoxoneError::Status { code: 400, .. })
    ));
    assert!(matches!(
        c.secured_details("no-such-control"),
        Err(LoxoneError::NotFound(_))
    ));
}

#[test]
fn a_ring_adds_a_bell_event_whose_picture_shows_its_time() {
    let (sim, server) = start(SimConfig::default());
    let c = client(&server, AuthMode::Auto);
    // The rings the house starts with have their pictures.
    for stamp in EARLIER_RINGS {
        let jpeg = c.camimage(INTERCOM, stamp, 4 << 20).unwrap();
        let shown = picture::read(&jpeg);
        assert_eq!(shown.stamp, stamp);
        assert_eq!((shown.width, shown.height), (1280, 720));
        assert!(picture::comment(&jpeg).unwrap().contains(stamp));
    }
    // A ring over the simulator's HTTP switch, as a test script would press the bell.
    let api = crate::support::drive::MiniserverApi::demo(server.addr());
    let stamp = api.ring(INTERCOM);
    assert_eq!(sim.state(INTERCOM, "bell"), Some(1.0));
    let events = sim.state_text(INTERCOM, "lastBellEvents").unwrap();
    assert_eq!(
        events,
        format!("{}|{}|{stamp}", EARLIER_RINGS[0], EARLIER_RINGS[1])
    );
    assert_eq!(
        sim.state_text(INTERCOM, "lastBellTimestamp").unwrap(),
        stamp
    );
    let jpeg = c.camimage(INTERCOM, &stamp, 4 << 20).unwrap();
    assert_eq!(picture::read(&jpeg).stamp, stamp);
    // A second ring in the same second still gets a picture of its own.
    let second = sim.ring(INTERCOM).unwrap();
    assert!(second > stamp, "{second} after {stamp}");
    assert_eq!(
        picture::read(&c.camimage(INTERCOM, &second, 4 << 20).unwrap()).stamp,
        second
    );
    // Unknown stamps are 404; `answer` ends the ring.
    assert!(matches!(
        c.camimage(INTERCOM, "20200101000000", 4 << 20),
        Err(LoxoneError::NotFound(_))
    ));
    assert!(matches!(
        c.camimage(INTERCOM, "../../data", 4 << 20),
        Err(LoxoneError::NotFound(_))
    ));
    c.command(INTERCOM, &["answer".to_string()]).unwrap();
    assert_eq!(sim.state(INTERCOM, "bell"), Some(0.0));
    // Bell pictures and the served log agree.
    let served: Vec<String> = sim
        .pictures_served()
        .into_iter()
        .filter(|s| s.path == "camimage")
        .map(|s| s.stamp)
        .collect();
    assert!(
        served.contains(&stamp) && served.contains(&second),
        "{served:?}"
    );
}

#[test]
fn bell_pictures_come_as_binary_files_over_the_websocket() {
    let (_sim, server) = start(SimConfig::default());
    let url = format!("ws://{}/ws/rfc6455", server.addr());
    let mut r = Reader::connect(&url, PATIENCE).unwrap();
    r.get_ref()
        .get_ref()
        .set_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let pk = home_mcp::loxone::crypto::PublicKey::parse(
        home_mcp::sim::sim_rsa().unwrap().public_key_line(),
    )
    .unwrap();
    home_mcp::loxone::ws::login::login(&mut r, &pk, DEMO_USER, DEMO_PASSWORD, PATIENCE)
        .expect("token login");
    let next = |r: &mut Reader<_>| {
        let deadline = Deadline::new("an answer over the WebSocket");
        loop {
            match r.next_message() {
                Ok(m) => return m,
                Err(WsError::Timeout) => deadline.check("nothing yet"),
                Err(e) => panic!("{e}"),
            }
        }
    };
    r.send_text(&format!("camimage/{INTERCOM}/{}", EARLIER_RINGS[1]))
        .unwrap();
    match next(&mut r) {
        Incoming::File(jpeg) => assert_eq!(picture::read(&jpeg).stamp, EARLIER_RINGS[1]),
        other => panic!("a binary file expected, got {other:?}"),
    }
    r.send_text(&format!("camimage/{INTERCOM}/20200101000000"))
        .unwrap();
    match next(&mut r) {
        Incoming::Text(t) => assert!(t.contains("\"404\""), "{t}"),
        other => panic!("a 404 answer expected, got {other:?}"),
    }
}

#[test]
fn each_camera_gives_its_picture_and_the_picture_is_scaled() {
    let (sim, server) = start(SimConfig::default());
    let c = client(&server, AuthMode::Auto);
    let f = fetcher(PATIENCE);
    let limits = PictureLimits::default();
    // The Loxone Intercom: its still JPEG (alertImage) with its own credentials.
    let v = video_info(&c, INTERCOM);
    let src = CameraSource::new(v.alert_image.as_deref().unwrap(), v.credentials.clone()).unwrap();
    let (pic, fetched) = f.fetch_picture(INTERCOM, &src, &limits).unwrap();
    assert_eq!(fetched.obtained, Obtained::Still);
    assert_eq!((pic.width, pic.height), (640, 360));
    assert_eq!((pic.source_width, pic.source_height), (1280, 720));
    let shown = picture::read(&pic.jpeg);
    let served = sim.pictures_served();
    let last = served.last().unwrap();
    assert_eq!(
        (
            last.control.as_str(),
            last.path.as_str(),
            shown.stamp.as_str(),
            shown.frame
        ),
        (INTERCOM, "/jpg/image.jpg", last.stamp.as_str(), 0)
    );
    assert_eq!(
        picture::comment(&pic.jpeg),
        None,
        "metadata is not passed on"
    );
    // The custom camera: the first frame of its MJPEG stream (parts without a length).
    let v = video_info(&c, CUSTOM);
    let src = CameraSource::new(v.stream_url.as_deref().unwrap(), v.credentials).unwrap();
    let (pic, fetched) = f.fetch_picture(CUSTOM, &src, &limits).unwrap();
    assert_eq!(fetched.obtained, Obtained::StreamFrame);
    let shown = picture::read(&pic.jpeg);
    assert_eq!(shown.frame, 0, "the first frame of the stream");
    assert!(sim
        .pictures_served()
        .iter()
        .any(|s| s.control == CUSTOM && s.frame == 0 && s.stamp == shown.stamp));
    // The IntercomV2: MJPEG at its address state, with the Miniserver user's credentials.
    let address = sim.state_text(V2, "address").unwrap();
    let src = CameraSource::new(
        &format!("http://{address}/mjpg/video.mjpg"),
        Some(Credentials {
            user: DEMO_USER.into(),
            password: DEMO_PASSWORD.into(),
        }),
    )
    .unwrap();
    let (pic, fetched) = f.fetch_picture(V2, &src, &limits).unwrap();
    assert_eq!(fetched.obtained, Obtained::StreamFrame);
    assert_eq!(picture::read(&pic.jpeg).frame, 0);
    // A smaller limit is honoured.
    let (small, _) = f
        .fetch_picture(
            V2,
            &src,
            &PictureLimits {
                max_side: 320,
                ..limits
            },
        )
        .unwrap();
    assert_eq!((small.width, small.height), (320, 180));
    assert_eq!(picture::read(&small.jpeg).frame, 0);
}

#[test]
fn the_attacks_of_a_camera_each_give_their_own_error() {
    let (sim, server) = start(SimConfig::default());
    let c = client(&server, AuthMode::Auto);
    let v = video_info(&c, INTERCOM);
    let src = CameraSource::new(v.alert_image.as_deref().unwrap(), v.credentials.clone()).unwrap();
    let f = fetcher(Duration::from_secs(2));
    // The password was changed on the device.
    crate::support::drive::MiniserverApi::demo(server.addr())
        .camera_fault(INTERCOM, "wrongpassword");
    assert_eq!(
        f.fetch(INTERCOM, &src),
        Err(CameraError::Unauthorized { status: 401 })
    );
    // Wrong credentials of our own are the same 401.
    sim.set_camera_fault(INTERCOM, CameraFault::None);
    let wrong = CameraSource::new(
        v.alert_image.as_deref().unwrap(),
        Some(Credentials {
            user: "intercom".into(),
            password: "guess".into(),
        }),
    )
    .unwrap();
    assert_eq!(
        f.fetch(INTERCOM, &wrong),
        Err(CameraError::Unauthorized { status: 401 })
    );
    // An HTML login page.
    sim.set_camera_fault(INTERCOM, CameraFault::Html);
    assert_eq!(
        f.fetch(INTERCOM, &src),
        Err(CameraError::NotAPicture(Sniffed::Html))
    );
    // 100 MB: stopped at the byte limit.
    sim.set_camera_fault(INTERCOM, CameraFault::Huge);
    let small = Fetcher::new(FetchLimits {
        deadline: PATIENCE,
        max_bytes: 1 << 20,
    });
    assert_eq!(
        small.fetch(INTERCOM, &src),
        Err(CameraError::TooLarge { limit: 1 << 20 })
    );
    // Silence: the deadline ends the fetch; a second fetch of the same camera waits for the
    // first and gives up at its own deadline instead of opening a second connection.
    sim.set_camera_fault(INTERCOM, CameraFault::Silent);
    let before = sim.camera_requests(INTERCOM);
    let f = Arc::new(f);
    let (f2, src2) = (f.clone(), src.clone());
    let first = std::thread::spawn(move || f2.fetch(INTERCOM, &src2));
    wait_true("the first fetch reaches the camera", || {
        sim.camera_requests(INTERCOM) > before
    });
    let second = f.fetch(INTERCOM, &src);
    assert!(
        matches!(
            second,
            Err(CameraError::Busy { .. }) | Err(CameraError::Timeout { .. })
        ),
        "{second:?}"
    );
    assert_eq!(
        first.join().unwrap(),
        Err(CameraError::Timeout {
            deadline: Duration::from_secs(2)
        })
    );
    // The second fetch reached the camera only after the first had given up, if at all (its
    // own deadline may end first): never two at once, so at most one more request.
    let seen = sim.camera_requests(INTERCOM) - before;
    assert!((1..=2).contains(&seen), "{seen} requests");
    if matches!(second, Err(CameraError::Busy { .. })) {
        assert_eq!(seen, 1, "a busy refusal sends nothing");
    }
    // No error names the camera's password or address.
    for e in [
        CameraError::Unauthorized { status: 401 },
        CameraError::NotAPicture(Sniffed::Html),
    ] {
        assert!(!e.to_string().contains("door-4711"));
    }
    // A camera that is not there at all.
    let gone = CameraSource::new("http://127.0.0.1:9/x.jpg", None).unwrap();
    assert!(matches!(
        f.fetch("gone", &gone),
        Err(CameraError::Connection(_))
    ));
}

#[test]
fn placeholders_point_at_the_configured_miniserver() {
    let (_sim, server) = start(SimConfig::default());
    let url = resolve_placeholders("http://cloudDNS/jpg/image.jpg", &server.base_url());
    assert_eq!(url, format!("http://{}/jpg/image.jpg", server.addr().ip()));
}

// ---------------------------------------------------------------- over MCP

mod over_mcp {
    use base64::Engine;
    use home_mcp::audit::Query;
    use home_mcp::auth::gate::SecurityLevel;
    use home_mcp::auth::{ApiKey, Role};
    use home_mcp::http::HttpConfig;
    use home_mcp::sim::{CameraFault, Simulator};
    use serde_json::{json, Value};

    use super::{CUSTOM, EARLIER_RINGS, INTERCOM, V2};
    use crate::support::app_server::{gate, AppServer};
    use crate::support::drive::MiniserverApi;
    use crate::support::gate::key;
    use crate::support::mcp::McpHttp;
    use crate::support::picture;
    use crate::support::{wait_until, PATIENCE};

    const ADMIN: &str = "homekey_admin_1_00112233445566778899aabbccddeeff";
    const OPERATOR: &str = "homekey_operator_2_00112233445566778899aabbccddeeff";
    const OPERATOR_CAMERAS: &str = "homekey_operator_3_00112233445566778899aabbccddeeff";
    const DEVICE_CAMERAS: &str = "homekey_device_4_00112233445566778899aabbccddeeff";

    fn keys() -> Vec<ApiKey> {
        vec![
            ApiKey {
                name: "owner".into(),
                ..key(ADMIN, Role::Admin)
            },
            ApiKey {
                name: "kitchen tablet".into(),
                ..key(OPERATOR, Role::Operator)
            },
            ApiKey {
                name: "hall tablet".into(),
                cameras: true,
                ..key(OPERATOR_CAMERAS, Role::Operator)
            },
            ApiKey {
                name: "door screen".into(),
                cameras: true,
                allowed_devices: vec![INTERCOM.into()],
                ..key(DEVICE_CAMERAS, Role::Device)
            },
        ]
    }

    fn start() -> AppServer {
        let keys = keys();
        AppServer::start(|app| HttpConfig {
            audit: app.audit.clone(),
            ..keyed_with(app, keys)
        })
    }

    /// The HTTP config with the gate over this module's keys (staging).
    fn keyed(app: &home_mcp::app::App) -> HttpConfig {
        keyed_with(app, keys())
    }

    fn keyed_with(app: &home_mcp::app::App, keys: Vec<ApiKey>) -> HttpConfig {
        HttpConfig {
            gate: Some(gate(app, SecurityLevel::Staging, keys, &[])),
            ..HttpConfig::default()
        }
    }

    /// The audit log's `get_camera_image` rows (newest first) once `enough` holds of them;
    /// fails naming `what` with the rows last seen.
    fn picture_rows(
        f: &AppServer,
        what: &str,
        enough: impl Fn(&[home_mcp::audit::Entry]) -> bool,
    ) -> Vec<home_mcp::audit::Entry> {
        let log = f.app.audit.as_ref().expect("audit on");
        wait_until(what, PATIENCE, || {
            log.flush();
            let e = log
                .query(&Query {
                    operation: Some("get_camera_image".into()),
                    ..Query::default()
                })
                .unwrap();
            if enough(&e) {
                Ok(e)
            } else {
                Err(e)
            }
        })
    }

    fn sim(f: &AppServer) -> &Simulator {
        &f.app.simulator.as_ref().expect("demo simulator").0
    }

    /// The picture of a successful `get_camera_image` answer, read back; checks the answer's
    /// shape: a text envelope and one `image` block, no bytes in `structuredContent`.
    fn picture_of(result: &Value) -> (picture::Shown, Value) {
        let short: String = result.to_string().chars().take(600).collect();
        assert_ne!(result["isError"], true, "{short}");
        let content = result["content"].as_array().expect("content");
        assert_eq!(content.len(), 2, "{short}");
        assert_eq!(content[0]["type"], "text");
        assert_eq!(content[1]["type"], "image");
        assert_eq!(content[1]["mimeType"], "image/jpeg");
        let b64 = content[1]["data"].as_str().unwrap();
        let jpeg = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap();
        let data = result["structuredContent"]["data"].clone();
        let structured = result["structuredContent"].to_string();
        assert!(structured.len() < 4000, "no bytes in structuredContent");
        assert!(!content[0]["text"].as_str().unwrap().contains(&b64[..64]));
        assert_eq!(data["picture"]["bytes"], jpeg.len());
        let shown = picture::read(&jpeg);
        assert!(shown.width.max(shown.height) <= 640, "{shown:?}");
        assert_eq!(
            (
                data["picture"]["width"].as_u64(),
                data["picture"]["height"].as_u64()
            ),
            (Some(u64::from(shown.width)), Some(u64::from(shown.height)))
        );
        (shown, data)
    }

    #[test]
    fn each_camera_answers_with_the_picture_it_sent() {
        let f = start();
        let mut c = McpHttp::connect(f.addr(), Some(ADMIN));
        let s = sim(&f);
        let (shown, data) = picture_of(&c.call("get_camera_image", json!({"device": "Haustür"})));
        let last = s.pictures_served().pop().unwrap();
        assert_eq!(
            (last.control.as_str(), shown.stamp.as_str()),
            (INTERCOM, last.stamp.as_str())
        );
        assert_eq!(data["obtained"], "still");
        assert_eq!(data["camera"]["kind"], "loxone_intercom");
        assert!(data["summary"].as_str().unwrap().contains("Haustür"));
        // The IntercomV2 and the custom camera: the first frame of their streams.
        for (device, uuid) in [("Gartentür", V2), ("Kamera Einfahrt", CUSTOM)] {
            let (shown, data) = picture_of(&c.call("get_camera_image", json!({"device": device})));
            assert_eq!(shown.frame, 0, "{device}");
            assert_eq!(data["obtained"], "stream_frame");
            assert!(s
                .pictures_served()
                .iter()
                .any(|p| p.control == uuid && p.stamp == shown.stamp && p.frame == 0));
        }
        // A ring's picture, by its timestamp.
        let (shown, data) = picture_of(&c.call(
            "get_camera_image",
            json!({"device": "Haustür", "bell_event": EARLIER_RINGS[0]}),
        ));
        assert_eq!(shown.stamp, EARLIER_RINGS[0]);
        assert_eq!(data["obtained"], "bell_picture");
        assert!(
            data["taken_at"]
                .as_str()
                .unwrap()
                .starts_with("2026-11-27T10:15:00"),
            "{data}"
        );
    }

    #[test]
    fn a_ring_is_listed_and_its_picture_shown() {
        let f = start();
        let mut c = McpHttp::connect(f.addr(), Some(ADMIN));
        let api = MiniserverApi::of(&f.app);
        let stamp = api.ring(INTERCOM);
        let listed = wait_until("the ring in list_doorbell_events", PATIENCE, || {
            let data = c.ok("list_doorbell_events", json!({"device": "Haustür"}));
            let door = data["doorbells"][0].clone();
            if door["events"][0]["bell_event"] == stamp.as_str() {
                Ok(door)
            } else {
                Err(door)
            }
        });
        assert_eq!(listed["events"].as_array().unwrap().len(), 3);
        let (shown, _) = picture_of(&c.call(
            "get_camera_image",
            json!({"device": "Haustür", "bell_event": "latest"}),
        ));
        assert_eq!(shown.stamp, stamp);
    }

    #[test]
    fn only_allowed_keys_see_pictures_and_each_is_in_the_audit_log() {
        let f = start();
        let s = sim(&f);
        let before = s.camera_requests(INTERCOM);
        let (status, body) = McpHttp::connect(f.addr(), Some(OPERATOR))
            .try_call("get_camera_image", json!({"device": "Haustür"}));
        assert_eq!(status, 403, "{body}");
        assert!(
            body.to_string().contains("INSUFFICIENT_PERMISSIONS"),
            "{body}"
        );
        assert_eq!(
            s.camera_requests(INTERCOM),
            before,
            "the camera saw no request"
        );
        // The same role with the owner's `cameras` setting gets the picture.
        let mut c = McpHttp::connect(f.addr(), Some(OPERATOR_CAMERAS));
        let (_, data) = picture_of(&c.call("get_camera_image", json!({"device": "Haustür"})));
        let bytes = data["picture"]["bytes"].as_u64().unwrap();
        let entries = picture_rows(&f, "the picture in the audit log", |e| {
            e.iter().any(|e| e.result == "ok")
        });
        let ok = entries.iter().find(|e| e.result == "ok").unwrap();
        assert_eq!(ok.key_name, "hall tablet");
        assert_eq!(ok.target, format!("Haustür (Außenbereich): {bytes} bytes"));
        // Nothing of the picture or the camera's password is in the log.
        let all = serde_json::to_string(&entries).unwrap();
        assert!(!all.contains("door-4711") && !all.contains("base64"));
    }

    /// A picture tool only reads (`readOnlyHint`) yet needs the cameras grant and is audited:
    /// `tools/list` says so; every call asks the camera again although the tool cache is on (a
    /// picture is never kept); a refusal is in the audit log; a device key with the grant sees
    /// its own camera only, the other camera never asked.
    #[test]
    fn pictures_are_never_cached_and_refusals_are_audited() {
        let f = start();
        let s = sim(&f);
        let caches = home_mcp::config::Config::default().server.caches;
        assert!(
            caches.tool_ttl > std::time::Duration::ZERO,
            "the tool cache is on"
        );
        let mut c = McpHttp::connect(f.addr(), Some(OPERATOR_CAMERAS));
        let listed = c.rpc("tools/list", json!({}));
        let tool = listed["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "get_camera_image")
            .cloned()
            .expect("listed");
        assert_eq!(tool["annotations"]["readOnlyHint"], true, "{tool}");
        assert!(
            tool["description"]
                .as_str()
                .unwrap()
                .ends_with("(permission: read, cameras)"),
            "{tool}"
        );
        let before = s.camera_requests(INTERCOM);
        for _ in 0..2 {
            picture_of(&c.call("get_camera_image", json!({"device": "Haustür"})));
        }
        assert_eq!(
            s.camera_requests(INTERCOM),
            before + 2,
            "each call asks the camera"
        );
        // Refused for lack of the grant: in the audit log, the camera not asked.
        let (status, _) = McpHttp::connect(f.addr(), Some(OPERATOR))
            .try_call("get_camera_image", json!({"device": "Haustür"}));
        assert_eq!(status, 403);
        assert_eq!(s.camera_requests(INTERCOM), before + 2);
        picture_rows(&f, "the refusal in the audit log", |e| {
            e.iter()
                .find(|e| e.result == "INSUFFICIENT_PERMISSIONS")
                .is_some_and(|refused| refused.key_name == "kitchen tablet")
        });
        // A device key with the grant: its own camera, not the others.
        let mut d = McpHttp::connect(f.addr(), Some(DEVICE_CAMERAS));
        picture_of(&d.call("get_camera_image", json!({"device": "Haustür"})));
        let v2_before = s.camera_requests(V2);
        let r = d.call("get_camera_image", json!({"device": "Gartentür"}));
        assert_eq!(r["isError"], true, "{r}");
        assert!(r.to_string().contains("INSUFFICIENT_PERMISSIONS"), "{r}");
        assert_eq!(
            s.camera_requests(V2),
            v2_before,
            "the other camera never asked"
        );
        let bells = d.ok("list_doorbell_events", json!({}));
        assert_eq!(bells["total"], 1, "only its own intercom: {bells}");
    }

    /// The dashboard's doorbell pictures (`GET /dashboard/api/doorbells/{uuid}/picture`: the
    /// last ring's, the Miniserver's picture; `?of=now` the camera's): the permission of
    /// `get_camera_image` (403 and nothing fetched without the grant), a no-store JPEG with it,
    /// and one audit row per picture naming the camera and the bytes sent, transport
    /// `dashboard`.
    #[test]
    fn the_dashboards_doorbell_picture_needs_the_grant_and_is_audited() {
        use home_mcp::dashboard::{Dashboard, History, HistoryConfig, WsConfig};
        let mut dash = None;
        let f = AppServer::start(|app| {
            let history = History::in_memory(HistoryConfig::default()).unwrap();
            let d = Dashboard::start(app.house.clone(), history, WsConfig::default()).unwrap();
            dash = Some(d.clone());
            HttpConfig {
                audit: app.audit.clone(),
                dashboard: Some(d),
                ..keyed(app)
            }
        });
        let s = sim(&f);
        let path = format!("/dashboard/api/doorbells/{INTERCOM}/picture");
        // GET `at` with the key `key`.
        let get_at = |at: &str, key: &str| {
            crate::support::net::request(f.addr(), "GET", at, &[format!("X-API-Key: {key}")], "")
        };
        let get = |key: &str| get_at(&path, key);
        let served = || s.pictures_served().len();
        // The rings as the live link delivers them (then the card's picture is the last ring's).
        wait_until("the rings known", PATIENCE, || {
            let home = f.app.house.home();
            let door = home.control(INTERCOM).expect("the intercom");
            f.app.house.bell_events(door).ok_or("not yet")
        });
        // The page's data says whether the key may fetch pictures at all (then it offers the
        // buttons; the gate decides again for each picture).
        for (k, may) in [(OPERATOR, false), (OPERATOR_CAMERAS, true)] {
            let data = get_at("/dashboard/api/data", k);
            assert_eq!(data.status, 200, "{}", data.body);
            let body: Value = serde_json::from_str(&data.body).unwrap();
            assert_eq!(body["pictures"], may, "{k}");
            assert!(
                body["doorbells"].as_array().is_some_and(|d| d.len() == 3),
                "{body}"
            );
        }
        // A camera that keeps no rings has no ring's picture: 404, and the camera is not asked.
        let custom = s.camera_requests(CUSTOM);
        let none = get_at(
            &format!("/dashboard/api/doorbells/{CUSTOM}/picture"),
            OPERATOR_CAMERAS,
        );
        assert_eq!(none.status, 404, "{}", none.body);
        assert_eq!(s.camera_requests(CUSTOM), custom, "the camera not asked");
        let before = served();
        let refused = get(OPERATOR);
        assert_eq!(refused.status, 403, "{}", refused.body);
        assert!(
            refused.body.contains("INSUFFICIENT_PERMISSIONS"),
            "{}",
            refused.body
        );
        assert_eq!(served(), before, "nothing fetched");
        let shown = get(OPERATOR_CAMERAS);
        assert_eq!(shown.status, 200, "{}", shown.body);
        assert_eq!(shown.header("content-type"), Some("image/jpeg"));
        assert_eq!(shown.header("cache-control"), Some("no-store"));
        let bytes: usize = shown.header("content-length").unwrap().parse().unwrap();
        // The last ring's picture, from the Miniserver's camimage.
        let last = s.pictures_served().pop().expect("a picture served");
        assert_eq!(
            (last.path.as_str(), last.stamp.as_str()),
            ("camimage", EARLIER_RINGS[1])
        );
        // `?of=now`: the camera's picture now, from the camera itself.
        let cam = s.camera_requests(INTERCOM);
        let now = get_at(&format!("{path}?of=now"), OPERATOR_CAMERAS);
        assert_eq!(now.status, 200, "{}", now.body);
        assert_eq!(s.camera_requests(INTERCOM), cam + 1);
        let rows = picture_rows(&f, "the three rows in the audit log", |e| e.len() >= 3);
        assert!(rows.iter().all(|e| e.transport == "dashboard"), "{rows:?}");
        assert!(
            rows.iter()
                .any(|e| e.result == "INSUFFICIENT_PERMISSIONS" && e.key_name == "kitchen tablet"),
            "{rows:?}"
        );
        // Rows come newest first: the ring's picture is the older of the two.
        let ok: Vec<&home_mcp::audit::Entry> = rows.iter().filter(|e| e.result == "ok").collect();
        assert_eq!(ok.len(), 2, "{rows:?}");
        assert_eq!(
            (ok[1].key_name.as_str(), ok[1].target.clone()),
            (
                "hall tablet",
                format!("Haustür (Außenbereich): {bytes} bytes")
            )
        );
        dash.unwrap().shutdown();
    }

    #[test]
    fn camera_failures_and_unknown_rings_have_errors_of_their_own() {
        let f = start();
        let s = sim(&f);
        let mut c = McpHttp::connect(f.addr(), Some(ADMIN));
        // An unknown ring (once the live link has pushed the rings) never reaches the camera
        // or the Miniserver's camimage.
        wait_until("the rings known", PATIENCE, || {
            let data = c.ok("list_doorbell_events", json!({"device": "Haustür"}));
            if data["doorbells"][0]["events_known"] == true {
                Ok(())
            } else {
                Err(data)
            }
        });
        let before = s.camera_requests(INTERCOM);
        let r = c.rpc(
            "tools/call",
            json!({"name": "get_camera_image", "arguments": {"device": "Haustür", "bell_event": "20200101000000"}}),
        );
        let text = r.to_string();
        assert!(
            text.contains("has no ring at") && text.contains("2026-11-27 12:10:03"),
            "{r}"
        );
        assert_eq!(s.camera_requests(INTERCOM), before);
        let reason = |c: &mut McpHttp, fault: CameraFault| {
            s.set_camera_fault(INTERCOM, fault);
            let r = c.call("get_camera_image", json!({"device": "Haustür"}));
            assert_eq!(r["isError"], true, "{fault:?}: {r}");
            let env: Value =
                serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
            assert_eq!(env["error"]["code"], "CONNECTION_ERROR");
            assert!(!env.to_string().contains("door-4711"));
            env["error"]["details"]["reason"]
                .as_str()
                .unwrap()
                .to_string()
        };
        assert_eq!(
            reason(&mut c, CameraFault::WrongPassword),
            "camera_unauthorized"
        );
        assert_eq!(reason(&mut c, CameraFault::Html), "camera_not_a_picture");
        assert_eq!(reason(&mut c, CameraFault::Huge), "camera_too_large");
        assert_eq!(reason(&mut c, CameraFault::Silent), "camera_timeout");
        s.set_camera_fault(INTERCOM, CameraFault::None);
        picture_of(&c.call("get_camera_image", json!({"device": "Haustür"})));
        // Not a camera; a V2 keeps no ring pictures.
        let r = c.call("get_camera_image", json!({"device": "Deckenlicht Küche"}));
        assert!(
            r.to_string().contains("DEVICE_NOT_FOUND") || r.to_string().contains("not a camera"),
            "{r}"
        );
        let r = c.rpc(
            "tools/call",
            json!({"name": "get_camera_image", "arguments": {"device": "Gartentür", "bell_event": "latest"}}),
        );
        assert!(
            r.to_string().contains("no rings are known")
                || r.to_string().contains("keeps no pictures"),
            "{r}"
        );
    }
}

/// A `tools/call` result whose second block is an image (the first is the text saying which
/// camera); fails with the start of the answer.
fn assert_image(r: &serde_json::Value) {
    assert_eq!(
        r["content"][1]["type"],
        "image",
        "{}",
        r.to_string().chars().take(300).collect::<String>()
    );
}

/// The real `serve` binary (staging, the edge tests' contract) against the simulated door: a
/// camera that sends 100 MB is stopped at the byte limit, answered with its own error, and the
/// server's peak RSS stays under the edge bound ([`crate::support::edge::RSS_BOUND_KB`]); the
/// 100 MB never reach memory. The same for a camera that never answers, within the deadline.
#[test]
fn a_camera_attack_leaves_the_server_small() {
    use crate::support::edge::{start_with_keys, RSS_BOUND_KB};
    use crate::support::mcp::McpHttp;
    use crate::support::server::Miniserver;
    use home_mcp::auth::Role;
    use serde_json::json;

    const ADMIN: &str = "homekey_admin_9_00000000000000000000000000000009";
    let ms = Miniserver::demo();
    let served = start_with_keys(
        &ms,
        "[cameras]\ndeadline_secs = 3\nmax_bytes = 2097152\n",
        &[crate::support::gate::key(ADMIN, Role::Admin)],
    );
    served.wait_states();
    let peak_kb = || {
        let status = std::fs::read_to_string(format!("/proc/{}/status", served.pid())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .expect("VmHWM")
    };
    let mut c = McpHttp::connect(served.addr, Some(ADMIN));
    let reason = |c: &mut McpHttp| {
        let r = c.call("get_camera_image", json!({"device": "Haustür"}));
        let env: serde_json::Value =
            serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
        env["error"]["details"]["reason"]
            .as_str()
            .map(str::to_string)
    };
    ms.sim.set_camera_fault(INTERCOM, CameraFault::Huge);
    for _ in 0..3 {
        assert_eq!(reason(&mut c).as_deref(), Some("camera_too_large"));
    }
    ms.sim.set_camera_fault(INTERCOM, CameraFault::Silent);
    assert_eq!(reason(&mut c).as_deref(), Some("camera_timeout"));
    let peak = peak_kb();
    assert!(
        peak < RSS_BOUND_KB,
        "peak RSS {peak} kB after 3 x 100 MB offered (bound {RSS_BOUND_KB} kB)"
    );
    // And it still hands out pictures.
    ms.sim.set_camera_fault(INTERCOM, CameraFault::None);
    assert_image(&c.call("get_camera_image", json!({"device": "Haustür"})));
}

/// The `cameras` grant as the owner gives it on the command line: keys made by
/// `home-mcp keys generate` into the key store the real `serve` binary reads, one with
/// `--cameras yes`, one without (same role). The one with it gets the picture; the one without
/// is refused with `INSUFFICIENT_PERMISSIONS` and the simulator's camera sees no request.
#[test]
fn a_key_generated_with_the_cameras_setting_sees_pictures() {
    use crate::support::keys_cli::generate;
    use crate::support::mcp::McpHttp;
    use crate::support::server::{Miniserver, Served, TempDir};
    use serde_json::json;

    let dir = TempDir::new("door-keys");
    let store = dir.0.join("keys.toml");
    let secret = |v: serde_json::Value| v["id"].as_str().expect("the secret").to_string();
    let with = secret(generate(&store, "operator", &["--cameras", "yes"]));
    let without = secret(generate(&store, "operator", &[]));
    let ms = Miniserver::demo();
    let served = Served::start_args(
        &ms,
        "[auth]\nsecurity_level = \"staging\"\n",
        &[("HOME_KEY_BACKEND", "file")],
        &["--key-store", &store.display().to_string()],
    );
    let before = ms.sim.camera_requests(INTERCOM);
    let mut c = McpHttp::connect(served.addr, Some(&without));
    let (status, refused) = c.try_call("get_camera_image", json!({"device": "Haustür"}));
    assert_eq!(status, 403, "{refused}");
    assert!(
        refused.to_string().contains("INSUFFICIENT_PERMISSIONS"),
        "{refused}"
    );
    assert_eq!(ms.sim.camera_requests(INTERCOM), before, "no camera asked");
    let mut c = McpHttp::connect(served.addr, Some(&with));
    assert_image(&c.call("get_camera_image", json!({"device": "Haustür"})));
    assert_eq!(ms.sim.camera_requests(INTERCOM), before + 1, "one picture");
}

/// A workflow cannot hold a picture tool: its answer (an image for one caller) has nowhere to go,
/// and a stored workflow would let other keys fetch pictures.
#[test]
fn workflows_refuse_picture_steps() {
    use crate::support::house::{call, demo};
    use serde_json::json;
    let (_app, tools) = demo();
    let r = call(
        &tools,
        "create_workflow",
        json!({"name": "peek", "steps": [
            {"tool": "get_camera_image", "arguments": {"device": "Haustür"}}]}),
    );
    let text = format!("{r:?}");
    assert!(text.contains("returns pictures"), "{text}");
}

/// A demo house whose `[home] time_zone` is far from UTC (9:30 ahead, no daylight saving): the
/// simulated Miniserver writes its rings on that wall clock, as a real Miniserver writes
/// `lastBellEvents` on its own, so `list_doorbell_events` shows a ring at the instant it rang
/// (the machine's clock read before and after the ring is the oracle), not 9.5 hours off, with
/// the house's offset; and the ring's picture shows the same local time.
#[test]
fn rings_are_on_the_house_clock_in_any_time_zone() {
    use crate::support::house::{demo_with, ok, sim, test_config};
    use crate::support::wait_until;
    use home_mcp::home::HouseTime;
    use serde_json::json;

    let mut config = test_config();
    config.time_zone = Some(HouseTime::named("ACST-9:30").expect("a POSIX time zone"));
    let (app, tools) = demo_with(&config);
    let before = jiff::Timestamp::now();
    let stamp = sim(&app).ring(INTERCOM).expect("the intercom rings");
    let after = jiff::Timestamp::now();
    let event = wait_until("the ring listed", PATIENCE, || {
        let data = ok(&tools, "list_doorbell_events", json!({"device": "Haustür"}));
        let first = data["doorbells"][0]["events"][0].clone();
        if first["bell_event"] == stamp.as_str() {
            Ok(first)
        } else {
            Err(data)
        }
    });
    let time = event["time"].as_str().expect("a time");
    assert!(time.ends_with("+09:30"), "{time}");
    let at: jiff::Timestamp = time.parse().expect("ISO 8601");
    // Whole seconds: the ring's second lies between the readings around it.
    let slack = jiff::SignedDuration::from_secs(1);
    assert!(
        before - slack <= at && at <= after + slack,
        "ring at {at}, between {before} and {after}"
    );
    // The picture of that ring shows that local time.
    let jpeg = home_mcp::loxone::client::Client::new(
        &home_mcp::loxone::config::MiniserverConfig {
            base_url: sim_base(&app),
            user: DEMO_USER.into(),
            password: DEMO_PASSWORD.into(),
        },
        &Timeouts::default(),
    )
    .camimage(INTERCOM, &stamp, 4 << 20)
    .expect("the ring's picture");
    assert_eq!(picture::read(&jpeg).stamp, stamp);
}

/// The base URL of a demo app's simulated Miniserver.
fn sim_base(app: &home_mcp::app::App) -> String {
    app.simulator.as_ref().expect("demo").1.base_url()
}

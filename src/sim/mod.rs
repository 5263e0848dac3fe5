//! A Loxone Miniserver simulator speaking the documented API (HTTP and WebSocket, `jdev/` JSON
//! and `dev/` XML, plain and encrypted), for `--demo`, `home-mcp sim` and the tests.
//!
//! The simulator is its own Miniserver: it reads a structure file (`LoxAPP3.json`) with
//! `serde_json::Value`, never through `crate::loxone` or `crate::home`, so the client is
//! tested against an independent reading of the same format. Every command it serves is a
//! row of one table (`commands.rs`, shown in docs/development.md) that one router reads for
//! both transports; whatever it cannot do still gets an answer (404, 400, 401). It answers:
//!
//! - `GET /jdev/cfg/api` and `/jdev/cfg/apiKey` without authentication (single-quoted
//!   pseudo-JSON inside the `LL` envelope, loxone-protocol.md §2.2);
//! - everything else behind HTTP Basic auth with UTF-8 credentials (§3.1) and the
//!   Miniserver's IP lock-out after repeated failures (§2.7);
//! - `/data/LoxAPP3.json` (the structure text, unchanged) and `/jdev/sps/LoxAPPversion3`;
//! - `/jdev/sps/io/{uuid-or-name}[/{command}]`, `/state` and `/all`, with per-type behaviour
//!   from §5.3 (see `controls.rs`): blinds and gates move over time, alarms arm after a delay,
//!   room temperatures drift toward their targets ([`SimConfig::temp_drift_per_minute`]);
//! - secured controls (`isSecured`, §2.4): `/jdev/sys/getvisusalt/{user}` hands out a one-time
//!   key and salt, `/jdev/sps/ios/{hash}/{uuid}/{command}` checks the hash of the visualisation
//!   password (code 500 when wrong), and a plain `sps/io` command to a secured control is
//!   refused with code 403 (reads stay allowed).
//!
//! - the WebSocket endpoint `/ws/rfc6455` (`remotecontrol`, §4): headers, `LL` answers,
//!   `keepalive`, the initial value and text tables after `enablebinstatusupdate` and change
//!   events after every command and while blinds travel, with fault switches for tests
//!   (see `ws.rs`; a session authenticates with a token acquired on it or `authwithtoken`);
//! - token authentication and command encryption (`auth.rs`, §3): getkey2, getjwt and the
//!   legacy gettoken, refresh/check/kill, `enc`/`fenc` with the paddings clients use;
//! - diagnostics and version probes (`system.rs`, §2.2, §2.6);
//! - the fault switch "answer slowly" ([`Simulator::set_delay`]) for HTTP and WebSocket;
//! - the Message Center (`getEntries`, `readEntry`, `action`) and pushed notifications, with a
//!   test drive under `/sim/drive/` that raises and clears entries, pushes notifications, sets
//!   states as the Miniserver's own logic would and shows the request log (see
//!   `message_center.rs`).
//!
//! Layout: [`house`] holds the controls and their states, [`controls`] the per-type
//! behaviour, `commands` the command table and its router, `answer` what handlers answer and
//! how it is written (JSON, XML, HTML pages), `http` Basic auth, the lock-out and the `sps/io`
//! handlers, `auth` tokens and encryption, `system` the rest, and [`server`] the tiny_http
//! front end (one write per answer, `TCP_NODELAY`). [`Simulator::handle`] is a pure request handler, testable without sockets.
//! [`synth`] writes synthetic structure files of any size (benchmarks).
//!
//! The embedded demo house ([`Simulator::demo`], `assets/demo-house.json`) is a bilingual
//! family home with every simulated control type; its credentials are `demo` / `demo`
//! ([`DEMO_USER`], [`DEMO_PASSWORD`]) and its visualisation password is `1234`
//! ([`DEMO_VISU_PASSWORD`]).

mod answer;
mod auth;
mod commands;
mod controls;
mod door;
pub mod frame;
mod house;
mod http;
mod message_center;
mod server;
mod stats;
pub mod synth;
mod system;
mod ws;

use std::fmt;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

pub use auth::{sim_rsa, SimCryptoError, SimRsa, SimSessionKey, SIM_RSA_KEY_PEM};
pub use commands::{command_table, markdown_table as command_table_markdown, CommandInfo};
pub use door::{
    CameraFault, CameraServers, DetailsForm, Served, CAMERA_CREDENTIALS, HUGE_BYTES,
    INTERCOM_CREDENTIALS, MAX_BELL_EVENTS, RING_SECS,
};
pub use http::FIRMWARE_VERSION;
pub use server::SimServer;
pub use stats::{Calendar as StatsCalendar, StatsFault};
pub use ws::MAX_SESSIONS;

use house::{House, Val};

/// The demo house structure file (LoxAPP3.json format).
pub const DEMO_STRUCTURE: &str = include_str!("../../assets/demo-house.json");
/// Initial state values of the demo house: `{ "<uuidAction>": { "<state>": value } }`.
pub const DEMO_VALUES: &str = include_str!("../../assets/demo-house.values.json");
/// User name of [`SimConfig::default`] and [`Simulator::demo`].
pub const DEMO_USER: &str = "demo";
/// Password of [`SimConfig::default`] and [`Simulator::demo`].
pub const DEMO_PASSWORD: &str = "demo";
/// Visualisation password (PIN) of secured controls in [`SimConfig::default`].
pub const DEMO_VISU_PASSWORD: &str = "1234";

/// The hash algorithm `getvisusalt` announces (`hashAlg`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VisuHash {
    /// `SHA1` (firmware before 10.3).
    Sha1,
    /// `SHA256` (10.3 and later).
    #[default]
    Sha256,
}

/// Spelling of the status key in the `LL` envelope: the Miniserver uses `"Code"` in most
/// answers and `"code"` in others (loxone-protocol.md §2.1), so clients must accept both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CodeKey {
    /// `"Code": "200"` (the `sps/io` and `cfg/api` captures).
    #[default]
    Code,
    /// `"code": "200"` (the getkey2 and gettoken captures).
    LowerCode,
}

/// How the simulator behaves.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Basic-auth user name (compared exactly, UTF-8).
    pub user: String,
    /// Basic-auth password (compared exactly, UTF-8, so `pässwörd€` works).
    pub password: String,
    /// Wrong logins from one IP before it is blocked (default 5).
    pub max_failed_logins: u32,
    /// How long a blocked IP gets 403 (default 60 s).
    pub lockout: Duration,
    /// Time a blind or gate takes for a full travel, position 0 to 1 (default 20 s).
    pub blind_travel: Duration,
    /// `"Code"` or `"code"` in the envelope (default `Code`).
    pub code_key: CodeKey,
    /// Unknown control/command (404) and bad arguments (400): `false` (default) answers
    /// with that HTTP status and the Miniserver's HTML error page; `true` answers HTTP 200
    /// with `"Code": "404"` (or 400) in the `LL` envelope. §2.7 leaves both possible.
    pub not_found_in_envelope: bool,
    /// Visualisation password of the secured controls (default [`DEMO_VISU_PASSWORD`]).
    pub visu_password: String,
    /// `hashAlg` of `getvisusalt` (default SHA256).
    pub visu_hash: VisuHash,
    /// Token auth (§3.3): `true` (default) serves `getPublicKey`, `jdev/sys/enc|fenc` and
    /// `getjwt`; `false` plays old firmware, where they answer 404 and only Basic auth works.
    pub token_auth: bool,
    /// `hashAlg` of `getkey2` for the user password (default SHA256).
    pub user_hash: VisuHash,
    /// Lifetime of tokens from `getjwt`/`refreshjwt` (default 1 hour).
    pub token_lifetime: Duration,
    /// How fast a room's `tempActual` follows its `tempTarget` (IRoomController v1 and v2),
    /// in °C per minute (default 0.5; 0 keeps temperatures still). Shown in 0.1 °C steps,
    /// computed when read, so WebSocket sessions push each step as a value event.
    pub temp_drift_per_minute: f64,
    /// Whether the user may receive state updates (default `true`). `false` plays a Loxone
    /// user without enough rights: the structure file is served and `enablebinstatusupdate`
    /// answers 200, but no event table is ever pushed over the WebSocket.
    pub state_updates: bool,
    /// The Miniserver's time zone (default `Europe/Berlin`, where the demo house stands;
    /// `serve --demo` gives it the house's `[home] time_zone` when one is set): the local time
    /// of its statistics (`stats.rs`), bell events (`lastBellEvents`, `YYYYMMDDHHMMSS`), the
    /// time the cameras draw into their pictures and `miniserverTime` are on its wall clock,
    /// as a real Miniserver writes them.
    pub time_zone: crate::home::HouseTime,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            user: DEMO_USER.into(),
            password: DEMO_PASSWORD.into(),
            max_failed_logins: 5,
            lockout: Duration::from_secs(60),
            blind_travel: Duration::from_secs(20),
            code_key: CodeKey::Code,
            not_found_in_envelope: false,
            visu_password: DEMO_VISU_PASSWORD.into(),
            visu_hash: VisuHash::Sha256,
            token_auth: true,
            user_hash: VisuHash::Sha256,
            token_lifetime: Duration::from_secs(3600),
            temp_drift_per_minute: 0.5,
            state_updates: true,
            time_zone: crate::home::HouseTime::named("Europe/Berlin")
                .or_else(|_| crate::home::HouseTime::named("CET-1CEST,M3.5.0,M10.5.0/3"))
                .unwrap_or_else(|_| crate::home::HouseTime::utc()),
        }
    }
}

/// Why a simulator could not be built.
#[derive(Debug, Clone, PartialEq)]
pub enum SimError {
    /// The structure text is not JSON.
    Json(String),
    /// The structure JSON lacks what a structure file has (`controls`, `msInfo`, ...).
    Structure(String),
    /// The initial values are not JSON or name an unknown control.
    Values(String),
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Json(e) => write!(f, "structure file is not JSON: {e}"),
            SimError::Structure(e) => write!(f, "structure file: {e}"),
            SimError::Values(e) => write!(f, "initial values: {e}"),
        }
    }
}

impl std::error::Error for SimError {}

/// `msInfo.serialNr` as the simulator serves it (`snr` of `/jdev/cfg/api`, with colons after
/// every two characters, and the seed of its `apiKey` key). Real serials are 12 hex digits
/// without separators (loxone-protocol.md §2.2); anonymised sample files use letters too
/// (`504F94SAMPLE`); files from the field may write it as `snr` shows it
/// (`50:4F:94:10:B8:1A`, dashes likewise) or have another length (14 characters). Separators
/// are dropped; another length is served as it is, with a warning in the log. Errors when
/// nothing is left or other characters remain: the serial goes into the single-quoted
/// pseudo-JSON of `cfg/api`, where a quote would break the answer.
fn serial_of(raw: &str) -> Result<String, SimError> {
    let serial: String = raw.chars().filter(|c| !matches!(c, ':' | '-')).collect();
    if serial.is_empty() || !serial.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(SimError::Structure(format!(
            "msInfo.serialNr {raw:?} is not letters and digits (with : or - between them)"
        )));
    }
    if serial.len() != 12 {
        log::warn!(
            "sim: structure file: msInfo.serialNr {raw:?} has {} characters, a Miniserver's \
             has 12; served as it is",
            serial.len()
        );
    }
    Ok(serial)
}

/// One HTTP answer of the simulator.
#[derive(Debug, Clone, PartialEq)]
pub struct SimResponse {
    /// HTTP status: 200, or 400/401/403/404/405 with an HTML body.
    pub status: u16,
    /// `application/json` or `text/html`.
    pub content_type: &'static str,
    pub body: String,
    /// A binary body (statistics records), sent instead of `body` when present.
    pub data: Option<Vec<u8>>,
}

/// A simulated Miniserver: the structure text, live per-control state behind a mutex, and
/// failed-login bookkeeping. Share it as `Arc<Simulator>`.
pub struct Simulator {
    config: SimConfig,
    /// The structure text and its `lastModified` (replaceable: [`Simulator::replace_structure`]).
    structure: std::sync::RwLock<(String, String)>,
    /// `msInfo.serialNr` as [`serial_of`] reads it: ASCII letters and digits, 12 of them (hex
    /// digits) on a real Miniserver.
    serial: String,
    /// `msInfo.localUrl`, reported as `address` by `/jdev/cfg/apiKey`.
    address: String,
    house: Mutex<House>,
    /// Intercoms and cameras (`door.rs`).
    door: Mutex<door::Door>,
    logins: Mutex<http::Logins>,
    /// Outstanding one-time `getvisusalt` keys.
    visu_keys: Mutex<http::VisuKeys>,
    /// getkey2 keys and issued tokens (auth.rs).
    tokens: Mutex<auth::Tokens>,
    /// WebSocket sessions: change subscribers, fault switches, auth seam.
    ws: ws::Hub,
    /// Fault switch "answer slowly" ([`Simulator::set_delay`]), in nanoseconds.
    delay_nanos: std::sync::atomic::AtomicU64,
    /// How many requests came in all, and the last [`REQUEST_LOG_LEN`] request lines, oldest
    /// first ([`Simulator::requests`]).
    requests: Mutex<(usize, std::collections::VecDeque<String>)>,
    /// The recorded history of the controls with statistics (`stats.rs`).
    stats: stats::Stats,
    /// The Message Center and the notifications (`message_center.rs`).
    message_center: Mutex<message_center::MessageCenter>,
}

/// How many request lines [`Simulator::requests`] keeps (older ones are dropped).
pub const REQUEST_LOG_LEN: usize = 4096;

impl fmt::Debug for Simulator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Simulator")
            .field("serial", &self.serial)
            .field("last_modified", &self.structure_version())
            .finish_non_exhaustive()
    }
}

impl Simulator {
    /// Builds a simulator from a structure file and optional initial values
    /// (`{ "<uuidAction>": { "<state>": number | string } }`; states not given start at 0
    /// or an empty text; array states are addressed as `temperatures[1]`).
    pub fn new(
        structure_json: &str,
        initial_values: Option<&str>,
        config: SimConfig,
    ) -> Result<Self, SimError> {
        let doc: Value =
            serde_json::from_str(structure_json).map_err(|e| SimError::Json(e.to_string()))?;
        let values: Option<Value> = initial_values
            .map(serde_json::from_str)
            .transpose()
            .map_err(|e| SimError::Values(e.to_string()))?;
        let mut house = House::new(&doc, values.as_ref())?;
        house.start_drift(config.temp_drift_per_minute, std::time::Instant::now());
        let now = jiff::Timestamp::now().as_second();
        let stats = stats::Stats::new(&doc, config.time_zone.time_zone().clone(), now);
        // A meter's live readings are where its history ends.
        for ctl in house.ctls.iter_mut() {
            let names: Vec<String> = ctl.state_uuids.iter().map(|(n, _)| n.clone()).collect();
            for (name, v) in stats.meter_states(&ctl.uuid, &names, now) {
                ctl.set(&name, v);
            }
        }
        let door = door::Door::of(&house.ctls);
        let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
        let ms_info = doc.get("msInfo");
        let serial = serial_of(&text(ms_info.and_then(|m| m.get("serialNr"))))?;
        let address = match text(ms_info.and_then(|m| m.get("localUrl"))) {
            a if a.is_empty() => "127.0.0.1".to_string(),
            a => a,
        };
        Ok(Simulator {
            config,
            structure: std::sync::RwLock::new((
                structure_json.to_string(),
                text(doc.get("lastModified")),
            )),
            serial,
            address,
            house: Mutex::new(house),
            door: Mutex::new(door),
            logins: Mutex::new(http::Logins::default()),
            visu_keys: Mutex::new(http::VisuKeys::default()),
            tokens: Mutex::new(auth::Tokens::default()),
            ws: ws::Hub::default(),
            delay_nanos: std::sync::atomic::AtomicU64::new(0),
            requests: Mutex::new((0, std::collections::VecDeque::new())),
            stats,
            message_center: Mutex::new(message_center::MessageCenter::new(&doc)),
        })
    }

    /// The embedded demo house with [`SimConfig::default`] (user `demo`, password `demo`,
    /// 20 s blind travel).
    pub fn demo() -> Self {
        Self::demo_with(SimConfig::default())
    }

    /// The embedded demo house with another configuration.
    pub fn demo_with(config: SimConfig) -> Self {
        // The demo files are compiled in and checked by tests/sim.rs.
        Self::new(DEMO_STRUCTURE, Some(DEMO_VALUES), config)
            .expect("embedded demo house is a valid structure file")
    }

    /// The structure file text served at `/data/LoxAPP3.json`.
    pub fn structure_text(&self) -> String {
        self.structure
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .clone()
    }

    /// The structure file's `lastModified`, served at `/jdev/sps/LoxAPPversion3`.
    pub fn structure_version(&self) -> String {
        self.structure
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .1
            .clone()
    }

    /// Test hook, as if the Miniserver got a new configuration: serves `structure_json` (and
    /// its `lastModified` as the version) from now on. The simulated controls and their states
    /// stay as they are. Errors when the text is not JSON or has no `lastModified` string.
    pub fn replace_structure(&self, structure_json: &str) -> Result<(), SimError> {
        let doc: Value =
            serde_json::from_str(structure_json).map_err(|e| SimError::Json(e.to_string()))?;
        let version = doc
            .get("lastModified")
            .and_then(Value::as_str)
            .ok_or_else(|| SimError::Structure("no lastModified string".into()))?
            .to_string();
        *self.structure.write().unwrap_or_else(|e| e.into_inner()) =
            (structure_json.to_string(), version);
        Ok(())
    }

    /// Fault switch "answer slowly": from now on every HTTP answer of the [`SimServer`] and
    /// every WebSocket command answer (`LL` answers, keepalive) waits `delay` before it is
    /// sent, as a busy or far-away Miniserver would. An HTTP request takes effect at once
    /// (its state change may be pushed before the answer arrives); a WebSocket command is
    /// carried out after the delay. The WebSocket upgrade and pushed events are not delayed.
    /// [`Simulator::handle`] stays immediate. `Duration::ZERO` (the default) switches it
    /// off; delays beyond about 584 years are cut to that.
    pub fn set_delay(&self, delay: Duration) {
        let nanos = u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX);
        self.delay_nanos
            .store(nanos, std::sync::atomic::Ordering::SeqCst);
    }

    /// The current answer delay ([`Simulator::set_delay`]).
    pub fn delay(&self) -> Duration {
        Duration::from_nanos(self.delay_nanos.load(std::sync::atomic::Ordering::SeqCst))
    }

    /// Sleeps for the answer delay, if one is set.
    pub(crate) fn answer_slowly(&self) {
        let delay = self.delay();
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
    }

    /// The request lines this Miniserver received, oldest first, exactly as they came
    /// (`"GET /jdev/sps/io/<uuid>/on"`, percent-encoding kept): HTTP requests, WebSocket
    /// commands (as `"GET /<command>"`) and the plain commands inside `jdev/sys/enc|fenc`
    /// (after decryption). Lets tests assert on what went over the wire. At most
    /// [`REQUEST_LOG_LEN`] lines are kept; [`Simulator::requests_since`] reads from a mark.
    pub fn requests(&self) -> Vec<String> {
        self.requests_since(0)
    }

    /// How many requests this Miniserver received since it started (a mark for
    /// [`Simulator::requests_since`]; it keeps counting when old lines are dropped).
    pub fn request_count(&self) -> usize {
        self.requests.lock().unwrap_or_else(|e| e.into_inner()).0
    }

    /// The request lines received after the first `mark` requests ([`Simulator::request_count`]
    /// taken earlier), as [`Simulator::requests`] shows them; lines already dropped from the
    /// log are missing (at most [`REQUEST_LOG_LEN`] are kept).
    pub fn requests_since(&self, mark: usize) -> Vec<String> {
        let log = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        let (count, lines) = (log.0, &log.1);
        let first_kept = count - lines.len();
        lines
            .iter()
            .skip(mark.saturating_sub(first_kept))
            .cloned()
            .collect()
    }

    /// Notes one request line for [`Simulator::requests`].
    pub(crate) fn record_request(&self, method: &str, url: &str) {
        let mut log = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        log.0 += 1;
        if log.1.len() >= REQUEST_LOG_LEN {
            log.1.pop_front();
        }
        log.1.push_back(format!("{method} {url}"));
    }

    /// The configuration in use.
    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    /// Pure request handler, testable without sockets: `method` (`GET`), `url` (path and
    /// optional query, e.g. `/jdev/sps/io/Deckenlicht/on`), the raw `Authorization` header
    /// and the client's IP (for the lock-out). Never panics. A successful `sps/io` or
    /// `sps/ios` command wakes the WebSocket sessions so they send the resulting changes.
    pub fn handle(
        &self,
        method: &str,
        url: &str,
        authorization: Option<&str>,
        peer: IpAddr,
    ) -> SimResponse {
        if !method.eq_ignore_ascii_case("GET") && !method.eq_ignore_ascii_case("HEAD") {
            self.record_request(method, url);
            return answer::html_error(405, "Method Not Allowed");
        }
        let reply = self.run(answer::Request {
            url,
            transport: answer::Transport::Http,
            peer,
            authorization,
            login: None,
        });
        self.render_http(&reply)
    }

    /// Current numeric value of a control's state, e.g. `state(uuid, "position")` (Jalousie
    /// 0..1) or `state(uuid, "temperatures[1]")`. `control` is a `uuidAction` (also of a
    /// sub-control, `<uuid>/masterValue`) or a unique control name. `None` for unknown
    /// controls or states and for text states (see [`Simulator::state_text`]).
    pub fn state(&self, control: &str, state: &str) -> Option<f64> {
        match self.read(control, state)? {
            Val::Num(n) => Some(n),
            Val::Text(_) => None,
        }
    }

    /// Current value of a text state (`activeMoods`, `color`, `text`, ...), or a number
    /// state formatted with `{}`.
    pub fn state_text(&self, control: &str, state: &str) -> Option<String> {
        match self.read(control, state)? {
            Val::Num(n) => Some(n.to_string()),
            Val::Text(t) => Some(t),
        }
    }

    fn read(&self, control: &str, state: &str) -> Option<Val> {
        let mut house = self.house.lock().unwrap_or_else(|e| e.into_inner());
        let idx = house.find(control)?;
        controls::settle(&mut house.ctls[idx], std::time::Instant::now());
        house.ctls[idx].states.get(state).cloned()
    }
}

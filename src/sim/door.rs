//! The simulator's door: Loxone `Intercom` controls (a Loxone Intercom, `deviceType` 1, and a
//! custom camera, `deviceType` 0) and `IntercomV2` controls, with the cameras behind them and
//! the bell (intercom-alerts.md §1 and §5).
//!
//! - **Cameras**: [`CameraServers`] (started by [`super::SimServer`]) listen on a loopback port
//!   of their own per camera control, as separate devices on the LAN would. A Loxone Intercom
//!   serves `/jpg/image.jpg` (still, its `alertImage`) and `/mjpg/video.mjpg`; a custom camera
//!   `/video.mjpg` (MJPEG only, its `streamUrl`, parts without `Content-Length`); an
//!   IntercomV2 `/mjpg/video.mjpg` (parts with `Content-Length`) at its `address` state. Every
//!   request needs HTTP Basic auth: the intercom's or camera's own user and password (given in
//!   `securedDetails`), the Miniserver user's for an IntercomV2; 401 when wrong. Each picture
//!   shows its own timestamp ([`super::frame`]).
//! - **`securedDetails`** (a row of the command table, `commands.rs`, like the others here):
//!   `jdev/sps/io/{uuid}/securedDetails` answers `videoInfo` (the URLs
//!   above, user, pass) and an empty `audioInfo`, plain or inside `jdev/sys/enc|fenc`; the
//!   value is a JSON string by default ([`DetailsForm`]).
//! - **The bell**: [`Simulator::ring`] (or `GET /sim/door/{uuid-or-name}/ring`) sets `bell` to
//!   1 for [`RING_SECS`] seconds, appends the ring's Miniserver local time `YYYYMMDDHHMMSS` to
//!   `lastBellEvents` (`|`-separated, oldest first, at most [`MAX_BELL_EVENTS`]) and sets
//!   `lastBellTimestamp`; `answer` ends the ring (`bell` 0). `camimage/{uuid}/{timestamp}`
//!   serves the picture of a ring in `lastBellEvents` (404 otherwise) over HTTP and as a
//!   binary-file frame over the WebSocket. Its local time is that of
//!   [`SimConfig::time_zone`](super::SimConfig::time_zone) (the house's `[home] time_zone` in
//!   the demo), as its `miniserverTime` says: a real Miniserver writes bell events on its own
//!   wall clock.
//! - **Fault switches** ([`CameraFault`], also `GET /sim/camera/{uuid-or-name}/fault/{name}`):
//!   a camera that never answers, one that sends 100 MB, one that sends an HTML page, one whose
//!   password was changed on the device but not in Loxone Config.
//!
//! What reached each camera is counted ([`Simulator::camera_requests`]) and every picture sent
//! is noted ([`Simulator::pictures_served`]), so tests judge by what the devices saw.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use base64::prelude::{Engine as _, BASE64_STANDARD};
use log::{debug, info, warn};
use serde_json::json;

use super::answer::{Answer, Call, Ll};
use super::frame::{self, Frame};
use super::house::{Ctl, Kind};
use super::Simulator;

/// How long a ring keeps `bell` at 1 when nobody answers.
pub const RING_SECS: u64 = 10;
/// Rings kept in `lastBellEvents`.
pub const MAX_BELL_EVENTS: usize = 10;
/// Size of the simulated pictures.
const PICTURE: (u16, u16) = (1280, 720);
/// Pictures noted for [`Simulator::pictures_served`].
const SERVED_LOG: usize = 256;
/// Open connections per camera; more are closed at once.
const MAX_CONNECTIONS: usize = 16;
/// Bytes the "huge" camera sends: 100 MB.
pub const HUGE_BYTES: u64 = 100 * 1024 * 1024;
/// Frames an MJPEG stream sends (5 per second) before it ends.
const STREAM_FRAMES: u8 = 50;

/// User and password of the simulated Loxone Intercom's camera (`videoInfo.user`/`pass`).
pub const INTERCOM_CREDENTIALS: (&str, &str) = ("intercom", "door-4711");
/// User and password of the simulated custom camera.
pub const CAMERA_CREDENTIALS: (&str, &str) = ("kamera", "einfahrt-2026");

/// A fault a simulated camera plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CameraFault {
    /// Answers as a camera should.
    #[default]
    None,
    /// Accepts the connection, reads the request and never answers.
    Silent,
    /// Answers 200 `image/jpeg` without a length and sends [`HUGE_BYTES`] bytes.
    Huge,
    /// Answers 200 with an HTML login page.
    Html,
    /// Its password was changed on the device: the credentials Loxone has get 401.
    WrongPassword,
}

impl CameraFault {
    /// Reads a switch word: `none`, `silent`, `huge`, `html`, `wrongpassword`.
    pub fn parse(word: &str) -> Option<CameraFault> {
        Some(match word.to_ascii_lowercase().as_str() {
            "none" | "off" => CameraFault::None,
            "silent" => CameraFault::Silent,
            "huge" => CameraFault::Huge,
            "html" => CameraFault::Html,
            "wrongpassword" | "password" => CameraFault::WrongPassword,
            _ => return None,
        })
    }
}

/// The form of the `securedDetails` answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DetailsForm {
    /// `value` is a JSON string holding the object (as in LoxBuddy's captured demo data).
    #[default]
    String,
    /// `value` is the object itself.
    Object,
    /// Like `String`, but a plain (unencrypted) request gets 400: only `enc`/`fenc` works.
    EncryptedOnly,
}

/// One picture a simulated device sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    /// `uuidAction` of the intercom or camera control.
    pub control: String,
    /// The timestamp the picture shows, `YYYYMMDDHHMMSS`.
    pub stamp: String,
    /// Frame number within a stream (0 for a still or a bell picture).
    pub frame: u8,
    /// What was asked: `/jpg/image.jpg`, `/mjpg/video.mjpg`, `camimage`, ...
    pub path: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CamKind {
    /// A Loxone Intercom (`deviceType` 1 or 2): JPEG still and MJPEG stream.
    Intercom,
    /// A custom camera (`deviceType` 0): an MJPEG stream.
    Custom,
    /// An IntercomV2: MJPEG at its `address`, Miniserver credentials.
    V2,
}

#[derive(Debug)]
struct Cam {
    uuid: String,
    number: u8,
    title: String,
    kind: CamKind,
    addr: Option<SocketAddr>,
    requests: usize,
    fault: CameraFault,
}

/// The door's state inside the [`Simulator`].
#[derive(Debug, Default)]
pub(crate) struct Door {
    cams: Vec<Cam>,
    served: VecDeque<Served>,
    form: DetailsForm,
}

impl Door {
    /// The camera controls of a house: top-level `Intercom` and `IntercomV2` controls.
    pub(crate) fn of(ctls: &[Ctl]) -> Door {
        let cams = ctls
            .iter()
            .filter(|c| !c.uuid.contains('/'))
            .filter_map(|c| {
                let kind = match (&c.kind, c.detail_num("deviceType")) {
                    (Kind::IntercomV2, _) => CamKind::V2,
                    (Kind::Intercom, Some(0.0)) => CamKind::Custom,
                    (Kind::Intercom, _) => CamKind::Intercom,
                    _ => return None,
                };
                Some((c, kind))
            })
            .enumerate()
            .map(|(i, (c, kind))| Cam {
                uuid: c.uuid.clone(),
                number: ((i % 15) + 1) as u8,
                title: ascii_title(&c.name),
                kind,
                addr: None,
                requests: 0,
                fault: CameraFault::None,
            })
            .collect();
        Door {
            cams,
            served: VecDeque::new(),
            form: DetailsForm::default(),
        }
    }

    fn cam(&self, uuid: &str) -> Option<&Cam> {
        self.cams.iter().find(|c| c.uuid.eq_ignore_ascii_case(uuid))
    }

    fn cam_mut(&mut self, uuid: &str) -> Option<&mut Cam> {
        self.cams
            .iter_mut()
            .find(|c| c.uuid.eq_ignore_ascii_case(uuid))
    }

    fn note(&mut self, served: Served) {
        if self.served.len() >= SERVED_LOG {
            self.served.pop_front();
        }
        self.served.push_back(served);
    }
}

/// `Haustür` -> `HAUSTUER`: the caption font has capitals and digits only.
fn ascii_title(name: &str) -> String {
    let mut out = String::new();
    for ch in name.chars() {
        match ch {
            'ä' | 'Ä' => out.push_str("AE"),
            'ö' | 'Ö' => out.push_str("OE"),
            'ü' | 'Ü' => out.push_str("UE"),
            'ß' => out.push_str("SS"),
            c if c.is_ascii_alphanumeric() || c == ' ' || c == '-' => {
                out.push(c.to_ascii_uppercase())
            }
            _ => out.push(' '),
        }
    }
    out
}

impl Simulator {
    /// The simulated Miniserver's local time now as `YYYYMMDDHHMMSS`, on the clock of
    /// [`SimConfig::time_zone`](super::SimConfig::time_zone), as a Miniserver writes bell events.
    fn stamp_now(&self) -> String {
        self.config().time_zone.compact(crate::home::time::now())
    }

    /// `stamp` plus one second (`YYYYMMDDHHMMSS`, local time), for rings within the same
    /// second (or in the repeated hour of autumn, when the wall clock goes back).
    fn next_second(&self, stamp: &str) -> String {
        let time = &self.config().time_zone;
        match time.parse_compact(stamp, None) {
            Some(t) => time.compact(t + jiff::SignedDuration::from_secs(1)),
            None => self.stamp_now(),
        }
    }

    fn door(&self) -> std::sync::MutexGuard<'_, Door> {
        self.door.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Rings the bell of the intercom `control` (a `uuidAction` or a unique control name):
    /// `bell` 1 for [`RING_SECS`], the ring's time appended to `lastBellEvents` (Intercom) and
    /// set as `lastBellTimestamp`. Returns that time (`YYYYMMDDHHMMSS`), or `None` when
    /// `control` is no intercom. Two rings in the same second get consecutive seconds.
    pub fn ring(&self, control: &str) -> Option<String> {
        let now = Instant::now();
        let stamp = {
            let mut house = self.house.lock().unwrap_or_else(|e| e.into_inner());
            let idx = house.find(control)?;
            let c = &mut house.ctls[idx];
            if !matches!(c.kind, Kind::Intercom | Kind::IntercomV2) {
                return None;
            }
            let mut events: Vec<String> = c
                .text("lastBellEvents")
                .split('|')
                .map(str::trim)
                .filter(|s| s.len() == 14)
                .map(str::to_string)
                .collect();
            let mut stamp = self.stamp_now();
            let last = events
                .last()
                .cloned()
                .unwrap_or_else(|| c.text("lastBellTimestamp"));
            if last.len() == 14 && stamp <= last {
                stamp = self.next_second(&last);
            }
            c.set("bell", 1.0);
            c.deadline = Some(now + Duration::from_secs(RING_SECS));
            if c.kind == Kind::Intercom {
                events.push(stamp.clone());
                let skip = events.len().saturating_sub(MAX_BELL_EVENTS);
                c.set_text("lastBellEvents", events[skip..].join("|"));
            }
            if c.states.contains_key("lastBellTimestamp") {
                c.set_text("lastBellTimestamp", stamp.clone());
            }
            info!("sim: the bell of {} rings ({stamp})", c.name);
            stamp
        };
        self.ws.notify();
        Some(stamp)
    }

    /// Sets the fault the camera of `control` (`uuidAction` or unique name) plays from now on;
    /// `false` when `control` has no camera.
    pub fn set_camera_fault(&self, control: &str, fault: CameraFault) -> bool {
        let Some(uuid) = self.uuid_of(control) else {
            return false;
        };
        match self.door().cam_mut(&uuid) {
            Some(c) => {
                info!("sim: camera of {uuid} now plays {fault:?}");
                c.fault = fault;
                true
            }
            None => false,
        }
    }

    /// Chooses the form of `securedDetails` answers ([`DetailsForm`]).
    pub fn set_secured_details_form(&self, form: DetailsForm) {
        self.door().form = form;
    }

    /// Requests that reached the camera of `control` so far: its own HTTP server (any path,
    /// authorised or not) and `camimage` for it.
    pub fn camera_requests(&self, control: &str) -> usize {
        let Some(uuid) = self.uuid_of(control) else {
            return 0;
        };
        self.door().cam(&uuid).map_or(0, |c| c.requests)
    }

    /// The pictures the simulated devices sent, oldest first (the last 256).
    pub fn pictures_served(&self) -> Vec<Served> {
        self.door().served.iter().cloned().collect()
    }

    /// Where the camera of `control` listens (`http://127.0.0.1:port`), once a
    /// [`super::SimServer`] runs.
    pub fn camera_base_url(&self, control: &str) -> Option<String> {
        let uuid = self.uuid_of(control)?;
        let door = self.door();
        door.cam(&uuid)?.addr.map(|a| format!("http://{a}"))
    }

    fn uuid_at(&self, idx: usize) -> Option<String> {
        let house = self.house.lock().unwrap_or_else(|e| e.into_inner());
        house.ctls.get(idx).map(|c| c.uuid.clone())
    }

    fn uuid_of(&self, control: &str) -> Option<String> {
        let house = self.house.lock().unwrap_or_else(|e| e.into_inner());
        house.find(control).map(|i| house.ctls[i].uuid.clone())
    }

    /// The picture of the ring `stamp` of the intercom `target` (`camimage/{uuid}/{stamp}`),
    /// `None` when there is no such ring. Counts as a request to that camera.
    pub(crate) fn bell_picture(&self, target: &str, stamp: &str) -> Option<Vec<u8>> {
        let uuid = self.uuid_of(target)?;
        let known = {
            let mut house = self.house.lock().unwrap_or_else(|e| e.into_inner());
            let idx = house.find(&uuid)?;
            super::controls::settle(&mut house.ctls[idx], Instant::now());
            house.ctls[idx]
                .text("lastBellEvents")
                .split('|')
                .any(|s| s.trim() == stamp)
        };
        let mut door = self.door();
        let cam = door.cam_mut(&uuid)?;
        cam.requests += 1;
        if !known || stamp.len() != 14 || !stamp.bytes().all(|b| b.is_ascii_digit()) {
            debug!("sim: camimage {uuid}/{stamp}: no such ring");
            return None;
        }
        let (number, title) = (cam.number, cam.title.clone());
        door.note(Served {
            control: uuid,
            stamp: stamp.to_string(),
            frame: 0,
            path: "camimage".into(),
        });
        drop(door);
        Some(frame::jpeg(&Frame {
            width: PICTURE.0,
            height: PICTURE.1,
            title: &title,
            stamp,
            camera: number,
            frame: 0,
        }))
    }
}

/// `sps/io/{control}/securedDetails` (Structure File docs, intercom-alerts.md §1): the
/// control's `videoInfo` (the simulated camera's URLs, user and password) and an empty
/// `audioInfo`, as a JSON string or an object ([`DetailsForm`]); 400 in plain when the form
/// is [`DetailsForm::EncryptedOnly`]; 404 for a control without a camera.
pub(crate) fn secured_details(sim: &Simulator, call: &mut Call<'_>) -> Answer {
    let Some(uuid) = call.target.and_then(|i| sim.uuid_at(i)) else {
        return Answer::Error(404, "Not Found");
    };
    let door = sim.door();
    let Some(cam) = door.cam(&uuid) else {
        return Answer::Error(404, "Not Found");
    };
    if door.form == DetailsForm::EncryptedOnly && !call.encrypted {
        info!("sim: securedDetails of {uuid} asked in plain; refused (strict mode)");
        return Answer::Error(400, "Bad Request");
    }
    let base = cam.addr.map_or_else(
        || "http://127.0.0.1:9".to_string(),
        |a| format!("http://{a}"),
    );
    let video = match cam.kind {
        CamKind::Intercom => json!({
            "alertImage": format!("{base}/jpg/image.jpg"),
            "streamUrl": format!("{base}/mjpg/video.mjpg"),
            "user": INTERCOM_CREDENTIALS.0,
            "pass": INTERCOM_CREDENTIALS.1,
        }),
        CamKind::Custom => json!({
            "alertImage": "",
            "streamUrl": format!("{base}/video.mjpg"),
            "user": CAMERA_CREDENTIALS.0,
            "pass": CAMERA_CREDENTIALS.1,
        }),
        // The V2 has no videoInfo of its own (intercom-alerts.md §1): its video is at its
        // `address` with the Miniserver user's credentials.
        CamKind::V2 => json!({}),
    };
    let value = json!({"videoInfo": video, "audioInfo": {}});
    Answer::Ll(match door.form {
        DetailsForm::Object => Ll {
            code: 200,
            value,
            outputs: Vec::new(),
            token: false,
        },
        _ => Ll::ok(value.to_string()),
    })
}

/// `camimage/{control}/{timestamp}` (Structure File docs: the picture of a ring in
/// `lastBellEvents`): the JPEG, over HTTP as `image/jpeg`, over the WebSocket as a binary
/// file; 404 for a ring the intercom does not list.
pub(crate) fn camimage(sim: &Simulator, call: &mut Call<'_>) -> Answer {
    let Some(uuid) = call.target.and_then(|i| sim.uuid_at(i)) else {
        return Answer::Error(404, "Not Found");
    };
    let stamp = call.args.first().cloned().unwrap_or_default();
    match sim.bell_picture(&uuid, &stamp) {
        Some(bytes) => Answer::Data("image/jpeg", bytes),
        None => Answer::Error(404, "Not Found"),
    }
}

/// `sim/door/{control}/ring`: the simulator's doorbell button ([`Simulator::ring`]); answers
/// the ring's time. Not a Loxone command.
pub(crate) fn ring_switch(sim: &Simulator, call: &mut Call<'_>) -> Answer {
    match call
        .target
        .and_then(|i| sim.uuid_at(i))
        .and_then(|u| sim.ring(&u))
    {
        Some(stamp) => Answer::Ll(Ll::ok(stamp)),
        None => Answer::Error(404, "Not Found"),
    }
}

/// `sim/camera/{control}/fault/{fault}`: the simulator's fault switch for a camera
/// ([`CameraFault::parse`] names). Not a Loxone command.
pub(crate) fn fault_switch(sim: &Simulator, call: &mut Call<'_>) -> Answer {
    let name = call.args.first().cloned().unwrap_or_default();
    let uuid = call.target.and_then(|i| sim.uuid_at(i));
    match (uuid, CameraFault::parse(&name)) {
        (Some(u), Some(f)) if sim.set_camera_fault(&u, f) => Answer::Ll(Ll::ok(name)),
        _ => Answer::Error(404, "Not Found"),
    }
}

/// The running camera servers of a simulator; dropping them stops them.
pub struct CameraServers {
    stop: Arc<AtomicBool>,
    addrs: Vec<SocketAddr>,
    threads: Vec<JoinHandle<()>>,
}

impl Drop for CameraServers {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for a in &self.addrs {
            // Wakes the accept loop.
            let _ = TcpStream::connect_timeout(a, Duration::from_millis(200));
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Starts one HTTP server per camera control of `sim` on `ip` (port 0: any free port), tells
/// the simulator where (the `securedDetails` URLs and an IntercomV2's `address` state).
pub(crate) fn start(sim: &Arc<Simulator>, ip: IpAddr) -> std::io::Result<CameraServers> {
    let stop = Arc::new(AtomicBool::new(false));
    let mut addrs = Vec::new();
    let mut threads = Vec::new();
    let uuids: Vec<String> = sim.door().cams.iter().map(|c| c.uuid.clone()).collect();
    for uuid in uuids {
        let listener = TcpListener::bind(SocketAddr::new(ip, 0))?;
        let addr = listener.local_addr()?;
        let kind = {
            let mut door = sim.door();
            let Some(cam) = door.cam_mut(&uuid) else {
                continue;
            };
            cam.addr = Some(addr);
            cam.kind
        };
        if kind == CamKind::V2 {
            let mut house = sim.house.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(i) = house.find(&uuid) {
                house.ctls[i].set_text("address", addr.to_string());
                house.ctls[i].set("deviceState", 1.0);
            }
        }
        info!("sim: camera of {uuid} listening on http://{addr}");
        addrs.push(addr);
        let (sim, stop) = (sim.clone(), stop.clone());
        threads.push(
            std::thread::Builder::new()
                .name("sim-camera".into())
                .spawn(move || accept_loop(listener, &sim, &stop, &uuid))?,
        );
    }
    Ok(CameraServers {
        stop,
        addrs,
        threads,
    })
}

fn accept_loop(listener: TcpListener, sim: &Arc<Simulator>, stop: &Arc<AtomicBool>, uuid: &str) {
    let open = Arc::new(AtomicUsize::new(0));
    for conn in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = conn else { continue };
        if open.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
            debug!("sim: camera {uuid}: too many connections; closed");
            continue;
        }
        open.fetch_add(1, Ordering::SeqCst);
        let (sim, stop, open, cam) = (sim.clone(), stop.clone(), open.clone(), uuid.to_string());
        let spawned = std::thread::Builder::new()
            .name("sim-camera-conn".into())
            .spawn(move || {
                serve(stream, &sim, &stop, &cam);
                open.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            warn!("sim: camera {uuid}: cannot start a connection thread");
        }
    }
}

/// One request on one connection (the connection closes afterwards).
fn serve(mut stream: TcpStream, sim: &Simulator, stop: &AtomicBool, uuid: &str) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(10)));
    let Some((path, authorization)) = read_head(&stream) else {
        return;
    };
    let (fault, kind, number, title) = {
        let mut door = sim.door();
        let Some(cam) = door.cam_mut(uuid) else {
            return;
        };
        cam.requests += 1;
        (cam.fault, cam.kind, cam.number, cam.title.clone())
    };
    debug!("sim: camera {uuid}: GET {path} ({fault:?})");
    let expected = match kind {
        CamKind::Intercom => (
            INTERCOM_CREDENTIALS.0.to_string(),
            INTERCOM_CREDENTIALS.1.to_string(),
        ),
        CamKind::Custom => (
            CAMERA_CREDENTIALS.0.to_string(),
            CAMERA_CREDENTIALS.1.to_string(),
        ),
        CamKind::V2 => (sim.config.user.clone(), sim.config.password.clone()),
    };
    let password = match fault {
        CameraFault::WrongPassword => format!("{}-changed", expected.1),
        _ => expected.1,
    };
    if !basic_matches(authorization.as_deref(), &expected.0, &password) {
        let page = "<html><body><h1>401 Unauthorized</h1></body></html>";
        let _ = write!(
            stream,
            "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"camera\"\r\n\
             Content-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
            page.len()
        );
        return;
    }
    match fault {
        CameraFault::Silent => {
            // Holds the connection without a word until the simulator stops (or 60 s).
            let until = Instant::now() + Duration::from_secs(60);
            while !stop.load(Ordering::SeqCst) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(50));
            }
            return;
        }
        CameraFault::Huge => {
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: image/jpeg\r\nConnection: close\r\n\r\n\xFF\xD8\xFF\xE0",
            );
            let chunk = vec![0x5Au8; 64 * 1024];
            let mut sent = 4u64;
            while sent < HUGE_BYTES && !stop.load(Ordering::SeqCst) {
                if stream.write_all(&chunk).is_err() {
                    break;
                }
                sent += chunk.len() as u64;
            }
            return;
        }
        CameraFault::Html => {
            let page = "<!DOCTYPE html><html><head><title>Login</title></head><body>\
                        <form>User <input name=u> Password <input name=p></form></body></html>";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                page.len()
            );
            return;
        }
        CameraFault::None | CameraFault::WrongPassword => {}
    }
    let still = kind == CamKind::Intercom && path == "/jpg/image.jpg";
    let stream_path = match kind {
        CamKind::Intercom | CamKind::V2 => "/mjpg/video.mjpg",
        CamKind::Custom => "/video.mjpg",
    };
    let picture = |frame_no: u8| {
        let stamp = sim.stamp_now();
        let jpeg = frame::jpeg(&Frame {
            width: PICTURE.0,
            height: PICTURE.1,
            title: &title,
            stamp: &stamp,
            camera: number,
            frame: frame_no,
        });
        sim.door().note(Served {
            control: uuid.to_string(),
            stamp,
            frame: frame_no,
            path: path.clone(),
        });
        jpeg
    };
    if still {
        let jpeg = picture(0);
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: image/jpeg\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            jpeg.len()
        );
        let _ = stream.write_all(&jpeg);
        return;
    }
    if path != stream_path {
        let _ = stream.write_all(
            b"HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found",
        );
        return;
    }
    let _ = stream.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: multipart/x-mixed-replace; boundary=simframe\r\n\
          Cache-Control: no-cache\r\nConnection: close\r\n\r\n",
    );
    for n in 0..STREAM_FRAMES {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let jpeg = picture(n % 16);
        let head = if kind == CamKind::V2 {
            format!(
                "--simframe\r\nContent-Type: image/jpeg\r\nContent-Length: {}\r\n\r\n",
                jpeg.len()
            )
        } else {
            "--simframe\r\nContent-Type: image/jpeg\r\n\r\n".to_string()
        };
        if stream.write_all(head.as_bytes()).is_err()
            || stream.write_all(&jpeg).is_err()
            || stream.write_all(b"\r\n").is_err()
        {
            // The client has what it wanted and closed.
            let _ = stream.shutdown(Shutdown::Both);
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The request line's path and the `Authorization` header (at most 8 KB of head).
fn read_head(stream: &TcpStream) -> Option<(String, Option<String>)> {
    let mut reader = BufReader::new(std::io::Read::take(stream.try_clone().ok()?, 8192));
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_string();
    let mut authorization = None;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 {
            break;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.trim().eq_ignore_ascii_case("authorization") {
                authorization = Some(v.trim().to_string());
            }
        }
    }
    let path = path.split('?').next().unwrap_or("/").to_string();
    Some((path, authorization))
}

fn basic_matches(header: Option<&str>, user: &str, password: &str) -> bool {
    let Some(h) = header else { return false };
    let Some((scheme, b64)) = h.trim().split_once(' ') else {
        return false;
    };
    if !scheme.eq_ignore_ascii_case("basic") {
        return false;
    }
    BASE64_STANDARD
        .decode(b64.trim())
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .is_some_and(|t| t == format!("{user}:{password}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_and_seconds() {
        assert_eq!(ascii_title("Haustür"), "HAUSTUER");
        let vienna = Simulator::demo_with(crate::sim::SimConfig {
            time_zone: crate::home::HouseTime::named("CET-1CEST,M3.5.0,M10.5.0/3").unwrap(),
            ..crate::sim::SimConfig::default()
        });
        assert_eq!(vienna.next_second("20261127235959"), "20261128000000");
        assert_eq!(vienna.stamp_now().len(), 14);
        // The repeated hour of autumn: a second later on the wall clock may be an hour back.
        assert_eq!(vienna.next_second("20261025025959"), "20261025020000");
        assert_eq!(CameraFault::parse("HTML"), Some(CameraFault::Html));
        assert_eq!(CameraFault::parse("x"), None);
        assert!(basic_matches(Some("Basic a2FtZXJhOmV4"), "kamera", "ex"));
        assert!(!basic_matches(Some("Basic a2FtZXJhOmV4"), "kamera", "ey"));
    }
}

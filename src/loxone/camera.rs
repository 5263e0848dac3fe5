//! Fetching a picture from a camera or intercom the Miniserver names, within bounds.
//!
//! Where a camera is comes only from the configured Miniserver: the `videoInfo` of a control's
//! `securedDetails` ([`VideoInfo::parse`]: `alertImage`, `streamUrl`, `user`, `pass`; the value
//! may be a JSON string or an object, per intercom-alerts.md §1) or an IntercomV2's `address`
//! state. `cloudDNS` and `remoteConnect` host placeholders are resolved against the
//! Miniserver's own address ([`resolve_placeholders`]). Nothing a caller types becomes a URL.
//!
//! A [`Fetcher`] GETs one picture with HTTP Basic auth (the camera's own user and password, or
//! the Miniserver user's for an IntercomV2 and for URLs on the Miniserver itself):
//! - one deadline for the whole fetch, waiting for the camera included
//!   ([`FetchLimits::deadline`]);
//! - a byte limit ([`FetchLimits::max_bytes`]), checked on `Content-Length` before reading and
//!   while reading, so a camera that sends 100 MB costs at most that many bytes of memory;
//! - at most one fetch at a time per camera: a second caller waits for the first (within its
//!   own deadline) rather than opening another connection to a small device;
//! - a JPEG answer is the picture; an MJPEG stream (`multipart/x-mixed-replace`) gives its first
//!   frame; anything else (an HTML login page, a PNG, an empty body) is a typed
//!   [`CameraError`] saying what came instead.
//!
//! Errors and log lines name the camera by the caller's key and never carry a URL's user
//! information, query or the credentials ([`CameraError`] holds no URL at all). Pictures are
//! not kept: a fetch returns its bytes and forgets them.

use std::collections::HashSet;
use std::fmt;
use std::io::Read;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::Value as Json;

use super::picture::{self, Picture, PictureError, PictureLimits, Sniffed};

/// Bounds of one fetch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FetchLimits {
    /// The whole fetch: waiting for another fetch from the same camera, connecting, headers
    /// and body (default 8 s).
    pub deadline: Duration,
    /// Largest answer read from a camera, in bytes (default 4 MiB; a 720p JPEG is tens to a
    /// few hundred KB, a 4K frame 1-2 MB). For a stream: everything read before the first
    /// frame is complete.
    pub max_bytes: u64,
}

impl Default for FetchLimits {
    fn default() -> Self {
        FetchLimits {
            deadline: Duration::from_secs(8),
            max_bytes: 4 * 1024 * 1024,
        }
    }
}

/// A user name and password for HTTP Basic auth. `Debug` shows neither.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub user: String,
    pub password: String,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Credentials(<redacted>)")
    }
}

impl Credentials {
    /// `Basic base64(user:password)`, UTF-8 (loxone-protocol.md §3.1).
    fn header(&self) -> String {
        let token = base64::engine::general_purpose::STANDARD
            .encode(format!("{}:{}", self.user, self.password).as_bytes());
        format!("Basic {token}")
    }
}

/// Where one picture is fetched from. Built from the Miniserver's own data only.
#[derive(Clone, PartialEq)]
pub struct CameraSource {
    /// `http(s)://host[:port]/path[?query]`, without user information.
    url: String,
    credentials: Option<Credentials>,
}

impl fmt::Debug for CameraSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CameraSource({})", shown_url(&self.url))
    }
}

impl CameraSource {
    /// A source for `url` (from `securedDetails` or the structure file) with optional
    /// credentials. User information in the URL (`http://user:pass@cam/`) is taken out and
    /// used when no credentials are given. Errors ([`CameraError::BadUrl`]) for anything but
    /// an `http` or `https` URL with a host.
    pub fn new(url: &str, credentials: Option<Credentials>) -> Result<CameraSource, CameraError> {
        let url = url.trim();
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| CameraError::BadUrl("no scheme (http:// or https://)".into()))?;
        let scheme = scheme.to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return Err(CameraError::BadUrl(format!(
                "{scheme}:// is not supported (http or https only)"
            )));
        }
        let (authority, path) = match rest.find(['/', '?', '#']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let (userinfo, host) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        if host.is_empty() || host.contains(char::is_whitespace) {
            return Err(CameraError::BadUrl("no host".into()));
        }
        let path = path.split('#').next().unwrap_or("/");
        let path = if path.starts_with('/') {
            path.to_string()
        } else {
            format!("/{path}")
        };
        let from_url = userinfo.map(|u| {
            let (user, password) = u.split_once(':').unwrap_or((u, ""));
            Credentials {
                user: percent_decode(user),
                password: percent_decode(password),
            }
        });
        Ok(CameraSource {
            url: format!("{scheme}://{host}{path}"),
            credentials: credentials.or(from_url),
        })
    }

    /// `scheme://host[:port]`: which device this is (for "one fetch per camera" keys and for
    /// deciding whether a URL is the Miniserver itself).
    pub fn origin(&self) -> &str {
        let after = self.url.find("://").map_or(0, |i| i + 3);
        let end = self.url[after..]
            .find('/')
            .map_or(self.url.len(), |i| after + i);
        &self.url[..end]
    }

    /// The URL without query (for messages to the owner, e.g. `check`): never the
    /// credentials, never a query that may hold a password.
    pub fn shown(&self) -> String {
        shown_url(&self.url)
    }

    /// Whether credentials will be sent.
    pub fn has_credentials(&self) -> bool {
        self.credentials.is_some()
    }

    /// This source with `credentials` where it has none.
    pub fn or_credentials(mut self, credentials: Option<Credentials>) -> CameraSource {
        if self.credentials.is_none() {
            self.credentials = credentials;
        }
        self
    }
}

/// `scheme://host/path` of `url`, query and user information removed.
fn shown_url(url: &str) -> String {
    let base = url.split(['?', '#']).next().unwrap_or("");
    match (base.find("://"), base.find('@')) {
        (Some(s), Some(at)) if at > s => format!("{}{}", &base[..s + 3], &base[at + 1..]),
        _ => base.to_string(),
    }
}

fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// Replaces the host placeholders Loxone Config allows in a camera URL (intercom-alerts.md
/// §1): `cloudDNS` becomes the Miniserver's host (the port of the URL, if any, is kept);
/// `remoteConnect` becomes the Miniserver's host and port over `https` (the Miniserver forwards
/// the video; HTTPS is mandatory there). `miniserver` is the base URL the server talks to
/// (`http(s)://host[:port]`). Other URLs come back unchanged. Case-insensitive.
pub fn resolve_placeholders(url: &str, miniserver: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let ms_rest = miniserver
        .split_once("://")
        .map_or(miniserver, |(_, r)| r)
        .trim_end_matches('/');
    let ms_authority = ms_rest.split('/').next().unwrap_or("");
    let ms_host = host_of(ms_authority);
    let (authority, path) = match rest.find(['/', '?', '#']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let (userinfo, host_port) = match authority.rsplit_once('@') {
        Some((u, h)) => (format!("{u}@"), h),
        None => (String::new(), authority),
    };
    let host = host_of(host_port);
    let port = &host_port[host.len()..];
    if host.eq_ignore_ascii_case("clouddns") {
        format!("{scheme}://{userinfo}{ms_host}{port}{path}")
    } else if host.eq_ignore_ascii_case("remoteconnect") {
        format!("https://{userinfo}{ms_authority}{path}")
    } else {
        url.to_string()
    }
}

/// The host part of `host[:port]` (an IPv6 literal keeps its brackets).
fn host_of(authority: &str) -> &str {
    if authority.starts_with('[') {
        return authority.find(']').map_or(authority, |i| &authority[..=i]);
    }
    authority.split(':').next().unwrap_or(authority)
}

/// `videoInfo` of an intercom's `securedDetails` (Structure File docs, intercom-alerts.md §1).
#[derive(Clone, Default, PartialEq)]
pub struct VideoInfo {
    /// Still picture URL (also the source of bell pictures on the intercom).
    pub alert_image: Option<String>,
    /// Stream URL: MJPEG, or a JPEG for cameras without a stream.
    pub stream_url: Option<String>,
    /// The camera's own credentials, when set in Loxone Config.
    pub credentials: Option<Credentials>,
}

impl fmt::Debug for VideoInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VideoInfo")
            .field("alert_image", &self.alert_image.as_deref().map(shown_url))
            .field("stream_url", &self.stream_url.as_deref().map(shown_url))
            .field("credentials", &self.credentials.as_ref().map(|_| "<set>"))
            .finish()
    }
}

impl VideoInfo {
    /// Reads the `value` of a `securedDetails` answer: an object, or a JSON string holding
    /// one, with `videoInfo` inside (`{"videoInfo": {"alertImage", "streamUrl", "user",
    /// "pass"}, "audioInfo": {...}}`). Empty strings count as absent. Errors with what was
    /// wrong (never the values).
    pub fn parse(value: &Json) -> Result<VideoInfo, String> {
        let parsed;
        let obj = match value {
            Json::Object(_) => value,
            Json::String(s) => {
                parsed = serde_json::from_str::<Json>(s)
                    .map_err(|e| format!("securedDetails value is a string but not JSON: {e}"))?;
                &parsed
            }
            other => {
                return Err(format!(
                    "securedDetails value is {}, not an object",
                    json_kind(other)
                ))
            }
        };
        let video = obj
            .get("videoInfo")
            .ok_or_else(|| "securedDetails has no videoInfo".to_string())?;
        let text = |k: &str| {
            video
                .get(k)
                .and_then(Json::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let credentials = match (text("user"), video.get("pass").and_then(Json::as_str)) {
            (Some(user), pass) => Some(Credentials {
                user,
                password: pass.unwrap_or("").to_string(),
            }),
            (None, _) => None,
        };
        Ok(VideoInfo {
            alert_image: text("alertImage"),
            stream_url: text("streamUrl"),
            credentials,
        })
    }
}

fn json_kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

/// How a picture was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Obtained {
    /// A still JPEG from the camera.
    Still,
    /// The first frame of the camera's MJPEG stream.
    StreamFrame,
}

impl Obtained {
    /// `"still picture"` or `"first frame of the video stream"`.
    pub fn describe(self) -> &'static str {
        match self {
            Obtained::Still => "still picture",
            Obtained::StreamFrame => "first frame of the video stream",
        }
    }
}

/// A picture as a camera sent it (before scaling).
#[derive(Clone, PartialEq)]
pub struct Fetched {
    /// The JPEG bytes.
    pub jpeg: Vec<u8>,
    pub obtained: Obtained,
    /// Bytes read from the camera in all (a stream's part headers included).
    pub bytes_read: u64,
}

impl fmt::Debug for Fetched {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Fetched({:?}, {} bytes, {} read)",
            self.obtained,
            self.jpeg.len(),
            self.bytes_read
        )
    }
}

/// Why no picture came. Holds no URL and no credentials.
#[derive(Debug, Clone, PartialEq)]
pub enum CameraError {
    /// The URL the Miniserver gave cannot be fetched (not http/https, no host).
    BadUrl(String),
    /// Another fetch from the same camera did not end within this fetch's deadline.
    Busy { waited: Duration },
    /// No connection could be made (refused, unreachable, DNS, TLS).
    Connection(String),
    /// No complete answer within the deadline.
    Timeout { deadline: Duration },
    /// The answer is larger than the byte limit.
    TooLarge { limit: u64 },
    /// 401/403: the camera refused the user and password.
    Unauthorized { status: u16 },
    /// Another HTTP status (404, 500, a redirect, ...).
    Status(u16),
    /// The answer is not a JPEG or MJPEG stream (what it is instead).
    NotAPicture(Sniffed),
    /// The MJPEG stream ended or broke before its first frame was complete.
    NoFrame(String),
    /// The JPEG could not be decoded, scaled or encoded.
    Picture(PictureError),
}

impl fmt::Display for CameraError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CameraError::BadUrl(m) => write!(f, "the camera address is not usable: {m}"),
            CameraError::Busy { waited } => write!(
                f,
                "another picture from this camera is still being fetched (waited {:.1} s)",
                waited.as_secs_f64()
            ),
            CameraError::Connection(m) => write!(f, "the camera cannot be reached: {m}"),
            CameraError::Timeout { deadline } => write!(
                f,
                "the camera sent no complete picture within {:.1} s",
                deadline.as_secs_f64()
            ),
            CameraError::TooLarge { limit } => write!(
                f,
                "the camera sent more than {limit} bytes without a complete picture; stopped reading"
            ),
            CameraError::Unauthorized { status } => write!(
                f,
                "the camera refused the user and password set in Loxone Config (HTTP {status})"
            ),
            CameraError::Status(code) => write!(f, "the camera answered HTTP {code}"),
            CameraError::NotAPicture(s) => {
                write!(f, "the camera sent {}, not a JPEG picture", s.describe())
            }
            CameraError::NoFrame(m) => write!(f, "the camera's video stream gave no frame: {m}"),
            CameraError::Picture(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for CameraError {}

impl From<PictureError> for CameraError {
    fn from(e: PictureError) -> Self {
        match e {
            PictureError::NotJpeg(s) => CameraError::NotAPicture(s),
            other => CameraError::Picture(other),
        }
    }
}

/// Fetches pictures from cameras, at most one at a time per camera (see the module docs).
/// Share one per server.
pub struct Fetcher {
    agent: ureq::Agent,
    limits: FetchLimits,
    /// Keys of cameras with a fetch under way.
    busy: Mutex<HashSet<String>>,
    freed: Condvar,
}

impl fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fetcher")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// Marks a camera busy while alive.
struct Claim<'a> {
    fetcher: &'a Fetcher,
    key: String,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        let mut busy = self.fetcher.busy.lock().unwrap_or_else(|e| e.into_inner());
        busy.remove(&self.key);
        self.fetcher.freed.notify_all();
    }
}

impl Fetcher {
    /// A fetcher with these limits: no proxy from the environment, no redirects followed (a
    /// redirect would take the credentials elsewhere).
    pub fn new(limits: FetchLimits) -> Fetcher {
        let agent = super::agent(None, limits.deadline);
        Fetcher {
            agent,
            limits,
            busy: Mutex::new(HashSet::new()),
            freed: Condvar::new(),
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> FetchLimits {
        self.limits
    }

    /// Fetches one picture from `source` as the camera sends it, `camera` naming the device
    /// for "one at a time" (e.g. the control's UUID). See the module docs for the bounds.
    pub fn fetch(&self, camera: &str, source: &CameraSource) -> Result<Fetched, CameraError> {
        let start = Instant::now();
        let deadline = start + self.limits.deadline;
        let _claim = self.claim(camera, deadline)?;
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(CameraError::Busy {
                waited: start.elapsed(),
            });
        }
        let mut req = self
            .agent
            .get(&source.url)
            .header("Accept", "image/jpeg, multipart/x-mixed-replace, */*;q=0.1");
        if let Some(c) = &source.credentials {
            req = req.header("Authorization", &c.header());
        }
        let resp = req
            .config()
            .timeout_global(Some(remaining))
            .build()
            .call()
            .map_err(|e| self.transport_error(e))?;
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let length = resp
            .headers()
            .get("content-length")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        match status {
            200..=299 => {}
            401 | 403 => return Err(CameraError::Unauthorized { status }),
            s => return Err(CameraError::Status(s)),
        }
        let max = self.limits.max_bytes;
        if length.is_some_and(|n| n > max) {
            return Err(CameraError::TooLarge { limit: max });
        }
        let mut body = resp.into_body();
        let reader = body.as_reader().take(max + 1);
        let mut reader = Bounded {
            inner: reader,
            deadline,
            limit: self.limits.deadline,
            read: 0,
        };
        if let Some(boundary) = multipart_boundary(&content_type) {
            let jpeg = first_part(&mut reader, &boundary, max)?;
            check_jpeg(&jpeg)?;
            return Ok(Fetched {
                jpeg,
                obtained: Obtained::StreamFrame,
                bytes_read: reader.read,
            });
        }
        let mut jpeg = Vec::with_capacity(length.unwrap_or(64 * 1024).min(max) as usize);
        reader
            .read_to_end(&mut jpeg)
            .map_err(|e| self.read_error(e))?;
        if jpeg.len() as u64 > max {
            return Err(CameraError::TooLarge { limit: max });
        }
        check_jpeg(&jpeg)?;
        Ok(Fetched {
            bytes_read: jpeg.len() as u64,
            jpeg,
            obtained: Obtained::Still,
        })
    }

    /// [`Fetcher::fetch`], then [`picture::scale_jpeg`]: the picture as it is handed out.
    pub fn fetch_picture(
        &self,
        camera: &str,
        source: &CameraSource,
        limits: &PictureLimits,
    ) -> Result<(Picture, Fetched), CameraError> {
        let fetched = self.fetch(camera, source)?;
        let pic = picture::scale_jpeg(&fetched.jpeg, limits)?;
        Ok((pic, fetched))
    }

    /// Waits (until `deadline`) for no other fetch from `camera` to run, then claims it.
    fn claim(&self, camera: &str, deadline: Instant) -> Result<Claim<'_>, CameraError> {
        let start = Instant::now();
        let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        while busy.contains(camera) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(CameraError::Busy {
                    waited: start.elapsed(),
                });
            }
            busy = self
                .freed
                .wait_timeout(busy, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        busy.insert(camera.to_string());
        Ok(Claim {
            fetcher: self,
            key: camera.to_string(),
        })
    }

    fn transport_error(&self, e: ureq::Error) -> CameraError {
        match e {
            ureq::Error::Timeout(_) => CameraError::Timeout {
                deadline: self.limits.deadline,
            },
            ureq::Error::HostNotFound => CameraError::Connection("host not found".into()),
            ureq::Error::Io(io) => CameraError::Connection(io.kind().to_string()),
            ureq::Error::ConnectionFailed => CameraError::Connection("connection failed".into()),
            // Other errors (TLS, protocol) in ureq's words; they carry no URL.
            other => CameraError::Connection(other.to_string()),
        }
    }

    fn read_error(&self, e: std::io::Error) -> CameraError {
        read_error(e, self.limits.deadline)
    }
}

fn read_error(e: std::io::Error, deadline: Duration) -> CameraError {
    let timed_out = e.kind() == std::io::ErrorKind::TimedOut
        || e.get_ref()
            .and_then(|x| x.downcast_ref::<ureq::Error>())
            .is_some_and(|x| matches!(x, ureq::Error::Timeout(_)));
    if timed_out {
        CameraError::Timeout { deadline }
    } else {
        CameraError::Connection(format!("reading the answer: {}", e.kind()))
    }
}

/// A body reader that counts bytes and fails once the deadline has passed (ureq checks its
/// own timeout on network reads; this also covers data already buffered).
struct Bounded<R> {
    inner: R,
    deadline: Instant,
    limit: Duration,
    read: u64,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if Instant::now() >= self.deadline {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("deadline of {:?}", self.limit),
            ));
        }
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

/// A JPEG by its first bytes, else what it is.
fn check_jpeg(body: &[u8]) -> Result<(), CameraError> {
    match picture::sniff(body) {
        Sniffed::Jpeg => Ok(()),
        other => Err(CameraError::NotAPicture(other)),
    }
}

/// The `boundary` of a `multipart/x-mixed-replace` (or other `multipart/`) content type,
/// quotes removed; `None` for other types. A multipart type without a boundary gives `""`
/// (the first JPEG in the stream is then found by its markers).
pub fn multipart_boundary(content_type: &str) -> Option<String> {
    let mut parts = content_type.split(';');
    let mime = parts.next()?.trim().to_ascii_lowercase();
    if !mime.starts_with("multipart/") {
        return None;
    }
    let boundary = parts
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("boundary"))
        .map(|(_, v)| v.trim().trim_matches('"').to_string())
        .unwrap_or_default();
    Some(boundary.trim_start_matches("--").to_string())
}

/// Reads the first part of a multipart stream (at most `max` bytes in all): its body, using
/// the part's `Content-Length` when it has one, else everything up to the next boundary. With
/// an empty `boundary`, the bytes from the first `FF D8` to the first `FF D9` after it.
fn first_part<R: Read>(
    reader: &mut Bounded<R>,
    boundary: &str,
    max: u64,
) -> Result<Vec<u8>, CameraError> {
    let deadline = reader.limit;
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut chunk = vec![0u8; 16 * 1024];
    let mut fill = |buf: &mut Vec<u8>| -> Result<bool, CameraError> {
        let n = reader
            .read(&mut chunk)
            .map_err(|e| read_error(e, deadline))?;
        buf.extend_from_slice(&chunk[..n]);
        if buf.len() as u64 > max {
            return Err(CameraError::TooLarge { limit: max });
        }
        Ok(n > 0)
    };
    if boundary.is_empty() {
        loop {
            if let Some(start) = find(&buf, &[0xFF, 0xD8], 0) {
                if let Some(end) = find(&buf, &[0xFF, 0xD9], start + 2) {
                    return Ok(buf[start..end + 2].to_vec());
                }
            }
            if !fill(&mut buf)? {
                return Err(CameraError::NoFrame("the stream ended".into()));
            }
        }
    }
    let marker = format!("--{boundary}");
    // 1. The first boundary line and the part's headers, up to the blank line.
    let (body_start, length) = loop {
        if let Some(b) = find(&buf, marker.as_bytes(), 0) {
            if let Some(h_end) = find(&buf, b"\r\n\r\n", b)
                .map(|i| i + 4)
                .or_else(|| find(&buf, b"\n\n", b).map(|i| i + 2))
            {
                let headers = String::from_utf8_lossy(&buf[b..h_end]).to_string();
                let length = headers.lines().find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.trim()
                        .eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse::<u64>().ok())?
                });
                break (h_end, length);
            }
        }
        if buf.len() > 64 * 1024 && find(&buf, marker.as_bytes(), 0).is_none() {
            return Err(CameraError::NoFrame(
                "no part boundary in the first 64 KB of the stream".into(),
            ));
        }
        if !fill(&mut buf)? {
            return Err(CameraError::NoFrame(
                "the stream ended before a frame".into(),
            ));
        }
    };
    // 2. The part's body.
    match length {
        Some(n) => {
            if n > max {
                return Err(CameraError::TooLarge { limit: max });
            }
            let end = body_start + n as usize;
            while buf.len() < end {
                if !fill(&mut buf)? {
                    return Err(CameraError::NoFrame(
                        "the stream ended inside a frame".into(),
                    ));
                }
            }
            Ok(buf[body_start..end].to_vec())
        }
        None => loop {
            if let Some(next) = find(&buf, marker.as_bytes(), body_start) {
                let mut end = next;
                while end > body_start && matches!(buf[end - 1], b'\r' | b'\n') {
                    end -= 1;
                }
                return Ok(buf[body_start..end].to_vec());
            }
            if !fill(&mut buf)? {
                // A stream that ends after one frame: the rest is the frame.
                return Ok(buf[body_start..].to_vec());
            }
        },
    }
}

/// Position of `needle` in `hay` at or after `from`.
fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if from >= hay.len() || needle.is_empty() {
        return None;
    }
    hay[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|i| i + from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn video_info_reads_a_string_or_an_object() {
        let obj = serde_json::json!({"videoInfo": {"alertImage": "http://10.0.0.5/jpg/image.jpg",
            "streamUrl": "http://10.0.0.5/mjpg/video.mjpg", "user": "cam", "pass": "pw"},
            "audioInfo": {"host": "x"}});
        let a = VideoInfo::parse(&obj).unwrap();
        let b = VideoInfo::parse(&Json::String(obj.to_string())).unwrap();
        assert_eq!(a, b);
        assert_eq!(
            a.alert_image.as_deref(),
            Some("http://10.0.0.5/jpg/image.jpg")
        );
        assert_eq!(a.credentials.as_ref().map(|c| c.user.as_str()), Some("cam"));
        assert!(!format!("{a:?}").contains("pw"));
        let empty =
            VideoInfo::parse(&serde_json::json!({"videoInfo": {"alertImage": "", "user": ""}}))
                .unwrap();
        assert_eq!(empty, VideoInfo::default());
        assert!(VideoInfo::parse(&Json::String("nope".into())).is_err());
        assert!(VideoInfo::parse(&serde_json::json!({"audioInfo": {}})).is_err());
        assert!(VideoInfo::parse(&Json::Null).is_err());
    }

    #[test]
    fn placeholders_become_the_miniserver() {
        let ms = "http://192.168.1.77:8080";
        assert_eq!(
            resolve_placeholders("http://cloudDNS/snap.jpg", ms),
            "http://192.168.1.77/snap.jpg"
        );
        assert_eq!(
            resolve_placeholders("http://clouddns:81/snap.jpg", ms),
            "http://192.168.1.77:81/snap.jpg"
        );
        assert_eq!(
            resolve_placeholders("http://remoteConnect/proxy/cam.jpg", ms),
            "https://192.168.1.77:8080/proxy/cam.jpg"
        );
        assert_eq!(
            resolve_placeholders("http://u:p@remoteconnect/x", ms),
            "https://u:p@192.168.1.77:8080/x"
        );
        assert_eq!(
            resolve_placeholders("http://10.0.0.9/x", ms),
            "http://10.0.0.9/x"
        );
    }

    #[test]
    fn sources_keep_credentials_out_of_sight() {
        let s =
            CameraSource::new("http://admin:s3cret@10.0.0.9:81/snap.jpg?pwd=s3cret", None).unwrap();
        assert!(s.has_credentials());
        assert_eq!(s.shown(), "http://10.0.0.9:81/snap.jpg");
        assert_eq!(s.origin(), "http://10.0.0.9:81");
        assert!(!format!("{s:?}").contains("s3cret"));
        assert!(CameraSource::new("ftp://x/y", None).is_err());
        assert!(CameraSource::new("/relative", None).is_err());
        assert!(CameraSource::new("http:///x", None).is_err());
        let bare = CameraSource::new("http://cam", None).unwrap();
        assert_eq!(bare.shown(), "http://cam/");
    }

    #[test]
    fn boundaries_are_read_from_the_content_type() {
        assert_eq!(
            multipart_boundary("multipart/x-mixed-replace; boundary=--myboundary").as_deref(),
            Some("myboundary")
        );
        assert_eq!(
            multipart_boundary("multipart/x-mixed-replace;boundary=\"frame\"").as_deref(),
            Some("frame")
        );
        assert_eq!(
            multipart_boundary("multipart/x-mixed-replace").as_deref(),
            Some("")
        );
        assert_eq!(multipart_boundary("image/jpeg"), None);
    }

    fn bounded(data: &[u8]) -> Bounded<&[u8]> {
        Bounded {
            inner: data,
            deadline: Instant::now() + Duration::from_secs(5),
            limit: Duration::from_secs(5),
            read: 0,
        }
    }

    #[test]
    fn the_first_part_of_a_stream_is_found_with_or_without_a_length() {
        let frame = b"\xFF\xD8\xFF\xE0frame-one\xFF\xD9";
        let mut with_len = Vec::new();
        with_len
            .extend_from_slice(b"--b\r\nContent-Type: image/jpeg\r\nContent-Length: 15\r\n\r\n");
        with_len.extend_from_slice(frame);
        with_len.extend_from_slice(b"\r\n--b\r\nContent-Type: image/jpeg\r\n\r\nsecond");
        assert_eq!(
            first_part(&mut bounded(&with_len), "b", 1000).unwrap(),
            frame
        );
        let mut without = Vec::new();
        without.extend_from_slice(b"--b\r\nContent-Type: image/jpeg\r\n\r\n");
        without.extend_from_slice(frame);
        without.extend_from_slice(b"\r\n--b\r\n");
        assert_eq!(
            first_part(&mut bounded(&without), "b", 1000).unwrap(),
            frame
        );
        let mut bare = b"junk".to_vec();
        bare.extend_from_slice(frame);
        assert_eq!(first_part(&mut bounded(&bare), "", 1000).unwrap(), frame);
        assert!(matches!(
            first_part(&mut bounded(&with_len), "b", 20),
            Err(CameraError::TooLarge { limit: 20 })
        ));
        assert!(matches!(
            first_part(
                &mut bounded(b"--b\r\nContent-Length: 99\r\n\r\nabc"),
                "b",
                1000
            ),
            Err(CameraError::NoFrame(_))
        ));
    }
}

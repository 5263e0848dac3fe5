//! The simulator's HTTP surface: routing, Basic authentication with the Miniserver's lock-out,
//! and the byte shapes of its answers (the `LL` envelope and the small HTML error pages).
//!
//! Everything here is a pure function of the request and the simulator's state, so tests call
//! [`Simulator::handle`](super::Simulator::handle) without a socket; `server.rs` only moves
//! bytes. Shapes follow loxone-protocol.md §2 and the real answers in
//! `shared/fixtures/loxapp3/captures/answers.json`.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::IpAddr;
use std::time::Instant;

use base64::prelude::{Engine as _, BASE64_STANDARD};
use log::{debug, info, warn};

use super::controls::{self, CmdError, Ctx};
use super::house::{House, Val};
use super::{CodeKey, SimResponse, Simulator, VisuHash};

/// Firmware version the simulator reports in `/jdev/cfg/api(Key)` (the 14.5 capture's).
pub const FIRMWARE_VERSION: &str = "14.5.12.7";

const JSON: &str = "application/json";
const HTML: &str = "text/html";

/// Failed-login bookkeeping per client IP (loxone-protocol.md §2.7: "IP ... temporarily
/// blocked, too many failed login attempts").
#[derive(Debug, Default)]
pub(crate) struct Logins {
    by_ip: HashMap<IpAddr, Login>,
}

#[derive(Debug, Default)]
struct Login {
    failures: u32,
    blocked_until: Option<Instant>,
}

/// What the auth gate decided.
enum Gate {
    Pass,
    Deny(SimResponse),
}

/// The small HTML error page of a real Miniserver (captured for 401 and 403; 400, 404 and
/// 405 use the same shape, *inferred*).
pub(crate) fn html_error(status: u16, detail: &str) -> SimResponse {
    SimResponse {
        status,
        content_type: HTML,
        body: format!(
            "<html><head><title>error</title></head><body><errorcode>{status}</errorcode> \
             <errordetail>{detail}</errordetail></body></html>"
        ),
    }
}

/// Escapes `s` as a JSON string literal (with quotes).
fn js(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// Formats a number the way `sps/io` answers do: `"75.000"`, or `"1"` for digital values.
fn fmt_num(v: f64, digital: bool) -> String {
    if digital {
        format!("{}", v.round() as i64)
    } else {
        format!("{v:.3}")
    }
}

fn fmt_val(v: &Val, digital: bool) -> String {
    match v {
        Val::Num(n) => fmt_num(*n, digital),
        Val::Text(t) => t.clone(),
    }
}

impl Simulator {
    fn code_key(&self) -> &'static str {
        match self.config.code_key {
            CodeKey::Code => "Code",
            CodeKey::LowerCode => "code",
        }
    }

    /// `{"LL": { "control": "...", "value": "...", "Code": "200"}}`, byte for byte like the
    /// captures (space after `{`, value always a string), plus optional extra members.
    fn envelope(&self, control: &str, value: &str, code: u16, extra: &str) -> String {
        format!(
            "{{\"LL\": {{ \"control\": {}, \"value\": {}, \"{}\": \"{code}\"{extra}}}}}",
            js(control),
            js(value),
            self.code_key()
        )
    }

    pub(crate) fn ok(&self, control: &str, value: &str) -> SimResponse {
        SimResponse {
            status: 200,
            content_type: JSON,
            body: self.envelope(control, value, 200, ""),
        }
    }

    /// A 400/404: HTTP status with the HTML page, or HTTP 200 with the code in the envelope
    /// when `SimConfig::not_found_in_envelope` is set (§2.7 leaves both open).
    pub(crate) fn error(&self, control: &str, status: u16, detail: &str) -> SimResponse {
        if self.config.not_found_in_envelope {
            SimResponse {
                status: 200,
                content_type: JSON,
                body: self.envelope(control, "", status, ""),
            }
        } else {
            html_error(status, detail)
        }
    }

    /// The request handler behind [`Simulator::handle`](super::Simulator::handle).
    pub(crate) fn route(
        &self,
        method: &str,
        url: &str,
        authorization: Option<&str>,
        peer: IpAddr,
    ) -> SimResponse {
        self.route_full(method, url, authorization, peer, false)
    }

    /// [`Simulator::route`] for a request that may have come through `jdev/sys/enc|fenc`
    /// (`encrypted`), see `auth.rs`.
    pub(crate) fn route_full(
        &self,
        method: &str,
        url: &str,
        authorization: Option<&str>,
        peer: IpAddr,
        encrypted: bool,
    ) -> SimResponse {
        self.record_request(method, url);
        let path = url.split(['?', '#']).next().unwrap_or("");
        let query = url
            .split_once('?')
            .map_or("", |(_, q)| q.split('#').next().unwrap_or(""));
        let raw: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let lower: Vec<String> = raw.iter().take(3).map(|s| s.to_lowercase()).collect();
        let lower: Vec<&str> = lower.iter().map(String::as_str).collect();
        if !method.eq_ignore_ascii_case("GET") && !method.eq_ignore_ascii_case("HEAD") {
            return html_error(405, "Method Not Allowed");
        }
        // §2.2: reachability probes need no authentication.
        match (lower.as_slice(), raw.len()) {
            (["jdev", "cfg", "api"], 3) => return self.ok("dev/cfg/api", &self.api_value(false)),
            (["jdev", "cfg", "apikey"], 3) => {
                return self.ok("dev/cfg/apiKey", &self.api_value(true))
            }
            _ => {}
        }
        // Token auth and encryption (auth.rs) check their own secrets.
        if let Some(resp) = self.route_token(&lower, &raw, query, authorization, peer, encrypted) {
            return resp;
        }
        if let Gate::Deny(resp) = self.authenticate(authorization, query, peer) {
            return resp;
        }
        match (lower.as_slice(), raw.len()) {
            (["data", "loxapp3.json"], 2) => SimResponse {
                status: 200,
                content_type: JSON,
                body: self.structure_text(),
            },
            (["jdev", "sps", "loxappversion3"], 3) => {
                self.ok("dev/sps/LoxAPPversion3", &self.structure_version())
            }
            (["jdev", "sps", "io"], 5) if raw[4].eq_ignore_ascii_case("securedDetails") => {
                self.secured_details(raw[3], encrypted)
            }
            (["jdev", "sps", "io"], n) if n > 3 => self.io(&raw[3..], false),
            (["sim", ..], _) => self.sim_switch(&raw),
            (["jdev", "sys", "getvisusalt"], 4) => self.visu_salt(&raw),
            (["jdev", "sps", "ios"], n) if n > 4 => {
                if self.visu_hash_matches(raw[3]) {
                    self.io(&raw[4..], true)
                } else {
                    info!("sim: secured command with a wrong visualisation password");
                    let control = format!("dev/sps/ios/{}/{}", raw[3], raw[4..].join("/"));
                    self.coded(&control, 500)
                }
            }
            _ => {
                debug!("sim: unknown path {path}");
                self.error(&http_control(&raw), 404, "Not Found")
            }
        }
    }

    /// The single-quoted pseudo-JSON of `/jdev/cfg/api` and `/jdev/cfg/apiKey` (§2.2).
    fn api_value(&self, with_key: bool) -> String {
        let snr = colon_serial(&self.serial);
        if with_key {
            let key: String = format!("{}SIMKEY", self.serial)
                .bytes()
                .map(|b| format!("{b:02X}"))
                .collect();
            format!(
                "{{'snr': '{snr}', 'version':'{FIRMWARE_VERSION}', 'key':'{key}', \
                 'isInTrust':false, 'local':true,'address':'{}','certTLD':'com', 'httpsStatus':0}}",
                self.address
            )
        } else {
            format!(
                "{{'snr': '{snr}', 'version':'{FIRMWARE_VERSION}', 'hasEventSlots':true, \
                 'isInTrust':false, 'local':true}}"
            )
        }
    }

    /// HTTP Basic auth (§3.1, credentials UTF-8) or a token (`?autht=...&user=...`, §3.3, see
    /// `auth.rs`) with the lock-out of §2.7: after `max_failed_logins` wrong credentials or
    /// token hashes from one IP, that IP gets 403 with `<remaining>` seconds for `lockout`, even
    /// with the right credentials. A request with neither gets 401 but does not count as a
    /// failed login (*inferred*: it is not a login attempt). A success resets the count.
    fn authenticate(&self, authorization: Option<&str>, query: &str, peer: IpAddr) -> Gate {
        if let Some(resp) = self.blocked(peer) {
            return Gate::Deny(resp);
        }
        let verdict = match self.autht_valid(query) {
            Some(v) => Some(v),
            None => authorization.map(|h| self.credentials_match(h)),
        };
        match verdict {
            None => Gate::Deny(html_error(401, "Unauthorized")),
            Some(ok) => {
                self.login_result(peer, ok);
                if ok {
                    Gate::Pass
                } else {
                    Gate::Deny(html_error(401, "Unauthorized"))
                }
            }
        }
    }

    /// [`Simulator::authenticate`] for other parts of the simulator (binary answers): the
    /// refusal to send, if any.
    pub(crate) fn authenticate_request(
        &self,
        authorization: Option<&str>,
        query: &str,
        peer: IpAddr,
    ) -> Result<(), SimResponse> {
        match self.authenticate(authorization, query, peer) {
            Gate::Pass => Ok(()),
            Gate::Deny(resp) => Err(resp),
        }
    }

    /// The 403 "temporarily blocked" answer while `peer` is locked out.
    pub(crate) fn blocked(&self, peer: IpAddr) -> Option<SimResponse> {
        let now = Instant::now();
        let mut logins = self.logins.lock().unwrap_or_else(|e| e.into_inner());
        let entry = logins.by_ip.entry(peer).or_default();
        if let Some(until) = entry.blocked_until {
            if until > now {
                let remaining = until.duration_since(now).as_secs_f64().ceil() as u64;
                return Some(SimResponse {
                    status: 403,
                    content_type: HTML,
                    body: format!(
                        "<html><head><title>error</title></head><body><errorcode>403</errorcode> \
                         <errordetail><errortext>Forbidden</errortext> <description>IP {peer} \
                         temporarily blocked, too many failed login attempts;</description> \
                         <remaining>{remaining}</remaining></errordetail></body></html>"
                    ),
                });
            }
            *entry = Login::default();
        }
        None
    }

    /// Books a login attempt of `peer`: success resets the count, a failure counts toward the
    /// lock-out.
    pub(crate) fn login_result(&self, peer: IpAddr, ok: bool) {
        let mut logins = self.logins.lock().unwrap_or_else(|e| e.into_inner());
        let entry = logins.by_ip.entry(peer).or_default();
        if ok {
            *entry = Login::default();
            return;
        }
        entry.failures += 1;
        if entry.failures >= self.config.max_failed_logins {
            warn!(
                "sim: {peer} blocked for {:?} after {} failed logins",
                self.config.lockout, entry.failures
            );
            entry.blocked_until = Some(Instant::now() + self.config.lockout);
        } else {
            info!("sim: failed login from {peer} ({})", entry.failures);
        }
    }

    fn credentials_match(&self, header: &str) -> bool {
        let mut parts = header.trim().splitn(2, ' ');
        let scheme = parts.next().unwrap_or("");
        let Some(b64) = parts.next() else {
            return false;
        };
        if !scheme.eq_ignore_ascii_case("basic") {
            return false;
        }
        let Ok(bytes) = BASE64_STANDARD.decode(b64.trim()) else {
            return false;
        };
        let Ok(text) = String::from_utf8(bytes) else {
            return false;
        };
        match text.split_once(':') {
            Some((user, pass)) => user == self.config.user && pass == self.config.password,
            None => false,
        }
    }

    /// HTTP 200 with an error `code` in the `LL` envelope (`value` empty).
    fn coded(&self, control: &str, code: u16) -> SimResponse {
        SimResponse {
            status: 200,
            content_type: JSON,
            body: self.envelope(control, "", code, ""),
        }
    }

    /// `jdev/sys/getvisusalt/{user}` (§2.4, §2.6): a fresh one-time key (hex of hex text, like
    /// getkey2's) and salt, in the getkey2 capture's shape (`value` object, lowercase `code`).
    /// Unknown users get 404 (*inferred*).
    fn visu_salt(&self, raw: &[&str]) -> SimResponse {
        let control = http_control(raw);
        if percent_decode(raw[3]).as_deref() != Some(self.config.user.as_str()) {
            return self.error(&control, 404, "Not Found");
        }
        let key_text = random_hex(20);
        let key: String = key_text.bytes().map(|b| format!("{b:02x}")).collect();
        let salt = random_hex(16);
        let alg = match self.config.visu_hash {
            VisuHash::Sha1 => "SHA1",
            VisuHash::Sha256 => "SHA256",
        };
        let mut keys = self.visu_keys.lock().unwrap_or_else(|e| e.into_inner());
        keys.issue(key.clone(), salt.clone());
        SimResponse {
            status: 200,
            content_type: JSON,
            body: format!(
                "{{\"LL\":{{\"control\":{},\"code\":200,\"value\":{{\"key\":\"{key}\",\"salt\":\"{salt}\",\"hashAlg\":\"{alg}\"}}}}}}",
                js(&control)
            ),
        }
    }

    /// Whether `hash` is the visualisation password hashed with one of the outstanding keys
    /// (§2.4: `HMAC-hashAlg(key, uppercase hex(hashAlg("{visuPw}:{salt}")))`); the key is used
    /// up either way, so a hash cannot be replayed and a wrong guess costs a new key
    /// (*inferred*: the documents call the key one-time but do not say more).
    fn visu_hash_matches(&self, hash: &str) -> bool {
        let mut keys = self.visu_keys.lock().unwrap_or_else(|e| e.into_inner());
        let pw = &self.config.visu_password;
        let alg = self.config.visu_hash;
        let found = keys.outstanding.iter().position(|(key, salt)| {
            expected_visu_hash(alg, pw, key, salt).eq_ignore_ascii_case(hash)
        });
        match found {
            Some(i) => {
                keys.outstanding.remove(i);
                true
            }
            None => {
                // A wrong password uses up the oldest key (*inferred*).
                if !keys.outstanding.is_empty() {
                    keys.outstanding.remove(0);
                }
                false
            }
        }
    }

    /// `jdev/sps/io/{target}[/{command...}]` (§2.4, §2.5); `secured_ok` when it came through
    /// `sps/ios` with the right visualisation password. A command (not a read) to a secured
    /// control without it is refused with code 403 in the envelope (*inferred*: the documents
    /// only say such controls need `ios`; users report plain commands do nothing).
    fn io(&self, raw: &[&str], secured_ok: bool) -> SimResponse {
        let Some(seg) = raw
            .iter()
            .map(|s| percent_decode(s))
            .collect::<Option<Vec<String>>>()
        else {
            let control = format!("dev/sps/io/{}", raw.join("/"));
            return self.error(&control, 400, "Bad Request");
        };
        let control = format!("dev/sps/io/{}", seg.join("/"));
        let now = Instant::now();
        let mut house = self.house.lock().unwrap_or_else(|e| e.into_inner());
        let Some((idx, used)) = resolve(&house, &seg) else {
            debug!("sim: no control {}", seg[0]);
            return self.error(&control, 404, "Not Found");
        };
        let cmd = &seg[used..];
        controls::settle(&mut house.ctls[idx], now);
        let first = cmd.first().map(|w| w.to_lowercase());
        match first.as_deref() {
            None | Some("state") if cmd.len() <= 1 => {
                let (v, digital) = controls::primary(&house.ctls[idx]);
                self.ok(&control, &fmt_val(&v, digital))
            }
            Some("all") if cmd.len() == 1 => {
                let c = &house.ctls[idx];
                let (v, digital) = controls::primary(c);
                let mut extra = String::new();
                for (i, name) in c.state_names.iter().enumerate() {
                    let value = match c.states.get(name) {
                        Some(Val::Text(t)) => js(t),
                        Some(Val::Num(n)) => fmt_num(*n, controls::is_digital_state(name)),
                        None => "0".into(),
                    };
                    let _ = write!(
                        extra,
                        ", \"output{i}\": {{\"name\": {}, \"nr\": {}, \"value\": {value}}}",
                        js(name),
                        i + 1
                    );
                }
                SimResponse {
                    status: 200,
                    content_type: JSON,
                    body: self.envelope(&control, &fmt_val(&v, digital), 200, &extra),
                }
            }
            _ if house.ctls[idx].secured && !secured_ok => {
                info!(
                    "sim: {control} refused: {} is secured (use sps/ios)",
                    house.ctls[idx].name
                );
                self.coded(&control, 403)
            }
            _ => {
                let ctx = Ctx {
                    now,
                    travel: self.config.blind_travel,
                };
                match controls::command(&mut house, idx, cmd, &ctx) {
                    Ok(answer) => {
                        let value = answer.unwrap_or_else(|| {
                            let (v, digital) = controls::primary(&house.ctls[idx]);
                            fmt_val(&v, digital)
                        });
                        debug!("sim: {control} -> {value}");
                        self.ok(&control, &value)
                    }
                    Err(CmdError::NotFound) => {
                        debug!("sim: {control}: unknown command");
                        self.error(&control, 404, "Not Found")
                    }
                    Err(CmdError::BadRequest(why)) => {
                        debug!("sim: {control}: {why}");
                        self.error(&control, 400, "Bad Request")
                    }
                }
            }
        }
    }
}

/// Finds the target of `sps/io`: the longest run of leading segments that is a known
/// `uuidAction` (sub-controls carry suffixes such as `<uuid>/masterValue`), else the exact
/// name of a top-level control in the first segment. A name shared by several controls is
/// not resolved (404; use the UUID) (*inferred*). Returns the index and segments consumed.
fn resolve(house: &House, seg: &[String]) -> Option<(usize, usize)> {
    for k in (1..=seg.len().min(4)).rev() {
        if let Some(idx) = house.index_of_uuid(&seg[..k].join("/")) {
            return Some((idx, k));
        }
    }
    match house.indices_of_name(&seg[0]) {
        [one] => Some((*one, 1)),
        [] => None,
        many => {
            warn!(
                "sim: name {:?} is ambiguous ({} controls)",
                seg[0],
                many.len()
            );
            None
        }
    }
}

/// Outstanding one-time `getvisusalt` keys (hex key, salt), oldest first; at most
/// [`VisuKeys::MAX`] are kept.
#[derive(Debug, Default)]
pub(crate) struct VisuKeys {
    outstanding: Vec<(String, String)>,
}

impl VisuKeys {
    const MAX: usize = 16;

    fn issue(&mut self, key: String, salt: String) {
        if self.outstanding.len() >= Self::MAX {
            self.outstanding.remove(0);
        }
        self.outstanding.push((key, salt));
    }
}

/// The simulator's own reading of the secured-command hash (§2.4, §3.2), written apart from
/// `crate::loxone::secured` so the client is checked against an independent implementation.
fn expected_visu_hash(alg: VisuHash, pw: &str, key_hex: &str, salt: &str) -> String {
    use hmac::{Hmac, Mac};
    use sha2::Digest;
    let Ok(key) = hex::decode(key_hex) else {
        return String::new();
    };
    let text = format!("{pw}:{salt}");
    match alg {
        VisuHash::Sha1 => {
            let pw_hash = hex::encode_upper(sha1::Sha1::digest(text.as_bytes()));
            let Ok(mut mac) = Hmac::<sha1::Sha1>::new_from_slice(&key) else {
                return String::new();
            };
            mac.update(pw_hash.as_bytes());
            hex::encode(mac.finalize().into_bytes())
        }
        VisuHash::Sha256 => {
            let pw_hash = hex::encode_upper(sha2::Sha256::digest(text.as_bytes()));
            let Ok(mut mac) = Hmac::<sha2::Sha256>::new_from_slice(&key) else {
                return String::new();
            };
            mac.update(pw_hash.as_bytes());
            hex::encode(mac.finalize().into_bytes())
        }
    }
}

/// `n` random bytes as lowercase hex (OS randomness; a fixed pattern if it is unavailable,
/// which only makes the simulator's keys predictable).
fn random_hex(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    if getrandom::fill(&mut bytes).is_err() {
        bytes.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
    }
    hex::encode(bytes)
}

/// `504F94D0E5A1` -> `50:4F:94:D0:E5:A1` (the `snr` form of §2.2).
fn colon_serial(serial: &str) -> String {
    let chars: Vec<char> = serial.chars().collect();
    chars
        .chunks(2)
        .map(|c| c.iter().collect::<String>())
        .collect::<Vec<_>>()
        .join(":")
}

/// The `control` an HTTP answer echoes: the request path as sent, `jdev/...` shown as `dev/...`
/// (loxone-protocol.md §2.1: "the echoed control in an HTTP answer starts with `dev/` even for
/// `jdev/` requests"). Over the WebSocket the session echoes the command as sent instead.
pub(crate) fn http_control(raw: &[&str]) -> String {
    let path = raw.join("/");
    match path.strip_prefix('j') {
        Some(rest) if rest.starts_with("dev/") => rest.to_string(),
        _ => path,
    }
}

/// Decodes `%XX` escapes (UTF-8); `None` for a broken escape or invalid UTF-8. `+` stays `+`
/// (this is a path, not a form).
pub(crate) fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_percent_escapes() {
        assert_eq!(percent_decode("K%C3%BCche").as_deref(), Some("Küche"));
        assert_eq!(percent_decode("a+b%20c").as_deref(), Some("a+b c"));
        assert_eq!(percent_decode("%"), None);
        assert_eq!(percent_decode("%zz"), None);
        assert_eq!(percent_decode("%ff"), None);
        assert_eq!(percent_decode("%C3%"), None);
        assert_eq!(percent_decode("%+f"), None);
    }

    #[test]
    fn formats_serial_and_numbers() {
        assert_eq!(colon_serial("504F94D0E5A1"), "50:4F:94:D0:E5:A1");
        assert_eq!(fmt_num(75.0, false), "75.000");
        assert_eq!(fmt_num(1.0, true), "1");
        assert_eq!(js("a\"b"), "\"a\\\"b\"");
    }

    #[test]
    fn the_request_log_reads_from_a_mark_across_dropped_lines() {
        let sim = Simulator::demo();
        let peer = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
        sim.handle("GET", "/jdev/cfg/api", None, peer);
        let mark = sim.request_count();
        assert_eq!(mark, 1);
        // More than the log keeps: the oldest lines go, the count and the mark stay true.
        for i in 0..super::super::REQUEST_LOG_LEN + 10 {
            sim.handle("GET", &format!("/jdev/cfg/api?n={i}"), None, peer);
        }
        assert_eq!(sim.request_count(), super::super::REQUEST_LOG_LEN + 11);
        let since = sim.requests_since(mark);
        assert_eq!(
            since.len(),
            super::super::REQUEST_LOG_LEN,
            "only the kept lines"
        );
        assert_eq!(
            since.last().map(String::as_str),
            Some(format!("GET /jdev/cfg/api?n={}", super::super::REQUEST_LOG_LEN + 9).as_str())
        );
        let late = sim.request_count() - 2;
        assert_eq!(sim.requests_since(late).len(), 2);
        assert!(sim.requests_since(sim.request_count()).is_empty());
    }
}

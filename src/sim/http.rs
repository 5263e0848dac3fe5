//! The simulator's login gate and the handlers of `sps/io`: HTTP Basic authentication (and
//! `?autht=` tokens) with the Miniserver's lock-out, the `cfg/api` value, reading and
//! commanding controls (`sps/io`, `sps/ios` with the visualisation password, `getvisusalt`,
//! `checkuservisupwd`), and the resolution of a control target (UUID, sub-control, name).
//!
//! Everything here is a pure function of the request and the simulator's state, so tests call
//! [`Simulator::handle`](super::Simulator::handle) without a socket; the command table
//! (`commands.rs`) routes to these handlers and `answer.rs` writes their answers. Shapes follow
//! loxone-protocol.md §2 and the real answers in `shared/fixtures/loxapp3/captures/answers.json`.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Instant;

use base64::prelude::{Engine as _, BASE64_STANDARD};
use log::{debug, info, warn};

use super::answer::{html_error, Answer, Call, Ll, Output, Transport};
use super::controls::{self, CmdError, Ctx};
use super::house::{House, Val};
use super::{SimResponse, Simulator, VisuHash};

/// Firmware version the simulator reports in `/jdev/cfg/api(Key)` (the 14.5 capture's).
pub const FIRMWARE_VERSION: &str = "14.5.12.7";

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
    /// The single-quoted pseudo-JSON of `/jdev/cfg/api` and `/jdev/cfg/apiKey` (§2.2).
    pub(crate) fn api_value(&self, with_key: bool) -> String {
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
    /// `Err` holds the page to answer.
    pub(crate) fn authenticate(
        &self,
        authorization: Option<&str>,
        query: &str,
        peer: IpAddr,
    ) -> Result<(), SimResponse> {
        if let Some(resp) = self.blocked(peer) {
            return Err(resp);
        }
        let verdict = match self.autht_valid(query) {
            Some(v) => Some(v),
            None => authorization.map(|h| self.credentials_match(h)),
        };
        match verdict {
            None => Err(html_error(401, "Unauthorized")),
            Some(ok) => {
                self.login_result(peer, ok);
                if ok {
                    Ok(())
                } else {
                    Err(html_error(401, "Unauthorized"))
                }
            }
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
                    data: None,
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

    /// `sps/io` on control `idx` (§2.4, §2.5): `words` after the target (none, `state`,
    /// `astate`, `all`, or a command); `secured_ok` when it came through `sps/ios` with the
    /// right visualisation password. A command (not a read) to a secured control without it
    /// is refused with code 403 in the envelope (*inferred*: the documents only say such
    /// controls need `ios`; users report plain commands do nothing).
    fn io_core(&self, idx: usize, words: &[String], secured_ok: bool, control: &str) -> Answer {
        let now = Instant::now();
        let mut house = self.house.lock().unwrap_or_else(|e| e.into_inner());
        let Some(c) = house.ctls.get_mut(idx) else {
            return Answer::Error(404, "Not Found");
        };
        controls::settle(c, now);
        let first = words.first().map(|w| w.to_lowercase());
        match first.as_deref() {
            None | Some("state" | "astate") if words.len() <= 1 => {
                let (v, digital) = controls::primary(&house.ctls[idx]);
                Answer::Ll(Ll::ok(fmt_val(&v, digital)))
            }
            Some("all") if words.len() == 1 => {
                let c = &house.ctls[idx];
                let (v, digital) = controls::primary(c);
                let mut ll = Ll::ok(fmt_val(&v, digital));
                for name in &c.state_names {
                    let value = match c.states.get(name) {
                        Some(Val::Text(t)) => js(t),
                        Some(Val::Num(n)) => fmt_num(*n, controls::is_digital_state(name)),
                        None => "0".into(),
                    };
                    let uuid = c
                        .state_uuids
                        .iter()
                        .find(|(n, _)| n == name)
                        .map(|(_, u)| u.clone())
                        .unwrap_or_default();
                    ll.outputs.push(Output {
                        name: name.clone(),
                        uuid,
                        value,
                    });
                }
                Answer::Ll(ll)
            }
            _ if house.ctls[idx].secured && !secured_ok => {
                info!(
                    "sim: {control} refused: {} is secured (use sps/ios)",
                    house.ctls[idx].name
                );
                Answer::Ll(Ll::coded(403, ""))
            }
            _ => {
                let ctx = Ctx {
                    now,
                    travel: self.config.blind_travel,
                };
                match controls::command(&mut house, idx, words, &ctx) {
                    Ok(answer) => {
                        let value = answer.unwrap_or_else(|| {
                            let (v, digital) = controls::primary(&house.ctls[idx]);
                            fmt_val(&v, digital)
                        });
                        debug!("sim: {control} -> {value}");
                        drop(house);
                        self.ws.notify();
                        Answer::Ll(Ll::ok(value))
                    }
                    Err(CmdError::NotFound) => {
                        debug!("sim: {control}: unknown command");
                        Answer::Error(404, "Not Found")
                    }
                    Err(CmdError::BadRequest(why)) => {
                        debug!("sim: {control}: {why}");
                        Answer::Error(400, "Bad Request")
                    }
                }
            }
        }
    }
}

/// An HTTP answer echoes the path with its segments percent-decoded (`dev/sps/io/Küche/on`),
/// as the simulator always did; the WebSocket echoes the command as sent.
fn decoded_control(call: &Call<'_>) -> String {
    if call.transport != Transport::Http {
        return call.control.clone();
    }
    let segs: Option<Vec<String>> = call.control.split('/').map(percent_decode).collect();
    segs.map(|s| s.join("/"))
        .unwrap_or_else(|| call.control.clone())
}

/// `sps/io/{control}`, `/state`, `/astate` (§2.5): the block's primary value (the simulator's
/// outputs all follow the block, so `astate` never answers `?`). Over HTTP the echoed control
/// leaves out `/state` and `/astate`, as in the Loxone KB's examples.
pub(crate) fn io_read(sim: &Simulator, call: &mut Call<'_>) -> Answer {
    call.control = decoded_control(call);
    if call.transport == Transport::Http {
        // The KB's examples: `dev/sps/io/LivingroomLight/state` (and `/astate`) answer
        // `control="dev/sps/io/LivingroomLight"`.
        for word in ["/state", "/astate"] {
            let n = call.control.len();
            if n > word.len() && call.control[n - word.len()..].eq_ignore_ascii_case(word) {
                call.control.truncate(n - word.len());
                break;
            }
        }
    }
    let idx = call.target.unwrap_or(usize::MAX);
    sim.io_core(idx, &[], false, &call.control)
}

/// `sps/io/{control}/all` (§2.5): every output of the block.
pub(crate) fn io_all(sim: &Simulator, call: &mut Call<'_>) -> Answer {
    call.control = decoded_control(call);
    let idx = call.target.unwrap_or(usize::MAX);
    sim.io_core(idx, &["all".to_string()], false, &call.control)
}

/// `sps/io/{control}/{command...}` (§2.4).
pub(crate) fn io_command(sim: &Simulator, call: &mut Call<'_>) -> Answer {
    call.control = decoded_control(call);
    let idx = call.target.unwrap_or(usize::MAX);
    let words = call.rest.clone();
    sim.io_core(idx, &words, false, &call.control)
}

/// `sps/ios/{hash}/{control}[/{command...}]` (§2.4): a secured command or read; a wrong
/// visualisation password is code 500.
pub(crate) fn ios(sim: &Simulator, call: &mut Call<'_>) -> Answer {
    call.control = decoded_control(call);
    let hash = call.args.first().cloned().unwrap_or_default();
    if !sim.visu_hash_matches(&hash) {
        info!("sim: secured command with a wrong visualisation password");
        return Answer::Ll(Ll::coded(500, ""));
    }
    let idx = call.target.unwrap_or(usize::MAX);
    let words = call.rest.clone();
    sim.io_core(idx, &words, true, &call.control)
}

/// `sps/checkuservisupwd/{hash}` (§2.4): 200 when the hash is the visualisation password
/// hashed with an outstanding `getvisusalt` key, else 500; nothing is done.
pub(crate) fn check_visu_password(sim: &Simulator, call: &mut Call<'_>) -> Answer {
    let hash = call.args.first().cloned().unwrap_or_default();
    if sim.visu_hash_matches(&hash) {
        Answer::Ll(Ll::ok(""))
    } else {
        Answer::Ll(Ll::coded(500, ""))
    }
}

/// `sys/getvisusalt/{user}` (§2.4, §2.6): a fresh one-time key (hex of hex text, like
/// getkey2's) and salt, in the getkey2 capture's shape (`value` object, lowercase `code`).
/// Unknown users get 404 (*inferred*).
pub(crate) fn visu_salt(sim: &Simulator, call: &mut Call<'_>) -> Answer {
    if call.args.first() != Some(&sim.config.user) {
        return Answer::Error(404, "Not Found");
    }
    let key_text = random_hex(20);
    let key: String = key_text.bytes().map(|b| format!("{b:02x}")).collect();
    let salt = random_hex(16);
    let alg = match sim.config.visu_hash {
        VisuHash::Sha1 => "SHA1",
        VisuHash::Sha256 => "SHA256",
    };
    let mut keys = sim.visu_keys.lock().unwrap_or_else(|e| e.into_inner());
    keys.issue(key.clone(), salt.clone());
    Answer::Ll(Ll::token(
        200,
        serde_json::json!({"key": key, "salt": salt, "hashAlg": alg}),
    ))
}

/// The controls `seg` (decoded segments after `sps/io/`) may name, best first: runs of
/// leading segments that are a known `uuidAction` (sub-controls carry suffixes such as
/// `<uuid>/masterValue`), longest first, then the exact name of a top-level control in the
/// first segment. A name shared by several controls is not resolved (404; use the UUID)
/// (*inferred*). Each entry is (index, segments consumed).
pub(crate) fn targets(house: &House, seg: &[String]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for k in (1..=seg.len().min(4)).rev() {
        if let Some(idx) = house.index_of_uuid(&seg[..k].join("/")) {
            out.push((idx, k));
        }
    }
    match house.indices_of_name(&seg[0]) {
        [one] => out.push((*one, 1)),
        [] => {}
        many => warn!(
            "sim: name {:?} is ambiguous ({} controls)",
            seg[0],
            many.len()
        ),
    }
    out
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

//! The simulator's token authentication and command encryption (loxone-protocol.md §3.2-3.4),
//! written apart from `crate::loxone` so the client is checked against an independent reading.
//!
//! Endpoints (all answered before the Basic-auth gate, each checks its own secret):
//!
//! - `jdev/sys/getPublicKey`: the simulator's RSA key in the Miniserver's one-line
//!   `-----BEGIN CERTIFICATE-----{base64 SPKI}-----END CERTIFICATE-----` form. The private key is
//!   `assets/sim-rsa-key.pem`, a **test key that is public and not a secret**.
//! - `jdev/sys/enc/{cipher}?sk={rsa}` and `fenc`: RSA-decrypts `sk` to `"{keyHex}:{ivHex}"`,
//!   AES-256-CBC-decrypts the cipher to `salt/{salt}/{cmd}` (or `nextSalt/{old}/{new}/{cmd}`) and
//!   answers `cmd`; `fenc` answers with base64 of the AES-encrypted JSON (*inferred*: HTML error
//!   pages stay plain). Anything that does not decrypt gets 401 (§3.4), not counted as a failed
//!   login.
//! - `jdev/sys/getkey2/{user}`: a fresh one-time key and salt, `hashAlg` from
//!   [`SimConfig::user_hash`](super::SimConfig::user_hash).
//! - `jdev/sys/getjwt/{hash}/{user}/{permission}/{clientUuid}/{info}`: only through `enc`/`fenc`
//!   (plain: 400). A wrong hash is 401 and counts toward the lock-out; a right one issues a token
//!   valid for [`SimConfig::token_lifetime`](super::SimConfig::token_lifetime).
//! - `jdev/sys/getkey`: the key for token hashes (hex of hex text, stable for the simulator).
//! - `jdev/sys/refreshjwt|checktoken|killtoken/{tokenHash}/{user}`: plain or encrypted.
//! - `?autht={tokenHash}&user={user}` on any other request instead of Basic auth.
//!
//! A token hash is accepted as HMAC-SHA1 or HMAC-SHA256 of the token with the `getkey` key, or as
//! the plain token (allowed since 11.2). With `token_auth = false` ("old firmware")
//! `getPublicKey`, `enc`/`fenc` and `getjwt` answer 404.
//!
//! [`SimRsa::recover_session_key`] and [`SimSessionKey::decrypt_command`] carry no transport, so a
//! WebSocket endpoint reuses them for `jdev/sys/keyexchange/{...}` and `jdev/sys/enc/{...}`.

use std::fmt;
use std::net::IpAddr;
use std::sync::OnceLock;

use aes::Aes256;
use base64::prelude::{Engine as _, BASE64_STANDARD};
use cbc::cipher::block_padding::ZeroPadding;
use cbc::cipher::{BlockDecryptMut, BlockEncryptMut, KeyIvInit};
use hmac::{Hmac, Mac};
use log::{info, warn};
use rsa::pkcs8::{DecodePrivateKey, EncodePublicKey};
use rsa::{Pkcs1v15Encrypt, RsaPrivateKey};
use sha2::Digest;

use super::http::{http_control, percent_decode};
use super::{SimResponse, Simulator, VisuHash};
use crate::home::time::loxone_now;

/// The simulator's RSA key (PKCS#8 PEM). A test key, public in this repository: not a secret.
pub const SIM_RSA_KEY_PEM: &str = include_str!("../../assets/sim-rsa-key.pem");

/// Why a key exchange or an encrypted command was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SimCryptoError {
    /// Not base64 (after URI-decoding).
    Base64,
    /// RSA decryption failed (wrong key or padding).
    Rsa,
    /// The RSA plaintext is not `"{64 hex}:{32 hex}"`.
    KeyFormat,
    /// AES decryption failed or the text is not UTF-8.
    Aes,
    /// The decrypted text does not start with `salt/{salt}/` or `nextSalt/{old}/{new}/`.
    NoSalt,
}

impl fmt::Display for SimCryptoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SimCryptoError::Base64 => "not base64",
            SimCryptoError::Rsa => "RSA decryption failed",
            SimCryptoError::KeyFormat => "session key is not {keyHex}:{ivHex}",
            SimCryptoError::Aes => "AES decryption failed",
            SimCryptoError::NoSalt => "no salt/ prefix",
        })
    }
}

impl std::error::Error for SimCryptoError {}

/// The simulator's RSA key pair.
pub struct SimRsa {
    private: RsaPrivateKey,
    public_line: String,
}

impl fmt::Debug for SimRsa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SimRsa")
    }
}

/// The embedded simulator key, parsed once; `None` if the asset were broken (a test checks it
/// is not).
pub fn sim_rsa() -> Option<&'static SimRsa> {
    static KEY: OnceLock<Option<SimRsa>> = OnceLock::new();
    KEY.get_or_init(|| SimRsa::from_pem(SIM_RSA_KEY_PEM))
        .as_ref()
}

impl SimRsa {
    /// Parses a PKCS#8 `-----BEGIN PRIVATE KEY-----` PEM (comment lines before it allowed).
    pub fn from_pem(pem: &str) -> Option<SimRsa> {
        let start = pem.find("-----BEGIN PRIVATE KEY-----")? + "-----BEGIN PRIVATE KEY-----".len();
        let end = pem[start..].find("-----END PRIVATE KEY-----")? + start;
        let b64: String = pem[start..end]
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        let der = BASE64_STANDARD.decode(b64).ok()?;
        let private = RsaPrivateKey::from_pkcs8_der(&der).ok()?;
        let spki = private.to_public_key().to_public_key_der().ok()?;
        let public_line = format!(
            "-----BEGIN CERTIFICATE-----{}-----END CERTIFICATE-----",
            BASE64_STANDARD.encode(spki.as_bytes())
        );
        Some(SimRsa {
            private,
            public_line,
        })
    }

    /// The `value` of `getPublicKey`.
    pub fn public_key_line(&self) -> &str {
        &self.public_line
    }

    /// Recovers the session key from `base64(RSA("{keyHex}:{ivHex}"))`, the payload of
    /// `jdev/sys/keyexchange/{...}` or the `sk` query of an HTTP `enc` request (URI-encoded or
    /// not).
    pub fn recover_session_key(&self, payload: &str) -> Result<SimSessionKey, SimCryptoError> {
        let b64 = percent_decode(payload.trim()).ok_or(SimCryptoError::Base64)?;
        let cipher = BASE64_STANDARD
            .decode(b64.as_bytes())
            .map_err(|_| SimCryptoError::Base64)?;
        let plain = self
            .private
            .decrypt(Pkcs1v15Encrypt, &cipher)
            .map_err(|_| SimCryptoError::Rsa)?;
        let text = String::from_utf8(plain).map_err(|_| SimCryptoError::KeyFormat)?;
        let (k, iv) = text.split_once(':').ok_or(SimCryptoError::KeyFormat)?;
        let key: [u8; 32] = hex::decode(k)
            .ok()
            .and_then(|v| v.try_into().ok())
            .ok_or(SimCryptoError::KeyFormat)?;
        let iv: [u8; 16] = hex::decode(iv)
            .ok()
            .and_then(|v| v.try_into().ok())
            .ok_or(SimCryptoError::KeyFormat)?;
        Ok(SimSessionKey { key, iv })
    }
}

/// An AES-256-CBC key and IV learnt from a client.
#[derive(Clone, PartialEq, Eq)]
pub struct SimSessionKey {
    key: [u8; 32],
    iv: [u8; 16],
}

impl fmt::Debug for SimSessionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SimSessionKey(<redacted>)")
    }
}

impl SimSessionKey {
    /// Decrypts the `{cipher}` of `jdev/sys/enc/{cipher}` (URI-encoded base64 of AES-CBC with zero
    /// padding) and strips `salt/{salt}/` or `nextSalt/{old}/{new}/`: returns the command, e.g.
    /// `jdev/sys/getjwt/...`.
    pub fn decrypt_command(&self, cipher: &str) -> Result<String, SimCryptoError> {
        let b64 = percent_decode(cipher).ok_or(SimCryptoError::Base64)?;
        let bytes = BASE64_STANDARD
            .decode(b64.as_bytes())
            .map_err(|_| SimCryptoError::Base64)?;
        let plain = cbc::Decryptor::<Aes256>::new(&self.key.into(), &self.iv.into())
            .decrypt_padded_vec_mut::<ZeroPadding>(&bytes)
            .map_err(|_| SimCryptoError::Aes)?;
        let text = String::from_utf8(plain).map_err(|_| SimCryptoError::Aes)?;
        if let Some(rest) = text.strip_prefix("salt/") {
            let (_, cmd) = rest.split_once('/').ok_or(SimCryptoError::NoSalt)?;
            Ok(cmd.to_string())
        } else if let Some(rest) = text.strip_prefix("nextSalt/") {
            let mut it = rest.splitn(3, '/');
            match (it.next(), it.next(), it.next()) {
                (Some(_), Some(_), Some(cmd)) => Ok(cmd.to_string()),
                _ => Err(SimCryptoError::NoSalt),
            }
        } else {
            Err(SimCryptoError::NoSalt)
        }
    }

    /// base64 of AES-CBC(zero padding) of `text`: the body of a `fenc` answer.
    pub fn encrypt_answer(&self, text: &str) -> String {
        let c = cbc::Encryptor::<Aes256>::new(&self.key.into(), &self.iv.into())
            .encrypt_padded_vec_mut::<ZeroPadding>(text.as_bytes());
        BASE64_STANDARD.encode(c)
    }
}

/// Outstanding getkey2 keys and issued tokens.
#[derive(Debug, Default)]
pub(crate) struct Tokens {
    /// (user, hex key, salt) of outstanding `getkey2` answers, oldest first, at most 16.
    key2: Vec<(String, String, String)>,
    /// The `getkey` key (hex of hex text), made on first use.
    hash_key: String,
    issued: Vec<Issued>,
}

#[derive(Debug, Clone)]
struct Issued {
    token: String,
    user: String,
    /// Seconds since 2009-01-01.
    valid_until: u64,
    rights: u32,
}

fn random_hex(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    if getrandom::fill(&mut bytes).is_err() {
        bytes.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
    }
    hex::encode(bytes)
}

fn hmac_hex(alg: VisuHash, key: &[u8], msg: &str) -> String {
    match alg {
        VisuHash::Sha1 => match Hmac::<sha1::Sha1>::new_from_slice(key) {
            Ok(mut m) => {
                m.update(msg.as_bytes());
                hex::encode(m.finalize().into_bytes())
            }
            Err(_) => String::new(),
        },
        VisuHash::Sha256 => match Hmac::<sha2::Sha256>::new_from_slice(key) {
            Ok(mut m) => {
                m.update(msg.as_bytes());
                hex::encode(m.finalize().into_bytes())
            }
            Err(_) => String::new(),
        },
    }
}

/// The getjwt `{hash}` the simulator expects (§3.2).
fn expected_credentials_hash(
    alg: VisuHash,
    user: &str,
    pw: &str,
    key_hex: &str,
    salt: &str,
) -> String {
    let Ok(key) = hex::decode(key_hex) else {
        return String::new();
    };
    let text = format!("{pw}:{salt}");
    let pw_hash = match alg {
        VisuHash::Sha1 => hex::encode_upper(sha1::Sha1::digest(text.as_bytes())),
        VisuHash::Sha256 => hex::encode_upper(sha2::Sha256::digest(text.as_bytes())),
    };
    hmac_hex(alg, &key, &format!("{user}:{pw_hash}"))
}

fn alg_name(alg: VisuHash) -> &'static str {
    match alg {
        VisuHash::Sha1 => "SHA1",
        VisuHash::Sha256 => "SHA256",
    }
}

impl Tokens {
    fn hash_key(&mut self) -> &str {
        if self.hash_key.is_empty() {
            self.hash_key = hex::encode(random_hex(20));
        }
        &self.hash_key
    }

    /// Index of the live token of `user` whose hash (or plain text) is `hash`.
    fn find(&mut self, user: &str, hash: &str) -> Option<usize> {
        let now = loxone_now();
        self.issued.retain(|t| t.valid_until > now);
        let key = hex::decode(self.hash_key()).unwrap_or_default();
        self.issued.iter().position(|t| {
            t.user == user
                && (t.token == hash
                    || hmac_hex(VisuHash::Sha1, &key, &t.token).eq_ignore_ascii_case(hash)
                    || hmac_hex(VisuHash::Sha256, &key, &t.token).eq_ignore_ascii_case(hash))
        })
    }
}

impl Simulator {
    fn token_json(&self, control: &str, value: &str) -> SimResponse {
        SimResponse {
            status: 200,
            content_type: "application/json",
            body: format!(
                "{{\"LL\":{{\"control\":{},\"code\":200,\"value\":{value}}}}}",
                serde_json::Value::from(control)
            ),
        }
    }

    /// Whether `?autht={hash}&user={user}` in `query` names a live token: `None` when the query
    /// has no `autht`.
    pub(crate) fn autht_valid(&self, query: &str) -> Option<bool> {
        let mut hash = None;
        let mut user = None;
        for pair in query.split('&') {
            match pair.split_once('=') {
                Some(("autht", v)) => hash = percent_decode(v),
                Some(("user", v)) => user = percent_decode(v),
                _ => {}
            }
        }
        let hash = hash?;
        let user = user.unwrap_or_default();
        let mut tokens = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        Some(!hash.is_empty() && tokens.find(&user, &hash).is_some())
    }

    /// The token endpoints, or `None` when `raw` (path segments) is not one. `lower` holds the
    /// first three segments lowercased; `encrypted` when the request came through `enc`/`fenc`.
    pub(crate) fn route_token(
        &self,
        lower: &[&str],
        raw: &[&str],
        query: &str,
        authorization: Option<&str>,
        peer: IpAddr,
        encrypted: bool,
    ) -> Option<SimResponse> {
        if lower.len() < 3 || lower[0] != "jdev" || lower[1] != "sys" {
            return None;
        }
        let old_fw = !self.config.token_auth;
        let n = raw.len();
        let resp = match (lower[2], n) {
            ("getpublickey", 3) if !old_fw => match sim_rsa() {
                Some(k) => self.ok("dev/sys/getPublicKey", k.public_key_line()),
                None => super::http::html_error(500, "Internal Server Error"),
            },
            ("enc" | "fenc", 4) if !old_fw && !encrypted => {
                self.encrypted(lower[2] == "fenc", raw[3], query, authorization, peer)
            }
            ("getkey2", 4) => self.getkey2(raw),
            ("getkey", 3) => {
                let mut t = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
                let key = t.hash_key().to_string();
                self.ok(&http_control(raw), &key)
            }
            ("getjwt", 8) if !old_fw => {
                if encrypted {
                    self.getjwt(raw, peer)
                } else {
                    info!("sim: plain getjwt refused (must be encrypted)");
                    self.error(&http_control(raw), 400, "Bad Request")
                }
            }
            ("refreshjwt" | "checktoken" | "killtoken", 5) => self.token_op(lower[2], raw, peer),
            ("getpublickey" | "enc" | "fenc" | "getjwt", _) if old_fw => {
                self.error(&http_control(raw), 404, "Not Found")
            }
            _ => return None,
        };
        Some(resp)
    }

    fn encrypted(
        &self,
        fenc: bool,
        cipher: &str,
        query: &str,
        authorization: Option<&str>,
        peer: IpAddr,
    ) -> SimResponse {
        let sk = query
            .split('&')
            .find_map(|p| p.strip_prefix("sk="))
            .unwrap_or("");
        let session = sim_rsa()
            .ok_or(SimCryptoError::Rsa)
            .and_then(|k| k.recover_session_key(sk));
        let cmd = session
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|s| s.decrypt_command(cipher));
        let (session, cmd) = match (session, cmd) {
            (Ok(s), Ok(c)) => (s, c),
            (Err(e), _) | (_, Err(e)) => {
                info!("sim: encrypted command refused: {e}");
                return super::http::html_error(401, "Unauthorized");
            }
        };
        let url = if cmd.starts_with('/') {
            cmd
        } else {
            format!("/{cmd}")
        };
        let mut resp = self.route_full("GET", &url, authorization, peer, true);
        if fenc && resp.status == 200 {
            // "The mime-type is the one from the decrypted response" (protocol doc 16.0).
            resp.body = session.encrypt_answer(&resp.body);
        }
        resp
    }

    fn getkey2(&self, raw: &[&str]) -> SimResponse {
        let control = http_control(raw);
        let Some(user) = percent_decode(raw[3]) else {
            return self.error(&control, 400, "Bad Request");
        };
        if user != self.config.user {
            return self.error(&control, 404, "Not Found");
        }
        let key = hex::encode(random_hex(20));
        let salt = random_hex(16);
        let mut t = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        if t.key2.len() >= 16 {
            t.key2.remove(0);
        }
        t.key2.push((user, key.clone(), salt.clone()));
        let alg = alg_name(self.config.user_hash);
        self.token_json(
            &control,
            &format!("{{\"key\":\"{key}\",\"salt\":\"{salt}\",\"hashAlg\":\"{alg}\"}}"),
        )
    }

    /// `getjwt/{hash}/{user}/{permission}/{clientUuid}/{info}`; the getkey2 key is used up
    /// either way.
    fn getjwt(&self, raw: &[&str], peer: IpAddr) -> SimResponse {
        let control = http_control(raw);
        if let Some(blocked) = self.blocked(peer) {
            return blocked;
        }
        let user = percent_decode(raw[4]).unwrap_or_default();
        let hash = raw[3];
        let permission: u32 = raw[5].parse().unwrap_or(0);
        let ok = {
            let mut t = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
            let alg = self.config.user_hash;
            let pw = &self.config.password;
            let found = t.key2.iter().position(|(u, key, salt)| {
                *u == user && expected_credentials_hash(alg, u, pw, key, salt) == hash
            });
            match found {
                Some(i) => {
                    t.key2.remove(i);
                    true
                }
                None => {
                    if let Some(i) = t.key2.iter().position(|(u, _, _)| *u == user) {
                        t.key2.remove(i);
                    }
                    false
                }
            }
        };
        self.login_result(peer, ok && user == self.config.user);
        if !ok || user != self.config.user {
            info!("sim: getjwt with a wrong hash for {user:?}");
            return super::http::html_error(401, "Unauthorized");
        }
        let valid_until = loxone_now() + self.config.token_lifetime.as_secs();
        let token = random_hex(20).to_uppercase();
        let rights = if permission == 0 { 2 } else { permission };
        let mut t = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        let key = t.hash_key().to_string();
        t.issued.push(Issued {
            token: token.clone(),
            user,
            valid_until,
            rights,
        });
        info!("sim: token issued, valid until {valid_until} (Loxone time)");
        self.token_json(
            &control,
            &format!(
                "{{\"token\":\"{token}\",\"key\":\"{key}\",\"validUntil\":{valid_until},\
                 \"tokenRights\":{rights},\"unsecurePass\":{}}}",
                self.config.password.len() < 4
            ),
        )
    }

    fn token_op(&self, op: &str, raw: &[&str], peer: IpAddr) -> SimResponse {
        let control = http_control(raw);
        if let Some(blocked) = self.blocked(peer) {
            return blocked;
        }
        let user = percent_decode(raw[4]).unwrap_or_default();
        let hash = percent_decode(raw[3]).unwrap_or_default();
        let mut t = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        let Some(i) = t.find(&user, &hash) else {
            drop(t);
            warn!("sim: {op} with an unknown token");
            self.login_result(peer, false);
            return super::http::html_error(401, "Unauthorized");
        };
        let resp = match op {
            "refreshjwt" => {
                let valid_until = loxone_now() + self.config.token_lifetime.as_secs();
                let token = random_hex(20).to_uppercase();
                let old = t.issued.remove(i);
                t.issued.push(Issued {
                    token: token.clone(),
                    valid_until,
                    ..old.clone()
                });
                self.token_json(
                    &control,
                    &format!(
                        "{{\"token\":\"{token}\",\"validUntil\":{valid_until},\
                         \"tokenRights\":{},\"unsecurePass\":false}}",
                        old.rights
                    ),
                )
            }
            "checktoken" => {
                let it = &t.issued[i];
                self.token_json(
                    &control,
                    &format!(
                        "{{\"validUntil\":{},\"tokenRights\":{}}}",
                        it.valid_until, it.rights
                    ),
                )
            }
            _ => {
                t.issued.remove(i);
                info!("sim: token killed");
                self.token_json(&control, "\"\"")
            }
        };
        drop(t);
        self.login_result(peer, true);
        resp
    }
}

/// Per-connection crypto state of a WebSocket session: the AES session key from
/// `keyexchange`, and whether the command now arriving came out of `jdev/sys/enc`.
struct WsKeys {
    key: SimSessionKey,
    decrypted_next: bool,
}

/// The `control` a WebSocket answer to an encrypted command echoes: the command as received,
/// `jdev/sys/enc/{cipher}` (or `fenc`), with the cipher URI-decoded back to plain base64.
/// PyLoxone AES-decrypts this echo to learn which command an answer belongs to, and notes
/// that "encrypted strings returned by the miniserver are not %encoded (even if they were when
/// sent to the miniserver)" (`pyloxone_api/connection.py` `_decrypt`). A cipher that does not
/// URI-decode is echoed as received.
fn echo_encrypted(prefix: &str, cipher: &str) -> String {
    let cipher = percent_decode(cipher).unwrap_or_else(|| cipher.to_string());
    format!("{prefix}{cipher}")
}

/// WebSocket authentication as a Miniserver does it (loxone-protocol.md §4.1, §3.3-3.4):
/// `jdev/sys/keyexchange/{rsa(key:iv)}` sets the session key and answers with the one-time
/// `getkey` key encrypted with it; `jdev/sys/enc/{cipher}` carries encrypted commands (their
/// answers echo the encrypted command, see [`echo_encrypted`]) and `jdev/sys/fenc/{cipher}`
/// also encrypts the answer; `authwithtoken/{hash}/{user}` authenticates with a token issued by
/// `getjwt` (over HTTP or over this socket, encrypted); `getkey2`, `getkey`, `getjwt`,
/// `refreshjwt`, `checktoken`, `killtoken` work as over HTTP. A wrong token is code 401.
/// Simulating old firmware (`SimConfig::token_auth = false`) refuses WebSocket logins (401),
/// so clients fall back to HTTP.
#[derive(Debug, Default, Clone, Copy)]
pub struct TokenWsAuth;

impl super::WsAuth for TokenWsAuth {
    fn command(
        &self,
        sim: &Simulator,
        session: &mut super::WsAuthSession,
        command: &str,
    ) -> super::WsAuthOutcome {
        use super::WsAuthOutcome as Out;
        let answer = |code: u16| Out::Answer {
            code,
            value: serde_json::Value::String(String::new()),
        };
        let lower = command.to_ascii_lowercase();
        let decrypted = match session
            .data
            .as_mut()
            .and_then(|d| d.downcast_mut::<WsKeys>())
        {
            Some(k) => std::mem::replace(&mut k.decrypted_next, false),
            None => false,
        };
        if let Some(payload) = lower
            .starts_with("jdev/sys/keyexchange/")
            .then(|| &command["jdev/sys/keyexchange/".len()..])
        {
            let key = sim_rsa()
                .ok_or(SimCryptoError::Rsa)
                .and_then(|k| k.recover_session_key(payload));
            return match key {
                Ok(key) => {
                    // The answer's value is the one-time key of `jdev/sys/getkey`, AES-encrypted
                    // with the key just received (base64): lxcommunicator decrypts it and hashes
                    // the token of `authwithtoken` with it (`WebSocket.js` `_exchangeKeys`).
                    let one_time = sim
                        .tokens
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .hash_key()
                        .to_string();
                    let value = key.encrypt_answer(&one_time);
                    session.data = Some(Box::new(WsKeys {
                        key,
                        decrypted_next: false,
                    }));
                    Out::Answer {
                        code: 200,
                        value: serde_json::Value::String(value),
                    }
                }
                Err(e) => {
                    info!("sim ws: keyexchange refused: {e}");
                    answer(401)
                }
            };
        }
        let encrypted = ["jdev/sys/enc/", "jdev/sys/fenc/"]
            .into_iter()
            .find(|p| lower.starts_with(p));
        if let Some(prefix) = encrypted {
            let cipher = &command[prefix.len()..];
            let Some(keys) = session
                .data
                .as_mut()
                .and_then(|d| d.downcast_mut::<WsKeys>())
            else {
                info!("sim ws: {prefix} before keyexchange");
                return answer(401);
            };
            return match keys.key.decrypt_command(cipher) {
                Ok(plain) => {
                    keys.decrypted_next = true;
                    Out::Decrypted(super::Decrypted {
                        command: plain,
                        control: echo_encrypted(&command[..prefix.len()], cipher),
                        answer_key: (prefix == "jdev/sys/fenc/").then(|| keys.key.clone()),
                    })
                }
                Err(e) => {
                    info!("sim ws: {prefix} refused: {e}");
                    answer(401)
                }
            };
        }
        let cmd = lower.strip_prefix("jdev/sys/").unwrap_or(&lower);
        let raw: Vec<&str> = command.split('/').collect();
        if cmd.starts_with("authwithtoken/") {
            let parts: Vec<&str> = raw.iter().rev().take(2).copied().collect();
            let (user, hash) = match parts.as_slice() {
                [user, hash] => (
                    percent_decode(user).unwrap_or_default(),
                    percent_decode(hash).unwrap_or_default(),
                ),
                _ => return answer(400),
            };
            if !sim.config.token_auth {
                return answer(401);
            }
            let mut t = sim.tokens.lock().unwrap_or_else(|e| e.into_inner());
            return match t.find(&user, &hash) {
                Some(i) => {
                    let it = t.issued[i].clone();
                    drop(t);
                    session.user = Some(user);
                    Out::Answer {
                        code: 200,
                        value: serde_json::json!({
                            "validUntil": it.valid_until,
                            "tokenRights": it.rights,
                            "unsecurePass": false
                        }),
                    }
                }
                None => {
                    info!("sim ws: authwithtoken with an unknown token");
                    answer(401)
                }
            };
        }
        let token_op = [
            "getkey2/",
            "getkey",
            "getjwt/",
            "refreshjwt/",
            "checktoken/",
            "killtoken/",
        ]
        .iter()
        .any(|p| lower.starts_with(&format!("jdev/sys/{p}")));
        if !token_op {
            return Out::NotAuth;
        }
        let peer = IpAddr::from([127, 0, 0, 1]);
        let resp = sim.route_full("GET", &format!("/{command}"), None, peer, decrypted);
        let ll = serde_json::from_str::<serde_json::Value>(&resp.body)
            .ok()
            .and_then(|v| v.get("LL").cloned());
        match ll {
            Some(ll) if resp.status == 200 => {
                let code = ll
                    .get("code")
                    .or_else(|| ll.get("Code"))
                    .and_then(|c| c.as_u64().or_else(|| c.as_str()?.parse().ok()))
                    .unwrap_or(200) as u16;
                if code == 200 && lower.starts_with("jdev/sys/getjwt/") {
                    // A token acquired over this socket authenticates it (§4.1 step 3).
                    session.user = raw.get(4).and_then(|u| percent_decode(u));
                }
                Out::Answer {
                    code,
                    value: ll.get("value").cloned().unwrap_or_default(),
                }
            }
            _ => answer(resp.status),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loxone::crypto::{PublicKey, SessionKey};

    const PEER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    fn ll(resp: &SimResponse) -> serde_json::Value {
        let v: serde_json::Value =
            serde_json::from_str(&resp.body).unwrap_or_else(|e| panic!("{}: {e}", resp.body));
        v["LL"].clone()
    }

    #[test]
    fn http_answers_echo_the_command_as_dev() {
        // loxone-protocol.md §2.1: over HTTP the echoed control starts with dev/ even for jdev/
        // requests (the getPublicKey and sps/io captures).
        assert_eq!(http_control(&["jdev", "sys", "getkey"]), "dev/sys/getkey");
        assert_eq!(http_control(&["data", "LoxAPP3.json"]), "data/LoxAPP3.json");
        assert_eq!(http_control(&["jdevx", "y"]), "jdevx/y");
        let sim = Simulator::demo();
        let get = |url: &str| sim.handle("GET", url, None, PEER);
        assert_eq!(ll(&get("/jdev/sys/getkey"))["control"], "dev/sys/getkey");
        assert_eq!(
            ll(&get("/jdev/sys/getkey2/demo"))["control"],
            "dev/sys/getkey2/demo"
        );
        assert_eq!(
            ll(&get("/jdev/sys/getPublicKey"))["control"],
            "dev/sys/getPublicKey"
        );
        // Plain getjwt is refused (it must be encrypted): 400.
        assert_eq!(get("/jdev/sys/getjwt/h/demo/4/u/i").status, 400);
    }

    #[test]
    fn an_http_fenc_answer_keeps_the_json_mime_type() {
        // "The Miniserver also AES encrypts the response (Base64). The mime-type is the one from
        // the decrypted response" (Communicating with the Miniserver 16.0).
        let sim = Simulator::demo();
        let pk = PublicKey::parse(sim_rsa().unwrap().public_key_line()).unwrap();
        let key = SessionKey::new();
        let cmd = key
            .http_command(&pk, "jdev/sys/getkey2/demo", true)
            .unwrap();
        let resp = sim.handle("GET", &format!("/{cmd}"), None, PEER);
        assert_eq!(resp.status, 200, "{}", resp.body);
        assert_eq!(resp.content_type, "application/json");
        let plain = key.decrypt_answer(resp.body.as_bytes()).unwrap();
        let v: serde_json::Value = serde_json::from_str(&plain).unwrap();
        assert_eq!(v["LL"]["control"], "dev/sys/getkey2/demo");
        assert_eq!(v["LL"]["code"], 200);
    }
}

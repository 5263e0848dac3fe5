//! The simulator's token authentication and command encryption (loxone-protocol.md §3.2-3.4),
//! written apart from `crate::loxone` so the client is checked against an independent reading.
//!
//! Handlers (rows of `commands.rs`; none needs a login, each checks its own secret):
//!
//! - `sys/getPublicKey` (and `sys/getcertificate`): the simulator's RSA key in the
//!   Miniserver's one-line `-----BEGIN CERTIFICATE-----{base64 SPKI}-----END CERTIFICATE-----`
//!   form. The private key is `assets/sim-rsa-key.pem`, a **test key that is public and not a
//!   secret**.
//! - `sys/keyexchange/{rsa}` (WebSocket): the session key, RSA-decrypted to
//!   `"{keyHex}:{ivHex}"` (32-byte AES-256 keys as documented; 16 and 24 bytes accepted too).
//! - `sys/enc/{cipher}` and `fenc` (`?sk={rsa}` over HTTP, the session key over the
//!   WebSocket): the cipher is URI-decoded when it is encoded, base64-decoded leniently,
//!   AES-CBC-decrypted without padding and stripped of PKCS#7 bytes and everything from the
//!   first NUL (zero padding, a NUL terminator); `salt/{salt}/` or `nextSalt/{old}/{new}/`
//!   goes, the router runs the command; `fenc` encrypts the answer (HTML error pages stay
//!   plain, *inferred*). Anything that does not decrypt gets 401 at once (§3.4), not counted as
//!   a failed login.
//! - `sys/getkey2/{user}`: a fresh one-time key and salt, `hashAlg` from
//!   [`SimConfig::user_hash`](super::SimConfig::user_hash).
//! - `sys/getjwt/{hash}/{user}/{permission}/{clientUuid}/{info}`: only through `enc`/`fenc`
//!   (plain: 400, §3.3); the legacy `sys/gettoken/...` also plain (since 11.2 "not mandatory
//!   anymore to use encryption"). A wrong hash is 401 and counts toward the lock-out; a right
//!   one issues a token valid for [`SimConfig::token_lifetime`](super::SimConfig::token_lifetime).
//! - `sys/getkey`: the key for token hashes (hex of hex text, stable for the simulator).
//! - `sys/refreshjwt|refreshtoken|checktoken|killtoken/{tokenHash}/{user}`: plain or encrypted.
//! - `authwithtoken/{tokenHash}/{user}` (WebSocket): authenticates the session.
//! - `?autht={tokenHash}&user={user}` on any other request instead of Basic auth.
//!
//! A token hash is accepted as HMAC-SHA1 or HMAC-SHA256 of the token with the `getkey` key, or as
//! the plain token (allowed since 11.2). With `token_auth = false` ("old firmware")
//! `getPublicKey`, `enc`/`fenc`, `getjwt` and `gettoken` answer 404.
//!
//! [`SimRsa::recover_session_key`] and [`SimSessionKey::decrypt_command`] carry no transport, so a
//! WebSocket endpoint reuses them for `jdev/sys/keyexchange/{...}` and `jdev/sys/enc/{...}`.

use std::fmt;
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

use super::answer::{Answer, Call, Ll, Transport};
use super::http::percent_decode;
use super::{Simulator, VisuHash};
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
        let b64 = percent_decode(payload.trim()).unwrap_or_else(|| payload.trim().to_string());
        let cipher = decode_base64_leniently(&b64)?;
        let plain = self
            .private
            .decrypt(Pkcs1v15Encrypt, &cipher)
            .map_err(|_| SimCryptoError::Rsa)?;
        let text = String::from_utf8(plain).map_err(|_| SimCryptoError::KeyFormat)?;
        let (k, iv) = text.split_once(':').ok_or(SimCryptoError::KeyFormat)?;
        let key = hex::decode(k.trim()).map_err(|_| SimCryptoError::KeyFormat)?;
        let iv: [u8; 16] = hex::decode(iv.trim_end_matches('\0').trim())
            .ok()
            .and_then(|v| v.try_into().ok())
            .ok_or(SimCryptoError::KeyFormat)?;
        SimSessionKey::new(key, iv).ok_or(SimCryptoError::KeyFormat)
    }
}

/// An AES-CBC key and IV learnt from a client: 32 bytes (AES-256, what Loxone documents,
/// §3.4) or, forgiving clients that send less, 16 or 24 bytes (AES-128/192; the `loxws` client
/// sends a 16-byte key, *inferred* that a Miniserver takes it).
#[derive(Clone, PartialEq, Eq)]
pub struct SimSessionKey {
    key: Vec<u8>,
    iv: [u8; 16],
}

impl fmt::Debug for SimSessionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SimSessionKey(<redacted>)")
    }
}

/// Base64 as clients send it: standard or URL-safe alphabet, padding or none, a `+` that a
/// form decoder turned into a space, line breaks.
fn decode_base64_leniently(text: &str) -> Result<Vec<u8>, SimCryptoError> {
    use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
    use base64::engine::DecodePaddingMode;
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    let cleaned: String = text
        .chars()
        .filter(|c| !matches!(c, '\r' | '\n' | '\t'))
        .map(|c| match c {
            ' ' => '+',
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    LENIENT
        .decode(cleaned.as_bytes())
        .map_err(|_| SimCryptoError::Base64)
}

/// The plaintext of a decrypted command without its padding, as firmware tolerates it
/// (§3.4): PKCS#7 bytes (PyLoxone, node-lox-ws-api), then everything from the first NUL on
/// (a NUL terminator and zero-byte padding, lxcommunicator).
fn strip_padding(mut plain: Vec<u8>) -> Vec<u8> {
    if let Some(&n) = plain.last() {
        let n = usize::from(n);
        if (1..=16).contains(&n)
            && n <= plain.len()
            && plain[plain.len() - n..]
                .iter()
                .all(|&b| usize::from(b) == n)
        {
            plain.truncate(plain.len() - n);
        }
    }
    if let Some(nul) = plain.iter().position(|&b| b == 0) {
        plain.truncate(nul);
    }
    plain
}

macro_rules! with_aes {
    ($key:expr, $cipher:ident => $body:expr) => {
        match $key.len() {
            16 => {
                type $cipher = aes::Aes128;
                $body
            }
            24 => {
                type $cipher = aes::Aes192;
                $body
            }
            _ => {
                type $cipher = Aes256;
                $body
            }
        }
    };
}

impl SimSessionKey {
    /// A key of 16, 24 or 32 bytes and a 16-byte IV; `None` for other lengths.
    fn new(key: Vec<u8>, iv: [u8; 16]) -> Option<SimSessionKey> {
        matches!(key.len(), 16 | 24 | 32).then_some(SimSessionKey { key, iv })
    }

    /// Decrypts the `{cipher}` of `jdev/sys/enc/{cipher}` (URI-encoded base64 of AES-CBC,
    /// padded with zero bytes, a NUL and zeros, or a NUL and PKCS#7) and strips `salt/{salt}/`
    /// or `nextSalt/{old}/{new}/`: returns the command, e.g. `jdev/sys/getjwt/...`.
    pub fn decrypt_command(&self, cipher: &str) -> Result<String, SimCryptoError> {
        let b64 = percent_decode(cipher).unwrap_or_else(|| cipher.to_string());
        let bytes = decode_base64_leniently(&b64)?;
        if bytes.is_empty() || bytes.len() % 16 != 0 {
            return Err(SimCryptoError::Aes);
        }
        use cbc::cipher::block_padding::NoPadding;
        let key = &self.key;
        let plain = with_aes!(key, C => cbc::Decryptor::<C>::new_from_slices(key, &self.iv)
            .map_err(|_| SimCryptoError::Aes)?
            .decrypt_padded_vec_mut::<NoPadding>(&bytes)
            .map_err(|_| SimCryptoError::Aes)?);
        let text = String::from_utf8(strip_padding(plain)).map_err(|_| SimCryptoError::Aes)?;
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

    /// base64 of AES-CBC (zero padding) of `text`: the body of a `fenc` answer.
    pub fn encrypt_answer(&self, text: &str) -> String {
        let key = &self.key;
        let c: Vec<u8> = with_aes!(key, C => match cbc::Encryptor::<C>::new_from_slices(key, &self.iv) {
            Ok(e) => e.encrypt_padded_vec_mut::<ZeroPadding>(text.as_bytes()),
            Err(_) => Vec::new(),
        });
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

    /// Old firmware (`SimConfig::token_auth = false`) knows no token commands: 404.
    fn old_firmware(&self) -> Option<Answer> {
        (!self.config.token_auth).then_some(Answer::Error(404, "Not Found"))
    }
}

/// 401: the HTML page over HTTP (§2.7 capture), an `LL` answer over the WebSocket.
fn unauthorized(call: &Call<'_>) -> Answer {
    match call.transport {
        Transport::Http => Answer::Page(super::answer::html_error(401, "Unauthorized")),
        Transport::Ws => Answer::Error(401, "Unauthorized"),
    }
}

/// `sys/getkey` (§2.6, §3.3): the key for token hashes (hex of hex text, stable for the
/// simulator).
pub(crate) fn getkey(sim: &Simulator, _: &mut Call<'_>) -> Answer {
    let mut t = sim.tokens.lock().unwrap_or_else(|e| e.into_inner());
    Answer::Ll(Ll::ok(t.hash_key().to_string()))
}

/// `sys/getkey2/{user}` (§3.2): a fresh one-time key and salt and the `hashAlg` of
/// [`SimConfig::user_hash`](super::SimConfig::user_hash); unknown users 404 (*inferred*).
pub(crate) fn getkey2(sim: &Simulator, call: &mut Call<'_>) -> Answer {
    let user = call.args.first().cloned().unwrap_or_default();
    if user != sim.config.user {
        return Answer::Error(404, "Not Found");
    }
    let key = hex::encode(random_hex(20));
    let salt = random_hex(16);
    let mut t = sim.tokens.lock().unwrap_or_else(|e| e.into_inner());
    if t.key2.len() >= 16 {
        t.key2.remove(0);
    }
    t.key2.push((user, key.clone(), salt.clone()));
    let alg = alg_name(sim.config.user_hash);
    Answer::Ll(Ll::token(
        200,
        serde_json::json!({"key": key, "salt": salt, "hashAlg": alg}),
    ))
}

/// `sys/getPublicKey` (§3.4) and `sys/getcertificate`: the RSA key in the Miniserver's
/// one-line `-----BEGIN CERTIFICATE-----...` form.
pub(crate) fn public_key(sim: &Simulator, _: &mut Call<'_>) -> Answer {
    if let Some(a) = sim.old_firmware() {
        return a;
    }
    match sim_rsa() {
        Some(k) => Answer::Ll(Ll::ok(k.public_key_line())),
        None => Answer::Error(500, "Internal Server Error"),
    }
}

/// `sys/keyexchange/{rsa}` (§3.4, WebSocket): sets the session key and answers with the
/// one-time `getkey` key AES-encrypted with it (base64): lxcommunicator decrypts it and hashes
/// the token of `authwithtoken` with it (`WebSocket.js` `_exchangeKeys`). 401 when the
/// payload does not decrypt.
pub(crate) fn keyexchange(sim: &Simulator, call: &mut Call<'_>) -> Answer {
    let payload = call.raw_rest.join("/");
    let payload = if payload.is_empty() {
        call.raw_args.first().cloned().unwrap_or_default()
    } else {
        payload
    };
    let key = sim_rsa()
        .ok_or(SimCryptoError::Rsa)
        .and_then(|k| k.recover_session_key(&payload));
    match (key, call.login.as_deref_mut()) {
        (Ok(key), Some(login)) => {
            let one_time = sim
                .tokens
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .hash_key()
                .to_string();
            let value = key.encrypt_answer(&one_time);
            login.key = Some(key);
            Answer::Ll(Ll::ok(value))
        }
        (Err(e), _) => {
            info!("sim ws: keyexchange refused: {e}");
            Answer::Ll(Ll::coded(401, ""))
        }
        (Ok(_), None) => Answer::Error(400, "Bad Request"),
    }
}

/// The session key of an HTTP `?sk=`: RSA-decrypted, or taken from the last few decrypted
/// (RSA is the costly step, and a client may send the same `sk` with every request; the same
/// `sk` always gives the same key, so remembering changes no answer).
fn http_session_key(sk: &str) -> Result<SimSessionKey, SimCryptoError> {
    use std::sync::Mutex;
    const KEEP: usize = 8;
    static RECENT: Mutex<Vec<(String, SimSessionKey)>> = Mutex::new(Vec::new());
    let mut recent = RECENT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, key)) = recent.iter().find(|(s, _)| s == sk) {
        return Ok(key.clone());
    }
    let key = sim_rsa()
        .ok_or(SimCryptoError::Rsa)
        .and_then(|k| k.recover_session_key(sk))?;
    if recent.len() >= KEEP {
        recent.remove(0);
    }
    recent.push((sk.to_string(), key.clone()));
    Ok(key)
}

/// `sys/enc/{cipher}` and `sys/fenc/{cipher}` (§3.4): over HTTP the session key comes in
/// `?sk=` (RSA), over the WebSocket from `keyexchange`. The cipher may arrive URI-encoded or
/// not (then its `/` split it into several segments). Anything that does not decrypt is 401
/// (§3.4: "if it cannot be decrypted ... it will return 401"), answered at once.
pub(crate) fn enc(sim: &Simulator, call: &mut Call<'_>) -> Answer {
    if let Some(a) = sim.old_firmware() {
        return a;
    }
    if call.encrypted {
        return Answer::Error(400, "Bad Request");
    }
    let segs: Vec<&str> = call.path.split('/').collect();
    let fenc = segs.get(2).is_some_and(|w| w.eq_ignore_ascii_case("fenc"));
    let cipher = call.raw_rest.join("/");
    let key = match call.transport {
        Transport::Http => {
            let sk = call
                .query
                .split('&')
                .find_map(|p| p.strip_prefix("sk="))
                .unwrap_or("")
                .to_string();
            http_session_key(&sk)
        }
        Transport::Ws => {
            // Echo the encrypted command as received, cipher URI-decoded (see `run`).
            call.control = format!(
                "{}/{}",
                segs.iter().take(3).copied().collect::<Vec<_>>().join("/"),
                percent_decode(&cipher).unwrap_or_else(|| cipher.clone())
            );
            call.login
                .as_deref()
                .and_then(|l| l.key.clone())
                .ok_or(SimCryptoError::KeyFormat)
        }
    };
    let command = key
        .as_ref()
        .map_err(Clone::clone)
        .and_then(|k| k.decrypt_command(&cipher));
    match (key, command) {
        (Ok(key), Ok(command)) => Answer::Decrypted {
            command,
            fenc: fenc.then_some(key),
        },
        (Err(e), _) | (_, Err(e)) => {
            info!("sim: encrypted command refused: {e}");
            match call.transport {
                Transport::Http => Answer::Page(super::answer::html_error(401, "Unauthorized")),
                Transport::Ws => Answer::Ll(Ll::coded(401, "")),
            }
        }
    }
}

/// `sys/getjwt/{hash}/{user}/{permission}/{clientUuid}/{info}` (only through `enc`/`fenc`) and
/// the legacy `sys/gettoken/...` (plain too, §3.3: "not mandatory anymore to use encryption
/// when acquiring tokens" since 11.2): checks the hash against the outstanding getkey2 keys
/// (used up either way) and issues a token valid for
/// [`SimConfig::token_lifetime`](super::SimConfig::token_lifetime). Over the WebSocket a token
/// authenticates the session (§3.3). A wrong hash is 401 and counts toward the lock-out; over
/// the WebSocket its value is the gettoken-401 capture's `{"lastEdit", "unix"}`.
pub(crate) fn get_token(sim: &Simulator, call: &mut Call<'_>) -> Answer {
    if let Some(a) = sim.old_firmware() {
        return a;
    }
    if let Some(blocked) = sim.blocked(call.peer) {
        return Answer::Page(blocked);
    }
    let [hash, user, permission, ..] = call.args.as_slice() else {
        return Answer::Error(400, "Bad Request");
    };
    let (hash, user) = (hash.clone(), user.clone());
    let permission: u32 = permission.parse().unwrap_or(0);
    let ok = {
        let mut t = sim.tokens.lock().unwrap_or_else(|e| e.into_inner());
        let alg = sim.config.user_hash;
        let pw = &sim.config.password;
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
    let ok = ok && user == sim.config.user;
    sim.login_result(call.peer, ok);
    if !ok {
        info!("sim: token request with a wrong hash for {user:?}");
        return match call.transport {
            Transport::Http => unauthorized(call),
            Transport::Ws => Answer::Ll(Ll::token(
                401,
                serde_json::json!({"lastEdit": "2009-01-01 01:00:00", "unix": crate::home::time::LOXONE_EPOCH_UNIX}),
            )),
        };
    }
    let valid_until = loxone_now() + sim.config.token_lifetime.as_secs();
    let token = random_hex(20).to_uppercase();
    let rights = if permission == 0 { 2 } else { permission };
    let key = {
        let mut t = sim.tokens.lock().unwrap_or_else(|e| e.into_inner());
        let key = t.hash_key().to_string();
        t.issued.push(Issued {
            token: token.clone(),
            user: user.clone(),
            valid_until,
            rights,
        });
        key
    };
    info!("sim: token issued, valid until {valid_until} (Loxone time)");
    if let Some(login) = call.login.as_deref_mut() {
        // A token acquired over this socket authenticates it (§4.1 step 3).
        login.user = Some(user);
    }
    Answer::Ll(Ll::token(
        200,
        serde_json::json!({
            "token": token,
            "key": key,
            "validUntil": valid_until,
            "tokenRights": rights,
            "unsecurePass": sim.config.password.len() < 4,
        }),
    ))
}

/// The live token of `{user}` whose hash (or plain text, §3.3 since 11.2) is `{token-hash}`,
/// with the lock-out bookkeeping of a login; `Err` is the answer.
fn token_of(sim: &Simulator, call: &Call<'_>) -> Result<(String, String), Answer> {
    if let Some(blocked) = sim.blocked(call.peer) {
        return Err(Answer::Page(blocked));
    }
    let [hash, user, ..] = call.args.as_slice() else {
        return Err(Answer::Error(400, "Bad Request"));
    };
    let found = {
        let mut t = sim.tokens.lock().unwrap_or_else(|e| e.into_inner());
        t.find(user, hash).map(|i| t.issued[i].token.clone())
    };
    match found {
        Some(token) => {
            sim.login_result(call.peer, true);
            Ok((user.clone(), token))
        }
        None => {
            warn!("sim: {} with an unknown token", call.path);
            sim.login_result(call.peer, false);
            Err(unauthorized(call))
        }
    }
}

/// `sys/refreshjwt/{tokenHash}/{user}` and the legacy `sys/refreshtoken/...` (§3.3): a new
/// token with the same rights and a new `validUntil`; the old one is gone.
pub(crate) fn refresh(sim: &Simulator, call: &mut Call<'_>) -> Answer {
    let (_, old_token) = match token_of(sim, call) {
        Ok(t) => t,
        Err(a) => return a,
    };
    let valid_until = loxone_now() + sim.config.token_lifetime.as_secs();
    let token = random_hex(20).to_uppercase();
    let mut t = sim.tokens.lock().unwrap_or_else(|e| e.into_inner());
    let Some(i) = t.issued.iter().position(|it| it.token == old_token) else {
        return Answer::Error(401, "Unauthorized");
    };
    let old = t.issued.remove(i);
    t.issued.push(Issued {
        token: token.clone(),
        valid_until,
        ..old.clone()
    });
    Answer::Ll(Ll::token(
        200,
        serde_json::json!({
            "token": token,
            "validUntil": valid_until,
            "tokenRights": old.rights,
            "unsecurePass": false,
        }),
    ))
}

/// `sys/checktoken/{tokenHash}/{user}` (§3.3): `validUntil` and `tokenRights` of a live token.
pub(crate) fn check_token(sim: &Simulator, call: &mut Call<'_>) -> Answer {
    let (_, token) = match token_of(sim, call) {
        Ok(t) => t,
        Err(a) => return a,
    };
    let t = sim.tokens.lock().unwrap_or_else(|e| e.into_inner());
    match t.issued.iter().find(|it| it.token == token) {
        Some(it) => Answer::Ll(Ll::token(
            200,
            serde_json::json!({"validUntil": it.valid_until, "tokenRights": it.rights,
                "unsecurePass": false}),
        )),
        None => Answer::Error(401, "Unauthorized"),
    }
}

/// `sys/killtoken/{tokenHash}/{user}` (§3.3): the token is no longer usable.
pub(crate) fn kill_token(sim: &Simulator, call: &mut Call<'_>) -> Answer {
    let (_, token) = match token_of(sim, call) {
        Ok(t) => t,
        Err(a) => return a,
    };
    let mut t = sim.tokens.lock().unwrap_or_else(|e| e.into_inner());
    t.issued.retain(|it| it.token != token);
    info!("sim: token killed");
    Answer::Ll(Ll::token(200, serde_json::Value::String(String::new())))
}

/// `authwithtoken/{tokenHash}/{user}` (§3.3, §4.1, WebSocket): authenticates the session with
/// a token issued by `getjwt`/`gettoken` (over HTTP or a socket); 401 for an unknown token or
/// on old firmware.
pub(crate) fn auth_with_token(sim: &Simulator, call: &mut Call<'_>) -> Answer {
    if !sim.config.token_auth {
        return Answer::Ll(Ll::coded(401, ""));
    }
    let [hash, user, ..] = call.args.as_slice() else {
        return Answer::Ll(Ll::coded(400, ""));
    };
    let found = {
        let mut t = sim.tokens.lock().unwrap_or_else(|e| e.into_inner());
        t.find(user, hash).map(|i| t.issued[i].clone())
    };
    match (found, call.login.as_deref_mut()) {
        (Some(it), Some(login)) => {
            login.user = Some(it.user.clone());
            Answer::Ll(Ll {
                code: 200,
                value: serde_json::json!({
                    "validUntil": it.valid_until,
                    "tokenRights": it.rights,
                    "unsecurePass": false
                }),
                outputs: Vec::new(),
                token: false,
            })
        }
        _ => {
            info!("sim ws: authwithtoken with an unknown token");
            Answer::Ll(Ll::coded(401, ""))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loxone::crypto::{PublicKey, SessionKey};
    use crate::sim::http::http_control;
    use crate::sim::SimResponse;
    use std::net::IpAddr;

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

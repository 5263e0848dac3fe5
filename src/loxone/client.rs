//! Blocking HTTP client for one Miniserver (ureq), per `loxone-protocol.md` §2 and §3.1.
//!
//! Authentication follows [`AuthMode`]: with `auto` (the default) the client logs in with a
//! token on the first authenticated request ([`super::token`]: getkey2, encrypted getjwt) and
//! adds `?autht={hash}&user={user}` to every request, refreshing the token before it runs
//! out; when the firmware has no getjwt (404 or 400 to getjwt or getPublicKey) it falls back to
//! HTTP Basic auth with UTF-8 credentials for the life of the client. `token` never falls back,
//! `basic` never tries tokens. Every answer is checked on
//! both the HTTP status and the `LL.Code` of the envelope (either spelling `Code`/`code`,
//! string or number). The client honours the Miniserver's lock-out: after a 403 "temporarily
//! blocked" it sends nothing until the announced `<remaining>` seconds have passed.
//!
//! What a 401 means is decided in one place, [`Presented::refused`], by what the refused request
//! carried. A token the Miniserver no longer knows (it restarted: saving a program in Loxone
//! Config restarts it) is dropped and the request goes again once, after a fresh login, at once.
//! A refused password (Basic auth, or `getjwt`'s hash) is not tried again for
//! [`AUTH_RETRY_AFTER`], doubling with each refusal in a row up to [`AUTH_RETRY_MAX`]; logins
//! go one at a time, the live link's WebSocket login included ([`Client::login_gate`]), so
//! one round of refusals costs one failed login, and a confused caller cannot walk us into a
//! lock-out.

use std::fmt;
use std::io::Read;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use base64::Engine;
use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};
use serde_json::Value as Json;

pub use super::answer::{parse_number_prefix, LlAnswer, LoxoneError, Presented};
use super::config::{AuthMode, MiniserverConfig, Timeouts};
use super::crypto::{PublicKey, SessionKey};
use super::secured::{self, KeySalt};
use super::token::{Exchange, TokenAuth, TokenRequest};

/// Pause after the Miniserver refused our password, before it is tried again; it doubles with
/// each refusal in a row, up to [`AUTH_RETRY_MAX`].
pub const AUTH_RETRY_AFTER: Duration = Duration::from_secs(30);

/// Longest pause between tries of a password the Miniserver refuses (it may be put right on
/// the Miniserver meanwhile; a restart of the service tries at once).
pub const AUTH_RETRY_MAX: Duration = Duration::from_secs(15 * 60);

/// Largest answer checked for an `LL.Code` 401 in its envelope (command and token answers are
/// small; the structure file is not such an answer).
const MAX_ENVELOPE_BYTES: usize = 64 * 1024;

/// Largest answer accepted (structure files are 20-200 KB, at most a few MB).
const MAX_ANSWER_BYTES: u64 = 16 * 1024 * 1024;

/// Largest data answer read ([`Client::get_data`]: statistics; a month of one-minute V1
/// records of seven outputs is about 2.6 MB of XML); a larger answer is
/// [`LoxoneError::BadAnswer`].
pub const MAX_DATA_BYTES: u64 = 8 * 1024 * 1024;

/// Characters escaped in one path segment of a command (`hsv(20,100,50)` stays readable,
/// spaces, `/`, `?`, `#`, `%`, `+` (a space to some servers) and non-ASCII are escaped).
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'+')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}')
    .add(b'\\')
    .add(b'^')
    .add(b'|')
    .add(b'[')
    .add(b']');

/// `/jdev/cfg/api` contents.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiInfo {
    /// Serial number with colons, e.g. `50:4F:94:11:12:5F`.
    pub serial: String,
    /// Firmware version, e.g. `14.5.12.7`.
    pub version: String,
}

/// One Miniserver, reached over HTTP(S) with Basic auth.
pub struct Client {
    agent: ureq::Agent,
    base_url: String,
    user: String,
    authorization: String,
    password: String,
    mode: AuthMode,
    auth: Mutex<AuthState>,
    /// The Miniserver's RSA public key once fetched ([`Client::public_key`]).
    public_key: Mutex<Option<PublicKey>>,
    holds: Mutex<Holds>,
    /// Held for a login (HTTP token or the live link's WebSocket): one at a time, so a round
    /// of refusals costs one failed login ([`Client::login_gate`]).
    login: Mutex<()>,
    timeouts: Timeouts,
    /// When a request last went unanswered within its timeout (a hung Miniserver keeps its
    /// socket open and answers nothing); cleared by any answer. See [`Client::check_silent`].
    silent_since: Mutex<Option<Instant>>,
    /// Fetches pictures from the house's cameras (one at a time per camera).
    cameras: super::camera::Fetcher,
}

/// Token state of a client.
#[derive(Default)]
struct AuthState {
    token: Option<TokenAuth>,
    /// `auto` found no getjwt: Basic auth from now on.
    basic_fallback: bool,
    request: Option<TokenRequest>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum BlockReason {
    LockedOut,
    BadCredentials,
}

/// What keeps authenticated requests from being sent.
#[derive(Debug, Default)]
struct Holds {
    /// No authenticated request before this instant, for this reason.
    until: Option<(Instant, BlockReason)>,
    /// Password refusals in a row (a login that works resets it): each doubles the pause.
    refused: u32,
}

/// What one GET carries to say who sends it ([`Client::send`]).
#[derive(Clone, Copy)]
enum Carry<'a> {
    Nothing,
    /// A token query (`autht=...&user=...`) appended to the URL.
    Query(&'a str),
    /// An `Authorization` header (Basic auth).
    Header(&'a str),
}

/// How the next authenticated request proves who sends it.
enum Credential {
    /// HTTP Basic auth (the password on every request).
    Basic,
    /// `autht={hash}&user={user}`; `fresh` when the token was acquired for this request.
    Token { query: String, fresh: bool },
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("base_url", &self.base_url)
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client for `ms` with the given timeouts. Proxies from the environment are ignored (a
    /// Miniserver sits on the LAN) and redirects are not followed (ureq would drop the
    /// `Authorization` header on a cross-host redirect anyway).
    pub fn new(ms: &MiniserverConfig, timeouts: &Timeouts) -> Self {
        Self::with_auth(ms, timeouts, AuthMode::Auto)
    }

    /// [`Client::new`] with an explicit [`AuthMode`] (`[miniserver] auth`).
    pub fn with_auth(ms: &MiniserverConfig, timeouts: &Timeouts, mode: AuthMode) -> Self {
        let agent = super::agent(Some(timeouts.connect), timeouts.request);
        let token = base64::engine::general_purpose::STANDARD
            .encode(format!("{}:{}", ms.user, ms.password).as_bytes());
        Self {
            agent,
            base_url: ms.base_url.clone(),
            user: ms.user.clone(),
            authorization: format!("Basic {token}"),
            password: ms.password.clone(),
            mode,
            auth: Mutex::new(AuthState::default()),
            public_key: Mutex::new(None),
            holds: Mutex::new(Holds::default()),
            login: Mutex::new(()),
            timeouts: *timeouts,
            silent_since: Mutex::new(None),
            cameras: super::camera::Fetcher::new(super::camera::FetchLimits::default()),
        }
    }

    /// This client with other bounds for camera fetches (`[cameras]`).
    pub fn with_camera_limits(mut self, limits: super::camera::FetchLimits) -> Self {
        self.cameras = super::camera::Fetcher::new(limits);
        self
    }

    /// The camera fetcher (for [`crate::home::Controller::picture`]).
    pub fn cameras(&self) -> &super::camera::Fetcher {
        &self.cameras
    }

    /// The Miniserver's base URL.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The Miniserver user this client logs in as.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The password (for the WebSocket login of the live link; never logged).
    pub(crate) fn password(&self) -> &str {
        &self.password
    }

    /// `/jdev/cfg/api` (no auth): serial and firmware version. Reachability probe.
    pub fn api_info(&self) -> Result<ApiInfo, LoxoneError> {
        let ll = self.get_ll("jdev/cfg/api", false)?;
        let text = ll
            .value_text()
            .ok_or_else(|| LoxoneError::BadAnswer("cfg/api value is not a string".into()))?;
        // The value is pseudo-JSON with single quotes (loxone-protocol.md §2.2).
        let json: Json = serde_json::from_str(&text.replace('\'', "\""))
            .map_err(|e| LoxoneError::BadAnswer(format!("cfg/api value: {e}")))?;
        let field = |k: &str| json.get(k).and_then(Json::as_str).unwrap_or("").to_string();
        Ok(ApiInfo {
            serial: field("snr"),
            version: field("version"),
        })
    }

    /// `/data/LoxAPP3.json` (authenticated): the raw structure file.
    pub fn structure_file(&self) -> Result<Vec<u8>, LoxoneError> {
        let (status, body) = self.get("data/LoxAPP3.json", true)?;
        check_status(status, &body, "data/LoxAPP3.json", Presented::Nothing)?;
        Ok(body)
    }

    /// `/jdev/sps/LoxAPPversion3`: the structure file's `lastModified`.
    pub fn structure_version(&self) -> Result<String, LoxoneError> {
        let ll = self.get_ll("jdev/sps/LoxAPPversion3", true)?;
        ll.value_text()
            .ok_or_else(|| LoxoneError::BadAnswer("LoxAPPversion3 value is not a string".into()))
    }

    /// Sends the command `segments` (e.g. `["on"]`, `["manualPosition", "40"]`, a text as one
    /// segment) to `target` (a `uuidAction`, possibly with a sub-control suffix, or a block
    /// name): `jdev/sps/io/{target}/{segment}/...`, each segment encoded by [`segment`].
    pub fn command(&self, target: &str, segments: &[String]) -> Result<LlAnswer, LoxoneError> {
        let path = command_path("jdev/sps/io", target, segments)?;
        self.get_ll(&path, true)
    }

    /// `jdev/sys/getvisusalt/{user}`: a one-time key, salt and hash algorithm for hashing the
    /// visualisation password (loxone-protocol.md §2.4, §2.6).
    pub fn visu_salt(&self) -> Result<KeySalt, LoxoneError> {
        let path = format!("jdev/sys/getvisusalt/{}", segment(&self.user)?);
        let ll = self.get_ll(&path, true)?;
        KeySalt::from_value(&ll.value)
            .map_err(|m| LoxoneError::BadAnswer(format!("getvisusalt: {m}")))
    }

    /// Sends the command `segments` to the secured control `target` with the visualisation
    /// password: `getvisusalt`, then `jdev/sps/ios/{hash}/{target}/{segment}/...` (§2.4), built
    /// like [`Client::command`]. Code 500 (in the envelope or as HTTP status) is
    /// [`LoxoneError::WrongVisuPassword`]. Neither the password nor the hash appear in logs or
    /// error messages.
    pub fn secured_command(
        &self,
        target: &str,
        segments: &[String],
        visu_password: &str,
    ) -> Result<LlAnswer, LoxoneError> {
        // The path is checked before the salt is fetched: a refused segment sends nothing.
        command_path("", target, segments)?;
        let ks = self.visu_salt()?;
        let hash = secured::visu_hash(visu_password, &ks);
        let path = command_path(&format!("jdev/sps/ios/{hash}"), target, segments)?;
        match self.get_ll(&path, true) {
            Err(LoxoneError::Status { code: 500, .. }) => Err(LoxoneError::WrongVisuPassword),
            other => other,
        }
    }

    /// Reads the primary value of `target`: `jdev/sps/io/{target}` without a command.
    pub fn read_value(&self, target: &str) -> Result<LlAnswer, LoxoneError> {
        self.command(target, &[])
    }

    /// GETs `path` (authenticated) and reads its `LL` answer, checked as every command's.
    pub(crate) fn get_ll_at(&self, path: &str) -> Result<LlAnswer, LoxoneError> {
        self.get_ll(path, true)
    }

    /// GETs `path` (authenticated) for a data answer (statistics): the body, at most
    /// [`MAX_DATA_BYTES`] (a larger one is [`LoxoneError::BadAnswer`], read no further, as
    /// every bounded answer); an error status is an error as for every request.
    pub(crate) fn get_data(&self, path: &str) -> Result<Vec<u8>, LoxoneError> {
        let (status, body) = self.get_limited(path, true, MAX_DATA_BYTES)?;
        check_status(status, &body, &redact(path), Presented::Nothing)?;
        Ok(body)
    }

    /// Like [`Client::command`], for an answer of at most `max_bytes` (a larger one is
    /// [`LoxoneError::BadAnswer`], read no further): for answers whose size a stranger's
    /// Miniserver decides, such as the Message Center's entry list.
    pub fn command_bounded(
        &self,
        target: &str,
        segments: &[String],
        max_bytes: u64,
    ) -> Result<LlAnswer, LoxoneError> {
        let path = command_path("jdev/sps/io", target, segments)?;
        self.get_ll_limited(&path, true, max_bytes)
    }

    fn get_ll(&self, path: &str, auth: bool) -> Result<LlAnswer, LoxoneError> {
        self.get_ll_limited(path, auth, MAX_ANSWER_BYTES)
    }

    fn get_ll_limited(&self, path: &str, auth: bool, limit: u64) -> Result<LlAnswer, LoxoneError> {
        let (status, body) = self.get_limited(path, auth, limit)?;
        let shown = redact(path);
        // An authenticated request's 401 was decided in `get`; what is left carried nothing.
        check_status(status, &body, &shown, Presented::Nothing)?;
        ll_result(parse_ll(&body)?, &shown, Presented::Nothing)
    }

    /// `jdev/sps/io/{uuid}/securedDetails` (Structure File docs: "a separate, encrypted
    /// request"; intercom-alerts.md §1): the `value` of the answer, a JSON object or a string
    /// holding one (see [`super::camera::VideoInfo::parse`]). Sent inside command encryption
    /// (`jdev/sys/fenc/...`, the token query inside the encrypted command, the answer
    /// encrypted too) when the Miniserver has a public key; in plain otherwise (firmware
    /// without encryption answers 404 to `getPublicKey`). The answer carries camera passwords:
    /// it is never logged.
    pub fn secured_details(&self, uuid: &str) -> Result<Json, LoxoneError> {
        let cmd = command_path("jdev/sps/io", uuid, &["securedDetails".to_string()])?;
        match self.public_key() {
            Ok(pk) => self.get_ll_encrypted(&cmd, &pk).map(|ll| ll.value),
            Err(LoxoneError::NotFound(_) | LoxoneError::Status { code: 400, .. }) => {
                self.get_ll(&cmd, true).map(|ll| ll.value)
            }
            Err(e) => Err(e),
        }
    }

    /// `camimage/{uuid}/{timestamp}` (Structure File docs: the picture of a bell event of an
    /// Intercom, `timestamp` as in `lastBellEvents`, `YYYYMMDDHHMMSS`). Never encrypted (the
    /// protocol forbids it, "Communicating with the Miniserver" p. 25), authenticated as every
    /// request. Returns the body as sent (a JPEG when all is well), at most `max_bytes`; an
    /// unknown timestamp is [`LoxoneError::NotFound`].
    pub fn camimage(
        &self,
        uuid: &str,
        timestamp: &str,
        max_bytes: u64,
    ) -> Result<Vec<u8>, LoxoneError> {
        let path = command_path("camimage", uuid, &[timestamp.to_string()])?;
        let (status, body) = self.get_limited(&path, true, max_bytes)?;
        check_status(status, &body, &path, Presented::Nothing)?;
        // A Miniserver may answer an unknown picture with an `LL` envelope instead.
        if body.trim_ascii_start().starts_with(b"{") {
            if let Ok(ll) = parse_ll(&body) {
                return match ll_result(ll, &path, Presented::Nothing) {
                    Ok(_) => Err(LoxoneError::BadAnswer(format!(
                        "{path}: an LL answer, not a picture"
                    ))),
                    Err(e) => Err(e),
                };
            }
        }
        Ok(body)
    }

    /// An `LL` request inside command encryption over HTTP: `cmd` with this client's token
    /// query (if any) is AES-encrypted into `jdev/sys/fenc/{cipher}?sk={key}` and the encrypted
    /// answer decrypted; with Basic auth the header goes along. A 401 is booked as
    /// [`Client::get`] books one.
    fn get_ll_encrypted(&self, cmd: &str, pk: &PublicKey) -> Result<LlAnswer, LoxoneError> {
        self.check_blocked()?;
        let credential = self.credential()?;
        let (inner, carry, presented) = match &credential {
            Credential::Token { query, .. } => {
                (format!("{cmd}?{query}"), Carry::Nothing, Presented::Token)
            }
            Credential::Basic => (
                cmd.to_string(),
                Carry::Header(&self.authorization),
                Presented::Password,
            ),
        };
        let sk = SessionKey::try_new().map_err(|e| LoxoneError::BadAnswer(e.to_string()))?;
        let path = sk
            .http_command(pk, &inner, true)
            .map_err(|e| LoxoneError::BadAnswer(e.to_string()))?;
        let shown = redact(cmd);
        let (status, body) = self.send(&path, carry, MAX_ANSWER_BYTES)?;
        let answer = check_status(status, &body, &shown, presented).and_then(|()| {
            let body = if body.trim_ascii_start().starts_with(b"{") {
                body
            } else {
                sk.decrypt_answer(&body)
                    .map_err(|e| LoxoneError::BadAnswer(format!("{shown}: {e}")))?
                    .into_bytes()
            };
            ll_result(parse_ll(&body)?, &shown, presented)
        });
        match &answer {
            Err(LoxoneError::TokenUnknown) => {
                if let Credential::Token { query, .. } = &credential {
                    self.drop_token(query);
                }
            }
            Err(e @ LoxoneError::Unauthorized) => self.note(e),
            _ => {}
        }
        answer
    }

    /// Which authentication requests use now: `"token"`, `"basic"`, or `"none"` before the
    /// first authenticated request in `auto`/`token` mode.
    pub fn auth_in_use(&self) -> &'static str {
        let st = self.auth.lock().unwrap_or_else(|e| e.into_inner());
        match self.mode {
            AuthMode::Basic => "basic",
            _ if st.basic_fallback => "basic",
            _ if st.token.is_some() => "token",
            _ => "none",
        }
    }

    /// Logs in with a token now (otherwise done on the first authenticated request); in `auto`
    /// mode a firmware without getjwt switches to Basic auth and this returns `Ok`.
    pub fn login(&self) -> Result<(), LoxoneError> {
        self.check_blocked()?;
        self.credential().map(|_| ())
    }

    /// Refreshes the held token now (`refreshjwt`); `Ok` when no token is held. A token the
    /// Miniserver no longer knows is dropped ([`LoxoneError::TokenUnknown`]): the next
    /// authenticated request logs in again.
    pub fn refresh_token(&self) -> Result<(), LoxoneError> {
        let mut st = self.auth.lock().unwrap_or_else(|e| e.into_inner());
        let refreshed = match st.token.as_mut() {
            Some(t) => t.refresh(&mut self.exchange()),
            None => Ok(()),
        };
        if refreshed == Err(LoxoneError::TokenUnknown) {
            st.token = None;
        }
        refreshed
    }

    /// Expiry of the held token in Loxone seconds (since 2009-01-01 UTC), if any.
    pub fn token_valid_until(&self) -> Option<u64> {
        let st = self.auth.lock().unwrap_or_else(|e| e.into_inner());
        st.token.as_ref().map(|t| t.token().valid_until)
    }

    /// Ends the held token (`killtoken`), e.g. at shutdown; the next authenticated request
    /// logs in again. `Ok` when no token is held or the Miniserver no longer knew it.
    pub fn kill_token(&self) -> Result<(), LoxoneError> {
        let token = {
            let mut st = self.auth.lock().unwrap_or_else(|e| e.into_inner());
            st.token.take()
        };
        match token.map(|t| t.kill(&mut self.exchange())) {
            Some(Err(LoxoneError::TokenUnknown)) | None => Ok(()),
            Some(result) => result,
        }
    }

    /// The login conversation over this client's HTTP connection (for [`TokenAuth`]):
    /// requests carry no credentials of their own, encrypted ones use `fenc` with a fresh
    /// session key per request.
    pub fn exchange(&self) -> HttpExchange<'_> {
        HttpExchange { client: self }
    }

    /// How the next authenticated request proves who sends it: Basic auth, or the
    /// `autht=...&user=...` query of the held token, refreshing it when due and logging in when
    /// none is held (through [`Client::login_gate`]). A refresh the Miniserver refuses because
    /// it no longer knows the token drops it, and a fresh login follows at once.
    fn credential(&self) -> Result<Credential, LoxoneError> {
        if self.mode == AuthMode::Basic {
            return Ok(Credential::Basic);
        }
        let mut st = self.auth.lock().unwrap_or_else(|e| e.into_inner());
        if st.basic_fallback {
            return Ok(Credential::Basic);
        }
        let now = crate::home::time::loxone_now();
        if let Some(t) = st.token.as_mut() {
            if !t.is_expired(now) && t.needs_refresh(now) {
                match t.refresh(&mut self.exchange()) {
                    Ok(()) => {}
                    Err(LoxoneError::TokenUnknown) => {
                        log::info!("the Miniserver no longer knows our token; logging in again");
                        st.token = None;
                    }
                    Err(e) => log::warn!("token refresh failed: {e}"),
                }
            }
        }
        match st.token.as_ref() {
            Some(t) if !t.is_expired(now) => {
                return Ok(Credential::Token {
                    query: t.autht_query(),
                    fresh: false,
                })
            }
            Some(_) => st.token = None,
            None => {}
        }
        let _login = self.login_gate()?;
        let req = st.request.get_or_insert_with(TokenRequest::default).clone();
        match TokenAuth::acquire(&mut self.exchange(), &self.user, &self.password, &req) {
            Ok(t) => {
                let query = t.autht_query();
                st.token = Some(t);
                Ok(Credential::Token { query, fresh: true })
            }
            Err(LoxoneError::NotFound(_) | LoxoneError::Status { code: 400, .. })
                if self.mode == AuthMode::Auto =>
            {
                log::info!("the Miniserver has no token login (getjwt); using HTTP Basic auth");
                st.basic_fallback = true;
                Ok(Credential::Basic)
            }
            Err(e) => Err(e),
        }
    }

    /// Drops the held token if it is the one `query` carried (another request may have logged
    /// in again meanwhile).
    fn drop_token(&self, query: &str) {
        let mut st = self.auth.lock().unwrap_or_else(|e| e.into_inner());
        if st.token.as_ref().is_some_and(|t| t.autht_query() == query) {
            st.token = None;
        }
    }

    /// Forgets the cached public key: the Miniserver could not decrypt a request made with it
    /// (its key changed), so the next login fetches it again.
    pub(crate) fn forget_public_key(&self) {
        *self.public_key.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// The Miniserver's RSA public key (`jdev/sys/getPublicKey`, cached), for command encryption
    /// and the WebSocket key exchange.
    pub fn public_key(&self) -> Result<PublicKey, LoxoneError> {
        if let Some(pk) = &*self.public_key.lock().unwrap_or_else(|e| e.into_inner()) {
            return Ok(pk.clone());
        }
        // Fetched without the lock held: two threads may both fetch it once.
        let ll = self.get_ll("jdev/sys/getPublicKey", false)?;
        let text = ll.value_text().unwrap_or_default();
        let pk = PublicKey::parse(&text).map_err(|e| LoxoneError::BadAnswer(e.to_string()))?;
        *self.public_key.lock().unwrap_or_else(|e| e.into_inner()) = Some(pk.clone());
        Ok(pk)
    }

    /// GETs `path` (relative to the base URL); returns status and body. With `auth` the
    /// request carries the held token (or Basic auth) and refuses to send while a lock-out or
    /// password back-off is in force; its 401 (HTTP status or `LL.Code`) is decided by
    /// [`Presented::refused`] and returned as that error. A token the Miniserver no longer
    /// knows is dropped and the request sent once more with a fresh login: a refused request
    /// did nothing, so sending it again is safe. A token issued for this very request and
    /// refused all the same counts as a refused password (no loop of logins).
    fn get(&self, path: &str, auth: bool) -> Result<(u16, Vec<u8>), LoxoneError> {
        self.get_limited(path, auth, MAX_ANSWER_BYTES)
    }

    /// [`Client::get`] for a body of at most `limit` bytes (a larger one is
    /// [`LoxoneError::BadAnswer`]).
    fn get_limited(
        &self,
        path: &str,
        auth: bool,
        limit: u64,
    ) -> Result<(u16, Vec<u8>), LoxoneError> {
        if !auth {
            return self.send(path, Carry::Nothing, limit);
        }
        let mut again = false;
        loop {
            self.check_blocked()?;
            let credential = self.credential()?;
            let (status, body) = match &credential {
                Credential::Basic => self.send(path, Carry::Header(&self.authorization), limit)?,
                Credential::Token { query, .. } => self.send(path, Carry::Query(query), limit)?,
            };
            if status != 401 && envelope_code(&body) != Some(401) {
                if matches!(credential, Credential::Basic) && (200..300).contains(&status) {
                    self.note_login();
                }
                return Ok((status, body));
            }
            let presented = match &credential {
                Credential::Token { fresh: false, .. } if !again => Presented::Token,
                Credential::Token { .. } => {
                    log::warn!("the Miniserver refused a token it has just issued");
                    Presented::Password
                }
                Credential::Basic => Presented::Password,
            };
            match presented.refused(&redact(path)) {
                LoxoneError::TokenUnknown => {
                    log::info!(
                        "the Miniserver no longer knows our token (restarted?); logging in again"
                    );
                    if let Credential::Token { query, .. } = &credential {
                        self.drop_token(query);
                    }
                    again = true;
                }
                e => {
                    self.note(&e);
                    return Err(e);
                }
            }
        }
    }

    /// Sends one GET of `path` carrying `carry`. Returns status and body (at most `limit`
    /// bytes; a larger body is [`LoxoneError::BadAnswer`], read no further than `limit + 1`).
    /// A 403 announcing a lock-out is remembered ([`Client::note`]).
    fn send(
        &self,
        path: &str,
        carry: Carry<'_>,
        limit: u64,
    ) -> Result<(u16, Vec<u8>), LoxoneError> {
        self.check_silent()?;
        let url = match carry {
            Carry::Query(q) => {
                let sep = if path.contains('?') { '&' } else { '?' };
                format!("{}/{}{sep}{q}", self.base_url, path)
            }
            _ => format!("{}/{}", self.base_url, path),
        };
        let mut req = self.agent.get(&url);
        if let Carry::Header(header) = carry {
            req = req.header("Authorization", header);
        }
        let mut resp = match req.call() {
            Ok(resp) => resp,
            Err(e) => {
                let timed_out = matches!(e, ureq::Error::Timeout(_));
                let e = map_transport_error(e, &self.timeouts);
                if timed_out {
                    *self.silent_since.lock().unwrap_or_else(|p| p.into_inner()) =
                        Some(Instant::now());
                }
                return Err(e);
            }
        };
        *self.silent_since.lock().unwrap_or_else(|p| p.into_inner()) = None;
        let status = resp.status().as_u16();
        let mut body = Vec::new();
        resp.body_mut()
            .as_reader()
            .take(limit.saturating_add(1))
            .read_to_end(&mut body)
            .map_err(|e| LoxoneError::Connection(format!("reading the answer: {e}")))?;
        if body.len() as u64 > limit {
            return Err(LoxoneError::BadAnswer(format!(
                "the answer to /{} is larger than {limit} bytes",
                redact(path)
            )));
        }
        log::debug!("GET /{} -> {status} ({} bytes)", redact(path), body.len());
        if status == 403 {
            if let Some(remaining_secs) = lockout_remaining(&body) {
                self.note(&LoxoneError::LockedOut { remaining_secs });
            }
        }
        Ok((status, body))
    }

    /// Fails at once, for one request timeout after a request went unanswered: a hung
    /// Miniserver would hold every further request (and the caller's tool call) for another
    /// full timeout. After that window the next request asks again, and any answer ends it.
    fn check_silent(&self) -> Result<(), LoxoneError> {
        let since = *self.silent_since.lock().unwrap_or_else(|p| p.into_inner());
        match since {
            Some(at) if at.elapsed() < self.timeouts.request => {
                Err(LoxoneError::Connection(format!(
                    "the Miniserver left a request unanswered for {} s (miniserver.request_timeout_secs); asking again in {} s",
                    self.timeouts.request.as_secs_f64(),
                    (self.timeouts.request - at.elapsed()).as_secs_f64().ceil()
                )))
            }
            _ => Ok(()),
        }
    }

    /// Why requests to the Miniserver are refused before they are sent, if they are now:
    /// [`LoxoneError::LockedOut`] with the seconds left of a lock-out the Miniserver announced
    /// (403 with `<remaining>`), or [`LoxoneError::Unauthorized`] during the back-off after a
    /// refused password. For `/health`; [`Client::blocked_for`] adds the time left.
    pub fn blocked(&self) -> Option<LoxoneError> {
        self.check_blocked().err()
    }

    /// [`Client::blocked`] with how long the hold lasts from now.
    pub fn blocked_for(&self) -> Option<(LoxoneError, Duration)> {
        let e = self.check_blocked().err()?;
        let h = self.holds.lock().unwrap_or_else(|e| e.into_inner());
        let left = h
            .until
            .map(|(until, _)| until.saturating_duration_since(Instant::now()))
            .unwrap_or_default();
        Some((e, left))
    }

    fn check_blocked(&self) -> Result<(), LoxoneError> {
        let mut h = self.holds.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((until, reason)) = h.until {
            let now = Instant::now();
            if now < until {
                let remaining_secs = (until - now).as_secs_f64().ceil() as u64;
                return Err(match reason {
                    BlockReason::LockedOut => LoxoneError::LockedOut { remaining_secs },
                    BlockReason::BadCredentials => LoxoneError::Unauthorized,
                });
            }
            // Passed; the count of refusals stays until a login works.
            h.until = None;
        }
        Ok(())
    }

    /// Waits for any other login (HTTP token, the live link's WebSocket) to end, then refuses
    /// while a lock-out or a password back-off is in force (a login that ran meanwhile may
    /// have started one). Hold the guard for the whole login: a round of refusals then costs
    /// one failed login however many requests and links wanted one.
    pub(crate) fn login_gate(&self) -> Result<MutexGuard<'_, ()>, LoxoneError> {
        let guard = self.login.lock().unwrap_or_else(|e| e.into_inner());
        self.check_blocked()?;
        Ok(guard)
    }

    /// Remembers what an answer means for the requests after it, whoever asked (HTTP
    /// requests, the token conversation, the live link's WebSocket login):
    /// [`LoxoneError::Unauthorized`] (the password was refused, see [`Presented::refused`])
    /// starts the back-off, [`AUTH_RETRY_AFTER`] doubled for each refusal in a row up to
    /// [`AUTH_RETRY_MAX`]; [`LoxoneError::LockedOut`] holds everything for the announced
    /// seconds. Other errors change nothing.
    pub(crate) fn note(&self, e: &LoxoneError) {
        let mut h = self.holds.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        match e {
            LoxoneError::Unauthorized => {
                h.refused = h.refused.saturating_add(1);
                let pause = AUTH_RETRY_AFTER
                    .saturating_mul(1u32 << (h.refused - 1).min(16))
                    .min(AUTH_RETRY_MAX);
                log::warn!(
                    "Miniserver rejected user {:?} ({} in a row); not retrying for {} s",
                    self.user,
                    h.refused,
                    pause.as_secs()
                );
                h.until = Some((now + pause, BlockReason::BadCredentials));
            }
            LoxoneError::LockedOut { remaining_secs } => {
                log::warn!(
                    "Miniserver blocks this client for {remaining_secs} s (too many failed logins)"
                );
                h.until = Some((
                    now + Duration::from_secs(*remaining_secs),
                    BlockReason::LockedOut,
                ));
            }
            _ => {}
        }
    }

    /// A login worked (a token issued for the password, or a Basic request answered): the
    /// password back-off starts from [`AUTH_RETRY_AFTER`] again.
    pub(crate) fn note_login(&self) {
        let mut h = self.holds.lock().unwrap_or_else(|e| e.into_inner());
        h.refused = 0;
        if matches!(h.until, Some((_, BlockReason::BadCredentials))) {
            h.until = None;
        }
    }
}

/// [`Exchange`] over HTTP for the token conversation (see [`Client::exchange`]). Refuses to
/// send during a lock-out or credential back-off; a 401 starts the back-off.
pub struct HttpExchange<'a> {
    client: &'a Client,
}

impl fmt::Debug for HttpExchange<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HttpExchange")
    }
}

impl Exchange for HttpExchange<'_> {
    fn request(&mut self, cmd: &str, encrypted: bool) -> Result<LlAnswer, LoxoneError> {
        let c = self.client;
        c.check_blocked()?;
        let shown = redact_token_cmd(cmd);
        let presented = Presented::by_command(cmd);
        let (status, body, session) = if encrypted {
            let pk = c.public_key()?;
            let sk = SessionKey::try_new().map_err(|e| LoxoneError::BadAnswer(e.to_string()))?;
            let path = sk
                .http_command(&pk, cmd, true)
                .map_err(|e| LoxoneError::BadAnswer(e.to_string()))?;
            let (status, body) = c.send(&path, Carry::Nothing, MAX_ANSWER_BYTES)?;
            (status, body, Some(sk))
        } else {
            let (status, body) = c.send(cmd, Carry::Nothing, MAX_ANSWER_BYTES)?;
            (status, body, None)
        };
        let answer = check_status(status, &body, &shown, presented).and_then(|()| {
            let body = match &session {
                Some(sk) if !body.trim_ascii_start().starts_with(b"{") => sk
                    .decrypt_answer(&body)
                    .map_err(|e| LoxoneError::BadAnswer(format!("{shown}: {e}")))?
                    .into_bytes(),
                _ => body,
            };
            ll_result(parse_ll(&body)?, &shown, presented)
        });
        match &answer {
            Ok(_) if presented == Presented::Password => c.note_login(),
            Err(e @ (LoxoneError::Unauthorized | LoxoneError::Status { code: 401, .. }))
                if session.is_some() =>
            {
                // The Miniserver may not have decrypted it: its key may have changed.
                c.forget_public_key();
                c.note(e);
            }
            Err(e @ LoxoneError::Unauthorized) => c.note(e),
            _ => {}
        }
        answer
    }
}

/// `jdev/sys/getjwt/<redacted>/...`: hides the hash of token commands.
fn redact_token_cmd(cmd: &str) -> String {
    let parts: Vec<&str> = cmd.split('/').collect();
    match parts.as_slice() {
        ["jdev", "sys", op, _hash, rest @ ..]
            if matches!(*op, "getjwt" | "refreshjwt" | "checktoken" | "killtoken") =>
        {
            format!("jdev/sys/{op}/<redacted>/{}", rest.join("/"))
        }
        _ => cmd.to_string(),
    }
}

/// Hides the token of an `autht=` query or a secured-command hash from logs and errors.
fn redact(path: &str) -> String {
    let path = match path.find("autht=") {
        Some(i) => format!("{}autht=<redacted>", &path[..i]),
        None => path.to_string(),
    };
    match path.find("sps/ios/") {
        Some(i) => {
            let start = i + "sps/ios/".len();
            let end = path[start..].find('/').map_or(path.len(), |j| start + j);
            format!("{}<redacted>{}", &path[..start], &path[end..])
        }
        None => path,
    }
}

/// One value as exactly one URL path segment: every character outside the unreserved set and
/// a few harmless ones (`hsv(20,100,50)` stays readable) is percent-encoded (UTF-8), `/`, `?`,
/// `#`, `%`, spaces and non-ASCII included. The only function that puts anything into a
/// command URL. Refused ([`LoxoneError::InvalidSegment`]): an empty segment and a segment of
/// dots only (`.`, `..`): HTTP stacks drop or collapse those, escaped (`%2E%2E`) or not, which
/// would change the path.
pub fn segment(value: &str) -> Result<String, LoxoneError> {
    if value.is_empty() || value.chars().all(|c| c == '.') {
        return Err(LoxoneError::InvalidSegment(format!(
            "{value:?} cannot be sent as a URL path segment"
        )));
    }
    Ok(utf8_percent_encode(value, SEGMENT).to_string())
}

/// `{prefix}/{target}/{segment}/...` (`prefix` may be empty): the target's own parts (a
/// `uuidAction` with an optional sub-control suffix, from the structure file) and each of
/// `segments`, every one through [`segment`].
fn command_path(prefix: &str, target: &str, segments: &[String]) -> Result<String, LoxoneError> {
    let mut path = prefix.to_string();
    for part in target
        .split('/')
        .map(str::to_string)
        .chain(segments.iter().cloned())
    {
        if !path.is_empty() {
            path.push('/');
        }
        path.push_str(&segment(&part)?);
    }
    Ok(path)
}

/// A transport error in words; a timeout names the setting that bounds it.
fn map_transport_error(e: ureq::Error, timeouts: &Timeouts) -> LoxoneError {
    LoxoneError::Connection(match e {
        ureq::Error::Timeout(ureq::Timeout::Connect) => format!(
            "no connection within {} s (miniserver.connect_timeout_secs)",
            timeouts.connect.as_secs_f64()
        ),
        ureq::Error::Timeout(t) => format!(
            "no answer within {} s (miniserver.request_timeout_secs; {t} timeout)",
            timeouts.request.as_secs_f64()
        ),
        ureq::Error::HostNotFound => "host not found".into(),
        ureq::Error::Io(io) => io.to_string(),
        other => other.to_string(),
    })
}

/// Maps an HTTP status (and the HTML error body the Miniserver sends) to an error; a 401 by
/// what the request carried ([`Presented::refused`]).
fn check_status(
    status: u16,
    body: &[u8],
    path: &str,
    presented: Presented,
) -> Result<(), LoxoneError> {
    match status {
        200..=299 => Ok(()),
        401 => Err(presented.refused(path)),
        403 => match lockout_remaining(body) {
            Some(remaining_secs) => Err(LoxoneError::LockedOut { remaining_secs }),
            None => Err(LoxoneError::Forbidden(html_error_text(body))),
        },
        404 => Err(LoxoneError::NotFound(path.to_string())),
        503 => Err(LoxoneError::Unavailable),
        code => Err(LoxoneError::Status {
            code,
            message: html_error_text(body),
        }),
    }
}

/// The `LL` answer as a result: code 200 is `Ok`, other codes are errors, a 401 by what the
/// request carried ([`Presented::refused`]).
fn ll_result(ll: LlAnswer, shown: &str, presented: Presented) -> Result<LlAnswer, LoxoneError> {
    match ll.code {
        200 => Ok(ll),
        401 => Err(presented.refused(shown)),
        404 => Err(LoxoneError::NotFound(shown.to_string())),
        503 => Err(LoxoneError::Unavailable),
        code => Err(LoxoneError::Status {
            code,
            message: format!("{shown}: {}", ll.value_text().unwrap_or_default()),
        }),
    }
}

/// The `LL.Code` of a small answer that is an `LL` envelope (a 401 may come inside one with
/// HTTP status 200, loxone-protocol.md §2.7); `None` for anything else.
fn envelope_code(body: &[u8]) -> Option<u16> {
    if body.len() > MAX_ENVELOPE_BYTES || !body.trim_ascii_start().starts_with(b"{") {
        return None;
    }
    parse_ll(body).ok().map(|ll| ll.code)
}

/// `<remaining>38</remaining>` of a 403 "temporarily blocked" body (loxone-protocol.md §2.7).
fn lockout_remaining(body: &[u8]) -> Option<u64> {
    let text = String::from_utf8_lossy(body);
    let start = text.find("<remaining>")? + "<remaining>".len();
    let end = text[start..].find('<')? + start;
    text[start..end].trim().parse().ok()
}

/// The human text of an HTML error body, tags removed, at most 200 characters.
fn html_error_text(body: &[u8]) -> String {
    super::answer::plain_text(&String::from_utf8_lossy(body), 200)
}

/// Parses an `{"LL": {...}}` envelope: `Code` or `code`, string or number.
pub fn parse_ll(body: &[u8]) -> Result<LlAnswer, LoxoneError> {
    let json: Json = serde_json::from_slice(body)
        .map_err(|e| LoxoneError::BadAnswer(format!("not JSON: {e}")))?;
    let ll = json
        .get("LL")
        .and_then(Json::as_object)
        .ok_or_else(|| LoxoneError::BadAnswer("no LL object".into()))?;
    let code_v = ll
        .get("Code")
        .or_else(|| ll.get("code"))
        .ok_or_else(|| LoxoneError::BadAnswer("LL has no Code".into()))?;
    let code = match code_v {
        Json::String(s) => s.trim().parse::<u16>().ok(),
        Json::Number(n) => n.as_u64().and_then(|n| u16::try_from(n).ok()),
        _ => None,
    }
    .ok_or_else(|| LoxoneError::BadAnswer(format!("LL.Code {code_v} is not a status code")))?;
    let mut extra = serde_json::Map::new();
    for (k, v) in ll {
        if !matches!(k.as_str(), "control" | "value" | "Code" | "code") {
            extra.insert(k.clone(), v.clone());
        }
    }
    Ok(LlAnswer {
        control: ll
            .get("control")
            .and_then(Json::as_str)
            .unwrap_or_default()
            .to_string(),
        value: ll.get("value").cloned().unwrap_or(Json::Null),
        code,
        extra,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    impl LlAnswer {
        /// `value` as a number; trailing unit text is ignored (`"31.0 Liter"` -> 31.0).
        fn value_number(&self) -> Option<f64> {
            match &self.value {
                Json::Number(n) => n.as_f64(),
                Json::String(s) => parse_number_prefix(s),
                Json::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
                _ => None,
            }
        }
    }

    #[test]
    fn ll_envelope_accepts_both_spellings_and_types() {
        let a = parse_ll(
            br#"{"LL": { "control": "dev/sps/io/Akkustand/75", "value": "75.000", "Code": "200"}}"#,
        )
        .unwrap();
        assert_eq!(a.code, 200);
        assert_eq!(a.value_number(), Some(75.0));
        let b = parse_ll(
            br#"{"LL":{"control":"jdev/sys/getkey2/showroom","code":200,"value":{"key":"41"}}}"#,
        )
        .unwrap();
        assert_eq!(b.code, 200);
        assert!(b.value.is_object());
        let c = parse_ll(br#"{"LL":{"control":"x","value":"1","Code":"404"}}"#).unwrap();
        assert_eq!(c.code, 404);
    }

    #[test]
    fn ll_envelope_errors_are_clear() {
        assert!(
            matches!(parse_ll(b"<html>"), Err(LoxoneError::BadAnswer(m)) if m.contains("not JSON"))
        );
        assert!(matches!(parse_ll(b"{}"), Err(LoxoneError::BadAnswer(m)) if m.contains("LL")));
        assert!(
            matches!(parse_ll(br#"{"LL":{"value":"1"}}"#), Err(LoxoneError::BadAnswer(m)) if m.contains("Code"))
        );
        assert!(matches!(
            parse_ll(br#"{"LL":{"Code":"abc"}}"#),
            Err(LoxoneError::BadAnswer(_))
        ));
    }

    #[test]
    fn units_are_stripped_from_numbers() {
        assert_eq!(parse_number_prefix("31.0 Liter"), Some(31.0));
        assert_eq!(parse_number_prefix("-3.5°"), Some(-3.5));
        assert_eq!(parse_number_prefix("abc"), None);
    }

    #[test]
    fn lockout_body_gives_remaining_seconds() {
        let body = br#"<html><head><title>error</title></head><body><errorcode>403</errorcode> <errordetail><errortext>Forbidden</errortext> <description>IP 192.168.2.240 temporarily blocked, too many failed login attempts;</description> <remaining>38</remaining></errordetail></body></html>"#;
        assert_eq!(lockout_remaining(body), Some(38));
        assert_eq!(
            check_status(403, body, "x", Presented::Password),
            Err(LoxoneError::LockedOut { remaining_secs: 38 })
        );
        let plain = br#"<html><head><title>error</title></head><body><errorcode>401</errorcode> <errordetail>Unauthorized</errordetail></body></html>"#;
        assert_eq!(
            check_status(401, plain, "x", Presented::Password),
            Err(LoxoneError::Unauthorized)
        );
        assert_eq!(html_error_text(plain), "error 401 Unauthorized");
    }

    /// A client for an address nothing is sent to in these tests.
    fn idle_client() -> Client {
        let ms = MiniserverConfig {
            base_url: "http://127.0.0.1:9".into(),
            user: "u".into(),
            password: "p".into(),
        };
        Client::new(&ms, &Timeouts::default())
    }

    #[test]
    fn the_password_back_off_doubles_up_to_its_cap_and_a_login_resets_it() {
        let c = idle_client();
        assert_eq!(c.blocked_for(), None);
        let mut want = AUTH_RETRY_AFTER;
        for _ in 0..8 {
            c.note(&LoxoneError::Unauthorized);
            let (e, left) = c.blocked_for().expect("held");
            assert_eq!(e, LoxoneError::Unauthorized);
            assert!(
                left <= want && left + Duration::from_secs(5) > want,
                "{left:?} {want:?}"
            );
            assert!(c.login_gate().is_err());
            want = (want * 2).min(AUTH_RETRY_MAX);
        }
        assert_eq!(want, AUTH_RETRY_MAX);
        c.note_login();
        assert_eq!(c.blocked_for(), None);
        assert!(c.login_gate().is_ok());
        c.note(&LoxoneError::Unauthorized);
        let (_, left) = c.blocked_for().unwrap();
        assert!(left <= AUTH_RETRY_AFTER, "{left:?}");
        // A lost token or an undecryptable request holds nothing.
        let c = idle_client();
        c.note(&LoxoneError::TokenUnknown);
        c.note(&Presented::Nothing.refused("x"));
        assert_eq!(c.blocked_for(), None);
        // A lock-out holds for its seconds.
        c.note(&LoxoneError::LockedOut { remaining_secs: 7 });
        assert_eq!(
            c.blocked(),
            Some(LoxoneError::LockedOut { remaining_secs: 7 })
        );
    }

    #[test]
    fn a_401_in_a_small_envelope_is_found() {
        assert_eq!(
            envelope_code(br#"{"LL":{"control":"x","value":"","Code":"401"}}"#),
            Some(401)
        );
        assert_eq!(envelope_code(b"<html>401</html>"), None);
        assert_eq!(envelope_code(br#"{"lastModified":"x"}"#), None);
    }

    #[test]
    fn secured_hashes_are_redacted() {
        assert_eq!(
            redact("jdev/sps/ios/abcdef0123/0f86-0200/off"),
            "jdev/sps/ios/<redacted>/0f86-0200/off"
        );
        assert_eq!(redact("jdev/sps/ios/abcdef"), "jdev/sps/ios/<redacted>");
        assert_eq!(redact("jdev/sps/io/x/on"), "jdev/sps/io/x/on");
        assert_eq!(
            redact("jdev/sps/io/x?autht=t&user=u"),
            "jdev/sps/io/x?autht=<redacted>"
        );
    }

    #[test]
    fn command_segments_are_encoded() {
        let segs = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            command_path("jdev/sps/io", "0f86-0200/masterValue", &segs(&["40"])).unwrap(),
            "jdev/sps/io/0f86-0200/masterValue/40"
        );
        assert_eq!(segment("Guten Morgen").unwrap(), "Guten%20Morgen");
        assert_eq!(segment("hsv(20,100,50)").unwrap(), "hsv(20,100,50)");
        assert_eq!(segment("Küche").unwrap(), "K%C3%BCche");
        assert_eq!(segment("x/../a?b#c%d").unwrap(), "x%2F..%2Fa%3Fb%23c%25d");
        assert!(segment("..").is_err());
        assert!(segment(".").is_err());
        assert!(segment("").is_err());
        assert_eq!(segment("...x").unwrap(), "...x");
        assert_eq!(command_path("", "u", &segs(&["a/b"])).unwrap(), "u/a%2Fb");
    }
}

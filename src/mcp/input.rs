//! MCP 2026-07-28 multi round-trip requests (`basic/patterns/mrtr`, SEP-2322): instead of
//! sending `elicitation/create`, `sampling/createMessage` or `roots/list` to the client in the
//! middle of a request, the server answers `tools/call`, `prompts/get` or `resources/read`
//! with an `InputRequiredResult`:
//!
//! ```json
//! {"resultType": "input_required",
//!  "inputRequests": {"confirm": {"method": "elicitation/create", "params": {...}}},
//!  "requestState": "<opaque>"}
//! ```
//!
//! and the client retries the same request (a new JSON-RPC id) with `inputResponses` (the
//! client's result for each key) and the `requestState` echoed verbatim.
//!
//! How a handler uses it: a modern request of one of those three methods carries a [`Round`]
//! in [`RequestContext::input`](super::RequestContext::input). The handler reads the answers
//! of this retry ([`Round::response`], [`Round::elicitation`]) and the state it sealed in the
//! previous round ([`Round::state`]); to ask, it returns `Err(round.ask(InputRequired))`. The
//! server ([`begin`] before dispatch, [`finish`] after it) turns that into the result.
//!
//! `requestState` is the one thing that makes a retry trustworthy. It is sealed here, never by
//! a handler: HMAC-SHA256 under a key drawn at process start ([`Sealer`]), over the handler's
//! state, an expiry ([`STATE_LIFETIME`] unless the handler asks for less), and a digest of what
//! the state is good for ([`Binding`]: the caller's identity, the method, the tool or prompt
//! name or resource URI, and the arguments). A state that was altered, has expired, or is
//! presented by another caller or on another request is refused with -32602 before the handler
//! runs. Sealed, not encrypted: the client can read the state, so it never holds a secret. It
//! does not make a state single-use: a handler for which an answer must count once keeps that
//! server-side (the pending confirmations of [`super::confirm`]).
//!
//! `inputResponses` are client input like the arguments: at most [`MAX_INPUT_RESPONSES`]
//! entries and [`MAX_INPUT_RESPONSE_BYTES`] bytes, each a JSON object (else -32602); keys the
//! handler did not ask for are ignored.
//! A handler may only ask for what the client declared in `_meta` `clientCapabilities`
//! ([`Round::can_ask`]); [`finish`] refuses anything else (-32021), so an undeclared kind never
//! reaches the wire.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use hmac::{Hmac, Mac};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use super::jsonrpc::RpcError;

/// The requests that may be answered with an `InputRequiredResult` (spec: "Supported
/// Requests"); no other request gets a [`Round`].
pub const METHODS: [&str; 3] = ["tools/call", "prompts/get", "resources/read"];

/// How long a `requestState` is accepted after it was issued (2 minutes), unless the handler
/// asked for less ([`InputRequired::lifetime`]).
pub const STATE_LIFETIME: Duration = Duration::from_secs(120);

/// Longest `requestState` accepted (bytes); a longer one is -32602 before it is decoded.
pub const MAX_STATE_BYTES: usize = 16 * 1024;

/// Most entries of one `inputResponses`; more is -32602.
pub const MAX_INPUT_RESPONSES: usize = 32;

/// Most bytes of one `inputResponses` as JSON (16 KiB: the answers this server asks for are a
/// form's few fields); more is -32602, so no client makes a request's round hold more.
pub const MAX_INPUT_RESPONSE_BYTES: usize = 16 * 1024;

/// Whether `value` written as JSON takes at most `limit` bytes (written into a counter that
/// stops at the limit, never into memory).
fn fits(value: &Value, limit: usize) -> bool {
    struct Count(usize, usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            if self.0 > self.1 {
                return Err(std::io::ErrorKind::FileTooLarge.into());
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    serde_json::to_writer(Count(0, limit), value).is_ok()
}

/// The code of the marker error [`Round::ask`] returns (never sent: [`finish`] replaces it).
const ASKED: i64 = -32099;

/// What kind of input a request asks the client for, and the client capability it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    /// `elicitation/create` in form mode: `clientCapabilities.elicitation` (an empty object, or
    /// one naming `form`).
    ElicitationForm,
    /// `elicitation/create` in URL mode: `clientCapabilities.elicitation.url`.
    ElicitationUrl,
    /// `sampling/createMessage`: `clientCapabilities.sampling`.
    Sampling,
    /// `roots/list`: `clientCapabilities.roots`.
    Roots,
}

impl InputKind {
    /// The client capability it needs (`elicitation`, `sampling`, `roots`).
    pub fn capability(self) -> &'static str {
        match self {
            InputKind::ElicitationForm | InputKind::ElicitationUrl => "elicitation",
            InputKind::Sampling => "sampling",
            InputKind::Roots => "roots",
        }
    }

    /// Whether the client capabilities `caps` (an object) declare this kind.
    pub fn declared_in(self, caps: &Value) -> bool {
        match self {
            InputKind::ElicitationForm => match caps.get("elicitation") {
                // `{}` means form mode (spec: backwards compatibility).
                Some(Value::Object(e)) => e.is_empty() || e.contains_key("form"),
                _ => false,
            },
            InputKind::ElicitationUrl => caps
                .get("elicitation")
                .and_then(|e| e.get("url"))
                .is_some_and(Value::is_object),
            InputKind::Sampling => caps.get("sampling").is_some_and(Value::is_object),
            InputKind::Roots => caps.get("roots").is_some_and(Value::is_object),
        }
    }
}

/// One server-to-client request inside `inputRequests`.
#[derive(Debug, Clone, PartialEq)]
pub enum InputRequest {
    /// A form for the user: `message` and a flat `requestedSchema` of primitive properties.
    Elicitation {
        message: String,
        requested_schema: Value,
    },
    /// A page the user opens (`mode: "url"`): `url`, and `elicitation_id` naming the
    /// interaction.
    ElicitationUrl {
        message: String,
        url: String,
        elicitation_id: String,
    },
    /// `sampling/createMessage` with these params (`messages`, `maxTokens`, ...).
    Sampling(Value),
    /// `roots/list`.
    ListRoots,
}

impl InputRequest {
    /// Its kind (and so the capability it needs).
    pub fn kind(&self) -> InputKind {
        match self {
            InputRequest::Elicitation { .. } => InputKind::ElicitationForm,
            InputRequest::ElicitationUrl { .. } => InputKind::ElicitationUrl,
            InputRequest::Sampling(_) => InputKind::Sampling,
            InputRequest::ListRoots => InputKind::Roots,
        }
    }

    /// The wire form: `{"method": ..., "params": ...}`.
    pub fn to_json(&self) -> Value {
        match self {
            InputRequest::Elicitation {
                message,
                requested_schema,
            } => json!({"method": "elicitation/create", "params": {
                "mode": "form", "message": message, "requestedSchema": requested_schema}}),
            InputRequest::ElicitationUrl {
                message,
                url,
                elicitation_id,
            } => json!({"method": "elicitation/create", "params": {
                "mode": "url", "message": message, "url": url, "elicitationId": elicitation_id}}),
            InputRequest::Sampling(params) => {
                json!({"method": "sampling/createMessage", "params": params})
            }
            InputRequest::ListRoots => json!({"method": "roots/list", "params": {}}),
        }
    }
}

/// What a handler asks for: the input requests by key, and the state it wants back (sealed
/// into `requestState`, returned by [`Round::state`] on the retry).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InputRequired {
    pub requests: BTreeMap<String, InputRequest>,
    /// Handler state (any JSON; readable by the client, so no secrets).
    pub state: Option<Value>,
    /// How long the retry may take; `None`: [`STATE_LIFETIME`] (longer values are capped).
    pub lifetime: Option<Duration>,
}

impl InputRequired {
    /// Nothing asked yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds request `req` under `key` (keys are unique within one result).
    pub fn ask(mut self, key: impl Into<String>, req: InputRequest) -> Self {
        self.requests.insert(key.into(), req);
        self
    }

    /// Sets the state to get back on the retry.
    pub fn with_state(mut self, state: Value) -> Self {
        self.state = Some(state);
        self
    }

    /// Accepts the retry for at most `lifetime`.
    pub fn with_lifetime(mut self, lifetime: Duration) -> Self {
        self.lifetime = Some(lifetime);
        self
    }
}

/// The client's answer to an `elicitation/create` request.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitAnswer {
    /// `action: "accept"` with its `content` (empty when absent).
    Accept(Map<String, Value>),
    Decline,
    Cancel,
}

impl ElicitAnswer {
    /// A client's result of `elicitation/create`; `None` when its `action` is not one of
    /// accept, decline, cancel.
    pub fn of(result: &Value) -> Option<ElicitAnswer> {
        match result.get("action").and_then(Value::as_str)? {
            "accept" => Some(ElicitAnswer::Accept(
                result
                    .get("content")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default(),
            )),
            "decline" => Some(ElicitAnswer::Decline),
            "cancel" => Some(ElicitAnswer::Cancel),
            _ => None,
        }
    }
}

/// One modern request of [`METHODS`] as its handler sees it: what the client may be asked,
/// the answers of this retry, the verified state of the previous round, and the handler's
/// question once it asks.
#[derive(Debug, Default)]
pub struct Round {
    capabilities: Value,
    responses: Map<String, Value>,
    state: Option<Value>,
    asked: Mutex<Option<InputRequired>>,
}

impl Round {
    /// Whether the client declared what `kind` needs.
    pub fn can_ask(&self, kind: InputKind) -> bool {
        kind.declared_in(&self.capabilities)
    }

    /// The client's answer for `key` in this retry's `inputResponses` (a JSON object).
    pub fn response(&self, key: &str) -> Option<&Value> {
        self.responses.get(key)
    }

    /// The answer for `key` read as an elicitation result ([`ElicitAnswer::of`]).
    pub fn elicitation(&self, key: &str) -> Option<ElicitAnswer> {
        ElicitAnswer::of(self.responses.get(key)?)
    }

    /// The state the handler sealed in the previous round, verified: `None` on a first call
    /// and on a retry without `requestState`.
    pub fn state(&self) -> Option<&Value> {
        self.state.as_ref()
    }

    /// Asks for `input`: the handler returns the error this gives (`Err(round.ask(..))`) and
    /// the server answers with the `InputRequiredResult` instead.
    pub fn ask(&self, input: InputRequired) -> RpcError {
        *self.asked.lock().unwrap_or_else(|e| e.into_inner()) = Some(input);
        RpcError {
            code: ASKED,
            message: "input required".into(),
            details: None,
        }
    }

    fn take_asked(&self) -> Option<InputRequired> {
        self.asked.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// What a `requestState` is good for: one caller, one method on one target with the same
/// arguments. Kept as digests (the state is visible to the client).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    caller: String,
    request: String,
}

impl Binding {
    /// The binding of a request of `method` with `params` from `caller` (an identity the
    /// transport authenticated: the key, or the address of an anonymous client). The target
    /// is `params.name` (`tools/call`, `prompts/get`) or `params.uri` (`resources/read`), the
    /// arguments `params.arguments` (in a canonical form: key order does not matter).
    pub fn of(method: &str, params: &Map<String, Value>, caller: &str) -> Binding {
        let target = params
            .get("name")
            .or_else(|| params.get("uri"))
            .cloned()
            .unwrap_or(Value::Null);
        let arguments = params.get("arguments").cloned().unwrap_or(Value::Null);
        let mut request = Sha256::new();
        for part in [
            method.to_string(),
            canonical_json(&target),
            canonical_json(&arguments),
        ] {
            request.update((part.len() as u64).to_be_bytes());
            request.update(part.as_bytes());
        }
        Binding {
            caller: hex::encode(&Sha256::digest(caller.as_bytes())[..16]),
            request: hex::encode(&request.finalize()[..16]),
        }
    }
}

/// JSON text with object keys sorted at every level, so that two values equal but for key
/// order give the same text (what [`Binding`] digests; the tool answer cache's keys too).
pub fn canonical_json(v: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    write(&m[k], out);
                }
                out.push('}');
            }
            Value::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(x, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut s = String::new();
    write(v, &mut s);
    s
}

/// Why a `requestState` was refused (all -32602 on the wire, see [`StateError::to_rpc`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateError {
    /// Longer than [`MAX_STATE_BYTES`], or not a string.
    Malformed,
    /// Not sealed by this server process (altered, forged, or from before a restart).
    Tampered,
    /// Older than its lifetime.
    Expired,
    /// Sealed for another caller.
    OtherCaller,
    /// Sealed for another method, target or arguments.
    OtherRequest,
}

impl StateError {
    /// The -32602 error naming why.
    pub fn to_rpc(self) -> RpcError {
        let why = match self {
            StateError::Malformed => {
                "`requestState` must be a string this server issued (at most 16 KiB)"
            }
            StateError::Tampered => {
                "`requestState` failed its integrity check: it was altered or not issued by \
                 this server (or the server restarted); send the request again without it"
            }
            StateError::Expired => "`requestState` has expired; send the request again without it",
            StateError::OtherCaller => "`requestState` was issued to another caller",
            StateError::OtherRequest => {
                "`requestState` was issued for another request (method, name or arguments \
                 differ); retry the original request unchanged"
            }
        };
        RpcError::invalid_params("Invalid params: invalid `requestState`").with_details(why)
    }
}

/// Seals and opens `requestState` with a per-process random key (HMAC-SHA256).
pub struct Sealer {
    key: [u8; 32],
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer")
    }
}

impl Default for Sealer {
    fn default() -> Self {
        Self::new()
    }
}

type HmacSha256 = Hmac<Sha256>;

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Sealer {
    /// A sealer with a fresh random key (the OS CSPRNG; a state sealed by another process
    /// never opens here).
    pub fn new() -> Self {
        let mut key = [0u8; 32];
        if getrandom::fill(&mut key).is_err() {
            // Without the OS generator: time and address, hashed. Weak, so said in the log.
            log::error!("no OS random numbers: requestState keys are derived from the clock");
            let seed = format!("{:?}{:p}", SystemTime::now(), &key);
            key.copy_from_slice(&Sha256::digest(seed.as_bytes()));
        }
        Sealer { key }
    }

    fn mac(&self, payload: &[u8]) -> HmacSha256 {
        let mut m = <HmacSha256 as Mac>::new_from_slice(&self.key).expect("any key length");
        m.update(payload);
        m
    }

    /// `requestState` for `binding`, carrying `state`, valid until `now + lifetime`.
    pub fn seal(
        &self,
        binding: &Binding,
        state: Option<&Value>,
        lifetime: Duration,
        now: SystemTime,
    ) -> String {
        let mut nonce = [0u8; 8];
        let _ = getrandom::fill(&mut nonce);
        let payload = json!({
            "c": binding.caller,
            "r": binding.request,
            "e": unix_ms(now + lifetime),
            "n": hex::encode(nonce),
            "s": state,
        })
        .to_string();
        let tag = self.mac(payload.as_bytes()).finalize().into_bytes();
        format!("{}.{}", b64().encode(payload), b64().encode(tag))
    }

    /// Opens `token` for `binding` at `now`: the sealed state (`Value::Null` when none).
    pub fn open(
        &self,
        token: &str,
        binding: &Binding,
        now: SystemTime,
    ) -> Result<Value, StateError> {
        if token.len() > MAX_STATE_BYTES {
            return Err(StateError::Malformed);
        }
        let (payload, tag) = token.split_once('.').ok_or(StateError::Tampered)?;
        let payload = b64().decode(payload).map_err(|_| StateError::Tampered)?;
        let tag = b64().decode(tag).map_err(|_| StateError::Tampered)?;
        self.mac(&payload)
            .verify_slice(&tag)
            .map_err(|_| StateError::Tampered)?;
        let payload: Value = serde_json::from_slice(&payload).map_err(|_| StateError::Tampered)?;
        let expires = payload["e"].as_u64().ok_or(StateError::Tampered)?;
        if unix_ms(now) >= expires {
            return Err(StateError::Expired);
        }
        if payload["c"].as_str() != Some(binding.caller.as_str()) {
            return Err(StateError::OtherCaller);
        }
        if payload["r"].as_str() != Some(binding.request.as_str()) {
            return Err(StateError::OtherRequest);
        }
        Ok(payload["s"].clone())
    }
}

/// Before dispatch: the [`Round`] of a modern request of `method` with `params` from
/// `caller`, whose `_meta` declared the client capabilities `capabilities`. `None` for
/// methods outside [`METHODS`]. -32602 when `inputResponses` is not an object of at most
/// [`MAX_INPUT_RESPONSES`] objects, or `requestState` does not open ([`Sealer::open`]).
pub fn begin(
    sealer: &Sealer,
    method: &str,
    params: Option<&Map<String, Value>>,
    caller: &str,
    capabilities: &Value,
    now: SystemTime,
) -> Result<Option<Round>, RpcError> {
    if !METHODS.contains(&method) {
        return Ok(None);
    }
    let empty = Map::new();
    let params = params.unwrap_or(&empty);
    let responses = match params.get("inputResponses") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(r)) if r.len() > MAX_INPUT_RESPONSES => {
            return Err(RpcError::invalid_params(format!(
                "Invalid params: `inputResponses` has {} entries, at most {MAX_INPUT_RESPONSES} \
                 are accepted",
                r.len()
            )))
        }
        Some(r) if !fits(r, MAX_INPUT_RESPONSE_BYTES) => {
            return Err(RpcError::invalid_params(format!(
                "Invalid params: `inputResponses` is larger than {MAX_INPUT_RESPONSE_BYTES} \
                 bytes; answer only what was asked"
            )))
        }
        Some(Value::Object(r)) => {
            if let Some((k, _)) = r.iter().find(|(_, v)| !v.is_object()) {
                return Err(RpcError::invalid_params(format!(
                    "Invalid params: `inputResponses.{k}` must be an object (the client's \
                     result for that input request)"
                )));
            }
            r.clone()
        }
        Some(_) => {
            return Err(RpcError::invalid_params(
                "Invalid params: `inputResponses` must be an object",
            ))
        }
    };
    let state = match params.get("requestState") {
        None | Some(Value::Null) => None,
        Some(Value::String(token)) => {
            let binding = Binding::of(method, params, caller);
            let state = sealer
                .open(token, &binding, now)
                .map_err(StateError::to_rpc)?;
            (!state.is_null()).then_some(state)
        }
        Some(_) => return Err(StateError::Malformed.to_rpc()),
    };
    Ok(Some(Round {
        capabilities: capabilities.clone(),
        responses,
        state,
        asked: Mutex::new(None),
    }))
}

/// After dispatch: when the handler asked ([`Round::ask`]) and answered with the marker
/// error, the `InputRequiredResult` (`resultType`, `inputRequests`, a fresh `requestState`
/// bound as in [`begin`]); `Ok(None)` when it did not ask. `Err` names the client capabilities
/// the handler asked for that the client did not declare (send -32021 then).
pub fn finish(
    sealer: &Sealer,
    round: &Round,
    handler_failed_with: Option<&RpcError>,
    method: &str,
    params: Option<&Map<String, Value>>,
    caller: &str,
    now: SystemTime,
) -> Result<Option<Value>, Vec<&'static str>> {
    let asked = round.take_asked();
    let Some(asked) = asked else { return Ok(None) };
    if handler_failed_with.is_none_or(|e| e.code != ASKED) {
        log::warn!("{method}: the handler asked for input but did not return the marker error");
        return Ok(None);
    }
    let mut missing: Vec<&'static str> = asked
        .requests
        .values()
        .filter(|r| !round.can_ask(r.kind()))
        .map(|r| r.kind().capability())
        .collect();
    missing.dedup();
    if !missing.is_empty() {
        return Err(missing);
    }
    let empty = Map::new();
    let binding = Binding::of(method, params.unwrap_or(&empty), caller);
    let lifetime = asked.lifetime.unwrap_or(STATE_LIFETIME).min(STATE_LIFETIME);
    let requests: Map<String, Value> = asked
        .requests
        .iter()
        .map(|(k, r)| (k.clone(), r.to_json()))
        .collect();
    let mut result = json!({
        "resultType": "input_required",
        "requestState": sealer.seal(&binding, asked.state.as_ref(), lifetime, now),
    });
    if !requests.is_empty() {
        result["inputRequests"] = Value::Object(requests);
    }
    Ok(Some(result))
}

/// The identity a `requestState` is bound to: the API key ([`Caller::principal`]) for a
/// caller with a key, else the transport and the client's address (`http anonymous@10.0.0.5`;
/// `stdio` for the one stdio client).
///
/// [`Caller::principal`]: super::Caller::principal
pub fn caller_identity(transport: &str, caller: Option<&super::Caller>) -> String {
    match caller {
        Some(c) if c.principal.is_some() => {
            format!("key {}", c.principal.as_deref().unwrap_or(""))
        }
        Some(c) => format!(
            "{transport} {}@{}",
            c.key_name,
            c.ip.map(|ip| ip.to_string()).unwrap_or_default()
        ),
        None => transport.to_string(),
    }
}

/// Whether `e` is the marker error of [`Round::ask`] (for code that must not report it as
/// a failure).
pub fn is_ask(e: &RpcError) -> bool {
    e.code == ASKED
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn state_opens_only_for_its_binding_and_time() {
        let s = Sealer::new();
        let now = SystemTime::now();
        let p = params(json!({"name": "t", "arguments": {"a": 1, "b": [1, {"y": 2, "x": 1}]}}));
        let b = Binding::of("tools/call", &p, "key-1");
        let token = s.seal(&b, Some(&json!({"step": 2})), STATE_LIFETIME, now);
        assert_eq!(s.open(&token, &b, now), Ok(json!({"step": 2})));
        // Key order does not matter.
        let same = params(json!({"arguments": {"b": [1, {"x": 1, "y": 2}], "a": 1}, "name": "t"}));
        assert_eq!(
            s.open(&token, &Binding::of("tools/call", &same, "key-1"), now),
            Ok(json!({"step": 2}))
        );
        let other_args = params(json!({"name": "t", "arguments": {"a": 2}}));
        assert_eq!(
            s.open(
                &token,
                &Binding::of("tools/call", &other_args, "key-1"),
                now
            ),
            Err(StateError::OtherRequest)
        );
        assert_eq!(
            s.open(&token, &Binding::of("prompts/get", &p, "key-1"), now),
            Err(StateError::OtherRequest)
        );
        assert_eq!(
            s.open(&token, &Binding::of("tools/call", &p, "key-2"), now),
            Err(StateError::OtherCaller)
        );
        assert_eq!(
            s.open(&token, &b, now + STATE_LIFETIME),
            Err(StateError::Expired)
        );
        assert_eq!(
            s.open(&format!("{token}-TAMPERED"), &b, now),
            Err(StateError::Tampered)
        );
        // Another process's key.
        assert_eq!(
            Sealer::new().open(&token, &b, now),
            Err(StateError::Tampered)
        );
        // A payload edited and re-encoded, the old tag kept.
        let (_, tag) = token.split_once('.').unwrap();
        let forged = format!(
            "{}.{tag}",
            b64().encode(json!({"c": "x", "r": "y", "e": u64::MAX, "s": null}).to_string())
        );
        assert_eq!(s.open(&forged, &b, now), Err(StateError::Tampered));
        assert_eq!(
            s.open(&"a".repeat(MAX_STATE_BYTES + 1), &b, now),
            Err(StateError::Malformed)
        );
    }

    #[test]
    fn rounds_validate_responses_and_ask_within_capabilities() {
        let s = Sealer::new();
        let now = SystemTime::now();
        let caps = json!({"sampling": {}});
        assert!(begin(&s, "tools/list", None, "c", &caps, now)
            .unwrap()
            .is_none());
        let bad = params(json!({"name": "t", "inputResponses": {"k": 12345}}));
        assert_eq!(
            begin(&s, "tools/call", Some(&bad), "c", &caps, now)
                .unwrap_err()
                .code,
            -32602
        );
        let many: Map<String, Value> = (0..=MAX_INPUT_RESPONSES)
            .map(|i| (format!("k{i}"), json!({})))
            .collect();
        let too_many = params(json!({"name": "t", "inputResponses": many}));
        assert!(begin(&s, "tools/call", Some(&too_many), "c", &caps, now).is_err());

        let p = params(json!({"name": "t", "arguments": {}}));
        let round = begin(&s, "tools/call", Some(&p), "c", &caps, now)
            .unwrap()
            .unwrap();
        assert!(round.can_ask(InputKind::Sampling));
        assert!(!round.can_ask(InputKind::ElicitationForm));
        let e = round.ask(InputRequired::new().ask(
            "q",
            InputRequest::Elicitation {
                message: "?".into(),
                requested_schema: json!({"type": "object"}),
            },
        ));
        assert_eq!(
            finish(&s, &round, Some(&e), "tools/call", Some(&p), "c", now),
            Err(vec!["elicitation"])
        );
        let e = round.ask(
            InputRequired::new()
                .ask("s", InputRequest::Sampling(json!({"maxTokens": 10})))
                .with_state(json!({"n": 1})),
        );
        let r = finish(&s, &round, Some(&e), "tools/call", Some(&p), "c", now)
            .unwrap()
            .unwrap();
        assert_eq!(r["resultType"], "input_required");
        assert_eq!(r["inputRequests"]["s"]["method"], "sampling/createMessage");

        // The retry: the state comes back verified, the answers as sent.
        let mut retry = p.clone();
        retry.insert("requestState".into(), r["requestState"].clone());
        retry.insert(
            "inputResponses".into(),
            json!({"s": {"role": "assistant"}, "e": {"action": "decline"}}),
        );
        let round = begin(&s, "tools/call", Some(&retry), "c", &caps, now)
            .unwrap()
            .unwrap();
        assert_eq!(round.state(), Some(&json!({"n": 1})));
        assert_eq!(round.elicitation("e"), Some(ElicitAnswer::Decline));
        assert!(round.response("s").is_some());
        assert_eq!(
            finish(&s, &round, None, "tools/call", Some(&retry), "c", now),
            Ok(None)
        );
    }

    #[test]
    fn large_input_responses_are_refused_before_they_are_copied() {
        let s = Sealer::new();
        let huge = "x".repeat(900 * 1024);
        let p = params(json!({"name": "t", "inputResponses": {"confirm": {"action": huge}}}));
        let e = begin(
            &s,
            "tools/call",
            Some(&p),
            "c",
            &json!({}),
            SystemTime::now(),
        )
        .unwrap_err();
        assert_eq!(e.code, -32602);
        assert!(e.message.contains("16384 bytes"), "{e:?}");
        let fine =
            params(json!({"name": "t", "inputResponses": {"confirm": {"action": "accept"}}}));
        assert!(begin(
            &s,
            "tools/call",
            Some(&fine),
            "c",
            &json!({}),
            SystemTime::now()
        )
        .is_ok());
    }

    #[test]
    fn url_mode_elicitation_needs_its_capability() {
        let url = InputRequest::ElicitationUrl {
            message: "Type the code".into(),
            url: "https://pi/confirm/abc".into(),
            elicitation_id: "abc".into(),
        };
        assert_eq!(url.to_json()["params"]["mode"], "url");
        assert!(!url.kind().declared_in(&json!({"elicitation": {}})));
        assert!(url.kind().declared_in(&json!({"elicitation": {"url": {}}})));
        assert!(!InputKind::ElicitationForm.declared_in(&json!({"elicitation": {"url": {}}})));
    }
}

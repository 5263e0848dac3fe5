//! The auth gate: who is calling, may they do this, and not too often (issue 6, spec §5, §7.1,
//! §8).
//!
//! Every HTTP route except `/health` and the static files of the dashboard and the admin page
//! (and `/metrics` with `[metrics] public = true`) passes the gate in two steps; stdio is
//! trusted unless `HOME_STDIO_KEY` names a key (then step 2 runs per request, after
//! [`Gate::revalidate`]):
//! 1. [`Gate::authenticate`], in the router before any body is read: the key from `X-API-Key`
//!    or `Authorization: Bearer` (or `?key=`, outside production), looked up by comparing
//!    SHA-256 digests of the presented key and each stored id in constant time; then
//!    active / expiry / IP whitelist, then the rate limits. The result is a [`Principal`].
//! 2. [`Gate::authorize`], in the route once it knows what the request will do ([`Action`]):
//!    the permission of the MCP method or tool.
//!
//! ## Which request needs what
//! | request | needs |
//! |---|---|
//! | `GET /health` | nothing (no key) |
//! | MCP `initialize`, `ping`, notifications, client responses; `GET`/`DELETE /mcp`, `GET /sse` | a valid key |
//! | MCP `tools/list`, `resources/*`, `prompts/*`, `completion/complete`, `logging/setLevel`; `GET /tools` | [`Permission::Read`] |
//! | `tools/call` (MCP or REST) | the tool's permission ([`ToolFacts::required_permission`]: its declaration's; for `execute_workflow` the highest of its steps); for a tool that shows pictures of people ([`ToolFacts::shows_pictures`]) also the key's `cameras` grant ([`ApiKey::sees_pictures`]) |
//! | `GET /metrics` ([`Action::Method`] `"metrics"`) | [`Permission::Read`] (not gated with `[metrics] public = true`) |
//! | `/dashboard/api/...`, `WS /dashboard/ws` ([`Action::Method`] `"dashboard"`) | [`Permission::Read`] |
//! | `/admin/...` (see [`crate::http::admin`]; only from `[auth] admin_networks`) | [`Permission::Admin`] |
//!
//! A `tools/call` refused with `INSUFFICIENT_PERMISSIONS` whose tool needs `control` or more, or
//! shows pictures, is recorded in the audit log ([`crate::audit`]) by the HTTP layer.
//!
//! Which controls a `device` key may touch is not decided here: its allow-list is resolved to
//! control UUIDs and checked per control when a tool lists, reads or operates one
//! ([`crate::home::Access::permits`], at the last moment before a command goes to the
//! Miniserver), whatever the arguments name. The gate keeps device keys from the methods that
//! show the whole house (as for scoped keys below: only `tools/list` and `logging/setLevel`
//! besides `initialize`/`ping`/notifications, so no resources, prompts, completions,
//! dashboard or metrics).
//!
//! Keys limited to rooms or categories ([`ApiKey::scope`]) may use only `tools/list` and
//! `logging/setLevel` besides `initialize`/`ping`/notifications, never `/admin`, and their tool
//! calls must stay inside what the tool declares it reaches ([`ToolFacts::check_scope`]); the
//! commands themselves are checked again when sent (`tools::Caller::act`).
//!
//! ## Errors
//! | condition | code | HTTP | JSON-RPC |
//! |---|---|---|---|
//! | missing, unknown, inactive or expired key; `?key=` in production; non-admin key without expiry in production | `INVALID_API_KEY` | 401 (+ `WWW-Authenticate: Bearer`) | -32001 |
//! | client address outside the key's `ip_whitelist` | `INSUFFICIENT_PERMISSIONS` | 403 | -32003 |
//! | permission missing; a scoped or device key's method outside its reach | `INSUFFICIENT_PERMISSIONS` | 403 | -32003 |
//! | rate limit exceeded | `RATE_LIMIT_EXCEEDED` | 429 (+ `Retry-After`) | -32029 |
//!
//! An address outside the whitelist gets 403, not 401: the key is authentic, so asking the
//! client to authenticate again would mislead it. REST and admin routes answer with the spec
//! §7.1 object `{"error": {code, message, details}}`; MCP routes with a JSON-RPC error whose
//! `data` holds `details` (the message), `code` (the §7.1 code) and `key_id`, with the same HTTP
//! status. `details.key_id` is always [`mask`]ed (`null` when no key was sent).
//!
//! ## Rate limits
//! A request with a key counts against its key's bucket only, limited by the key's role
//! (default per minute, spec §8: admin 1000, operator 500, monitor 200, device 100, custom
//! 200); a request without a key counts against its client address's bucket (`per_client`,
//! default 100), on every route. Each request of a JSON-RPC batch counts ([`Gate::charge`]).
//! Fixed windows (see [`ratelimit`](crate::ratelimit)). Every gated answer written by a worker
//! carries `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset` of the bucket
//! that applied. Raised in `[auth.rate_limits]` of the config file.
//!
//! ## Security levels
//! | | development | staging | production |
//! |---|---|---|---|
//! | key required | no (`required = true` makes it so); **always** when the bind address is not loopback | yes | yes |
//! | without keys | a loud warning at start; requests without a key pass as anonymous with every permission; a presented key is still checked | - | - |
//! | `?key=` query credentials | accepted | accepted | refused (401) |
//! | non-admin keys without `expires_at` (and the legacy `HTTP_API_KEY`) | accepted | accepted | refused (401) |
//! | `/admin` from outside `[auth] admin_networks` | refused (403) when configured | refused (403) when configured | refused (403); unconfigured = loopback only |
//! | `Host` allow-list | loopback names on a loopback bind, else any | same | `[server] allowed_hosts` required off loopback (the server does not start without it) |
//! | `Origin` (every route but `/health`) | loopback, same host or `allowed_origins` | same | same, but loopback origins only on a loopback bind |
//!
//! `required = false` in staging or production is ignored (with a warning).
//!
//! ## Usage data and the legacy key
//! Each authentication updates the key's usage (last use, count, client addresses; failed
//! attempts for inactive, expired or off-whitelist use) in a [`UsageRecorder`], written to the
//! store at most once per [`GateConfig::usage_interval`] and at shutdown
//! ([`Gate::flush_usage`]). The deprecated single key (`HTTP_API_KEY` or `LOXONE_API_KEY`) is
//! accepted as an `operator` key named [`LEGACY_KEY_NAME`] (never `security` or `admin`), with
//! a warning at start.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::store::{KeyStore, UsageRecorder};
use super::{mask, ApiKey, Role, Usage};
use crate::home::Secret;
use crate::home::{Permission, ToolFacts};
use crate::ratelimit::{RateInfo, RateLimiter};

/// The overall security level (`[auth] security_level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SecurityLevel {
    #[default]
    Development,
    Staging,
    Production,
}

/// Requests per window for each role (keyed requests) and per client address (requests
/// without a key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimits {
    pub admin: u32,
    pub operator: u32,
    pub monitor: u32,
    pub device: u32,
    pub custom: u32,
    /// Per client address, for requests without a key.
    pub per_client: u32,
}

impl Default for RateLimits {
    fn default() -> Self {
        Self {
            admin: 1000,
            operator: 500,
            monitor: 200,
            device: 100,
            custom: 200,
            per_client: 100,
        }
    }
}

impl RateLimits {
    fn for_role(&self, role: Role) -> u32 {
        match role {
            Role::Admin => self.admin,
            Role::Operator => self.operator,
            Role::Monitor => self.monitor,
            Role::Device => self.device,
            Role::Custom => self.custom,
        }
    }
}

/// The gate's settings (`[auth]`).
#[derive(Debug, Clone, PartialEq)]
pub struct GateConfig {
    pub level: SecurityLevel,
    /// Keys required in development too.
    pub required: bool,
    pub limits: RateLimits,
    /// Rate-limit window (one minute).
    pub window: Duration,
    /// The deprecated single key (`HTTP_API_KEY`, or `LOXONE_API_KEY`): accepted as an
    /// `operator` key named "legacy HTTP_API_KEY", with a deprecation warning at start.
    pub legacy_key: Option<Secret>,
    /// Networks (addresses or CIDR ranges) `/admin` is served to (`[auth] admin_networks`).
    /// Empty: any address, except in production, where empty means loopback only.
    pub admin_networks: Vec<String>,
    /// How often usage data (last use, counts, addresses) is written to the key store
    /// (default 60 s; also at shutdown, see [`Gate::flush_usage`]).
    pub usage_interval: Duration,
}

impl Default for GateConfig {
    fn default() -> Self {
        Self {
            level: SecurityLevel::Development,
            required: false,
            limits: RateLimits::default(),
            window: Duration::from_secs(60),
            legacy_key: None,
            admin_networks: Vec::new(),
            usage_interval: Duration::from_secs(60),
        }
    }
}

/// Failed key attempts (unknown, revoked, expired, off-whitelist) allowed per client address
/// and rate-limit window; beyond them every request with a key from that address gets
/// `RATE_LIMIT_EXCEEDED` until the window ends.
pub const FAILED_ATTEMPTS_PER_CLIENT: u32 = 20;

/// The id and name of the synthetic key built from `HTTP_API_KEY`.
pub const LEGACY_KEY_NAME: &str = "legacy HTTP_API_KEY";

/// What a request presents.
#[derive(Debug, Clone, Copy, Default)]
pub struct Credentials<'a> {
    /// From `X-API-Key` or `Authorization: Bearer`.
    pub header_key: Option<&'a str>,
    /// From `?key=` in the URL.
    pub query_key: Option<&'a str>,
    /// The client's address.
    pub ip: Option<IpAddr>,
}

impl<'a> Credentials<'a> {
    /// The key from `X-API-Key` (preferred) or `Authorization: Bearer ...`, and `key=` from
    /// the query of `url`.
    pub fn from_parts(
        x_api_key: Option<&'a str>,
        authorization: Option<&'a str>,
        url: &'a str,
        ip: Option<IpAddr>,
    ) -> Self {
        let bearer = authorization.and_then(|v| {
            let v = v.trim();
            let (scheme, rest) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
        });
        let header_key = x_api_key
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .or(bearer.filter(|k| !k.is_empty()));
        let query_key = url.split_once('?').and_then(|(_, q)| {
            q.split('&')
                .find_map(|p| p.strip_prefix("key="))
                .filter(|k| !k.is_empty())
        });
        Self {
            header_key,
            query_key,
            ip,
        }
    }
}

/// The API key a browser WebSocket offers as the subprotocol `key.<KEY>` in
/// `Sec-WebSocket-Protocol` (browsers cannot set headers on a WebSocket, and a key in the URL
/// would end up in logs). `None` when no such entry is offered or it is empty. The server
/// never echoes this subprotocol back.
pub fn subprotocol_key(header: Option<&str>) -> Option<&str> {
    header?
        .split(',')
        .find_map(|p| p.trim().strip_prefix("key."))
        .filter(|k| !k.is_empty())
}

/// Who passed [`Gate::authenticate`].
#[derive(Debug, Clone)]
pub struct Principal {
    /// `None`: anonymous (development without required keys).
    pub key: Option<ApiKey>,
    /// The rate-limit bucket that applied (the key's, or the address's without a key), for
    /// the answer's headers.
    pub rate: RateInfo,
    /// The client's address as the request came in.
    pub ip: Option<IpAddr>,
}

impl Principal {
    /// Whether this caller may see pictures of people (tools that show pictures, the
    /// dashboard's doorbell pictures): a key with the `cameras` grant
    /// ([`ApiKey::sees_pictures`]), or anonymous (where keys are not required, everything is
    /// allowed). The gate's one decision of it.
    pub fn sees_pictures(&self) -> bool {
        self.key.as_ref().is_none_or(ApiKey::sees_pictures)
    }

    /// Who this is, for the audit log (`anonymous` without a key).
    pub fn caller(&self) -> crate::mcp::Caller {
        crate::mcp::Caller {
            key_name: self
                .key
                .as_ref()
                .map_or_else(|| "anonymous".into(), |k| k.name.clone()),
            // Masked here: the caller travels through requests, logs and the audit log.
            key_id: self.key.as_ref().map(|k| mask(&k.id)),
            principal: self.key.as_ref().map(ApiKey::principal),
            ip: self.ip,
            access: self
                .key
                .as_ref()
                .map(|k| k.access())
                .filter(|a| a.is_limited())
                .map(Arc::new),
            model_confirms: self.key.as_ref().is_some_and(|k| k.model_confirms),
            open_doors: self.key.as_ref().is_some_and(|k| k.open_doors),
            profile: self.key.as_ref().and_then(|k| k.profile),
        }
    }
}

/// What a request is about to do, for [`Gate::authorize`].
#[derive(Debug, Clone, Copy)]
pub enum Action<'a> {
    /// An MCP method other than `tools/call` (see the module docs).
    Method(&'a str),
    /// A tool call (MCP or REST).
    Tool {
        name: &'a str,
        arguments: &'a Map<String, Value>,
    },
    /// An `/admin` endpoint.
    Admin,
}

/// Why the gate refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DenyCode {
    InvalidApiKey,
    InsufficientPermissions,
    RateLimitExceeded,
}

impl DenyCode {
    pub fn as_str(self) -> &'static str {
        match self {
            DenyCode::InvalidApiKey => "INVALID_API_KEY",
            DenyCode::InsufficientPermissions => "INSUFFICIENT_PERMISSIONS",
            DenyCode::RateLimitExceeded => "RATE_LIMIT_EXCEEDED",
        }
    }

    /// HTTP status on every route.
    pub fn status(self) -> u16 {
        match self {
            DenyCode::InvalidApiKey => 401,
            DenyCode::InsufficientPermissions => 403,
            DenyCode::RateLimitExceeded => 429,
        }
    }

    /// JSON-RPC error code on MCP routes (server-defined range).
    pub fn rpc_code(self) -> i64 {
        match self {
            DenyCode::InvalidApiKey => -32001,
            DenyCode::InsufficientPermissions => -32003,
            DenyCode::RateLimitExceeded => -32029,
        }
    }
}

/// A refusal, rendered by the HTTP layer.
#[derive(Debug, Clone)]
pub struct Denial {
    pub code: DenyCode,
    pub message: String,
    /// Masked key id (`None` when no key was sent).
    pub key_id: Option<String>,
    /// The bucket that refused (429) or the principal's (403), for the headers.
    pub rate: Option<RateInfo>,
}

impl Denial {
    fn new(code: DenyCode, message: impl Into<String>, key: Option<&str>) -> Self {
        Self {
            code,
            message: message.into(),
            key_id: key.map(mask),
            rate: None,
        }
    }

    /// The spec's error object (§7.1), `details.key_id` the masked key id (`null` without one).
    pub fn api_error(&self) -> crate::error::ApiError {
        crate::error::ApiError::new(self.code.as_str(), &self.message)
            .with("key_id", self.key_id.clone())
    }

    /// The §7.1 body `{"error": {code, message, details}}` ([`Denial::api_error`]).
    pub fn rest_body(&self) -> Value {
        self.api_error().body()
    }

    /// The `error` member of the JSON-RPC refusal: its code, the §7.1 code as the message,
    /// and in `data` the message (`details`), the §7.1 `code` and `key_id`.
    pub fn rpc_error(&self) -> crate::mcp::jsonrpc::ErrorObject {
        let error = crate::mcp::RpcError {
            code: self.code.rpc_code(),
            message: self.code.as_str().into(),
            details: Some(self.message.clone()),
        };
        crate::mcp::jsonrpc::ErrorObject::from(error)
            .with_data(json!({"code": self.code.as_str(), "key_id": self.key_id}))
    }

    /// The JSON-RPC refusal of the requests `ids` as JSON text (one error per request of a
    /// batch, each with its id; `id: null` when none is known).
    pub fn rpc_body(&self, ids: &crate::mcp::jsonrpc::RequestIds) -> String {
        crate::mcp::jsonrpc::error_for(ids, &self.rpc_error())
    }

    /// Headers to send with the refusal: rate-limit headers, `Retry-After` on 429,
    /// `WWW-Authenticate` on 401.
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        let mut h: Vec<(&'static str, String)> = Vec::new();
        if let Some(r) = &self.rate {
            h.extend(r.headers());
            if self.code == DenyCode::RateLimitExceeded {
                h.push(("Retry-After", r.retry_after.to_string()));
            }
        }
        if self.code == DenyCode::InvalidApiKey {
            h.push(("WWW-Authenticate", "Bearer".into()));
        }
        h
    }
}

/// The gate. Shared by all workers; the store is read on every request, and long-lived
/// sessions (dashboard WebSocket, stdio key) ask [`Gate::revalidate`], so revocations apply at
/// once (a WebSocket at its next ping).
pub struct Gate {
    store: Arc<dyn KeyStore>,
    config: GateConfig,
    required: bool,
    limiter: RateLimiter,
    /// What the tool catalogue declares of each tool: the permission a call needs and what it
    /// reaches.
    tools: Arc<dyn ToolFacts>,
    /// SHA-256 of stored ids, so a request hashes only the presented key (looked up by the
    /// stored id, never by the presented one).
    digests: Mutex<HashMap<String, [u8; 32]>>,
    /// Usage data, batched to the store.
    usage: UsageRecorder,
    /// The key built from [`GateConfig::legacy_key`].
    legacy: Option<ApiKey>,
}

impl fmt::Debug for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gate")
            .field("config", &self.config)
            .field("required", &self.required)
            .finish_non_exhaustive()
    }
}

impl Gate {
    /// A gate for a server bound to `bind`, judging tool calls by what `tools` declares.
    /// Keys become required when the level or `required` says so, and always on a
    /// non-loopback bind (logged).
    pub fn new(
        store: Arc<dyn KeyStore>,
        config: GateConfig,
        bind: IpAddr,
        tools: Arc<dyn ToolFacts>,
    ) -> Self {
        let required = match config.level {
            SecurityLevel::Development => {
                if config.required {
                    true
                } else if !bind.is_loopback() {
                    log::warn!(
                        "security level development on non-loopback address {bind}: API keys \
                         are required anyway (auth is never off on the network)"
                    );
                    true
                } else {
                    log::warn!(
                        "!!! SECURITY LEVEL DEVELOPMENT: requests WITHOUT an API key are \
                         allowed (loopback {bind} only). Set [auth] security_level = \
                         \"staging\" or \"production\" for real use. !!!"
                    );
                    false
                }
            }
            level => {
                if !config.required {
                    log::debug!("[auth] required = false is ignored at level {level:?}");
                }
                true
            }
        };
        let legacy = config.legacy_key.as_ref().map(|secret| {
            log::warn!(
                "HTTP_API_KEY is deprecated: it is accepted as an operator key (control, no \
                 security or admin permission){}. Create keys with `home-mcp keys generate \
                 --role operator` and unset HTTP_API_KEY.",
                if config.level == SecurityLevel::Production {
                    "; production refuses it (no expiry)"
                } else {
                    ""
                }
            );
            ApiKey {
                id: secret.expose().to_string(),
                name: LEGACY_KEY_NAME.into(),
                role: Role::Operator,
                created_by: "environment".into(),
                created_at: String::new(),
                active: true,
                expires_at: None,
                ip_whitelist: Vec::new(),
                allowed_devices: Vec::new(),
                permissions: Vec::new(),
                rooms: Vec::new(),
                categories: Vec::new(),
                model_confirms: false,
                open_doors: false,
                cameras: false,
                grant: None,
                profile: None,
                usage: Usage::default(),
            }
        });
        if config.level == SecurityLevel::Production && config.admin_networks.is_empty() {
            log::info!(
                "production: /admin is served to loopback clients only ([auth] admin_networks)"
            );
        }
        Self {
            limiter: RateLimiter::new(config.window),
            usage: UsageRecorder::new(store.clone(), config.usage_interval),
            store,
            config,
            required,
            tools,
            digests: Mutex::new(HashMap::new()),
            legacy,
        }
    }

    /// Writes pending usage data to the key store now (at shutdown).
    pub fn flush_usage(&self) {
        self.usage.flush();
    }

    /// The usage of key `id` including what is not yet written to the store.
    pub fn usage_of(&self, id: &str) -> Option<Usage> {
        self.usage.usage(id)
    }

    /// The key store the gate reads.
    pub fn store(&self) -> &Arc<dyn KeyStore> {
        &self.store
    }

    /// The gate's settings.
    pub fn config(&self) -> &GateConfig {
        &self.config
    }

    /// Whether `/admin` may be served to `ip`: [`GateConfig::admin_networks`], or loopback only
    /// in production when none are configured. An unknown address is refused when a
    /// restriction applies.
    pub fn admin_network_allows(&self, ip: Option<IpAddr>) -> bool {
        let nets: &[String] = &self.config.admin_networks;
        if nets.is_empty() {
            if self.config.level != SecurityLevel::Production {
                return true;
            }
            return ip.is_some_and(|ip| canonical(ip).is_loopback());
        }
        ip.is_some_and(|ip| in_networks(nets, ip))
    }

    /// Whether requests need a key.
    pub fn required(&self) -> bool {
        self.required
    }

    pub fn level(&self) -> SecurityLevel {
        self.config.level
    }

    /// The permission a tool call needs (`None`: unknown tool).
    pub fn permission_of(&self, name: &str, arguments: &Map<String, Value>) -> Option<Permission> {
        self.tools.required_permission(name, arguments)
    }

    /// Whether a tool call is recorded in the audit log, refused or not
    /// ([`ToolFacts::audited`]: it writes or shows pictures).
    pub fn audited(&self, name: &str, arguments: &Map<String, Value>) -> bool {
        self.tools.audited(name, arguments)
    }

    /// The rate-limit buckets of the current windows, key ids [`mask`]ed
    /// (`key:homekey_operator_2_0011****`, `ip:192.168.1.20`, `anon:...`).
    pub fn rate_buckets(&self) -> Vec<crate::ratelimit::BucketState> {
        self.limiter
            .snapshot()
            .into_iter()
            .map(|mut b| {
                if let Some(id) = b.bucket.strip_prefix("key:") {
                    b.bucket = format!("key:{}", mask(id));
                }
                b
            })
            .collect()
    }

    /// Step 1: the key, its state, the client address and the rate limits. Refusals are
    /// counted in [`crate::metrics`] (`home_mcp_auth_failures_total`).
    pub fn authenticate(&self, creds: &Credentials<'_>) -> Result<Principal, Denial> {
        use crate::metrics::{global, AuthFailure};
        self.check(creds).inspect_err(|d| {
            global().auth_failure(match d.code {
                DenyCode::InvalidApiKey => AuthFailure::InvalidApiKey,
                // The only 403 of step 1.
                DenyCode::InsufficientPermissions => AuthFailure::IpNotWhitelisted,
                DenyCode::RateLimitExceeded => AuthFailure::RateLimited,
            })
        })
    }

    fn check(&self, creds: &Credentials<'_>) -> Result<Principal, Denial> {
        let production = self.config.level == SecurityLevel::Production;
        if production && creds.query_key.is_some() {
            return Err(Denial::new(
                DenyCode::InvalidApiKey,
                "credentials in the URL (?key=) are refused in production; send X-API-Key or \
                 Authorization: Bearer",
                creds.query_key,
            ));
        }
        let presented = creds.header_key.or(creds.query_key);
        let Some(presented) = presented else {
            if self.required {
                return Err(Denial::new(
                    DenyCode::InvalidApiKey,
                    "an API key is required (X-API-Key or Authorization: Bearer)",
                    None,
                ));
            }
            let rate = self.limit(&[("anon", creds.ip, self.config.limits.per_client)])?;
            return Ok(Principal {
                key: None,
                rate,
                ip: creds.ip,
            });
        };
        // Failed attempts are limited per client address, before any work: guessing keys
        // (or a client stuck with a revoked one) costs a 429, not a store read and a log line.
        let fail_bucket = format!(
            "authfail:{}",
            creds
                .ip
                .map_or("unknown".into(), |ip| canonical(ip).to_string())
        );
        if let Err(info) = self.limiter.check(&fail_bucket, FAILED_ATTEMPTS_PER_CLIENT) {
            let mut d = Denial::new(
                DenyCode::RateLimitExceeded,
                format!(
                    "too many failed API key attempts from this address; retry in {} s",
                    info.retry_after
                ),
                Some(presented),
            );
            d.rate = Some(info);
            return Err(d);
        }
        let result = self.check_key(creds, presented, production);
        if let Err(d) = &result {
            if d.code != DenyCode::RateLimitExceeded {
                let _ = self.limiter.hit(&fail_bucket, FAILED_ATTEMPTS_PER_CLIENT);
            }
        }
        result
    }

    /// The presented key's record, state, address and rate limits (see [`Gate::authenticate`]).
    fn check_key(
        &self,
        creds: &Credentials<'_>,
        presented: &str,
        production: bool,
    ) -> Result<Principal, Denial> {
        let invalid = |m: &str| Denial::new(DenyCode::InvalidApiKey, m, Some(presented));
        let keys = self.store.list().map_err(|e| {
            log::error!("key store: {e}");
            invalid("the key store is unavailable")
        })?;
        let Some(key) = self.find(&keys, presented) else {
            log::info!("unknown API key {} from {:?}", mask(presented), creds.ip);
            return Err(invalid("unknown API key"));
        };
        let refuse = |d: Denial| {
            self.usage.record_failure(&key.id);
            Err(d)
        };
        if !key.active {
            return refuse(invalid("the API key is revoked (inactive)"));
        }
        match &key.expires_at {
            Some(at) if expired(at) => return refuse(invalid("the API key has expired")),
            None if production && key.role != Role::Admin => {
                return refuse(invalid(
                    "production requires an expiry (expires_at) on non-admin keys",
                ))
            }
            _ => {}
        }
        if !key.ip_whitelist.is_empty() && !creds.ip.is_some_and(|ip| whitelisted(&key, ip)) {
            log::info!(
                "API key {} used from {:?}, not whitelisted",
                mask(&key.id),
                creds.ip
            );
            return refuse(Denial::new(
                DenyCode::InsufficientPermissions,
                "the client address is not in the key's IP whitelist",
                Some(presented),
            ));
        }
        self.usage.record_use(
            &key.id,
            &creds
                .ip
                .map(|ip| canonical(ip).to_string())
                .unwrap_or_default(),
        );
        let rate = self.limit_role(&key).map_err(|mut d| {
            d.key_id = Some(mask(&key.id));
            d
        })?;
        Ok(Principal {
            key: Some(key),
            rate,
            ip: creds.ip,
        })
    }

    /// Counts one more request of `principal` in the bucket [`Gate::authenticate`] counted (its
    /// key's role limit; the per-client limit when anonymous): each request of a JSON-RPC batch
    /// after the first is a request of its own. `Err(RATE_LIMIT_EXCEEDED)` when the limit is
    /// reached.
    pub fn charge(&self, principal: &Principal) -> Result<RateInfo, Denial> {
        let Some(key) = &principal.key else {
            return self.limit(&[("anon", principal.ip, self.config.limits.per_client)]);
        };
        self.limit_role(key).map_err(|mut d| {
            d.key_id = Some(mask(&key.id));
            d
        })
    }

    /// One more request in `key`'s own bucket, limited by its role ([`RateLimits`]): the only
    /// bucket a keyed request counts in, whatever its route or address (issue 15: a key must
    /// not share the per-address budget of anonymous clients on the same machine).
    fn limit_role(&self, key: &ApiKey) -> Result<RateInfo, Denial> {
        self.limit_key(
            &key.id,
            &[("key", None, self.config.limits.for_role(key.role))],
        )
    }

    /// The key whose id equals `presented`: SHA-256 digests compared in constant time against
    /// every stored key (no early exit, equal-length inputs), so timing tells nothing about the
    /// ids.
    fn find(&self, keys: &[ApiKey], presented: &str) -> Option<ApiKey> {
        let want: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        let mut digests = self.digests.lock().unwrap_or_else(|e| e.into_inner());
        if digests.len() > 4 * keys.len() + 64 {
            digests.clear(); // forget deleted keys
        }
        let mut found = None;
        for k in keys.iter().chain(self.legacy.as_ref()) {
            let have = match digests.get(&k.id) {
                Some(d) => *d,
                None => {
                    let d: [u8; 32] = Sha256::digest(k.id.as_bytes()).into();
                    digests.insert(k.id.clone(), d);
                    d
                }
            };
            if bool::from(have.as_slice().ct_eq(want.as_slice())) {
                found = Some(k);
            }
        }
        found.cloned()
    }

    /// Anonymous bucket(s) by address.
    fn limit(&self, buckets: &[(&str, Option<IpAddr>, u32)]) -> Result<RateInfo, Denial> {
        self.limit_key("", buckets)
    }

    /// Hits each bucket; the tighter state, or the first refusal.
    fn limit_key(
        &self,
        key_id: &str,
        buckets: &[(&str, Option<IpAddr>, u32)],
    ) -> Result<RateInfo, Denial> {
        let mut tightest: Option<RateInfo> = None;
        for (kind, ip, limit) in buckets {
            let name = match ip {
                Some(ip) => format!("ip:{ip}"),
                None if *kind == "key" => format!("key:{key_id}"),
                None => format!("{kind}:unknown"),
            };
            match self.limiter.hit(&name, *limit) {
                Ok(info) => {
                    if tightest.is_none_or(|t| info.remaining < t.remaining) {
                        tightest = Some(info);
                    }
                }
                Err(info) => {
                    crate::metrics::global().rate_limited(match (*kind, ip) {
                        ("key", _) => crate::metrics::RateBucket::Key,
                        ("anon", _) => crate::metrics::RateBucket::Anonymous,
                        _ => crate::metrics::RateBucket::Client,
                    });
                    let mut d = Denial::new(
                        DenyCode::RateLimitExceeded,
                        format!(
                            "rate limit of {limit} requests per {} s exceeded; retry in {} s",
                            self.limiter.window().as_secs().max(1),
                            info.retry_after
                        ),
                        None,
                    );
                    d.rate = Some(info);
                    return Err(d);
                }
            }
        }
        Ok(tightest.unwrap_or(RateInfo {
            limit: 0,
            remaining: 0,
            reset: 0,
            retry_after: 1,
        }))
    }

    /// Step 2: may `principal` do `action`? Refusals are counted in [`crate::metrics`].
    pub fn authorize(&self, principal: &Principal, action: &Action<'_>) -> Result<(), Denial> {
        self.permit(principal, action).inspect_err(|_| {
            crate::metrics::global()
                .auth_failure(crate::metrics::AuthFailure::InsufficientPermissions)
        })
    }

    fn permit(&self, principal: &Principal, action: &Action<'_>) -> Result<(), Denial> {
        let Some(key) = &principal.key else {
            return Ok(()); // anonymous: only when keys are not required
        };
        let needed = match action {
            Action::Method(m) => method_permission(m),
            Action::Admin => Some(Permission::Admin),
            Action::Tool { name, arguments } => Some(
                self.permission_of(name, arguments)
                    .unwrap_or(Permission::Read),
            ),
        };
        let deny = |m: String| {
            let mut d = Denial::new(DenyCode::InsufficientPermissions, m, Some(&key.id));
            d.rate = Some(principal.rate);
            d
        };
        let Some(needed) = needed else { return Ok(()) };
        let have: BTreeSet<Permission> = key.permissions();
        if !have.contains(&needed) {
            return Err(deny(format!(
                "role {} lacks the {} permission",
                key.role,
                needed.as_str()
            )));
        }
        if let Action::Tool { name, arguments } = action {
            if self.tools.shows_pictures(name, arguments) && !principal.sees_pictures() {
                return Err(deny(format!(
                    "{name} shows pictures of cameras and intercoms; this key may not see them \
                     (the owner's cameras setting; admin keys may)"
                )));
            }
        }
        if key.role == Role::Device {
            // Which controls a device key may touch is decided per control when a tool lists,
            // reads or operates them (`home::Access::permits`); here only what needs no
            // arguments: the house-wide methods are not for it.
            match action {
                Action::Method(m) if !SCOPED_METHODS.contains(m) => {
                    return Err(deny(format!(
                        "device keys cannot use {m}: it shows the whole house; use the tools"
                    )))
                }
                _ => {}
            }
        }
        if let Some(scope) = key.scope() {
            match action {
                Action::Method(m) if !SCOPED_METHODS.contains(m) => {
                    return Err(deny(format!(
                        "keys limited to rooms or categories cannot use {m}; use the tools"
                    )))
                }
                Action::Method(_) => {}
                Action::Admin => {
                    return Err(deny(
                        "keys limited to rooms or categories cannot use the admin endpoints".into(),
                    ))
                }
                Action::Tool { name, arguments } => self
                    .tools
                    .check_scope(name, arguments, &scope)
                    .map_err(|m| deny(format!("{name}: {m}")))?,
            }
        }
        Ok(())
    }

    /// The principal of a long-lived session (a dashboard WebSocket, the stdio key) as the
    /// key store has it now: `Err(INVALID_API_KEY)` once the key is deleted, revoked or
    /// expired (or, in production, lost its expiry), else the principal with the key's
    /// current role, permissions and scope. Counts no rate limit. Anonymous stays anonymous.
    pub fn revalidate(&self, principal: &Principal) -> Result<Principal, Denial> {
        let Some(old) = &principal.key else {
            return Ok(principal.clone());
        };
        let invalid = |m: &str| Denial::new(DenyCode::InvalidApiKey, m, Some(&old.id));
        let current = if self.legacy.as_ref().is_some_and(|l| l.id == old.id) {
            self.legacy.clone()
        } else {
            let keys = self.store.list().map_err(|e| {
                log::error!("key store: {e}");
                invalid("the key store is unavailable")
            })?;
            keys.into_iter().find(|k| k.id == old.id)
        };
        let Some(key) = current else {
            return Err(invalid("the API key was deleted"));
        };
        if !key.active {
            return Err(invalid("the API key is revoked (inactive)"));
        }
        match &key.expires_at {
            Some(at) if expired(at) => return Err(invalid("the API key has expired")),
            None if self.config.level == SecurityLevel::Production && key.role != Role::Admin => {
                return Err(invalid(
                    "production requires an expiry (expires_at) on non-admin keys",
                ))
            }
            _ => {}
        }
        Ok(Principal {
            key: Some(key),
            ..principal.clone()
        })
    }

    /// Step 2 for one JSON-RPC request: the method's permission, for `tools/call` the tool's
    /// (with its `name` and `arguments`).
    pub fn authorize_request(
        &self,
        principal: &Principal,
        request: &crate::mcp::jsonrpc::Request,
    ) -> Result<(), Denial> {
        match tool_call(request) {
            Some((name, arguments)) => self.authorize(principal, &Action::Tool { name, arguments }),
            None => self.authorize(principal, &Action::Method(&request.method)),
        }
    }
}

/// MCP methods (besides `tools/call`) a key limited to rooms or categories may use: the
/// resources, prompts and completions describe the whole house, so they are refused.
const SCOPED_METHODS: [&str; 2] = ["tools/list", "logging/setLevel"];

/// For a `tools/call` request: the tool's `name` (`""` when missing) and `arguments` (empty
/// when missing or not an object); `None` for other methods.
pub fn tool_call(request: &crate::mcp::jsonrpc::Request) -> Option<(&str, &Map<String, Value>)> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    if request.method != "tools/call" {
        return None;
    }
    let params = match &request.params {
        Some(crate::mcp::jsonrpc::Params::Object(p)) => Some(p),
        _ => None,
    };
    let name = params
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let arguments = params
        .and_then(|p| p.get("arguments"))
        .and_then(Value::as_object)
        .unwrap_or_else(|| EMPTY.get_or_init(Map::new));
    Some((name, arguments))
}

/// The permission an MCP method needs; `None`: only a valid key.
fn method_permission(method: &str) -> Option<Permission> {
    match method {
        "initialize" | "ping" | "server/discover" => None,
        m if m.starts_with("notifications/") => None,
        _ => Some(Permission::Read),
    }
}

/// An unparsable expiry counts as expired (fail closed).
fn expired(at: &str) -> bool {
    match humantime::parse_rfc3339_weak(at.trim()) {
        Ok(t) => t <= SystemTime::now(),
        Err(_) => {
            log::warn!("API key expiry {at:?} is not an ISO 8601 UTC time; treated as expired");
            true
        }
    }
}

/// A v4-mapped v6 address as v4.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// `ip` matches an address or CIDR range of the key's whitelist.
fn whitelisted(key: &ApiKey, ip: IpAddr) -> bool {
    in_networks(&key.ip_whitelist, ip)
}

/// `ip` matches an address or CIDR range of `list` (v4-mapped v6 counts as v4); invalid
/// entries match nothing (logged).
pub fn in_networks(list: &[String], ip: IpAddr) -> bool {
    let ip = canonical(ip);
    list.iter().any(|entry| {
        let entry = entry.trim();
        if let Ok(net) = entry.parse::<ipnet::IpNet>() {
            net.contains(&ip)
        } else if let Ok(addr) = entry.parse::<IpAddr>() {
            addr == ip
        } else {
            log::warn!("ignoring invalid ip_whitelist entry {entry:?}");
            false
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subprotocol_keys() {
        assert_eq!(subprotocol_key(Some("home-mcp, key.abc")), Some("abc"));
        assert_eq!(subprotocol_key(Some("key.abc,home-mcp")), Some("abc"));
        assert_eq!(subprotocol_key(Some("home-mcp")), None);
        assert_eq!(subprotocol_key(Some("home-mcp, key.")), None);
        assert_eq!(subprotocol_key(None), None);
    }
}

//! OAuth 2.1 sign-in for MCP clients, with home-mcp as its own authorization server (issue 15;
//! the MCP authorization spec 2025-11-25). The HTTP routes are in `crate::http::oauth`; this
//! module holds every decision and no HTTP.
//!
//! ## The flow
//! 1. An MCP client without a key gets `401` with `WWW-Authenticate: Bearer
//!    resource_metadata="…"` (RFC 9728 §5.1), reads the protected resource metadata, then the
//!    authorization server metadata ([`OAuth::server_metadata`], RFC 8414).
//! 2. It registers ([`OAuth::register`], RFC 7591). **Client ids are stateless**: the id is the
//!    client's name and redirect URIs, signed with the server's secret ([`Secret`]), so
//!    registration stores nothing and a stranger registering a million clients costs no
//!    memory; an id survives restarts as long as the secret does. Client ID Metadata Documents
//!    are not supported (`client_id_metadata_document_supported: false`): they need the server
//!    to fetch a URL a stranger names, from a Pi that may have no internet and must not be
//!    made to probe the owner's network; the spec lets clients fall back to registration.
//! 3. It sends the owner's browser to `/authorize` (authorization code, PKCE `S256` only,
//!    [`OAuth::authorization_request`]). The consent page asks for an admin key and the grant:
//!    a role ([`GRANTABLE_ROLES`]), an expiry in days and optionally rooms and categories
//!    ([`Grant`]). Approval makes a one-use code ([`OAuth::approve`]) that lives
//!    [`OAuthConfig::code_lifetime`] (default 5 minutes); the browser is redirected with
//!    `code`, `state` and `iss` (RFC 9207).
//! 4. `/token` ([`OAuth::token`]) exchanges the code (with the PKCE verifier) for an access
//!    token that **is an API key** in the key store, named "`<client name>` (OAuth)", with the
//!    grant's role and scope and an expiry of [`OAuthConfig::access_token_lifetime`] (default
//!    one hour; never past the grant's expiry). It shows on `/admin/keys` and in the audit log
//!    like any key, and revoking or deleting it ends the grant.
//! 5. The refresh token ([`RefreshToken`]) is signed too: it names the current key (by the
//!    SHA-256 of its id), the client and the grant's expiry. A refresh issues a new key with
//!    the same grant and deletes the old one (rotation, OAuth 2.1 §4.3.1): a refresh token
//!    works once, and not at all once its key was revoked (inactive) or deleted.
//!
//! ## Bounds (every input a stranger controls)
//! Client names at most [`MAX_CLIENT_NAME`] characters, at most [`MAX_REDIRECT_URIS`] redirect
//! URIs of at most [`MAX_REDIRECT_URI_LEN`] bytes each; `state`, `scope` and `resource` at most
//! [`MAX_PARAM_LEN`]; PKCE challenges and verifiers 43-128 characters. Pending codes at most
//! [`MAX_PENDING_CODES`] (only an admin's approval makes one), spent codes remembered for
//! replay detection at most as many, for a code lifetime.
//!
//! ## Errors
//! [`OAuthError`] carries the RFC 6749 / 7591 / 8707 code ([`ErrorCode`]) and a description;
//! the HTTP layer renders `{"error", "error_description"}` with [`ErrorCode::status`].

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::prelude::{Engine as _, BASE64_URL_SAFE_NO_PAD};
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::store::{KeyStore, StoreError};
use super::{ApiKey, Role, Usage};

/// Default lifetime of an authorization code.
pub const DEFAULT_CODE_LIFETIME: Duration = Duration::from_secs(300);
/// Default lifetime of an access token (the API key a token request issues).
pub const DEFAULT_ACCESS_TOKEN_LIFETIME: Duration = Duration::from_secs(3600);
/// Codes waiting for their token request, at most.
pub const MAX_PENDING_CODES: usize = 64;
/// Longest client name (characters).
pub const MAX_CLIENT_NAME: usize = 100;
/// Most redirect URIs per client.
pub const MAX_REDIRECT_URIS: usize = 4;
/// Longest redirect URI (bytes).
pub const MAX_REDIRECT_URI_LEN: usize = 512;
/// Longest `state`, `scope`, `resource` (bytes).
pub const MAX_PARAM_LEN: usize = 1024;
/// Most rooms or categories in one grant.
pub const MAX_SCOPE_ENTRIES: usize = 64;
/// Longest grant expiry in days.
pub const MAX_GRANT_DAYS: u32 = 365;
/// The roles the consent page offers. `device` keys need a device list and `custom` keys a
/// permission list; both are made on `/admin/keys`.
pub const GRANTABLE_ROLES: [Role; 3] = [Role::Monitor, Role::Operator, Role::Admin];

/// `[oauth]` settings.
#[derive(Debug, Clone, PartialEq)]
pub struct OAuthConfig {
    /// Serve the OAuth endpoints (default true; needs a writable key store).
    pub enabled: bool,
    /// The issuer URL (`https://home.example:8443`, no path); `None`: `http://` + the
    /// request's `Host` (fine on loopback and behind nothing; set it behind a TLS proxy).
    pub issuer: Option<String>,
    /// How long a code is valid (default [`DEFAULT_CODE_LIFETIME`]).
    pub code_lifetime: Duration,
    /// How long an access token (API key) is valid (default [`DEFAULT_ACCESS_TOKEN_LIFETIME`]).
    pub access_token_lifetime: Duration,
}

impl Default for OAuthConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            issuer: None,
            code_lifetime: DEFAULT_CODE_LIFETIME,
            access_token_lifetime: DEFAULT_ACCESS_TOKEN_LIFETIME,
        }
    }
}

/// The error codes of RFC 6749 §4.1.2.1/§5.2, RFC 7591 §3.2.2 and RFC 8707 §2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    InvalidRequest,
    InvalidClient,
    InvalidGrant,
    UnauthorizedClient,
    UnsupportedGrantType,
    UnsupportedResponseType,
    AccessDenied,
    InvalidTarget,
    InvalidRedirectUri,
    InvalidClientMetadata,
    ServerError,
    TemporarilyUnavailable,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::InvalidClient => "invalid_client",
            ErrorCode::InvalidGrant => "invalid_grant",
            ErrorCode::UnauthorizedClient => "unauthorized_client",
            ErrorCode::UnsupportedGrantType => "unsupported_grant_type",
            ErrorCode::UnsupportedResponseType => "unsupported_response_type",
            ErrorCode::AccessDenied => "access_denied",
            ErrorCode::InvalidTarget => "invalid_target",
            ErrorCode::InvalidRedirectUri => "invalid_redirect_uri",
            ErrorCode::InvalidClientMetadata => "invalid_client_metadata",
            ErrorCode::ServerError => "server_error",
            ErrorCode::TemporarilyUnavailable => "temporarily_unavailable",
        }
    }

    /// HTTP status of a token or registration error: 401 for `invalid_client` (RFC 6749
    /// §5.2), 500/503 for server trouble, else 400.
    pub fn status(self) -> u16 {
        match self {
            ErrorCode::InvalidClient => 401,
            ErrorCode::ServerError => 500,
            ErrorCode::TemporarilyUnavailable => 503,
            _ => 400,
        }
    }
}

/// A refused OAuth request.
#[derive(Debug, Clone, PartialEq)]
pub struct OAuthError {
    pub code: ErrorCode,
    pub description: String,
}

impl OAuthError {
    pub fn new(code: ErrorCode, description: impl Into<String>) -> Self {
        Self {
            code,
            description: description.into(),
        }
    }

    /// `{"error": code, "error_description": description}`.
    pub fn body(&self) -> Value {
        json!({"error": self.code.as_str(), "error_description": self.description})
    }
}

impl fmt::Display for OAuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.description)
    }
}

impl std::error::Error for OAuthError {}

fn err(code: ErrorCode, description: impl Into<String>) -> OAuthError {
    OAuthError::new(code, description)
}

/// The server's signing secret (32 random bytes): signs client ids and refresh tokens.
#[derive(Clone)]
pub struct Secret([u8; 32]);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl Secret {
    /// A new secret from the OS CSPRNG.
    pub fn random() -> Result<Secret, getrandom::Error> {
        let mut b = [0u8; 32];
        getrandom::fill(&mut b)?;
        Ok(Secret(b))
    }

    /// The secret in `path` (64 hex digits), created with mode 0600 when missing, so client
    /// ids and refresh tokens survive restarts. Errors: unreadable, unwritable or damaged file.
    pub fn load_or_create(path: &Path) -> Result<Secret, String> {
        let shown = path.display();
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let bytes = hex::decode(text.trim()).map_err(|e| format!("{shown}: {e}"))?;
                let b: [u8; 32] = bytes
                    .try_into()
                    .map_err(|_| format!("{shown}: not 32 bytes"))?;
                Ok(Secret(b))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let secret = Secret::random().map_err(|e| format!("no random numbers: {e}"))?;
                let mut f = crate::files::private()
                    .write(true)
                    .create_new(true)
                    .open(path)
                    .map_err(|e| format!("{shown}: {e}"))?;
                std::io::Write::write_all(&mut f, hex::encode(secret.0).as_bytes())
                    .and_then(|()| f.sync_all())
                    .map_err(|e| format!("{shown}: {e}"))?;
                Ok(secret)
            }
            Err(e) => Err(format!("{shown}: {e}")),
        }
    }

    fn mac(&self, purpose: &str, payload: &[u8]) -> [u8; 32] {
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("any key length");
        m.update(purpose.as_bytes());
        m.update(&[0]);
        m.update(payload);
        m.finalize().into_bytes().into()
    }

    /// `prefix` + base64url(payload) + `.` + base64url(first 16 bytes of the MAC).
    fn sign(&self, prefix: &str, payload: &[u8]) -> String {
        let mac = self.mac(prefix, payload);
        format!(
            "{prefix}{}.{}",
            BASE64_URL_SAFE_NO_PAD.encode(payload),
            BASE64_URL_SAFE_NO_PAD.encode(&mac[..16])
        )
    }

    /// The payload of a token [`Secret::sign`] made with `prefix`; `None` when forged or
    /// malformed.
    fn open(&self, prefix: &str, token: &str) -> Option<Vec<u8>> {
        let (payload, mac) = token.strip_prefix(prefix)?.split_once('.')?;
        let payload = BASE64_URL_SAFE_NO_PAD.decode(payload).ok()?;
        let mac = BASE64_URL_SAFE_NO_PAD.decode(mac).ok()?;
        let expected = self.mac(prefix, &payload);
        (mac.len() == 16 && bool::from(mac.ct_eq(&expected[..16]))).then_some(payload)
    }
}

const CLIENT_PREFIX: &str = "hmc_";
const REFRESH_PREFIX: &str = "hmr_";

/// A registered client, as its signed id carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Client {
    #[serde(rename = "n")]
    pub name: String,
    #[serde(rename = "r")]
    pub redirect_uris: Vec<String>,
    /// Registered with `grant_types` that leave out `refresh_token`: gets no refresh token,
    /// and a refresh request is `unauthorized_client`.
    #[serde(rename = "x", default, skip_serializing_if = "std::ops::Not::not")]
    pub no_refresh: bool,
}

/// Whether `uri` may receive codes: `https://` with a host, or `http://` to a loopback host
/// (`localhost`, `127.0.0.0/8`, `[::1]`); no fragment, no user info, at most
/// [`MAX_REDIRECT_URI_LEN`] bytes.
pub fn check_redirect_uri(uri: &str) -> Result<(), String> {
    if uri.len() > MAX_REDIRECT_URI_LEN {
        return Err(format!(
            "redirect URI longer than {MAX_REDIRECT_URI_LEN} bytes"
        ));
    }
    if uri.contains('#') || uri.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{uri:?}: no fragment or white space allowed"));
    }
    let Some((scheme, rest)) = uri.split_once("://") else {
        return Err(format!("{uri:?} is not an absolute URI"));
    };
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    if authority.is_empty() || authority.contains('@') {
        return Err(format!("{uri:?}: no host, or user info in it"));
    }
    match scheme.to_ascii_lowercase().as_str() {
        "https" => Ok(()),
        "http" if is_loopback_host(host_of(authority)) => Ok(()),
        "http" => Err(format!(
            "{uri:?}: plain http only to loopback (localhost, 127.0.0.1, [::1]); use https"
        )),
        _ => Err(format!("{uri:?}: only https and loopback http")),
    }
}

/// The host of `host[:port]` or `[v6]:port` (brackets kept).
fn host_of(authority: &str) -> &str {
    if authority.starts_with('[') {
        authority
            .find(']')
            .map_or(authority, |end| &authority[..=end])
    } else {
        authority.split(':').next().unwrap_or(authority)
    }
}

fn is_loopback_host(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host == "[::1]"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Whether a presented `redirect_uri` matches a registered one: exactly, or for loopback IP
/// literals with any port (RFC 8252 §7.3: native apps pick their port when they start).
fn redirect_matches(registered: &str, presented: &str) -> bool {
    if registered == presented {
        return true;
    }
    let split = |u: &str| -> Option<(String, String, String)> {
        let (scheme, rest) = u.split_once("://")?;
        let cut = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(cut);
        let host = host_of(authority);
        (scheme == "http" && (host == "[::1]" || host.starts_with("127.")))
            .then(|| (scheme.to_string(), host.to_string(), tail.to_string()))
    };
    matches!((split(registered), split(presented)), (Some(a), Some(b)) if a == b)
}

/// What the consent page grants: a role, an expiry and optionally rooms and categories.
#[derive(Debug, Clone, PartialEq)]
pub struct Grant {
    pub role: Role,
    /// Days until the grant (its refresh token) expires: 1-[`MAX_GRANT_DAYS`].
    pub days: u32,
    /// Rooms (names or UUIDs); empty: all.
    pub rooms: Vec<String>,
    /// Families or categories; empty: all.
    pub categories: Vec<String>,
    /// The owner ticked "may see camera pictures" (the key's `cameras` grant).
    pub cameras: bool,
    /// The tool profile the key gets (`full`, `lean`; issue 33); `None`: the server's default.
    /// Set from the form's `profile` ([`Grant::with_profile`]).
    pub profile: Option<crate::home::Profile>,
    /// The name of the admin key that approved it.
    pub granted_by: String,
}

impl Grant {
    /// A grant from the consent form's values: `role` one of [`GRANTABLE_ROLES`], `days`
    /// 1-[`MAX_GRANT_DAYS`], at most [`MAX_SCOPE_ENTRIES`] rooms and categories of at most 200
    /// characters each. Errors: a message for the page.
    pub fn from_form(
        role: &str,
        days: &str,
        rooms: Vec<String>,
        categories: Vec<String>,
        cameras: bool,
        granted_by: &str,
    ) -> Result<Grant, String> {
        let role = Role::parse(role)
            .filter(|r| GRANTABLE_ROLES.contains(r))
            .ok_or_else(|| format!("role {role:?} is not one of monitor, operator, admin"))?;
        let days: u32 = days
            .trim()
            .parse()
            .ok()
            .filter(|d| (1..=MAX_GRANT_DAYS).contains(d))
            .ok_or_else(|| format!("expiry {days:?} is not 1-{MAX_GRANT_DAYS} days"))?;
        for list in [&rooms, &categories] {
            if list.len() > MAX_SCOPE_ENTRIES
                || list
                    .iter()
                    .any(|s| s.trim().is_empty() || s.chars().count() > 200)
            {
                return Err(format!(
                    "at most {MAX_SCOPE_ENTRIES} rooms and categories of 1-200 characters"
                ));
            }
        }
        Ok(Grant {
            role,
            days,
            rooms,
            categories,
            cameras,
            profile: None,
            granted_by: granted_by.to_string(),
        })
    }

    /// The grant with the consent form's `profile` (`full`, `lean`; empty or absent: the
    /// server's default). Errors: a message for the page.
    pub fn with_profile(mut self, profile: Option<&str>) -> Result<Grant, String> {
        self.profile = match profile.map(str::trim).filter(|p| !p.is_empty()) {
            None => None,
            Some(p) => Some(
                crate::home::Profile::parse(p)
                    .ok_or_else(|| format!("tools {p:?} is not full or lean"))?,
            ),
        };
        Ok(self)
    }
}

/// A checked authorization request (`GET`/`POST /authorize`).
#[derive(Debug, Clone, PartialEq)]
pub struct AuthorizationRequest {
    pub client_id: String,
    pub client: Client,
    /// The redirect URI codes go to (the presented one, or the only registered one).
    pub redirect_uri: String,
    /// Echoed unchanged in the redirect.
    pub state: Option<String>,
    /// The PKCE S256 challenge.
    pub code_challenge: String,
    /// RFC 8707 `resource`, when sent (checked against this server's by the caller).
    pub resource: Option<String>,
    /// `scope`, when sent (granted by the consent page, not by name; echoed nowhere).
    pub scope: Option<String>,
}

/// Why `/authorize` refused.
#[derive(Debug, Clone, PartialEq)]
pub enum AuthorizeError {
    /// The client or redirect URI is not trustworthy: show the error, never redirect
    /// (RFC 6749 §4.1.2.1).
    Page(OAuthError),
    /// Redirect to the client's URI with `error`, `state` and `iss`.
    Redirect {
        redirect_uri: String,
        state: Option<String>,
        error: OAuthError,
    },
}

/// One authorization code waiting for its token request.
#[derive(Debug, Clone)]
struct PendingCode {
    client_id: String,
    redirect_uri: String,
    code_challenge: String,
    grant: Grant,
    made: Instant,
}

/// Pending and spent codes.
#[derive(Debug, Default)]
struct Codes {
    /// SHA-256 of the code -> the code's request.
    pending: HashMap<[u8; 32], PendingCode>,
    /// SHA-256 of a used code -> when, and the key it issued (revoked if the code comes
    /// back: RFC 6749 §4.1.2).
    spent: HashMap<[u8; 32], (Instant, String)>,
}

/// The payload of a refresh token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RefreshToken {
    /// Hex SHA-256 of the current access key's id.
    #[serde(rename = "k")]
    pub key_digest: String,
    /// Hex SHA-256 of the client id, first 16 bytes.
    #[serde(rename = "c")]
    pub client_digest: String,
    /// When the grant ends, Unix seconds.
    #[serde(rename = "x")]
    pub grant_expires: u64,
}

/// The authorization server. One per process; shared by the HTTP workers.
pub struct OAuth {
    config: OAuthConfig,
    secret: Secret,
    store: Arc<dyn KeyStore>,
    codes: Mutex<Codes>,
}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuth")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn sha256(s: &str) -> [u8; 32] {
    Sha256::digest(s.as_bytes()).into()
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The PKCE S256 challenge of `verifier`: base64url(SHA-256(verifier)), no padding.
pub fn pkce_challenge(verifier: &str) -> String {
    BASE64_URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// RFC 7636 §4.1: 43-128 characters of `[A-Za-z0-9-._~]`.
fn valid_pkce_string(s: &str) -> bool {
    (43..=128).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
}

/// Request parameters (query or form), each name at most once (RFC 6749 §3.1) except those
/// the caller reads with [`Params::all`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Params(pub Vec<(String, String)>);

impl Params {
    /// Parses `application/x-www-form-urlencoded` (`+` is a space); at most 200 pairs.
    pub fn parse(text: &str) -> Result<Params, OAuthError> {
        let mut out = Vec::new();
        for pair in text.split('&').filter(|p| !p.is_empty()) {
            if out.len() >= 200 {
                return Err(err(ErrorCode::InvalidRequest, "too many parameters"));
            }
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let decode = |s: &str| {
                percent_encoding::percent_decode_str(&s.replace('+', " "))
                    .decode_utf8()
                    .map(|c| c.into_owned())
                    .map_err(|_| err(ErrorCode::InvalidRequest, "parameters are not UTF-8"))
            };
            out.push((decode(k)?, decode(v)?));
        }
        Ok(Params(out))
    }

    /// The one value of `name` (`None` when absent or empty). Errors: sent twice, or longer
    /// than `max` bytes.
    pub fn one(&self, name: &str, max: usize) -> Result<Option<&str>, OAuthError> {
        let mut values = self.0.iter().filter(|(k, _)| k == name);
        let first = values.next().map(|(_, v)| v.as_str());
        if values.next().is_some() {
            return Err(err(
                ErrorCode::InvalidRequest,
                format!("{name} is sent more than once"),
            ));
        }
        match first {
            Some(v) if v.len() > max => Err(err(
                ErrorCode::InvalidRequest,
                format!("{name} is longer than {max} bytes"),
            )),
            Some("") | None => Ok(None),
            Some(v) => Ok(Some(v)),
        }
    }

    /// [`Params::one`] that must be present.
    pub fn required(&self, name: &str, max: usize) -> Result<&str, OAuthError> {
        self.one(name, max)?
            .ok_or_else(|| err(ErrorCode::InvalidRequest, format!("{name} is missing")))
    }

    /// Every non-empty value of `name`, in order.
    pub fn all(&self, name: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, v)| k == name && !v.trim().is_empty())
            .map(|(_, v)| v.clone())
            .collect()
    }
}

/// `uri` with `params` added to its query, percent-encoded.
pub fn with_query(uri: &str, params: &[(&str, &str)]) -> String {
    use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
    let mut out = uri.to_string();
    let mut sep = if uri.contains('?') { '&' } else { '?' };
    for (k, v) in params {
        out.push(sep);
        out.push_str(k);
        out.push('=');
        out.push_str(&utf8_percent_encode(v, NON_ALPHANUMERIC).to_string());
        sep = '&';
    }
    out
}

impl OAuth {
    pub fn new(config: OAuthConfig, store: Arc<dyn KeyStore>, secret: Secret) -> Self {
        Self {
            config,
            secret,
            store,
            codes: Mutex::new(Codes::default()),
        }
    }

    pub fn config(&self) -> &OAuthConfig {
        &self.config
    }

    /// The issuer for a request that came in with `host` (the `Host` header): the configured
    /// issuer, else `http://{host}`, without a trailing slash.
    pub fn issuer(&self, host: &str) -> String {
        match &self.config.issuer {
            Some(i) => i.trim_end_matches('/').to_string(),
            None => format!("http://{host}"),
        }
    }

    /// Checks an RFC 8707 `resource` sent to `/authorize` or `/token` against this server
    /// (`issuer`): it must name the server's root or its MCP endpoint `/mcp` (scheme and host
    /// case-insensitive, a trailing slash ignored). Errors: `invalid_target`.
    pub fn check_resource(&self, issuer: &str, resource: &str) -> Result<(), OAuthError> {
        let r = resource.trim_end_matches('/');
        let ours = |candidate: &str| {
            let Some((scheme, rest)) = r.split_once("://") else {
                return false;
            };
            let Some((cs, crest)) = candidate.split_once("://") else {
                return false;
            };
            let path = |s: &str| s.find('/').map_or(String::new(), |i| s[i..].to_string());
            let auth = |s: &str| s.split('/').next().unwrap_or("").to_ascii_lowercase();
            scheme.eq_ignore_ascii_case(cs)
                && auth(rest) == auth(crest)
                && path(rest) == path(crest)
        };
        if ours(issuer) || ours(&format!("{issuer}/mcp")) {
            Ok(())
        } else {
            Err(err(
                ErrorCode::InvalidTarget,
                format!("resource {resource:?} is not this server ({issuer}/mcp)"),
            ))
        }
    }

    /// RFC 9728 protected resource metadata of `resource` (this server's MCP endpoint, or its
    /// root), served by `issuer`.
    pub fn resource_metadata(&self, issuer: &str, resource: &str) -> Value {
        json!({
            "resource": resource,
            "authorization_servers": [issuer],
            "bearer_methods_supported": ["header"],
            "resource_name": "home-mcp",
        })
    }

    /// RFC 8414 authorization server metadata of `issuer`.
    pub fn server_metadata(&self, issuer: &str) -> Value {
        json!({
            "issuer": issuer,
            "authorization_endpoint": format!("{issuer}/authorize"),
            "token_endpoint": format!("{issuer}/token"),
            "registration_endpoint": format!("{issuer}/register"),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "authorization_response_iss_parameter_supported": true,
            "client_id_metadata_document_supported": false,
        })
    }

    /// RFC 7591 registration of a public client from its metadata: `redirect_uris` (required,
    /// 1-[`MAX_REDIRECT_URIS`], see [`check_redirect_uri`]), `client_name` (optional, at most
    /// [`MAX_CLIENT_NAME`] characters; default "MCP client"), `grant_types` within
    /// `authorization_code`/`refresh_token`, `response_types` within `code`. Any
    /// `token_endpoint_auth_method` is answered with `none` (public client, no secret).
    /// Returns the 201 body. Errors: `invalid_redirect_uri`, `invalid_client_metadata`.
    pub fn register(&self, metadata: &Value) -> Result<Value, OAuthError> {
        let meta = metadata.as_object().ok_or_else(|| {
            err(
                ErrorCode::InvalidClientMetadata,
                "the body must be a JSON object",
            )
        })?;
        let uris = meta
            .get("redirect_uris")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                err(
                    ErrorCode::InvalidRedirectUri,
                    "redirect_uris (a list of URIs) is required",
                )
            })?;
        if uris.is_empty() || uris.len() > MAX_REDIRECT_URIS {
            return Err(err(
                ErrorCode::InvalidRedirectUri,
                format!("1-{MAX_REDIRECT_URIS} redirect_uris"),
            ));
        }
        let mut redirect_uris = Vec::new();
        for u in uris {
            let u = u
                .as_str()
                .ok_or_else(|| err(ErrorCode::InvalidRedirectUri, "redirect URIs are strings"))?;
            check_redirect_uri(u).map_err(|m| err(ErrorCode::InvalidRedirectUri, m))?;
            redirect_uris.push(u.to_string());
        }
        let name = match meta.get("client_name") {
            None | Some(Value::Null) => "MCP client".to_string(),
            Some(Value::String(s)) => {
                let s = s.trim();
                if s.is_empty()
                    || s.chars().count() > MAX_CLIENT_NAME
                    || s.chars().any(char::is_control)
                {
                    return Err(err(
                        ErrorCode::InvalidClientMetadata,
                        format!("client_name: 1-{MAX_CLIENT_NAME} printable characters"),
                    ));
                }
                s.to_string()
            }
            Some(_) => {
                return Err(err(
                    ErrorCode::InvalidClientMetadata,
                    "client_name must be a string",
                ))
            }
        };
        let listed = |field: &str, allowed: &[&str]| -> Result<(), OAuthError> {
            match meta.get(field) {
                None | Some(Value::Null) => Ok(()),
                Some(Value::Array(a))
                    if a.iter()
                        .all(|v| v.as_str().is_some_and(|s| allowed.contains(&s))) =>
                {
                    Ok(())
                }
                Some(_) => Err(err(
                    ErrorCode::InvalidClientMetadata,
                    format!("{field}: only {}", allowed.join(", ")),
                )),
            }
        };
        listed("grant_types", &["authorization_code", "refresh_token"])?;
        listed("response_types", &["code"])?;
        // Without `grant_types` the client gets both (the server may assign them, RFC 7591
        // §3.2.1); listed without `refresh_token`, it gets no refresh tokens.
        let no_refresh = meta
            .get("grant_types")
            .and_then(Value::as_array)
            .is_some_and(|g| !g.iter().any(|v| v == "refresh_token"));
        let client = Client {
            name,
            redirect_uris,
            no_refresh,
        };
        let grant_types: &[&str] = if no_refresh {
            &["authorization_code"]
        } else {
            &["authorization_code", "refresh_token"]
        };
        let payload =
            serde_json::to_vec(&client).map_err(|e| err(ErrorCode::ServerError, e.to_string()))?;
        let client_id = self.secret.sign(CLIENT_PREFIX, &payload);
        log::debug!("OAuth client registered: {:?}", client.name);
        Ok(json!({
            "client_id": client_id,
            "client_id_issued_at": unix_now(),
            "client_name": client.name,
            "redirect_uris": client.redirect_uris,
            "grant_types": grant_types,
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }))
    }

    /// The client a `client_id` names. Errors: `invalid_client` when forged or malformed.
    pub fn client(&self, client_id: &str) -> Result<Client, OAuthError> {
        self.secret
            .open(CLIENT_PREFIX, client_id)
            .and_then(|p| serde_json::from_slice(&p).ok())
            .ok_or_else(|| {
                err(
                    ErrorCode::InvalidClient,
                    "unknown client_id (register at /register)",
                )
            })
    }

    /// Checks an authorization request (RFC 6749 §4.1.1 with PKCE, OAuth 2.1): `client_id`
    /// and `redirect_uri` first (errors shown on the page), then `response_type=code`,
    /// `code_challenge` with `code_challenge_method=S256` (errors redirected).
    pub fn authorization_request(
        &self,
        p: &Params,
    ) -> Result<AuthorizationRequest, AuthorizeError> {
        let page = AuthorizeError::Page;
        let client_id = p.required("client_id", 4096).map_err(page)?.to_string();
        let client = self.client(&client_id).map_err(page)?;
        let redirect_uri = match p.one("redirect_uri", MAX_REDIRECT_URI_LEN).map_err(page)? {
            Some(u) if client.redirect_uris.iter().any(|r| redirect_matches(r, u)) => u.to_string(),
            Some(u) => {
                return Err(page(err(
                    ErrorCode::InvalidRequest,
                    format!("redirect_uri {u:?} is not registered for this client"),
                )))
            }
            None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
            None => {
                return Err(page(err(
                    ErrorCode::InvalidRequest,
                    "redirect_uri is missing (the client registered several)",
                )))
            }
        };
        // From here on the redirect URI is trusted: errors go back to the client.
        let state = p
            .one("state", MAX_PARAM_LEN)
            .ok()
            .flatten()
            .map(str::to_string);
        let redirect = |error: OAuthError| AuthorizeError::Redirect {
            redirect_uri: redirect_uri.clone(),
            state: state.clone(),
            error,
        };
        let checked = (|| {
            p.one("state", MAX_PARAM_LEN)?;
            match p.required("response_type", 64)? {
                "code" => {}
                other => {
                    return Err(err(
                        ErrorCode::UnsupportedResponseType,
                        format!("response_type {other:?}: only code"),
                    ))
                }
            }
            let challenge = p.one("code_challenge", 256)?.ok_or_else(|| {
                err(
                    ErrorCode::InvalidRequest,
                    "code_challenge is required (PKCE with S256)",
                )
            })?;
            match p.one("code_challenge_method", 64)? {
                Some("S256") => {}
                Some(m) => {
                    return Err(err(
                        ErrorCode::InvalidRequest,
                        format!("code_challenge_method {m:?}: only S256"),
                    ))
                }
                None => {
                    return Err(err(
                        ErrorCode::InvalidRequest,
                        "code_challenge_method is required and must be S256 (plain is refused)",
                    ))
                }
            }
            if challenge.len() != 43
                || BASE64_URL_SAFE_NO_PAD
                    .decode(challenge)
                    .map_or(true, |b| b.len() != 32)
            {
                return Err(err(
                    ErrorCode::InvalidRequest,
                    "code_challenge is not an S256 challenge (43 characters of base64url)",
                ));
            }
            Ok(AuthorizationRequest {
                client_id: client_id.clone(),
                client: client.clone(),
                redirect_uri: redirect_uri.clone(),
                state: state.clone(),
                code_challenge: challenge.to_string(),
                resource: p.one("resource", MAX_PARAM_LEN)?.map(str::to_string),
                scope: p.one("scope", MAX_PARAM_LEN)?.map(str::to_string),
            })
        })();
        checked.map_err(redirect)
    }

    /// Makes the one-use code for an approved request. Errors: `temporarily_unavailable`
    /// when [`MAX_PENDING_CODES`] codes are pending.
    pub fn approve(
        &self,
        request: &AuthorizationRequest,
        grant: Grant,
    ) -> Result<String, OAuthError> {
        let mut b = [0u8; 32];
        getrandom::fill(&mut b).map_err(|e| err(ErrorCode::ServerError, e.to_string()))?;
        let code = BASE64_URL_SAFE_NO_PAD.encode(b);
        let mut codes = self.codes.lock().unwrap_or_else(|e| e.into_inner());
        let life = self.config.code_lifetime;
        codes.pending.retain(|_, c| c.made.elapsed() <= life);
        codes.spent.retain(|_, (at, _)| at.elapsed() <= life);
        if codes.pending.len() >= MAX_PENDING_CODES {
            return Err(err(
                ErrorCode::TemporarilyUnavailable,
                "too many sign-ins in progress; try again in a few minutes",
            ));
        }
        codes.pending.insert(
            sha256(&code),
            PendingCode {
                client_id: request.client_id.clone(),
                redirect_uri: request.redirect_uri.clone(),
                code_challenge: request.code_challenge.clone(),
                grant,
                made: Instant::now(),
            },
        );
        Ok(code)
    }

    /// The token endpoint (RFC 6749 §4.1.3, §6): `grant_type` `authorization_code` (`code`,
    /// `redirect_uri`, `client_id`, `code_verifier`) or `refresh_token` (`refresh_token`,
    /// `client_id`). Returns the 200 body (`access_token`, `token_type`, `expires_in`,
    /// `refresh_token`). `resource`, when sent, has been checked by the caller.
    pub fn token(&self, p: &Params) -> Result<Value, OAuthError> {
        match p.required("grant_type", 64)? {
            "authorization_code" => self.exchange_code(p),
            "refresh_token" => self.refresh(p),
            other => Err(err(
                ErrorCode::UnsupportedGrantType,
                format!("grant_type {other:?}: only authorization_code and refresh_token"),
            )),
        }
    }

    fn exchange_code(&self, p: &Params) -> Result<Value, OAuthError> {
        let code = p.required("code", 256)?;
        let client_id = p.required("client_id", 4096)?;
        let client = self.client(client_id)?;
        let verifier = p
            .one("code_verifier", 256)?
            .ok_or_else(|| err(ErrorCode::InvalidRequest, "code_verifier is missing (PKCE)"))?;
        let redirect_uri = p.one("redirect_uri", MAX_REDIRECT_URI_LEN)?;
        let digest = sha256(code);
        let pending = {
            let mut codes = self.codes.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((_, key_id)) = codes.spent.remove(&digest) {
                drop(codes);
                // A code used twice: someone else has it. Revoke what it issued.
                match self.store.delete(&key_id) {
                    Ok(()) => log::warn!(
                        "OAuth code replayed: revoked the key {} it had issued",
                        super::mask(&key_id)
                    ),
                    Err(StoreError::NotFound) => {}
                    Err(e) => log::error!("OAuth code replayed; revoking its key failed: {e}"),
                }
                return Err(err(
                    ErrorCode::InvalidGrant,
                    "the authorization code was already used",
                ));
            }
            let Some(pending) = codes.pending.get(&digest) else {
                return Err(err(ErrorCode::InvalidGrant, "unknown authorization code"));
            };
            if pending.made.elapsed() > self.config.code_lifetime {
                codes.pending.remove(&digest);
                return Err(err(
                    ErrorCode::InvalidGrant,
                    "the authorization code has expired",
                ));
            }
            if pending.client_id != client_id {
                return Err(err(
                    ErrorCode::InvalidGrant,
                    "the authorization code was issued to another client",
                ));
            }
            if redirect_uri.is_some_and(|u| u != pending.redirect_uri) {
                return Err(err(
                    ErrorCode::InvalidGrant,
                    "redirect_uri differs from the authorization request's",
                ));
            }
            if !valid_pkce_string(verifier)
                || !bool::from(
                    pkce_challenge(verifier)
                        .as_bytes()
                        .ct_eq(pending.code_challenge.as_bytes()),
                )
            {
                return Err(err(
                    ErrorCode::InvalidGrant,
                    "code_verifier does not match the code_challenge",
                ));
            }
            codes.pending.remove(&digest).expect("checked above")
        };
        let grant_expires = unix_now() + u64::from(pending.grant.days) * 86_400;
        let key = self.issue_key(&pending, &client)?;
        {
            let mut codes = self.codes.lock().unwrap_or_else(|e| e.into_inner());
            if codes.spent.len() < MAX_PENDING_CODES {
                codes.spent.insert(digest, (Instant::now(), key.id.clone()));
            }
        }
        log::info!(
            "OAuth: {:?} signed in as {} ({} key {}, granted by {:?} for {} days)",
            client.name,
            key.name,
            key.role,
            super::mask(&key.id),
            pending.grant.granted_by,
            pending.grant.days
        );
        Ok(self.token_body(&key, client_id, &client, grant_expires))
    }

    /// The access key for a fresh grant.
    fn issue_key(&self, pending: &PendingCode, client: &Client) -> Result<ApiKey, OAuthError> {
        let grant = &pending.grant;
        let created_at = crate::time::now_iso8601();
        let expires_at = self.access_expiry(unix_now() + u64::from(grant.days) * 86_400);
        let random = random_hex()?;
        let name = format!("{} (OAuth)", client.name);
        let created_by = format!("oauth, granted by {}", grant.granted_by);
        let role = grant.role;
        // Built from its serialised form, so that fields added to key records later take
        // their defaults here as they do when a key file is read.
        let template: ApiKey = serde_json::from_value(json!({
            "id": "",
            "name": name,
            "role": role,
            "created_by": created_by,
            "created_at": created_at,
            "active": true,
            "expires_at": expires_at,
            "rooms": grant.rooms,
            "categories": grant.categories,
            "cameras": grant.cameras,
            "profile": grant.profile,
        }))
        .map_err(|e| err(ErrorCode::ServerError, e.to_string()))?;
        // The grant outlives each access key (a refresh issues a new one): its own random id.
        let grant_id = random_hex()?;
        self.store
            .insert_new(&mut |keys| ApiKey {
                id: format!(
                    "homekey_{role}_{}_{random}",
                    super::keys::next_sequence(keys)
                ),
                grant: Some(grant_id.clone()),
                ..template.clone()
            })
            .map_err(store_error)
    }

    /// ISO 8601 expiry of an access key: now + the access lifetime, never past `grant_expires`.
    fn access_expiry(&self, grant_expires: u64) -> String {
        let at = (unix_now() + self.config.access_token_lifetime.as_secs()).min(grant_expires);
        crate::time::iso8601(UNIX_EPOCH + Duration::from_secs(at))
    }

    /// The token answer for `key`; a refresh token unless the client registered without one.
    fn token_body(
        &self,
        key: &ApiKey,
        client_id: &str,
        client: &Client,
        grant_expires: u64,
    ) -> Value {
        let refresh = RefreshToken {
            key_digest: hex::encode(sha256(&key.id)),
            client_digest: hex::encode(&sha256(client_id)[..16]),
            grant_expires,
        };
        let payload = serde_json::to_vec(&refresh).unwrap_or_default();
        let expires_in = key
            .expires_at
            .as_deref()
            .and_then(|at| humantime::parse_rfc3339_weak(at).ok())
            .and_then(|t| t.duration_since(SystemTime::now()).ok())
            .map_or(0, |d| d.as_secs());
        let mut body = json!({
            "access_token": key.id,
            "token_type": "Bearer",
            "expires_in": expires_in,
        });
        if !client.no_refresh {
            body["refresh_token"] = self.secret.sign(REFRESH_PREFIX, &payload).into();
        }
        body
    }

    fn refresh(&self, p: &Params) -> Result<Value, OAuthError> {
        let token = p.required("refresh_token", 1024)?;
        let client_id = p.required("client_id", 4096)?;
        let client = self.client(client_id)?;
        if client.no_refresh {
            return Err(err(
                ErrorCode::UnauthorizedClient,
                "this client registered without the refresh_token grant",
            ));
        }
        let invalid = |m: &str| err(ErrorCode::InvalidGrant, m);
        let refresh: RefreshToken = self
            .secret
            .open(REFRESH_PREFIX, token)
            .and_then(|p| serde_json::from_slice(&p).ok())
            .ok_or_else(|| invalid("unknown refresh token"))?;
        if refresh.client_digest != hex::encode(&sha256(client_id)[..16]) {
            return Err(invalid("the refresh token was issued to another client"));
        }
        if refresh.grant_expires <= unix_now() {
            return Err(invalid(
                "the grant has expired; sign in again in the browser",
            ));
        }
        let keys = self.store.list().map_err(store_error)?;
        let Some(old) = keys
            .into_iter()
            .find(|k| hex::encode(sha256(&k.id)) == refresh.key_digest)
        else {
            return Err(invalid(
                "the grant was revoked, or this refresh token was already used",
            ));
        };
        if !old.active {
            return Err(invalid("the grant was revoked on /admin/keys"));
        }
        let random = random_hex()?;
        let expires_at = self.access_expiry(refresh.grant_expires);
        let created_at = crate::time::now_iso8601();
        let new = self
            .store
            .insert_new(&mut |keys| ApiKey {
                id: format!(
                    "homekey_{}_{}_{random}",
                    old.role,
                    super::keys::next_sequence(keys)
                ),
                created_at: created_at.clone(),
                expires_at: Some(expires_at.clone()),
                model_confirms: false,
                open_doors: false,
                profile: None,
                usage: Usage::default(),
                ..old.clone()
            })
            .map_err(store_error)?;
        match self.store.delete(&old.id) {
            Ok(()) => {}
            Err(e) => {
                // Refreshed at the same moment by another request (or revoked): this one
                // loses, and its new key goes.
                let _ = self.store.delete(&new.id);
                return Err(match e {
                    StoreError::NotFound => invalid("this refresh token was already used"),
                    other => store_error(other),
                });
            }
        }
        log::info!(
            "OAuth: {} refreshed ({} -> {})",
            new.name,
            super::mask(&old.id),
            super::mask(&new.id)
        );
        Ok(self.token_body(&new, client_id, &client, refresh.grant_expires))
    }
}

fn random_hex() -> Result<String, OAuthError> {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).map_err(|e| err(ErrorCode::ServerError, e.to_string()))?;
    Ok(hex::encode(b))
}

fn store_error(e: StoreError) -> OAuthError {
    log::error!("OAuth: key store: {e}");
    match e {
        StoreError::ReadOnly => err(
            ErrorCode::ServerError,
            "the key store is read-only (HOME_KEY_BACKEND=env): OAuth cannot issue keys",
        ),
        other => err(ErrorCode::ServerError, format!("key store: {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::store::MemoryStore;

    fn oauth() -> OAuth {
        OAuth::new(
            OAuthConfig::default(),
            Arc::new(MemoryStore::default()),
            Secret::random().unwrap(),
        )
    }

    #[test]
    fn redirect_uris_are_loopback_http_or_https() {
        for ok in [
            "http://127.0.0.1:33418/oauth/callback",
            "http://localhost:8080/cb",
            "http://[::1]:9/cb",
            "https://app.example/cb",
        ] {
            assert!(check_redirect_uri(ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://evil.example/cb",
            "http://192.168.1.5/cb",
            "http://127.0.0.1.evil.example/cb",
            "javascript:alert(1)",
            "https://a@b/cb",
            "https://app.example/cb#x",
            "myapp://cb",
        ] {
            assert!(check_redirect_uri(bad).is_err(), "{bad}");
        }
        assert!(redirect_matches(
            "http://127.0.0.1:1000/cb",
            "http://127.0.0.1:2000/cb"
        ));
        assert!(!redirect_matches(
            "http://127.0.0.1:1000/cb",
            "http://127.0.0.1:2000/other"
        ));
        assert!(!redirect_matches(
            "https://a.example/cb",
            "https://b.example/cb"
        ));
    }

    #[test]
    fn client_ids_are_signed() {
        let o = oauth();
        let r = o
            .register(&json!({"client_name": "C", "redirect_uris": ["http://localhost:1/cb"]}))
            .unwrap();
        let id = r["client_id"].as_str().unwrap();
        assert_eq!(o.client(id).unwrap().name, "C");
        // Another server's secret, or a changed payload, is refused.
        assert!(oauth().client(id).is_err());
        let forged = id.replacen("hmc_", "hmc_x", 1);
        assert_eq!(
            o.client(&forged).unwrap_err().code,
            ErrorCode::InvalidClient
        );
    }

    #[test]
    fn resources_name_this_server() {
        let o = oauth();
        let issuer = "http://127.0.0.1:3001";
        for ok in [
            "http://127.0.0.1:3001",
            "http://127.0.0.1:3001/",
            "http://127.0.0.1:3001/mcp",
            "HTTP://127.0.0.1:3001/mcp",
        ] {
            assert!(o.check_resource(issuer, ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://127.0.0.1:3002/mcp",
            "http://evil.example/mcp",
            "http://127.0.0.1:3001/other",
            "127.0.0.1:3001",
        ] {
            assert_eq!(
                o.check_resource(issuer, bad).unwrap_err().code,
                ErrorCode::InvalidTarget,
                "{bad}"
            );
        }
    }

    #[test]
    fn pending_codes_are_bounded() {
        let o = oauth();
        let r = o
            .register(&json!({"redirect_uris": ["http://localhost:1/cb"]}))
            .unwrap();
        let challenge = pkce_challenge(&"v".repeat(43));
        let q = format!(
            "response_type=code&client_id={}&code_challenge={challenge}&code_challenge_method=S256",
            r["client_id"].as_str().unwrap()
        );
        let req = o
            .authorization_request(&Params::parse(&q).unwrap())
            .unwrap();
        let grant = || Grant::from_form("monitor", "1", vec![], vec![], false, "owner").unwrap();
        for _ in 0..MAX_PENDING_CODES {
            o.approve(&req, grant()).unwrap();
        }
        assert_eq!(
            o.approve(&req, grant()).unwrap_err().code,
            ErrorCode::TemporarilyUnavailable
        );
    }

    #[test]
    fn the_secret_is_kept_in_its_file() {
        let dir =
            std::env::temp_dir().join(format!("home-mcp-oauth-secret-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("oauth.secret");
        let _ = std::fs::remove_file(&path);
        let a = Secret::load_or_create(&path).unwrap();
        let b = Secret::load_or_create(&path).unwrap();
        assert_eq!(a.0, b.0, "the same secret after a restart");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(&path, "not hex").unwrap();
        assert!(
            Secret::load_or_create(&path).is_err(),
            "a damaged file is an error"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn params_refuse_duplicates() {
        let p = Params::parse("a=1&b=x+y%21&a=2").unwrap();
        assert_eq!(p.one("b", 10).unwrap(), Some("x y!"));
        assert!(p.one("a", 10).is_err());
        assert_eq!(p.all("a"), ["1", "2"]);
        assert_eq!(
            with_query("http://h/cb?x=1", &[("state", "a b&c")]),
            "http://h/cb?x=1&state=a%20b%26c"
        );
    }
}

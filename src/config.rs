//! Configuration: a TOML file for everything, environment variables for the Miniserver
//! credentials (`HOME_HOST`, `HOME_USER`, `HOME_PASS`, `HOME_VISU_PASS`) and a few operational
//! settings.
//! Precedence, lowest first: built-in defaults, the config file, the environment, command-line
//! flags (applied by `main`).
//!
//! ```toml
//! [server]
//! listen = "127.0.0.1:3001"    # address of the HTTP transport
//! workers = 4                  # requests routed at once (worker slots)
//! max_body_bytes = 1048576     # largest accepted request body
//! idle_timeout_secs = 30       # idle keep-alive connections are closed after this
//! max_connections = 384        # open connections at most (2 descriptors each; keep well
//!                              # below the unit's LimitNOFILE=1024)
//! max_connections_per_client = 64 # open connections per client address
//! request_deadline_secs = 10   # a request's headers and body must be in within this (408)
//! allowed_origins = []         # extra browser origins allowed on /mcp
//! allowed_hosts = []           # Host header values allowed besides loopback names
//! max_streams = 32             # SSE streams (GET /mcp, /sse, streamed answers) at once
//! keep_alive_secs = 15         # keep-alive comment interval on idle SSE streams
//! data_dir = "./data"          # state directory (workflows.db); env HOME_DATA_DIR; default
//!                              # $STATE_DIRECTORY (systemd StateDirectory=), else
//!                              # /var/lib/home-mcp for the packaged binary, else ./data
//! verify_timeout_ms = 1500     # control tools wait up to this for a command's effect
//!                              # (0 = do not verify; at most 30000)
//! confirmation_lifetime_secs = 120 # a user's confirmation of an alarm, access or
//!                              # house-wide command is awaited and valid this long (1-600)
//! tool_cache_secs = 30         # answers of read-only tools are cached this long (0 = off,
//!                              # at most 3600); any state change or command invalidates
//! resource_cache_secs = 60     # resource contents likewise (0 = off, at most 3600)
//! max_batch_items = 20         # JSON-RPC batch items (protocol 2025-03-26 only; 1-1000)
//! max_batch_answer_bytes = 4194304  # bytes of one batch's answer (64 KiB-64 MiB)
//! max_sessions = 1000          # MCP sessions in all (1-100000); per client address and per
//! max_sessions_per_client = 32 # API key (1-1000 each): a client over its cap replaces its
//! max_sessions_per_key = 64    # own oldest session, never another client's
//!
//! [miniserver]
//! host = "192.168.1.77"        # host, host:port or http(s)://host[:port]
//! user = "mcp"
//! password = "..."             # better: HOME_PASS in the environment
//! visu_password = "..."        # visualisation password (PIN) of secured controls such as
//!                              # the alarm; better: HOME_VISU_PASS. Optional: without it,
//!                              # arm_alarm/disarm_alarm need the `code` argument
//! auth = "auto"                # "auto" (default): token auth (getjwt), Basic auth when the
//!                              # firmware has no getjwt; "token": tokens only; "basic": Basic only
//! live = "websocket"           # "websocket" (default): the Miniserver's event stream, HTTP
//!                              # polling while it is down; "polling": HTTP polling only
//! connect_timeout_secs = 5
//! request_timeout_secs = 10
//! value_max_age_secs = 5       # values older than this are read again from the Miniserver
//! poll_interval_secs = 5       # HTTP polling fallback: primary values read every N s (1-3600)
//! structure_check_secs = 60    # LoxAPPversion3 checked every N s; a change reloads the
//!                              # structure file (10-86400)
//! max_commands_per_control = 6 # outbound limit: commands to one control per 10 s (so no
//!                              # client can make a blind or relay chatter)
//! max_commands = 120           # outbound limit: commands to the Miniserver per 10 s
//!
//! [log]
//! level = "info"               # error, warn, info, debug, trace
//!
//! [auth]                       # the API key gate (see crate::auth::gate)
//! security_level = "development"   # or "staging", "production" (env SECURITY_LEVEL)
//! required = false             # keys required in development too (always off-loopback)
//! admin_networks = []          # addresses/CIDR ranges /admin is served to (production
//!                              # default: loopback only; elsewhere default: any)
//! # env HTTP_API_KEY (or LOXONE_API_KEY): deprecated single key, accepted as an operator key
//!
//! [auth.rate_limits]           # requests per minute
//! admin = 1000
//! operator = 500
//! monitor = 200
//! device = 100
//! custom = 200
//! per_client = 100             # per client address, requests without a key
//!
//! [metrics]                    # GET /metrics (Prometheus text, see crate::metrics)
//! public = false               # true: served without a key (a warning when the bind
//!                              # address is not loopback); else it needs `read`
//! [audit]                      # the audit log <data_dir>/audit.db (see crate::audit)
//! enabled = true               # state-changing tool calls, refusals and key operations
//! retention_days = 90          # older entries are deleted at start and daily (1-36500)
//! [dashboard]                  # the web dashboard at /dashboard/ (see crate::dashboard)
//! history_days = 7             # state changes and sensor values kept this long (1-365), in
//!                              # <data_dir>/history.db (in memory for --demo); the history
//!                              # tools read it for devices without Miniserver statistics
//! history_flush_secs = 30      # queued history rows are committed this often (1-3600)
//! history_states = "primary"   # what is recorded: "primary" (each device's primary value
//!                              # and every value of sensors, meters, alarms) or "all"
//! history_devices = []         # only these devices (names or UUIDs); empty: every device
//! history_skip = []            # never these devices
//! max_ws_clients = 32          # live WebSocket clients at once (1-1024); more get 503
//! [oauth]                      # OAuth 2.1 sign-in for MCP clients (see crate::auth::oauth)
//! enabled = true               # /authorize, /token, /register and the metadata documents
//! issuer = "https://home.example:8443"  # the public base URL (no path); default
//!                              # http://<Host header> (set it behind a TLS proxy)
//! code_lifetime_secs = 300     # authorization codes are valid this long (1-600)
//! access_token_lifetime_secs = 3600 # access tokens (API keys) last this long (60-86400)
//!
//! [mcp]
//! profile = "full"             # the tools clients see: "full" (every tool, the default)
//!                              # or "lean" (at most 10 general tools for small local
//!                              # models); a key's own profile wins; stdio --profile
//!
//! [home]                       # the house (see crate::home::time)
//! time_zone = "Europe/Vienna"  # the Miniserver's time zone (IANA name from the system's
//!                              # tzdata, or a POSIX TZ rule); default: the system's (TZ,
//!                              # /etc/localtime), else UTC. Local days, statistics and
//!                              # bell times are read in it
//!
//! [cameras]                    # pictures of intercoms and cameras (get_camera_image)
//! max_side = 640               # long side of a picture handed out, in pixels (16-4096)
//! deadline_secs = 8            # a fetch from a camera ends after this (1-60)
//! max_bytes = 4194304          # a camera answer larger than this is refused (64 KiB-64 MiB)
//!
//! [risk]                       # controls added to a risk class (name, UUID, family, category
//!                              # or type, see crate::home::risk); a human answers before they act
//! access = ["Garage"]
//! alarm = []
//! house_wide = ["Heizstrahler"]
//!
//! [safety]
//! stop_switch = "KI-Assistent" # a Virtual Status (or Virtual Input, Switch) by name,
//!                              # "name (room)" or UUID: while it is off, or its value
//!                              # unknown, every command is refused (see crate::home::stop)
//! ```

use std::fmt;
use std::net::SocketAddr;
use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::auth::gate::{GateConfig, SecurityLevel};

use crate::home::Secret;
use crate::http::HttpConfig;
use crate::loxone::poll::PollConfig;
use crate::tools::cache::CacheConfig;

/// The data directory when nothing names one (see [`data_dir`]).
pub const DEFAULT_DATA_DIR: &str = "./data";

/// The complete, validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub server: ServerConfig,
    /// `None` until a host is configured (required unless `--demo`).
    pub miniserver: Option<MiniserverConfig>,
    pub miniserver_timeouts: Timeouts,
    /// The polling fallback and structure watch (`[miniserver] poll_interval_secs`, default
    /// 5 s; `structure_check_secs`, default 60 s).
    pub poll: PollConfig,
    /// Log level name (`error` .. `trace`).
    pub log_level: log::LevelFilter,
    /// Visualisation password for secured controls (`[miniserver] visu_password`,
    /// `HOME_VISU_PASS`); also used with `--demo`. `Debug` shows `***`.
    pub visu_password: Option<Secret>,
    /// The owner's additions to the risk classes (`[risk]`: `access`, `alarm`, `house_wide`,
    /// lists of control names, UUIDs or category names; see [`crate::home::risk`]).
    pub risk: crate::home::RiskRules,
    /// The house's time zone (`[home] time_zone`); `None`: not set, the system's
    /// ([`Config::house_time`]), and with `--demo` the demo house's own (Europe/Berlin).
    pub time_zone: Option<crate::home::HouseTime>,
    /// Pictures of cameras (`[cameras]`): longest side handed out (default 640 px).
    pub picture_max_side: u32,
    /// Bounds of a camera fetch (`[cameras] deadline_secs`, `max_bytes`).
    pub camera_limits: crate::loxone::camera::FetchLimits,
    /// The tool profile of callers whose key names none (`[mcp] profile`, `full` or `lean`;
    /// default `full`; `stdio --profile`). See [`crate::home::Profile`].
    pub profile: crate::home::Profile,
    /// How HTTP requests authenticate (`[miniserver] auth`, default [`AuthMode::Auto`]).
    pub miniserver_auth: AuthMode,
    /// WebSocket event stream (default) or polling only.
    pub miniserver_live: LiveMode,
    /// Outbound command limits toward the Miniserver (`[miniserver] max_commands_per_control`,
    /// `max_commands`, per 10 s).
    pub command_limits: crate::home::CommandLimits,
    /// The API key gate (`[auth]`: `security_level`, `required`, `rate_limits`; env
    /// `SECURITY_LEVEL`). See [`crate::auth::gate`].
    pub auth: GateConfig,
    /// The API key store (`--key-store PATH`); default `<data_dir>/keys.toml` (or `keys.db`
    /// with `HOME_KEY_BACKEND=sqlite`).
    pub key_store: Option<std::path::PathBuf>,
    /// `[metrics] public`: `GET /metrics` without a key (default false: it needs a key with
    /// the `read` permission, or follows the anonymous rule of development on loopback).
    pub metrics_public: bool,
    /// The audit log (`[audit]`: `enabled`, `retention_days`). See [`crate::audit`].
    pub audit: crate::audit::AuditConfig,
    /// The web dashboard (`[dashboard]`: `history_days`, `history_flush_secs`,
    /// `max_ws_clients`).
    pub dashboard: crate::dashboard::DashboardConfig,
    /// OAuth sign-in (`[oauth]`: `enabled`, `issuer`, `code_lifetime_secs`,
    /// `access_token_lifetime_secs`). See [`crate::auth::oauth`].
    pub oauth: crate::auth::oauth::OAuthConfig,
    /// `[safety] stop_switch`: the control (name, `"name (room)"` or UUID) a person switches
    /// off to stop every command (a Virtual Status, Virtual Input or Switch; see
    /// [`crate::home::stop`]); `None`: only the admin page's stop.
    pub stop_switch: Option<String>,
}

/// How the server follows the house live (`[miniserver] live`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LiveMode {
    /// The Miniserver's WebSocket event stream (token login); HTTP polling of primary values
    /// while it is down or unsupported.
    #[default]
    WebSocket,
    /// HTTP polling of primary values only (degraded: no named states such as targets).
    Polling,
}

/// The `[server]` section.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The HTTP transport's settings (`listen`, `workers`, `max_body_bytes`,
    /// `idle_timeout_secs`, `max_connections`, `max_connections_per_client`,
    /// `request_deadline_secs`, `allowed_origins`, `allowed_hosts`, `max_streams`,
    /// `keep_alive_secs`; defaults and meaning in [`HttpConfig`]). Its parts (the gate, the
    /// dashboard, ...) are added by the caller.
    pub http: HttpConfig,
    /// The MCP core's bounds (`max_batch_items`, `max_batch_answer_bytes`, `max_sessions`,
    /// `max_sessions_per_client`, `max_sessions_per_key`, and `confirmation_lifetime_secs`:
    /// how long a user's confirmation of an alarm, access or house-wide command is awaited
    /// and valid, default 120 s, 1-600; see [`crate::mcp::McpConfig`]).
    pub mcp: crate::mcp::McpConfig,
    /// Directory for the server's own state (the workflow store `workflows.db`). Created at
    /// start (mode 0700) if missing. Not used by `--demo`, which keeps workflows in memory.
    pub data_dir: PathBuf,
    /// How long control tools wait for a command's effect (`verify_timeout_ms`, default
    /// 1500 ms; zero: no verification).
    pub verify_timeout: Duration,
    /// TTLs of the response caches (`tool_cache_secs`, default 30 s; `resource_cache_secs`,
    /// default 60 s; zero: off).
    pub caches: CacheConfig,
}

pub use crate::loxone::config::{AuthMode, MiniserverConfig, Timeouts};

impl Default for ServerConfig {
    /// The transport's settings default as [`HttpConfig::default`] says (written there once),
    /// the MCP core's as [`crate::mcp::McpConfig::default`].
    fn default() -> Self {
        Self {
            http: HttpConfig::default(),
            mcp: crate::mcp::McpConfig::default(),
            data_dir: PathBuf::from(DEFAULT_DATA_DIR),
            verify_timeout: crate::home::house::DEFAULT_VERIFY_TIMEOUT,
            caches: CacheConfig::default(),
        }
    }
}

/// The data directory, the one decision for the server and the `keys` command alike:
/// `HOME_DATA_DIR`, else `configured` (`[server] data_dir` of the config file), else
/// systemd's `STATE_DIRECTORY` ([`crate::systemd::state_directory`]), else the unit's
/// directory for the packaged binary (`packaged`, see [`crate::systemd::packaged`]: so that
/// `keys` and a `serve` run by hand use the store the service reads), else
/// [`DEFAULT_DATA_DIR`]. `env` reads the environment (empty values count as unset).
///
/// Errors: `configured` empty.
pub fn data_dir(
    env: &dyn Fn(&str) -> Option<String>,
    configured: Option<&str>,
    packaged: bool,
) -> Result<PathBuf, ConfigError> {
    if configured.is_some_and(|d| d.trim().is_empty()) {
        return Err(invalid("server.data_dir", "must not be empty"));
    }
    let env = |k: &str| env(k).filter(|v| !v.trim().is_empty());
    let named = env("HOME_DATA_DIR")
        .or_else(|| configured.map(str::to_string))
        .or_else(|| crate::systemd::state_directory(&env));
    Ok(PathBuf::from(match &named {
        Some(d) => d.trim(),
        None if packaged => crate::systemd::UNIT_STATE_DIRECTORY,
        None => DEFAULT_DATA_DIR,
    }))
}

impl Default for Config {
    fn default() -> Self {
        Self {
            server: ServerConfig::default(),
            miniserver: None,
            miniserver_timeouts: Timeouts::default(),
            poll: PollConfig::default(),
            log_level: log::LevelFilter::Info,
            visu_password: None,
            risk: crate::home::RiskRules::default(),
            time_zone: None,
            picture_max_side: 640,
            camera_limits: crate::loxone::camera::FetchLimits::default(),
            profile: crate::home::Profile::Full,
            miniserver_auth: AuthMode::Auto,
            command_limits: crate::home::CommandLimits::default(),
            miniserver_live: LiveMode::WebSocket,
            auth: GateConfig::default(),
            key_store: None,
            metrics_public: false,
            audit: crate::audit::AuditConfig::default(),
            dashboard: crate::dashboard::DashboardConfig::default(),
            oauth: crate::auth::oauth::OAuthConfig::default(),
            stop_switch: None,
        }
    }
}

/// A configuration problem, with the setting it concerns.
#[derive(Debug, Clone, PartialEq)]
pub enum ConfigError {
    /// The config file could not be read.
    Read { path: String, message: String },
    /// The config file is not valid TOML or has unknown/ill-typed keys.
    Toml { path: String, message: String },
    /// A setting has an invalid value; `setting` names it (`server.listen`, `HOME_HOST`, ...).
    Invalid { setting: String, message: String },
    /// No Miniserver configured and not in demo mode.
    MissingMiniserver { missing: Vec<&'static str> },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Read { path, message } => write!(f, "cannot read config file {path}: {message}"),
            ConfigError::Toml { path, message } => write!(f, "config file {path}: {message}"),
            ConfigError::Invalid { setting, message } => write!(f, "invalid {setting}: {message}"),
            ConfigError::MissingMiniserver { missing } => write!(
                f,
                "no Miniserver configured: set {} (environment or [miniserver] in the config file), or run with --demo for the built-in simulator",
                missing.join(", ")
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    server: FileServer,
    #[serde(default)]
    miniserver: FileMiniserver,
    #[serde(default)]
    log: FileLog,
    #[serde(default)]
    auth: FileAuth,
    #[serde(default)]
    metrics: FileMetrics,
    #[serde(default)]
    audit: FileAudit,
    #[serde(default)]
    dashboard: FileDashboard,
    #[serde(default)]
    oauth: FileOAuth,
    #[serde(default)]
    risk: FileRisk,
    #[serde(default)]
    safety: FileSafety,
    #[serde(default)]
    home: FileHome,
    #[serde(default)]
    cameras: FileCameras,
    #[serde(default)]
    mcp: FileMcp,
}

/// `[cameras]`: `max_side`, `deadline_secs`, `max_bytes`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileCameras {
    max_side: Option<u32>,
    deadline_secs: Option<u64>,
    max_bytes: Option<u64>,
}

/// `[mcp]`: `profile`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileMcp {
    profile: Option<String>,
}

/// `[safety]`: the stop switch.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSafety {
    stop_switch: Option<String>,
}

/// `[home]`: `time_zone`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileHome {
    time_zone: Option<String>,
}

/// `[risk]`: controls the owner adds to a risk class (name, UUID, or a family, Loxone category or control type).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRisk {
    #[serde(default)]
    access: Vec<String>,
    #[serde(default)]
    alarm: Vec<String>,
    #[serde(default)]
    house_wide: Vec<String>,
}

/// `[oauth]`: `enabled`, `issuer`, `code_lifetime_secs`, `access_token_lifetime_secs`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileOAuth {
    enabled: Option<bool>,
    issuer: Option<String>,
    code_lifetime_secs: Option<u64>,
    access_token_lifetime_secs: Option<u64>,
}

/// `[metrics]`: `public`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileMetrics {
    public: Option<bool>,
}

/// `[audit]`: `enabled`, `retention_days`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileAudit {
    enabled: Option<bool>,
    retention_days: Option<u32>,
}

/// `[dashboard]`: `history_days`, `history_flush_secs`, `history_states`,
/// `history_devices`, `history_skip`, `max_ws_clients`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDashboard {
    history_days: Option<u32>,
    history_flush_secs: Option<u64>,
    history_states: Option<String>,
    history_devices: Option<Vec<String>>,
    history_skip: Option<Vec<String>>,
    max_ws_clients: Option<usize>,
}

/// `[auth]`: `security_level = "development" | "staging" | "production"`, `required`, and
/// `[auth.rate_limits]` with `admin`, `operator`, `monitor`, `device`, `custom`, `per_client`
/// (requests per minute).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileAuth {
    security_level: Option<String>,
    required: Option<bool>,
    admin_networks: Option<Vec<String>>,
    #[serde(default)]
    rate_limits: FileRateLimits,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRateLimits {
    admin: Option<u32>,
    operator: Option<u32>,
    monitor: Option<u32>,
    device: Option<u32>,
    custom: Option<u32>,
    per_client: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileServer {
    listen: Option<String>,
    workers: Option<usize>,
    max_body_bytes: Option<usize>,
    idle_timeout_secs: Option<u64>,
    max_connections: Option<usize>,
    max_connections_per_client: Option<usize>,
    request_deadline_secs: Option<u64>,
    allowed_origins: Option<Vec<String>>,
    allowed_hosts: Option<Vec<String>>,
    max_streams: Option<usize>,
    max_batch_items: Option<usize>,
    max_batch_answer_bytes: Option<usize>,
    max_sessions: Option<usize>,
    max_sessions_per_client: Option<usize>,
    max_sessions_per_key: Option<usize>,
    keep_alive_secs: Option<u64>,
    data_dir: Option<String>,
    verify_timeout_ms: Option<u64>,
    confirmation_lifetime_secs: Option<u64>,
    tool_cache_secs: Option<u64>,
    resource_cache_secs: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileMiniserver {
    host: Option<String>,
    user: Option<String>,
    password: Option<String>,
    visu_password: Option<String>,
    auth: Option<AuthMode>,
    live: Option<LiveMode>,
    connect_timeout_secs: Option<u64>,
    request_timeout_secs: Option<u64>,
    value_max_age_secs: Option<u64>,
    poll_interval_secs: Option<u64>,
    structure_check_secs: Option<u64>,
    max_commands_per_control: Option<u32>,
    max_commands: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLog {
    level: Option<String>,
}

impl Config {
    /// The house's clock: `[home] time_zone`, else the system's time zone.
    pub fn house_time(&self) -> crate::home::HouseTime {
        self.time_zone
            .clone()
            .unwrap_or_else(crate::home::HouseTime::system)
    }

    /// Loads the config: defaults, then `path` (if given), then the environment read through
    /// `env` (a function so tests need not touch the process environment).
    ///
    /// Environment variables: `HOME_HOST`, `HOME_USER`, `HOME_PASS`, `HOME_VISU_PASS`,
    /// `HOME_LISTEN`, `HOME_LOG_LEVEL`, `HOME_DATA_DIR`; `STATE_DIRECTORY` (set by systemd's
    /// `StateDirectory=`) is the data directory when nothing else names one. The Miniserver stays `None` when no host is set anywhere; the caller
    /// decides whether that is an error ([`Config::require_miniserver`]).
    pub fn load(
        path: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let file = match path {
            Some(p) => {
                let text = std::fs::read_to_string(p).map_err(|e| ConfigError::Read {
                    path: p.display().to_string(),
                    message: e.to_string(),
                })?;
                toml::from_str::<FileConfig>(&text).map_err(|e| ConfigError::Toml {
                    path: p.display().to_string(),
                    message: e.to_string().trim().replace('\n', " "),
                })?
            }
            None => FileConfig::default(),
        };
        Self::build(file, env)
    }

    fn build(
        file: FileConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let mut cfg = Config::default();
        let env = |k: &str| env(k).filter(|v| !v.trim().is_empty());
        let secs = Duration::from_secs;
        // `set!(file.server.workers => slot, range[, into])`: the setting `server.workers`,
        // checked against `range`, into `slot` (through `into`, e.g. seconds into a Duration).
        macro_rules! set {
            ($file:ident . $($key:ident).+ => $slot:expr, $range:expr) => {
                set!($file.$($key).+ => $slot, $range, |v| v)
            };
            ($file:ident . $($key:ident).+ => $slot:expr, $range:expr, $into:expr) => {
                set(&mut $slot, stringify!($($key).+), $file.$($key).+, $range, $into)
            };
        }

        let http = &mut cfg.server.http;
        if let Some(l) = env("HOME_LISTEN").or(file.server.listen.clone()) {
            http.listen = parse_listen(&l, "server.listen")?;
        }
        if let Some(w) = file.server.workers {
            http.workers = check_workers(w, "server.workers")?;
        }
        set!(file.server.max_body_bytes => http.max_body_bytes, 1024..)?;
        set!(file.server.idle_timeout_secs => http.idle_timeout, 1.., secs)?;
        set!(file.server.max_connections => http.max_connections, 1..=4096)?;
        set!(file.server.max_connections_per_client => http.max_connections_per_client, 1..)?;
        set!(file.server.request_deadline_secs => http.request_deadline, 1..=600, secs)?;
        set!(file.server.max_streams => http.max_streams, 1..=1024)?;
        set!(file.server.keep_alive_secs => http.keep_alive, 1..=3600, secs)?;
        if let Some(o) = &file.server.allowed_origins {
            http.allowed_origins = o.clone();
        }
        if let Some(h) = &file.server.allowed_hosts {
            http.allowed_hosts = h.clone();
        }
        let mcp = &mut cfg.server.mcp;
        set!(file.server.max_batch_items => mcp.max_batch_items, 1..=1000)?;
        set!(file.server.max_batch_answer_bytes => mcp.max_batch_answer_bytes, 64 << 10..=64 << 20)?;
        set!(file.server.max_sessions => mcp.max_sessions, 1..=100_000)?;
        set!(file.server.max_sessions_per_client => mcp.max_sessions_per_client, 1..=1000)?;
        set!(file.server.max_sessions_per_key => mcp.max_sessions_per_key, 1..=1000)?;
        set!(file.server.confirmation_lifetime_secs => mcp.confirmation_lifetime, 1..=600, secs)?;
        let server = &mut cfg.server;
        let packaged = crate::systemd::packaged();
        server.data_dir = data_dir(&env, file.server.data_dir.as_deref(), packaged)?;
        let millis = Duration::from_millis;
        set!(file.server.verify_timeout_ms => server.verify_timeout, 0..=30_000, millis)?;
        set!(file.server.tool_cache_secs => server.caches.tool_ttl, 0..=MAX_CACHE_SECS, secs)?;
        let resources = &mut server.caches.resource_ttl;
        set!(file.server.resource_cache_secs => *resources, 0..=MAX_CACHE_SECS, secs)?;

        let t = &mut cfg.miniserver_timeouts;
        set!(file.miniserver.connect_timeout_secs => t.connect, 1..=600, secs)?;
        set!(file.miniserver.request_timeout_secs => t.request, 1..=600, secs)?;
        set!(file.miniserver.value_max_age_secs => t.value_max_age, 0.., secs)?;
        set!(file.miniserver.poll_interval_secs => cfg.poll.interval, 1..=3600, secs)?;
        set!(file.miniserver.structure_check_secs => cfg.poll.structure_check, 10..=86_400, secs)?;
        let limits = &mut cfg.command_limits;
        set!(file.miniserver.max_commands_per_control => limits.per_control, 1..)?;
        set!(file.miniserver.max_commands => limits.total, 1..)?;

        let host = env("HOME_HOST").or(file.miniserver.host);
        let user = env("HOME_USER").or(file.miniserver.user);
        let password = env("HOME_PASS").or(file.miniserver.password);
        if let Some(host) = host {
            let base_url = normalize_host(&host).map_err(|m| invalid("HOME_HOST", &m))?;
            let mut missing = Vec::new();
            if user.is_none() {
                missing.push("HOME_USER");
            }
            if password.is_none() {
                missing.push("HOME_PASS");
            }
            if !missing.is_empty() {
                return Err(ConfigError::MissingMiniserver { missing });
            }
            cfg.miniserver = Some(MiniserverConfig {
                base_url,
                user: user.unwrap_or_default(),
                password: password.unwrap_or_default(),
            });
        }
        cfg.miniserver_auth = file.miniserver.auth.unwrap_or_default();
        cfg.miniserver_live = file.miniserver.live.unwrap_or_default();
        cfg.visu_password = env("HOME_VISU_PASS")
            .or(file.miniserver.visu_password)
            .filter(|p| !p.is_empty())
            .map(Secret::new);
        cfg.risk = crate::home::RiskRules {
            access: file.risk.access,
            alarm: file.risk.alarm,
            house_wide: file.risk.house_wide,
        };
        if let Some(p) = file.mcp.profile {
            cfg.profile = crate::home::Profile::parse(&p)
                .ok_or_else(|| invalid("mcp.profile", &format!("{p:?} is not full or lean")))?;
        }
        if let Some(v) = file.cameras.max_side {
            if !(16..=4096).contains(&v) {
                return Err(invalid("cameras.max_side", "must be 16-4096 (pixels)"));
            }
            cfg.picture_max_side = v;
        }
        if let Some(v) = file.cameras.deadline_secs {
            if !(1..=60).contains(&v) {
                return Err(invalid("cameras.deadline_secs", "must be 1-60 (seconds)"));
            }
            cfg.camera_limits.deadline = Duration::from_secs(v);
        }
        if let Some(v) = file.cameras.max_bytes {
            if !(65_536..=67_108_864).contains(&v) {
                return Err(invalid(
                    "cameras.max_bytes",
                    "must be 65536-67108864 (bytes)",
                ));
            }
            cfg.camera_limits.max_bytes = v;
        }
        cfg.stop_switch = match file.safety.stop_switch {
            Some(s) if s.trim().is_empty() => {
                return Err(invalid(
                    "safety.stop_switch",
                    "must name a control (its name or UUID), or be left out",
                ))
            }
            other => other.map(|s| s.trim().to_string()),
        };
        if let Some(tz) = file.home.time_zone {
            cfg.time_zone = Some(
                crate::home::HouseTime::named(&tz)
                    .map_err(|e| invalid("home.time_zone", &e.to_string()))?,
            );
        }

        if let Some(level) = env("SECURITY_LEVEL").or(file.auth.security_level) {
            cfg.auth.level = match level.trim() {
                "development" => SecurityLevel::Development,
                "staging" => SecurityLevel::Staging,
                "production" => SecurityLevel::Production,
                _ => {
                    return Err(invalid(
                        "auth.security_level",
                        "use development, staging or production",
                    ))
                }
            };
        }
        cfg.auth.required = file.auth.required.unwrap_or(false);
        if let Some(nets) = file.auth.admin_networks {
            for n in &nets {
                let n = n.trim();
                if n.parse::<ipnet::IpNet>().is_err() && n.parse::<std::net::IpAddr>().is_err() {
                    return Err(invalid(
                        "auth.admin_networks",
                        &format!("{n:?} is not an IP address or CIDR range"),
                    ));
                }
            }
            cfg.auth.admin_networks = nets;
        }
        cfg.auth.legacy_key = env("HTTP_API_KEY")
            .or_else(|| env("LOXONE_API_KEY"))
            .map(|k| k.trim().to_string())
            .filter(|k| !k.is_empty())
            .map(Secret::new);
        let limits = &mut cfg.auth.limits;
        set!(file.auth.rate_limits.admin => limits.admin, 1..)?;
        set!(file.auth.rate_limits.operator => limits.operator, 1..)?;
        set!(file.auth.rate_limits.monitor => limits.monitor, 1..)?;
        set!(file.auth.rate_limits.device => limits.device, 1..)?;
        set!(file.auth.rate_limits.custom => limits.custom, 1..)?;
        set!(file.auth.rate_limits.per_client => limits.per_client, 1..)?;
        cfg.metrics_public = file.metrics.public.unwrap_or(false);
        cfg.audit.enabled = file.audit.enabled.unwrap_or(true);
        set!(file.audit.retention_days => cfg.audit.retention_days, 1..=36_500)?;
        let dashboard = &mut cfg.dashboard;
        set!(file.dashboard.history_days => dashboard.history.days, 1..=365)?;
        set!(file.dashboard.history_flush_secs => dashboard.history.flush_every, 1..=3600, secs)?;
        set!(file.dashboard.max_ws_clients => dashboard.ws.max_clients, 1..=1024)?;

        let d = &file.dashboard;
        if let Some(states) = &d.history_states {
            cfg.dashboard.history.states = crate::dashboard::history::RecordStates::parse(states)
                .ok_or_else(|| {
                invalid("dashboard.history_states", "must be \"primary\" or \"all\"")
            })?;
        }
        for (name, list, slot) in [
            (
                "dashboard.history_devices",
                &d.history_devices,
                &mut cfg.dashboard.history.devices,
            ),
            (
                "dashboard.history_skip",
                &d.history_skip,
                &mut cfg.dashboard.history.skip,
            ),
        ] {
            if let Some(list) = list {
                if list.len() > 1000 || list.iter().any(|n| n.trim().is_empty() || n.len() > 200) {
                    return Err(invalid(
                        name,
                        "must be at most 1000 device names or UUIDs of 1-200 characters",
                    ));
                }
                *slot = list.clone();
            }
        }

        let (o, oauth) = (&file.oauth, &mut cfg.oauth);
        oauth.enabled = o.enabled.unwrap_or(true);
        if let Some(issuer) = &o.issuer {
            let i = issuer.trim().trim_end_matches('/');
            let rest = i
                .strip_prefix("https://")
                .or_else(|| i.strip_prefix("http://"));
            if rest.is_none_or(|r| r.is_empty() || r.contains(['/', '?', '#', ' '])) {
                return Err(invalid(
                    "oauth.issuer",
                    "must be http(s)://host[:port] with no path",
                ));
            }
            oauth.issuer = Some(i.to_string());
        }
        set!(file.oauth.code_lifetime_secs => oauth.code_lifetime, 1..=600, secs)?;
        let token = &mut oauth.access_token_lifetime;
        set!(file.oauth.access_token_lifetime_secs => *token, 60..=86_400, secs)?;

        if let Some(level) = env("HOME_LOG_LEVEL").or(file.log.level) {
            cfg.log_level = level
                .parse()
                .map_err(|_| invalid("log.level", "use error, warn, info, debug or trace"))?;
        }
        Ok(cfg)
    }

    /// Checks settings that depend on each other once the command line has been applied:
    /// production on a non-loopback address needs `[server] allowed_hosts` (the strict Host
    /// allow-list; DNS-rebinding protection cannot guess the names the server is reached by).
    pub fn check_serve(&self) -> Result<(), ConfigError> {
        if self.auth.level == SecurityLevel::Production
            && !self.server.http.listen.ip().is_loopback()
            && self.server.http.allowed_hosts.is_empty()
        {
            return Err(invalid(
                "server.allowed_hosts",
                "production on a non-loopback address needs the host names and addresses the \
                 server is reached by (e.g. [\"homepi.local\", \"192.168.1.20\"])",
            ));
        }
        Ok(())
    }

    /// Where the API key store is: `--key-store PATH` ([`Config::key_store`]), else the
    /// backend's file in the data directory (`keys.toml`, or `keys.db` for SQLite).
    pub fn key_store_path(&self, backend: crate::auth::store::Backend) -> PathBuf {
        self.key_store
            .clone()
            .unwrap_or_else(|| backend.default_path(&self.server.data_dir))
    }

    /// The Miniserver settings, or [`ConfigError::MissingMiniserver`] naming what is missing.
    pub fn require_miniserver(&self) -> Result<&MiniserverConfig, ConfigError> {
        self.miniserver
            .as_ref()
            .ok_or(ConfigError::MissingMiniserver {
                missing: vec!["HOME_HOST", "HOME_USER", "HOME_PASS"],
            })
    }
}

/// Longest accepted cache TTL in seconds.
pub const MAX_CACHE_SECS: u64 = 3600;

/// Sets `slot` to `value` (of `setting` in the config file, through `into`) when the file
/// gives one, after checking it lies in `range`: else an error naming the setting and range.
fn set<T: PartialOrd + fmt::Display + Copy, S>(
    slot: &mut S,
    setting: &str,
    value: Option<T>,
    range: impl RangeBounds<T>,
    into: impl Fn(T) -> S,
) -> Result<(), ConfigError> {
    let Some(v) = value else { return Ok(()) };
    if !range.contains(&v) {
        let why = match (range.start_bound(), range.end_bound()) {
            (Bound::Included(lo), Bound::Included(hi)) => format!("must be between {lo} and {hi}"),
            (Bound::Included(lo), _) => format!("must be at least {lo}"),
            _ => "is out of range".into(),
        };
        return Err(invalid(setting, &why));
    }
    *slot = into(v);
    Ok(())
}

fn invalid(setting: &str, message: &str) -> ConfigError {
    ConfigError::Invalid {
        setting: setting.to_string(),
        message: message.to_string(),
    }
}

/// Parses a listen address `ip:port` (IPv6 as `[::1]:3001`).
pub fn parse_listen(s: &str, setting: &str) -> Result<SocketAddr, ConfigError> {
    s.trim().parse().map_err(|_| {
        invalid(
            setting,
            &format!("{s:?} is not an address like 127.0.0.1:3001 or [::1]:3001"),
        )
    })
}

/// Checks a worker count (1-64).
pub fn check_workers(n: usize, setting: &str) -> Result<usize, ConfigError> {
    if (1..=64).contains(&n) {
        Ok(n)
    } else {
        Err(invalid(setting, &format!("{n} is not between 1 and 64")))
    }
}

/// Turns `HOME_HOST` into a base URL: `host`, `host:port`, `[v6]:port`,
/// `http://host[:port][/]` or `https://host[:port][/]` -> `scheme://host[:port]`.
/// Errors name what is wrong (empty, unknown scheme, path, bad port, spaces).
pub fn normalize_host(input: &str) -> Result<String, String> {
    let s = input.trim();
    if s.is_empty() {
        return Err("empty host".into());
    }
    let (scheme, rest) = match s.split_once("://") {
        Some((scheme, rest)) => {
            let scheme = scheme.to_ascii_lowercase();
            if scheme != "http" && scheme != "https" {
                return Err(format!("unsupported scheme {scheme:?}; use http or https"));
            }
            (scheme, rest)
        }
        None => ("http".to_string(), s),
    };
    let authority = rest.trim_end_matches('/');
    if authority.is_empty() {
        return Err("no host after the scheme".into());
    }
    if authority.contains('/') || authority.contains('?') || authority.contains('#') {
        return Err(format!(
            "{input:?} has a path; give only the Miniserver's host and port"
        ));
    }
    if authority.contains('@') {
        return Err("credentials in the URL are not accepted; use HOME_USER and HOME_PASS".into());
    }
    if authority.chars().any(|c| c.is_whitespace()) {
        return Err(format!("{input:?} contains spaces"));
    }
    // Validate the port if there is one (IPv6 literals are bracketed).
    let port = if let Some(end) = authority.strip_prefix('[') {
        let (_, after) = end
            .split_once(']')
            .ok_or_else(|| format!("{input:?}: unclosed '[' in IPv6 address"))?;
        after.strip_prefix(':')
    } else {
        authority.rsplit_once(':').map(|(_, p)| p)
    };
    if let Some(p) = port {
        match p.parse::<u16>() {
            Ok(n) if n > 0 => {}
            _ => return Err(format!("{p:?} is not a port number")),
        }
    }
    if scheme == "https" && !cfg!(feature = "tls") {
        return Err("https needs a build with the `tls` feature".into());
    }
    Ok(format!("{scheme}://{authority}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    fn parse(toml_text: &str, env: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let file: FileConfig = toml::from_str(toml_text).map_err(|e| ConfigError::Toml {
            path: "t".into(),
            message: e.to_string(),
        })?;
        Config::build(file, &env_of(env))
    }

    #[test]
    fn host_forms_normalise() {
        assert_eq!(normalize_host("192.168.1.7").unwrap(), "http://192.168.1.7");
        assert_eq!(
            normalize_host("ms.local:8080").unwrap(),
            "http://ms.local:8080"
        );
        assert_eq!(normalize_host("HTTP://ms/").unwrap(), "http://ms");
        assert_eq!(normalize_host("[::1]:80").unwrap(), "http://[::1]:80");
        #[cfg(feature = "tls")]
        assert_eq!(
            normalize_host("https://192-168-1-7.504F94A0DDB8.dyndns.loxonecloud.com:443").unwrap(),
            "https://192-168-1-7.504F94A0DDB8.dyndns.loxonecloud.com:443"
        );
    }

    #[test]
    fn bad_hosts_are_named() {
        assert!(normalize_host("").unwrap_err().contains("empty"));
        assert!(normalize_host("ftp://x").unwrap_err().contains("scheme"));
        assert!(normalize_host("x:99999").unwrap_err().contains("port"));
        assert!(normalize_host("http://x/jdev")
            .unwrap_err()
            .contains("path"));
        assert!(normalize_host("http://u:p@x")
            .unwrap_err()
            .contains("credentials"));
        assert!(normalize_host("[::1:80").unwrap_err().contains("IPv6"));
    }

    #[test]
    fn environment_overrides_file() {
        let cfg = parse(
            "[miniserver]\nhost = \"10.0.0.1\"\nuser = \"file\"\npassword = \"pw\"\n[server]\nworkers = 3\n",
            &[("HOME_HOST", "10.0.0.2:81"), ("HOME_USER", "env")],
        )
        .unwrap();
        let ms = cfg.miniserver.unwrap();
        assert_eq!(ms.base_url, "http://10.0.0.2:81");
        assert_eq!(ms.user, "env");
        assert_eq!(ms.password, "pw");
        assert_eq!(cfg.server.http.workers, 3);
        assert_eq!(cfg.server.http.listen.port(), 3001);
    }

    #[test]
    fn missing_credentials_are_named() {
        let err = parse("", &[("HOME_HOST", "10.0.0.2")]).unwrap_err();
        assert_eq!(
            err,
            ConfigError::MissingMiniserver {
                missing: vec!["HOME_USER", "HOME_PASS"]
            }
        );
        assert!(err.to_string().contains("--demo"));
        let cfg = parse("", &[]).unwrap();
        assert!(cfg.miniserver.is_none());
        assert!(cfg.require_miniserver().is_err());
    }

    #[test]
    fn the_house_time_zone_is_read_and_checked() {
        let cfg = parse("[home]\ntime_zone = \"CET-1CEST,M3.5.0,M10.5.0/3\"\n", &[]).unwrap();
        let t: jiff::Timestamp = "2026-07-01T10:00:00Z".parse().unwrap();
        assert_eq!(cfg.house_time().format(t), "2026-07-01T12:00:00+02:00");
        let e = parse("[home]\ntime_zone = \"Nowhere/Atlantis\"\n", &[]).unwrap_err();
        assert!(e.to_string().contains("home.time_zone"), "{e}");
        assert_eq!(parse("", &[]).unwrap().time_zone, None);
        assert_eq!(
            parse("", &[]).unwrap().house_time(),
            crate::home::HouseTime::system()
        );
    }

    #[test]
    fn the_tool_profile_is_read_and_checked() {
        use crate::home::Profile;
        assert_eq!(parse("", &[]).unwrap().profile, Profile::Full);
        let cfg = parse("[mcp]\nprofile = \"lean\"\n", &[]).unwrap();
        assert_eq!(cfg.profile, Profile::Lean);
        let e = parse("[mcp]\nprofile = \"tiny\"\n", &[]).unwrap_err();
        assert!(
            e.to_string().contains("mcp.profile") && e.to_string().contains("full or lean"),
            "{e}"
        );
    }

    #[test]
    fn invalid_values_name_the_setting() {
        let e = parse("[server]\nworkers = 0\n", &[]).unwrap_err();
        assert!(e.to_string().contains("server.workers"), "{e}");
        let e = parse("[server]\nmax_streams = 0\n", &[]).unwrap_err();
        assert!(e.to_string().contains("server.max_streams"), "{e}");
        let e = parse("[server]\nkeep_alive_secs = 0\n", &[]).unwrap_err();
        assert!(e.to_string().contains("server.keep_alive_secs"), "{e}");
        let cfg = parse("[server]\nmax_streams = 4\nkeep_alive_secs = 5\n", &[]).unwrap();
        assert_eq!(cfg.server.http.max_streams, 4);
        assert_eq!(cfg.server.http.keep_alive, Duration::from_secs(5));
        let e = parse("[server]\nlisten = \"nope\"\n", &[]).unwrap_err();
        assert!(e.to_string().contains("server.listen"), "{e}");
        let e = parse("[log]\nlevel = \"loud\"\n", &[]).unwrap_err();
        assert!(e.to_string().contains("log.level"), "{e}");
        let e = parse("[server]\nlisten_typo = 1\n", &[]).unwrap_err();
        assert!(matches!(e, ConfigError::Toml { .. }), "{e}");
        let e = parse(
            "",
            &[
                ("HOME_HOST", "ftp://x"),
                ("HOME_USER", "u"),
                ("HOME_PASS", "p"),
            ],
        )
        .unwrap_err();
        assert!(e.to_string().contains("HOME_HOST"), "{e}");
    }

    #[test]
    fn stop_switch_setting() {
        assert_eq!(parse("", &[]).unwrap().stop_switch, None);
        let cfg = parse("[safety]\nstop_switch = \" KI-Assistent \"\n", &[]).unwrap();
        assert_eq!(cfg.stop_switch.as_deref(), Some("KI-Assistent"));
        let e = parse("[safety]\nstop_switch = \"  \"\n", &[]).unwrap_err();
        assert!(e.to_string().contains("safety.stop_switch"), "{e}");
        let e = parse("[safety]\nstop = \"x\"\n", &[]).unwrap_err();
        assert!(matches!(e, ConfigError::Toml { .. }), "{e}");
    }

    #[test]
    fn auth_mode_from_file() {
        assert_eq!(parse("", &[]).unwrap().miniserver_auth, AuthMode::Auto);
        assert_eq!(parse("", &[]).unwrap().miniserver_live, LiveMode::WebSocket);
        let cfg = parse("[miniserver]\nlive = \"polling\"\n", &[]).unwrap();
        assert_eq!(cfg.miniserver_live, LiveMode::Polling);
        assert!(parse("[miniserver]\nlive = \"carrier-pigeon\"\n", &[]).is_err());
        let cfg = parse("[miniserver]\nauth = \"basic\"\n", &[]).unwrap();
        assert_eq!(cfg.miniserver_auth, AuthMode::Basic);
        let cfg = parse("[miniserver]\nauth = \"token\"\n", &[]).unwrap();
        assert_eq!(cfg.miniserver_auth, AuthMode::Token);
        assert!(parse("[miniserver]\nauth = \"kerberos\"\n", &[]).is_err());
    }

    #[test]
    fn visu_password_from_file_or_environment() {
        let cfg = parse("[miniserver]\nvisu_password = \"4711\"\n", &[]).unwrap();
        assert_eq!(cfg.visu_password, Some(Secret::new("4711")));
        assert!(!format!("{cfg:?}").contains("4711"));
        let cfg = parse(
            "[miniserver]\nvisu_password = \"4711\"\n",
            &[("HOME_VISU_PASS", "0815")],
        )
        .unwrap();
        assert_eq!(cfg.visu_password.unwrap().expose(), "0815");
        assert_eq!(parse("", &[]).unwrap().visu_password, None);
        let e = parse("[miniserver]\nvisu_pasword = \"1\"\n", &[]).unwrap_err();
        assert!(matches!(e, ConfigError::Toml { .. }), "{e}");
    }

    #[test]
    fn data_dir_precedence() {
        assert_eq!(
            parse("", &[]).unwrap().server.data_dir,
            PathBuf::from("./data")
        );
        let systemd = [("STATE_DIRECTORY", "/var/lib/home-mcp:/var/lib/other")];
        assert_eq!(
            parse("", &systemd).unwrap().server.data_dir,
            PathBuf::from("/var/lib/home-mcp")
        );
        let file = "[server]\ndata_dir = \"/srv/home\"\n";
        assert_eq!(
            parse(file, &systemd).unwrap().server.data_dir,
            PathBuf::from("/srv/home")
        );
        assert_eq!(
            parse(file, &[("HOME_DATA_DIR", "/tmp/x")])
                .unwrap()
                .server
                .data_dir,
            PathBuf::from("/tmp/x")
        );
        let e = parse("[server]\ndata_dir = \" \"\n", &[]).unwrap_err();
        assert!(e.to_string().contains("server.data_dir"), "{e}");
    }

    #[test]
    fn the_packaged_binary_defaults_to_the_units_directory() {
        let none = |_: &str| None;
        let dir =
            |env: &dyn Fn(&str) -> Option<String>, packaged| data_dir(env, None, packaged).unwrap();
        assert_eq!(dir(&none, false), PathBuf::from("./data"));
        assert_eq!(
            dir(&none, true),
            PathBuf::from(crate::systemd::UNIT_STATE_DIRECTORY)
        );
        let state = |k: &str| (k == "STATE_DIRECTORY").then(|| "/srv/state:/x".to_string());
        assert_eq!(dir(&state, true), PathBuf::from("/srv/state"));
        let home = |k: &str| (k == "HOME_DATA_DIR").then(|| "/srv/home".to_string());
        assert_eq!(dir(&home, true), PathBuf::from("/srv/home"));
        assert_eq!(
            data_dir(&none, Some("/srv/file"), true).unwrap(),
            PathBuf::from("/srv/file")
        );
    }

    #[test]
    fn live_settings_have_defaults_and_bounds() {
        let cfg = parse("", &[]).unwrap();
        assert_eq!(cfg.poll.interval, Duration::from_secs(5));
        assert_eq!(cfg.poll.structure_check, Duration::from_secs(60));
        assert_eq!(cfg.server.verify_timeout, Duration::from_millis(1500));
        let cfg = parse(
            "[miniserver]\npoll_interval_secs = 2\nstructure_check_secs = 30\n[server]\nverify_timeout_ms = 0\n",
            &[],
        )
        .unwrap();
        assert_eq!(cfg.poll.interval, Duration::from_secs(2));
        assert_eq!(cfg.poll.structure_check, Duration::from_secs(30));
        assert_eq!(cfg.server.verify_timeout, Duration::ZERO);
        for (text, setting) in [
            (
                "[miniserver]\npoll_interval_secs = 0\n",
                "miniserver.poll_interval_secs",
            ),
            (
                "[miniserver]\nstructure_check_secs = 1\n",
                "miniserver.structure_check_secs",
            ),
            (
                "[server]\nverify_timeout_ms = 60000\n",
                "server.verify_timeout_ms",
            ),
        ] {
            let e = parse(text, &[]).unwrap_err();
            assert!(e.to_string().contains(setting), "{e}");
        }
        let e = parse("[miniserver]\npoll_intervall_secs = 5\n", &[]).unwrap_err();
        assert!(matches!(e, ConfigError::Toml { .. }), "{e}");
    }

    #[test]
    fn cache_settings_have_defaults_and_bounds() {
        let cfg = parse("", &[]).unwrap();
        assert_eq!(cfg.server.caches.tool_ttl, Duration::from_secs(30));
        assert_eq!(cfg.server.caches.resource_ttl, Duration::from_secs(60));
        let cfg = parse(
            "[server]\ntool_cache_secs = 0\nresource_cache_secs = 5\n",
            &[],
        )
        .unwrap();
        assert_eq!(cfg.server.caches.tool_ttl, Duration::ZERO);
        assert_eq!(cfg.server.caches.resource_ttl, Duration::from_secs(5));
        for (text, setting) in [
            (
                "[server]\ntool_cache_secs = 3601\n",
                "server.tool_cache_secs",
            ),
            (
                "[server]\nresource_cache_secs = 100000\n",
                "server.resource_cache_secs",
            ),
        ] {
            let e = parse(text, &[]).unwrap_err();
            assert!(e.to_string().contains(setting), "{e}");
        }
        let e = parse("[server]\ntool_cache_seconds = 1\n", &[]).unwrap_err();
        assert!(matches!(e, ConfigError::Toml { .. }), "{e}");
        let e = parse("[server]\ntool_cache_secs = -1\n", &[]).unwrap_err();
        assert!(matches!(e, ConfigError::Toml { .. }), "{e}");
    }

    #[test]
    fn auth_settings() {
        let cfg = parse("", &[]).unwrap();
        assert_eq!(cfg.auth, GateConfig::default());
        let cfg = parse(
            "[auth]\nsecurity_level = \"staging\"\nrequired = true\n[auth.rate_limits]\noperator = 7\nper_client = 9\n",
            &[],
        )
        .unwrap();
        assert_eq!(cfg.auth.level, SecurityLevel::Staging);
        assert!(!cfg.metrics_public);
        let m = parse("[metrics]\npublic = true\n", &[]).unwrap();
        assert!(m.metrics_public);
        assert!(cfg.auth.required);
        assert_eq!(
            (
                cfg.auth.limits.operator,
                cfg.auth.limits.per_client,
                cfg.auth.limits.admin
            ),
            (7, 9, 1000)
        );
        let cfg = parse("", &[("SECURITY_LEVEL", "production")]).unwrap();
        assert_eq!(cfg.auth.level, SecurityLevel::Production);
        assert!(parse("[auth]\nsecurity_level = \"lax\"\n", &[]).is_err());
        assert!(parse("[auth.rate_limits]\nadmin = 0\n", &[]).is_err());
    }

    #[test]
    fn admin_networks_legacy_key_and_command_limits() {
        let cfg = parse(
            "[auth]\nadmin_networks = [\"192.168.1.0/24\", \"::1\"]\n",
            &[("HTTP_API_KEY", " old-key ")],
        )
        .unwrap();
        assert_eq!(cfg.auth.admin_networks, ["192.168.1.0/24", "::1"]);
        assert_eq!(cfg.auth.legacy_key, Some(Secret::new("old-key")));
        let cfg = parse("", &[("LOXONE_API_KEY", "k2")]).unwrap();
        assert_eq!(cfg.auth.legacy_key, Some(Secret::new("k2")));
        assert_eq!(
            parse("", &[("HTTP_API_KEY", "")]).unwrap().auth.legacy_key,
            None
        );
        let e = parse("[auth]\nadmin_networks = [\"lan\"]\n", &[]).unwrap_err();
        assert!(e.to_string().contains("auth.admin_networks"), "{e}");

        let cfg = parse("", &[]).unwrap();
        assert_eq!(cfg.command_limits, crate::home::CommandLimits::default());
        let cfg = parse(
            "[miniserver]\nmax_commands_per_control = 2\nmax_commands = 50\n",
            &[],
        )
        .unwrap();
        assert_eq!(
            (cfg.command_limits.per_control, cfg.command_limits.total),
            (2, 50)
        );
        let e = parse("[miniserver]\nmax_commands = 0\n", &[]).unwrap_err();
        assert!(e.to_string().contains("miniserver.max_commands"), "{e}");
    }

    #[test]
    fn production_off_loopback_needs_allowed_hosts() {
        let lan = [
            ("HOME_LISTEN", "0.0.0.0:3001"),
            ("SECURITY_LEVEL", "production"),
        ];
        let e = parse("", &lan).unwrap().check_serve().unwrap_err();
        assert!(e.to_string().contains("server.allowed_hosts"), "{e}");
        let ok = parse("[server]\nallowed_hosts = [\"homepi.local\"]\n", &lan).unwrap();
        assert!(ok.check_serve().is_ok());
        let staging = [
            ("HOME_LISTEN", "0.0.0.0:3001"),
            ("SECURITY_LEVEL", "staging"),
        ];
        assert!(parse("", &staging).unwrap().check_serve().is_ok());
        let local = [("SECURITY_LEVEL", "production")];
        assert!(parse("", &local).unwrap().check_serve().is_ok(), "loopback");
    }

    #[test]
    fn audit_settings() {
        let cfg = parse("", &[]).unwrap();
        assert_eq!(cfg.audit, crate::audit::AuditConfig::default());
        assert!(cfg.audit.enabled);
        assert_eq!(cfg.audit.retention_days, 90);
        let cfg = parse("[audit]\nenabled = false\nretention_days = 7\n", &[]).unwrap();
        assert!(!cfg.audit.enabled);
        assert_eq!(cfg.audit.retention_days, 7);
        assert!(parse("[audit]\nretention_days = 0\n", &[]).is_err());
        assert!(parse("[audit]\nkeep = 1\n", &[]).is_err());
    }

    #[test]
    fn dashboard_settings() {
        let cfg = parse("", &[]).unwrap();
        assert_eq!(cfg.dashboard.history.days, 7);
        assert_eq!(cfg.dashboard.ws.max_clients, 32);
        let cfg = parse(
            "[dashboard]\nhistory_days = 30\nhistory_flush_secs = 5\nmax_ws_clients = 4\n",
            &[],
        )
        .unwrap();
        assert_eq!(cfg.dashboard.history.days, 30);
        assert_eq!(cfg.dashboard.history.flush_every, Duration::from_secs(5));
        assert_eq!(
            cfg.dashboard.history.states,
            crate::dashboard::history::RecordStates::Primary
        );
        let recorded = parse(
            "[dashboard]\nhistory_states = \"all\"\nhistory_devices = [\"Stromzähler\"]\nhistory_skip = [\"Partymodus\"]\n",
            &[],
        )
        .unwrap();
        assert_eq!(
            recorded.dashboard.history.states,
            crate::dashboard::history::RecordStates::All
        );
        assert_eq!(
            recorded.dashboard.history.devices,
            vec!["Stromzähler".to_string()]
        );
        assert_eq!(
            recorded.dashboard.history.skip,
            vec!["Partymodus".to_string()]
        );
        assert_eq!(cfg.dashboard.ws.max_clients, 4);
        for (text, setting) in [
            ("[dashboard]\nhistory_days = 0\n", "dashboard.history_days"),
            (
                "[dashboard]\nhistory_days = 400\n",
                "dashboard.history_days",
            ),
            (
                "[dashboard]\nhistory_flush_secs = 0\n",
                "dashboard.history_flush_secs",
            ),
            (
                "[dashboard]\nmax_ws_clients = 0\n",
                "dashboard.max_ws_clients",
            ),
            (
                "[dashboard]\nhistory_states = \"some\"\n",
                "dashboard.history_states",
            ),
            (
                "[dashboard]\nhistory_skip = [\"\"]\n",
                "dashboard.history_skip",
            ),
        ] {
            let e = parse(text, &[]).unwrap_err();
            assert!(e.to_string().contains(setting), "{e}");
        }
        assert!(parse("[dashboard]\nbogus = 1\n", &[]).is_err());
    }

    #[test]
    fn password_is_redacted_in_debug() {
        let ms = MiniserverConfig {
            base_url: "http://x".into(),
            user: "u".into(),
            password: "secret".into(),
        };
        assert!(!format!("{ms:?}").contains("secret"));
    }
}

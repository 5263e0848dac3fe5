//! Prometheus metrics: one process-wide registry ([`global`]) of atomic counters, gauges and
//! histograms, rendered as the Prometheus text exposition format 0.0.4 by `GET /metrics`
//! (see [`crate::http`]).
//!
//! Deep code counts without plumbing: `metrics::global().cache(CacheKind::Tool, true)`. Every
//! label set is bounded and known up front (transports, MCP methods, tool names of the
//! catalogue, outcomes), so each series is a preallocated `AtomicU64` and recording never
//! allocates or locks. Values owned elsewhere (the Miniserver link, sessions, streams) are read
//! at scrape time ([`Scrape`]) instead of being counted twice.
//!
//! Why no crate: `prometheus-client` (the official client) encodes OpenMetrics only (`# EOF`,
//! counter families named without `_total`), which is not the 0.0.4 text format asked for
//! here, and it adds parking_lot (+4 crates) and a derive macro (syn 2/3, quote,
//! proc-macro2); its `Family` hashes and clones the label set under a `RwLock` on every
//! record. Our label sets are small and static, so a fixed array of atomics plus ~150 lines
//! of text rendering is smaller and faster.
//!
//! ## Metrics
//! | name | type | labels | meaning |
//! |---|---|---|---|
//! | `home_mcp_http_requests_total` | counter | `transport`, `outcome` | HTTP requests answered (or handed to a stream) |
//! | `home_mcp_http_request_duration_seconds` | histogram | `transport` | time until the answer was ready to write or handed to a stream thread |
//! | `home_mcp_mcp_requests_total` | counter | `transport`, `method`, `outcome` (+ `tool` for `tools/call`) | JSON-RPC requests (all transports, stdio included) |
//! | `home_mcp_mcp_request_duration_seconds` | histogram | `transport` | time the MCP core spent on a request |
//! | `home_mcp_tool_call_duration_seconds` | histogram | `tool` | time of `tools/call` by tool |
//! | `home_mcp_auth_failures_total` | counter | `reason` | gate refusals: `invalid_api_key`, `insufficient_permissions`, `ip_not_whitelisted`, `rate_limited` |
//! | `home_mcp_rate_limit_rejections_total` | counter | `bucket` (`key`, `client`, `anonymous`) | requests over a rate limit |
//! | `home_mcp_cache_hits_total`, `home_mcp_cache_misses_total` | counter | `cache` (`tool`, `resource`) | response cache lookups (a request joining an identical one in flight is a hit) |
//! | `home_mcp_visu_password_wrong_total` | counter | `source` (`page`, `configured`) | visualisation passwords the Miniserver refused |
//! | `home_mcp_visu_password_pauses_total` | counter | `scope` (`key`, `house`, `configured`) | runs of wrong visualisation passwords that started a pause (a key's, the house-wide one for the page, the configured password's; who: the audit log and the dashboard) |
//! | `home_mcp_visu_password_refused_total` | counter | | secured commands refused during a pause (nothing sent) |
//! | `home_mcp_miniserver_link_state` | gauge | `mode` (`websocket`, `polling`, `disconnected`) | 1 for the current mode, else 0 |
//! | `home_mcp_miniserver_reconnects_total` | counter | | times the link came back |
//! | `home_mcp_miniserver_events_received_total` | counter | | state values received |
//! | `home_mcp_mcp_sessions` | gauge | | open MCP sessions (Streamable HTTP and legacy SSE) |
//! | `home_mcp_sse_streams` | gauge | | SSE streams running on their own threads |
//! | `home_mcp_dashboard_clients` | gauge | | dashboard WebSocket clients ([`Metrics::dashboard_clients`]) |
//! | `home_mcp_process_resident_memory_bytes` | gauge | | resident set size (Linux only) |
//! | `home_mcp_process_start_time_seconds` | gauge | | start time, Unix seconds |
//! | `home_mcp_uptime_seconds` | gauge | | seconds since start |
//! | `home_mcp_build_info` | gauge | `version` | always 1 |
//!
//! Label values: `transport` of HTTP requests is `mcp_http` (`/mcp`), `sse_legacy` (`/sse`,
//! `/message`), `rest`, `admin`, `dashboard`, `health`, `metrics` or `other`; of MCP requests
//! `mcp_http`, `sse_legacy`, `rest`, `stdio` or `other`. `outcome` is `ok`, `error` (a JSON-RPC
//! error, or HTTP status 400+ other than the gate's) or `denied` (401/403/429 from the gate).
//! `method` is one of the MCP methods the server implements, else `other`; `tool` a tool of
//! the catalogue, else `unknown`. Series that never happened are left out, except the fixed
//! gauges. Latency buckets: 1 ms to 10 s.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The `scope` label values of `home_mcp_visu_password_pauses_total`.
const VISU_SCOPES: [&str; 3] = ["key", "house", "configured"];

/// The `Content-Type` of the exposition.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Upper bounds of the latency buckets, in seconds (`+Inf` is implied).
pub const BUCKETS: [f64; 13] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Bucket bounds in nanoseconds (same order as [`BUCKETS`]).
const BUCKET_NANOS: [u64; 13] = [
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
];

/// The HTTP route family of a request (the `transport` label of HTTP metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpTransport {
    McpHttp,
    SseLegacy,
    Rest,
    Admin,
    Dashboard,
    Health,
    Metrics,
    Other,
}

impl HttpTransport {
    const ALL: [HttpTransport; 8] = [
        HttpTransport::McpHttp,
        HttpTransport::SseLegacy,
        HttpTransport::Rest,
        HttpTransport::Admin,
        HttpTransport::Dashboard,
        HttpTransport::Health,
        HttpTransport::Metrics,
        HttpTransport::Other,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            HttpTransport::McpHttp => "mcp_http",
            HttpTransport::SseLegacy => "sse_legacy",
            HttpTransport::Rest => "rest",
            HttpTransport::Admin => "admin",
            HttpTransport::Dashboard => "dashboard",
            HttpTransport::Health => "health",
            HttpTransport::Metrics => "metrics",
            HttpTransport::Other => "other",
        }
    }

    /// The transport of a request path (without query).
    pub fn from_path(path: &str) -> Self {
        match path {
            "/mcp" => HttpTransport::McpHttp,
            "/sse" | "/message" => HttpTransport::SseLegacy,
            "/health" => HttpTransport::Health,
            "/metrics" => HttpTransport::Metrics,
            "/tools" | "/tools/call" => HttpTransport::Rest,
            _ if path.starts_with("/api/devices") => HttpTransport::Rest,
            _ if path.starts_with("/admin") => HttpTransport::Admin,
            _ if path == "/dashboard" || path.starts_with("/dashboard/") => {
                HttpTransport::Dashboard
            }
            _ => HttpTransport::Other,
        }
    }
}

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Error,
    /// Refused by the auth gate (401, 403, 429).
    Denied,
}

impl Outcome {
    const ALL: [Outcome; 3] = [Outcome::Ok, Outcome::Error, Outcome::Denied];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Error => "error",
            Outcome::Denied => "denied",
        }
    }

    /// `ok` below 400, `denied` for 401/403/429, else `error`.
    pub fn from_status(status: u16) -> Self {
        match status {
            0..=399 => Outcome::Ok,
            401 | 403 | 429 => Outcome::Denied,
            _ => Outcome::Error,
        }
    }
}

/// Transports of MCP requests, by [`crate::mcp::SessionState::transport`].
const MCP_TRANSPORTS: [&str; 5] = ["mcp_http", "sse_legacy", "rest", "stdio", "other"];

fn mcp_transport(session_transport: &str) -> usize {
    match session_transport {
        "http" => 0,
        "sse" => 1,
        "rest" => 2,
        "stdio" => 3,
        _ => 4,
    }
}

/// The MCP methods counted by name; anything else is `other`.
const METHODS: [&str; 14] = [
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "other",
];
const TOOLS_CALL: usize = 3;

fn method_index(method: &str) -> usize {
    METHODS[..METHODS.len() - 1]
        .iter()
        .position(|m| *m == method)
        .unwrap_or(METHODS.len() - 1)
}

/// `method` as a `'static` label value: itself when the server implements it, else `other`.
pub fn known_method(method: &str) -> &'static str {
    METHODS[method_index(method)]
}

/// Why the gate refused (the `reason` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthFailure {
    InvalidApiKey,
    InsufficientPermissions,
    IpNotWhitelisted,
    RateLimited,
}

impl AuthFailure {
    const ALL: [AuthFailure; 4] = [
        AuthFailure::InvalidApiKey,
        AuthFailure::InsufficientPermissions,
        AuthFailure::IpNotWhitelisted,
        AuthFailure::RateLimited,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            AuthFailure::InvalidApiKey => "invalid_api_key",
            AuthFailure::InsufficientPermissions => "insufficient_permissions",
            AuthFailure::IpNotWhitelisted => "ip_not_whitelisted",
            AuthFailure::RateLimited => "rate_limited",
        }
    }
}

/// Which rate-limit bucket refused (the `bucket` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateBucket {
    /// The key's per-role limit.
    Key,
    /// The per-client-address limit of the MCP HTTP transport.
    Client,
    /// Requests without a key (development).
    Anonymous,
}

impl RateBucket {
    const ALL: [RateBucket; 3] = [RateBucket::Key, RateBucket::Client, RateBucket::Anonymous];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            RateBucket::Key => "key",
            RateBucket::Client => "client",
            RateBucket::Anonymous => "anonymous",
        }
    }
}

/// The response caches (the `cache` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheKind {
    /// Answers of read-only tools.
    Tool,
    /// Resource contents.
    Resource,
}

impl CacheKind {
    const ALL: [CacheKind; 2] = [CacheKind::Tool, CacheKind::Resource];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheKind::Tool => "tool",
            CacheKind::Resource => "resource",
        }
    }
}

/// A gauge another part of the server sets (e.g. connected dashboard clients).
#[derive(Debug, Default)]
pub struct Gauge(AtomicI64);

impl Gauge {
    /// Sets the value.
    pub fn set(&self, v: i64) {
        self.0.store(v, Ordering::Relaxed);
    }

    /// Adds one.
    pub fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// Subtracts one.
    pub fn dec(&self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }

    /// The current value.
    pub fn get(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A latency histogram with the [`BUCKETS`] bounds: per-bucket counts (not cumulative; the
/// exposition sums them) and the sum in nanoseconds.
#[derive(Debug, Default)]
pub struct Histogram {
    /// `BUCKETS.len()` bounded buckets, then `+Inf`.
    buckets: [AtomicU64; 14],
    sum_nanos: AtomicU64,
}

impl Histogram {
    /// Records one observation.
    pub fn observe(&self, d: Duration) {
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let i = BUCKET_NANOS
            .iter()
            .position(|b| nanos <= *b)
            .unwrap_or(BUCKET_NANOS.len());
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// Observations so far.
    pub fn count(&self) -> u64 {
        self.buckets.iter().map(|b| b.load(Ordering::Relaxed)).sum()
    }
}

/// The process-wide registry. Get it with [`global`].
#[derive(Debug)]
pub struct Metrics {
    started: SystemTime,
    started_at: Instant,
    /// `[transport][outcome]`
    http_requests: [[AtomicU64; 3]; 8],
    http_duration: [Histogram; 8],
    /// `[transport][method][outcome]`; `tools/call` is counted in `tool_calls` instead.
    mcp_requests: [[[AtomicU64; 3]; 14]; 5],
    mcp_duration: [Histogram; 5],
    /// The `tool` label's values and their series, once the wiring named the tools
    /// ([`Metrics::know_tools`]).
    tools: OnceLock<ToolSeries>,
    auth_failures: [AtomicU64; 4],
    rate_limited: [AtomicU64; 3],
    /// `[cache][hit, miss]`
    cache: [[AtomicU64; 2]; 2],
    /// `[page, configured]`
    visu_wrong: [AtomicU64; 2],
    /// `[key, house, configured]`
    visu_pauses: [AtomicU64; 3],
    visu_refused: AtomicU64,
    /// Connected dashboard WebSocket clients: the dashboard sets it (`inc` on connect, `dec`
    /// on disconnect); exported as `home_mcp_dashboard_clients`.
    pub dashboard_clients: Gauge,
}

/// The registry of this process (created on first use). The wiring names the tools of the
/// catalogue ([`Metrics::know_tools`]) before the server takes requests; this registry knows
/// no feature itself.
pub fn global() -> &'static Metrics {
    static GLOBAL: OnceLock<Metrics> = OnceLock::new();
    GLOBAL.get_or_init(Metrics::without_tools)
}

/// Tool names, sorted (index `names.len()` is `unknown`), with their series.
#[derive(Debug)]
struct ToolSeries {
    names: Vec<&'static str>,
    /// `[tool][transport][outcome]`
    calls: Vec<[[AtomicU64; 3]; 5]>,
    duration: Vec<Histogram>,
}

impl ToolSeries {
    fn new(names: impl IntoIterator<Item = &'static str>) -> Self {
        let mut names: Vec<&'static str> = names.into_iter().collect();
        names.sort_unstable();
        names.dedup();
        let n = names.len() + 1;
        Self {
            calls: (0..n).map(|_| Default::default()).collect(),
            duration: (0..n).map(|_| Histogram::default()).collect(),
            names,
        }
    }

    fn index(&self, name: &str) -> usize {
        self.names.binary_search(&name).unwrap_or(self.names.len())
    }

    /// The label value of series `i`.
    fn name(&self, i: usize) -> &'static str {
        self.names.get(i).copied().unwrap_or("unknown")
    }
}

/// The Miniserver link as the exposition shows it (the wiring reads it from the link at
/// scrape time).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LinkScrape {
    /// Every mode of the link (`websocket`, `polling`, `disconnected`) and whether it is the
    /// current one.
    pub modes: Vec<(&'static str, bool)>,
    /// Times the link came back after being disconnected.
    pub reconnects: u64,
    /// State values received (events, or values read by a poll round).
    pub events_received: u64,
}

/// The house's own alerts and its stop as the exposition shows them (the wiring reads them
/// from the house at scrape time).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HouseScrape {
    /// Active Message Center entries per severity (`info`, `warning`, `important`,
    /// `critical`, every one listed, zeros included); empty when the Miniserver has no
    /// Message Center.
    pub active_alerts: Vec<(&'static str, usize)>,
    /// Whether commands are stopped (the stop switch or the admin page's stop).
    pub stopped: bool,
}

/// What the exposition reads from elsewhere at scrape time.
#[derive(Debug, Clone, Default)]
pub struct Scrape {
    /// The Miniserver link; `None` leaves the link metrics out.
    pub link: Option<LinkScrape>,
    /// The house's alerts and stop; `None` leaves those metrics out.
    pub house: Option<HouseScrape>,
    /// Open MCP sessions.
    pub sessions: Option<usize>,
    /// SSE streams running.
    pub streams: Option<usize>,
}

impl Metrics {
    /// An empty registry whose `tool` label allows `tools` (plus `unknown`).
    pub fn new(tools: impl IntoIterator<Item = &'static str>) -> Self {
        let m = Self::without_tools();
        m.know_tools(tools);
        m
    }

    /// An empty registry that does not know the tools yet: until [`Metrics::know_tools`],
    /// `tools/call` requests are counted in the MCP latency histogram only.
    fn without_tools() -> Self {
        Self {
            started: SystemTime::now(),
            started_at: Instant::now(),
            http_requests: Default::default(),
            http_duration: Default::default(),
            mcp_requests: Default::default(),
            mcp_duration: Default::default(),
            tools: OnceLock::new(),
            auth_failures: Default::default(),
            rate_limited: Default::default(),
            cache: Default::default(),
            visu_wrong: Default::default(),
            visu_pauses: Default::default(),
            visu_refused: AtomicU64::new(0),
            dashboard_clients: Gauge::default(),
        }
    }

    /// Names the tools of the catalogue: the values the `tool` label allows (plus `unknown`).
    /// The first call wins; returns whether this one did.
    pub fn know_tools(&self, tools: impl IntoIterator<Item = &'static str>) -> bool {
        let mut named = false;
        self.tools.get_or_init(|| {
            named = true;
            ToolSeries::new(tools)
        });
        named
    }

    /// `name` as a `'static` label value: itself for a tool of the catalogue, else `unknown`.
    pub fn known_tool(&self, name: &str) -> &'static str {
        self.tools
            .get()
            .map_or("unknown", |t| t.name(t.index(name)))
    }

    /// One HTTP request on `transport` answered with `status` after `elapsed` (the histogram
    /// is skipped for `None`, e.g. refusals before any work).
    pub fn http_request(&self, transport: HttpTransport, status: u16, elapsed: Option<Duration>) {
        let t = transport as usize;
        let o = Outcome::from_status(status) as usize;
        self.http_requests[t][o].fetch_add(1, Ordering::Relaxed);
        if let Some(d) = elapsed {
            self.http_duration[t].observe(d);
        }
    }

    /// One MCP request: `session_transport` as in [`crate::mcp::SessionState::transport`]
    /// (`http`, `sse`, `rest`, `stdio`), the JSON-RPC `method`, the tool for `tools/call`;
    /// `elapsed` feeds the latency histograms (`None` for refusals).
    pub fn mcp_request(
        &self,
        session_transport: &str,
        method: &str,
        tool: Option<&str>,
        outcome: Outcome,
        elapsed: Option<Duration>,
    ) {
        let t = mcp_transport(session_transport);
        let m = method_index(method);
        let o = outcome as usize;
        if m == TOOLS_CALL {
            if let Some(series) = self.tools.get() {
                let i = series.index(tool.unwrap_or(""));
                series.calls[i][t][o].fetch_add(1, Ordering::Relaxed);
                if let Some(d) = elapsed {
                    series.duration[i].observe(d);
                }
            }
        } else {
            self.mcp_requests[t][m][o].fetch_add(1, Ordering::Relaxed);
        }
        if let Some(d) = elapsed {
            self.mcp_duration[t].observe(d);
        }
    }

    /// One refusal by the gate.
    pub fn auth_failure(&self, reason: AuthFailure) {
        self.auth_failures[reason as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// One request over the rate limit of `bucket`.
    pub fn rate_limited(&self, bucket: RateBucket) {
        self.rate_limited[bucket as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// One lookup in a response cache.
    pub fn cache(&self, kind: CacheKind, hit: bool) {
        self.cache[kind as usize][usize::from(!hit)].fetch_add(1, Ordering::Relaxed);
    }

    /// One visualisation password the Miniserver refused; `source` is `page` or
    /// `configured` (anything else counts as `page`).
    pub fn visu_password_wrong(&self, source: &str) {
        let i = usize::from(source == "configured");
        self.visu_wrong[i].fetch_add(1, Ordering::Relaxed);
    }

    /// One run of wrong visualisation passwords that started a pause; `scope` is `key`,
    /// `house` or `configured` (anything else counts as `key`).
    pub fn visu_password_pause(&self, scope: &str) {
        let i = VISU_SCOPES.iter().position(|s| *s == scope).unwrap_or(0);
        self.visu_pauses[i].fetch_add(1, Ordering::Relaxed);
    }

    /// One secured command refused during a pause.
    pub fn visu_password_refused(&self) {
        self.visu_refused.fetch_add(1, Ordering::Relaxed);
    }

    /// Calls of `tool` so far with `outcome`, over all transports (for tests and `/health`).
    pub fn tool_calls(&self, tool: &str, outcome: Outcome) -> u64 {
        self.tools.get().map_or(0, |series| {
            series.calls[series.index(tool)]
                .iter()
                .map(|t| t[outcome as usize].load(Ordering::Relaxed))
                .sum()
        })
    }

    /// Refusals for `reason` so far.
    pub fn auth_failures(&self, reason: AuthFailure) -> u64 {
        self.auth_failures[reason as usize].load(Ordering::Relaxed)
    }

    /// The Prometheus text exposition (format 0.0.4) of every metric.
    pub fn render(&self, scrape: &Scrape) -> String {
        let mut out = String::with_capacity(8 * 1024);
        let w = &mut out;

        family(
            w,
            "home_mcp_http_requests_total",
            "counter",
            "HTTP requests by route family (transport) and outcome.",
        );
        for t in HttpTransport::ALL {
            for o in Outcome::ALL {
                let v = self.http_requests[t as usize][o as usize].load(Ordering::Relaxed);
                if v > 0 {
                    sample(
                        w,
                        "home_mcp_http_requests_total",
                        &[("transport", t.as_str()), ("outcome", o.as_str())],
                        v,
                    );
                }
            }
        }
        family(
            w,
            "home_mcp_http_request_duration_seconds",
            "histogram",
            "Time until an HTTP answer was ready to write or handed to a stream thread, in seconds.",
        );
        for t in HttpTransport::ALL {
            histogram(
                w,
                "home_mcp_http_request_duration_seconds",
                ("transport", t.as_str()),
                &self.http_duration[t as usize],
            );
        }

        family(
            w,
            "home_mcp_mcp_requests_total",
            "counter",
            "MCP JSON-RPC requests by transport, method, tool (tools/call only) and outcome.",
        );
        for (t, transport) in MCP_TRANSPORTS.iter().enumerate() {
            for (m, method) in METHODS.iter().enumerate() {
                for o in Outcome::ALL {
                    let v = self.mcp_requests[t][m][o as usize].load(Ordering::Relaxed);
                    if v > 0 {
                        sample(
                            w,
                            "home_mcp_mcp_requests_total",
                            &[
                                ("transport", transport),
                                ("method", method),
                                ("outcome", o.as_str()),
                            ],
                            v,
                        );
                    }
                }
            }
            let series = self.tools.get();
            for (i, counts) in series.iter().flat_map(|s| s.calls.iter().enumerate()) {
                let tool = series.map_or("unknown", |s| s.name(i));
                for o in Outcome::ALL {
                    let v = counts[t][o as usize].load(Ordering::Relaxed);
                    if v > 0 {
                        sample(
                            w,
                            "home_mcp_mcp_requests_total",
                            &[
                                ("transport", transport),
                                ("method", "tools/call"),
                                ("tool", tool),
                                ("outcome", o.as_str()),
                            ],
                            v,
                        );
                    }
                }
            }
        }
        family(
            w,
            "home_mcp_mcp_request_duration_seconds",
            "histogram",
            "Time the MCP core spent on a request, in seconds.",
        );
        for (t, transport) in MCP_TRANSPORTS.iter().enumerate() {
            histogram(
                w,
                "home_mcp_mcp_request_duration_seconds",
                ("transport", transport),
                &self.mcp_duration[t],
            );
        }
        family(
            w,
            "home_mcp_tool_call_duration_seconds",
            "histogram",
            "Time of tools/call by tool, in seconds.",
        );
        let series = self.tools.get();
        for (i, h) in series.iter().flat_map(|s| s.duration.iter().enumerate()) {
            let tool = series.map_or("unknown", |s| s.name(i));
            histogram(w, "home_mcp_tool_call_duration_seconds", ("tool", tool), h);
        }

        family(
            w,
            "home_mcp_auth_failures_total",
            "counter",
            "Requests refused by the API key gate, by reason.",
        );
        for r in AuthFailure::ALL {
            let v = self.auth_failures[r as usize].load(Ordering::Relaxed);
            sample(
                w,
                "home_mcp_auth_failures_total",
                &[("reason", r.as_str())],
                v,
            );
        }
        family(
            w,
            "home_mcp_rate_limit_rejections_total",
            "counter",
            "Requests over a rate limit, by bucket.",
        );
        for b in RateBucket::ALL {
            let v = self.rate_limited[b as usize].load(Ordering::Relaxed);
            sample(
                w,
                "home_mcp_rate_limit_rejections_total",
                &[("bucket", b.as_str())],
                v,
            );
        }
        for (i, name, help) in [
            (0, "home_mcp_cache_hits_total", "Response cache lookups answered from the cache (or by an identical request in flight)."),
            (1, "home_mcp_cache_misses_total", "Response cache lookups that ran the request."),
        ] {
            family(w, name, "counter", help);
            for k in CacheKind::ALL {
                let v = self.cache[k as usize][i].load(Ordering::Relaxed);
                sample(w, name, &[("cache", k.as_str())], v);
            }
        }

        family(
            w,
            "home_mcp_visu_password_wrong_total",
            "counter",
            "Visualisation passwords the Miniserver refused, by where they came from.",
        );
        for (i, source) in ["page", "configured"].iter().enumerate() {
            let v = self.visu_wrong[i].load(Ordering::Relaxed);
            sample(
                w,
                "home_mcp_visu_password_wrong_total",
                &[("source", source)],
                v,
            );
        }
        family(
            w,
            "home_mcp_visu_password_pauses_total",
            "counter",
            "Runs of wrong visualisation passwords that started a pause, by ledger.",
        );
        for (i, scope) in VISU_SCOPES.iter().enumerate() {
            let v = self.visu_pauses[i].load(Ordering::Relaxed);
            sample(
                w,
                "home_mcp_visu_password_pauses_total",
                &[("scope", scope)],
                v,
            );
        }
        family(
            w,
            "home_mcp_visu_password_refused_total",
            "counter",
            "Secured commands refused during a pause after wrong visualisation passwords.",
        );
        sample(
            w,
            "home_mcp_visu_password_refused_total",
            &[],
            self.visu_refused.load(Ordering::Relaxed),
        );

        if let Some(link) = &scrape.link {
            family(
                w,
                "home_mcp_miniserver_link_state",
                "gauge",
                "Mode of the Miniserver link: 1 for the current mode, else 0.",
            );
            for &(mode, current) in &link.modes {
                sample(
                    w,
                    "home_mcp_miniserver_link_state",
                    &[("mode", mode)],
                    u64::from(current),
                );
            }
            family(
                w,
                "home_mcp_miniserver_reconnects_total",
                "counter",
                "Times the Miniserver link came back after being disconnected.",
            );
            sample(
                w,
                "home_mcp_miniserver_reconnects_total",
                &[],
                link.reconnects,
            );
            family(
                w,
                "home_mcp_miniserver_events_received_total",
                "counter",
                "State values received from the Miniserver (events or polled values).",
            );
            sample(
                w,
                "home_mcp_miniserver_events_received_total",
                &[],
                link.events_received,
            );
        }
        if let Some(house) = &scrape.house {
            if !house.active_alerts.is_empty() {
                family(
                    w,
                    "home_mcp_alerts_active",
                    "gauge",
                    "Active entries of the Miniserver's Message Center, by severity.",
                );
                for &(severity, n) in &house.active_alerts {
                    sample(
                        w,
                        "home_mcp_alerts_active",
                        &[("severity", severity)],
                        n as u64,
                    );
                }
            }
            family(
                w,
                "home_mcp_assistant_stopped",
                "gauge",
                "1 while commands are stopped (the stop switch or the admin page's stop), else 0.",
            );
            sample(
                w,
                "home_mcp_assistant_stopped",
                &[],
                u64::from(house.stopped),
            );
        }
        if let Some(n) = scrape.sessions {
            family(
                w,
                "home_mcp_mcp_sessions",
                "gauge",
                "Open MCP sessions (Streamable HTTP and legacy SSE).",
            );
            sample(w, "home_mcp_mcp_sessions", &[], n as u64);
        }
        if let Some(n) = scrape.streams {
            family(
                w,
                "home_mcp_sse_streams",
                "gauge",
                "SSE streams running on their own threads.",
            );
            sample(w, "home_mcp_sse_streams", &[], n as u64);
        }
        family(
            w,
            "home_mcp_dashboard_clients",
            "gauge",
            "Connected dashboard WebSocket clients.",
        );
        let _ = writeln!(
            w,
            "home_mcp_dashboard_clients {}",
            self.dashboard_clients.get()
        );

        if let Some(rss) = resident_memory_bytes() {
            family(
                w,
                "home_mcp_process_resident_memory_bytes",
                "gauge",
                "Resident memory size in bytes.",
            );
            sample(w, "home_mcp_process_resident_memory_bytes", &[], rss);
        }
        let start = self.started.duration_since(UNIX_EPOCH).unwrap_or_default();
        family(
            w,
            "home_mcp_process_start_time_seconds",
            "gauge",
            "Start time of the process since the Unix epoch, in seconds.",
        );
        let _ = writeln!(
            w,
            "home_mcp_process_start_time_seconds {}",
            start.as_secs_f64()
        );
        family(
            w,
            "home_mcp_uptime_seconds",
            "gauge",
            "Seconds since the process started.",
        );
        let _ = writeln!(
            w,
            "home_mcp_uptime_seconds {}",
            self.started_at.elapsed().as_secs_f64()
        );
        family(
            w,
            "home_mcp_build_info",
            "gauge",
            "Build information; always 1.",
        );
        sample(
            w,
            "home_mcp_build_info",
            &[("version", env!("CARGO_PKG_VERSION"))],
            1,
        );
        out
    }
}

/// `# HELP` and `# TYPE` of a family.
fn family(w: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(w, "# HELP {name} {help}");
    let _ = writeln!(w, "# TYPE {name} {kind}");
}

/// `name{labels} value`.
fn sample(w: &mut String, name: &str, labels: &[(&str, &str)], value: u64) {
    w.push_str(name);
    labels_into(w, labels, None);
    let _ = writeln!(w, " {value}");
}

fn labels_into(w: &mut String, labels: &[(&str, &str)], le: Option<&str>) {
    if labels.is_empty() && le.is_none() {
        return;
    }
    w.push('{');
    let mut first = true;
    for (k, v) in labels.iter().copied().chain(le.map(|le| ("le", le))) {
        if !first {
            w.push(',');
        }
        first = false;
        w.push_str(k);
        w.push_str("=\"");
        for c in v.chars() {
            match c {
                '\\' => w.push_str("\\\\"),
                '"' => w.push_str("\\\""),
                '\n' => w.push_str("\\n"),
                c => w.push(c),
            }
        }
        w.push('"');
    }
    w.push('}');
}

/// The series of one histogram; nothing when it has no observations.
fn histogram(w: &mut String, name: &str, label: (&str, &str), h: &Histogram) {
    let counts: Vec<u64> = h
        .buckets
        .iter()
        .map(|b| b.load(Ordering::Relaxed))
        .collect();
    let count: u64 = counts.iter().sum();
    if count == 0 {
        return;
    }
    let mut cumulative = 0;
    for (i, c) in counts.iter().enumerate() {
        cumulative += c;
        let le = match BUCKETS.get(i) {
            Some(b) => b.to_string(),
            None => "+Inf".to_string(),
        };
        let _ = write!(w, "{name}_bucket");
        labels_into(w, &[label], Some(&le));
        let _ = writeln!(w, " {cumulative}");
    }
    let sum = h.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9;
    let _ = write!(w, "{name}_sum");
    labels_into(w, &[label], None);
    let _ = writeln!(w, " {sum}");
    let _ = write!(w, "{name}_count");
    labels_into(w, &[label], None);
    let _ = writeln!(w, " {count}");
}

fn valid_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// Checks an exposition line by line (used by the tests; not a full parser): every sample belongs to a family with HELP and
/// TYPE given once and before it, names and label names are valid, values parse, no
/// series repeats, histogram buckets are cumulative and end in `+Inf` == `_count`.
pub fn check_exposition(text: &str) -> Result<usize, String> {
    let mut help = BTreeSet::new();
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut series = BTreeSet::new();
    let mut last_bucket: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    let mut inf: BTreeMap<String, f64> = BTreeMap::new();
    let mut samples = 0;
    for (n, line) in text.lines().enumerate() {
        let n = n + 1;
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().unwrap_or("");
            if !valid_name(name) || !help.insert(name.to_string()) {
                return Err(format!("line {n}: bad or repeated HELP: {line}"));
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').ok_or(format!("line {n}: {line}"))?;
            if !help.contains(name) {
                return Err(format!("line {n}: TYPE before HELP: {line}"));
            }
            if !["counter", "gauge", "histogram"].contains(&kind) {
                return Err(format!("line {n}: type {kind}"));
            }
            if types.insert(name.into(), kind.into()).is_some() {
                return Err(format!("line {n}: repeated TYPE"));
            }
            continue;
        }
        if line.is_empty() || line.starts_with('#') {
            return Err(format!("line {n}: unexpected {line:?}"));
        }
        let (key, value) = line.rsplit_once(' ').ok_or(format!("line {n}: {line}"))?;
        let v: f64 = value
            .parse()
            .map_err(|_| format!("line {n}: bad value {value}"))?;
        let (name, labels) = match key.split_once('{') {
            Some((name, rest)) => (name, rest.strip_suffix('}').ok_or(format!("line {n}"))?),
            None => (key, ""),
        };
        if !valid_name(name) {
            return Err(format!("line {n}: bad name {name}"));
        }
        let mut le = None;
        let mut others = Vec::new();
        for pair in labels.split(',').filter(|p| !p.is_empty()) {
            let (k, val) = pair.split_once('=').ok_or(format!("line {n}: {pair}"))?;
            if !valid_name(k) || k.contains(':') || !val.starts_with('"') || !val.ends_with('"') {
                return Err(format!("line {n}: bad label {pair}"));
            }
            if k == "le" {
                le = Some(val.trim_matches('"').to_string());
            } else {
                others.push(pair);
            }
        }
        let family = types
            .keys()
            .filter(|f| {
                name == f.as_str()
                    || (types[*f] == "histogram"
                        && ["_bucket", "_sum", "_count"]
                            .iter()
                            .any(|s| name == format!("{f}{s}")))
            })
            .max_by_key(|f| f.len())
            .ok_or(format!("line {n}: sample {name} has no TYPE"))?;
        if types[family] == "counter" && !name.ends_with("_total") {
            return Err(format!("line {n}: counter without _total"));
        }
        if !series.insert(key.to_string()) {
            return Err(format!("line {n}: duplicate series {key}"));
        }
        let id = format!("{family}{{{}}}", others.join(","));
        if name.ends_with("_bucket") {
            let le = le.ok_or(format!("line {n}: bucket without le"))?;
            let bound: f64 = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().map_err(|_| format!("line {n}: le {le}"))?
            };
            if let Some((b, c)) = last_bucket.get(&id) {
                if bound <= *b || v < *c {
                    return Err(format!("line {n}: buckets not cumulative"));
                }
            }
            last_bucket.insert(id.clone(), (bound, v));
            if bound.is_infinite() {
                inf.insert(id, v);
            }
        } else if name.ends_with("_count")
            && types[family] == "histogram"
            && inf.get(&id) != Some(&v)
        {
            return Err(format!("line {n}: _count {v} != +Inf bucket"));
        }
        samples += 1;
    }
    Ok(samples)
}

/// Resident set size from `/proc/self/status` (`VmRSS`); `None` off Linux.
pub fn resident_memory_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_is_well_formed() {
        let m = Metrics::new(["get_lights", "control_device"]);
        m.http_request(HttpTransport::McpHttp, 200, Some(Duration::from_millis(3)));
        m.http_request(HttpTransport::McpHttp, 401, None);
        m.http_request(HttpTransport::Rest, 500, Some(Duration::from_secs(20)));
        m.mcp_request(
            "http",
            "tools/call",
            Some("get_lights"),
            Outcome::Ok,
            Some(Duration::from_micros(800)),
        );
        m.mcp_request(
            "http",
            "tools/call",
            Some("nope"),
            Outcome::Error,
            Some(Duration::from_millis(40)),
        );
        m.mcp_request(
            "stdio",
            "tools/list",
            None,
            Outcome::Ok,
            Some(Duration::from_millis(2)),
        );
        m.mcp_request(
            "sse",
            "frobnicate",
            None,
            Outcome::Error,
            Some(Duration::ZERO),
        );
        m.mcp_request(
            "rest",
            "tools/call",
            Some("control_device"),
            Outcome::Denied,
            None,
        );
        m.auth_failure(AuthFailure::IpNotWhitelisted);
        m.rate_limited(RateBucket::Client);
        m.cache(CacheKind::Tool, true);
        m.cache(CacheKind::Resource, false);
        m.dashboard_clients.inc();
        let link = LinkScrape {
            modes: vec![
                ("websocket", false),
                ("polling", true),
                ("disconnected", false),
            ],
            reconnects: 0,
            events_received: 0,
        };
        let text = m.render(&Scrape {
            link: Some(link),
            house: Some(HouseScrape {
                active_alerts: vec![
                    ("info", 0),
                    ("warning", 2),
                    ("important", 0),
                    ("critical", 1),
                ],
                stopped: true,
            }),
            sessions: Some(2),
            streams: Some(0),
        });
        let samples = check_exposition(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert!(samples > 40, "{text}");
        for want in [
            "home_mcp_mcp_requests_total{transport=\"mcp_http\",method=\"tools/call\",tool=\"get_lights\",outcome=\"ok\"} 1",
            "home_mcp_mcp_requests_total{transport=\"mcp_http\",method=\"tools/call\",tool=\"unknown\",outcome=\"error\"} 1",
            "home_mcp_mcp_requests_total{transport=\"sse_legacy\",method=\"other\",outcome=\"error\"} 1",
            "home_mcp_mcp_requests_total{transport=\"rest\",method=\"tools/call\",tool=\"control_device\",outcome=\"denied\"} 1",
            "home_mcp_http_requests_total{transport=\"mcp_http\",outcome=\"denied\"} 1",
            "home_mcp_http_request_duration_seconds_bucket{transport=\"rest\",le=\"10\"} 0",
            "home_mcp_http_request_duration_seconds_bucket{transport=\"rest\",le=\"+Inf\"} 1",
            "home_mcp_tool_call_duration_seconds_bucket{tool=\"get_lights\",le=\"0.001\"} 1",
            "home_mcp_auth_failures_total{reason=\"ip_not_whitelisted\"} 1",
            "home_mcp_alerts_active{severity=\"warning\"} 2",
            "home_mcp_alerts_active{severity=\"critical\"} 1",
            "home_mcp_assistant_stopped 1",
            "home_mcp_rate_limit_rejections_total{bucket=\"client\"} 1",
            "home_mcp_cache_hits_total{cache=\"tool\"} 1",
            "home_mcp_cache_misses_total{cache=\"resource\"} 1",
            "home_mcp_miniserver_link_state{mode=\"polling\"} 1",
            "home_mcp_miniserver_link_state{mode=\"websocket\"} 0",
            "home_mcp_mcp_sessions 2",
            "home_mcp_dashboard_clients 1",
            "home_mcp_build_info{version=\"",
        ] {
            assert!(text.contains(want), "missing {want}\n{text}");
        }
        assert_eq!(m.tool_calls("get_lights", Outcome::Ok), 1);
        assert_eq!(
            m.tool_calls("nope", Outcome::Error),
            1,
            "unknown tools share one slot"
        );
    }

    #[test]
    fn checker_catches_problems() {
        let ok = "# HELP a_total x\n# TYPE a_total counter\na_total 1\n";
        assert_eq!(check_exposition(ok), Ok(1));
        assert!(check_exposition("a_total 1\n").is_err(), "no TYPE");
        assert!(
            check_exposition(&format!("{ok}a_total 2\n")).is_err(),
            "duplicate"
        );
        let h = "# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\n";
        assert!(check_exposition(h).is_err(), "not cumulative");
        assert!(check_exposition("# HELP 1a x\n").is_err());
    }

    #[test]
    fn transports_and_outcomes() {
        assert_eq!(HttpTransport::from_path("/mcp"), HttpTransport::McpHttp);
        assert_eq!(
            HttpTransport::from_path("/message"),
            HttpTransport::SseLegacy
        );
        assert_eq!(
            HttpTransport::from_path("/api/devices/x/on"),
            HttpTransport::Rest
        );
        assert_eq!(
            HttpTransport::from_path("/admin/keys"),
            HttpTransport::Admin
        );
        assert_eq!(
            HttpTransport::from_path("/dashboard/ws"),
            HttpTransport::Dashboard
        );
        assert_eq!(HttpTransport::from_path("/nope"), HttpTransport::Other);
        assert_eq!(Outcome::from_status(202), Outcome::Ok);
        assert_eq!(Outcome::from_status(429), Outcome::Denied);
        assert_eq!(Outcome::from_status(404), Outcome::Error);
    }

    #[test]
    fn record_cost() {
        let m = Metrics::new(["get_lights"]);
        let n = 200_000u32;
        let t = Instant::now();
        for _ in 0..n {
            m.http_request(
                HttpTransport::McpHttp,
                200,
                Some(Duration::from_micros(1500)),
            );
            m.mcp_request(
                "http",
                "tools/call",
                Some("get_lights"),
                Outcome::Ok,
                Some(Duration::from_micros(900)),
            );
        }
        let per = t.elapsed() / n;
        println!("metrics record cost (debug build): {per:?} per request (HTTP + MCP record)");
        global().render(&Scrape::default());
        let t = Instant::now();
        let text = global().render(&Scrape::default());
        println!("render: {:?} for {} bytes", t.elapsed(), text.len());
        assert!(check_exposition(&text).is_ok());
    }
}

//! `home-mcp`: command line. `serve` (Streamable HTTP), `stdio`, `sim` (a Miniserver simulator).
//! Usage errors exit with 2, start-up failures with 1.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use home_mcp::home::link::LinkMode;
use home_mcp::loxone::client::LoxoneError;

use home_mcp::app::App;
use home_mcp::config::{check_workers, parse_listen, Config};
use home_mcp::http::admin::AdminContext;
use home_mcp::http::{HttpConfig, HttpServer, MetricsContext};
use home_mcp::sim::{SimConfig, SimServer, Simulator};

const VERSION: &str = env!("CARGO_PKG_VERSION");

const HELP: &str = "home-mcp: an MCP server for the Loxone Miniserver

USAGE:
  home-mcp serve [--demo] [--listen ADDR] [--config FILE] [--workers N]
  home-mcp stdio [--demo] [--config FILE] [--profile full|lean]
  home-mcp sim --structure FILE [--listen ADDR] [--user U --password P] [--visu-password V]
  home-mcp check [--config FILE] [--key-store PATH]
  home-mcp keys generate|list|show|revoke|update|export|import ... [--key-store PATH]
  home-mcp --help | --version

COMMANDS:
  serve   Streamable HTTP on /mcp (default listen 127.0.0.1:3001)
  stdio   JSON-RPC over stdin/stdout, for Claude Desktop and other local clients
  sim     a Miniserver simulator speaking Loxone HTTP, loaded from a structure file
  check   checks a set-up (configuration, Miniserver, login, state updates, keys, listen)
  keys    manage API keys (HOME_KEY_BACKEND = file | env | memory | sqlite)

Run `home-mcp COMMAND --help` for a command's options.

ENVIRONMENT:
  HOME_HOST   Miniserver: host, host:port or http(s)://host[:port]
  HOME_USER   Miniserver user
  HOME_PASS   Miniserver password
  HOME_LISTEN, HOME_LOG_LEVEL override the config file";

const SERVE_HELP: &str =
    "home-mcp serve: MCP over Streamable HTTP (POST/DELETE /mcp), GET /health, the dashboard at /dashboard/

USAGE:
  home-mcp serve [--demo] [--listen ADDR] [--config FILE] [--workers N] [--key-store PATH]

OPTIONS:
  --demo           use the built-in simulated Miniserver with the demo house
  --listen ADDR    address to listen on (default 127.0.0.1:3001)
  --config FILE    TOML config file (see README)
  --workers N      requests routed at once (worker slots), 1-64 (default 4)
  --key-store PATH API key store (default <data_dir>/keys.toml; HOME_KEY_BACKEND); with
                   --demo, keys come from this store instead of an empty in-memory one
  -h, --help       this help
  -V, --version    print the version";

const STDIO_HELP: &str =
    "home-mcp stdio: MCP over stdin/stdout (one JSON-RPC message per line); logs go to stderr

USAGE:
  home-mcp stdio [--demo] [--config FILE] [--key-store PATH] [--profile full|lean]

OPTIONS:
  --demo            use the built-in simulated Miniserver with the demo house
  --config FILE     TOML config file (see README)
  --key-store PATH  the API key store HOME_STDIO_KEY is looked up in
  --profile P       the tools the client sees: full (every tool) or lean (at most 10
                    general tools, for small local models); default [mcp] profile, else
                    full; a HOME_STDIO_KEY with its own profile keeps it
  -h, --help        this help
  -V, --version     print the version

ENVIRONMENT:
  HOME_STDIO_KEY    stdio is trusted (every request allowed) unless this names an API key:
                    then every request runs as that key (role, scope, audit log) and what it
                    may not do is refused with JSON-RPC error -32003";

const SIM_HELP: &str =
    "home-mcp sim: a Miniserver simulator (Loxone HTTP API) loaded from a structure file

USAGE:
  home-mcp sim --structure FILE [--listen ADDR] [--user U --password P] [--visu-password V]

OPTIONS:
  --structure FILE         LoxAPP3.json to serve (required)
  --listen ADDR            address to listen on (default 127.0.0.1:8080)
  --user U                 user for HTTP Basic auth (default demo)
  --password P             password (default demo)
  --no-state-updates       play a user without the right to state updates: the structure
                           file is served, the WebSocket pushes no events
  --max-failed-logins N    wrong logins from one address before it is locked out (default 5)
  --visu-password V        visualisation password of the secured controls (default 1234)
  --hash-alg ALG           hashAlg getkey2 announces for the user password: sha256
                           (default, firmware 10.3+) or sha1 (older firmware)
  -h, --help        this help
  -V, --version     print the version";

/// A usage error: message for stderr, exit code 2.
struct Usage(String);

fn main() -> ExitCode {
    let mut args = pico_args::Arguments::from_env();
    let sub = match args.subcommand() {
        Ok(s) => s,
        Err(e) => return usage(Usage(e.to_string()), HELP),
    };
    let result = match sub.as_deref() {
        Some("serve") => serve(args),
        Some("stdio") => stdio(args),
        Some("sim") => sim(args),
        Some("check") => check(args),
        Some("keys") => return keys(args),
        Some("-h" | "--help" | "help") => {
            println!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Some("-V" | "--version") => {
            println!("home-mcp {VERSION}");
            return ExitCode::SUCCESS;
        }
        Some(other) => Err(Usage(format!("unknown command {other:?}"))),
        None => match help_or_version(&mut args, HELP) {
            Some(code) => return code,
            None => Err(Usage("a command is needed".into())),
        },
    };
    match result {
        Ok(code) => code,
        Err(u) => usage(u, HELP),
    }
}

fn usage(u: Usage, help: &str) -> ExitCode {
    eprintln!("error: {}\n", u.0);
    let first_usage: String = help
        .lines()
        .skip_while(|l| !l.starts_with("USAGE"))
        .take_while(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    eprintln!("{first_usage}\n\nRun with --help for more.");
    ExitCode::from(2)
}

/// Handles `--help`/`--version` for a command; `Some(exit)` when one was given.
fn help_or_version(args: &mut pico_args::Arguments, help: &str) -> Option<ExitCode> {
    if args.contains(["-h", "--help"]) {
        println!("{help}");
        return Some(ExitCode::SUCCESS);
    }
    if args.contains(["-V", "--version"]) {
        println!("home-mcp {VERSION}");
        return Some(ExitCode::SUCCESS);
    }
    None
}

fn finish(args: pico_args::Arguments) -> Result<(), Usage> {
    let rest = args.finish();
    if rest.is_empty() {
        Ok(())
    } else {
        let words: Vec<String> = rest
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        Err(Usage(format!("unknown argument(s): {}", words.join(" "))))
    }
}

fn opt_string(args: &mut pico_args::Arguments, key: &'static str) -> Result<Option<String>, Usage> {
    args.opt_value_from_str(key)
        .map_err(|e| Usage(format!("{key}: {e}")))
}

fn init_logging(level: log::LevelFilter) {
    // Logs go to stderr (stdout is reserved for JSON-RPC in stdio mode), without timestamps;
    // under systemd (JOURNAL_STREAM) as `<N>` syslog-priority lines for the journal.
    home_mcp::logging::init(level);
}

fn load_config(config: Option<PathBuf>) -> Result<Config, ExitCode> {
    Config::load(config.as_deref(), &|k| std::env::var(k).ok()).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    })
}

/// Starts the house, or logs why not and gives the exit code (1).
fn start_app(config: &Config, demo: bool) -> Result<App, ExitCode> {
    App::start(config, demo).map_err(|e| {
        log::error!("cannot start: {e}");
        ExitCode::FAILURE
    })
}

fn serve(mut args: pico_args::Arguments) -> Result<ExitCode, Usage> {
    if let Some(code) = help_or_version(&mut args, SERVE_HELP) {
        return Ok(code);
    }
    let demo = args.contains("--demo");
    let listen = opt_string(&mut args, "--listen")?;
    let config_path: Option<PathBuf> = opt_string(&mut args, "--config")?.map(PathBuf::from);
    let workers = opt_string(&mut args, "--workers")?;
    let key_store: Option<PathBuf> = opt_string(&mut args, "--key-store")?.map(PathBuf::from);
    finish(args)?;
    // Before any other thread allocates: memory goes back after bursts (src/memory.rs).
    home_mcp::memory::configure();

    let mut config = match load_config(config_path) {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    if let Some(l) = listen {
        config.server.http.listen =
            parse_listen(&l, "--listen").map_err(|e| Usage(e.to_string()))?;
    }
    if let Some(w) = workers {
        let n: usize = w
            .parse()
            .map_err(|_| Usage(format!("--workers: {w:?} is not a number")))?;
        config.server.http.workers =
            check_workers(n, "--workers").map_err(|e| Usage(e.to_string()))?;
    }
    init_logging(config.log_level);
    if let Err(e) = config.check_serve() {
        // Exit 2 like every configuration error: the unit does not restart on it.
        log::error!("cannot start: {e}");
        return Ok(ExitCode::from(2));
    }
    config.key_store = key_store.clone();
    // `--demo` alone keeps its keys in memory: `keys generate` could not add one there.
    if !demo || key_store.is_some() {
        first_run_hint(key_store, &config);
    }

    let app = match start_app(&config, demo) {
        Ok(a) => a,
        Err(code) => return Ok(code),
    };
    // `--demo` alone: an admin key in the demo's in-memory store, for this run only.
    let demo_admin_key = if demo && config.key_store.is_none() {
        match demo_admin_key(&app) {
            Ok(k) => Some(k),
            Err(e) => {
                log::error!("cannot start: {e}");
                return Ok(ExitCode::FAILURE);
            }
        }
    } else {
        None
    };
    let dashboard = match app.start_dashboard(&config, demo) {
        Ok(d) => d,
        Err(e) => {
            log::error!("cannot start: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let oauth = match start_oauth(&config, demo, &app) {
        Ok(o) => o,
        Err(e) => {
            log::error!("cannot start: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let http = HttpConfig {
        gate: Some(app.gate.clone()),
        metrics: Some(Arc::new(MetricsContext {
            house: Some(app.house.clone()),
            public: config.metrics_public,
        })),
        audit: app.audit.clone(),
        admin: Some(Arc::new(AdminContext::new(
            app.gate.clone(),
            app.house.clone(),
            app.audit.clone(),
        ))),
        dashboard: Some(dashboard.clone()),
        oauth,
        ..config.server.http.clone()
    };
    if config.metrics_public && !config.server.http.listen.ip().is_loopback() {
        log::warn!(
            "[metrics] public = true on non-loopback address {}: GET /metrics is served to \
             anyone on the network without a key",
            config.server.http.listen
        );
    }
    let house = app.house.clone();
    let client = app.client.clone();
    let health = Arc::new(move || {
        let home = house.home();
        let link = house.link().snapshot();
        // ok: live over the WebSocket; degraded: polling (no named states), disconnected, or
        // commands refused before they are sent (a lock-out, wrong credentials).
        let blocked = client.blocked_for();
        let (status, reason) = match (blocked.as_ref().map(|(e, _)| e), link.mode) {
            (Some(e), _) => ("degraded", Some(e.to_string())),
            (None, LinkMode::WebSocket) => ("ok", None),
            (None, LinkMode::Polling) => (
                "degraded",
                Some("Miniserver followed by HTTP polling".to_string()),
            ),
            (None, LinkMode::Disconnected) => {
                ("degraded", Some("Miniserver unreachable".to_string()))
            }
        };
        let blocked = blocked.map(|(e, left)| match e {
            LoxoneError::LockedOut { remaining_secs } => serde_json::json!({
                "reason": "locked_out", "remaining_secs": remaining_secs,
            }),
            other => serde_json::json!({
                "reason": "credentials", "message": other.to_string(),
                "remaining_secs": left.as_secs_f64().ceil() as u64,
            }),
        });
        serde_json::json!({
            "status": status,
            "reason": reason,
            "version": VERSION,
            "miniserver": {
                "serial": home.ms_info.serial_nr,
                "structure": home.last_modified,
                "link": link.to_json(),
                "blocked": blocked,
            },
            // Whether commands are stopped (the stop switch, the admin page), since when and
            // who lifts it; never asks the Miniserver.
            "stop": house.stop_shown().to_json(),
            // The model's structure file: what its reader skipped or read as empty, and a
            // newer file that could not be read at all (the model stays the older one).
            "structure": {
                "last_modified": home.last_modified,
                "warnings": home.warnings.len(),
                "rejected": house.rejected_structure().map(|r| serde_json::json!({
                    "version": r.version,
                    "error": r.error,
                })),
            },
        })
    });
    let server = match HttpServer::start(http, app.mcp.clone(), health) {
        Ok(s) => s,
        Err(e) => {
            log::error!("cannot listen on {}: {e}", config.server.http.listen);
            return Ok(ExitCode::FAILURE);
        }
    };
    log::info!(
        "MCP over Streamable HTTP at http://{}/mcp ({} workers)",
        server.addr(),
        config.server.http.workers
    );
    if demo {
        print_demo_pages(server.addr(), demo_admin_key.as_deref());
    }
    let trim_stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    if let Err(e) = home_mcp::memory::start_trimmer(trim_stop.clone()) {
        log::warn!("cannot start the memory trimmer: {e}");
    }
    // Type=notify: systemd counts the service as started once the listener is up.
    if let Err(e) = home_mcp::systemd::notify("READY=1") {
        log::warn!("sd_notify READY=1: {e}");
    }
    // Serve until SIGTERM (systemd stop) or SIGINT (Ctrl-C), then stop cleanly.
    match signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
    ]) {
        Ok(mut signals) => {
            if let Some(sig) = signals.forever().next() {
                log::info!("signal {sig}: shutting down");
                let _ = home_mcp::systemd::notify("STOPPING=1");
            }
            server.shutdown();
            dashboard.shutdown();
            server.join();
        }
        Err(e) => {
            log::warn!("cannot watch for signals ({e}); stop with SIGKILL");
            server.join();
        }
    }
    trim_stop.store(true, std::sync::atomic::Ordering::Relaxed);
    app.gate.flush_usage();
    dashboard.shutdown();
    app.shutdown();
    Ok(ExitCode::SUCCESS)
}

const CHECK_HELP: &str =
    "home-mcp check: checks a set-up, one line per check with its result, its time and the fix

USAGE:
  home-mcp check [--config FILE] [--key-store PATH]

Checks the configuration, the Miniserver (address, TCP, HTTP or HTTPS, firmware and
jdev/cfg/api, lock-out, token login, structure file, state updates over the WebSocket, the
visualisation password), the key store (an admin key) and the listen address against the
security level. Exits 1 when a check fails. Never prints a password or key.

OPTIONS:
  --config FILE     TOML config file, as for serve
  --key-store PATH  the API key store serve would use
  -h, --help        this help
  -V, --version     print the version";

/// `check`: every check's line on stdout; exit 1 when one fails.
fn check(mut args: pico_args::Arguments) -> Result<ExitCode, Usage> {
    if let Some(code) = help_or_version(&mut args, CHECK_HELP) {
        return Ok(code);
    }
    let config_path: Option<PathBuf> = opt_string(&mut args, "--config")?.map(PathBuf::from);
    let key_store: Option<PathBuf> = opt_string(&mut args, "--key-store")?.map(PathBuf::from);
    finish(args)?;
    // The client's own warnings go to stderr at warn level; the lines are on stdout.
    init_logging(log::LevelFilter::Error);
    let env = |k: &str| std::env::var(k).ok();
    let report = home_mcp::check::run(&home_mcp::check::CheckArgs {
        config: config_path.as_deref(),
        key_store,
        env: &env,
    });
    if report.passed() {
        println!("all checks passed");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("some checks failed: see the fix on each FAIL line");
        Ok(ExitCode::FAILURE)
    }
}

/// Makes the demo's admin key: an `admin` key in the in-memory key store of `serve --demo`
/// (gone when the process ends; one day at most, so production accepts it too), and returns
/// its secret for [`print_demo_pages`]. Every security level stays as strict as without it:
/// a request still needs this key wherever one is needed.
fn demo_admin_key(app: &App) -> Result<String, String> {
    use home_mcp::auth::keys::{create_key, Fields};
    let fields = Fields {
        name: Some("demo admin (this run only)".into()),
        expires_days: Some(1),
        ..Fields::default()
    };
    create_key(
        app.gate.store().as_ref(),
        home_mcp::auth::Role::Admin,
        &fields,
        "serve --demo",
    )
    .map(|k| k.id)
    .map_err(|e| format!("the demo's admin key: {e}"))
}

/// Prints, once, the pages of `serve --demo` and what to sign in with (stdout; the log goes to
/// stderr). `admin_key` is the demo's own key ([`demo_admin_key`]); with `--key-store` the
/// store's keys are used and none is printed.
fn print_demo_pages(addr: std::net::SocketAddr, admin_key: Option<&str>) {
    let base = format!("http://{addr}");
    let sign_in = match admin_key {
        Some(k) => format!(
            "  admin key   {k}\n              (in memory: this run only, a day at most; paste it \
             into the admin page, or send it as X-API-Key)"
        ),
        None => "  keys        those of --key-store".to_string(),
    };
    println!(
        "home-mcp demo: a simulated Miniserver with the demo house\n  \
         MCP         {base}/mcp\n  \
         dashboard   {base}/dashboard/\n  \
         admin page  {base}/admin/keys\n{sign_in}"
    );
}

/// `keys ...`: usage errors exit 2, failures 1.
fn keys(args: pico_args::Arguments) -> ExitCode {
    let env = |k: &str| std::env::var(k).ok();
    // The server's data directory, decided as `serve` decides it (without a config file).
    let data_dir = match home_mcp::config::data_dir(&env, None, home_mcp::systemd::packaged()) {
        Ok(d) => d,
        Err(e) => return usage(Usage(e.to_string()), home_mcp::auth::cli::HELP),
    };
    match home_mcp::auth::cli::run(args, &env, &data_dir, &mut std::io::stdout()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(home_mcp::auth::cli::CliError::Usage(m)) => usage(Usage(m), home_mcp::auth::cli::HELP),
        Err(home_mcp::auth::cli::CliError::Failed(m)) => {
            eprintln!("error: {m}");
            ExitCode::FAILURE
        }
    }
}

/// Logs how to create the first admin key when the key store has none (never a secret).
fn first_run_hint(key_store: Option<PathBuf>, config: &Config) {
    use home_mcp::auth::store::{open_store, Backend};
    let env = |k: &str| std::env::var(k).ok();
    let backend = match Backend::from_env(&env) {
        Ok(b) => b,
        Err(e) => {
            log::warn!("{e}");
            return;
        }
    };
    let path = key_store.unwrap_or_else(|| config.key_store_path(backend));
    match open_store(backend, &path, &env) {
        Ok(store) => {
            if let Some(hint) = home_mcp::auth::cli::first_run_hint(store.as_ref()) {
                log::warn!("{hint}");
            }
        }
        Err(e) => log::warn!("{e}"),
    }
}

fn stdio(mut args: pico_args::Arguments) -> Result<ExitCode, Usage> {
    if let Some(code) = help_or_version(&mut args, STDIO_HELP) {
        return Ok(code);
    }
    let demo = args.contains("--demo");
    let config_path: Option<PathBuf> = opt_string(&mut args, "--config")?.map(PathBuf::from);
    let key_store: Option<PathBuf> = opt_string(&mut args, "--key-store")?.map(PathBuf::from);
    let profile = match opt_string(&mut args, "--profile")? {
        None => None,
        Some(p) => Some(
            home_mcp::home::Profile::parse(&p)
                .ok_or_else(|| Usage(format!("--profile: {p:?} is not full or lean")))?,
        ),
    };
    finish(args)?;
    let mut config = match load_config(config_path) {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    config.key_store = key_store;
    if let Some(p) = profile {
        config.profile = p;
    }
    init_logging(config.log_level);
    let app = match start_app(&config, demo) {
        Ok(a) => a,
        Err(code) => return Ok(code),
    };
    let key = match std::env::var("HOME_STDIO_KEY")
        .ok()
        .filter(|k| !k.trim().is_empty())
    {
        None => None,
        Some(k) => match stdio_key(&app.gate, k.trim()) {
            Ok(key) => Some(key),
            Err(e) => {
                log::error!("HOME_STDIO_KEY: {e}");
                app.shutdown();
                return Ok(ExitCode::FAILURE);
            }
        },
    };
    log::info!(
        "MCP over stdio ({}); end of input stops the server",
        key.as_ref().map_or("trusted".to_string(), |k| format!(
            "as key {:?}",
            k.principal.caller().key_name
        ))
    );
    let stdin = std::io::stdin();
    let result = home_mcp::stdio::serve_as(
        &app.mcp,
        stdin.lock(),
        std::io::stdout(),
        home_mcp::stdio::MAX_LINE_BYTES,
        key.as_ref(),
    );
    app.shutdown();
    match result {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => {
            log::error!("stdio: {e}");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// The stdio session as API key `id`: checked once now (unknown, revoked, expired or, in
/// production, without expiry: an error naming the masked key), then per request.
fn stdio_key(
    gate: &Arc<home_mcp::auth::gate::Gate>,
    id: &str,
) -> Result<home_mcp::stdio::StdioKey, String> {
    let creds = home_mcp::auth::gate::Credentials {
        header_key: Some(id),
        ip: Some(std::net::Ipv4Addr::LOCALHOST.into()),
        ..Default::default()
    };
    let principal = gate
        .authenticate(&creds)
        .map_err(|d| format!("{} ({})", d.message, d.key_id.unwrap_or_default()))?;
    Ok(home_mcp::stdio::StdioKey {
        gate: gate.clone(),
        principal,
    })
}

fn sim(mut args: pico_args::Arguments) -> Result<ExitCode, Usage> {
    if let Some(code) = help_or_version(&mut args, SIM_HELP) {
        return Ok(code);
    }
    let structure = opt_string(&mut args, "--structure")?
        .ok_or_else(|| Usage("sim needs --structure FILE".into()))?;
    let listen = opt_string(&mut args, "--listen")?.unwrap_or_else(|| "127.0.0.1:8080".into());
    let user = opt_string(&mut args, "--user")?;
    let password = opt_string(&mut args, "--password")?;
    let visu_password = opt_string(&mut args, "--visu-password")?;
    let no_state_updates = args.contains("--no-state-updates");
    let hash_alg = opt_string(&mut args, "--hash-alg")?
        .map(|a| match a.to_ascii_lowercase().as_str() {
            "sha1" => Ok(home_mcp::sim::VisuHash::Sha1),
            "sha256" => Ok(home_mcp::sim::VisuHash::Sha256),
            _ => Err(Usage(format!("--hash-alg: {a:?} is not sha1 or sha256"))),
        })
        .transpose()?;
    let max_failed_logins = opt_string(&mut args, "--max-failed-logins")?
        .map(|n| {
            n.parse::<u32>().ok().filter(|n| *n > 0).ok_or_else(|| {
                Usage(format!(
                    "--max-failed-logins: {n:?} is not a number above 0"
                ))
            })
        })
        .transpose()?;
    finish(args)?;
    parse_listen(&listen, "--listen").map_err(|e| Usage(e.to_string()))?;
    init_logging(log::LevelFilter::Info);

    let text = match std::fs::read_to_string(&structure) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read {structure}: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let mut config = SimConfig::default();
    if let Some(u) = user {
        config.user = u;
    }
    if let Some(p) = password {
        config.password = p;
    }
    if let Some(v) = visu_password {
        config.visu_password = v;
    }
    config.state_updates = !no_state_updates;
    if let Some(alg) = hash_alg {
        config.user_hash = alg;
    }
    if let Some(n) = max_failed_logins {
        config.max_failed_logins = n;
    }
    let simulator = match Simulator::new(&text, None, config) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            eprintln!("error: {structure}: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let server = match SimServer::start(simulator, &listen) {
        Ok(s) => s,
        Err(e) => {
            log::error!("cannot listen on {listen}: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    log::info!("simulated Miniserver at {}", server.base_url());
    // Serves until the process is stopped; the simulator's workers do the work.
    loop {
        std::thread::park();
    }
}

/// The OAuth authorization server (`[oauth]`, see `home_mcp::auth::oauth`) over the gate's key
/// store, or `None` when disabled or the store is read-only (`HOME_KEY_BACKEND=env`). Its
/// signing secret is `<data_dir>/oauth.secret` (created on first start), so client ids and
/// refresh tokens outlive restarts; `--demo` keeps one in memory.
fn start_oauth(
    config: &home_mcp::config::Config,
    demo: bool,
    app: &home_mcp::app::App,
) -> Result<Option<Arc<home_mcp::auth::oauth::OAuth>>, String> {
    use home_mcp::auth::oauth::{OAuth, Secret};
    if !config.oauth.enabled {
        return Ok(None);
    }
    if std::env::var("HOME_KEY_BACKEND").is_ok_and(|b| b.trim().eq_ignore_ascii_case("env")) {
        log::info!("OAuth sign-in is off: the key store (HOME_KEY_BACKEND=env) is read-only");
        return Ok(None);
    }
    let secret = if demo {
        Secret::random().map_err(|e| format!("no random numbers: {e}"))?
    } else {
        Secret::load_or_create(&config.server.data_dir.join("oauth.secret"))?
    };
    Ok(Some(Arc::new(OAuth::new(
        config.oauth.clone(),
        app.gate.store().clone(),
        secret,
    ))))
}

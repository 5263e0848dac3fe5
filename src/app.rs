//! Wiring: from a [`Config`] to a running house. Connects to the Miniserver (or starts the
//! built-in simulator for `--demo`), fetches and parses the structure file once, and builds the
//! [`House`] and the MCP server the transports share.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::audit::AuditLog;
use crate::auth::gate::Gate;
use crate::auth::store::MemoryStore;
use crate::config::LiveMode;
use crate::config::{Config, ConfigError, MiniserverConfig};
use crate::home::{Change, Event, Home, House};
use crate::loxone::client::{Client, LoxoneError};
use crate::loxone::feed::HouseFeed;
use crate::loxone::live::{Link, LinkConfig};
use crate::loxone::poll::Poller;
use crate::loxone::stats::MiniserverStatistics;
use crate::loxone::structure::{log_warnings, parse_structure_bytes, StructureError};
use crate::mcp::server::McpServer;
use crate::mcp::updates::{spawn_notifier, Next, Update};
use crate::sim::{SimServer, Simulator};
use crate::tools::HomeTools;
use crate::workflow::{StoreError, WorkflowStore};

/// Why the server could not start.
#[derive(Debug)]
pub enum StartError {
    Config(ConfigError),
    /// The Miniserver could not be reached or refused us while fetching the structure file.
    Miniserver(LoxoneError),
    /// The structure file the Miniserver sent is not usable.
    Structure(StructureError),
    /// The simulator or a listener could not start.
    Io(std::io::Error),
    /// The data directory or the workflow store could not be opened.
    Store(StoreError),
    /// The API key store could not be opened.
    Keys(crate::auth::store::StoreError),
    /// The audit log could not be opened.
    Audit(crate::audit::AuditError),
    /// The dashboard's history store could not be opened.
    History(crate::dashboard::HistoryError),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::Config(e) => write!(f, "{e}"),
            StartError::Miniserver(e) => write!(f, "Miniserver: {e}"),
            StartError::Structure(e) => write!(f, "{e}"),
            StartError::Io(e) => write!(f, "{e}"),
            StartError::Store(e) => write!(f, "{e}"),
            StartError::Keys(e) => write!(f, "{e}"),
            StartError::Audit(e) => write!(f, "{e}"),
            StartError::History(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for StartError {}

/// Changes the resource notifier may fall behind by before it drops some (then it resyncs).
pub const NOTIFIER_QUEUE: usize = 1024;

/// At most one `notifications/resources/updated` per URI per this interval.
pub const UPDATE_INTERVAL: Duration = Duration::from_millis(250);

/// The resources an alert event changes (the Message Center's entries and the summary that
/// shows the active ones first).
pub const ALERT_URIS: [&str; 2] = ["home://alerts", "home://summary"];

/// The `logger` of the log messages about the house's alerts and notifications.
pub const ALERT_LOGGER: &str = "home.alerts";

/// Starts the thread that turns the house's change bus into resource notifications (and log
/// messages about the Miniserver's alerts); it ends when `stop` is set.
pub fn start_resource_notifier(
    house: Arc<House>,
    mcp: Arc<McpServer>,
    stop: Arc<AtomicBool>,
) -> std::io::Result<()> {
    let mut sub = house.bus().subscribe(NOTIFIER_QUEUE);
    // The home resources a change affects (`resources::AffectedIndex`), built once per model
    // and owned by this notifier: a busy house costs one hash lookup per event. (Held with
    // its model, so a new model can never be mistaken for the old one.)
    let mut index: Option<(Arc<Home>, crate::resources::AffectedIndex)> = None;
    let mut affected = move |home: Arc<Home>, c: &Change| -> Vec<String> {
        let (model, built) = match index.take() {
            Some((model, built)) if Arc::ptr_eq(&model, &home) => (model, built),
            _ => {
                let built = crate::resources::AffectedIndex::new(&home);
                (home, built)
            }
        };
        let uris = built.uris(&c.uuid, c.control.as_deref());
        index = Some((model, built));
        uris
    };
    spawn_notifier(mcp, UPDATE_INTERVAL, move |wait| {
        if stop.load(Ordering::Relaxed) {
            return Next::Closed;
        }
        if sub.is_closed() {
            // Unsubscribed by the bus after too many drops: listen again, then resync.
            log::warn!("resource notifier fell too far behind the change bus; resubscribed");
            sub = house.bus().subscribe(NOTIFIER_QUEUE);
            return Next::Update(Update::Resync);
        }
        if sub.take_lagged() {
            // Changes were dropped while this thread was behind (a burst such as the
            // initial tables on a busy machine): announce every subscribed URI rather than
            // lose an update a client waits for.
            log::warn!("resource notifier lagged behind the change bus; resyncing subscribers");
            return Next::Update(Update::Resync);
        }
        match sub.recv_timeout(wait) {
            Some(Event::Change(c)) => Next::Update(Update::Uris(affected(house.home(), &c))),
            Some(Event::StructureChanged { .. }) => Next::Update(Update::ListChanged),
            // A Message Center entry came, went or changed, or the Miniserver pushed a
            // notification: the alert resources change, and clients that declared logging
            // hear of it at a level matching its severity.
            Some(Event::Alert(a)) => {
                let home = house.home();
                let level = crate::mcp::LogLevel::parse(a.log_level())
                    .unwrap_or(crate::mcp::LogLevel::Info);
                let mut data = a.to_json(&home);
                data["message"] = a.describe(&home).into();
                Next::Updates(vec![
                    Update::Uris(ALERT_URIS.iter().map(|u| u.to_string()).collect()),
                    Update::Log {
                        level,
                        logger: ALERT_LOGGER.into(),
                        data,
                    },
                ])
            }
            None => Next::Idle,
        }
    })?;
    Ok(())
}

/// A started house: the model, its controller, and (in demo mode) the simulator it talks to.
pub struct App {
    pub house: Arc<House>,
    pub mcp: Arc<McpServer>,
    /// The workflow store: `<data_dir>/workflows.db`, in memory for `--demo`.
    pub workflows: Arc<WorkflowStore>,
    /// The HTTP polling thread that keeps the house's values current and watches the
    /// structure version (until the WebSocket link is wired in, always running); stopped
    /// when the app drops, before the simulator.
    /// The live WebSocket link (stops first: kills its token, closes the socket).
    pub link: Option<Link>,
    /// The HTTP client (its token is killed on [`App::shutdown`]).
    pub client: Arc<Client>,
    pub poller: Option<Poller>,
    /// The thread that keeps the Message Center's entries and the notifications current
    /// ([`crate::loxone::message_center::Watch`]).
    pub alerts_watch: Option<crate::loxone::message_center::Watch>,
    /// The in-process simulator of `--demo`; dropping it stops it.
    pub simulator: Option<(Arc<Simulator>, SimServer)>,
    /// Stops the resource notifier thread.
    pub notifier_stop: Arc<AtomicBool>,
    /// The API key gate for the HTTP server (`[auth]`), over the configured key store (a
    /// [`MemoryStore`] for `--demo`, unless `--demo --key-store PATH` names a store).
    pub gate: Arc<Gate>,
    /// The audit log (`[audit]`): `<data_dir>/audit.db`, in memory for `--demo`; `None` when
    /// disabled. Every state-changing tool call through [`App::mcp`] is recorded in it.
    pub audit: Option<Arc<AuditLog>>,
    /// The server's own record of the house (`<data_dir>/history.db`, in memory for
    /// `--demo`) and its recorder thread (committed and ended by [`App::shutdown`]).
    pub record: Arc<crate::dashboard::History>,
    recorder: Option<std::thread::JoinHandle<()>>,
}

impl App {
    /// Connects to the configured Miniserver, or with `demo` starts the built-in simulator on a
    /// free loopback port and connects to that with the same client code. Workflows are stored in
    /// `<data_dir>/workflows.db`; `--demo` keeps them in memory and writes nothing to disk.
    pub fn start(config: &Config, demo: bool) -> Result<App, StartError> {
        let (ms, simulator) = if demo {
            // The simulated Miniserver keeps the house's time zone when the owner set one (bell
            // events and statistics on that wall clock), else the demo house's own.
            let mut sim_config = crate::sim::SimConfig::default();
            if let Some(tz) = &config.time_zone {
                sim_config.time_zone = tz.clone();
            }
            let sim = Arc::new(Simulator::demo_with(sim_config));
            let server = SimServer::start(sim.clone(), "127.0.0.1:0").map_err(StartError::Io)?;
            let ms = MiniserverConfig {
                base_url: server.base_url(),
                user: crate::sim::DEMO_USER.into(),
                password: crate::sim::DEMO_PASSWORD.into(),
            };
            log::info!("demo: simulated Miniserver at {}", ms.base_url);
            (ms, Some((sim, server)))
        } else {
            (
                config
                    .require_miniserver()
                    .map_err(StartError::Config)?
                    .clone(),
                None,
            )
        };
        let client = Arc::new(
            Client::with_auth(&ms, &config.miniserver_timeouts, config.miniserver_auth)
                .with_camera_limits(config.camera_limits),
        );
        let api = client.api_info().map_err(StartError::Miniserver)?;
        log::info!(
            "Miniserver {} (serial {}, firmware {})",
            ms.base_url,
            api.serial,
            api.version
        );
        let bytes = client.structure_file().map_err(StartError::Miniserver)?;
        let home = parse_structure_bytes(&bytes).map_err(StartError::Structure)?;
        log_warnings(&home);
        log::info!(
            "structure file {}: {} rooms, {} controls ({} with sub-controls), {} warnings",
            home.last_modified,
            home.rooms.len(),
            home.controls.len(),
            home.count_all_controls(),
            home.warnings.len()
        );
        // The stop switch must name exactly one control of this house (start refuses with the
        // candidates otherwise, as `home-mcp check` does).
        if let Some(query) = &config.stop_switch {
            match crate::home::stop::resolve_stop_switch(&home, query) {
                Ok(c) => log::info!("stop switch: {} ({})", c.name, c.uuid),
                Err(e) => {
                    return Err(StartError::Config(ConfigError::Invalid {
                        setting: "safety.stop_switch".into(),
                        message: format!(
                            "{e} (it must name exactly one Virtual Status, Virtual Input or \
                             Switch: its name, \"name (room)\" or its UUID)"
                        ),
                    }))
                }
            }
        }
        // After the Miniserver answered: a server that cannot start leaves no files behind.
        let workflows = Arc::new(if demo {
            // The demo writes nothing to disk: its workflows last as long as the process.
            WorkflowStore::in_memory()
        } else {
            open_store(&config.server.data_dir)?
        });
        // The server's own record of the house (dashboard::history), read by the history
        // tools and the dashboard: <data_dir>/history.db (open_store created the directory).
        let record = Arc::new(
            if demo {
                crate::dashboard::History::in_memory(config.dashboard.history.clone())
            } else {
                crate::dashboard::History::open(
                    &config.server.data_dir.join("history.db"),
                    config.dashboard.history.clone(),
                )
            }
            .map_err(StartError::History)?,
        );
        // The Miniserver's statistics: V2 and V1 files over HTTP, V1 binary over the live
        // WebSocket once it runs. The demo's clock is its simulated Miniserver's.
        let statistics = Arc::new(MiniserverStatistics::new(client.clone()));
        let time_zone = match &simulator {
            Some((sim, _)) => sim.config().time_zone.clone(),
            None => config.house_time(),
        };
        let house = Arc::new(
            House::new(
                home,
                client.clone(),
                config.miniserver_timeouts.value_max_age,
            )
            .with_statistics(statistics.clone())
            .with_record(record.clone())
            .with_visu_password(config.visu_password.clone())
            .with_risk_rules(config.risk.clone())
            .with_time_zone(time_zone)
            .with_picture_max_side(config.picture_max_side)
            .with_verify_timeout(config.server.verify_timeout)
            .with_command_limits(config.command_limits)
            .with_stop(config.stop_switch.clone(), admin_stops(config, demo)),
        );
        let alerts_watch =
            crate::loxone::message_center::Watch::start(house.clone()).map_err(StartError::Io)?;
        let poller =
            Poller::start(house.clone(), client.clone(), config.poll).map_err(StartError::Io)?;
        let client_for_app = client.clone();
        let link = (config.miniserver_live == LiveMode::WebSocket).then(|| {
            Link::spawn(
                client,
                LinkConfig::default(),
                Arc::new(HouseFeed::new(house.clone())),
            )
        });
        if let Some(link) = &link {
            statistics.attach_link(link.commands());
        }
        let recorder = record
            .spawn_recorder(house.clone())
            .map_err(StartError::Io)?;
        // The metrics registry knows no feature: the wiring names the tools of its label.
        crate::metrics::global().know_tools(crate::tools::catalogue().iter().map(|t| t.name));
        // The demo serves loopback without keys (development level) and writes nothing to
        // disk, unless `--demo --key-store PATH` names a store (browser tests, trying the admin
        // page with real keys); a real start reads the key store the `keys` command writes.
        let keys: Arc<dyn crate::auth::store::KeyStore> = if demo && config.key_store.is_none() {
            Arc::new(MemoryStore::default())
        } else {
            let env = |k: &str| std::env::var(k).ok();
            let backend = crate::auth::store::Backend::from_env(&env)
                .map_err(|e| StartError::Keys(crate::auth::store::StoreError::Io(e)))?;
            let path = config.key_store_path(backend);
            crate::auth::store::open_store(backend, &path, &env).map_err(StartError::Keys)?
        };
        let audit = if !config.audit.enabled {
            None
        } else if demo {
            Some(AuditLog::in_memory(config.audit.retention_days))
        } else {
            let path = config.server.data_dir.join("audit.db");
            let log =
                AuditLog::open(&path, config.audit.retention_days).map_err(StartError::Audit)?;
            log::info!("audit log {}", path.display());
            Some(log)
        };
        let mut tools = HomeTools::with_store(house.clone(), workflows.clone())
            .with_caches(config.server.caches)
            .with_profile(config.profile);
        if let Some(log) = &audit {
            tools = tools.with_audit(log.clone());
        }
        let tools = Arc::new(tools);
        // The gate reads what each tool declares (permission, reach) from the catalogue.
        let gate = Arc::new(Gate::new(
            keys,
            config.auth.clone(),
            config.server.http.listen.ip(),
            tools.clone(),
        ));
        let handler: Arc<dyn crate::mcp::Handler> = tools;
        let mcp = Arc::new(McpServer::new(handler, config.server.mcp.clone()));
        let notifier_stop = Arc::new(AtomicBool::new(false));
        start_resource_notifier(house.clone(), mcp.clone(), notifier_stop.clone())
            .map_err(StartError::Io)?;
        start_device_key_check(&house, gate.store().clone(), notifier_stop.clone())
            .map_err(StartError::Io)?;
        Ok(App {
            alerts_watch: Some(alerts_watch),
            notifier_stop,
            house,
            mcp,
            workflows,
            link,
            client: client_for_app,
            poller: Some(poller),
            simulator,
            gate,
            audit,
            record,
            recorder: Some(recorder),
        })
    }

    /// Starts the web dashboard over this house: it shows the app's record
    /// ([`App::record`]) and runs the WebSocket fan-out thread. Stop it with
    /// [`crate::dashboard::Dashboard::shutdown`] before [`App::shutdown`].
    pub fn start_dashboard(
        &self,
        config: &Config,
        demo: bool,
    ) -> Result<Arc<crate::dashboard::Dashboard>, StartError> {
        use crate::dashboard::Dashboard;
        let _ = demo;
        let dashboard = Dashboard::over(
            self.house.clone(),
            self.record.clone(),
            config.dashboard.ws.clone(),
        )
        .map_err(StartError::Io)?;
        // The "AI activity" feed: the newest tool calls of the audit log (what MCP clients
        // did). The dashboard needs only `read`, so key operations (admin API, CLI), masked
        // key ids and client addresses stay in the admin-only audit API.
        Ok(match self.audit.clone() {
            Some(audit) => dashboard.with_activity(Arc::new(move |n| {
                let q = crate::audit::Query {
                    limit: Some((n * 4).clamp(1, crate::audit::MAX_LIMIT)),
                    committed_only: true,
                    ..crate::audit::Query::default()
                };
                match audit.query(&q) {
                    Ok(entries) => entries
                        .iter()
                        .filter(|e| {
                            !matches!(e.transport.as_str(), "admin" | "cli")
                                && !e.operation.starts_with("key.")
                        })
                        .take(n)
                        .map(|e| {
                            serde_json::json!({
                                "time": e.time,
                                "key_name": e.key_name,
                                "transport": e.transport,
                                "operation": e.operation,
                                "target": e.target,
                                "result": e.result,
                                "latency_ms": e.latency_ms,
                                "confirmed_by": e.confirmed_by,
                            })
                        })
                        .collect(),
                    Err(e) => {
                        log::warn!("dashboard activity: {e}");
                        Vec::new()
                    }
                }
            })),
            None => dashboard,
        })
    }

    /// Stops cleanly: the live link (kills its WebSocket token, closes the socket), the poller,
    /// then kills the HTTP client's token (`killtoken`), so no token outlives the server.
    pub fn shutdown(mut self) {
        self.notifier_stop.store(true, Ordering::Relaxed);
        if let Some(watch) = self.alerts_watch.take() {
            watch.stop();
        }
        if let Some(mut link) = self.link.take() {
            link.stop();
        }
        if let Some(p) = self.poller.take() {
            p.stop();
        }
        if let Some(audit) = self.audit.take() {
            audit.close();
        }
        self.record.stop();
        if let Some(t) = self.recorder.take() {
            let _ = t.join();
        }
        if self.client.auth_in_use() == "token" {
            match self.client.kill_token() {
                Ok(()) => log::info!("Miniserver token killed"),
                Err(e) => log::warn!("killtoken failed: {e}"),
            }
        }
    }
}

impl Drop for App {
    /// Asks the recorder to commit and end (it holds the house; an app dropped without
    /// [`App::shutdown`], as in tests, must not leave it running).
    fn drop(&mut self) {
        self.record.stop();
    }
}

/// Resolves the allow-list of every active device key against the structure file now and
/// whenever it changes (thread `home-keys`), so an entry that no longer names exactly one
/// control is logged when the file changes, not only when the key is next used (it grants
/// nothing either way, see [`crate::home::scope`]). Ends with `stop` or when the house is gone.
fn start_device_key_check(
    house: &Arc<House>,
    keys: Arc<dyn crate::auth::store::KeyStore>,
    stop: Arc<AtomicBool>,
) -> std::io::Result<()> {
    let check = move |home: &Home| match keys.list() {
        Ok(list) => {
            for k in list
                .iter()
                .filter(|k| k.active && k.role == crate::auth::Role::Device)
            {
                let label = format!("key {:?} ({})", k.name, crate::auth::mask(&k.id));
                for g in crate::home::scope::resolve_devices(home, &k.allowed_devices) {
                    if let Err(e) = &g.resolved {
                        crate::home::scope::log_unresolved(&g.entry, home, e, Some(&label));
                    }
                }
            }
        }
        Err(e) => log::warn!("key store: {e}; device keys not checked against the structure"),
    };
    let mut checked = house.home().last_modified.clone();
    check(&house.home());
    let weak = Arc::downgrade(house);
    std::thread::Builder::new()
        .name("home-keys".into())
        .spawn(move || loop {
            // Once a second: the file's version decides whether there is anything to do (no
            // bus subscription, so value traffic costs this thread nothing).
            std::thread::sleep(Duration::from_secs(1));
            if stop.load(Ordering::Relaxed) {
                return;
            }
            let Some(house) = weak.upgrade() else { return };
            let home = house.home();
            if home.last_modified != checked {
                checked = home.last_modified.clone();
                check(&home);
            }
        })?;
    Ok(())
}

/// Where the admin page's stop is kept: `<data_dir>/stop.json`; with `--demo` in memory, or
/// beside the key store when `--demo --key-store PATH` names one (the demo with real keys,
/// for trying the admin page and for the browser tests).
fn admin_stops(config: &Config, demo: bool) -> crate::home::AdminStops {
    use crate::home::stop::STOP_FILE;
    let dir = match (&config.key_store, demo) {
        (_, false) => config.server.data_dir.clone(),
        (Some(store), true) => store
            .parent()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_default(),
        (None, true) => return crate::home::AdminStops::in_memory(),
    };
    crate::home::AdminStops::open(&dir.join(STOP_FILE))
}

/// Opens `<data_dir>/workflows.db`, creating the directory (mode 0700 on Unix) if needed.
pub fn open_store(data_dir: &std::path::Path) -> Result<WorkflowStore, StartError> {
    if !data_dir.exists() {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            builder.mode(0o700);
        }
        builder.create(data_dir).map_err(|e| {
            StartError::Store(StoreError::Open {
                path: data_dir.display().to_string(),
                message: format!("cannot create the data directory: {e}"),
            })
        })?;
    }
    let store = WorkflowStore::open(&data_dir.join("workflows.db")).map_err(StartError::Store)?;
    log::info!("workflow store {}", data_dir.join("workflows.db").display());
    Ok(store)
}

//! The product as its users run it: `home-mcp serve` (the real binary) against a simulated
//! Miniserver on its own port, which the test drives over the simulator's HTTP API and whose
//! request log (`Simulator::requests`) shows what went over the wire.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use home_mcp::sim::{SimConfig, SimServer, Simulator};

use super::drive::MiniserverApi;
use super::net::try_request;
use super::process::{bin, Logged};
use super::wait::{wait_until, PATIENCE};

/// A temporary directory removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A new empty directory under the system's temp dir, unique to this process and call.
    pub fn new(tag: &str) -> TempDir {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "home-mcp-test-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create a temp dir");
        TempDir(dir)
    }

    /// A path inside the directory.
    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A simulated Miniserver on a loopback port, stopped when dropped.
pub struct Miniserver {
    pub sim: Arc<Simulator>,
    pub api: MiniserverApi,
    pub server: SimServer,
}

impl Miniserver {
    /// The demo house ([`Simulator::demo`], user/password `demo`).
    pub fn demo() -> Miniserver {
        Miniserver::serve(Simulator::demo())
    }

    /// A simulator serving `structure` with optional initial `values`.
    pub fn start(structure: &str, values: Option<&str>, config: SimConfig) -> Miniserver {
        Miniserver::serve(Simulator::new(structure, values, config).expect("simulator"))
    }

    /// `sim` on a free loopback port (its credentials must be the demo's for [`Self::api`]).
    pub fn serve(sim: Simulator) -> Miniserver {
        let sim = Arc::new(sim);
        let server = SimServer::start(sim.clone(), "127.0.0.1:0").expect("simulator listens");
        Miniserver {
            api: MiniserverApi::demo(server.addr()),
            sim,
            server,
        }
    }

    /// The commands (not reads) the Miniserver received for `uuid`: request lines of
    /// `jdev/sps/io/{uuid}/...` or `jdev/sps/ios/{hash}/{uuid}/...` with a command after the
    /// UUID other than `all` or `state`.
    pub fn commands_to(&self, uuid: &str) -> Vec<String> {
        super::wire::commands_to(&self.sim, uuid)
    }
}

/// `home-mcp serve` as a child process on a free loopback port, with its data directory in
/// a temporary folder and its log kept for failure messages. Killed when dropped.
pub struct Served {
    pub addr: SocketAddr,
    /// The process (killed on drop) and its log ([`Served::log`]).
    child: Logged,
    /// Held until the test ends: the data directory.
    _data: TempDir,
    /// A key from `HOME_API_KEYS` that may read `/health`'s details (any role but `device`),
    /// sent by [`Served::wait_link`] and [`Served::wait_states`]: at staging and production
    /// `/health` without a key says its status alone.
    health_key: Option<String>,
    /// How it was started, for [`Served::restart`].
    launch: Launch,
}

/// What [`Served::restart`] starts again: the Miniserver, the config file (in the data
/// directory), the environment and the arguments.
#[derive(Clone)]
struct Launch {
    miniserver: MiniserverApi,
    config_path: PathBuf,
    env: Vec<(String, String)>,
    args: Vec<String>,
    nofile: Option<u32>,
}

impl Served {
    /// Starts `serve` against `miniserver` with `config` (TOML added to a file that sets
    /// the data directory, and a per-client rate limit that polling tests cannot reach
    /// unless `config` has its own `[auth.rate_limits]`; `[server] data_dir` must not be in
    /// it) and `env` (on top of the
    /// Miniserver's `HOME_HOST`/`HOME_USER`/`HOME_PASS`). Waits until `/health` answers.
    pub fn start(miniserver: &Miniserver, config: &str, env: &[(&str, &str)]) -> Served {
        Served::start_args(miniserver, config, env, &[])
    }

    /// [`Served::start`] at security level `staging` with one key, `key` (its id is the
    /// secret a client sends), from the environment key backend.
    pub fn start_with_key(miniserver: &Miniserver, key: &home_mcp::auth::ApiKey) -> Served {
        Served::start_with_keys(
            miniserver,
            std::slice::from_ref(key),
            "[auth]\nsecurity_level = \"staging\"\n",
        )
    }

    /// [`Served::start`] with `config` and the keys `keys` (their ids are the secrets clients
    /// send) from the environment key backend.
    pub fn start_with_keys(
        miniserver: &Miniserver,
        keys: &[home_mcp::auth::ApiKey],
        config: &str,
    ) -> Served {
        let keys = serde_json::to_string(keys).expect("key records");
        Served::start(
            miniserver,
            config,
            &[("HOME_KEY_BACKEND", "env"), ("HOME_API_KEYS", &keys)],
        )
    }

    /// [`Served::start`] against the Miniserver behind `api` (e.g. a [`SimProcess`]).
    pub fn start_on(api: &MiniserverApi, config: &str, env: &[(&str, &str)]) -> Served {
        Served::spawn(api, config, env, &[], None)
    }

    /// [`Served::start`] with extra command-line arguments after `serve`.
    pub fn start_args(
        miniserver: &Miniserver,
        config: &str,
        env: &[(&str, &str)],
        args: &[&str],
    ) -> Served {
        Served::spawn(&miniserver.api, config, env, args, None)
    }

    /// [`Served::start`] under a limit of `nofile` open descriptors (`ulimit -n`), as the
    /// packaged systemd unit's `LimitNOFILE` sets it.
    pub fn start_limited(miniserver: &Miniserver, nofile: u32) -> Served {
        Served::spawn(&miniserver.api, "", &[], &[], Some(nofile))
    }

    /// [`Served::start_limited`] with `config` and `env` (as [`Served::start`] takes them).
    pub fn start_limited_env(
        miniserver: &Miniserver,
        config: &str,
        env: &[(&str, &str)],
        nofile: u32,
    ) -> Served {
        Served::spawn(&miniserver.api, config, env, &[], Some(nofile))
    }

    /// The server's process id, for `/proc/<pid>/status` (the shell of
    /// [`Served::start_limited`] `exec`s it).
    pub fn pid(&self) -> u32 {
        self.child.pid()
    }

    fn spawn(
        miniserver: &MiniserverApi,
        config: &str,
        env: &[(&str, &str)],
        args: &[&str],
        nofile: Option<u32>,
    ) -> Served {
        let data = TempDir::new("serve");
        let config_path = data.join("config.toml");
        let text = if config.contains("[server]") {
            config.replacen(
                "[server]",
                &format!("[server]\ndata_dir = {:?}", data.0.display().to_string()),
                1,
            )
        } else {
            format!(
                "[server]\ndata_dir = {:?}\n{config}",
                data.0.display().to_string()
            )
        };
        // Tests poll: raise the per-client budget unless the test is about rate limits.
        let text = if text.contains("[auth.rate_limits]") {
            text
        } else {
            format!("{text}\n[auth.rate_limits]\nper_client = 1000000\n")
        };
        std::fs::write(&config_path, text).expect("write the config");
        let launch = Launch {
            miniserver: miniserver.clone(),
            config_path,
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            args: args.iter().map(|a| a.to_string()).collect(),
            nofile,
        };
        Served::launch(launch, data)
    }

    /// Starts the process `launch` describes, its data directory in `data`.
    fn launch(launch: Launch, data: TempDir) -> Served {
        let Launch {
            miniserver,
            config_path,
            env,
            args,
            nofile,
        } = launch.clone();
        let mut cmd = match nofile {
            None => bin(),
            Some(n) => {
                let mut c = std::process::Command::new("sh");
                c.arg("-c")
                    .arg(format!("ulimit -n {n} && exec \"$0\" \"$@\""))
                    .arg(env!("CARGO_BIN_EXE_home-mcp"));
                super::process::clean_env(&mut c);
                c
            }
        };
        cmd.arg("serve")
            .arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--config")
            .arg(&config_path)
            .args(args)
            .env("HOME_HOST", miniserver.addr.to_string())
            .env("HOME_USER", &miniserver.user)
            .env("HOME_PASS", &miniserver.password)
            .env("HOME_LOG_LEVEL", "info")
            // As the packaged unit runs it (src/memory.rs).
            .env("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0");
        for (k, v) in &env {
            cmd.env(k, v);
        }
        let child = Logged::spawn(cmd);
        let addr: SocketAddr = child.wait_line("serve listening", |line| {
            line.split("HTTP listening on ")
                .nth(1)
                .and_then(|rest| rest.split(' ').next())
                .and_then(|a| a.parse().ok())
        });
        let health_key = env
            .iter()
            .find(|(k, _)| k == "HOME_API_KEYS")
            .and_then(|(_, v)| serde_json::from_str::<Vec<serde_json::Value>>(v).ok())
            .and_then(|keys| {
                keys.into_iter()
                    .find(|k| k["role"] != "device" && k["active"] != false)
                    .and_then(|k| k["id"].as_str().map(str::to_string))
            });
        let served = Served {
            addr,
            child,
            _data: data,
            health_key,
            launch,
        };
        wait_until("/health answers", PATIENCE, || {
            match try_request::<&str>(addr, "GET", "/health", &[], "") {
                Ok(r) if r.status == 200 || r.status == 503 => Ok(()),
                other => Err(other.map(|r| r.status)),
            }
        });
        served
    }

    /// Stops the server as systemd does (SIGTERM: it commits its records and ends) and starts
    /// it again with the same data directory, configuration and environment, on a new port.
    pub fn restart(self) -> Served {
        let Served {
            mut child,
            _data: data,
            launch,
            ..
        } = self;
        child.signal("TERM");
        let stopped = wait_until("the server to end after SIGTERM", PATIENCE, || match child
            .child
            .0
            .try_wait()
        {
            Ok(Some(status)) => Ok(status),
            other => Err(format!("{other:?}")),
        });
        assert!(
            stopped.success(),
            "a clean stop: {stopped:?}; log: {:#?}",
            child.lines_so_far()
        );
        Served::launch(launch, data)
    }

    /// Every line the server logged so far (its start-up lines are all there once
    /// [`Served::start`] returned).
    pub fn log(&self) -> Vec<String> {
        self.child.lines_so_far()
    }

    /// `GET /health` with the details: with [`Served::health_key`] when the server was started
    /// with keys (at staging and production `/health` without a key says its status alone).
    pub fn health(&self) -> Result<super::net::Reply, String> {
        let headers: Vec<String> = self
            .health_key
            .iter()
            .map(|k| format!("X-API-Key: {k}"))
            .collect();
        try_request(self.addr, "GET", "/health", &headers, "")
    }

    /// Waits until the WebSocket is up and its first values (the initial tables) are stored:
    /// `/health` shows mode `websocket` and `events_received` above 0. What the server knows
    /// only from pushed states (a ValueSelector's live min/max) is known from then on.
    pub fn wait_states(&self) {
        wait_until("the initial tables", PATIENCE, || {
            let r = self.health()?;
            let v: serde_json::Value = serde_json::from_str(&r.body).map_err(|e| e.to_string())?;
            let link = &v["miniserver"]["link"];
            if link["mode"] == "websocket" && link["events_received"].as_u64() > Some(0) {
                Ok(())
            } else {
                Err(r.body)
            }
        });
    }

    /// Waits until `/health` reports the Miniserver link in `mode` (`websocket`, `polling`,
    /// `disconnected`); fails with the last health answer. Reads the details with the server's
    /// first key that may ([`Served::health`]), else without a key (development on loopback,
    /// as [`Served::start`] runs it unless its config says otherwise, shows them to all).
    pub fn wait_link(&self, mode: &str) {
        wait_until(&format!("link {mode}"), PATIENCE, || {
            let r = self.health()?;
            let v: serde_json::Value = serde_json::from_str(&r.body).map_err(|e| e.to_string())?;
            if v["miniserver"]["link"]["mode"] == mode {
                Ok(())
            } else {
                Err(r.body)
            }
        });
    }
}

/// `home-mcp sim` as its own process on a free loopback port, for faults a process has: a hung
/// Miniserver (`signal("STOP")`, `signal("CONT")`), a crash and restart on the same port
/// ([`SimProcess::restart`]). Killed when dropped.
pub struct SimProcess {
    pub child: Logged,
    /// Its HTTP API (and address: `api.addr`).
    pub api: MiniserverApi,
    structure: PathBuf,
    /// Further `home-mcp sim` arguments (kept for [`SimProcess::restart`]).
    args: Vec<String>,
}

impl SimProcess {
    /// Serves the structure file at `structure` (a path) on a free port.
    pub fn start(structure: &std::path::Path) -> SimProcess {
        SimProcess::start_on(structure, "127.0.0.1:0", &[])
    }

    /// [`SimProcess::start`] with further `home-mcp sim` arguments (`--no-state-updates`,
    /// `--max-failed-logins 1`, `--password P`, ...).
    pub fn start_args(structure: &std::path::Path, args: &[&str]) -> SimProcess {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        SimProcess::start_on(structure, "127.0.0.1:0", &args)
    }

    fn start_on(structure: &std::path::Path, listen: &str, args: &[String]) -> SimProcess {
        let mut cmd = bin();
        cmd.arg("sim")
            .arg("--structure")
            .arg(structure)
            .arg("--listen")
            .arg(listen)
            .args(args);
        let child = Logged::spawn(cmd);
        let addr: SocketAddr = child.wait_line("sim listening", |line| {
            line.split("simulated Miniserver at http://")
                .nth(1)
                .and_then(|a| a.trim().parse().ok())
        });
        SimProcess {
            api: MiniserverApi::demo(addr),
            child,
            structure: structure.to_path_buf(),
            args: args.to_vec(),
        }
    }

    /// Sends a signal to the simulator process (see [`Logged::signal`]).
    pub fn signal(&self, signal: &str) {
        self.child.signal(signal)
    }

    /// Kills the simulator and starts a new one on the same port (a Miniserver restart): its
    /// values start afresh from the structure file, and it knows no token of the old one.
    /// Returns once the new one listens.
    pub fn restart(self) -> SimProcess {
        let args = self.args.clone();
        self.restart_args(&args)
    }

    /// [`SimProcess::restart`] with other `home-mcp sim` arguments (a password changed in
    /// Loxone Config with the program that restarted the Miniserver: `--password P`).
    pub fn restart_args<S: AsRef<str>>(self, args: &[S]) -> SimProcess {
        let (structure, addr) = (self.structure.clone(), self.api.addr);
        let args: Vec<String> = args.iter().map(|a| a.as_ref().to_string()).collect();
        drop(self);
        // The old listener is closed once the process is reaped; std binds with SO_REUSEADDR.
        SimProcess::start_on(&structure, &addr.to_string(), &args)
    }

    /// Every line the simulator logged so far (its failed logins, lock-outs, tokens issued).
    pub fn log(&self) -> Vec<String> {
        self.child.lines_so_far()
    }
}

//! The real `home-mcp` binary as a child process, killed when the test ends, with its log
//! (stderr) kept for failure messages and for waiting on a line.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use crossbeam_channel::Receiver;

/// Every environment variable the product reads (`src/`: settings, credentials, key store,
/// systemd's journal and notify sockets): a test child starts without them, so the machine it
/// runs on cannot change a result, and a test sets the ones it means.
pub const PRODUCT_ENV: &[&str] = &[
    "HOME_API_KEYS",
    "HOME_DATA_DIR",
    "HOME_HOST",
    "HOME_KEY_BACKEND",
    "HOME_LISTEN",
    "HOME_LOG_LEVEL",
    "HOME_PASS",
    "HOME_STDIO_KEY",
    "HOME_USER",
    "HOME_VISU_PASS",
    "HTTP_API_KEY",
    "JOURNAL_STREAM",
    "LOXONE_API_KEY",
    "NOTIFY_SOCKET",
    "SECURITY_LEVEL",
    "STATE_DIRECTORY",
];

/// Removes [`PRODUCT_ENV`] from `cmd`'s environment.
pub fn clean_env(cmd: &mut Command) -> &mut Command {
    for k in PRODUCT_ENV {
        cmd.env_remove(k);
    }
    cmd
}

/// `home-mcp` as built for this test run, without the environment the product reads
/// ([`PRODUCT_ENV`]).
pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_home-mcp"));
    clean_env(&mut c);
    c
}

/// A child process killed and reaped when dropped.
pub struct Kill(pub Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A child whose stderr is read line by line into a log; killed when dropped.
pub struct Logged {
    pub child: Kill,
    log: Arc<Mutex<Vec<String>>>,
    lines: Receiver<String>,
}

impl Logged {
    /// Spawns `cmd` with stdin and stdout closed and stderr captured.
    pub fn spawn(mut cmd: Command) -> Logged {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start the child process");
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, lines) = crossbeam_channel::unbounded();
        {
            let log = log.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    log.lock().unwrap().push(line.clone());
                    let _ = tx.send(line);
                }
            });
        }
        Logged {
            child: Kill(child),
            log,
            lines,
        }
    }

    /// The first line (from the next unread one on) that `find` maps to `Some`, within
    /// [`PATIENCE`](super::wait::PATIENCE); fails with the log when the child ends or never prints it.
    pub fn wait_line<T>(&self, what: &str, mut find: impl FnMut(&str) -> Option<T>) -> T {
        let log = self.log.clone();
        let found = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            super::wait::recv_map(&self.lines, what, |line| find(&line))
        }));
        found.unwrap_or_else(|_| panic!("no {what}; log: {:#?}", log.lock().unwrap()))
    }

    /// Every line the child wrote to stderr so far, oldest first.
    pub fn lines_so_far(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.child.0.id()
    }

    /// Sends `signal` (`"STOP"`, `"CONT"`, `"TERM"`...) to the child with `kill(1)`, as a
    /// fault would: a stopped process keeps its sockets open but answers nothing.
    pub fn signal(&self, signal: &str) {
        let ok = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.pid().to_string())
            .status()
            .expect("run kill")
            .success();
        assert!(ok, "kill -{signal} {}", self.pid());
        // A signal takes effect asynchronously: wait until the kernel shows it.
        let stopped = || {
            let stat =
                std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap_or_default();
            // The state follows the parenthesised command name: "pid (comm) S ...".
            let state = stat.rsplit_once(") ").map(|(_, rest)| rest.chars().next());
            (state == Some(Some('T')), stat)
        };
        match signal {
            "STOP" => super::wait::wait_for("the process to stop", stopped),
            "CONT" => super::wait::wait_for("the process to run", || {
                let (s, stat) = stopped();
                (!s, stat)
            }),
            _ => {}
        }
    }
}

//! `home-mcp serve --demo` as a new user starts it: a child process whose stdout (where the
//! demo prints its pages and admin key, once) is read line by line.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::Stdio;

use crossbeam_channel::Receiver;

use super::process::{bin, Kill};
use super::wait::recv_map;

/// A running `serve --demo`; killed when dropped.
pub struct Demo {
    _child: Kill,
    /// The demo's stdout, one line per message.
    pub stdout: Receiver<String>,
}

impl Demo {
    /// Starts `home-mcp` with `args` (e.g. `["serve", "--demo"]`) and `env` (on top of a clean
    /// environment, see [`bin`]), stdout piped, stderr dropped.
    pub fn start_args(args: &[&str], env: &[(&str, &str)]) -> Demo {
        let mut child = bin()
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start serve --demo");
        let out = child.stdout.take().unwrap();
        let (tx, stdout) = crossbeam_channel::unbounded();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line);
            }
        });
        Demo {
            _child: Kill(child),
            stdout,
        }
    }

    /// What the demo prints: the value after `label` on its line (`MCP`, `dashboard`,
    /// `admin page`, `admin key`); fails when no such line comes in time.
    pub fn printed(&self, label: &str) -> String {
        recv_map(&self.stdout, &format!("the printed {label}"), |line| {
            line.trim()
                .strip_prefix(label)
                .map(|rest| rest.trim().to_string())
                .filter(|v| !v.is_empty())
        })
    }
}

/// `http://127.0.0.1:PORT/path` -> (address, `/path`).
pub fn split_url(url: &str) -> (SocketAddr, String) {
    let rest = url.strip_prefix("http://").expect("an http:// URL");
    let (addr, path) = rest.split_once('/').expect("a path");
    (addr.parse().expect("an address"), format!("/{path}"))
}

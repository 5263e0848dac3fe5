//! `conformance-fixture`: serves the conformance suite's fixture tools, resources and prompts
//! ([`fixture`], a module of this binary, never of the product library) over the product's own Streamable HTTP transport, so the
//! official MCP conformance suite can be run against the real core. Not part of the product.
//!
//! Prints `http://ADDR/mcp` on stdout once listening (with the real port for `--listen
//! 127.0.0.1:0`), logs to stderr, and serves until SIGTERM or SIGINT.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

mod fixture;

use fixture::ConformanceFixture;
use home_mcp::http::{HttpConfig, HttpServer};
use home_mcp::mcp::{McpConfig, McpServer};

const HELP: &str = "\
conformance-fixture: the MCP conformance suite's fixture server (test only)

usage: conformance-fixture [--listen ADDR] [--workers N]
  --listen ADDR   address to bind (default 127.0.0.1:0: a free port, printed on stdout)
  --workers N     HTTP worker threads (default 4)";

/// The listen address and worker count from the command line (after `--help` was handled):
/// `Err` with the message for anything else, an address that does not parse among them.
fn parse(mut args: pico_args::Arguments) -> Result<(SocketAddr, usize), String> {
    let listen: Option<String> = args
        .opt_value_from_str("--listen")
        .map_err(|e| e.to_string())?;
    let workers: Option<usize> = args
        .opt_value_from_str("--workers")
        .map_err(|e| e.to_string())?;
    let rest = args.finish();
    if !rest.is_empty() {
        return Err(format!("unexpected arguments: {rest:?}"));
    }
    let listen = listen.unwrap_or_else(|| "127.0.0.1:0".into());
    let addr = listen
        .parse()
        .map_err(|_| format!("--listen: {listen:?} is not an address such as 127.0.0.1:8080"))?;
    Ok((addr, workers.unwrap_or(4).max(1)))
}

fn main() -> ExitCode {
    let mut args = pico_args::Arguments::from_env();
    if args.contains(["-h", "--help"]) {
        println!("{HELP}");
        return ExitCode::SUCCESS;
    }
    let parsed = parse(args);
    let (listen, workers) = match parsed {
        Ok(p) => p,
        Err(e) => {
            eprintln!("conformance-fixture: {e}\n\n{HELP}");
            return ExitCode::from(2);
        }
    };
    let _ = simple_logger::SimpleLogger::new()
        .with_level(log::LevelFilter::Info)
        .with_module_level("tiny_http", log::LevelFilter::Warn)
        .init();

    // The suite runs every scenario as one caller without a key, and each task it creates is
    // kept for its time to live: the house-wide cap is that caller's share here (with keys,
    // each caller has its own share; tests/tasks.rs).
    let defaults = McpConfig::default();
    let tasks = home_mcp::mcp::TaskLimits {
        max_per_caller: defaults.tasks.max_tasks,
        max_running_per_caller: defaults.tasks.max_running,
        ..defaults.tasks.clone()
    };
    let mcp = Arc::new(McpServer::new(
        Arc::new(ConformanceFixture),
        McpConfig { tasks, ..defaults },
    ));
    let config = HttpConfig {
        listen,
        workers,
        ..HttpConfig::default()
    };
    let health = Arc::new(|| serde_json::json!({"status": "ok", "fixture": "conformance"}));
    let server = match HttpServer::start(config, mcp, health) {
        Ok(s) => s,
        Err(e) => {
            log::error!("cannot listen on {listen}: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("http://{}/mcp", server.addr());
    match signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
    ]) {
        Ok(mut signals) => {
            if let Some(sig) = signals.forever().next() {
                log::info!("signal {sig}: shutting down");
            }
            server.shutdown();
            server.join();
        }
        Err(e) => {
            log::warn!("cannot watch for signals ({e}); stop with SIGKILL");
            server.join();
        }
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::parse;
    use std::ffi::OsString;

    fn args(a: &[&str]) -> pico_args::Arguments {
        pico_args::Arguments::from_vec(a.iter().map(OsString::from).collect())
    }

    #[test]
    fn bad_arguments_are_usage_errors() {
        let e = parse(args(&["--listen", "not-an-address"])).unwrap_err();
        assert!(e.contains("--listen"), "{e}");
        assert!(parse(args(&["--what"])).unwrap_err().contains("unexpected"));
        let (addr, workers) =
            parse(args(&["--listen", "127.0.0.1:8090", "--workers", "0"])).unwrap();
        assert_eq!((addr.port(), workers), (8090, 1));
    }
}

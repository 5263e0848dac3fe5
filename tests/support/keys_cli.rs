//! The `home-mcp keys` command as an administrator runs it, against a key store file.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use super::process::bin;

/// [`bin`] (which starts without the environment that picks a key store) with no stdin, so
/// only the arguments choose the store.
pub fn keys_bin() -> Command {
    let mut c = bin();
    c.stdin(Stdio::null());
    c
}

/// `home-mcp keys ARGS --key-store STORE`, run to its end.
pub fn keys(store: &Path, args: &[&str]) -> Output {
    keys_bin()
        .arg("keys")
        .args(args)
        .arg("--key-store")
        .arg(store)
        .output()
        .expect("run home-mcp keys")
}

/// `keys generate --role ROLE --json` (plus `extra`) that must succeed; its JSON record (the
/// secret in `id`).
pub fn generate(store: &Path, role: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["generate", "--role", role, "--json"];
    args.extend_from_slice(extra);
    let o = keys(store, &args);
    assert!(
        o.status.success(),
        "keys generate: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("keys generate --json prints JSON")
}

//! The shipped example configuration (systemd/config.toml.example, installed as
//! /etc/home-mcp/config.toml) and environment file (systemd/home-mcp.env) document every
//! setting, and the example still loads once everything in it is uncommented.

use std::collections::BTreeSet;
use std::path::Path;

fn read(p: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(p)).unwrap()
}

/// `section.key` of every `key = value` line (commented or not) under `[section]` headers.
fn keys(text: &str, prefix: &str) -> BTreeSet<String> {
    let mut section = String::new();
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let Some(line) = line.strip_prefix(prefix) else {
            continue;
        };
        let line = line.trim_start_matches('#').trim();
        if let Some(h) = line.strip_prefix('[') {
            section = h.split(']').next().unwrap_or("").to_string();
        } else if let Some((k, _)) = line.split_once(" = ") {
            let k = k.trim();
            if !k.is_empty() && k.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
                out.insert(format!("{section}.{k}"));
            }
        }
    }
    out
}

#[test]
fn example_config_has_every_documented_setting() {
    let documented = keys(&read("src/config.rs"), "//! ");
    assert!(documented.len() > 40, "{documented:?}");
    let example = keys(&read("systemd/config.toml.example"), "");
    let missing: Vec<_> = documented.difference(&example).collect();
    assert!(
        missing.is_empty(),
        "not in config.toml.example: {missing:?}"
    );
}

#[test]
fn example_config_loads_as_shipped_and_fully_uncommented() {
    let text = read("systemd/config.toml.example");
    let dir = crate::support::server::TempDir::new("example-config");
    let load = |t: &str| {
        let path = dir.join("config.toml");
        std::fs::write(&path, t).unwrap();
        home_mcp::config::Config::load(Some(&path), &|_| None)
    };
    let shipped = load(&text).unwrap();
    assert_eq!(shipped.server.http.listen.to_string(), "127.0.0.1:3001");
    // Uncomment every `#key = value` whose key is not already set in its section.
    let mut active = BTreeSet::new();
    let mut section = String::new();
    for line in text.lines() {
        if line.starts_with('[') {
            section = line.to_string();
        } else if let Some((k, _)) = line.split_once(" = ") {
            active.insert(format!("{section}{k}"));
        }
    }
    let mut all = String::new();
    section.clear();
    for line in text.lines() {
        if line.starts_with('[') {
            section = line.to_string();
        }
        let l = match line.strip_prefix('#') {
            Some(rest) if rest.contains(" = ") && !rest.starts_with(' ') => {
                let k = rest.split(" = ").next().unwrap();
                if active.contains(&format!("{section}{k}")) {
                    line
                } else {
                    rest
                }
            }
            _ => line,
        };
        all.push_str(l);
        all.push('\n');
    }
    let full = load(&all).unwrap_or_else(|e| panic!("{e}\n{all}"));
    assert!(full.miniserver.is_some());
}

#[test]
fn env_file_names_every_environment_variable() {
    let env_file = read("systemd/home-mcp.env");
    let mut names = BTreeSet::new();
    let mut stack = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let src = std::fs::read_to_string(&p).unwrap();
                for part in src.split("env(\"").skip(1) {
                    let name: String = part
                        .chars()
                        .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                        .collect();
                    if part[name.len()..].starts_with('"') && name.len() > 2 {
                        names.insert(name);
                    }
                }
            }
        }
    }
    assert!(
        names.contains("HOME_HOST") && names.contains("SECURITY_LEVEL"),
        "{names:?}"
    );
    // STATE_DIRECTORY is systemd's own; the file mentions it as the default.
    let missing: Vec<_> = names
        .iter()
        .filter(|n| !env_file.contains(&format!("{n}=")) && !env_file.contains(&format!("${n}")))
        .collect();
    assert!(missing.is_empty(), "not in home-mcp.env: {missing:?}");
}

/// Under systemd (`JOURNAL_STREAM` naming our stderr) log lines carry `<N>` syslog
/// priorities and no timestamp; otherwise the terminal format (`ERROR [module] ...`).
#[test]
fn journal_format_only_when_journal_stream_names_stderr() {
    use std::os::unix::fs::MetadataExt;
    let dir = crate::support::server::TempDir::new("journal");
    let run = |journal: Option<&dyn Fn(&std::fs::Metadata) -> String>| {
        let path = dir.join("stderr.log");
        let file = std::fs::File::create(&path).unwrap();
        let meta = file.metadata().unwrap();
        let mut cmd = crate::support::process::bin();
        // Production off loopback without allowed_hosts: logs an error after logging is set up.
        cmd.args(["serve", "--demo", "--listen", "0.0.0.0:0"])
            .env("SECURITY_LEVEL", "production")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(file);
        if let Some(f) = journal {
            cmd.env("JOURNAL_STREAM", f(&meta));
        }
        let status = cmd.status().unwrap();
        assert_eq!(
            status.code(),
            Some(2),
            "a configuration error exits 2 (not restarted)"
        );
        std::fs::read_to_string(&path).unwrap()
    };
    let ours = |m: &std::fs::Metadata| format!("{}:{}", m.dev(), m.ino());
    let other = |m: &std::fs::Metadata| format!("{}:{}", m.dev(), m.ino() + 1);
    let journal = run(Some(&ours));
    assert!(
        journal.starts_with("<3>home_mcp: cannot start: ") || journal.contains("\n<3>"),
        "{journal}"
    );
    assert!(journal.lines().all(|l| l.starts_with('<')), "{journal}");
    let terminal = run(None);
    assert!(
        terminal.contains("ERROR [home_mcp] cannot start"),
        "{terminal}"
    );
    assert!(!terminal.contains("<3>"), "{terminal}");
    // A JOURNAL_STREAM inherited by a process whose stderr is elsewhere is ignored.
    let inherited = run(Some(&other));
    assert!(!inherited.contains("<3>"), "{inherited}");
}

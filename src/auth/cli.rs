//! `home-mcp keys ...`: the command-line key tool (spec §5.9). Generates, lists, shows,
//! revokes, updates, exports and imports API keys in the store chosen by `HOME_KEY_BACKEND`
//! and `--key-store PATH` (default `<data_dir>/keys.toml`, or `keys.db` for SQLite).
//!
//! Secrets go to stdout only, and only from `generate` (once), `show` and `export`; `list`
//! prints masked ids, and commands accept a full id or a unique masked one
//! (`homekey_operator_3_a1b2****`). Nothing here writes a secret to stderr or the log.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::keys::{
    apply_update, audit_target, check_fields, check_new, create_key, find, parse_role,
    resolve_allowed_devices, revoke, CreateError, Fields, FindError,
};
use super::store::{open_store, write_atomic, Backend, KeyStore, StoreError};
use super::{mask, ApiKey, Role};
use crate::systemd::UNIT_STATE_DIRECTORY;

pub const HELP: &str = "home-mcp keys: manage API keys

USAGE:
  home-mcp keys generate --role ROLE [--name N] [--expires-days D] [--ip CIDR]...
                         [--device D]... [--structure FILE] [--permission P]... [--room R]...
                         [--category C]... [--model-confirms yes|no] [--open-doors yes|no]
                         [--cameras yes|no] [--profile full|lean] [--json] [--key-store PATH]
  home-mcp keys list [--active] [--json] [--key-store PATH]
  home-mcp keys show ID [--key-store PATH]
  home-mcp keys revoke ID [--key-store PATH]
  home-mcp keys update ID [--name N] [--expires-days D] [--active true|false] [--ip CIDR]...
                          [--device D]... [--structure FILE] [--permission P]...
                          [--model-confirms yes|no] [--open-doors yes|no] [--cameras yes|no]
                          [--profile full|lean] [--key-store PATH]
  home-mcp keys export [FILE] [--key-store PATH]
  home-mcp keys import FILE [--key-store PATH]

ROLES: admin, operator, monitor, device (needs --device), custom (needs --permission:
read, control, security, admin)

ID is the full key or its masked form as `list` prints it.
--device names a control by name (\"Deckenlicht (Küche)\" where a name is in several rooms)
or UUID. With --structure FILE (the Miniserver's LoxAPP3.json) each must name exactly one
control (else the command fails, listing the candidates and their rooms) and the key stores
the control UUIDs; without it the names are stored as given and resolved by the server, where
an entry that does not name exactly one control grants nothing (the admin page shows it).
--cameras yes lets the key see pictures of cameras and intercoms (get_camera_image); only
admin keys may by default. --profile lean gives the key the lean tool catalogue (at most 10
general tools, for small local models); without it the key sees the server's default ([mcp]
profile, else full). --expires-days 0 on update removes the expiry. --ip, --device and --permission on update
replace the key's list.

ENVIRONMENT:
  HOME_KEY_BACKEND  file (default), env (HOME_API_KEYS, read-only), memory, sqlite
  HOME_DATA_DIR     directory of the default key store (default: $STATE_DIRECTORY, else
                    /var/lib/home-mcp for the packaged /usr/bin/home-mcp when that
                    directory exists, else ./data)

Run as root on a packaged install, `home-mcp keys generate --role admin` writes the
service's store; files it creates there are handed to the directory's owner (home-mcp).";

/// Why a `keys` command failed.
#[derive(Debug)]
pub enum CliError {
    /// Bad arguments: exit 2 with the usage text.
    Usage(String),
    /// The command could not be done (store error, unknown key): exit 1.
    Failed(String),
}

impl From<StoreError> for CliError {
    fn from(e: StoreError) -> Self {
        CliError::Failed(e.to_string())
    }
}

fn usage(m: impl Into<String>) -> CliError {
    CliError::Usage(m.into())
}

/// Runs `keys ARGS` (the word `keys` already taken), printing to `out`; the default store is
/// in `data_dir` (the server's data directory, `crate::config::data_dir`).
pub fn run(
    mut args: pico_args::Arguments,
    env: &dyn Fn(&str) -> Option<String>,
    data_dir: &Path,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let sub = args.subcommand().map_err(|e| usage(e.to_string()))?;
    let sub = match sub.as_deref() {
        None if args.contains(["-h", "--help"]) => {
            let _ = writeln!(out, "{HELP}");
            return Ok(());
        }
        None => return Err(usage("a keys command is needed")),
        Some("-h" | "--help" | "help") => {
            let _ = writeln!(out, "{HELP}");
            return Ok(());
        }
        Some(s) => s.to_string(),
    };
    if args.contains(["-h", "--help"]) {
        let _ = writeln!(out, "{HELP}");
        return Ok(());
    }
    let store_path: Option<PathBuf> = opt(&mut args, "--key-store")?.map(PathBuf::from);
    let backend = Backend::from_env(env).map_err(usage)?;
    let path = match store_path {
        Some(p) => p,
        None => backend.default_path(data_dir),
    };
    let cmd = parse_command(&sub, args)?;
    if matches!(backend, Backend::File | Backend::Sqlite) && cmd.writes() {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            create_dir_private(dir)
                .map_err(|e| CliError::Failed(format!("cannot create {}: {e}", dir.display())))?;
        }
    }
    let store = open_store(backend, &path, env)?;
    let writes = cmd.writes();
    let mut done = Vec::new();
    let result = cmd.run(store.as_ref(), out, &mut done);
    if matches!(backend, Backend::File | Backend::Sqlite) && !done.is_empty() {
        audit_cli(&path, &done);
    }
    if matches!(backend, Backend::File | Backend::Sqlite) && writes {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            hand_over_to_dir_owner(dir, &path);
        }
    }
    result
}

/// Run as root on a packaged install, the files this command wrote in the service's state
/// directory (the key store `store`, its lock file, `audit.db`, and SQLite's journal files)
/// are given to the directory's owner (the service's `home-mcp` user), so the service can
/// still read and write them. Only inside [`UNIT_STATE_DIRECTORY`], only those names, only
/// regular files owned by root, and with `lchown` (a symlink planted there is never
/// followed). Failures are logged, never fatal.
fn hand_over_to_dir_owner(dir: &Path, store: &Path) {
    use std::os::unix::fs::MetadataExt;
    if dir != Path::new(UNIT_STATE_DIRECTORY) {
        return;
    }
    // Only root creates root-owned files, so no euid check is needed: as another user the
    // chown below fails (EPERM) and is ignored.
    let Ok(owner) = std::fs::symlink_metadata(dir) else {
        return;
    };
    if owner.uid() == 0 || !owner.is_dir() {
        return;
    }
    let Some(store_name) = store.file_name().and_then(|n| n.to_str()) else {
        return;
    };
    let mut names: Vec<String> = Vec::new();
    for base in [store_name, "audit.db"] {
        for suffix in ["", ".lock", "-wal", "-shm", "-journal"] {
            names.push(format!("{base}{suffix}"));
        }
    }
    for name in names {
        let p = dir.join(&name);
        let ours = std::fs::symlink_metadata(&p).is_ok_and(|m| m.uid() == 0 && m.is_file());
        if !ours {
            continue;
        }
        if let Err(e) = std::os::unix::fs::lchown(&p, Some(owner.uid()), Some(owner.gid())) {
            if e.kind() != std::io::ErrorKind::PermissionDenied {
                eprintln!(
                    "warning: cannot give {} to uid {}: {e}",
                    p.display(),
                    owner.uid()
                );
            }
        }
    }
}

/// Records CLI key changes in `audit.db` next to the key store (the server's
/// `<data_dir>/audit.db` for the default store), transport `cli`, key name `cli`. Failures
/// are logged, never fatal. Opening does not prune (the server's retention applies).
fn audit_cli(store_path: &Path, done: &[(&'static str, String)]) {
    let dir = store_path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let log = match crate::audit::AuditLog::open(&dir.join("audit.db"), u32::MAX) {
        Ok(l) => l,
        Err(e) => {
            log::warn!("{e}; key change not audited");
            return;
        }
    };
    let caller = crate::mcp::Caller {
        key_name: "cli".into(),
        ..crate::mcp::Caller::default()
    };
    for (op, target) in done {
        log.record(crate::audit::Entry::new(
            Some(&caller),
            "cli",
            op,
            target,
            "ok",
            Duration::ZERO,
        ));
    }
    log.close();
}

fn create_dir_private(dir: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
}

fn opt(args: &mut pico_args::Arguments, key: &'static str) -> Result<Option<String>, CliError> {
    args.opt_value_from_str(key)
        .map_err(|e| usage(format!("{key}: {e}")))
}

fn many(args: &mut pico_args::Arguments, key: &'static str) -> Result<Vec<String>, CliError> {
    args.values_from_str(key)
        .map_err(|e| usage(format!("{key}: {e}")))
}

fn free(args: &mut pico_args::Arguments, what: &str) -> Result<Option<String>, CliError> {
    args.opt_free_from_str()
        .map_err(|e| usage(format!("{what}: {e}")))
}

fn finish(args: pico_args::Arguments) -> Result<(), CliError> {
    let rest: Vec<String> = args
        .finish()
        .into_iter()
        .map(|s: OsString| s.to_string_lossy().into_owned())
        .collect();
    if rest.is_empty() {
        Ok(())
    } else {
        Err(usage(format!("unknown argument(s): {}", rest.join(" "))))
    }
}

/// An optional `yes`/`no` (or `true`/`false`) flag.
fn yes_no(args: &mut pico_args::Arguments, flag: &'static str) -> Result<Option<bool>, CliError> {
    match opt(args, flag)?.as_deref() {
        None => Ok(None),
        Some("yes" | "true") => Ok(Some(true)),
        Some("no" | "false") => Ok(Some(false)),
        Some(v) => Err(usage(format!("{flag}: {v:?} is not yes or no"))),
    }
}

fn parse_fields(args: &mut pico_args::Arguments) -> Result<Fields, CliError> {
    let name = opt(args, "--name")?;
    let expires_days = match opt(args, "--expires-days")? {
        None => None,
        Some(d) => Some(
            d.parse::<u32>()
                .map_err(|_| usage(format!("--expires-days: {d:?} is not 0-36500")))?,
        ),
    };
    let fields = Fields {
        name,
        expires_days,
        ips: many(args, "--ip")?,
        permissions: many(args, "--permission")?,
        devices: many(args, "--device")?,
        rooms: many(args, "--room")?,
        categories: many(args, "--category")?,
        model_confirms: yes_no(args, "--model-confirms")?,
        open_doors: yes_no(args, "--open-doors")?,
        cameras: yes_no(args, "--cameras")?,
        profile: match opt(args, "--profile")? {
            None => None,
            Some(p) => Some(
                crate::home::Profile::parse(&p)
                    .ok_or_else(|| usage(format!("--profile: {p:?} is not full or lean")))?,
            ),
        },
    };
    check_fields(&fields).map_err(usage)?;
    let mut fields = fields;
    if let Some(path) = opt(args, "--structure")? {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| CliError::Failed(format!("--structure {path}: {e}")))?;
        let home = crate::loxone::structure::parse_structure(&text)
            .map_err(|e| CliError::Failed(format!("--structure {path}: {e}")))?;
        fields.devices = resolve_allowed_devices(&home, &fields.devices).map_err(|r| usage(r.0))?;
    }
    Ok(fields)
}

enum Command {
    Generate {
        role: Role,
        fields: Fields,
        json: bool,
    },
    List {
        active: bool,
        json: bool,
    },
    Show(String),
    Revoke(String),
    Update {
        id: String,
        fields: Fields,
        active: Option<bool>,
    },
    Export(Option<PathBuf>),
    Import(PathBuf),
}

fn parse_command(sub: &str, mut args: pico_args::Arguments) -> Result<Command, CliError> {
    let cmd = match sub {
        "generate" => {
            let role =
                opt(&mut args, "--role")?.ok_or_else(|| usage("generate needs --role ROLE"))?;
            let role = parse_role(&role).map_err(usage)?;
            let json = args.contains("--json");
            let fields = parse_fields(&mut args)?;
            check_new(role, &fields).map_err(usage)?;
            Command::Generate { role, fields, json }
        }
        "list" => Command::List {
            active: args.contains("--active"),
            json: args.contains("--json"),
        },
        "show" | "revoke" => {
            let id = free(&mut args, "ID")?.ok_or_else(|| usage(format!("{sub} needs an ID")))?;
            if sub == "show" {
                Command::Show(id)
            } else {
                Command::Revoke(id)
            }
        }
        "update" => {
            let active = match opt(&mut args, "--active")?.as_deref() {
                None => None,
                Some("true") => Some(true),
                Some("false") => Some(false),
                Some(v) => return Err(usage(format!("--active: {v:?} is not true or false"))),
            };
            let fields = parse_fields(&mut args)?;
            let id = free(&mut args, "ID")?.ok_or_else(|| usage("update needs an ID"))?;
            Command::Update { id, fields, active }
        }
        "export" => Command::Export(free(&mut args, "FILE")?.map(PathBuf::from)),
        "import" => Command::Import(
            free(&mut args, "FILE")?
                .map(PathBuf::from)
                .ok_or_else(|| usage("import needs a FILE"))?,
        ),
        other => return Err(usage(format!("unknown keys command {other:?}"))),
    };
    finish(args)?;
    Ok(cmd)
}

fn io(e: std::io::Error) -> CliError {
    CliError::Failed(format!("cannot write output: {e}"))
}

fn json_pretty<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

impl From<FindError> for CliError {
    fn from(e: FindError) -> Self {
        CliError::Failed(e.to_string())
    }
}

impl From<CreateError> for CliError {
    fn from(e: CreateError) -> Self {
        CliError::Failed(e.to_string())
    }
}

impl Command {
    fn writes(&self) -> bool {
        !matches!(
            self,
            Command::List { .. } | Command::Show(_) | Command::Export(_)
        )
    }

    /// Runs the command; key changes are pushed to `done` as (operation, target) for the
    /// audit log.
    fn run(
        self,
        store: &dyn KeyStore,
        out: &mut dyn Write,
        done: &mut Vec<(&'static str, String)>,
    ) -> Result<(), CliError> {
        match self {
            Command::Generate { role, fields, json } => {
                let key = create_key(store, role, &fields, "cli")?;
                done.push(("key.create", audit_target(&key)));
                if json {
                    writeln!(out, "{}", json_pretty(&key)).map_err(io)?;
                } else {
                    writeln!(
                        out,
                        "Created {} key {:?}{}.\nThe key is shown only now; store it safely:\n\n{}\n",
                        key.role,
                        key.name,
                        key.expires_at
                            .as_deref()
                            .map(|e| format!(", expires {e}"))
                            .unwrap_or_default(),
                        key.id
                    )
                    .map_err(io)?;
                }
                Ok(())
            }
            Command::List { active, json } => {
                let keys: Vec<ApiKey> = store
                    .list()?
                    .into_iter()
                    .filter(|k| !active || k.active)
                    .map(|mut k| {
                        k.id = mask(&k.id);
                        k
                    })
                    .collect();
                if json {
                    writeln!(out, "{}", json_pretty(&keys)).map_err(io)?;
                    return Ok(());
                }
                if keys.is_empty() {
                    writeln!(out, "no keys").map_err(io)?;
                }
                for k in keys {
                    writeln!(
                        out,
                        "{}  {}  {}  {}  expires {}  used {} (last {})",
                        k.id,
                        k.role,
                        if k.active { "active" } else { "revoked" },
                        k.name,
                        k.expires_at.as_deref().unwrap_or("never"),
                        k.usage.count,
                        k.usage.last_used.as_deref().unwrap_or("never"),
                    )
                    .map_err(io)?;
                }
                Ok(())
            }
            Command::Show(id) => {
                let key = find(store, &id)?;
                writeln!(out, "{}", json_pretty(&key)).map_err(io)
            }
            Command::Revoke(id) => {
                let key = revoke(store, &id)?;
                done.push(("key.revoke", audit_target(&key)));
                writeln!(out, "revoked {}", mask(&key.id)).map_err(io)
            }
            Command::Update { id, fields, active } => {
                let mut key = find(store, &id)?;
                apply_update(&mut key, fields, active).map_err(usage)?;
                let m = mask(&key.id);
                let target = audit_target(&key);
                store.update(key)?;
                done.push(("key.update", target));
                writeln!(out, "updated {m}").map_err(io)
            }
            Command::Export(file) => {
                let text = json_pretty(&store.list()?);
                match file {
                    None => writeln!(out, "{text}").map_err(io),
                    Some(f) => {
                        write_atomic(&f, format!("{text}\n").as_bytes()).map_err(|e| {
                            CliError::Failed(format!("cannot write {}: {e}", f.display()))
                        })?;
                        writeln!(out, "exported {} keys to {}", count(store)?, f.display())
                            .map_err(io)
                    }
                }
            }
            Command::Import(file) => {
                let text = std::fs::read_to_string(&file).map_err(|e| {
                    CliError::Failed(format!("cannot read {}: {e}", file.display()))
                })?;
                let keys: Vec<ApiKey> = serde_json::from_str(&text).map_err(|e| {
                    CliError::Failed(format!("{}: not a JSON array of keys: {e}", file.display()))
                })?;
                let (mut added, mut skipped) = (0, 0);
                for k in keys {
                    let target = audit_target(&k);
                    match store.insert(k) {
                        Ok(()) => {
                            added += 1;
                            done.push(("key.import", target));
                        }
                        Err(StoreError::Exists) => skipped += 1,
                        Err(e) => return Err(e.into()),
                    }
                }
                writeln!(out, "imported {added}, skipped {skipped} (existing ids)").map_err(io)
            }
        }
    }
}

fn count(store: &dyn KeyStore) -> Result<usize, CliError> {
    Ok(store.list()?.len())
}

/// The first-run hint for `serve`: `Some(message)` when the store has no active admin key.
/// Never contains a secret.
pub fn first_run_hint(store: &dyn KeyStore) -> Option<String> {
    let keys = store.list().ok()?;
    if keys.iter().any(|k| k.role == Role::Admin && k.active) {
        return None;
    }
    Some(
        "no admin API key exists yet: create one with `home-mcp keys generate --role admin` \
         (the key is printed once, on that terminal)"
            .into(),
    )
}

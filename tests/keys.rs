//! API key stores and the `keys` command (issue 6, spec §5.8-5.9): CRUD on each backend,
//! atomic 0600 file writes that survive kill -9, damaged files, the read-only env backend,
//! batched usage data, and the command line (import/export round trip, usage errors, secrets
//! never on stderr).

use std::path::Path;
use std::process::{Output, Stdio};
use std::sync::Arc;
use std::time::Duration;

use home_mcp::auth::cli::first_run_hint;
use home_mcp::auth::keys::next_sequence;
use home_mcp::auth::store::{
    open_store, Backend, EnvStore, FileStore, KeyStore, MemoryStore, SqliteStore, StoreError,
    UsageRecorder,
};
use home_mcp::auth::{new_key_id, ApiKey, Role, Usage};

use crate::support::keys_cli::{keys, keys_bin};
use crate::support::server::TempDir;

fn key(role: Role, seq: u64, name: &str) -> ApiKey {
    ApiKey {
        id: new_key_id(role, seq).unwrap(),
        name: name.into(),
        role,
        created_by: "test".into(),
        created_at: "2026-11-21T08:00:00.000Z".into(),
        active: true,
        expires_at: Some("2027-01-01T00:00:00.000Z".into()),
        ip_whitelist: vec!["10.0.0.0/8".into(), "fd00::/8".into()],
        allowed_devices: vec!["Kitchen light".into()],
        permissions: vec![],
        rooms: vec![],
        categories: vec![],
        model_confirms: false,
        open_doors: false,
        cameras: false,
        grant: None,
        profile: None,
        usage: Usage::default(),
    }
}

fn crud(store: &dyn KeyStore) {
    assert!(store.list().unwrap().is_empty());
    let a = key(Role::Admin, 1, "a");
    let b = key(Role::Device, 2, "b");
    store.insert(a.clone()).unwrap();
    store.insert(b.clone()).unwrap();
    assert!(matches!(store.insert(a.clone()), Err(StoreError::Exists)));
    assert_eq!(store.list().unwrap(), vec![a.clone(), b.clone()]);
    assert_eq!(store.get(&b.id).unwrap(), Some(b.clone()));
    assert_eq!(store.get("homekey_admin_9_00").unwrap(), None);
    let mut b2 = b.clone();
    b2.active = false;
    b2.usage.count = 5;
    b2.usage.ips = vec!["10.1.2.3".into()];
    store.update(b2.clone()).unwrap();
    assert_eq!(store.get(&b.id).unwrap(), Some(b2));
    assert!(matches!(
        store.update(key(Role::Monitor, 3, "x")),
        Err(StoreError::NotFound)
    ));
    store.delete(&a.id).unwrap();
    assert!(matches!(store.delete(&a.id), Err(StoreError::NotFound)));
    assert_eq!(store.list().unwrap().len(), 1);
    // insert_new builds the key from the current keys (next sequence number).
    let c = store
        .insert_new(&mut |keys| key(Role::Monitor, next_sequence(keys), "c"))
        .unwrap();
    assert!(c.id.starts_with("homekey_monitor_3_"), "{}", c.id);
    assert_eq!(store.get(&c.id).unwrap(), Some(c));
}

/// Leftover `.keys.toml.tmp.*` files in `dir`.
fn temp_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains(".tmp.")
        })
        .count()
}

#[cfg(unix)]
fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn memory_store_crud() {
    crud(&MemoryStore::default());
}

#[test]
fn file_store_crud_persists_with_mode_0600() {
    let tmp = TempDir::new("keys-file-crud");
    let dir = tmp.0.clone();
    let path = dir.join("keys.toml");
    crud(&FileStore::new(&path));
    // A second store on the same file sees what the first wrote.
    let again = FileStore::new(&path);
    assert_eq!(again.list().unwrap().len(), 2);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("[[keys]]"), "{text}");
    #[cfg(unix)]
    assert_eq!(mode(&path), 0o600);
    assert_eq!(temp_files(&dir), 0, "no temp files are left behind");
}

#[test]
fn file_store_missing_file_is_empty_and_damaged_file_is_an_error_never_overwritten() {
    let tmp = TempDir::new("keys-file-damaged");
    let dir = tmp.0.clone();
    let path = dir.join("keys.toml");
    assert!(FileStore::new(&path).list().unwrap().is_empty());
    assert!(!path.exists(), "reading must not create the file");

    std::fs::write(&path, "[[keys]]\nid = \"homekey_admin_1_x\"\nname = ").unwrap();
    let store = FileStore::new(&path);
    let e = store.list().unwrap_err();
    assert!(matches!(e, StoreError::Corrupt(_)), "{e}");
    assert!(e.to_string().contains("keys.toml"), "{e}");
    let e = store.insert(key(Role::Admin, 1, "a")).unwrap_err();
    assert!(matches!(e, StoreError::Corrupt(_)), "{e}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "[[keys]]\nid = \"homekey_admin_1_x\"\nname = "
    );
}

#[test]
fn sqlite_store_crud_persists_with_mode_0600() {
    crud(&SqliteStore::in_memory().unwrap());
    let tmp = TempDir::new("keys-sqlite");
    let dir = tmp.0.clone();
    let path = dir.join("keys.db");
    crud(&SqliteStore::open(&path).unwrap());
    assert_eq!(SqliteStore::open(&path).unwrap().list().unwrap().len(), 2);
    #[cfg(unix)]
    assert_eq!(mode(&path), 0o600);
    let bad = dir.join("bad.db");
    std::fs::write(&bad, "this is not a database, not at all, no").unwrap();
    assert!(SqliteStore::open(&bad).is_err());
}

#[test]
fn env_store_is_read_only() {
    let keys = vec![key(Role::Operator, 1, "op"), key(Role::Monitor, 2, "mon")];
    let json = serde_json::to_string(&keys).unwrap();
    let store = EnvStore::parse(Some(&json)).unwrap();
    assert_eq!(store.list().unwrap(), keys);
    assert!(matches!(
        store.insert(key(Role::Admin, 3, "a")),
        Err(StoreError::ReadOnly)
    ));
    assert!(matches!(
        store.update(keys[0].clone()),
        Err(StoreError::ReadOnly)
    ));
    assert!(matches!(
        store.delete(&keys[0].id),
        Err(StoreError::ReadOnly)
    ));
    assert!(EnvStore::parse(None).unwrap().list().unwrap().is_empty());
    assert!(matches!(
        EnvStore::parse(Some("{not json")),
        Err(StoreError::Corrupt(_))
    ));
}

#[test]
fn open_store_follows_the_backend() {
    let tmp = TempDir::new("keys-open");
    let dir = tmp.0.clone();
    let json = serde_json::to_string(&vec![key(Role::Admin, 1, "a")]).unwrap();
    let env = move |k: &str| (k == "HOME_API_KEYS").then(|| json.clone());
    assert_eq!(Backend::from_env(&|_| None).unwrap(), Backend::File);
    assert_eq!(
        Backend::from_env(&|_| Some("sqlite".into())).unwrap(),
        Backend::Sqlite
    );
    assert!(Backend::from_env(&|_| Some("redis".into())).is_err());
    let envs = open_store(Backend::Env, &dir.join("x"), &env).unwrap();
    assert_eq!(envs.list().unwrap().len(), 1);
    let mem = open_store(Backend::Memory, &dir.join("x"), &env).unwrap();
    assert!(mem.list().unwrap().is_empty());
    let file = open_store(Backend::File, &dir.join("keys.toml"), &env).unwrap();
    file.insert(key(Role::Admin, 1, "a")).unwrap();
    assert!(dir.join("keys.toml").exists());
    let db = open_store(Backend::Sqlite, &dir.join("keys.db"), &env).unwrap();
    db.insert(key(Role::Admin, 1, "a")).unwrap();
}

#[test]
fn first_run_hint_only_without_an_active_admin_key() {
    let store = MemoryStore::default();
    let hint = first_run_hint(&store).unwrap();
    assert!(
        hint.contains("home-mcp keys generate --role admin"),
        "{hint}"
    );
    let mut admin = key(Role::Admin, 1, "a");
    admin.active = false;
    store.insert(admin.clone()).unwrap();
    store.insert(key(Role::Operator, 2, "o")).unwrap();
    assert!(first_run_hint(&store).is_some());
    admin.active = true;
    store.update(admin.clone()).unwrap();
    assert!(first_run_hint(&store).is_none());
    assert!(!hint.contains("homekey_"));
}

#[test]
fn sequence_is_max_plus_one() {
    assert_eq!(next_sequence(&[]), 1);
    let keys = vec![key(Role::Admin, 4, "a"), key(Role::Monitor, 11, "m")];
    assert_eq!(next_sequence(&keys), 12);
}

#[test]
fn usage_is_batched_and_flushed() {
    let tmp = TempDir::new("keys-usage");
    let dir = tmp.0.clone();
    let path = dir.join("keys.toml");
    let store: Arc<dyn KeyStore> = Arc::new(FileStore::new(&path));
    let k = key(Role::Operator, 1, "op");
    store.insert(k.clone()).unwrap();
    let before = std::fs::read_to_string(&path).unwrap();

    let rec = UsageRecorder::new(store.clone(), Duration::from_secs(3600));
    for i in 0..30 {
        rec.record_use(&k.id, &format!("10.0.0.{i}"));
    }
    rec.record_use(&k.id, "10.0.0.1");
    rec.record_failure(&k.id);
    rec.record_use("homekey_operator_99_unknown", "10.0.0.1");
    // Nothing written yet: one request must not mean one write.
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    let pending = rec.usage(&k.id).unwrap();
    assert_eq!(pending.count, 31);

    rec.flush();
    let u = store.get(&k.id).unwrap().unwrap().usage;
    assert_eq!(u.count, 31);
    assert_eq!(u.failed_attempts, 1);
    assert_eq!(u.ips.len(), 20);
    assert!(u.last_used.is_some());

    // A second batch adds to the stored numbers; dropping the recorder flushes.
    rec.record_use(&k.id, "192.168.1.5");
    drop(rec);
    let u = store.get(&k.id).unwrap().unwrap().usage;
    assert_eq!(u.count, 32);
    assert_eq!(u.ips.len(), 20, "at most 20 addresses");

    // One flush of several keys is one rewrite of the file.
    let k2 = key(Role::Monitor, 2, "mon");
    store.insert(k2.clone()).unwrap();
    let rec = UsageRecorder::new(store.clone(), Duration::from_secs(3600));
    rec.record_use(&k.id, "10.0.0.1");
    rec.record_use(&k2.id, "10.0.0.2");
    rec.record_failure(&k2.id);
    rec.flush();
    let k2u = store.get(&k2.id).unwrap().unwrap().usage;
    assert_eq!((k2u.count, k2u.failed_attempts), (1, 1));
    assert_eq!(store.get(&k.id).unwrap().unwrap().usage.count, 33);
    drop(rec);

    // The same through SQLite (one transaction per flush).
    let db: Arc<dyn KeyStore> = Arc::new(SqliteStore::in_memory().unwrap());
    db.insert(k2.clone()).unwrap();
    let rec = UsageRecorder::new(db.clone(), Duration::from_secs(3600));
    rec.record_use(&k2.id, "10.0.0.2");
    rec.flush();
    assert_eq!(db.get(&k2.id).unwrap().unwrap().usage.count, 1);
    drop(rec);

    // With a zero interval every record is written at once.
    let rec = UsageRecorder::new(store.clone(), Duration::ZERO);
    rec.record_failure(&k.id);
    assert_eq!(store.get(&k.id).unwrap().unwrap().usage.failed_attempts, 2);
}

#[test]
fn usage_on_a_read_only_store_is_dropped_quietly() {
    let json = serde_json::to_string(&vec![key(Role::Operator, 1, "op")]).unwrap();
    let store: Arc<dyn KeyStore> = Arc::new(EnvStore::parse(Some(&json)).unwrap());
    let before = store.list().unwrap();
    let id = before[0].id.clone();
    // Batched: the use is pending until the flush...
    let rec = UsageRecorder::new(store.clone(), Duration::from_secs(3600));
    rec.record_use(&id, "10.0.0.1");
    rec.record_failure(&id);
    let pending = rec.usage(&id).expect("the key");
    assert_eq!((pending.count, pending.failed_attempts), (1, 1));
    // ...which the read-only store refuses: the data is dropped (not kept to grow without
    // bound), the store is unchanged, and nothing panics.
    rec.flush();
    let after = rec.usage(&id).expect("the key");
    assert_eq!((after.count, after.failed_attempts), (0, 0), "{after:?}");
    assert_eq!(store.list().unwrap(), before, "the store is unchanged");
    // With a zero interval every record is a flush: dropped at once as well.
    let rec = UsageRecorder::new(store.clone(), Duration::ZERO);
    rec.record_use(&id, "10.0.0.1");
    assert_eq!(rec.usage(&id).expect("the key").count, 0);
    drop(rec);
    assert_eq!(store.list().unwrap(), before, "the store is unchanged");
}

// ---- the command line ----

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The secret from `generate`'s output.
fn secret(o: &Output) -> String {
    let s = out(o);
    s.split_whitespace()
        .find(|w| w.starts_with("homekey_"))
        .unwrap_or_else(|| panic!("no key in {s:?}"))
        .to_string()
}

#[test]
fn cli_generate_list_show_revoke_update() {
    let tmp = TempDir::new("keys-cli");
    let dir = tmp.0.clone();
    let store = dir.join("sub").join("keys.toml");
    let o = keys(&store, &["generate", "--role", "admin", "--name", "Laptop"]);
    assert!(o.status.success(), "{}", err(&o));
    let admin = secret(&o);
    assert!(admin.starts_with("homekey_admin_1_"), "{admin}");
    assert!(!err(&o).contains(&admin), "secret on stderr");
    #[cfg(unix)]
    assert_eq!(mode(&store), 0o600);

    let o = keys(
        &store,
        &[
            "generate",
            "--role",
            "device",
            "--device",
            "Kitchen light",
            "--ip",
            "192.168.1.0/24",
            "--ip",
            "::1",
            "--expires-days",
            "30",
            "--json",
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    let rec: ApiKey = serde_json::from_str(&out(&o)).unwrap();
    assert!(rec.id.starts_with("homekey_device_2_"));
    assert_eq!(rec.allowed_devices, ["Kitchen light"]);
    assert_eq!(rec.ip_whitelist, ["192.168.1.0/24", "::1"]);
    assert!(rec.expires_at.is_some());
    assert!(!err(&o).contains(&rec.id));

    let o = keys(
        &store,
        &["generate", "--role", "custom", "--permission", "read"],
    );
    assert!(o.status.success(), "{}", err(&o));
    let custom = secret(&o);
    assert!(custom.starts_with("homekey_custom_3_"));

    // list masks; --json too.
    let o = keys(&store, &["list"]);
    let text = out(&o);
    assert!(o.status.success());
    assert_eq!(text.lines().count(), 3, "{text}");
    for id in [&admin, &rec.id, &custom] {
        assert!(!text.contains(id.as_str()), "{text}");
    }
    assert!(text.contains("Laptop"));
    let listed: Vec<ApiKey> =
        serde_json::from_str(&out(&keys(&store, &["list", "--json"]))).unwrap();
    assert_eq!(listed.len(), 3);
    assert!(listed.iter().all(|k| k.id.ends_with("****")));

    // show by full or masked id.
    let shown: ApiKey = serde_json::from_str(&out(&keys(&store, &["show", &admin]))).unwrap();
    assert_eq!(shown.name, "Laptop");
    let shown: ApiKey =
        serde_json::from_str(&out(&keys(&store, &["show", &listed[1].id]))).unwrap();
    assert_eq!(shown.id, rec.id);
    let o = keys(&store, &["show", "homekey_admin_1_ffff****"]);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));

    // revoke and --active.
    let o = keys(&store, &["revoke", &custom]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(!out(&o).contains(&custom));
    let active: Vec<ApiKey> =
        serde_json::from_str(&out(&keys(&store, &["list", "--active", "--json"]))).unwrap();
    assert_eq!(active.len(), 2);

    // update.
    let o = keys(
        &store,
        &[
            "update",
            &rec.id,
            "--name",
            "Tablet",
            "--expires-days",
            "0",
            "--ip",
            "10.0.0.0/8",
            "--active",
            "false",
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    let shown: ApiKey = serde_json::from_str(&out(&keys(&store, &["show", &rec.id]))).unwrap();
    assert_eq!(shown.name, "Tablet");
    assert_eq!(shown.expires_at, None);
    assert_eq!(shown.ip_whitelist, ["10.0.0.0/8"]);
    assert!(!shown.active);
    assert_eq!(shown.allowed_devices, ["Kitchen light"]);

    // Who may confirm and open (issue 20): off by default, shown by `keys show`.
    let text = out(&keys(&store, &["show", &rec.id]));
    assert!(
        text.contains("\"model_confirms\": false") && text.contains("\"open_doors\": false"),
        "{text}"
    );
    let o = keys(
        &store,
        &[
            "update",
            &rec.id,
            "--model-confirms",
            "yes",
            "--open-doors",
            "yes",
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    let shown: ApiKey = serde_json::from_str(&out(&keys(&store, &["show", &rec.id]))).unwrap();
    assert!(shown.model_confirms && shown.open_doors);
    let o = keys(&store, &["update", &rec.id, "--open-doors", "maybe"]);
    assert_eq!(o.status.code(), Some(2), "a usage error: {}", err(&o));
    assert!(err(&o).contains("--open-doors"), "{}", err(&o));

    // Camera pictures (issue 30): off by default, set and cleared by `update --cameras`; the
    // other settings stay as they were.
    assert!(text.contains("\"cameras\": false"), "{text}");
    assert!(!shown.cameras && !shown.sees_pictures());
    let o = keys(&store, &["update", &rec.id, "--cameras", "yes"]);
    assert!(o.status.success(), "{}", err(&o));
    let shown: ApiKey = serde_json::from_str(&out(&keys(&store, &["show", &rec.id]))).unwrap();
    assert!(shown.cameras && shown.sees_pictures(), "{shown:?}");
    assert!(shown.model_confirms && shown.open_doors, "kept");
    let o = keys(&store, &["update", &rec.id, "--cameras", "no"]);
    assert!(o.status.success(), "{}", err(&o));
    let shown: ApiKey = serde_json::from_str(&out(&keys(&store, &["show", &rec.id]))).unwrap();
    assert!(!shown.cameras && !shown.sees_pictures());
    let o = keys(&store, &["update", &rec.id, "--cameras", "maybe"]);
    assert_eq!(o.status.code(), Some(2), "a usage error: {}", err(&o));
    assert!(err(&o).contains("--cameras"), "{}", err(&o));

    // Sequence continues from the largest.
    let o = keys(&store, &["generate", "--role", "monitor"]);
    assert!(secret(&o).starts_with("homekey_monitor_4_"));

    // `generate --cameras yes` makes a key that may see pictures from the start.
    let made = crate::support::keys_cli::generate(&store, "monitor", &["--cameras", "yes"]);
    let id = made["id"].as_str().expect("the new key's id");
    let hall: ApiKey = serde_json::from_str(&out(&keys(&store, &["show", id]))).unwrap();
    assert!(hall.cameras && hall.sees_pictures() && hall.role == Role::Monitor);
}

#[test]
fn cli_export_import_round_trip_skips_existing() {
    let tmp = TempDir::new("keys-cli-export");
    let dir = tmp.0.clone();
    let a = dir.join("a.toml");
    for role in ["admin", "operator", "monitor"] {
        assert!(keys(&a, &["generate", "--role", role]).status.success());
    }
    let export = dir.join("export.json");
    let o = keys(&a, &["export", export.to_str().unwrap()]);
    assert!(o.status.success(), "{}", err(&o));
    #[cfg(unix)]
    assert_eq!(mode(&export), 0o600);
    let exported: Vec<ApiKey> =
        serde_json::from_str(&std::fs::read_to_string(&export).unwrap()).unwrap();
    assert_eq!(exported.len(), 3);
    // export to stdout gives the same.
    let stdout: Vec<ApiKey> = serde_json::from_str(&out(&keys(&a, &["export"]))).unwrap();
    assert_eq!(stdout, exported);

    // Into a SQLite store: all three, then again: all skipped.
    let b = dir.join("b.db");
    let import = |store: &Path| {
        keys_bin()
            .env("HOME_KEY_BACKEND", "sqlite")
            .args(["keys", "import"])
            .arg(&export)
            .arg("--key-store")
            .arg(store)
            .output()
            .unwrap()
    };
    let o = import(&b);
    assert!(o.status.success(), "{}", err(&o));
    assert!(out(&o).contains("imported 3, skipped 0"), "{}", out(&o));
    let o = import(&b);
    assert!(out(&o).contains("imported 0, skipped 3"), "{}", out(&o));
    assert_eq!(SqliteStore::open(&b).unwrap().list().unwrap(), exported);

    // Into a file store holding one of them plus its own.
    let c = dir.join("c.toml");
    let own = FileStore::new(&c);
    own.insert(exported[1].clone()).unwrap();
    own.insert(key(Role::Device, 7, "own")).unwrap();
    let o = keys(&c, &["import", export.to_str().unwrap()]);
    assert!(out(&o).contains("imported 2, skipped 1"), "{}", out(&o));
    assert_eq!(own.list().unwrap().len(), 4);

    let o = keys(&c, &["import", dir.join("missing.json").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn cli_usage_errors_exit_2() {
    let tmp = TempDir::new("keys-cli-usage");
    let dir = tmp.0.clone();
    let store = dir.join("keys.toml");
    for args in [
        &[][..],
        &["frobnicate"],
        &["generate"],
        &["generate", "--role", "root"],
        &["generate", "--role", "device"],
        &["generate", "--role", "custom"],
        &["generate", "--role", "custom", "--permission", "everything"],
        &["generate", "--role", "operator", "--permission", "read"],
        &["generate", "--role", "admin", "--ip", "300.1.1.1"],
        &["generate", "--role", "admin", "--ip", "10.0.0.0/33"],
        &["generate", "--role", "admin", "--expires-days", "soon"],
        &["generate", "--role", "admin", "--bogus"],
        &["show"],
        &["revoke"],
        &["update"],
        &["update", "x", "--active", "maybe"],
        &["import"],
        &["list", "extra"],
    ] {
        let o = keys(&store, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", err(&o));
        assert!(err(&o).contains("error:"), "{args:?}");
    }
    assert!(!store.exists(), "usage errors write nothing");
    let o = keys_bin().args(["keys", "--help"]).output().unwrap();
    assert!(o.status.success());
    assert!(out(&o).contains("keys generate"));
    let o = keys_bin()
        .env("HOME_KEY_BACKEND", "redis")
        .args(["keys", "list"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn cli_env_backend_is_read_only_and_damaged_file_fails() {
    let json = serde_json::to_string(&vec![key(Role::Operator, 1, "op")]).unwrap();
    let o = keys_bin()
        .env("HOME_KEY_BACKEND", "env")
        .env("HOME_API_KEYS", &json)
        .args(["keys", "list", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(
        serde_json::from_str::<Vec<ApiKey>>(&out(&o)).unwrap().len(),
        1
    );
    let o = keys_bin()
        .env("HOME_KEY_BACKEND", "env")
        .env("HOME_API_KEYS", &json)
        .args(["keys", "generate", "--role", "admin"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("read-only"), "{}", err(&o));
    assert!(
        !out(&o).contains("homekey_"),
        "no secret for a key that was not stored"
    );

    let tmp = TempDir::new("keys-cli-damaged");
    let dir = tmp.0.clone();
    let store = dir.join("keys.toml");
    std::fs::write(&store, "[[keys]\n").unwrap();
    let o = keys(&store, &["generate", "--role", "admin"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("damaged"), "{}", err(&o));
    assert!(!out(&o).contains("homekey_"));
    assert_eq!(std::fs::read_to_string(&store).unwrap(), "[[keys]\n");
}

/// kill -9 at random moments while `keys generate` writes: the file always parses, and every
/// key whose generate finished (and printed its secret) is still there.
#[test]
fn kill_9_during_writes_loses_no_committed_key() {
    let tmp = TempDir::new("keys-kill");
    let dir = tmp.0.clone();
    let store = dir.join("keys.toml");
    let mut committed: Vec<String> = Vec::new();
    let mut kills = 0;
    let mut torn = 0;
    let mut rounds = 0;
    while kills < 20 && rounds < 200 {
        rounds += 1;
        let child = keys_bin()
            .args(["keys", "generate", "--role", "operator", "--key-store"])
            .arg(&store)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut r = [0u8; 2];
        getrandom::fill(&mut r).unwrap();
        let delay = Duration::from_micros(u64::from(u16::from_le_bytes(r)) % 20_000);
        // Not a wait for a condition: the kill must land at a random moment of the child's
        // run. The verdict never depends on when it lands (any kill, or none, must leave a
        // readable file with every committed key); `kills` only counts the rounds it hit.
        std::thread::sleep(delay);
        let mut child = child;
        let killed = child.try_wait().unwrap().is_none() && child.kill().is_ok();
        let o = child.wait_with_output().unwrap();
        if killed && !o.status.success() {
            kills += 1;
        }
        if o.status.success() {
            committed.push(secret(&o));
        }
        // A temp file left behind means this kill landed in the middle of a write.
        if temp_files(&dir) > 0 {
            torn += 1;
        }
        let keys = FileStore::new(&store)
            .list()
            .unwrap_or_else(|e| panic!("round {rounds}: {e}"));
        for id in &committed {
            assert!(
                keys.iter().any(|k| &k.id == id),
                "round {rounds}: a committed key is gone"
            );
        }
    }
    assert!(kills >= 20, "only {kills} kills in {rounds} rounds");
    // The next write clears the temp files killed writers left.
    eprintln!(
        "{kills} kills ({torn} during a write), {} keys committed in {rounds} rounds",
        committed.len()
    );
    let o = keys(&store, &["generate", "--role", "monitor"]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(temp_files(&dir), 0);
}

/// Writers in parallel processes take the lock in turn: no generated key is lost.
#[test]
fn concurrent_generates_lose_nothing() {
    let tmp = TempDir::new("keys-concurrent");
    let dir = tmp.0.clone();
    let store = dir.join("keys.toml");
    let children: Vec<_> = (0..8)
        .map(|_| {
            keys_bin()
                .args(["keys", "generate", "--role", "monitor", "--key-store"])
                .arg(&store)
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let ids: Vec<String> = children
        .into_iter()
        .map(|c| {
            let o = c.wait_with_output().unwrap();
            assert!(o.status.success());
            secret(&o)
        })
        .collect();
    let stored = FileStore::new(&store).list().unwrap();
    assert_eq!(stored.len(), 8);
    for id in &ids {
        assert!(stored.iter().any(|k| &k.id == id));
    }
    let mut seqs: Vec<u64> = stored
        .iter()
        .map(|k| k.id.split('_').nth(2).unwrap().parse().unwrap())
        .collect();
    seqs.sort();
    assert_eq!(
        seqs,
        (1..=8).collect::<Vec<u64>>(),
        "sequence numbers are unique"
    );
}

/// The server's store answers from its parsed copy while the file is unchanged, and sees a
/// change made by another process (here: another `FileStore` on the same file, as the `keys`
/// command is) at once, so a revocation takes effect on the next request.
#[test]
fn file_store_reads_are_cached_until_the_file_changes() {
    let tmp = TempDir::new("keys-cached");
    let dir = tmp.0.clone();
    let path = dir.join("keys.toml");
    let server = FileStore::new(&path);
    let cli = FileStore::new(&path);
    let k = key(Role::Operator, 1, "op");
    cli.insert(k.clone()).unwrap();
    assert!(server.list().unwrap()[0].active);
    assert_eq!(server.list().unwrap(), server.list().unwrap());
    let mut revoked = k.clone();
    revoked.active = false;
    cli.update(revoked).unwrap();
    assert!(
        !server.get(&k.id).unwrap().unwrap().active,
        "revocation seen at once"
    );
    // A damaged file is still reported, not hidden behind the cache.
    std::fs::write(&path, "[[keys]]\nid = ").unwrap();
    assert!(matches!(server.list(), Err(StoreError::Corrupt(_))));
}

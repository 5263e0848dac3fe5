//! Where API keys live: the [`KeyStore`] seam. Backends (spec §5.8), chosen by
//! `HOME_KEY_BACKEND` through [`open_store`]:
//!
//! - `file` (default): [`FileStore`], a TOML file of `[[keys]]` tables. Every write replaces the
//!   whole file atomically (temp file in the same directory, fsync, rename, fsync of the
//!   directory), so a process killed mid-write leaves the old or the new file, never a torn one.
//!   Mode 0600. A missing file is an empty store; a damaged one is an error and is never
//!   overwritten.
//! - `env`: [`EnvStore`], read-only, a JSON array of key records in `HOME_API_KEYS`.
//! - `memory`: [`MemoryStore`], gone when the process ends.
//! - `sqlite`: [`SqliteStore`], one table, every write in a transaction.
//!
//! Usage data (last use, counts, client addresses) changes on every request; [`UsageRecorder`]
//! collects it in memory and writes it at most once per interval (default 60 s) and at
//! shutdown, so an SD card is not written per request.

use std::collections::HashMap;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};

use super::ApiKey;
use crate::sync::lock;

/// Why a store operation failed.
#[derive(Debug)]
pub enum StoreError {
    /// Reading or writing the backing file or database failed.
    Io(String),
    /// The stored data does not parse.
    Corrupt(String),
    /// A key with this id exists already.
    Exists,
    /// No key with this id.
    NotFound,
    /// The backend is read-only (e.g. `HOME_API_KEYS`).
    ReadOnly,
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Io(m) => write!(f, "key store: {m}"),
            StoreError::Corrupt(m) => write!(f, "key store is damaged: {m}"),
            StoreError::Exists => f.write_str("a key with this id exists"),
            StoreError::NotFound => f.write_str("no such key"),
            StoreError::ReadOnly => f.write_str("this key store is read-only"),
        }
    }
}

impl std::error::Error for StoreError {}

/// A store of API keys. All methods take `&self` (stores synchronise inside).
pub trait KeyStore: Send + Sync {
    /// Every key.
    fn list(&self) -> Result<Vec<ApiKey>, StoreError>;
    /// The key with `id`.
    fn get(&self, id: &str) -> Result<Option<ApiKey>, StoreError> {
        Ok(self.list()?.into_iter().find(|k| k.id == id))
    }
    /// Adds a key; [`StoreError::Exists`] when the id is taken.
    fn insert(&self, key: ApiKey) -> Result<(), StoreError>;
    /// Replaces the key with the same id; [`StoreError::NotFound`] when there is none.
    fn update(&self, key: ApiKey) -> Result<(), StoreError>;
    /// Deletes a key; [`StoreError::NotFound`] when there is none.
    fn delete(&self, id: &str) -> Result<(), StoreError>;
    /// Lets `f` change every key in one write (usage flushes); `f` returns whether it changed
    /// the key. The default updates the changed keys one by one.
    fn update_all(&self, f: &mut dyn FnMut(&mut ApiKey) -> bool) -> Result<(), StoreError> {
        for mut key in self.list()? {
            if f(&mut key) {
                match self.update(key) {
                    Ok(()) | Err(StoreError::NotFound) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }
    /// Adds the key `make` builds from the current keys, atomically where the backend can
    /// (so two `keys generate` at once do not pick the same sequence number). Returns it.
    fn insert_new(&self, make: &mut dyn FnMut(&[ApiKey]) -> ApiKey) -> Result<ApiKey, StoreError> {
        let key = make(&self.list()?);
        self.insert(key.clone())?;
        Ok(key)
    }
}

/// Keys in memory only (tests, `HOME_KEY_BACKEND=memory`).
#[derive(Debug, Default)]
pub struct MemoryStore {
    keys: Mutex<Vec<ApiKey>>,
}

impl MemoryStore {
    pub fn new(keys: Vec<ApiKey>) -> Self {
        Self {
            keys: Mutex::new(keys),
        }
    }
}

impl KeyStore for MemoryStore {
    fn list(&self) -> Result<Vec<ApiKey>, StoreError> {
        Ok(lock(&self.keys).clone())
    }

    fn insert(&self, key: ApiKey) -> Result<(), StoreError> {
        apply(&mut lock(&self.keys), Change::Insert(key))
    }

    fn insert_new(&self, make: &mut dyn FnMut(&[ApiKey]) -> ApiKey) -> Result<ApiKey, StoreError> {
        let mut keys = lock(&self.keys);
        let key = make(&keys);
        apply(&mut keys, Change::Insert(key.clone()))?;
        Ok(key)
    }

    fn update(&self, key: ApiKey) -> Result<(), StoreError> {
        apply(&mut lock(&self.keys), Change::Update(key))
    }

    fn delete(&self, id: &str) -> Result<(), StoreError> {
        apply(&mut lock(&self.keys), Change::Delete(id.to_string()))
    }
}

/// Applies one change to a key list (shared by the whole-list backends).
fn apply(keys: &mut Vec<ApiKey>, change: Change) -> Result<(), StoreError> {
    match change {
        Change::Insert(key) => {
            if keys.iter().any(|k| k.id == key.id) {
                return Err(StoreError::Exists);
            }
            keys.push(key);
        }
        Change::Update(key) => match keys.iter_mut().find(|k| k.id == key.id) {
            Some(k) => *k = key,
            None => return Err(StoreError::NotFound),
        },
        Change::Replace(all) => *keys = all,
        Change::Delete(id) => {
            let before = keys.len();
            keys.retain(|k| k.id != id);
            if keys.len() == before {
                return Err(StoreError::NotFound);
            }
        }
    }
    Ok(())
}

fn change_once(c: &Change) -> Change {
    match c {
        Change::Insert(k) => Change::Insert(k.clone()),
        Change::Update(k) => Change::Update(k.clone()),
        Change::Delete(id) => Change::Delete(id.clone()),
        Change::Replace(all) => Change::Replace(all.clone()),
    }
}

enum Change {
    /// The whole list (computed from the current one under the lock).
    Replace(Vec<ApiKey>),
    Insert(ApiKey),
    Update(ApiKey),
    Delete(String),
}

/// The TOML layout of a key file: `[[keys]]` tables.
#[derive(Debug, Default, Serialize, Deserialize)]
struct KeyFile {
    #[serde(default)]
    keys: Vec<ApiKey>,
}

/// Keys in a TOML file (`[[keys]]` tables), the default backend. Each operation reads the
/// file, so edits by another process (the `keys` command while `serve` runs) are seen. Every
/// change is a read-modify-write under an exclusive lock on `<path>.lock` (and a mutex within
/// the process), so concurrent writers do not lose each other's changes; readers need no lock
/// because the file is replaced by rename.
#[derive(Debug)]
pub struct FileStore {
    path: PathBuf,
    write: Mutex<()>,
    /// The keys as last parsed, with the file identity they were parsed from: the gate reads
    /// the store on every request, and this keeps that to one `stat` instead of a read and a
    /// TOML parse (each write renames a new file into place, so its inode changes).
    cached: Mutex<Option<(FileId, Vec<ApiKey>)>>,
}

/// What identifies one version of the key file: inode (a new one per atomic write), length and
/// modification time.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileId {
    ino: u64,
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl FileId {
    fn of(meta: &std::fs::Metadata) -> Self {
        #[cfg(unix)]
        let ino = std::os::unix::fs::MetadataExt::ino(meta);
        #[cfg(not(unix))]
        let ino = 0;
        FileId {
            ino,
            len: meta.len(),
            modified: meta.modified().ok(),
        }
    }
}

impl FileStore {
    /// A store at `path`; nothing is read or created until used.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            write: Mutex::new(()),
            cached: Mutex::new(None),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The keys, from the cache while the file is the one last parsed (one `stat`).
    fn read(&self) -> Result<Vec<ApiKey>, StoreError> {
        let id = match std::fs::metadata(&self.path) {
            Ok(m) => FileId::of(&m),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(StoreError::Io(format!("{}: {e}", self.path.display()))),
        };
        if let Some((cached_id, keys)) = &*lock(&self.cached) {
            if *cached_id == id {
                return Ok(keys.clone());
            }
        }
        let keys = self.read_fresh()?;
        *lock(&self.cached) = Some((id, keys.clone()));
        Ok(keys)
    }

    /// The keys as the file holds them now (always reads and parses).
    fn read_fresh(&self) -> Result<Vec<ApiKey>, StoreError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(StoreError::Io(format!("{}: {e}", self.path.display()))),
        };
        toml::from_str::<KeyFile>(&text)
            .map(|f| f.keys)
            .map_err(|e| StoreError::Corrupt(format!("{}: {e}", self.path.display())))
    }

    fn change(&self, change: Change) -> Result<(), StoreError> {
        self.change_with(&mut |_| change_once(&change))
    }

    fn change_with(&self, make: &mut dyn FnMut(&[ApiKey]) -> Change) -> Result<(), StoreError> {
        let _guard = lock(&self.write);
        let _file_lock = self
            .lock_file()
            .map_err(|e| StoreError::Io(format!("{}.lock: {e}", self.path.display())))?;
        self.remove_stale_temp_files();
        let mut keys = self.read_fresh()?;
        let change = make(&keys);
        apply(&mut keys, change)?;
        let text = toml::to_string(&KeyFile { keys })
            .map_err(|e| StoreError::Io(format!("cannot encode keys: {e}")))?;
        write_atomic(&self.path, text.as_bytes())
            .map_err(|e| StoreError::Io(format!("{}: {e}", self.path.display())))
    }
}

impl FileStore {
    /// Takes the exclusive lock on `<path>.lock` (released when the file is dropped), so a
    /// `keys` command and a running server do not overwrite each other's changes.
    fn lock_file(&self) -> std::io::Result<std::fs::File> {
        let mut name = self.path.as_os_str().to_owned();
        name.push(".lock");
        let f = crate::files::private()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(PathBuf::from(name))?;
        f.lock()?;
        Ok(f)
    }

    /// Temp files of writers killed mid-write. Only called under the lock, when no other
    /// writer can be using one.
    fn remove_stale_temp_files(&self) {
        let (Some(dir), Some(name)) = (self.path.parent(), self.path.file_name()) else {
            return;
        };
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        let prefix = format!(".{}.tmp.", name.to_string_lossy());
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

/// Replaces `path` with `bytes`: a mode-0600 temp file in the same directory, fsync, rename
/// over `path`, fsync of the directory. Readers see the old or the new content, never a mix.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "keys".into());
    let tmp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
    let mut options = crate::files::private();
    options.write(true).create(true).truncate(true);
    let result = (|| {
        let mut f = options.open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)?;
        // The rename itself is durable only once the directory is synced.
        #[cfg(unix)]
        std::fs::File::open(&dir)?.sync_all()?;
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

impl KeyStore for FileStore {
    fn list(&self) -> Result<Vec<ApiKey>, StoreError> {
        self.read()
    }

    fn insert(&self, key: ApiKey) -> Result<(), StoreError> {
        self.change(Change::Insert(key))
    }

    fn update(&self, key: ApiKey) -> Result<(), StoreError> {
        self.change(Change::Update(key))
    }

    fn delete(&self, id: &str) -> Result<(), StoreError> {
        self.change(Change::Delete(id.into()))
    }

    fn update_all(&self, f: &mut dyn FnMut(&mut ApiKey) -> bool) -> Result<(), StoreError> {
        self.change_with(&mut |keys| {
            let mut all = keys.to_vec();
            for k in &mut all {
                f(k);
            }
            Change::Replace(all)
        })
    }

    fn insert_new(&self, make: &mut dyn FnMut(&[ApiKey]) -> ApiKey) -> Result<ApiKey, StoreError> {
        let mut made = None;
        self.change_with(&mut |keys| {
            let key = make(keys);
            made = Some(key.clone());
            Change::Insert(key)
        })?;
        made.ok_or_else(|| StoreError::Io("no key made".into()))
    }
}

/// Keys from `HOME_API_KEYS` (a JSON array of key records); read-only: every write is
/// [`StoreError::ReadOnly`] (usage data is kept in memory only).
#[derive(Debug)]
pub struct EnvStore {
    keys: Vec<ApiKey>,
}

impl EnvStore {
    /// Parses the JSON array; an unset or empty variable is an empty store.
    pub fn parse(json: Option<&str>) -> Result<Self, StoreError> {
        let keys = match json.map(str::trim) {
            None | Some("") => Vec::new(),
            Some(j) => serde_json::from_str(j)
                .map_err(|e| StoreError::Corrupt(format!("HOME_API_KEYS: {e}")))?,
        };
        Ok(Self { keys })
    }
}

impl KeyStore for EnvStore {
    fn list(&self) -> Result<Vec<ApiKey>, StoreError> {
        Ok(self.keys.clone())
    }

    fn insert(&self, _: ApiKey) -> Result<(), StoreError> {
        Err(StoreError::ReadOnly)
    }

    fn update(&self, _: ApiKey) -> Result<(), StoreError> {
        Err(StoreError::ReadOnly)
    }

    fn delete(&self, _: &str) -> Result<(), StoreError> {
        Err(StoreError::ReadOnly)
    }
}

/// The SQLite layout version this build writes and reads.
pub const SQLITE_SCHEMA_VERSION: i64 = 1;

/// Keys in a SQLite database: a `schema_version` table and `api_keys (id PRIMARY KEY,
/// record JSON)`. Every write runs in a transaction; the file is created with mode 0600.
pub struct SqliteStore {
    conn: Mutex<Connection>,
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path`; its directory must exist.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let err = |e: &dyn fmt::Display| StoreError::Corrupt(format!("{}: {e}", path.display()));
        crate::files::create_private(path)
            .map_err(|e| StoreError::Io(format!("{}: {e}", path.display())))?;
        let conn = Connection::open(path).map_err(|e| err(&e))?;
        Self::init(conn).map_err(|e| err(&e))
    }

    /// A database in memory (tests).
    pub fn in_memory() -> Result<Self, StoreError> {
        let conn = Connection::open_in_memory().map_err(|e| StoreError::Io(e.to_string()))?;
        Self::init(conn).map_err(|e| StoreError::Io(e.to_string()))
    }

    /// Runs one writing `statement` in a transaction; `untouched` when it changed no row.
    fn write_one(
        &self,
        statement: &str,
        params: impl rusqlite::Params,
        untouched: StoreError,
    ) -> Result<(), StoreError> {
        let mut conn = lock(&self.conn);
        let tx = conn.transaction().map_err(sql)?;
        if tx.execute(statement, params).map_err(sql)? == 0 {
            return Err(untouched);
        }
        tx.commit().map_err(sql)
    }

    fn init(mut conn: Connection) -> Result<Self, String> {
        let tx = conn.transaction().map_err(|e| e.to_string())?;
        tx.execute_batch(
            "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
             CREATE TABLE IF NOT EXISTS api_keys (id TEXT PRIMARY KEY, record TEXT NOT NULL);",
        )
        .map_err(|e| e.to_string())?;
        let version: Option<i64> = tx
            .query_row("SELECT version FROM schema_version", [], |r| r.get(0))
            .optional()
            .map_err(|e| e.to_string())?;
        match version {
            None => {
                tx.execute(
                    "INSERT INTO schema_version (version) VALUES (?1)",
                    params![SQLITE_SCHEMA_VERSION],
                )
                .map_err(|e| e.to_string())?;
            }
            Some(v) if v == SQLITE_SCHEMA_VERSION => {}
            Some(v) => return Err(format!("schema version {v} is not supported")),
        }
        tx.commit().map_err(|e| e.to_string())?;
        Ok(Self {
            conn: Mutex::new(conn),
        })
    }
}

fn sql(e: rusqlite::Error) -> StoreError {
    StoreError::Io(e.to_string())
}

/// Every key, read inside a transaction.
fn read_all(conn: &Connection) -> Result<Vec<ApiKey>, StoreError> {
    let mut stmt = conn
        .prepare("SELECT record FROM api_keys ORDER BY rowid")
        .map_err(sql)?;
    let rows = stmt.query_map([], |r| r.get::<_, String>(0)).map_err(sql)?;
    let mut keys = Vec::new();
    for row in rows {
        keys.push(
            serde_json::from_str(&row.map_err(sql)?)
                .map_err(|e| StoreError::Corrupt(format!("api_keys: {e}")))?,
        );
    }
    Ok(keys)
}

fn encode(key: &ApiKey) -> Result<String, StoreError> {
    serde_json::to_string(key).map_err(|e| StoreError::Io(e.to_string()))
}

impl KeyStore for SqliteStore {
    fn list(&self) -> Result<Vec<ApiKey>, StoreError> {
        read_all(&lock(&self.conn))
    }

    fn get(&self, id: &str) -> Result<Option<ApiKey>, StoreError> {
        let conn = lock(&self.conn);
        let json: Option<String> = conn
            .query_row(
                "SELECT record FROM api_keys WHERE id = ?1",
                params![id],
                |r| r.get(0),
            )
            .optional()
            .map_err(sql)?;
        json.map(|j| {
            serde_json::from_str(&j).map_err(|e| StoreError::Corrupt(format!("api_keys: {e}")))
        })
        .transpose()
    }

    fn insert_new(&self, make: &mut dyn FnMut(&[ApiKey]) -> ApiKey) -> Result<ApiKey, StoreError> {
        let mut conn = lock(&self.conn);
        // IMMEDIATE: the write lock is taken before reading, so another process cannot insert
        // between our read and our write.
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(sql)?;
        let keys = read_all(&tx)?;
        let key = make(&keys);
        let n = tx
            .execute(
                "INSERT OR IGNORE INTO api_keys (id, record) VALUES (?1, ?2)",
                params![key.id, encode(&key)?],
            )
            .map_err(sql)?;
        if n == 0 {
            return Err(StoreError::Exists);
        }
        tx.commit().map_err(sql)?;
        Ok(key)
    }

    fn update_all(&self, f: &mut dyn FnMut(&mut ApiKey) -> bool) -> Result<(), StoreError> {
        let mut conn = lock(&self.conn);
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(sql)?;
        for mut key in read_all(&tx)? {
            if f(&mut key) {
                tx.execute(
                    "UPDATE api_keys SET record = ?2 WHERE id = ?1",
                    params![key.id, encode(&key)?],
                )
                .map_err(sql)?;
            }
        }
        tx.commit().map_err(sql)
    }

    fn insert(&self, key: ApiKey) -> Result<(), StoreError> {
        let insert = "INSERT OR IGNORE INTO api_keys (id, record) VALUES (?1, ?2)";
        self.write_one(insert, params![key.id, encode(&key)?], StoreError::Exists)
    }

    fn update(&self, key: ApiKey) -> Result<(), StoreError> {
        let update = "UPDATE api_keys SET record = ?2 WHERE id = ?1";
        self.write_one(update, params![key.id, encode(&key)?], StoreError::NotFound)
    }

    fn delete(&self, id: &str) -> Result<(), StoreError> {
        let delete = "DELETE FROM api_keys WHERE id = ?1";
        self.write_one(delete, params![id], StoreError::NotFound)
    }
}

/// Which backend (`HOME_KEY_BACKEND`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backend {
    #[default]
    File,
    Env,
    Memory,
    Sqlite,
}

impl Backend {
    /// `file`, `env`, `memory` or `sqlite`; `None` for anything else.
    pub fn parse(s: &str) -> Option<Backend> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "file" | "toml" => Backend::File,
            "env" => Backend::Env,
            "memory" => Backend::Memory,
            "sqlite" => Backend::Sqlite,
            _ => return None,
        })
    }

    /// `HOME_KEY_BACKEND` from `env`; unset means `file`.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Backend, String> {
        match env("HOME_KEY_BACKEND") {
            None => Ok(Backend::File),
            Some(v) if v.trim().is_empty() => Ok(Backend::File),
            Some(v) => Backend::parse(&v).ok_or_else(|| {
                format!("HOME_KEY_BACKEND: {v:?} is not one of file, env, memory, sqlite")
            }),
        }
    }

    /// The default store file in `data_dir`: `keys.toml`, or `keys.db` for SQLite.
    pub fn default_path(self, data_dir: &Path) -> PathBuf {
        match self {
            Backend::Sqlite => data_dir.join("keys.db"),
            _ => data_dir.join("keys.toml"),
        }
    }
}

/// Opens the store for `backend`: `path` for `file` and `sqlite` (ignored otherwise),
/// `HOME_API_KEYS` from `env` for `env`.
pub fn open_store(
    backend: Backend,
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn KeyStore>, StoreError> {
    Ok(match backend {
        Backend::File => Arc::new(FileStore::new(path)),
        Backend::Env => Arc::new(EnvStore::parse(env("HOME_API_KEYS").as_deref())?),
        Backend::Memory => Arc::new(MemoryStore::default()),
        Backend::Sqlite => Arc::new(SqliteStore::open(path)?),
    })
}

/// Most client addresses kept per key.
pub const MAX_IPS: usize = 20;

/// Usage seen since the last flush, per key.
#[derive(Debug, Default, Clone)]
struct Pending {
    last_used: Option<String>,
    count: u64,
    failed: u64,
    ips: Vec<String>,
}

/// Batches usage data (spec §2: last use, count, failed attempts, client addresses) in memory
/// and writes it to the store at most once per `interval`, and on [`flush`](Self::flush) (call
/// it at shutdown; dropping the recorder flushes too). The flush runs on the thread whose
/// `record_*` call found the interval over. Failures to write (a read-only store, a full disk)
/// are logged, and the pending data is dropped so it cannot grow without bound.
pub struct UsageRecorder {
    store: Arc<dyn KeyStore>,
    interval: Duration,
    state: Mutex<(HashMap<String, Pending>, Instant)>,
}

impl fmt::Debug for UsageRecorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UsageRecorder")
            .field("interval", &self.interval)
            .finish_non_exhaustive()
    }
}

impl UsageRecorder {
    pub fn new(store: Arc<dyn KeyStore>, interval: Duration) -> Self {
        Self {
            store,
            interval,
            state: Mutex::new((HashMap::new(), Instant::now())),
        }
    }

    /// A successful authentication with key `id` from `ip`.
    pub fn record_use(&self, id: &str, ip: &str) {
        self.record(id, |p| {
            p.last_used = Some(crate::time::now_iso8601());
            p.count += 1;
            if !ip.is_empty() && !p.ips.iter().any(|i| i == ip) && p.ips.len() < MAX_IPS {
                p.ips.push(ip.to_string());
            }
        });
    }

    /// A failed authentication attempt against key `id` (inactive, expired, wrong address...).
    pub fn record_failure(&self, id: &str) {
        self.record(id, |p| p.failed += 1);
    }

    fn record(&self, id: &str, f: impl FnOnce(&mut Pending)) {
        let due = {
            let mut state = lock(&self.state);
            f(state.0.entry(id.to_string()).or_default());
            state.1.elapsed() >= self.interval
        };
        if due {
            self.flush();
        }
    }

    /// The usage of `id` as the store will hold it after the next flush (stored + pending).
    pub fn usage(&self, id: &str) -> Option<super::Usage> {
        let mut key = self.store.get(id).ok().flatten()?;
        if let Some(p) = lock(&self.state).0.get(id) {
            merge(&mut key.usage, p);
        }
        Some(key.usage)
    }

    /// Writes all pending usage to the store now.
    pub fn flush(&self) {
        let pending = {
            let mut state = lock(&self.state);
            state.1 = Instant::now();
            std::mem::take(&mut state.0)
        };
        if pending.is_empty() {
            return;
        }
        // One write for the whole batch (one file rewrite for the file store).
        let result = self
            .store
            .update_all(&mut |key| match pending.get(&key.id) {
                Some(p) => {
                    merge(&mut key.usage, p);
                    true
                }
                None => false,
            });
        match result {
            Ok(()) | Err(StoreError::ReadOnly) => {}
            Err(e) => log::warn!("cannot save usage of {} keys: {e}", pending.len()),
        }
    }
}

impl Drop for UsageRecorder {
    fn drop(&mut self) {
        self.flush();
    }
}

fn merge(usage: &mut super::Usage, p: &Pending) {
    if p.last_used.is_some() {
        usage.last_used = p.last_used.clone();
    }
    usage.count += p.count;
    usage.failed_attempts += p.failed;
    for ip in &p.ips {
        if usage.ips.len() >= MAX_IPS {
            break;
        }
        if !usage.ips.contains(ip) {
            usage.ips.push(ip.clone());
        }
    }
}

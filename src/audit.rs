//! The audit log (issue 6): who changed what in the house, and who changed the keys.
//!
//! One row per state-changing tool call (the tool needs `control` or more,
//! [`crate::home::Permission::writes`]) and per picture handed out (a tool that shows pictures
//! of people, e.g. `get_camera_image`: the target names the camera and the bytes, never the
//! picture; and the dashboard's doorbell pictures), recorded by the tool catalogue,
//! `tools::HomeTools`, with the call's typed outcome, on every transport; per such call refused
//! for lack of permission (by the HTTP layer); and per key operation (admin API or CLI). A row
//! ([`Entry`]):
//!
//! | field | example | notes |
//! |---|---|---|
//! | `time` | `2026-11-21T08:28:00.123Z` | ISO 8601 UTC, milliseconds |
//! | `key_name` | `kitchen tablet` | `stdio (local)` for stdio, `anonymous` without a key |
//! | `key_id` | `homekey_operator_3_a1b2****` | always [`mask`]ed, never the secret |
//! | `ip` | `192.168.1.20` | `null` for stdio and the CLI |
//! | `transport` | `http` | `http` (`/mcp`), `sse` (legacy `/message`), `rest`, `stdio`, `admin`, `cli` |
//! | `operation` | `control_device`, `key.create` | the tool name, or `key.create` / `key.update` / `key.delete` (admin API, CLI), `key.revoke` / `key.import` (CLI) |
//! | `target` | `Kitchen Light` | what the arguments name ([`target_of`]): never codes, PINs or passwords |
//! | `result` | `ok`, `DEVICE_NOT_FOUND` | `ok` or the error code (spec §7.1) |
//! | `latency_ms` | `42` | wall time of the call in milliseconds |
//! | `confirmed_by` | `user (elicitation)` | who confirmed an alarm, access or house-wide command (issue 20): `user (elicitation)`, `user (workflow)`, `model (key allows)`; `null` when nobody had to |
//!
//! Storage: SQLite at `<data_dir>/audit.db` (mode 0600), in memory for `--demo` (the newest
//! [`MEMORY_MAX_ENTRIES`] entries only: a demo left running does not grow). Requests never
//! wait for the disk: [`AuditLog::record`] puts the entry on a bounded queue
//! ([`QUEUE_CAPACITY`]); a full queue drops the entry, counts it ([`AuditLog::dropped`]) and
//! logs a warning. A writer thread commits what arrived in one transaction at most every
//! [`BATCH_WINDOW`] (few writes: SD card friendly) and flushes everything when the log drops.
//!
//! The `keys` command records its changes in `audit.db` next to the key store it writes
//! (file and SQLite backends), key name `cli`, without pruning.
//!
//! Configuration (`[audit]`): `enabled` (default `true`), `retention_days` (default 90, at least
//! 1): older rows are deleted at start and once a day.

use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender, TrySendError};
use rusqlite::{params, Connection};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::logging::mask_key_id as mask;
use crate::mcp::Caller;

/// Entries queued for the writer before new ones are dropped.
pub const QUEUE_CAPACITY: usize = 1024;

/// The writer commits at most this often (entries arriving meanwhile share one transaction).
pub const BATCH_WINDOW: Duration = Duration::from_millis(500);

/// Most entries one query returns.
pub const MAX_LIMIT: usize = 1000;

/// Entries an in-memory log ([`AuditLog::in_memory`], `serve --demo`) keeps: after each
/// commit the oldest beyond this are deleted. About 160 bytes each in SQLite's pages (1.6 MB
/// for 10,000, measured by `an_in_memory_log_keeps_only_the_newest_entries`); freed pages are
/// reused, so the log stops growing there.
pub const MEMORY_MAX_ENTRIES: u64 = 10_000;

/// Key name recorded for the stdio transport (trusted, no key).
pub const STDIO_KEY_NAME: &str = "stdio (local)";

/// `[audit]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditConfig {
    /// Record at all (default `true`).
    pub enabled: bool,
    /// Rows older than this many days are deleted (default 90, at least 1).
    pub retention_days: u32,
}

impl Default for AuditConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            retention_days: 90,
        }
    }
}

/// Why the audit log failed.
#[derive(Debug, Clone, PartialEq)]
pub enum AuditError {
    /// The database could not be opened or created.
    Open { path: String, message: String },
    /// A query failed.
    Sql(String),
    /// A query parameter is not usable (e.g. `since` is not an ISO 8601 time).
    InvalidQuery(String),
}

impl fmt::Display for AuditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuditError::Open { path, message } => write!(f, "audit log {path}: {message}"),
            AuditError::Sql(m) => write!(f, "audit log: {m}"),
            AuditError::InvalidQuery(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for AuditError {}

fn sql(e: rusqlite::Error) -> AuditError {
    AuditError::Sql(e.to_string())
}

/// One audit row (see the module docs for the fields).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    /// ISO 8601 UTC with milliseconds.
    pub time: String,
    pub key_name: String,
    /// Masked key id (`None`: no key, e.g. stdio).
    pub key_id: Option<String>,
    pub ip: Option<String>,
    pub transport: String,
    pub operation: String,
    pub target: String,
    /// `ok` or an error code.
    pub result: String,
    /// Milliseconds.
    pub latency_ms: u64,
    /// Who confirmed the command (`None`: it needed no confirmation, or was not sent).
    pub confirmed_by: Option<String>,
}

impl Entry {
    /// An entry stamped now; `key_id` is masked here (pass the full id or a masked one).
    pub fn new(
        caller: Option<&Caller>,
        transport: &str,
        operation: &str,
        target: &str,
        result: &str,
        latency: Duration,
    ) -> Self {
        let (key_name, key_id, ip) = match caller {
            Some(c) => (
                c.key_name.clone(),
                c.key_id.as_deref().map(mask),
                c.ip.map(|ip| ip.to_string()),
            ),
            None if transport == "stdio" => (STDIO_KEY_NAME.to_string(), None, None),
            None => ("anonymous".to_string(), None, None),
        };
        Self {
            time: crate::time::now_iso8601(),
            key_name,
            key_id,
            ip,
            transport: transport.to_string(),
            operation: operation.to_string(),
            target: target.to_string(),
            result: result.to_string(),
            latency_ms: u64::try_from(latency.as_millis()).unwrap_or(u64::MAX),
            confirmed_by: None,
        }
    }

    /// The entry with who confirmed its command.
    pub fn confirmed_by(mut self, by: Option<String>) -> Self {
        self.confirmed_by = by;
        self
    }
}

/// Filters of [`AuditLog::query`]; all optional, combined with AND.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Query {
    /// Only entries at or after this ISO 8601 time.
    pub since: Option<String>,
    /// Only this key name (exact).
    pub key: Option<String>,
    /// Only this operation (exact).
    pub operation: Option<String>,
    /// Only this result (`ok` or an error code).
    pub result: Option<String>,
    /// At most this many (default 100, at most [`MAX_LIMIT`]).
    pub limit: Option<usize>,
    /// Read only what the writer has committed (up to its 500 ms batch window behind)
    /// instead of flushing first: for frequent readers such as the dashboard, so they neither
    /// defeat the batching nor wait on the disk.
    pub committed_only: bool,
}

/// The writer's inbox.
enum Msg {
    Entry(Box<Entry>),
    /// Commit everything queued before this, then answer.
    Flush(Sender<()>),
}

/// The audit log: a SQLite table fed by a background writer. Share it as `Arc<AuditLog>`.
pub struct AuditLog {
    conn: Arc<Mutex<Connection>>,
    tx: Mutex<Option<Sender<Msg>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    dropped: AtomicU64,
    retention_days: u32,
}

impl fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuditLog")
            .field("retention_days", &self.retention_days)
            .field("dropped", &self.dropped())
            .finish_non_exhaustive()
    }
}

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time TEXT NOT NULL,
    key_name TEXT NOT NULL,
    key_id TEXT,
    ip TEXT,
    transport TEXT NOT NULL,
    operation TEXT NOT NULL,
    target TEXT NOT NULL,
    result TEXT NOT NULL,
    latency_ms INTEGER NOT NULL,
    confirmed_by TEXT
);
CREATE INDEX IF NOT EXISTS audit_time ON audit(time);";

/// Adds the `confirmed_by` column to a database made before it existed.
fn add_confirmed_by(conn: &Connection) -> Result<(), AuditError> {
    let has = conn
        .prepare("SELECT 1 FROM pragma_table_info('audit') WHERE name = 'confirmed_by'")
        .and_then(|mut s| s.exists([]))
        .map_err(sql)?;
    if !has {
        conn.execute_batch("ALTER TABLE audit ADD COLUMN confirmed_by TEXT")
            .map_err(sql)?;
    }
    Ok(())
}

impl AuditLog {
    /// Opens (or creates, mode 0600) the database at `path`, prunes rows older than
    /// `retention_days` (`u32::MAX`: never, as the `keys` CLI opens it) and starts the writer.
    ///
    /// Errors: [`AuditError::Open`] when the file cannot be created or opened.
    pub fn open(path: &Path, retention_days: u32) -> Result<Arc<AuditLog>, AuditError> {
        let open_err = |message: String| AuditError::Open {
            path: path.display().to_string(),
            message,
        };
        crate::files::create_private(path).map_err(|e| open_err(e.to_string()))?;
        let conn = Connection::open(path).map_err(|e| open_err(e.to_string()))?;
        let _ = conn.pragma_update(None, "journal_mode", "WAL");
        Self::start(conn, retention_days, None).map_err(|e| open_err(e.to_string()))
    }

    /// A log kept in memory (`--demo`, tests): the newest [`MEMORY_MAX_ENTRIES`] entries.
    pub fn in_memory(retention_days: u32) -> Arc<AuditLog> {
        Self::in_memory_keeping(retention_days, MEMORY_MAX_ENTRIES)
    }

    /// [`AuditLog::in_memory`] keeping the newest `keep` entries (at least 1).
    fn in_memory_keeping(retention_days: u32, keep: u64) -> Arc<AuditLog> {
        let conn = Connection::open_in_memory().expect("SQLite in memory");
        Self::start(conn, retention_days, Some(keep.max(1))).expect("in-memory audit schema")
    }

    /// Starts the writer on `conn`; `keep`: the newest entries kept after each commit (`None`:
    /// all, until the retention prunes them).
    fn start(
        conn: Connection,
        retention_days: u32,
        keep: Option<u64>,
    ) -> Result<Arc<AuditLog>, AuditError> {
        conn.execute_batch(SCHEMA).map_err(sql)?;
        add_confirmed_by(&conn)?;
        let conn = Arc::new(Mutex::new(conn));
        let (tx, rx) = bounded::<Msg>(QUEUE_CAPACITY);
        let log = Arc::new(AuditLog {
            conn: conn.clone(),
            tx: Mutex::new(Some(tx)),
            writer: Mutex::new(None),
            dropped: AtomicU64::new(0),
            retention_days: retention_days.max(1),
        });
        if let Err(e) = log.prune(SystemTime::now()) {
            log::warn!("audit log: pruning failed: {e}");
        }
        let days = log.retention_days;
        let handle = std::thread::Builder::new()
            .name("audit-writer".into())
            .spawn(move || writer(&conn, &rx, days, keep))
            .map_err(|e| AuditError::Sql(format!("cannot start the writer: {e}")))?;
        *lock(&log.writer) = Some(handle);
        Ok(log)
    }

    /// Queues `entry` for the writer; never blocks. A full queue drops it (counted, logged).
    pub fn record(&self, entry: Entry) {
        let tx = lock(&self.tx);
        let Some(tx) = tx.as_ref() else { return };
        match tx.try_send(Msg::Entry(Box::new(entry))) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                let n = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                if n == 1 || n.is_multiple_of(100) {
                    log::warn!("audit log queue full: {n} entries dropped so far");
                }
            }
            Err(TrySendError::Disconnected(_)) => {
                log::warn!("audit writer stopped; entry dropped");
            }
        }
    }

    /// Entries dropped because the queue was full, since start.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Waits (at most 5 s) until everything queued so far is committed.
    pub fn flush(&self) {
        let (done_tx, done_rx) = bounded(1);
        let tx = lock(&self.tx).clone();
        let sent = tx.is_some_and(|tx| {
            tx.send_timeout(Msg::Flush(done_tx), Duration::from_secs(5))
                .is_ok()
        });
        if sent {
            let _ = done_rx.recv_timeout(Duration::from_secs(5));
        }
    }

    /// Commits the queue, stops the writer and waits for it. Later records are ignored.
    pub fn close(&self) {
        lock(&self.tx).take();
        if let Some(h) = lock(&self.writer).take() {
            let _ = h.join();
        }
    }

    /// Deletes rows older than the retention relative to `now`; returns how many.
    pub fn prune(&self, now: SystemTime) -> Result<usize, AuditError> {
        prune_before(&lock(&self.conn), &cutoff(now, self.retention_days))
    }

    /// Rows stored (committed).
    pub fn count(&self) -> Result<u64, AuditError> {
        lock(&self.conn)
            .query_row("SELECT COUNT(*) FROM audit", [], |r| r.get::<_, i64>(0))
            .map(|n| n.max(0) as u64)
            .map_err(sql)
    }

    /// Entries matching `q`, newest first (after a [`flush`](Self::flush)).
    ///
    /// Errors: [`AuditError::InvalidQuery`] for a `since` that is not an ISO 8601 time or a
    /// `limit` of 0 or above [`MAX_LIMIT`]; [`AuditError::Sql`].
    pub fn query(&self, q: &Query) -> Result<Vec<Entry>, AuditError> {
        let limit = q.limit.unwrap_or(100);
        if limit == 0 || limit > MAX_LIMIT {
            return Err(AuditError::InvalidQuery(format!(
                "limit must be 1-{MAX_LIMIT}, got {limit}"
            )));
        }
        let since = match &q.since {
            None => None,
            Some(s) => Some(
                humantime::parse_rfc3339_weak(s.trim())
                    .map(crate::time::iso8601)
                    .map_err(|_| {
                        AuditError::InvalidQuery(format!(
                            "since: {s:?} is not an ISO 8601 UTC time (2026-01-31T08:00:00Z)"
                        ))
                    })?,
            ),
        };
        if !q.committed_only {
            self.flush();
        }
        let conn = lock(&self.conn);
        let mut stmt = conn
            .prepare(
                "SELECT time, key_name, key_id, ip, transport, operation, target, result,
                        latency_ms, confirmed_by FROM audit
                 WHERE (?1 IS NULL OR time >= ?1) AND (?2 IS NULL OR key_name = ?2)
                   AND (?3 IS NULL OR operation = ?3) AND (?4 IS NULL OR result = ?4)
                 ORDER BY time DESC, id DESC LIMIT ?5",
            )
            .map_err(sql)?;
        let rows = stmt
            .query_map(
                params![since, q.key, q.operation, q.result, limit as i64],
                |r| {
                    Ok(Entry {
                        time: r.get(0)?,
                        key_name: r.get(1)?,
                        key_id: r.get(2)?,
                        ip: r.get(3)?,
                        transport: r.get(4)?,
                        operation: r.get(5)?,
                        target: r.get(6)?,
                        result: r.get(7)?,
                        latency_ms: r.get::<_, i64>(8)?.max(0) as u64,
                        confirmed_by: r.get(9)?,
                    })
                },
            )
            .map_err(sql)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(sql)
    }
}

impl Drop for AuditLog {
    fn drop(&mut self) {
        self.close();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `now` minus `days`, as ISO 8601 (never before 1970: nothing is that old).
fn cutoff(now: SystemTime, days: u32) -> String {
    let t = now
        .checked_sub(Duration::from_secs(u64::from(days) * 86_400))
        .filter(|t| *t >= SystemTime::UNIX_EPOCH)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    crate::time::iso8601(t)
}

fn prune_before(conn: &Connection, cutoff: &str) -> Result<usize, AuditError> {
    conn.execute("DELETE FROM audit WHERE time < ?1", params![cutoff])
        .map_err(sql)
}

/// The writer thread: batches, commits (then deletes all but the newest `keep` entries, if
/// given), prunes daily, ends when every sender is gone.
fn writer(conn: &Mutex<Connection>, rx: &Receiver<Msg>, retention_days: u32, keep: Option<u64>) {
    let mut last_prune = Instant::now();
    loop {
        let first = match rx.recv_timeout(Duration::from_secs(3600)) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => {
                daily_prune(conn, &mut last_prune, retention_days);
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => return,
        };
        let mut batch = Vec::new();
        let mut waiters = Vec::new();
        let mut open = true;
        let take = |m: Msg, batch: &mut Vec<Entry>, waiters: &mut Vec<Sender<()>>| match m {
            Msg::Entry(e) => batch.push(*e),
            Msg::Flush(w) => waiters.push(w),
        };
        take(first, &mut batch, &mut waiters);
        let deadline = Instant::now() + BATCH_WINDOW;
        while waiters.is_empty() && batch.len() < QUEUE_CAPACITY {
            match rx.recv_deadline(deadline) {
                Ok(m) => take(m, &mut batch, &mut waiters),
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => {
                    open = false;
                    break;
                }
            }
        }
        // Whatever is already queued joins this batch (bounded: a batch holds at most twice
        // the queue, so a stalled database cannot make the writer hoard memory).
        for _ in 0..QUEUE_CAPACITY {
            match rx.try_recv() {
                Ok(m) => take(m, &mut batch, &mut waiters),
                Err(_) => break,
            }
        }
        if let Err(e) = insert_batch(&mut lock(conn), &batch) {
            log::error!("audit log: {} entries lost: {e}", batch.len());
        }
        if let Some(keep) = keep {
            if let Err(e) = keep_newest(&lock(conn), keep) {
                log::warn!("audit log: trimming to {keep} entries failed: {e}");
            }
        }
        for w in waiters {
            let _ = w.send(());
        }
        daily_prune(conn, &mut last_prune, retention_days);
        if !open {
            return;
        }
    }
}

fn daily_prune(conn: &Mutex<Connection>, last: &mut Instant, retention_days: u32) {
    if last.elapsed() < Duration::from_secs(86_400) {
        return;
    }
    *last = Instant::now();
    match prune_before(&lock(conn), &cutoff(SystemTime::now(), retention_days)) {
        Ok(n) if n > 0 => log::info!("audit log: {n} entries older than {retention_days} days"),
        Ok(_) => {}
        Err(e) => log::warn!("audit log: pruning failed: {e}"),
    }
}

/// Deletes all but the newest `keep` entries (by insertion order: ids only grow); returns how
/// many.
fn keep_newest(conn: &Connection, keep: u64) -> Result<usize, AuditError> {
    conn.execute(
        "DELETE FROM audit WHERE id <= (SELECT MAX(id) FROM audit) - ?1",
        params![i64::try_from(keep).unwrap_or(i64::MAX)],
    )
    .map_err(sql)
}

fn insert_batch(conn: &mut Connection, batch: &[Entry]) -> Result<(), AuditError> {
    if batch.is_empty() {
        return Ok(());
    }
    let tx = conn.transaction().map_err(sql)?;
    {
        let mut stmt = tx
            .prepare_cached(
                "INSERT INTO audit (time, key_name, key_id, ip, transport, operation, target,
                                    result, latency_ms, confirmed_by)
                 VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)",
            )
            .map_err(sql)?;
        for e in batch {
            stmt.execute(params![
                e.time,
                e.key_name,
                e.key_id,
                e.ip,
                e.transport,
                e.operation,
                e.target,
                e.result,
                i64::try_from(e.latency_ms).unwrap_or(i64::MAX),
                e.confirmed_by
            ])
            .map_err(sql)?;
        }
    }
    tx.commit().map_err(sql)
}

/// Arguments whose string values name what a call acts on. Only these are recorded: secrets
/// (`code`, `pin`, `password`, ...) can never reach the log.
pub const TARGET_FIELDS: [&str; 9] = [
    "device",
    "device_id",
    "target",
    "devices",
    "room",
    "workflow",
    "name",
    "scene",
    "zone",
];

/// The target of a picture handed out (a tool that shows pictures, the dashboard's doorbell
/// picture): `"{camera}: {bytes} bytes"`, `camera` its label (`"Haustür (Außenbereich)"`);
/// which camera and how much of it left, never the picture.
pub fn picture_target(camera: &str, bytes: u64) -> String {
    format!("{camera}: {bytes} bytes")
}

/// The target summary of a call: the string values of [`TARGET_FIELDS`] (lists joined with
/// `, `), joined with `; `; empty when none. At most 200 characters.
pub fn target_of(arguments: &Map<String, Value>) -> String {
    let mut parts: Vec<String> = Vec::new();
    for field in TARGET_FIELDS {
        match arguments.get(field) {
            Some(Value::String(s)) if !s.trim().is_empty() => parts.push(s.trim().to_string()),
            Some(Value::Array(items)) => {
                let names: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
                if !names.is_empty() {
                    parts.push(names.join(", "));
                }
            }
            _ => {}
        }
    }
    let mut t = parts.join("; ");
    if t.chars().count() > 200 {
        t = t.chars().take(199).collect::<String>() + "…";
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(time: &str, key: &str, op: &str, result: &str) -> Entry {
        Entry {
            time: time.into(),
            key_name: key.into(),
            key_id: Some("homekey_operator_2_0011****".into()),
            ip: Some("127.0.0.1".into()),
            transport: "http".into(),
            operation: op.into(),
            target: "Kitchen Light".into(),
            result: result.into(),
            latency_ms: 3,
            confirmed_by: None,
        }
    }

    #[test]
    fn batches_flush_and_filters() {
        let log = AuditLog::in_memory(90);
        let now = crate::time::now_iso8601();
        for i in 0..50 {
            let result = if i % 10 == 0 {
                "DEVICE_NOT_FOUND"
            } else {
                "ok"
            };
            log.record(entry(
                &now,
                if i < 25 { "a" } else { "b" },
                "control_device",
                result,
            ));
        }
        log.record(entry("2020-01-01T00:00:00.000Z", "a", "key.create", "ok"));
        assert_eq!(log.query(&Query::default()).unwrap().len(), 51);
        assert_eq!(log.count().unwrap(), 51);
        let q = |q: Query| log.query(&q).unwrap();
        assert_eq!(
            q(Query {
                key: Some("b".into()),
                ..Query::default()
            })
            .len(),
            25
        );
        assert_eq!(
            q(Query {
                result: Some("DEVICE_NOT_FOUND".into()),
                ..Query::default()
            })
            .len(),
            5
        );
        assert_eq!(
            q(Query {
                operation: Some("key.create".into()),
                ..Query::default()
            })
            .len(),
            1
        );
        let recent = q(Query {
            since: Some("2021-01-01T00:00:00Z".into()),
            ..Query::default()
        });
        assert_eq!(recent.len(), 50);
        let newest = q(Query {
            limit: Some(2),
            ..Query::default()
        });
        assert_eq!(newest.len(), 2);
        assert_eq!(newest[0].time, now, "newest first");
        assert!(matches!(
            log.query(&Query {
                limit: Some(1001),
                ..Query::default()
            }),
            Err(AuditError::InvalidQuery(_))
        ));
        assert!(matches!(
            log.query(&Query {
                since: Some("yesterday".into()),
                ..Query::default()
            }),
            Err(AuditError::InvalidQuery(_))
        ));
    }

    /// Issue 28: `serve --demo` kept every entry in memory. An in-memory log keeps the newest
    /// ones: the oldest go first, the newest are all there, and the database stops growing.
    #[test]
    fn an_in_memory_log_keeps_only_the_newest_entries() {
        let now = crate::time::now_iso8601();
        let log = AuditLog::in_memory_keeping(90, 10);
        for i in 0..25 {
            log.record(entry(&now, &format!("k{i}"), "control_device", "ok"));
            if i % 7 == 0 {
                log.flush();
            }
        }
        log.flush();
        assert_eq!(log.count().unwrap(), 10);
        let names: Vec<String> = log
            .query(&Query::default())
            .unwrap()
            .into_iter()
            .map(|e| e.key_name)
            .collect();
        let newest: Vec<String> = (15..25).rev().map(|i| format!("k{i}")).collect();
        assert_eq!(names, newest, "the newest ten, newest first");

        // The bound `serve --demo` uses, and what it costs: the database's pages (which is
        // what SQLite holds in memory) stop growing once it is reached.
        let log = AuditLog::in_memory(90);
        let pages = |log: &AuditLog| -> i64 {
            let conn = lock(&log.conn);
            let count: i64 = conn
                .query_row("PRAGMA page_count", [], |r| r.get(0))
                .unwrap();
            let size: i64 = conn
                .query_row("PRAGMA page_size", [], |r| r.get(0))
                .unwrap();
            count * size
        };
        let fill = |log: &AuditLog, n: u64| {
            for i in 0..n {
                log.record(entry(&now, &format!("key {i}"), "control_device", "ok"));
                if i % 500 == 499 {
                    log.flush();
                }
            }
            log.flush();
        };
        fill(&log, MEMORY_MAX_ENTRIES);
        let full = pages(&log);
        assert_eq!(log.count().unwrap(), MEMORY_MAX_ENTRIES);
        fill(&log, MEMORY_MAX_ENTRIES);
        let after = pages(&log);
        println!(
            "{MEMORY_MAX_ENTRIES} entries: {full} bytes of pages; after as many again: {after}"
        );
        assert_eq!(log.count().unwrap(), MEMORY_MAX_ENTRIES);
        assert_eq!(
            log.dropped(),
            0,
            "flushed often enough that none was dropped"
        );
        // Freed pages are reused: a second fill may add a batch's worth, never a second log.
        assert!(after < full + full / 4, "{full} -> {after} bytes");
    }

    #[test]
    fn a_database_from_before_confirmed_by_gets_the_column() {
        let dir = std::env::temp_dir().join(format!("audit-migrate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("audit.db");
        let _ = std::fs::remove_file(&path);
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(
                "CREATE TABLE audit (id INTEGER PRIMARY KEY AUTOINCREMENT, time TEXT NOT NULL,
                 key_name TEXT NOT NULL, key_id TEXT, ip TEXT, transport TEXT NOT NULL,
                 operation TEXT NOT NULL, target TEXT NOT NULL, result TEXT NOT NULL,
                 latency_ms INTEGER NOT NULL);
                 INSERT INTO audit (time, key_name, transport, operation, target, result,
                 latency_ms) VALUES ('2099-01-01T00:00:00.000Z', 'old', 'http', 'disarm_alarm',
                 '', 'ok', 1);",
            )
            .unwrap();
        }
        let log = AuditLog::open(&path, 30).unwrap();
        let mut e = entry("2099-01-02T00:00:00.000Z", "new", "disarm_alarm", "ok");
        e.confirmed_by = Some("user (elicitation)".into());
        log.record(e);
        let rows = log.query(&Query::default()).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].confirmed_by.as_deref(), Some("user (elicitation)"));
        assert_eq!(rows[1].confirmed_by, None, "the old row has none");
        drop(log);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Records an entry of 2026-01-01 (key `old`) and one of 2026-03-01 (key `new`).
    fn old_and_new(log: &AuditLog) {
        for (time, key) in [
            ("2026-01-01T00:00:00.000Z", "old"),
            ("2026-03-01T00:00:00.000Z", "new"),
        ] {
            log.record(entry(time, key, "control_device", "ok"));
        }
    }

    #[test]
    fn drop_commits_the_queue_and_retention_prunes() {
        let dir = std::env::temp_dir().join(format!("audit-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("audit.db");
        let _ = std::fs::remove_file(&path);
        {
            let log = AuditLog::open(&path, 30).unwrap();
            old_and_new(&log);
            // dropped here without a flush: the writer commits on the way out
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let log = AuditLog::open(&path, 30).unwrap();
        assert_eq!(log.count().unwrap(), 0, "both older than 30 days at start");
        old_and_new(&log);
        log.flush();
        let now = humantime::parse_rfc3339("2026-03-15T00:00:00Z").unwrap();
        assert_eq!(log.prune(now).unwrap(), 1);
        let left = log.query(&Query::default()).unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].key_name, "new");
        drop(log);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn targets_never_carry_secrets() {
        let args = json!({"device": "Alarm", "code": "1234", "pin": "9", "password": "x",
                          "room": "Hall", "devices": ["A", "B"], "confirm": true});
        let t = target_of(args.as_object().unwrap());
        assert_eq!(t, "Alarm; A, B; Hall");
        assert!(!t.contains("1234"));
        assert_eq!(target_of(&Map::new()), "");
    }

    #[test]
    fn entries_mask_and_name_stdio() {
        let caller = Caller {
            key_name: "k".into(),
            key_id: Some("homekey_admin_1_00112233445566778899aabbccddeeff".into()),
            ip: Some("127.0.0.1".parse().unwrap()),
            access: None,
            ..Caller::default()
        };
        let e = Entry::new(
            Some(&caller),
            "http",
            "t",
            "",
            "ok",
            Duration::from_millis(5),
        );
        assert_eq!(e.key_id.as_deref(), Some("homekey_admin_1_0011****"));
        assert_eq!(e.latency_ms, 5);
        let e = Entry::new(None, "stdio", "t", "", "ok", Duration::ZERO);
        assert_eq!(e.key_name, STDIO_KEY_NAME);
    }

    #[test]
    fn a_full_queue_drops_and_counts() {
        let log = AuditLog::in_memory(90);
        // Hold the connection so the writer cannot commit; the queue fills up.
        let guard = lock(&log.conn);
        // The writer holds at most 2 x QUEUE_CAPACITY in its batch, the queue one more.
        for _ in 0..(QUEUE_CAPACITY * 4) {
            log.record(entry("2026-01-01T00:00:00.000Z", "a", "x", "ok"));
        }
        assert!(log.dropped() > 0);
        drop(guard);
    }
}

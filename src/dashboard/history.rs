//! The history store, the server's own record of the house: device state changes and sensor
//! values in SQLite (`<data_dir>/history.db`, mode 0600, so it survives restarts; in memory
//! for `--demo`, which writes nothing to disk). It is the house's [`Record`]: `home::history`
//! reads it for controls the Miniserver keeps no statistics of, and the dashboard shows it.
//!
//! What is recorded is [`HistoryConfig::states`]: by default each control's primary value and
//! every value of sensors, meters and alarms (`"primary"`), or every state (`"all"`), limited
//! to [`HistoryConfig::devices`] when given and never of [`HistoryConfig::skip`] (names,
//! room-qualified names or UUIDs, resolved again when the structure file changes).
//!
//! Rows are written by the recorder thread ([`History::spawn_recorder`]), which subscribes to
//! the house's change bus, classifies each change ([`classify`]) and queues it; the queue is
//! committed in one transaction every [`HistoryConfig::flush_every`] or once it holds
//! [`HistoryConfig::flush_rows`] rows, so an SD card sees a few writes a minute, not one per
//! event. Rows older than [`HistoryConfig::days`] are deleted at start and once a day.
//!
//! Queries ([`History::recent_changes`], [`History::history`]) see the queued rows too;
//! [`History::trends`] aggregates committed rows only (at most one flush interval behind).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rusqlite::{params, Connection};
use serde_json::{json, Value as Json};

use crate::home::house::Record;
use crate::home::statistic::Records;
use crate::home::{Change, Control, ControlKind, Family, Home, House, Value};

/// What a history row records; also the `type` of [`History::history`] queries (see
/// [`HistoryType`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A device's state changed (lights, blinds, audio, targets, ...).
    StateChange,
    /// A measured temperature (room controller actual value, temperature sensor), °C.
    Temperature,
    /// A meter's power reading (kW, as the Miniserver reports it).
    Energy,
    /// Another sensor (humidity, brightness, motion, door/window contact, ...).
    Sensor,
    /// An alarm or smoke alarm state.
    Alarm,
}

impl Kind {
    /// `state_change`, `temperature`, `energy`, `sensor`, `alarm` (the stored name).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::StateChange => "state_change",
            Kind::Temperature => "temperature",
            Kind::Energy => "energy",
            Kind::Sensor => "sensor",
            Kind::Alarm => "alarm",
        }
    }

    /// The spec §6 WebSocket message type of a change of this kind.
    pub fn ws_type(self) -> &'static str {
        match self {
            Kind::StateChange => "device_state_change",
            Kind::Temperature | Kind::Sensor => "sensor_update",
            Kind::Energy => "energy_update",
            Kind::Alarm => "alarm_event",
        }
    }
}

/// The `{type}` of `GET /dashboard/api/history/{type}`: which kinds of rows it returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryType {
    /// `temperature`: measured temperatures.
    Temperature,
    /// `energy`: meter readings.
    Energy,
    /// `state_changes`: device state changes and alarm states.
    StateChanges,
    /// `sensors`: every sensor reading (temperature, energy and other sensors).
    Sensors,
    /// `alarm`: alarm states only.
    Alarm,
    /// `all`: everything.
    All,
}

impl HistoryType {
    /// Every accepted name, for error messages.
    pub const NAMES: &'static [&'static str] = &[
        "temperature",
        "energy",
        "state_changes",
        "sensors",
        "alarm",
        "all",
    ];

    /// Parses a type name; `None` for an unknown one.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "temperature" => HistoryType::Temperature,
            "energy" => HistoryType::Energy,
            "state_changes" => HistoryType::StateChanges,
            "sensors" => HistoryType::Sensors,
            "alarm" => HistoryType::Alarm,
            "all" => HistoryType::All,
            _ => return None,
        })
    }

    fn kinds(self) -> &'static [Kind] {
        match self {
            HistoryType::Temperature => &[Kind::Temperature],
            HistoryType::Energy => &[Kind::Energy],
            HistoryType::StateChanges => &[Kind::StateChange, Kind::Alarm],
            HistoryType::Sensors => &[Kind::Temperature, Kind::Energy, Kind::Sensor],
            HistoryType::Alarm => &[Kind::Alarm],
            HistoryType::All => &[
                Kind::StateChange,
                Kind::Temperature,
                Kind::Energy,
                Kind::Sensor,
                Kind::Alarm,
            ],
        }
    }
}

/// The bucket size of [`History::trends`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    /// Hourly buckets over the last 24 hours.
    Hour,
    /// Daily buckets over the last 7 days (at most the retention).
    Day,
    /// Weekly buckets over the whole retention.
    Week,
}

impl Period {
    /// Parses `hour`, `day` or `week`; `None` otherwise.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "hour" => Period::Hour,
            "day" => Period::Day,
            "week" => Period::Week,
            _ => return None,
        })
    }

    /// `hour`, `day`, `week`.
    pub fn as_str(self) -> &'static str {
        match self {
            Period::Hour => "hour",
            Period::Day => "day",
            Period::Week => "week",
        }
    }

    /// Bucket length in milliseconds.
    pub fn bucket_ms(self) -> i64 {
        match self {
            Period::Hour => 3_600_000,
            Period::Day => 86_400_000,
            Period::Week => 7 * 86_400_000,
        }
    }

    /// How far back the trend reaches, in hours, given a retention of `days`.
    pub fn span_hours(self, days: u32) -> i64 {
        let max = 24 * i64::from(days.max(1));
        match self {
            Period::Hour => 24.min(max),
            Period::Day => (24 * 7).min(max),
            Period::Week => max,
        }
    }
}

/// One recorded change.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Milliseconds since the Unix epoch.
    pub at_ms: i64,
    pub kind: Kind,
    /// The control's UUID (for a sub-control, its own).
    pub uuid: String,
    /// The control's name and room name at the time.
    pub name: String,
    pub room: Option<String>,
    /// The state that changed: `value` for the control's primary value, else the state's
    /// name in the structure file (`tempTarget`, `level`, ...).
    pub state: String,
    /// The number, or `None` for a text value.
    pub value: Option<f64>,
    /// The text, for a text value.
    pub text: Option<String>,
}

impl Row {
    /// `{"at": ISO 8601 UTC, "at_ms", "kind", "uuid", "name", "room", "state", "value",
    /// "text"}`.
    pub fn to_json(&self) -> Json {
        let at = UNIX_EPOCH + Duration::from_millis(self.at_ms.max(0) as u64);
        json!({
            "at": crate::time::iso8601(at),
            "at_ms": self.at_ms,
            "kind": self.kind.as_str(),
            "uuid": self.uuid,
            "name": self.name,
            "room": self.room,
            "state": self.state,
            "value": self.value,
            "text": self.text,
        })
    }
}

/// Why the history store failed.
#[derive(Debug, Clone, PartialEq)]
pub enum HistoryError {
    /// The database file could not be created or opened, or is not a history database.
    Open { path: String, message: String },
    /// An SQLite statement failed.
    Sqlite(String),
}

impl fmt::Display for HistoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HistoryError::Open { path, message } => {
                write!(f, "cannot open the history store {path}: {message}")
            }
            HistoryError::Sqlite(m) => write!(f, "history store: {m}"),
        }
    }
}

impl std::error::Error for HistoryError {}

impl From<rusqlite::Error> for HistoryError {
    fn from(e: rusqlite::Error) -> Self {
        HistoryError::Sqlite(e.to_string())
    }
}

/// Which states the recorder keeps (`[dashboard] history_states`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RecordStates {
    /// `primary` (the default): each control's primary value, and every value of sensors,
    /// meters, room temperatures and alarms.
    #[default]
    Primary,
    /// `all`: every state of every control.
    All,
}

impl RecordStates {
    /// Parses `primary` or `all`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "primary" => Some(RecordStates::Primary),
            "all" => Some(RecordStates::All),
            _ => None,
        }
    }
}

/// Settings of the history store (`[dashboard]` in the config file).
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryConfig {
    /// Rows are kept this many days (`history_days`, default 7, 1-365).
    pub days: u32,
    /// Queued rows are committed at least this often (default 30 s).
    pub flush_every: Duration,
    /// ... or as soon as this many are queued (default 200).
    pub flush_rows: usize,
    /// Which states are recorded (`history_states`, default `primary`).
    pub states: RecordStates,
    /// Only these devices are recorded when not empty (`history_devices`: names,
    /// room-qualified names or UUIDs).
    pub devices: Vec<String>,
    /// These devices are never recorded (`history_skip`).
    pub skip: Vec<String>,
}

impl Default for HistoryConfig {
    fn default() -> Self {
        Self {
            days: 7,
            flush_every: Duration::from_secs(30),
            flush_rows: 200,
            states: RecordStates::Primary,
            devices: Vec::new(),
            skip: Vec::new(),
        }
    }
}

/// Which controls the recorder keeps, resolved from [`HistoryConfig::devices`] and
/// [`HistoryConfig::skip`] against one model.
#[derive(Debug, Default)]
struct Wanted {
    only: Option<std::collections::HashSet<String>>,
    skip: std::collections::HashSet<String>,
}

impl Wanted {
    fn new(home: &Home, config: &HistoryConfig) -> Self {
        let resolve = |names: &[String]| {
            names
                .iter()
                .filter_map(|n| match home.resolve_control(n, None, &|_| true) {
                    Ok(c) => Some(c.uuid.clone()),
                    Err(e) => {
                        log::warn!("history: {n:?} names no one device ({e}); left out");
                        None
                    }
                })
                .collect::<std::collections::HashSet<_>>()
        };
        Wanted {
            only: (!config.devices.is_empty()).then(|| resolve(&config.devices)),
            skip: resolve(&config.skip),
        }
    }

    /// Whether a classified change is kept under `states`.
    fn keeps(&self, c: &Classified<'_>, states: RecordStates) -> bool {
        let uuid = &c.control.uuid;
        if self.skip.contains(uuid) || self.only.as_ref().is_some_and(|o| !o.contains(uuid)) {
            return false;
        }
        match states {
            RecordStates::All => true,
            RecordStates::Primary => c.primary || c.kind != Kind::StateChange,
        }
    }
}

/// Rows returned by one query at most (newest first when cut).
pub const MAX_ROWS: usize = 5000;

/// The history store. Share as `Arc<History>`.
pub struct History {
    conn: Mutex<Connection>,
    path: Option<PathBuf>,
    config: HistoryConfig,
    pending: Mutex<Vec<Row>>,
    written: AtomicU64,
    stop: AtomicBool,
}

impl fmt::Debug for History {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("History")
            .field("path", &self.path)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn now_ms() -> i64 {
    ms_of(SystemTime::now())
}

fn ms_of(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS history (
        at_ms INTEGER NOT NULL,
        kind TEXT NOT NULL,
        uuid TEXT NOT NULL,
        name TEXT NOT NULL,
        room TEXT,
        state TEXT NOT NULL,
        value REAL,
        text TEXT
    );
    CREATE INDEX IF NOT EXISTS history_kind_at ON history (kind, at_ms);
    CREATE INDEX IF NOT EXISTS history_at ON history (at_ms);
    CREATE INDEX IF NOT EXISTS history_uuid_state_at ON history (uuid, state, at_ms);";

impl History {
    /// Opens (creating if needed, mode 0600 on Unix) the database at `path`; its directory
    /// must exist. Rows past the retention are deleted.
    pub fn open(path: &Path, config: HistoryConfig) -> Result<Self, HistoryError> {
        let open_err = |message: String| HistoryError::Open {
            path: path.display().to_string(),
            message,
        };
        crate::files::create_private(path).map_err(|e| open_err(e.to_string()))?;
        let conn = Connection::open(path).map_err(|e| open_err(e.to_string()))?;
        conn.busy_timeout(Duration::from_secs(5))
            .map_err(|e| open_err(e.to_string()))?;
        conn.execute_batch(SCHEMA)
            .map_err(|e| open_err(e.to_string()))?;
        let h = Self::with_conn(conn, Some(path.to_path_buf()), config);
        h.prune()?;
        Ok(h)
    }

    /// An empty store in memory (`--demo`, tests): nothing touches the disk.
    pub fn in_memory(config: HistoryConfig) -> Result<Self, HistoryError> {
        let conn = Connection::open_in_memory()?;
        conn.execute_batch(SCHEMA)?;
        Ok(Self::with_conn(conn, None, config))
    }

    fn with_conn(conn: Connection, path: Option<PathBuf>, config: HistoryConfig) -> Self {
        Self {
            conn: Mutex::new(conn),
            path,
            config,
            pending: Mutex::new(Vec::new()),
            written: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        }
    }

    /// The database file; `None` in memory.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The settings.
    pub fn config(&self) -> &HistoryConfig {
        &self.config
    }

    /// Rows committed since start.
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    /// Rows queued, not yet committed.
    pub fn pending(&self) -> usize {
        lock(&self.pending).len()
    }

    /// Queues `row` for the next commit.
    pub fn record(&self, row: Row) {
        lock(&self.pending).push(row);
    }

    /// Commits the queued rows in one transaction. On error the rows are dropped (logged by
    /// the caller), so a broken disk cannot grow the queue without bound.
    pub fn flush(&self) -> Result<usize, HistoryError> {
        let rows = std::mem::take(&mut *lock(&self.pending));
        if rows.is_empty() {
            return Ok(0);
        }
        let mut conn = lock(&self.conn);
        let tx = conn.transaction()?;
        {
            let mut stmt = tx.prepare_cached(
                "INSERT INTO history (at_ms, kind, uuid, name, room, state, value, text)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?;
            for r in &rows {
                stmt.execute(params![
                    r.at_ms,
                    r.kind.as_str(),
                    r.uuid,
                    r.name,
                    r.room,
                    r.state,
                    r.value,
                    r.text
                ])?;
            }
        }
        tx.commit()?;
        self.written.fetch_add(rows.len() as u64, Ordering::Relaxed);
        Ok(rows.len())
    }

    /// Deletes rows older than the retention; returns how many.
    pub fn prune(&self) -> Result<usize, HistoryError> {
        let cutoff = now_ms() - i64::from(self.config.days.max(1)) * 86_400_000;
        Ok(lock(&self.conn).execute("DELETE FROM history WHERE at_ms < ?1", [cutoff])?)
    }

    fn query(&self, kinds: &[Kind], since_ms: i64, limit: usize) -> Result<Vec<Row>, HistoryError> {
        let names: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
        let marks = vec!["?"; names.len()].join(",");
        let sql = format!(
            "SELECT at_ms, kind, uuid, name, room, state, value, text FROM history
             WHERE kind IN ({marks}) AND at_ms >= ? ORDER BY at_ms DESC, rowid DESC LIMIT ?"
        );
        let conn = lock(&self.conn);
        let mut stmt = conn.prepare_cached(&sql)?;
        let mut args: Vec<rusqlite::types::Value> = names
            .iter()
            .map(|n| rusqlite::types::Value::Text((*n).to_string()))
            .collect();
        args.push(rusqlite::types::Value::Integer(since_ms));
        args.push(rusqlite::types::Value::Integer(limit as i64));
        let rows = stmt.query_map(rusqlite::params_from_iter(args), |r| {
            let kind: String = r.get(1)?;
            Ok(Row {
                at_ms: r.get(0)?,
                kind: kind_of(&kind),
                uuid: r.get(2)?,
                name: r.get(3)?,
                room: r.get(4)?,
                state: r.get(5)?,
                value: r.get(6)?,
                text: r.get(7)?,
            })
        })?;
        let mut out = Vec::new();
        for r in rows {
            out.push(r?);
        }
        Ok(out)
    }

    /// Queued and committed rows of `kinds` since `since_ms`, newest first, at most `limit`.
    fn rows(&self, kinds: &[Kind], since_ms: i64, limit: usize) -> Result<Vec<Row>, HistoryError> {
        let mut out: Vec<Row> = lock(&self.pending)
            .iter()
            .rev()
            .filter(|r| kinds.contains(&r.kind) && r.at_ms >= since_ms)
            .take(limit)
            .cloned()
            .collect();
        if out.len() < limit {
            out.extend(self.query(kinds, since_ms, limit - out.len())?);
        }
        out.sort_by_key(|r| std::cmp::Reverse(r.at_ms));
        Ok(out)
    }

    /// The last `n` device state changes (kinds `state_change` and `alarm`), newest first.
    pub fn recent_changes(&self, n: usize) -> Result<Vec<Row>, HistoryError> {
        self.rows(HistoryType::StateChanges.kinds(), 0, n)
    }

    /// Rows of type `ty` from the last `hours` hours, oldest first, at most [`MAX_ROWS`] (the
    /// newest ones when cut).
    pub fn history(&self, ty: HistoryType, hours: i64) -> Result<Vec<Row>, HistoryError> {
        let since = now_ms() - hours.max(0) * 3_600_000;
        let mut rows = self.rows(ty.kinds(), since, MAX_ROWS)?;
        rows.reverse();
        Ok(rows)
    }

    /// Min/avg/max per `period` bucket of the numeric values of type `ty`, per device:
    /// `[{"uuid", "name", "room", "buckets": [{"start": ISO, "start_ms", "min", "avg", "max",
    /// "count"}]}]`, buckets oldest first. Committed rows only.
    pub fn trends(&self, ty: HistoryType, period: Period) -> Result<Vec<Json>, HistoryError> {
        let bucket = period.bucket_ms();
        let since = now_ms() - period.span_hours(self.config.days) * 3_600_000;
        let kinds = ty.kinds();
        let marks = vec!["?"; kinds.len()].join(",");
        let sql = format!(
            "SELECT uuid, MAX(name), MAX(room), (at_ms / ?) * ? AS b, MIN(value), AVG(value),
                    MAX(value), COUNT(*)
             FROM history WHERE kind IN ({marks}) AND at_ms >= ? AND value IS NOT NULL
             GROUP BY uuid, b ORDER BY uuid, b"
        );
        let mut args = vec![
            rusqlite::types::Value::Integer(bucket),
            rusqlite::types::Value::Integer(bucket),
        ];
        args.extend(
            kinds
                .iter()
                .map(|k| rusqlite::types::Value::Text(k.as_str().to_string())),
        );
        args.push(rusqlite::types::Value::Integer(since));
        let conn = lock(&self.conn);
        let mut stmt = conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(rusqlite::params_from_iter(args), |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, f64>(4)?,
                r.get::<_, f64>(5)?,
                r.get::<_, f64>(6)?,
                r.get::<_, i64>(7)?,
            ))
        })?;
        let mut series: Vec<Json> = Vec::new();
        for r in rows {
            let (uuid, name, room, b, min, avg, max, count) = r?;
            let start = UNIX_EPOCH + Duration::from_millis(b.max(0) as u64);
            let entry = json!({
                "start": crate::time::iso8601(start),
                "start_ms": b,
                "min": round2(min),
                "avg": round2(avg),
                "max": round2(max),
                "count": count,
            });
            match series.last_mut() {
                Some(s) if s["uuid"] == uuid.as_str() => {
                    if let Some(list) = s["buckets"].as_array_mut() {
                        list.push(entry);
                    }
                }
                _ => series.push(json!({
                    "uuid": uuid, "name": name, "room": room, "buckets": [entry],
                })),
            }
        }
        Ok(series)
    }

    /// Starts the recorder thread: it subscribes to `house`'s change bus, queues a row per
    /// classified change, commits per the flush settings and prunes daily. It ends (after a
    /// last commit) on [`History::stop`].
    pub fn spawn_recorder(
        self: &Arc<Self>,
        house: Arc<House>,
    ) -> std::io::Result<std::thread::JoinHandle<()>> {
        let sub = house.bus().subscribe(4096);
        let me = self.clone();
        std::thread::Builder::new()
            .name("dashboard-history".into())
            .spawn(move || {
                let mut last_flush = Instant::now();
                let mut last_prune = Instant::now();
                let tick = Duration::from_millis(200);
                // The devices to keep, resolved again whenever the model changes.
                let mut wanted: Option<(Arc<Home>, Wanted)> = None;
                while !me.stop.load(Ordering::Relaxed) && !sub.is_closed() {
                    if sub.take_lagged() {
                        log::warn!("history: lagged behind the change bus; some rows are missing");
                    }
                    if let Some(crate::home::Event::Change(c)) = sub.recv_timeout(tick) {
                        let home = house.home();
                        let current = match wanted.take() {
                            Some((model, w)) if Arc::ptr_eq(&model, &home) => (model, w),
                            _ => {
                                let w = Wanted::new(&home, &me.config);
                                (home.clone(), w)
                            }
                        };
                        if let Some(class) = classify(&home, &c) {
                            if current.1.keeps(&class, me.config.states) {
                                if let Some(row) = row_of(&home, &c) {
                                    me.record(row);
                                }
                            }
                        }
                        wanted = Some(current);
                    }
                    if me.pending() >= me.config.flush_rows
                        || last_flush.elapsed() >= me.config.flush_every
                    {
                        last_flush = Instant::now();
                        if let Err(e) = me.flush() {
                            log::warn!("history: commit failed, rows dropped: {e}");
                        }
                    }
                    if last_prune.elapsed() >= Duration::from_secs(86_400) {
                        last_prune = Instant::now();
                        match me.prune() {
                            Ok(n) if n > 0 => log::info!("history: pruned {n} old rows"),
                            Ok(_) => {}
                            Err(e) => log::warn!("history: prune failed: {e}"),
                        }
                    }
                }
                if let Err(e) = me.flush() {
                    log::warn!("history: last commit failed: {e}");
                }
            })
    }

    /// Asks the recorder to commit and end.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// What [`History::series`] answers: the last value before the range, the values in it
/// (Unix milliseconds, value), and whether more were cut.
pub type Series = (Option<(i64, f64)>, Vec<(i64, f64)>, bool);

impl History {
    /// Numeric values of `uuid`'s `state` in `[from_ms, to_ms)`, oldest first (queued rows
    /// included), at most `limit`; and the last value before `from_ms`.
    pub fn series(
        &self,
        uuid: &str,
        state: &str,
        from_ms: i64,
        to_ms: i64,
        limit: usize,
    ) -> Result<Series, HistoryError> {
        let conn = lock(&self.conn);
        let before: Option<(i64, f64)> = conn
            .prepare_cached(
                "SELECT at_ms, value FROM history WHERE uuid = ?1 AND state = ?2 AND at_ms < ?3
                 AND value IS NOT NULL ORDER BY at_ms DESC, rowid DESC LIMIT 1",
            )?
            .query_map(params![uuid, state, from_ms], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?
            .next()
            .transpose()?;
        let mut stmt = conn.prepare_cached(
            "SELECT at_ms, value FROM history WHERE uuid = ?1 AND state = ?2 AND at_ms >= ?3
             AND at_ms < ?4 AND value IS NOT NULL ORDER BY at_ms, rowid LIMIT ?5",
        )?;
        let rows = stmt.query_map(
            params![
                uuid,
                state,
                from_ms,
                to_ms,
                (limit as i64).saturating_add(1)
            ],
            |r| Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?)),
        )?;
        let mut out = Vec::new();
        for r in rows {
            out.push(r?);
        }
        drop(stmt);
        drop(conn);
        let mut before = before;
        for r in lock(&self.pending).iter() {
            if r.uuid != uuid || r.state != state {
                continue;
            }
            let Some(v) = r.value else { continue };
            if r.at_ms < from_ms {
                if before.is_none_or(|b| r.at_ms >= b.0) {
                    before = Some((r.at_ms, v));
                }
            } else if r.at_ms < to_ms {
                out.push((r.at_ms, v));
            }
        }
        out.sort_by_key(|x| x.0);
        let cut = out.len() > limit;
        out.truncate(limit);
        Ok((before, out, cut))
    }
}

impl Record for History {
    fn series(
        &self,
        control: &str,
        state: &str,
        from_ms: i64,
        to_ms: i64,
        limit: usize,
    ) -> Result<(Option<(i64, f64)>, Records), String> {
        let (before, rows, cut) = History::series(self, control, state, from_ms, to_ms, limit)
            .map_err(|e| e.to_string())?;
        let mut out = Records::empty(1);
        for (t, v) in rows {
            out.push(t, &[v]);
        }
        if cut {
            out.problems.push(format!(
                "more than {limit} recorded values in the range; the later ones are left out"
            ));
        }
        Ok((before, out))
    }

    fn first_recorded(&self, control: &str, state: Option<&str>) -> Result<Option<i64>, String> {
        let committed: Option<i64> = lock(&self.conn)
            .query_row(
                "SELECT MIN(at_ms) FROM history WHERE uuid = ?1 AND (?2 IS NULL OR state = ?2)",
                params![control, state],
                |r| r.get(0),
            )
            .map_err(|e| e.to_string())?;
        let queued = lock(&self.pending)
            .iter()
            .filter(|r| r.uuid == control && state.is_none_or(|s| r.state == s))
            .map(|r| r.at_ms)
            .min();
        Ok(match (committed, queued) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        })
    }

    fn retention_days(&self) -> u32 {
        self.config.days.max(1)
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn kind_of(s: &str) -> Kind {
    match s {
        "temperature" => Kind::Temperature,
        "energy" => Kind::Energy,
        "sensor" => Kind::Sensor,
        "alarm" => Kind::Alarm,
        _ => Kind::StateChange,
    }
}

/// What a change is about: the control, the state's name and the row kind.
#[derive(Debug, Clone, Copy)]
pub struct Classified<'h> {
    pub control: &'h Control,
    /// `value` for the primary value, else the state's name.
    pub state: &'h str,
    pub kind: Kind,
    /// Whether the state carries the control's primary value as it is (the value under the
    /// control's own id, or its [`crate::home::Primary::State`]), so `tools::view::state` can
    /// put it in words.
    pub primary: bool,
}

/// Classifies a change against the model; `None` for values no control owns (global
/// states).
pub fn classify<'h>(home: &'h Home, change: &Change) -> Option<Classified<'h>> {
    let control = change
        .control
        .as_deref()
        .and_then(|u| home.control(u))
        .or_else(|| home.control(&change.uuid))?;
    let state = if control.uuid == change.uuid {
        "value"
    } else {
        control
            .states
            .iter()
            .find(|(_, r)| match r {
                crate::home::StateRef::Uuid(u) => *u == change.uuid,
                crate::home::StateRef::Uuids(us) => us.contains(&change.uuid),
            })
            .map(|(name, _)| name.as_str())
            .unwrap_or("value")
    };
    let kind = match control.kind {
        ControlKind::Alarm | ControlKind::SmokeAlarm => Kind::Alarm,
        ControlKind::IRoomController | ControlKind::IRoomControllerV2 => {
            if matches!(state, "value" | "tempActual") {
                Kind::Temperature
            } else {
                Kind::StateChange
            }
        }
        ControlKind::Meter => Kind::Energy,
        _ => match crate::tools::summary::sensor_type(control) {
            Some("temperature") => Kind::Temperature,
            Some("meter") => Kind::Energy,
            Some(_) => Kind::Sensor,
            None if home.family(control) == Family::Energy => Kind::Energy,
            None => Kind::StateChange,
        },
    };
    Some(Classified {
        control,
        state,
        kind,
        // The value under the control's own id (reads, polling), or the one state that is its
        // primary value as pushed (home::Primary decides which, for every type).
        primary: control.uuid == change.uuid || crate::home::Primary::of(control).is_state(state),
    })
}

/// The history row of a change, or `None` for values no control owns.
pub fn row_of(home: &Home, change: &Change) -> Option<Row> {
    let c = classify(home, change)?;
    let (value, text) = match &change.value {
        Value::Number(n) => (Some(*n), None),
        Value::Text(t) => (None, Some(t.clone())),
    };
    Some(Row {
        at_ms: ms_of(change.at),
        kind: c.kind,
        uuid: c.control.uuid.clone(),
        name: c.control.name.clone(),
        room: crate::tools::view::room_of(home, c.control).map(str::to_string),
        state: c.state.to_string(),
        value,
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(kind: Kind, at_ms: i64, v: f64) -> Row {
        Row {
            at_ms,
            kind,
            uuid: "u1".into(),
            name: "Thermo".into(),
            room: Some("Kitchen".into()),
            state: "value".into(),
            value: Some(v),
            text: None,
        }
    }

    #[test]
    fn records_flushes_queries_and_aggregates() {
        let h = History::in_memory(HistoryConfig::default()).unwrap();
        let now = now_ms();
        h.record(row(Kind::Temperature, now - 1000, 20.0));
        h.record(row(Kind::Temperature, now - 500, 22.0));
        h.record(row(Kind::StateChange, now - 100, 1.0));
        // Queued rows are visible before the commit.
        assert_eq!(h.recent_changes(10).unwrap().len(), 1);
        assert_eq!(h.flush().unwrap(), 3);
        assert_eq!(h.pending(), 0);
        let t = h.history(HistoryType::Temperature, 1).unwrap();
        assert_eq!(t.len(), 2);
        assert!(t[0].at_ms <= t[1].at_ms, "oldest first");
        assert_eq!(h.history(HistoryType::All, 1).unwrap().len(), 3);
        let trends = h.trends(HistoryType::Temperature, Period::Hour).unwrap();
        assert_eq!(trends.len(), 1);
        let b = &trends[0]["buckets"];
        let total: i64 = b
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["count"].as_i64().unwrap())
            .sum();
        assert_eq!(total, 2);
        let all = b.as_array().unwrap();
        let min = all
            .iter()
            .map(|x| x["min"].as_f64().unwrap())
            .fold(f64::MAX, f64::min);
        assert_eq!(min, 20.0);
    }

    #[test]
    fn prunes_old_rows_and_parses_names() {
        let h = History::in_memory(HistoryConfig {
            days: 1,
            ..HistoryConfig::default()
        })
        .unwrap();
        h.record(row(Kind::Energy, now_ms() - 3 * 86_400_000, 1.0));
        h.record(row(Kind::Energy, now_ms(), 2.0));
        h.flush().unwrap();
        assert_eq!(h.prune().unwrap(), 1);
        assert!(HistoryType::parse("bogus").is_none());
        assert!(Period::parse("month").is_none());
        assert_eq!(Period::parse("week").unwrap().span_hours(7), 168);
        for n in HistoryType::NAMES {
            assert!(HistoryType::parse(n).is_some());
        }
    }

    #[test]
    fn file_is_private() {
        let dir = std::env::temp_dir().join(format!("hist-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("history.db");
        let _ = std::fs::remove_file(&path);
        let h = History::open(&path, HistoryConfig::default()).unwrap();
        h.record(row(Kind::Sensor, now_ms(), 3.0));
        h.flush().unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        drop(h);
        let h = History::open(&path, HistoryConfig::default()).unwrap();
        assert_eq!(h.history(HistoryType::Sensors, 1).unwrap().len(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

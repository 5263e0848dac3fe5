//! The workflow store: one SQLite database (rusqlite, SQLite compiled in), by default
//! `<data_dir>/workflows.db`, or in memory for `--demo` and tests.
//!
//! Layout: a `schema_version` table with one row, and `workflows` (id, unique name compared
//! case-insensitively, description, required permission, steps as JSON, creation time). Every
//! write runs in a transaction. On Unix the file is created with mode 0600 (owner only; SQLite
//! gives its journal the same mode). A file that is not a database, or one written by a newer
//! version, is a [`StoreError`] naming the file, never a panic.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use rusqlite::{params, Connection, OptionalExtension};

use super::{NewWorkflow, Step, Workflow, WorkflowKey};

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i64 = 1;

/// Why the store failed.
#[derive(Debug, Clone, PartialEq)]
pub enum StoreError {
    /// The file could not be opened, is not a SQLite database, or has an unknown layout.
    Open { path: String, message: String },
    /// A workflow with this name exists already.
    Duplicate(String),
    /// A query failed (disk full, file removed, ...).
    Sqlite(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Open { path, message } => {
                write!(f, "workflow store {path}: {message}")
            }
            StoreError::Duplicate(name) => write!(f, "a workflow named {name:?} exists already"),
            StoreError::Sqlite(m) => write!(f, "workflow store: {m}"),
        }
    }
}

impl std::error::Error for StoreError {}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError::Sqlite(e.to_string())
    }
}

/// The stored workflows; shared by every request (one connection behind a mutex: workflows
/// are written rarely and read in microseconds).
pub struct WorkflowStore {
    conn: Mutex<Connection>,
    /// `None` for an in-memory store.
    path: Option<PathBuf>,
}

impl fmt::Debug for WorkflowStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkflowStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl WorkflowStore {
    /// Opens (creating if needed) the database file at `path`; its directory must exist.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let open_err = |message: String| StoreError::Open {
            path: path.display().to_string(),
            message,
        };
        crate::files::create_private(path).map_err(|e| open_err(e.to_string()))?;
        let conn = Connection::open(path).map_err(|e| open_err(e.to_string()))?;
        let store = Self {
            conn: Mutex::new(conn),
            path: Some(path.to_path_buf()),
        };
        store.migrate().map_err(|e| {
            let message = match e {
                StoreError::Sqlite(m) if m.contains("not a database") => format!(
                    "{m}; the file is damaged or not a workflow store: move it away to start with an empty store"
                ),
                StoreError::Sqlite(m) | StoreError::Open { message: m, .. } => m,
                StoreError::Duplicate(m) => m,
            };
            open_err(message)
        })?;
        Ok(store)
    }

    /// An empty store in memory: nothing is written to disk, everything is gone at exit.
    pub fn in_memory() -> Self {
        let conn = Connection::open_in_memory().expect("SQLite opens an in-memory database");
        let store = Self {
            conn: Mutex::new(conn),
            path: None,
        };
        store
            .migrate()
            .expect("a fresh in-memory database takes the schema");
        store
    }

    /// The database file, `None` in memory.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Creates the tables of a new database, or checks the version of an existing one.
    fn migrate(&self) -> Result<(), StoreError> {
        let mut conn = self.conn();
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        let tx = conn.transaction()?;
        tx.execute_batch(
            "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
             CREATE TABLE IF NOT EXISTS workflows (
                 id INTEGER PRIMARY KEY AUTOINCREMENT,
                 name TEXT NOT NULL UNIQUE COLLATE NOCASE,
                 description TEXT,
                 permission TEXT NOT NULL,
                 steps TEXT NOT NULL,
                 created_at TEXT NOT NULL
             );",
        )?;
        let version: Option<i64> = tx
            .query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0))
            .optional()?
            .flatten();
        match version {
            None => {
                tx.execute(
                    "INSERT INTO schema_version (version) VALUES (?1)",
                    [SCHEMA_VERSION],
                )?;
            }
            Some(SCHEMA_VERSION) => {}
            Some(v) => {
                return Err(StoreError::Sqlite(format!(
                    "schema version {v} is not known to this build (it knows {SCHEMA_VERSION}); was it written by a newer home-mcp?"
                )))
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Stores a new workflow; [`StoreError::Duplicate`] if the name is taken (any case).
    pub fn create(&self, w: &NewWorkflow) -> Result<Workflow, StoreError> {
        let steps =
            serde_json::to_string(&w.steps).map_err(|e| StoreError::Sqlite(e.to_string()))?;
        let created_at = crate::time::now_iso8601();
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let taken: bool = tx
            .query_row(
                "SELECT COUNT(*) FROM workflows WHERE name = ?1",
                [&w.name],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n > 0)?;
        if taken {
            return Err(StoreError::Duplicate(w.name.clone()));
        }
        tx.execute(
            "INSERT INTO workflows (name, description, permission, steps, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![w.name, w.description, w.permission, steps, created_at],
        )?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok(Workflow {
            id,
            name: w.name.clone(),
            description: w.description.clone(),
            steps: w.steps.clone(),
            permission: w.permission.clone(),
            created_at,
        })
    }

    /// Every workflow, by name.
    pub fn list(&self) -> Result<Vec<Workflow>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT id, name, description, permission, steps, created_at FROM workflows ORDER BY name, id",
        )?;
        let rows = stmt.query_map([], row)?;
        rows.map(|r| r.map_err(StoreError::from).and_then(decode))
            .collect()
    }

    /// The workflow `key` names, if any.
    pub fn get(&self, key: &WorkflowKey) -> Result<Option<Workflow>, StoreError> {
        let conn = self.conn();
        get_in(&conn, key)
    }

    /// Deletes the workflow `key` names; returns it, or `None` if there was none.
    pub fn delete(&self, key: &WorkflowKey) -> Result<Option<Workflow>, StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let found = get_in(&tx, key)?;
        if let Some(w) = &found {
            tx.execute("DELETE FROM workflows WHERE id = ?1", [w.id])?;
        }
        tx.commit()?;
        Ok(found)
    }
}

type Row = (i64, String, Option<String>, String, String, String);

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
    ))
}

fn decode(
    (id, name, description, permission, steps, created_at): Row,
) -> Result<Workflow, StoreError> {
    let steps: Vec<Step> = serde_json::from_str(&steps)
        .map_err(|e| StoreError::Sqlite(format!("workflow {name:?} has unreadable steps: {e}")))?;
    Ok(Workflow {
        id,
        name,
        description,
        steps,
        permission,
        created_at,
    })
}

fn get_in(conn: &Connection, key: &WorkflowKey) -> Result<Option<Workflow>, StoreError> {
    const COLUMNS: &str =
        "SELECT id, name, description, permission, steps, created_at FROM workflows";
    let found = match key {
        WorkflowKey::Id(id) => conn
            .query_row(&format!("{COLUMNS} WHERE id = ?1"), [id], row)
            .optional()?,
        WorkflowKey::Name(n) => conn
            .query_row(&format!("{COLUMNS} WHERE name = ?1"), [n], row)
            .optional()?,
    };
    found.map(decode).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new(name: &str) -> NewWorkflow {
        NewWorkflow {
            name: name.into(),
            description: Some("d".into()),
            steps: vec![Step {
                tool: "list_rooms".into(),
                arguments: serde_json::Map::new(),
                delay_seconds: 0.5,
                parallel_group: Some(2),
            }],
            permission: "read".into(),
        }
    }

    #[test]
    fn create_get_list_delete() {
        let s = WorkflowStore::in_memory();
        let a = s.create(&new("Abend")).unwrap();
        let b = s.create(&new("Morgen")).unwrap();
        assert!(b.id > a.id);
        assert_eq!(
            s.create(&new("abend")),
            Err(StoreError::Duplicate("abend".into()))
        );
        assert_eq!(
            s.get(&WorkflowKey::Name("ABEND".into())).unwrap(),
            Some(a.clone())
        );
        assert_eq!(s.get(&WorkflowKey::Id(b.id)).unwrap(), Some(b.clone()));
        assert_eq!(s.list().unwrap(), vec![a.clone(), b.clone()]);
        assert_eq!(s.delete(&WorkflowKey::Id(a.id)).unwrap(), Some(a));
        assert_eq!(s.delete(&WorkflowKey::Id(a_id_gone())).unwrap(), None);
        assert_eq!(s.list().unwrap(), vec![b]);
    }

    fn a_id_gone() -> i64 {
        9999
    }
}

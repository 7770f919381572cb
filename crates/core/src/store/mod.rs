//! The crash-safe run store: runs, packets and an append-only event journal in SQLite (WAL),
//! kept in the common git directory so every worktree of the repository sees the same runs.
//!
//! Every state change goes through [`Store::record`], which appends the event and updates the
//! `runs`/`packets` projection in one transaction. Callers record an event *before* acting on
//! it, so after a crash the store says what was about to happen and a resume can redo it.
//! The `start` workflow's events and model turns live in the same database (`workflow.rs`);
//! this module is the only one that opens it.

mod eval;
mod event_kind;
mod events;
mod history;
pub mod memory;
mod projection;
mod questions;
mod records;
mod settings;
mod timings;
mod usage;
mod workflow;

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};

use orchestra_sys::exec::{now_ms, state_dir};
use projection::{apply, insert_event};

pub use event_kind::EventKind;
pub use events::{Event, RunOutcome, SeenCheck, SeenReview};
pub use history::PacketHistory;
pub use memory::Learning;
pub use records::{
    JournalEntry, NewPacket, NewRun, PacketRecord, PacketState, Phase, RunRecord, RunState,
};
pub use settings::KeptSettings;
pub use timings::{PhaseDurations, TimedPhase, phase_totals};
pub use usage::AgentUsage;
pub use workflow::{TurnRecord, UsageRow, WorkflowEntry};

/// The source text of the journal's events, whose doc comments the generated reference quotes.
pub const EVENTS_SOURCE: &str = include_str!("events.rs");

/// A failure of the run store, naming the database file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("run store {path}: {source}")]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("cannot create the run store directory {path}: {source}")]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("run store {path} holds a value it cannot read: {what}")]
    Corrupt { path: PathBuf, what: String },
    #[error("no run `{id}` in this repository; `git orchestra status` lists the runs")]
    UnknownRun { id: String },
}

/// Connections kept open, idle, to the stores this process opened last (at most
/// [`KEPT_STORES`]), so that closing a `Store` is never closing the last connection: SQLite
/// checkpoints the log into the database (four `fsync`s) and deletes it when the last one
/// closes, and a run opens its store some twenty times. [`release_kept_stores`] closes them.
///
/// A kept connection holds no lock but the log index's shared one: it never reads again. If
/// its database is moved or deleted meanwhile, SQLite neither checkpoints nor deletes at its
/// close (it checks that the file is still there).
static KEPT: Kept = Kept(std::sync::Mutex::new(Vec::new()));

/// How many stores' connections [`KEPT`] holds: one process rarely uses more than one.
const KEPT_STORES: usize = 4;

struct Kept(std::sync::Mutex<Vec<(PathBuf, Connection)>>);

impl Kept {
    fn keep(&self, path: &Path) {
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if kept.iter().any(|(p, _)| p == path) {
            return;
        }
        // One read maps the log index and takes its shared lock, which is what makes the
        // other connections' closes not the last. A failure only costs the checkpoints.
        let Ok(conn) = Connection::open(path) else {
            return;
        };
        if conn
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| {
                r.get::<_, i64>(0)
            })
            .is_err()
        {
            return;
        }
        kept.push((path.to_path_buf(), conn));
        if kept.len() > KEPT_STORES {
            kept.remove(0);
        }
    }

    fn release(&self) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }
}

/// Closes the connections this process kept open (see [`KEPT`] and [`POOL`]), the last of
/// each store checkpointing its log; called as the program ends.
pub fn release_kept_stores() {
    let pooled = std::mem::take(&mut *POOL.lock().unwrap_or_else(|p| p.into_inner()));
    close(pooled);
    KEPT.release();
}

/// Connections a closed `Store` left for the next `Store::open` of the same database, so that
/// a process opens each store once rather than at every use: opening is a file open, a read
/// of the schema and its statements, and the schema's own statements run again (a run's some
/// twenty opens spent about 4 ms of CPU so). Each is kept with the identity (device, inode) of
/// the file it opened, and handed out only while the path still names that file: a connection
/// keeps its file open, so no other file at the path can have its inode. Closed by
/// [`release_kept_stores`].
static POOL: std::sync::Mutex<Vec<Pooled>> = std::sync::Mutex::new(Vec::new());

/// How many idle connections [`POOL`] holds in all: as many as a process uses at once.
const POOLED: usize = 8;

/// A store's connection, returned to [`POOL`] when its `Store` is dropped.
struct Pooled {
    conn: std::mem::ManuallyDrop<Connection>,
    path: PathBuf,
    file: (u64, u64),
    /// False for a connection to close rather than hand back when dropped.
    back: bool,
}

impl Pooled {
    /// Takes an idle connection to the database at `path` from the pool, if one still opens
    /// the file the path names.
    fn take(path: &Path) -> Option<Pooled> {
        let file = file_identity(path)?;
        let mut pool = POOL.lock().unwrap_or_else(|p| p.into_inner());
        let at = pool.iter().position(|c| c.path == path && c.file == file)?;
        Some(pool.swap_remove(at))
    }
}

impl std::ops::Deref for Pooled {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.conn
    }
}

impl std::ops::DerefMut for Pooled {
    fn deref_mut(&mut self) -> &mut Connection {
        &mut self.conn
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        // A connection left inside a transaction (a panic between its statements) is closed,
        // which rolls the transaction back.
        // SAFETY: taken once, here, as the value is dropped; never used after.
        let conn = unsafe { std::mem::ManuallyDrop::take(&mut self.conn) };
        if !self.back || !conn.is_autocommit() {
            return;
        }
        let idle = Pooled {
            conn: std::mem::ManuallyDrop::new(conn),
            path: std::mem::take(&mut self.path),
            file: self.file,
            back: true,
        };
        // A full pool gives up the connections whose file is gone, else its oldest; they
        // close once the pool is unlocked, not handed back.
        let evicted = {
            let mut pool = POOL.lock().unwrap_or_else(|p| p.into_inner());
            let mut evicted = Vec::new();
            if pool.len() >= POOLED {
                let (live, stale): (Vec<_>, Vec<_>) = std::mem::take(&mut *pool)
                    .into_iter()
                    .partition(|c| file_identity(&c.path) == Some(c.file));
                *pool = live;
                evicted = stale;
                if pool.len() >= POOLED {
                    evicted.push(pool.remove(0));
                }
            }
            pool.push(idle);
            evicted
        };
        close(evicted);
    }
}

/// Closes `conns` instead of handing them back to the pool.
fn close(mut conns: Vec<Pooled>) {
    for c in &mut conns {
        c.back = false;
    }
    drop(conns);
}

/// Returns the device and inode of the file at `path`.
fn file_identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// An open run store.
pub struct Store {
    conn: Pooled,
    path: PathBuf,
}

impl Store {
    /// Opens (creating if needed) the store of the repository whose common git dir is given.
    pub fn open(common_dir: &Path) -> Result<Store, StoreError> {
        let dir = state_dir(common_dir);
        let path = dir.join("orchestra.db");
        if let Some(conn) = Pooled::take(&path) {
            return Ok(Store { conn, path });
        }
        fs_err::create_dir_all(&dir).map_err(|source| StoreError::CreateDir {
            path: dir.clone(),
            source,
        })?;
        let conn = Connection::open(&path).map_err(sqlite_error(&path))?;
        // Read while the connection holds the file open: the identity cannot be reused.
        let file = file_identity(&path).unwrap_or_default();
        let conn = Pooled {
            conn: std::mem::ManuallyDrop::new(conn),
            path: path.clone(),
            file,
            back: true,
        };
        let store = Store { conn, path };
        store.init()?;
        KEPT.keep(&store.path);
        Ok(store)
    }

    /// Opens the store only if one exists, so read-only commands create nothing.
    pub fn open_existing(common_dir: &Path) -> Result<Option<Store>, StoreError> {
        if state_dir(common_dir).join("orchestra.db").exists() {
            Store::open(common_dir).map(Some)
        } else {
            Ok(None)
        }
    }

    fn init(&self) -> Result<(), StoreError> {
        // WAL keeps readers (status --watch) from blocking the writer; NORMAL synchronous is
        // durable against process crashes, which is what resume relies on.
        self.conn
            .busy_timeout(std::time::Duration::from_secs(10))
            .map_err(|e| self.err(e))?;
        self.conn
            .execute_batch(
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;",
            )
            .map_err(|e| self.err(e))?;
        self.migrate()?;
        self.conn
            .execute_batch(include_str!("schema.sql"))
            .map_err(|e| self.err(e))
    }

    /// Moves a store made by an earlier version forward, once: its engine events get their
    /// journal column, and a `start` run's workflow events (once a table of their own) join
    /// them in the one journal, in their order, with their times. Old runs stay readable.
    fn migrate(&self) -> Result<(), StoreError> {
        let has_table = |name: &str| -> Result<bool, StoreError> {
            self.conn
                .query_row(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
                    [name],
                    |r| r.get::<_, i64>(0),
                )
                .map(|n| n > 0)
                .map_err(|e| self.err(e))
        };
        let needs_column = |store: &Store| -> Result<bool, StoreError> {
            let n: i64 = store
                .conn
                .query_row(
                    "SELECT count(*) FROM pragma_table_info('events') WHERE name = 'journal'",
                    [],
                    |r| r.get(0),
                )
                .map_err(|e| store.err(e))?;
            Ok(n == 0 && has_table("events")?)
        };
        if !needs_column(self)? && !has_table("workflow_events")? {
            return Ok(());
        }
        // Another process may be moving the same store forward: one at a time, checked again.
        self.conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(|e| self.err(e))?;
        let moved = (|| {
            if needs_column(self)? {
                self.conn
                    .execute_batch(
                        "ALTER TABLE events ADD COLUMN journal TEXT NOT NULL DEFAULT 'engine'",
                    )
                    .map_err(|e| self.err(e))?;
            }
            if has_table("workflow_events")? {
                self.conn
                    .execute_batch(include_str!("schema.sql"))
                    .and_then(|()| {
                        self.conn.execute_batch(
                            "INSERT INTO events (run_id, packet_id, ts_ms, type, payload, journal)
                               SELECT run_id, NULL, ts_ms, type, payload, 'workflow'
                               FROM workflow_events ORDER BY seq;
                             DROP TABLE workflow_events;",
                        )
                    })
                    .map_err(|e| self.err(e))?;
            }
            Ok(())
        })();
        let end = if moved.is_ok() { "COMMIT" } else { "ROLLBACK" };
        self.conn.execute_batch(end).map_err(|e| self.err(e))?;
        moved
    }

    fn err(&self, source: rusqlite::Error) -> StoreError {
        sqlite_error(&self.path)(source)
    }

    /// Returns the database file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Creates the run and its packets unless a run with that id exists; returns true if and
    /// only if it was created. The `RunCreated` event is journaled in the same transaction.
    pub fn create_run(&mut self, run: &NewRun) -> Result<bool, StoreError> {
        let now = now_ms();
        let err = sqlite_error(&self.path);
        let tx = self.conn.transaction().map_err(err)?;
        let inserted = tx
            .execute(
                "INSERT OR IGNORE INTO runs (id, objective, base, plan_toml, plan_path, worker_cmd,
                 max_parallel, timeout_secs, worktree_root, state, pid, created_ms, updated_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 'created', NULL, ?10, ?10)",
                params![
                    run.id,
                    run.objective,
                    run.base,
                    run.plan_toml,
                    run.plan_path,
                    run.worker_cmd,
                    run.max_parallel as i64,
                    run.timeout_secs as i64,
                    run.worktree_root,
                    now
                ],
            )
            .map_err(err)?;
        if inserted == 0 {
            return Ok(false);
        }
        for (idx, p) in run.packets.iter().enumerate() {
            tx.execute(
                "INSERT INTO packets (run_id, id, idx, title, role, state, branch, worktree, updated_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6, ?7, ?8)",
                params![run.id, p.id, idx as i64, p.title, p.role, p.branch, p.worktree, now],
            )
            .map_err(err)?;
        }
        let event = Event::RunCreated {
            objective: run.objective.clone(),
            base: run.base.clone(),
            packets: run.packets.len(),
        };
        insert_event(&tx, &run.id, &event, now).map_err(err)?;
        tx.commit().map_err(err)?;
        Ok(true)
    }

    /// Appends `event` to the run's journal and applies it to the projection, atomically.
    /// Returns the event's sequence number.
    pub fn record(&mut self, run: &str, event: &Event) -> Result<i64, StoreError> {
        let now = now_ms();
        let err = sqlite_error(&self.path);
        let tx = self.conn.transaction().map_err(err)?;
        let seq = insert_event(&tx, run, event, now).map_err(err)?;
        apply(&tx, run, event, now).map_err(err)?;
        tx.commit().map_err(err)?;
        Ok(seq)
    }

    /// Returns the run with this id, if any.
    pub fn run(&self, id: &str) -> Result<Option<RunRecord>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!("{RUN_SELECT} WHERE id = ?1"))
            .map_err(|e| self.err(e))?;
        let row = stmt
            .query_row([id], read_run_row)
            .optional()
            .map_err(|e| self.err(e))?;
        row.map(|r| r.into_record(&self.path)).transpose()
    }

    /// Returns the run with this id, or an error naming it.
    pub fn require_run(&self, id: &str) -> Result<RunRecord, StoreError> {
        self.run(id)?
            .ok_or_else(|| StoreError::UnknownRun { id: id.to_string() })
    }

    /// Returns every run, newest first.
    pub fn runs(&self) -> Result<Vec<RunRecord>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!("{RUN_SELECT} ORDER BY created_ms DESC, id"))
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], read_run_row)
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
        rows.into_iter()
            .map(|r| r.into_record(&self.path))
            .collect()
    }

    /// Returns the run's packets in plan order.
    pub fn packets(&self, run: &str) -> Result<Vec<PacketRecord>, StoreError> {
        self.select_packets("WHERE run_id = ?1 ORDER BY idx", params![run])
    }

    /// Returns one packet of the run, `None` when the run has no packet `id`.
    pub fn packet(&self, run: &str, id: &str) -> Result<Option<PacketRecord>, StoreError> {
        Ok(self
            .select_packets("WHERE run_id = ?1 AND id = ?2", params![run, id])?
            .pop())
    }

    /// Returns the packets the clause `filter` (with its parameters) selects.
    fn select_packets(
        &self,
        filter: &str,
        args: impl rusqlite::Params,
    ) -> Result<Vec<PacketRecord>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT id, idx, title, role, state, phase, branch, worktree, attempt, commit_id,
                 reason, pgid, removed, backup, updated_ms, start_commit FROM packets {filter}"
            ))
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(args, |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, Option<String>>(5)?,
                    r.get::<_, String>(6)?,
                    r.get::<_, String>(7)?,
                    r.get::<_, i64>(8)?,
                    r.get::<_, Option<String>>(9)?,
                    r.get::<_, Option<String>>(10)?,
                    r.get::<_, Option<i64>>(11)?,
                    r.get::<_, i64>(12)?,
                    r.get::<_, Option<String>>(13)?,
                    r.get::<_, i64>(14)?,
                    r.get::<_, Option<String>>(15)?,
                ))
            })
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
        rows.into_iter()
            .map(|r| {
                let state = PacketState::parse(&r.4).ok_or_else(|| StoreError::Corrupt {
                    path: self.path.clone(),
                    what: format!("packet state `{}`", r.4),
                })?;
                let phase = match r.5.as_deref() {
                    None => None,
                    Some(p) => Some(Phase::parse(p).ok_or_else(|| StoreError::Corrupt {
                        path: self.path.clone(),
                        what: format!("packet phase `{p}`"),
                    })?),
                };
                Ok(PacketRecord {
                    id: r.0,
                    index: r.1 as usize,
                    title: r.2,
                    role: r.3,
                    state,
                    phase,
                    branch: r.6,
                    worktree: r.7,
                    attempt: r.8 as u32,
                    start: r.15,
                    commit: r.9,
                    reason: r.10,
                    pgid: r.11.map(|g| g as i32),
                    removed: r.12 != 0,
                    backup: r.13,
                    updated_ms: r.14,
                    timings: PhaseDurations::new(),
                })
            })
            .collect()
    }

    /// Returns the run's journal entries with a sequence number above `after`, oldest first.
    pub fn events(&self, run: &str, after: i64) -> Result<Vec<JournalEntry>, StoreError> {
        self.entries(
            "SELECT seq, ts_ms, payload FROM events
             WHERE run_id = ?1 AND seq > ?2 AND journal = 'engine' ORDER BY seq",
            params![run, after],
        )
    }

    /// Returns the run's journal entries of kind `kind`, oldest first.
    pub fn events_of_kind(
        &self,
        run: &str,
        kind: EventKind,
    ) -> Result<Vec<JournalEntry>, StoreError> {
        self.events_of_kinds(run, &[kind])
    }

    /// Returns the run's journal entries of any of the types `kinds`, oldest first: only those
    /// payloads are read and decoded.
    pub fn events_of_kinds(
        &self,
        run: &str,
        kinds: &[EventKind],
    ) -> Result<Vec<JournalEntry>, StoreError> {
        let sql = kinds_sql(kinds.len());
        self.entries(
            &sql,
            rusqlite::params_from_iter(
                std::iter::once(run).chain(kinds.iter().map(|k| k.as_str())),
            ),
        )
    }

    fn entries(
        &self,
        sql: &str,
        values: impl rusqlite::Params,
    ) -> Result<Vec<JournalEntry>, StoreError> {
        let rows = self.payload_rows(sql, values, "event")?;
        Ok(rows
            .into_iter()
            .map(|(seq, ts_ms, event)| JournalEntry { seq, ts_ms, event })
            .collect())
    }

    /// Returns the `(seq, ts_ms, payload)` rows `sql` selects with each JSON payload decoded;
    /// a payload that does not decode is named as `what` and its sequence number.
    fn payload_rows<T: serde::de::DeserializeOwned>(
        &self,
        sql: &str,
        values: impl rusqlite::Params,
        what: &str,
    ) -> Result<Vec<(i64, i64, T)>, StoreError> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(values, |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
        rows.into_iter()
            .map(|(seq, ts_ms, payload)| {
                let value = serde_json::from_str(&payload).map_err(|e| StoreError::Corrupt {
                    path: self.path.clone(),
                    what: format!("{what} {seq}: {e}"),
                })?;
                Ok((seq, ts_ms, value))
            })
            .collect()
    }
}

/// Returns the conversion of a SQLite failure into the store's error naming the file at `path`.
fn sqlite_error(path: &Path) -> impl Fn(rusqlite::Error) -> StoreError + Copy + '_ {
    move |source| StoreError::Sqlite {
        path: path.to_path_buf(),
        source,
    }
}

const RUN_SELECT: &str =
    "SELECT id, objective, base, plan_toml, plan_path, worker_cmd, max_parallel,
    timeout_secs, worktree_root, state, pid, created_ms, updated_ms FROM runs";

struct RunRow(
    String,
    String,
    String,
    String,
    String,
    Option<String>,
    i64,
    i64,
    String,
    String,
    Option<i64>,
    i64,
    i64,
);

fn read_run_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunRow> {
    Ok(RunRow(
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
        r.get(7)?,
        r.get(8)?,
        r.get(9)?,
        r.get(10)?,
        r.get(11)?,
        r.get(12)?,
    ))
}

impl RunRow {
    fn into_record(self, path: &Path) -> Result<RunRecord, StoreError> {
        let state = RunState::parse(&self.9).ok_or_else(|| StoreError::Corrupt {
            path: path.to_path_buf(),
            what: format!("run state `{}`", self.9),
        })?;
        Ok(RunRecord {
            id: self.0,
            objective: self.1,
            base: self.2,
            plan_toml: self.3,
            plan_path: self.4,
            worker_cmd: self.5,
            max_parallel: self.6.max(1) as usize,
            timeout_secs: self.7.max(0) as u64,
            worktree_root: self.8,
            state,
            pid: self.10.map(|p| p as u32),
            created_ms: self.11,
            updated_ms: self.12,
        })
    }
}

/// Returns the query of [`Store::events_of_kinds`] for `n` kinds (`?1` the run, `?2`… the kinds).
fn kinds_sql(n: usize) -> String {
    journal_kinds_after_sql("engine", n, false)
}

/// Returns the query of the events in `journal` of one id (`?1`) of any of `n` kinds (`?2`…),
/// after a sequence number (`?{n + 2}`) when `after` is true, oldest first.
pub(crate) fn journal_kinds_after_sql(journal: &str, n: usize, after: bool) -> String {
    let slots: Vec<String> = (0..n).map(|i| format!("?{}", i + 2)).collect();
    let after = if after {
        format!(" AND seq > ?{}", n + 2)
    } else {
        String::new()
    };
    // By kind, not by the run's order: SQLite would rather read every event of the run in
    // order than sort the few of these kinds, a cost per read that grows with the run.
    format!(
        "SELECT seq, ts_ms, payload FROM events INDEXED BY events_by_kind
         WHERE run_id = ?1 AND journal = '{journal}' AND type IN ({}){after} ORDER BY seq",
        slots.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kept connection makes a store's other closes not the last: the log stays (no
    /// checkpoint, no four `fsync`s) until the kept one is released, and what was written is
    /// read back either way.
    #[test]
    fn a_kept_connection_spares_each_close_its_checkpoint() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("s.db");
        let wal = tmp.path().join("s.db-wal");
        let write = |n: i64| {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE IF NOT EXISTS t (n)")
                .unwrap();
            conn.execute("INSERT INTO t VALUES (?1)", [n]).unwrap();
        };
        write(1);
        assert!(
            !wal.exists(),
            "the last close checkpoints and deletes the log"
        );
        let kept = Kept(std::sync::Mutex::new(Vec::new()));
        kept.keep(&path);
        write(2);
        write(3);
        assert!(wal.exists(), "with one kept, a close is not the last");
        kept.release();
        assert!(!wal.exists(), "releasing the kept one checkpoints");
        let conn = Connection::open(&path).unwrap();
        let sum: i64 = conn
            .query_row("SELECT sum(n) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(sum, 6);
    }

    /// A store opened again by the same process gets the connection it closed while the path
    /// still names the same file, and a connection of its own to a file put in its place.
    #[test]
    fn a_store_opened_again_reuses_its_connection_while_its_file_is_the_same() {
        let tmp = tempfile::tempdir().unwrap();
        let common = tmp.path();
        // A temporary table lives in its connection only.
        let mine = |s: &Store| {
            s.conn
                .query_row(
                    "SELECT count(*) FROM temp.sqlite_master WHERE name = 'mine'",
                    [],
                    |r| r.get::<_, i64>(0),
                )
                .unwrap()
        };
        let store = Store::open(common).unwrap();
        store
            .conn
            .execute_batch("CREATE TEMP TABLE mine (n)")
            .unwrap();
        drop(store);
        let again = Store::open(common).unwrap();
        assert_eq!(mine(&again), 1, "the connection it closed");
        drop(again);
        let dir = state_dir(common);
        for file in ["orchestra.db", "orchestra.db-wal", "orchestra.db-shm"] {
            let _ = std::fs::remove_file(dir.join(file));
        }
        let mut fresh = Store::open(common).unwrap();
        assert_eq!(mine(&fresh), 0, "a connection of its own");
        fresh.create_run(&new_run("r1")).unwrap();
        drop(fresh);
        let conn = Connection::open(dir.join("orchestra.db")).unwrap();
        let runs: i64 = conn
            .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
            .unwrap();
        assert_eq!(runs, 1, "written to the file now at the path");
    }

    fn new_run(id: &str) -> NewRun {
        NewRun {
            id: id.into(),
            objective: "obj".into(),
            base: "abc".into(),
            plan_toml: "objective = \"obj\"".into(),
            plan_path: "plan.toml".into(),
            worker_cmd: Some("true".into()),
            max_parallel: 2,
            timeout_secs: 60,
            worktree_root: "/tmp/wt".into(),
            packets: vec![
                NewPacket {
                    id: "a".into(),
                    title: "A".into(),
                    role: "coder".into(),
                    branch: "orchestra/r/a".into(),
                    worktree: "/tmp/wt/r/a".into(),
                },
                NewPacket {
                    id: "b".into(),
                    title: "B".into(),
                    role: "coder".into(),
                    branch: "orchestra/r/b".into(),
                    worktree: "/tmp/wt/r/b".into(),
                },
            ],
        }
    }

    /// Reading a run's events of some kinds used to walk all of the run's events (its index
    /// was by run and sequence only), a cost per packet that grew with the run.
    #[test]
    fn events_of_some_kinds_are_found_by_their_kind_not_by_reading_the_whole_run() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        for n in [1, 3] {
            let mut stmt = store
                .conn
                .prepare(&format!("EXPLAIN QUERY PLAN {}", kinds_sql(n)))
                .unwrap();
            let plan: Vec<String> = stmt
                .query_map(
                    rusqlite::params_from_iter(std::iter::repeat_n("x", n + 1)),
                    |r| r.get::<_, String>(3),
                )
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            assert!(
                plan.iter()
                    .any(|l| l.contains("INDEX events_by_kind (run_id=? AND type=?)")),
                "{n} kinds: {plan:?}"
            );
        }
    }

    #[test]
    fn a_packet_under_review_is_in_its_review_phase() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        store.create_run(&new_run("r")).unwrap();
        let events = [
            Event::PacketStarted {
                packet: "a".into(),
                branch: "orchestra/r/a".into(),
                worktree: "/tmp/wt/r/a".into(),
                start: "abc".into(),
                attempt: 1,
            },
            Event::PacketCommitted {
                packet: "a".into(),
                commit: "def".into(),
                changed: vec!["a.txt".into()],
            },
        ];
        for e in &events {
            store.record("r", e).unwrap();
        }
        let phase = |store: &Store| store.packets("r").unwrap()[0].phase;
        assert_eq!(phase(&store), Some(Phase::Validate));
        let review = Event::ReviewStarted {
            packet: "a".into(),
            commit: "def".into(),
            reviewer: "reviewer:m".into(),
            round: 0,
        };
        store.record("r", &review).unwrap();
        assert_eq!(phase(&store), Some(Phase::Review));
        assert_eq!(Phase::parse(Phase::Review.as_str()), Some(Phase::Review));
    }

    #[test]
    fn create_is_idempotent_and_events_project_states() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        assert!(store.create_run(&new_run("r")).unwrap());
        assert!(!store.create_run(&new_run("r")).unwrap());
        assert_eq!(store.packets("r").unwrap().len(), 2);

        store
            .record(
                "r",
                &Event::RunStarted {
                    pid: 42,
                    resumed: false,
                },
            )
            .unwrap();
        let run = store.require_run("r").unwrap();
        assert_eq!((run.state, run.pid), (RunState::Running, Some(42)));

        let started = Event::PacketStarted {
            packet: "a".into(),
            branch: "orchestra/r/a".into(),
            worktree: "/tmp/wt/r/a".into(),
            start: "abc".into(),
            attempt: 1,
        };
        store.record("r", &started).unwrap();
        store
            .record(
                "r",
                &Event::WorktreeReady {
                    packet: "a".into(),
                    how: "fresh".into(),
                },
            )
            .unwrap();
        store
            .record(
                "r",
                &Event::WorkerSpawned {
                    packet: "a".into(),
                    pgid: 777,
                },
            )
            .unwrap();
        let a = &store.packets("r").unwrap()[0];
        assert_eq!(
            (a.state, a.phase, a.pgid),
            (PacketState::Running, Some(Phase::Worker), Some(777))
        );

        store
            .record(
                "r",
                &Event::WorkerFinished {
                    packet: "a".into(),
                    exit_code: Some(0),
                    duration_ms: 5,
                    timed_out: false,
                    tail: String::new(),
                },
            )
            .unwrap();
        assert_eq!(store.packets("r").unwrap()[0].phase, Some(Phase::Commit));
        store
            .record(
                "r",
                &Event::PacketSucceeded {
                    packet: "a".into(),
                    commit: "c0ffee".into(),
                },
            )
            .unwrap();
        store
            .record(
                "r",
                &Event::PacketFailed {
                    packet: "b".into(),
                    reason: "boom".into(),
                },
            )
            .unwrap();
        let ps = store.packets("r").unwrap();
        assert_eq!(ps[0].state, PacketState::Succeeded);
        assert_eq!(ps[0].commit.as_deref(), Some("c0ffee"));
        assert_eq!(
            (ps[1].state, ps[1].reason.as_deref()),
            (PacketState::Failed, Some("boom"))
        );

        store
            .record(
                "r",
                &Event::RunFinished {
                    outcome: RunOutcome::Failed,
                },
            )
            .unwrap();
        assert_eq!(store.require_run("r").unwrap().state, RunState::Failed);

        let journal = store.events("r", 0).unwrap();
        assert_eq!(journal.first().unwrap().event.kind(), "run_created");
        assert_eq!(
            journal.last().unwrap().event,
            Event::RunFinished {
                outcome: RunOutcome::Failed
            }
        );
        assert!(journal.windows(2).all(|w| w[0].seq < w[1].seq));
        let later = store.events("r", journal[3].seq).unwrap();
        assert_eq!(later.len(), journal.len() - 4);
    }

    #[test]
    fn cancel_marks_unfinished_packets() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        store.create_run(&new_run("r")).unwrap();
        store
            .record(
                "r",
                &Event::PacketSucceeded {
                    packet: "a".into(),
                    commit: "c".into(),
                },
            )
            .unwrap();
        store.record("r", &Event::RunCancelled).unwrap();
        let ps = store.packets("r").unwrap();
        assert_eq!(ps[0].state, PacketState::Succeeded);
        assert_eq!(ps[1].state, PacketState::Cancelled);
        assert!(store.require_run("r").unwrap().state.is_finished());
        assert!(matches!(
            store.require_run("zz"),
            Err(StoreError::UnknownRun { .. })
        ));
    }

    #[test]
    fn open_existing_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Store::open_existing(dir.path()).unwrap().is_none());
        assert!(!state_dir(dir.path()).exists());
    }
}

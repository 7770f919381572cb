//! The blob cache: facts per (blob id, facts version) in one SQLite database shared by every
//! worktree of the repository.
//!
//! Keying by blob id is what makes a new worktree's index free: its files are the same blobs
//! as the main worktree's, so nothing is parsed again. The database lives in the common git
//! directory (`<common-dir>/orchestra/nav.db`) in WAL mode, so several worktrees can read while
//! one writes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use super::NavError;
use super::facts::{FileFacts, Ref};
use super::lang::Lang;

/// The facts of one blob encoded for the cache: everything but references, and references.
pub struct Encoded {
    oid: String,
    version: u64,
    lang: &'static str,
    data: Vec<u8>,
    refs: Vec<u8>,
}

impl Encoded {
    /// Encodes the facts (whose `refs` are left out) and the references of blob `oid`.
    pub fn new(
        oid: &str,
        lang: Lang,
        facts: &FileFacts,
        refs: &[Ref],
    ) -> Result<Encoded, NavError> {
        let encode = |e: postcard::Error| NavError::Encode {
            oid: oid.to_string(),
            message: e.to_string(),
        };
        Ok(Encoded {
            oid: oid.to_string(),
            version: lang.version(),
            lang: lang.name(),
            data: postcard::to_stdvec(facts).map_err(encode)?,
            refs: postcard::to_stdvec(refs).map_err(encode)?,
        })
    }
}

/// Reads of the database go through a memory map of (up to 256 MiB of) it: a row spread
/// over many overflow pages (a view snapshot's, a large file's references) is then copied
/// out of the page cache rather than read one page per system call.
const MMAP: &str = "PRAGMA mmap_size = 268435456;";

/// A view snapshot as stored: its name table, encoded by `snapshot`.
pub struct Stored {
    pub names: Vec<u8>,
}

/// Reads the facts (references apart) of single blobs from the cache, from any thread.
pub struct FactsReader {
    path: PathBuf,
    conn: Mutex<Option<Connection>>,
}

impl FactsReader {
    /// Returns the facts (without references) of blob `oid` at facts version `version`, or
    /// `None` when the cache does not hold them.
    pub fn get(&self, oid: &str, version: u64) -> Result<Option<FileFacts>, NavError> {
        let err = |source| NavError::Cache {
            path: self.path.clone(),
            source,
        };
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        if conn.is_none() {
            let c = Connection::open_with_flags(&self.path, OpenFlags::SQLITE_OPEN_READ_ONLY)
                .map_err(err)?;
            c.busy_timeout(std::time::Duration::from_secs(10))
                .map_err(err)?;
            c.execute_batch(MMAP).map_err(err)?;
            *conn = Some(c);
        }
        let Some(conn) = conn.as_ref() else {
            return Ok(None);
        };
        let mut stmt = conn
            .prepare_cached("SELECT data FROM blob_facts WHERE oid = ?1 AND version = ?2")
            .map_err(err)?;
        let data: Option<Vec<u8>> = stmt
            .query_row(params![oid, version as i64], |row| row.get(0))
            .optional()
            .map_err(err)?;
        Ok(data.and_then(|d| postcard::from_bytes(&d).ok()))
    }
}

/// An open blob cache.
pub struct Cache {
    conn: Connection,
    path: PathBuf,
}

impl Cache {
    /// Opens (creating when missing) the cache database at `path`.
    pub fn open(path: &Path) -> Result<Cache, NavError> {
        let err = |source: rusqlite::Error| NavError::Cache {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent() {
            fs_err::create_dir_all(dir).map_err(|source| NavError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let conn = Connection::open(path).map_err(err)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(err)?;
        conn.execute_batch(MMAP).map_err(err)?;
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = NORMAL;
             CREATE TABLE IF NOT EXISTS blob_facts (
                 oid TEXT NOT NULL,
                 version INTEGER NOT NULL,
                 lang TEXT NOT NULL,
                 data BLOB NOT NULL,
                 refs BLOB NOT NULL,
                 PRIMARY KEY (oid, version)
             ) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS view_snapshots (
                 key INTEGER PRIMARY KEY,
                 written INTEGER NOT NULL,
                 files INTEGER NOT NULL,
                 ends BLOB NOT NULL,
                 names BLOB NOT NULL,
                 data BLOB NOT NULL
             );",
        )
        .map_err(err)?;
        Ok(Cache {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// Returns the database path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, source: rusqlite::Error) -> NavError {
        NavError::Cache {
            path: self.path.clone(),
            source,
        }
    }

    /// Returns the references of one cached blob (stored apart from the other facts, so that
    /// opening an index does not pay for them), or `None` when absent.
    pub fn get_refs(&self, oid: &str, version: u64) -> Result<Option<Vec<Ref>>, NavError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT refs FROM blob_facts WHERE oid = ?1 AND version = ?2")
            .map_err(|e| self.err(e))?;
        let data: Option<Vec<u8>> = stmt
            .query_row(params![oid, version as i64], |row| row.get(0))
            .optional()
            .map_err(|e| self.err(e))?;
        Ok(data.and_then(|d| postcard::from_bytes(&d).ok()))
    }

    /// Returns the cached facts (without references) of every key found; missing keys are
    /// simply absent.
    pub fn get_many(&self, keys: &[(String, u64)]) -> Result<HashMap<String, FileFacts>, NavError> {
        let mut rows: Vec<(&String, Vec<u8>)> = Vec::with_capacity(keys.len());
        let mut stmt = self
            .conn
            .prepare_cached("SELECT data FROM blob_facts WHERE oid = ?1 AND version = ?2")
            .map_err(|e| self.err(e))?;
        for (oid, version) in keys {
            let data: Option<Vec<u8>> = stmt
                .query_row(params![oid, *version as i64], |row| row.get(0))
                .optional()
                .map_err(|e| self.err(e))?;
            if let Some(data) = data {
                rows.push((oid, data));
            }
        }
        // Decoding costs more than reading: spread it over the cores when there is much.
        // An undecodable row is treated as missing and re-parsed (then overwritten).
        let decode = |part: &[(&String, Vec<u8>)]| -> Vec<(String, FileFacts)> {
            part.iter()
                .filter_map(|(oid, d)| postcard::from_bytes(d).ok().map(|f| ((*oid).clone(), f)))
                .collect()
        };
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        if rows.len() < 64 || threads < 2 {
            return Ok(decode(&rows).into_iter().collect());
        }
        let chunk = rows.len().div_ceil(threads);
        Ok(std::thread::scope(|s| {
            let handles: Vec<_> = rows
                .chunks(chunk)
                .map(|part| s.spawn(move || decode(part)))
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_default())
                .collect()
        }))
    }

    /// Stores the encoded facts of many blobs in one transaction, as they arrive; returns
    /// once `rows` ends.
    pub fn put_stream(&mut self, rows: impl Iterator<Item = Encoded>) -> Result<(), NavError> {
        let path = self.path.clone();
        let err = |source| NavError::Cache {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(err)?;
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO blob_facts (oid, version, lang, data, refs) VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(err)?;
            for row in rows {
                stmt.execute(params![
                    row.oid,
                    row.version as i64,
                    row.lang,
                    row.data,
                    row.refs
                ])
                .map_err(err)?;
            }
        }
        tx.commit().map_err(err)
    }

    /// Returns the snapshot of the view with key `key` holding `files` files, or `None`.
    pub fn get_snapshot(&self, key: i64, files: usize) -> Result<Option<Stored>, NavError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT names FROM view_snapshots WHERE key = ?1 AND files = ?2")
            .map_err(|e| self.err(e))?;
        stmt.query_row(params![key, files as i64], |row| {
            Ok(Stored { names: row.get(0)? })
        })
        .optional()
        .map_err(|e| self.err(e))
    }

    /// Returns a reader of blobs' facts for files opened from a view snapshot, with a
    /// connection of its own (opened on first use), so that facts can be read wherever they
    /// are first needed.
    pub fn facts_reader(&self) -> FactsReader {
        FactsReader {
            path: self.path.clone(),
            conn: Mutex::new(None),
        }
    }

    /// Returns true if and only if a snapshot of the view with key `key` is stored.
    pub fn has_snapshot(&self, key: i64) -> Result<bool, NavError> {
        self.conn
            .query_row(
                "SELECT 1 FROM view_snapshots WHERE key = ?1",
                params![key],
                |_| Ok(()),
            )
            .optional()
            .map(|r| r.is_some())
            .map_err(|e| self.err(e))
    }

    /// Stores the snapshot of a view of `files` files, keeping only the most recent few. (The
    /// `ends` and `data` columns, the files' facts in an earlier format, are left empty: facts
    /// are read from the blob rows.)
    pub fn put_snapshot(
        &mut self,
        key: i64,
        files: usize,
        stored: &Stored,
    ) -> Result<(), NavError> {
        const KEEP: i64 = 4;
        let path = self.path.clone();
        let err = |source| NavError::Cache {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(err)?;
        let written: i64 = tx
            .query_row(
                "SELECT COALESCE(MAX(written), 0) + 1 FROM view_snapshots",
                [],
                |r| r.get(0),
            )
            .map_err(err)?;
        tx.execute(
            "INSERT OR REPLACE INTO view_snapshots (key, written, files, ends, names, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![key, written, files as i64, &[] as &[u8], stored.names, &[] as &[u8]],
        )
        .map_err(err)?;
        tx.execute(
            "DELETE FROM view_snapshots WHERE written <= ?1",
            params![written - KEEP],
        )
        .map_err(err)?;
        tx.commit().map_err(err)
    }

    /// Returns how many blobs the cache holds.
    pub fn len(&self) -> Result<u64, NavError> {
        self.conn
            .query_row("SELECT COUNT(*) FROM blob_facts", [], |r| {
                r.get::<_, i64>(0)
            })
            .map(|n| n as u64)
            .map_err(|e| self.err(e))
    }

    /// Returns true if and only if the cache holds no blobs.
    pub fn is_empty(&self) -> Result<bool, NavError> {
        Ok(self.len()? == 0)
    }
}

//! What agents learned (the `learnings` of their `complete`), kept in the run store across runs
//! so the planners and agents of later runs start from it: deduplicated by text, attributed to
//! the run and packet that learned it, bounded, and forgettable (`git orchestra memory`).
//!
//! Learnings are agent output, so they are not trusted: they wait as pending until their
//! packet lands (its `PacketSucceeded` event moves them over; a failure or a merge that sends
//! the packet back drops them) and are capped per packet and per run so one agent cannot flood
//! out what others learned. The agent layer redacts credentials before they are held and again
//! when they are read into a prompt, and prompts quote them framed as untrusted notes (see
//! `agent::untrusted`).

use rusqlite::params;
use serde::Serialize;

use super::{Store, StoreError};
use orchestra_sys::exec::now_ms;

/// Most learnings kept; the oldest go first.
pub const MAX_LEARNINGS: usize = 200;
/// Most characters of one learning.
pub const LEARNING_CHARS: usize = 300;
/// Most learnings kept of one packet (the first it gave).
pub const PACKET_LEARNINGS: usize = 10;
/// Most learnings kept of one run.
pub const RUN_LEARNINGS: usize = 40;

/// One learning as kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Learning {
    pub id: i64,
    pub text: String,
    pub run: String,
    pub packet: String,
    pub created_ms: i64,
}

/// Returns `text` as a learning is kept: whitespace collapsed, at most [`LEARNING_CHARS`]
/// characters. (Credentials are redacted by the caller, which has the secret scanner.)
fn cleaned(text: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    orchestra_sys::redact::clip(text.trim(), LEARNING_CHARS)
}

impl Store {
    /// Keeps `text` as learned by `packet` of `run` (a packet that landed), unless the same
    /// text is kept already; returns true if and only if it was new. Blank text is ignored.
    pub fn add_learning(&self, run: &str, packet: &str, text: &str) -> Result<bool, StoreError> {
        let text = cleaned(text);
        if text.is_empty() {
            return Ok(false);
        }
        let added = self
            .conn
            .execute(
                "INSERT OR IGNORE INTO learnings (text, run_id, packet_id, created_ms) VALUES (?1, ?2, ?3, ?4)",
                params![text, run, packet, now_ms()],
            )
            .map_err(|e| self.err(e))?;
        evict(&self.conn).map_err(|e| self.err(e))?;
        Ok(added > 0)
    }

    /// Holds `texts`, what an agent of `packet` in `run` learned, until the packet lands:
    /// its `PacketSucceeded` keeps them, its failure drops them. Keeps at most
    /// [`PACKET_LEARNINGS`] per packet (the first given); returns how many were new.
    pub fn propose_learnings(
        &self,
        run: &str,
        packet: &str,
        texts: &[String],
    ) -> Result<usize, StoreError> {
        let held: i64 = self
            .conn
            .query_row(
                "SELECT COUNT(*) FROM pending_learnings WHERE run_id = ?1 AND packet_id = ?2",
                params![run, packet],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))?;
        let mut room = PACKET_LEARNINGS.saturating_sub(usize::try_from(held).unwrap_or(0));
        let mut added = 0;
        for text in texts.iter().map(|t| cleaned(t)) {
            if room == 0 {
                break;
            }
            if text.is_empty() {
                continue;
            }
            let n = self
                .conn
                .execute(
                    "INSERT OR IGNORE INTO pending_learnings (text, run_id, packet_id, created_ms) VALUES (?1, ?2, ?3, ?4)",
                    params![text, run, packet, now_ms()],
                )
                .map_err(|e| self.err(e))?;
            room -= n;
            added += n;
        }
        Ok(added)
    }

    /// Returns up to `limit` learnings, newest first.
    pub fn learnings(&self, limit: usize) -> Result<Vec<Learning>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, text, run_id, packet_id, created_ms FROM learnings ORDER BY id DESC LIMIT ?1",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![limit as i64], |r| {
                Ok(Learning {
                    id: r.get(0)?,
                    text: r.get(1)?,
                    run: r.get(2)?,
                    packet: r.get(3)?,
                    created_ms: r.get(4)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    /// Forgets the learnings with these ids (all of them when `ids` is empty); returns how many
    /// were forgotten.
    pub fn forget_learnings(&self, ids: &[i64]) -> Result<usize, StoreError> {
        if ids.is_empty() {
            return self
                .conn
                .execute("DELETE FROM learnings", [])
                .map_err(|e| self.err(e));
        }
        let mut n = 0;
        for id in ids {
            n += self
                .conn
                .execute("DELETE FROM learnings WHERE id = ?1", params![id])
                .map_err(|e| self.err(e))?;
        }
        Ok(n)
    }
}

/// Moves what `packet` of `run` learned from pending to kept, now that it landed: at most
/// [`PACKET_LEARNINGS`] of it, and only while the run has kept fewer than [`RUN_LEARNINGS`].
pub(super) fn land(tx: &rusqlite::Connection, run: &str, packet: &str) -> rusqlite::Result<()> {
    let kept: i64 = tx.query_row(
        "SELECT COUNT(*) FROM learnings WHERE run_id = ?1",
        params![run],
        |r| r.get(0),
    )?;
    let room = RUN_LEARNINGS
        .saturating_sub(usize::try_from(kept).unwrap_or(0))
        .min(PACKET_LEARNINGS);
    tx.execute(
        "INSERT OR IGNORE INTO learnings (text, run_id, packet_id, created_ms)
         SELECT text, run_id, packet_id, created_ms FROM pending_learnings
         WHERE run_id = ?1 AND packet_id = ?2 ORDER BY id LIMIT ?3",
        params![run, packet, room as i64],
    )?;
    tx.execute(
        "DELETE FROM pending_learnings WHERE run_id = ?1 AND packet_id = ?2",
        params![run, packet],
    )?;
    evict(tx)
}

/// Drops what `packet` of `run` learned, pending or kept: the packet failed, or the merge
/// sent its work back.
pub(super) fn discard(tx: &rusqlite::Connection, run: &str, packet: &str) -> rusqlite::Result<()> {
    for table in ["pending_learnings", "learnings"] {
        tx.execute(
            &format!("DELETE FROM {table} WHERE run_id = ?1 AND packet_id = ?2"),
            params![run, packet],
        )?;
    }
    Ok(())
}

/// Forgets the oldest learnings beyond [`MAX_LEARNINGS`].
fn evict(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    conn.execute(
        "DELETE FROM learnings WHERE id NOT IN (SELECT id FROM learnings ORDER BY id DESC LIMIT ?1)",
        params![MAX_LEARNINGS as i64],
    )?;
    Ok(())
}

/// Returns `learnings` as a bounded list for a prompt: one line each, newest first, at most
/// `chars` characters in all.
pub fn prompt_lines(learnings: &[Learning], chars: usize) -> String {
    let mut out = String::new();
    for l in learnings {
        let line = format!("- {}\n", l.text);
        if out.len() + line.len() > chars {
            break;
        }
        out.push_str(&line);
    }
    out
}

/// Returns up to `limit` learnings kept in the store of the repository whose common git
/// directory is `common_dir`, as [`Store::learnings`] does.
pub fn learnings_in(
    common_dir: &std::path::Path,
    limit: usize,
) -> Result<Vec<Learning>, StoreError> {
    Store::open(common_dir)?.learnings(limit)
}

/// Forgets the learnings with these ids (all when empty) in the store of the repository whose
/// common git directory is `common_dir`; returns how many were forgotten.
pub fn forget_in(common_dir: &std::path::Path, ids: &[i64]) -> Result<usize, StoreError> {
    Store::open(common_dir)?.forget_learnings(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learnings_are_kept_once_newest_first_bounded_and_forgotten_on_request() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        assert!(
            store
                .add_learning("r1", "p1", "the tests need  the fixture")
                .unwrap()
        );
        assert!(
            !store
                .add_learning("r2", "p9", "the tests need the fixture")
                .unwrap()
        );
        assert!(!store.add_learning("r2", "p9", "   ").unwrap());
        assert!(store.add_learning("r2", "p2", "parse() is hot").unwrap());
        let all = store.learnings(10).unwrap();
        let texts: Vec<&str> = all.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(texts, ["parse() is hot", "the tests need the fixture"]);
        assert_eq!((all[1].run.as_str(), all[1].packet.as_str()), ("r1", "p1"));
        assert_eq!(prompt_lines(&all, 20), "- parse() is hot\n");
        for i in 0..MAX_LEARNINGS + 5 {
            store.add_learning("r", "p", &format!("fact {i}")).unwrap();
        }
        assert_eq!(store.learnings(1_000).unwrap().len(), MAX_LEARNINGS);
        let newest = store.learnings(1).unwrap()[0].id;
        assert_eq!(store.forget_learnings(&[newest]).unwrap(), 1);
        assert_eq!(store.forget_learnings(&[]).unwrap(), MAX_LEARNINGS - 1);
        assert!(store.learnings(10).unwrap().is_empty());
    }

    #[test]
    fn pending_learnings_are_kept_when_their_packet_lands_and_dropped_when_it_fails() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store.add_learning("r0", "p0", "an earlier fact").unwrap();
        let flood: Vec<String> = (0..220).map(|i| format!("flood {i}")).collect();
        let mut given = vec!["the first note".to_string()];
        given.extend(flood);
        assert_eq!(
            store.propose_learnings("r1", "p1", &given).unwrap(),
            PACKET_LEARNINGS
        );
        store
            .propose_learnings("r1", "p2", &["failed work's note".to_string()])
            .unwrap();
        // Nothing is told before the packet lands.
        assert_eq!(store.learnings(1_000).unwrap().len(), 1);
        land(&store.conn, "r1", "p1").unwrap();
        discard(&store.conn, "r1", "p2").unwrap();
        land(&store.conn, "r1", "p2").unwrap();
        let texts: Vec<String> = store
            .learnings(1_000)
            .unwrap()
            .into_iter()
            .map(|l| l.text)
            .collect();
        assert_eq!(texts.len(), PACKET_LEARNINGS + 1, "{texts:?}");
        assert!(texts.contains(&"an earlier fact".to_string()));
        assert!(!texts.iter().any(|t| t.contains("failed")));
        assert!(texts.contains(&"the first note".to_string()));
    }
}

//! What agents learned (the `learnings` of their `complete`), kept in the run store across runs
//! so the planners and agents of later runs start from it: deduplicated by text, attributed to
//! the run and packet that learned it, bounded, and forgettable (`git orchestra memory`).

use rusqlite::params;
use serde::Serialize;

use super::{Store, StoreError};
use crate::exec::now_ms;

/// Most learnings kept; the oldest go first.
pub const MAX_LEARNINGS: usize = 200;
/// Most characters of one learning.
pub const LEARNING_CHARS: usize = 300;

/// One learning as kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Learning {
    pub id: i64,
    pub text: String,
    pub run: String,
    pub packet: String,
    pub created_ms: i64,
}

impl Store {
    /// Keeps `text` as learned by `packet` of `run`, unless the same text is kept already;
    /// returns true if and only if it was new. Blank text is ignored.
    pub fn add_learning(&self, run: &str, packet: &str, text: &str) -> Result<bool, StoreError> {
        let text = crate::redact::clip(
            text.split_whitespace().collect::<Vec<_>>().join(" ").trim(),
            LEARNING_CHARS,
        );
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
        self.conn
            .execute(
                "DELETE FROM learnings WHERE id NOT IN (SELECT id FROM learnings ORDER BY id DESC LIMIT ?1)",
                params![MAX_LEARNINGS as i64],
            )
            .map_err(|e| self.err(e))?;
        Ok(added > 0)
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
}

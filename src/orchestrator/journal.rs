//! The workflow journal of `start` runs: workflow events and finished model turns, appended to
//! the run store's SQLite database (its own tables) before they are acted on.
//!
//! The journal exists before the engine's run does — planning happens before there is a plan
//! to create the run from — so it is keyed by the run id alone (objective + base), which is
//! known from the first moment. Finished model turns are kept by a hash of their request so a
//! resumed run replays them instead of asking the model again.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::workflow::{IllegalTransition, Workflow, WorkflowState};
use crate::exec::now_ms;
use crate::llm::Usage;

/// A failure of the workflow journal, naming the database file.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("workflow journal {path}: {source}")]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("cannot create {path}: {source}")]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("workflow journal {path} holds an entry it cannot read: {what}")]
    Corrupt { path: PathBuf, what: String },
    #[error(transparent)]
    Illegal(#[from] IllegalTransition),
}

/// How the clarifier's phase ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClarifyOutcome {
    /// Nothing ambiguous.
    Clear,
    /// The user answered the clarifier's questions.
    Clarified,
    /// Nobody could answer; the clarifier's assumptions stand and are reported.
    Assumptions,
    /// Clarification was turned off (`--no-clarify`).
    Skipped,
}

/// What the run was started with; kept so a resume behaves like the first start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartSettings {
    pub yes: bool,
    pub merge: bool,
    pub clarify: bool,
    pub worker_cmd: Option<String>,
    pub max_parallel: Option<usize>,
    #[serde(default)]
    pub budget: super::budget::Budget,
    /// After integrating, the docs role documents the change on the target branch.
    #[serde(default)]
    pub docs: bool,
    /// After integrating (and documenting), the tester role tests the change.
    #[serde(default)]
    pub tests: bool,
    /// Once completed, one pull request per succeeded packet (`start --pr`); kept so that a
    /// run killed before or while publishing publishes on resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publish: Option<PublishSettings>,
}

/// Where a completed run's pull requests go.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PublishSettings {
    /// Only Markdown files in the run's state directory; nothing is pushed.
    pub local: bool,
    /// The remote to push to (default: `orchestra.forge.remote`, else `origin`).
    pub remote: Option<String>,
    /// The branch the stacks target (default: the current branch).
    pub target: Option<String>,
}

/// One published pull request, as journaled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublishedPr {
    pub packet: String,
    /// The pull request's address on the forge, or the local file written.
    pub location: String,
}

/// One durable fact about a `start` run's workflow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WorkflowEvent {
    /// The run was started on `base` (a commit id).
    Started {
        objective: String,
        base: String,
        settings: StartSettings,
    },
    /// The workflow moved from one state to another.
    Transition {
        from: WorkflowState,
        to: WorkflowState,
        reason: String,
    },
    /// A transition was asked for and refused as illegal; nothing changed.
    Rejected {
        from: WorkflowState,
        to: WorkflowState,
        reason: String,
    },
    /// The clarification phase ended.
    Clarified {
        outcome: ClarifyOutcome,
        requirements: Vec<String>,
        assumptions: Vec<String>,
        answers: Vec<(String, String)>,
    },
    /// The planner proposed a plan; `issues` are its validation problems (empty: valid).
    PlanProposed {
        round: u32,
        toml: String,
        issues: Vec<String>,
    },
    /// A reviewer reviewed the plan.
    PlanReviewed {
        round: u32,
        approved: bool,
        findings: Vec<String>,
    },
    /// The plan was approved (`how`: flag, user, edited) and is the run's plan.
    PlanApproved { how: String, toml: String },
    /// One packet's agent finished (any way), with what it reported.
    PacketReport {
        packet: String,
        role: String,
        state: String,
        summary: String,
        touched: Vec<String>,
        learnings: Vec<String>,
    },
    /// A packet's agent asked a person a question; `git orchestra answer` replies.
    Asked { packet: String, question: String },
    /// A human answered a packet agent's question.
    Answered { packet: String, text: String },
    /// A conflicted packet was merged with the integration branch and resolved at `commit`.
    ConflictResolved {
        packet: String,
        commit: String,
        paths: Vec<String>,
    },
    /// The merge coordinator finished (its report as JSON).
    Merged { report: serde_json::Value },
    /// A phase after integration (documenting, testing) runs its packet as engine run `run`.
    PhaseRun { phase: WorkflowState, run: String },
    /// The process `pid` took charge of the run (first start or resume).
    Driving { pid: u32 },
    /// A pause or cancel was asked for from another process.
    StopRequested { cancel: bool },
    /// The run's pull requests were opened or updated (`start --pr`).
    Published { prs: Vec<PublishedPr> },
    /// The report was written.
    ReportSaved { markdown: String, json: String },
    /// A profile's effective concurrency changed: halved after a rate limit, grown back by
    /// one after a run of successful calls.
    ConcurrencyChanged {
        profile: String,
        from: usize,
        to: usize,
        /// The line shown to people, e.g. `openai-main: concurrency 8 → 4 after rate limit`.
        text: String,
    },
    /// A role answered another agent's question (`asker` is the chain of roles that asked,
    /// outermost first); cached per run under the role and the normalised question.
    Consulted {
        packet: String,
        asker: Vec<String>,
        role: String,
        question: String,
        key: String,
        answer: String,
    },
    /// A packet's agent spawned subtask `child`, forked from the parent's work at `base`.
    SubtaskSpawned {
        parent: String,
        child: String,
        title: String,
        description: String,
        role: String,
        files: Vec<String>,
        validation: Vec<String>,
        branch: String,
        base: String,
    },
    /// A subtask ended: `completed` (its `commit` merged into the parent's worktree) or
    /// `failed` (its work stays on its branch); `message` is what the parent was told.
    SubtaskFinished {
        parent: String,
        child: String,
        state: String,
        summary: String,
        commit: Option<String>,
        changed: Vec<String>,
        message: String,
    },
}

/// One journal entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub seq: i64,
    pub ts_ms: i64,
    pub event: WorkflowEvent,
}

/// One finished model call, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnRecord {
    pub role: String,
    pub model: String,
    pub usage: Usage,
    pub ms: u64,
    /// The answer: text, tool calls and stop reason, as JSON.
    pub response: serde_json::Value,
}

/// Usage summed over one role and model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UsageRow {
    pub role: String,
    pub model: String,
    pub calls: u64,
    pub usage: Usage,
    pub ms: u64,
}

/// The workflow journal of one run.
pub struct StartJournal {
    conn: Connection,
    path: PathBuf,
    run: String,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS workflow_events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id TEXT NOT NULL,
  ts_ms INTEGER NOT NULL,
  type TEXT NOT NULL,
  payload TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS workflow_events_run ON workflow_events (run_id, seq);
CREATE TABLE IF NOT EXISTS workflow_turns (
  run_id TEXT NOT NULL,
  key TEXT NOT NULL,
  ts_ms INTEGER NOT NULL,
  role TEXT NOT NULL,
  model TEXT NOT NULL,
  input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  ms INTEGER NOT NULL,
  response TEXT NOT NULL,
  PRIMARY KEY (run_id, key)
);";

impl StartJournal {
    /// Opens (creating if needed) the journal of `run` in the store of the repository whose
    /// common git directory is `common_dir`.
    pub fn open(common_dir: &Path, run: &str) -> Result<StartJournal, JournalError> {
        let dir = crate::exec::state_dir(common_dir);
        fs_err::create_dir_all(&dir).map_err(|source| JournalError::CreateDir {
            path: dir.clone(),
            source,
        })?;
        let path = dir.join("orchestra.db");
        let err = |source| JournalError::Sqlite {
            path: path.clone(),
            source,
        };
        let conn = Connection::open(&path).map_err(err)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(err)?;
        conn.execute_batch(&format!(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; {SCHEMA}"
        ))
        .map_err(err)?;
        Ok(StartJournal {
            conn,
            path,
            run: run.to_string(),
        })
    }

    /// Returns the ids of runs that have a workflow journal, newest first.
    pub fn runs(common_dir: &Path) -> Result<Vec<String>, JournalError> {
        if !crate::exec::state_dir(common_dir)
            .join("orchestra.db")
            .exists()
        {
            return Ok(Vec::new());
        }
        let j = StartJournal::open(common_dir, "")?;
        let mut stmt = j
            .conn
            .prepare(
                "SELECT run_id, MAX(seq) m FROM workflow_events GROUP BY run_id ORDER BY m DESC",
            )
            .map_err(|e| j.err(e))?;
        let rows = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(|e| j.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| j.err(e))?;
        Ok(rows)
    }

    fn err(&self, source: rusqlite::Error) -> JournalError {
        JournalError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    /// Returns the run this journal belongs to.
    pub fn run(&self) -> &str {
        &self.run
    }

    /// Appends `event`; returns its sequence number.
    pub fn append(&self, event: &WorkflowEvent) -> Result<i64, JournalError> {
        let payload = serde_json::to_string(event).map_err(|e| JournalError::Corrupt {
            path: self.path.clone(),
            what: e.to_string(),
        })?;
        let kind = serde_json::to_value(event)
            .ok()
            .and_then(|v| v.get("type").and_then(|t| t.as_str().map(String::from)))
            .unwrap_or_default();
        self.conn
            .execute(
                "INSERT INTO workflow_events (run_id, ts_ms, type, payload) VALUES (?1, ?2, ?3, ?4)",
                params![self.run, now_ms(), kind, payload],
            )
            .map_err(|e| self.err(e))?;
        let seq = self.conn.last_insert_rowid();
        super::fault::step();
        Ok(seq)
    }

    /// Returns every entry of the run, oldest first.
    pub fn entries(&self) -> Result<Vec<Entry>, JournalError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT seq, ts_ms, payload FROM workflow_events WHERE run_id = ?1 ORDER BY seq",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([&self.run], |r| {
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
                let event = serde_json::from_str(&payload).map_err(|e| JournalError::Corrupt {
                    path: self.path.clone(),
                    what: format!("entry {seq}: {e}"),
                })?;
                Ok(Entry { seq, ts_ms, event })
            })
            .collect()
    }

    /// Returns the workflow as the journal's transitions left it.
    pub fn workflow(&self) -> Result<Workflow, JournalError> {
        let mut w = Workflow::new();
        for e in self.entries()? {
            if let WorkflowEvent::Transition { to, .. } = e.event {
                w.apply(to);
            }
        }
        Ok(w)
    }

    /// Moves `workflow` to `to`, journaling the transition first; an illegal transition is
    /// journaled as rejected and returned as an error, changing nothing.
    pub fn transition(
        &self,
        workflow: &mut Workflow,
        to: WorkflowState,
        reason: &str,
    ) -> Result<(), JournalError> {
        let from = workflow.state();
        if let Err(e) = workflow.check(to, reason) {
            tracing::warn!(%from, %to, reason, "illegal workflow transition refused");
            self.append(&WorkflowEvent::Rejected {
                from,
                to,
                reason: reason.to_string(),
            })?;
            return Err(e.into());
        }
        self.append(&WorkflowEvent::Transition {
            from,
            to,
            reason: reason.to_string(),
        })?;
        workflow.apply(to);
        Ok(())
    }

    /// Returns the recorded model turn with this request key, if any.
    pub fn turn(&self, key: &str) -> Result<Option<TurnRecord>, JournalError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT role, model, input_tokens, output_tokens, ms, response FROM workflow_turns
                 WHERE run_id = ?1 AND key = ?2",
            )
            .map_err(|e| self.err(e))?;
        let row = stmt
            .query_row(params![self.run, key], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, i64>(4)?,
                    r.get::<_, String>(5)?,
                ))
            })
            .optional()
            .map_err(|e| self.err(e))?;
        row.map(|(role, model, i, o, ms, response)| {
            let response = serde_json::from_str(&response).map_err(|e| JournalError::Corrupt {
                path: self.path.clone(),
                what: format!("turn {key}: {e}"),
            })?;
            Ok(TurnRecord {
                role,
                model,
                usage: Usage {
                    input_tokens: i.max(0) as u64,
                    output_tokens: o.max(0) as u64,
                },
                ms: ms.max(0) as u64,
                response,
            })
        })
        .transpose()
    }

    /// Records a finished model turn under its request key (the first record wins).
    pub fn record_turn(&self, key: &str, turn: &TurnRecord) -> Result<(), JournalError> {
        self.conn
            .execute(
                "INSERT OR IGNORE INTO workflow_turns
                 (run_id, key, ts_ms, role, model, input_tokens, output_tokens, ms, response)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    self.run,
                    key,
                    now_ms(),
                    turn.role,
                    turn.model,
                    turn.usage.input_tokens as i64,
                    turn.usage.output_tokens as i64,
                    turn.ms as i64,
                    turn.response.to_string()
                ],
            )
            .map_err(|e| self.err(e))?;
        super::fault::step();
        Ok(())
    }

    /// Returns how many model turns are recorded for the run.
    pub fn turn_count(&self) -> Result<u64, JournalError> {
        self.conn
            .query_row(
                "SELECT COUNT(*) FROM workflow_turns WHERE run_id = ?1",
                [&self.run],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n.max(0) as u64)
            .map_err(|e| self.err(e))
    }

    /// Returns token usage and model time per role and model.
    pub fn usage(&self) -> Result<Vec<UsageRow>, JournalError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT role, model, COUNT(*), SUM(input_tokens), SUM(output_tokens), SUM(ms)
                 FROM workflow_turns WHERE run_id = ?1 GROUP BY role, model ORDER BY role, model",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([&self.run], |r| {
                Ok(UsageRow {
                    role: r.get(0)?,
                    model: r.get(1)?,
                    calls: r.get::<_, i64>(2)?.max(0) as u64,
                    usage: Usage {
                        input_tokens: r.get::<_, i64>(3)?.max(0) as u64,
                        output_tokens: r.get::<_, i64>(4)?.max(0) as u64,
                    },
                    ms: r.get::<_, i64>(5)?.max(0) as u64,
                })
            })
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transitions_replay_and_illegal_ones_are_journaled_as_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let j = StartJournal::open(dir.path(), "r1").unwrap();
        let mut w = Workflow::new();
        j.transition(&mut w, WorkflowState::Planning, "start")
            .unwrap();
        assert!(
            j.transition(&mut w, WorkflowState::Completed, "skip")
                .is_err()
        );
        j.transition(&mut w, WorkflowState::Paused, "pause")
            .unwrap();
        let again = StartJournal::open(dir.path(), "r1").unwrap();
        let replayed = again.workflow().unwrap();
        assert_eq!(replayed, w);
        assert_eq!(replayed.resume_target(), Some(WorkflowState::Planning));
        let kinds: Vec<bool> = again
            .entries()
            .unwrap()
            .iter()
            .map(|e| matches!(e.event, WorkflowEvent::Rejected { .. }))
            .collect();
        assert_eq!(kinds, vec![false, true, false]);
        assert_eq!(StartJournal::runs(dir.path()).unwrap(), vec!["r1"]);
    }

    #[test]
    fn turns_are_kept_once_per_key_and_summed_per_role() {
        let dir = tempfile::tempdir().unwrap();
        let j = StartJournal::open(dir.path(), "r").unwrap();
        let t = |n: u64| TurnRecord {
            role: "planner".into(),
            model: "m".into(),
            usage: Usage {
                input_tokens: n,
                output_tokens: 1,
            },
            ms: 5,
            response: serde_json::json!({"text": n}),
        };
        j.record_turn("k1", &t(10)).unwrap();
        j.record_turn("k1", &t(99)).unwrap();
        j.record_turn("k2", &t(20)).unwrap();
        assert_eq!(j.turn("k1").unwrap().unwrap().usage.input_tokens, 10);
        assert!(j.turn("k3").unwrap().is_none());
        let usage = j.usage().unwrap();
        assert_eq!(usage.len(), 1);
        assert_eq!((usage[0].calls, usage[0].usage.input_tokens), (2, 30));
    }
}

//! An eval's journal in the run store: what it is (its range, test command, arms and valid
//! tasks) and each attempt's start and end with its result, so that `eval resume` continues
//! after a crash without counting an attempt twice or losing one, and `eval report` reads it.
//!
//! An attempt journaled as started but not ended is redone from a fresh repository; one
//! journaled as ended is never run again.

use std::path::{Path, PathBuf};

use orchestra_core::eval::Task;
use orchestra_core::eval::suite::SuiteTask;
use orchestra_core::store::{Store, StoreError};
use serde::{Deserialize, Serialize};

use super::AttemptResult;

/// A valid task as the journal keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The task's commit, or a suite task's id.
    pub commit: String,
    pub base: String,
    pub objective: String,
    pub tests: Vec<String>,
    /// What a task read from a suite file needs besides: `None` for a task mined from history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite: Option<SuiteRecord>,
}

/// What a suite task needs to be attempted and judged besides its base, objective and tests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SuiteRecord {
    /// The local repository the task's attempts start from.
    pub repo: PathBuf,
    /// The command run in the judging checkout before the check.
    #[serde(default)]
    pub setup: Option<String>,
    /// The check command that judges the task (its own, else the eval's, else its
    /// repository's), decided when the eval was made.
    pub check: String,
    /// The hidden tests as a unified diff, applied over the landed tree.
    #[serde(default)]
    pub test_patch: Option<String>,
    #[serde(default)]
    pub fail_to_pass: Vec<String>,
    #[serde(default)]
    pub pass_to_pass: Vec<String>,
}

impl SuiteRecord {
    /// Returns the record of the suite task `task` judged by `check`.
    pub fn of(task: &SuiteTask, check: &str) -> SuiteRecord {
        SuiteRecord {
            repo: task.repo.clone(),
            setup: task.setup.clone(),
            check: check.to_string(),
            test_patch: task.test_patch.clone(),
            fail_to_pass: task.task.fail_to_pass.clone(),
            pass_to_pass: task.task.pass_to_pass.clone(),
        }
    }

    /// Returns the suite task this record and `task` (its record's task) keep.
    pub fn suite_task(&self, task: &Task) -> SuiteTask {
        let mut task = task.clone();
        task.per_test = !self.fail_to_pass.is_empty();
        task.fail_to_pass = self.fail_to_pass.clone();
        task.pass_to_pass = self.pass_to_pass.clone();
        SuiteTask {
            id: task.commit.clone(),
            repo: self.repo.clone(),
            setup: self.setup.clone(),
            check: Some(self.check.clone()),
            test_patch: self.test_patch.clone(),
            task,
        }
    }
}

impl TaskRecord {
    /// Returns the record of `task`, `None` when it is not a valid task with a base.
    pub fn of(task: &Task) -> Option<TaskRecord> {
        Some(TaskRecord {
            commit: task.commit.clone(),
            base: task.base.clone().filter(|_| task.valid)?,
            objective: task.objective.clone(),
            tests: task.tests.clone(),
            suite: None,
        })
    }

    /// Returns the valid task this record keeps.
    pub fn task(&self) -> Task {
        Task {
            commit: self.commit.clone(),
            valid: true,
            reason: None,
            detail: None,
            objective: self.objective.clone(),
            base: Some(self.base.clone()),
            tests: self.tests.clone(),
            ..Task::default()
        }
    }
}

/// One event of an eval's journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EvalEvent {
    /// The eval was made: what it attempts and how it judges.
    EvalCreated {
        range: String,
        test: String,
        timeout_secs: u64,
        /// Attempts of each arm at each task.
        #[serde(default = "one")]
        repeat: u32,
        /// Each arm as given: `<name>=<spec>`.
        arms: Vec<String>,
        tasks: Vec<TaskRecord>,
    },
    /// An attempt began in a fresh repository.
    AttemptStarted {
        task: String,
        arm: String,
        repeat: u32,
    },
    /// An attempt ended with this result.
    AttemptEnded { result: AttemptResult },
    /// Every attempt has ended.
    EvalFinished,
}

impl EvalEvent {
    /// Returns the event's type tag, as stored in the journal's `type` column.
    pub fn kind(&self) -> &'static str {
        match self {
            EvalEvent::EvalCreated { .. } => "eval_created",
            EvalEvent::AttemptStarted { .. } => "attempt_started",
            EvalEvent::AttemptEnded { .. } => "attempt_ended",
            EvalEvent::EvalFinished => "eval_finished",
        }
    }
}

/// Returns 1: the repeat count of an eval journaled before `--repeat` existed.
fn one() -> u32 {
    1
}

/// What an eval's journal says so far.
#[derive(Debug, Clone)]
pub struct EvalState {
    pub id: String,
    pub range: String,
    pub test: String,
    pub timeout_secs: u64,
    pub repeat: u32,
    pub arms: Vec<String>,
    pub tasks: Vec<TaskRecord>,
    /// The ended attempts' results, in the order they ended.
    pub results: Vec<AttemptResult>,
    /// Attempts started and not ended (a crash, or one running now).
    pub unfinished: usize,
    pub finished: bool,
}

/// Why an eval's journal could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("no eval `{id}` in this repository; `git orchestra eval report` lists the newest")]
    Unknown { id: String },
    #[error("no eval has run in this repository; start one with `git orchestra eval run`")]
    None,
}

/// Appends `event` to the journal of the eval `eval` in the store of `common_dir`.
pub fn record(common_dir: &Path, eval: &str, event: &EvalEvent) -> Result<(), StoreError> {
    Store::open(common_dir)?.append_eval_event(eval, event.kind(), event)?;
    Ok(())
}

/// Returns the id `named`, or the newest eval's when none is named; an error when there is no
/// such eval.
pub fn pick(common_dir: &Path, named: Option<&str>) -> Result<String, JournalError> {
    let evals = Store::open(common_dir)?.evals()?;
    match named {
        Some(id) if evals.iter().any(|e| e == id) => Ok(id.to_string()),
        Some(id) => Err(JournalError::Unknown { id: id.to_string() }),
        None => evals.into_iter().next().ok_or(JournalError::None),
    }
}

/// Returns what the journal of the eval `id` says.
pub fn load(common_dir: &Path, id: &str) -> Result<EvalState, JournalError> {
    let events = Store::open(common_dir)?.eval_events::<EvalEvent>(id)?;
    let mut state: Option<EvalState> = None;
    let mut started: Vec<(String, String, u32)> = Vec::new();
    for entry in events {
        match entry.event {
            EvalEvent::EvalCreated {
                range,
                test,
                timeout_secs,
                repeat,
                arms,
                tasks,
            } => {
                state = Some(EvalState {
                    id: id.to_string(),
                    range,
                    test,
                    timeout_secs,
                    repeat,
                    arms,
                    tasks,
                    results: Vec::new(),
                    unfinished: 0,
                    finished: false,
                });
            }
            EvalEvent::AttemptStarted { task, arm, repeat } => {
                let key = (task, arm, repeat);
                if !started.contains(&key) {
                    started.push(key);
                }
            }
            EvalEvent::AttemptEnded { result } => {
                if let Some(s) = state.as_mut()
                    && !s.results.iter().any(|r| same_attempt(r, &result))
                {
                    s.results.push(result);
                }
            }
            EvalEvent::EvalFinished => {
                if let Some(s) = state.as_mut() {
                    s.finished = true;
                }
            }
        }
    }
    let mut state = state.ok_or_else(|| JournalError::Unknown { id: id.to_string() })?;
    state.unfinished = started
        .iter()
        .filter(|(t, a, n)| {
            !state
                .results
                .iter()
                .any(|r| &r.task == t && &r.arm == a && r.repeat == *n)
        })
        .count();
    Ok(state)
}

/// Returns true if and only if `a` and `b` are results of the same attempt.
pub fn same_attempt(a: &AttemptResult, b: &AttemptResult) -> bool {
    a.task == b.task && a.arm == b.arm && a.repeat == b.repeat
}

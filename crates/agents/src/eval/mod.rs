//! `eval run`: arms compared on the same tasks, each attempt in its own clean repository.
//!
//! For each valid task and each arm, an attempt prepares a fresh repository holding only the
//! task's base ([`orchestra_core::eval::attempt`]), works the arm there through the product's
//! own one-packet flow, and judges the tree that landed with the task's hidden tests, read from
//! the source repository and written over the attempt's own versions. An attempt is resolved
//! if and only if the check passes there; otherwise it gets a failure class.

mod arm;
mod attempt;
pub mod compare;
mod hidden;
pub mod html;
pub mod journal;
pub mod kept;
pub mod lookup;
pub mod markdown;
mod measure;
pub mod report;
mod rows;
mod schedule;
mod start_arm;
mod unattended;

use std::collections::BTreeMap;
use std::path::PathBuf;

use orchestra_core::config::RepoConfig;
use orchestra_core::eval::attempt::{AttemptError, eval_dir};
use orchestra_core::eval::{Check, Task};
use orchestra_git::git::RepoInfo;
use serde::{Deserialize, Serialize};

pub use arm::{Arm, ArmError, ArmKind, ArmOptions, parse, parse_all};

/// Why an attempt did not resolve its task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Failure {
    /// Nothing landed: the worker changed no file.
    NoChange,
    /// Something landed, and the hidden tests fail on it.
    TestsFail,
    /// A gate (scope, validation, review, the merged tree's validation) rejected the work.
    GateRejected,
    /// The work could not be merged into the target.
    MergeConflict,
    /// The arm's budget ran out.
    Budget,
    /// The worker or the check ran out of time.
    Timeout,
    /// Every packet merged cleanly, and the merged tree's tests fail (a `start` arm).
    SemanticConflict,
    /// The agent stopped short of completing: it signalled `blocked`, the stall guard stopped
    /// it (the same tool calls over and over, or a model gone silent), or it waited on a
    /// question nobody answers.
    GaveUp,
    /// The program failed (the worker command, the engine), or the attempt could not run to
    /// its end.
    Crash,
    /// The setup command (the suite task's `setup`, `[worktree] setup`) failed in the
    /// attempt's worktree before the arm started: the environment, not the arm, is at fault,
    /// so the attempt is left out of the arm's statistics.
    SetupFailed,
}

impl Failure {
    /// Returns the failure class in a few words, as the table prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            Failure::NoChange => "no change",
            Failure::TestsFail => "tests fail",
            Failure::GateRejected => "gate rejected",
            Failure::MergeConflict => "merge conflict",
            Failure::Budget => "budget",
            Failure::Timeout => "timeout",
            Failure::SemanticConflict => "semantic conflict",
            Failure::GaveUp => "agent gave up",
            Failure::Crash => "crash",
            Failure::SetupFailed => "setup failed",
        }
    }
}

impl AttemptResult {
    /// Returns true if and only if the attempt counts in its arm's statistics: every ended
    /// attempt but one whose setup failed before the arm started.
    pub fn counted(&self) -> bool {
        self.failure != Some(Failure::SetupFailed)
    }
}

/// What one attempt of one arm at one task came to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptResult {
    /// The task's commit.
    pub task: String,
    /// The arm's name.
    pub arm: String,
    /// Which attempt of this task and arm, from 1.
    pub repeat: u32,
    /// True if and only if the hidden tests pass on the tree the arm landed.
    pub resolved: bool,
    /// Why it did not resolve; `None` when resolved.
    pub failure: Option<Failure>,
    /// More about the failure (a packet's reason, how the check ended).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Model tokens read and written by the attempt's agents (0 for a worker command).
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// What the tokens cost; `None` when no model used has a price.
    pub cost: Option<f64>,
    /// Wall time of the whole attempt, preparation and check included, in milliseconds.
    pub wall_ms: u64,
    /// Packets the attempt's run held.
    pub packets: usize,
    /// Worker runs after a packet's first that were not retries: fix rounds after a failed
    /// validation or review.
    #[serde(default)]
    pub fix_rounds: u32,
    /// Questions raised for a person: the clarifier's (a `start` arm, each answered by an
    /// assumption since nobody answers) and the packet agents'.
    #[serde(default)]
    pub questions: u32,
    /// Time spent waiting on models, summed over the attempt's calls, in milliseconds.
    #[serde(default)]
    pub model_ms: u64,
}

/// Why an eval could not run.
#[derive(Debug, thiserror::Error)]
pub enum EvalRunError {
    #[error(transparent)]
    Attempt(#[from] AttemptError),
    #[error("no valid task to attempt: {0}")]
    NoTasks(String),
    #[error(
        "interrupted after {done} of {total} attempts; `git orchestra eval resume {eval}` continues it"
    )]
    Interrupted {
        eval: String,
        done: usize,
        total: usize,
    },
    #[error(
        "eval `{eval}` is being worked by another git-orchestra process; wait for it or stop it with Ctrl-C"
    )]
    Busy { eval: String },
    #[error("cannot lock the eval: {0}")]
    Lock(orchestra_sys::exec::LockError),
    #[error("cannot journal the eval: {0}")]
    Journal(#[from] orchestra_core::store::StoreError),
}

/// An eval to run: tasks, arms and how attempts are judged.
pub struct EvalRun<'a> {
    /// The eval's id: its attempts' directory (`attempt::eval_dir`) and its journal's key.
    pub id: String,
    /// The repository the tasks come from.
    pub source: &'a RepoInfo,
    /// The source's configuration (trust applied), which attempts run under.
    pub config: &'a RepoConfig,
    /// The valid tasks to attempt.
    pub tasks: Vec<Task>,
    /// What each task read from a suite file needs besides (its repository, setup, test patch,
    /// check), by the task's `commit` (the suite task's id); empty for tasks mined from history.
    pub suites: BTreeMap<String, journal::SuiteRecord>,
    pub arms: Vec<Arm>,
    /// The check that judges an attempt, its timeout also the worker's.
    pub check: &'a Check<'a>,
    /// Attempts of each arm at each task (`--repeat`, at least 1).
    pub repeat: u32,
    /// Most attempts worked at once (`--jobs`, at least 1), each in its own repository.
    pub jobs: usize,
}

impl EvalRun<'_> {
    /// Returns the directory of this eval's attempts.
    pub fn dir(&self) -> PathBuf {
        eval_dir(&self.source.common_dir, &self.id)
    }

    /// Journals the eval's creation: its range, test command, arms and tasks. Called once,
    /// before [`EvalRun::run`], for a new eval.
    pub fn create(&self, range: &str) -> Result<(), EvalRunError> {
        if self.tasks.is_empty() {
            return Err(EvalRunError::NoTasks(
                "none of the range's candidates is valid (`eval tasks` says why)".to_string(),
            ));
        }
        let event = journal::EvalEvent::EvalCreated {
            range: range.to_string(),
            test: self.check.command.to_string(),
            timeout_secs: self.check.timeout.as_secs(),
            repeat: self.repeat.max(1),
            arms: self
                .arms
                .iter()
                .map(|a| format!("{}={}", a.name, a.spec))
                .collect(),
            tasks: self
                .tasks
                .iter()
                .filter_map(journal::TaskRecord::of)
                .map(|mut t| {
                    t.suite = self.suites.get(&t.commit).cloned();
                    t
                })
                .collect(),
        };
        journal::record(&self.source.common_dir, &self.id, &event)?;
        Ok(())
    }

    /// Works every arm on every task `repeat` times, up to `jobs` attempts at once, skipping
    /// the attempts the journal says ended (their results are reused), and returns the results
    /// in task, arm, repeat order; `on_result` is called after each attempt worked now. Each
    /// attempt is journaled before it starts and when it ends. No attempt starts once
    /// `check.stop` is set.
    pub fn run(
        &self,
        on_result: &(dyn Fn(&AttemptResult) + Sync),
    ) -> Result<Vec<AttemptResult>, EvalRunError> {
        let common = &self.source.common_dir;
        // One process works an eval at a time, so no attempt runs twice at once.
        let _lock =
            orchestra_sys::exec::RunLock::acquire(&self.dir(), &self.id).map_err(|e| match e {
                orchestra_sys::exec::LockError::Busy { .. } => EvalRunError::Busy {
                    eval: self.id.clone(),
                },
                other => EvalRunError::Lock(other),
            })?;
        let ended = journal::load(common, &self.id)
            .map(|s| s.results)
            .unwrap_or_default();
        let mut all = Vec::new();
        for t in 0..self.tasks.len() {
            for a in 0..self.arms.len() {
                for r in 1..=self.repeat.max(1) {
                    all.push(schedule::Slot {
                        task: t,
                        arm: a,
                        repeat: r,
                    });
                }
            }
        }
        let result_of = |slot: &schedule::Slot| {
            ended.iter().find(|r| {
                r.task == self.tasks[slot.task].commit
                    && r.arm == self.arms[slot.arm].name
                    && r.repeat == slot.repeat
            })
        };
        let pending: Vec<schedule::Slot> = all
            .iter()
            .filter(|s| result_of(s).is_none())
            .copied()
            .collect();
        let mut fresh = schedule::work_all(self, &pending, on_result, all.len() - pending.len())?;
        let mut results = Vec::with_capacity(all.len());
        for slot in &all {
            match result_of(slot) {
                Some(r) => results.push(r.clone()),
                None => {
                    if let Some(i) = fresh.iter().position(|(s, _)| s == slot) {
                        results.push(fresh.swap_remove(i).1);
                    }
                }
            }
        }
        journal::record(common, &self.id, &journal::EvalEvent::EvalFinished)?;
        Ok(results)
    }

    /// Works one attempt, journaled before it starts and when it ends; `None` when a stop
    /// request cut it short (it stays unended, redone on resume).
    fn attempt(&self, slot: schedule::Slot) -> Result<Option<AttemptResult>, EvalRunError> {
        let common = &self.source.common_dir;
        let (task, arm) = (&self.tasks[slot.task], &self.arms[slot.arm]);
        let started = journal::EvalEvent::AttemptStarted {
            task: task.commit.clone(),
            arm: arm.name.clone(),
            repeat: slot.repeat,
        };
        journal::record(common, &self.id, &started)?;
        // A suite task's id may hold any character, and two may share their first ones.
        let short = match self.suites.contains_key(&task.commit) {
            true => format!(
                "{}.{}",
                orchestra_sys::names::sanitize(&task.commit, 12),
                slot.task
            ),
            false => task.commit[..task.commit.len().min(12)].to_string(),
        };
        let dir = self
            .dir()
            .join(format!("{short}-{}-{}", slot.arm, slot.repeat));
        let env = attempt::AttemptEnv {
            source: self.source,
            config: self.config,
            check: self.check,
            dir: &dir,
            suite: self.suites.get(&task.commit),
        };
        let result = attempt::work(&env, task, arm, slot.repeat)?;
        if self.check.stop.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(None);
        }
        let event = journal::EvalEvent::AttemptEnded {
            result: result.clone(),
        };
        journal::record(common, &self.id, &event)?;
        Ok(Some(result))
    }
}

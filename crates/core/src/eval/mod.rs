//! Evaluation tasks mined from a repository's own history: each first-parent commit that
//! changes source and test files is a candidate task whose base is its parent, whose objective
//! is its message and whose hidden tests are its changes to test files.
//!
//! Where the check reports per-test results (pytest's `-rA` summary, `cargo test` lines; see
//! [`results`]) a candidate is valid when some test fails or is absent at the base with the
//! hidden tests and passes at the commit (FAIL_TO_PASS), and no test passing at the base alone
//! fails at the commit (PASS_TO_PASS). A check reporting none is judged by its exit status: it
//! must fail at the base with the hidden tests and pass at the commit.

pub mod attempt;
mod check;
pub mod files;
pub mod results;
pub mod stats;
pub mod suite;
pub mod suite_check;
mod suite_fields;
pub mod suite_judge;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use orchestra_git::git::{ChangedFile, GitError, HistoryCommit, RepoInfo};
use orchestra_sys::exec::process::Confine;
use serde::Serialize;

/// Why a candidate is not a valid task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The commit changes no test file.
    NoTestChange,
    /// The commit changes test files but no source file.
    NoSourceChange,
    /// The check passes at the base with the hidden tests added: they test nothing new.
    TestsPassBefore,
    /// The check fails at the commit itself: no test fails before and passes after.
    TestsFailAfter,
    /// A test that passes at the base fails at the commit.
    BreaksPassingTests,
    /// A checkout could not be prepared, or the check could not run or timed out.
    SetupFailed,
}

impl Reason {
    /// Every reason, in the order the summary counts them.
    pub const ALL: [Reason; 6] = [
        Reason::NoTestChange,
        Reason::NoSourceChange,
        Reason::TestsPassBefore,
        Reason::TestsFailAfter,
        Reason::BreaksPassingTests,
        Reason::SetupFailed,
    ];

    /// Returns the reason in a few words, as the task list prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::NoTestChange => "no test change",
            Reason::NoSourceChange => "no source change",
            Reason::TestsPassBefore => "tests pass before",
            Reason::TestsFailAfter => "tests fail after",
            Reason::BreaksPassingTests => "breaks passing tests",
            Reason::SetupFailed => "setup failed",
        }
    }
}

/// One candidate task and whether it is valid.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Task {
    /// The commit whose change is the task's solution.
    pub commit: String,
    /// Whether the hidden tests fail at the base and pass at the commit.
    pub valid: bool,
    /// Why the candidate is invalid; `None` for a valid task.
    pub reason: Option<Reason>,
    /// More about the reason (how a check ended, what could not be prepared).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The commit message, subject and body.
    pub objective: String,
    /// The commit's first parent, where an attempt starts; `None` for a root commit.
    pub base: Option<String>,
    /// The test files the commit changes: the hidden tests.
    pub tests: Vec<String>,
    /// Whether the check reported per-test results, so that validity was judged test by test
    /// (else by the check's exit status, and the two lists below are empty).
    pub per_test: bool,
    /// The tests failing (or absent) at the base with the hidden tests and passing at the
    /// commit, sorted.
    pub fail_to_pass: Vec<String>,
    /// The tests passing at the base that still pass at the commit, sorted.
    pub pass_to_pass: Vec<String>,
}

/// How candidates are checked: the test command and its limits.
pub struct Check<'a> {
    /// The project's test command, run with `sh -c` at the top of each checkout.
    pub command: &'a str,
    /// Longest one run of the check may take.
    pub timeout: Duration,
    /// The sandbox the check runs in (validation commands'); `None` runs it as the user.
    pub confine: Option<&'a Confine>,
    /// Set (by Ctrl-C) to stop the running check and the mining after it.
    pub stop: &'a AtomicBool,
}

/// Why tasks could not be mined at all.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error(
        "cannot read the range `{range}`: {source}; give a revision range such as `HEAD~20..HEAD` or `v1.0..main`"
    )]
    Range { range: String, source: GitError },
    #[error("the range `{range}` holds no commits; give a range such as `HEAD~20..HEAD`")]
    EmptyRange { range: String },
    #[error("interrupted after {done} of {total} candidates; nothing was left behind")]
    Interrupted { done: usize, total: usize },
    #[error("cannot prepare the check's log directory {path}: {source}")]
    Logs {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Returns every first-parent commit of `range` as a candidate task, oldest first, each
/// judged valid or not by running `check` in scratch checkouts of the repository that are
/// removed afterwards; the repository's branches, refs and worktrees are left as they were,
/// also when `check.stop` interrupts it.
pub fn from_history(
    repo: &RepoInfo,
    range: &str,
    check: &Check<'_>,
) -> Result<Vec<Task>, EvalError> {
    from_history_with(repo, range, check, &mut |_| {})
}

/// What [`from_history_with`] reports while it works.
#[derive(Debug)]
pub enum Progress<'t> {
    /// The range is read: `commits` first-parent commits, of which `to_check` change source
    /// and test files and so are checked by running the test command.
    Listed { commits: usize, to_check: usize },
    /// The `n`th (from 1) of the candidates to check is being checked.
    Checking { n: usize, commit: &'t str },
    /// A checked candidate has its verdict.
    Judged { task: &'t Task },
}

/// Does what [`from_history`] does, telling `progress` how far it got: the whole range is
/// read by one `git log`, and only candidates that change source and test files are checked.
pub fn from_history_with(
    repo: &RepoInfo,
    range: &str,
    check: &Check<'_>,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<Task>, EvalError> {
    let history = repo
        .git()
        .first_parent_history(range)
        .map_err(|source| EvalError::Range {
            range: range.to_string(),
            source,
        })?;
    if history.is_empty() {
        return Err(EvalError::EmptyRange {
            range: range.to_string(),
        });
    }
    let mut tasks: Vec<Task> = history.iter().map(listed).collect();
    let to_check: Vec<usize> = (0..tasks.len())
        .filter(|&i| tasks[i].reason.is_none())
        .collect();
    progress(Progress::Listed {
        commits: tasks.len(),
        to_check: to_check.len(),
    });
    for (n, &i) in to_check.iter().enumerate() {
        progress(Progress::Checking {
            n: n + 1,
            commit: &history[i].commit,
        });
        let (Some(base), task) = (history[i].parent.as_deref(), &mut tasks[i]) else {
            continue;
        };
        let hidden = hidden_tests(&history[i].changed);
        let judged = check::judge(repo, base, &history[i].commit, &hidden, check)?;
        // A check the signal stopped judged nothing: the candidate is not listed.
        if check.stop.load(Ordering::SeqCst) {
            return Err(EvalError::Interrupted {
                done: n,
                total: to_check.len(),
            });
        }
        task.valid = judged.reason.is_none();
        task.reason = judged.reason;
        task.detail = judged.detail;
        task.per_test = judged.per_test;
        task.fail_to_pass = judged.fail_to_pass;
        task.pass_to_pass = judged.pass_to_pass;
        progress(Progress::Judged { task });
    }
    Ok(tasks)
}

/// Returns the files of `changed` that are tests: a candidate's hidden tests.
fn hidden_tests(changed: &[ChangedFile]) -> Vec<ChangedFile> {
    changed
        .iter()
        .filter(|f| files::is_test_file(&f.path))
        .cloned()
        .collect()
}

/// Returns the candidate task of `commit` as its files classify it, before any check: invalid
/// with its reason, or with no reason yet when it changes source and test files and has a
/// parent to start from (a root commit's files are compared with the empty tree, so what it
/// changes decides whether it is a candidate at all before its missing parent makes it
/// unusable).
fn listed(commit: &HistoryCommit) -> Task {
    let hidden = hidden_tests(&commit.changed);
    let mut task = Task {
        commit: commit.commit.clone(),
        valid: false,
        reason: None,
        detail: None,
        objective: commit.message.clone(),
        base: commit.parent.clone(),
        tests: hidden.iter().map(|f| f.path.clone()).collect(),
        ..Task::default()
    };
    if hidden.is_empty() {
        task.reason = Some(Reason::NoTestChange);
    } else if !commit
        .changed
        .iter()
        .any(|f| files::is_source_file(&f.path))
    {
        task.reason = Some(Reason::NoSourceChange);
    } else if commit.parent.is_none() {
        task.reason = Some(Reason::SetupFailed);
        task.detail = Some("a root commit has no parent to start from".to_string());
    }
    task
}

/// Returns how many of `tasks` are valid and how many are invalid for each reason (reasons
/// with none left out).
pub fn counts(tasks: &[Task]) -> (usize, Vec<(Reason, usize)>) {
    let valid = tasks.iter().filter(|t| t.valid).count();
    let by_reason = Reason::ALL
        .iter()
        .map(|r| (*r, tasks.iter().filter(|t| t.reason == Some(*r)).count()))
        .filter(|(_, n)| *n > 0)
        .collect();
    (valid, by_reason)
}

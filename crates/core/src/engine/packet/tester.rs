//! The tester of a best-of-N packet (`[best_of] tester = true`): before the candidates work,
//! the `tester` role (in a worker command's run, `[best_of] tester_cmd` or the worker command
//! with `ORCHESTRA_TESTER=1`) writes tests from the packet's description, from the packet's
//! start, in a worktree of its own on `<packet branch>.tests`; their commit is kept as
//! `refs/orchestra/tests/<run>/<packet>` until `gc`.
//!
//! Each candidate that passed its validation and the deterministic checks then runs them,
//! brought over on top of its commit in a scratch checkout (never committed into it), with the
//! project's tests (`[eval] test`), or the packet's validation when that is unset; a candidate
//! failing them cannot win. Tests that fail on every candidate are set aside (the tests may be
//! wrong) and the choice goes on without them. The verdict notes say which.
//!
//! The tester's events are journaled under `<packet>.tests`, its model calls under the packet
//! (so they count with its costs), and its `TesterEnded` event lets a resumed packet use the
//! tests it wrote instead of writing them again.

use std::path::PathBuf;

use super::candidates::Candidate;
use super::validation::Checked;
use super::{Halt, Step};
use crate::plan::Packet;
use crate::store::{Event, EventKind};
use orchestra_git::git::{self as gitops, commit};
use orchestra_sys::names;

/// The role that writes the tests.
const TESTER_ROLE: &str = "tester";

/// The files the tester may write: the `tester` role's write scope.
const TESTER_FILES: &[&str] = &[
    "tests/**",
    "**/tests/**",
    "**/*_test.*",
    "**/test_*.py",
    "**/*.test.*",
    "**/*.spec.*",
];

/// The tests a packet's tester wrote: the commit holding them and the files it changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TesterTests {
    pub commit: String,
    pub files: Vec<String>,
}

/// What the tester came to: tests to run, or why there are none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Written {
    Tests(TesterTests),
    Without(String),
}

/// What running the tester's tests on the candidates came to, for the verdict notes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Tested {
    /// The sentence the verdict notes keep.
    pub note: String,
    /// True when the candidates still in the choice passed the tester's tests (they ran and
    /// were not set aside).
    pub held: bool,
}

impl Tested {
    /// Returns an outcome in which the tester's tests decided nothing, for `note`'s reason.
    pub(super) fn not_held(note: String) -> Tested {
        Tested { note, held: false }
    }
}

/// Returns the ref a packet's tester's tests are kept under until `gc`.
fn tests_ref(run: &str, packet: &str) -> String {
    format!("{}{}", run_tests_prefix(run), names::sanitize(packet, 64))
}

/// Returns the prefix under which all of a run's tester tests are kept, for `gc`.
pub(in crate::engine) fn run_tests_prefix(run: &str) -> String {
    format!("refs/orchestra/tests/{}/", names::sanitize(run, 80))
}

/// Returns the packet the tester works: `packet`'s id (its model calls count with the
/// packet's), the `tester` role and its files, no validation (the tests are to fail until the
/// packet is done) and a task asking for tests of what the packet describes.
fn tester_packet(packet: &Packet) -> Packet {
    let mut p = packet.clone();
    p.role = TESTER_ROLE.into();
    p.title = format!("Tests for: {}", packet.title);
    p.description = format!(
        "Write tests for the packet below before it is implemented. Several candidates implement it independently from this same commit; your tests decide which of them do what it asks, so test its behaviour as described, not one way of writing it. Write only tests: they are expected to fail here, where the packet is not done yet. The files the packet itself will change: {}.\n\n## The packet: {}\n\n{}",
        packet.files.join(", "),
        packet.title,
        packet.description
    );
    p.files = TESTER_FILES.iter().map(|f| f.to_string()).collect();
    p.symbols = Vec::new();
    p.validation = Vec::new();
    p.may_be_empty = false;
    p.attempts = None;
    p
}

impl<'s, 'a> Step<'s, 'a> {
    /// Returns the tests the packet's tester wrote, having it write them unless it did
    /// before on this attempt; `None` when no tester is configured.
    pub(super) fn tester_tests(&self) -> Result<Option<Written>, Halt> {
        if self.ctx.tester.is_none() {
            return Ok(None);
        }
        if let Some(ended) = self.tester_ended()? {
            return Ok(Some(ended));
        }
        let packet = tester_packet(self.packet);
        let step = self.tester_step(&packet)?;
        let written = step.write_tests()?;
        let (commit, files, reason) = match &written {
            Written::Tests(t) => (Some(t.commit.clone()), t.files.clone(), String::new()),
            Written::Without(reason) => (None, Vec::new(), reason.clone()),
        };
        let commit_kept = commit.is_some();
        if let Some(id) = &commit {
            let name = tests_ref(&self.ctx.run.id, &self.packet.id);
            commit::keep_ref(&self.ctx.repo.git(), &name, id)
                .map_err(|e| Halt::Fail(format!("cannot keep the tester's tests: {e}")))?;
        }
        self.record(Event::TesterEnded {
            packet: self.packet.id.clone(),
            attempt: self.rec.attempt,
            commit,
            files,
            reason,
        })?;
        // A tester that wrote no usable tests leaves its worktree for a person (until `gc`).
        if commit_kept {
            step.remove_worktree();
        }
        Ok(Some(written))
    }

    /// Returns what the tester of this attempt came to, when it ended before (a resumed
    /// packet's) and its tests are still kept.
    fn tester_ended(&self) -> Result<Option<Written>, Halt> {
        let (id, attempt) = (&self.packet.id, self.rec.attempt);
        let entries = self
            .ctx
            .journal
            .read(|store, run| store.events_of_kind(run, EventKind::TesterEnded))
            .map_err(|_| Halt::Journal)?;
        let git = self.ctx.repo.git();
        Ok(entries.into_iter().rev().find_map(|e| match e.event {
            Event::TesterEnded {
                packet,
                attempt: a,
                commit,
                files,
                reason,
            } if &packet == id && a == attempt => match commit {
                Some(commit) => git
                    .resolve_commit(&commit)
                    .ok()
                    .flatten()
                    .map(|_| Written::Tests(TesterTests { commit, files })),
                None => Some(Written::Without(reason)),
            },
            _ => None,
        }))
    }

    /// Returns the tester's step for `packet` (the tester's own): a worktree, branch and log
    /// directory beside the packet's, its events journaled under `<packet>.tests`.
    fn tester_step<'x>(&'x self, packet: &'x Packet) -> Result<Step<'x, 'a>, Halt> {
        let mut step = Step {
            packet,
            ..self.clone()
        };
        step.rec.branch = format!("{}.tests", self.rec.branch);
        step.wt = PathBuf::from(format!("{}.tests", self.wt.display()));
        step.dir = self.dir.join("tester");
        step.candidate = None;
        step.tester = true;
        step.env = step.environment()?;
        step.env
            .push(("ORCHESTRA_TESTER".to_string(), "1".to_string()));
        Ok(step)
    }

    /// Runs the tester in a clean worktree of its own and commits what it wrote; returns the
    /// tests, or why there are none (it failed, wrote nothing, or wrote outside the test files).
    fn write_tests(&self) -> Result<Written, Halt> {
        // A tester cut short by a crash starts again from a clean worktree.
        self.remove_worktree();
        self.ensure_ready(true)?;
        match self.first_work() {
            Err(Halt::Fail(reason)) => {
                return Ok(Written::Without(format!(
                    "the tester failed: {}",
                    reason.lines().next().unwrap_or("")
                )));
            }
            Err(other) => return Err(other),
            Ok(()) => {}
        }
        let (head, changed) = match self.commit(None) {
            Ok(made) => made,
            Err(Halt::Fail(reason)) => return Ok(Written::Without(reason)),
            Err(other) => return Err(other),
        };
        if let Some(Checked::Failed { reason, .. }) = self.check_scope(&head, &changed)? {
            return Ok(Written::Without(format!(
                "the tester's work was not used: {reason}"
            )));
        }
        Ok(Written::Tests(TesterTests {
            commit: head,
            files: changed,
        }))
    }

    /// Removes the tester's worktree and branch, when they exist: before it starts again from
    /// a clean worktree, or once its tests are kept under their ref.
    fn remove_worktree(&self) {
        let git = self.ctx.repo.git();
        let _registrations = gitops::registration_lock();
        if self.wt.exists()
            && let Err(e) = git.force_remove_worktree(&self.wt)
        {
            tracing::warn!(worktree = %self.wt.display(), error = %e, "cannot remove the tester's worktree");
            return;
        }
        let _ = git.prune_worktrees();
        let branch_ref = format!("refs/heads/{}", self.rec.branch);
        if git.resolve_commit(&branch_ref).ok().flatten().is_some() {
            let _ = git.force_delete_branch(&self.rec.branch);
        }
    }

    /// Runs the tester's `tests` on every candidate of `all` that passed so far and takes
    /// those failing them out of the choice (journaling each as ended again, failed); returns
    /// the sentence the verdict notes keep. When they fail on every candidate they ran on, the
    /// candidates stay in the choice.
    pub(super) fn apply_tester_tests(
        &self,
        all: &mut [Candidate],
        tests: &TesterTests,
    ) -> Result<Tested, Halt> {
        let files = tests.files.join(", ");
        let commands: Vec<String> = match self.ctx.tests {
            Some(test) => vec![test.to_string()],
            None => self.packet.validation.clone(),
        };
        if commands.is_empty() {
            return Ok(Tested::not_held(format!(
                "the tester's tests ({files}) were not run: neither `[eval] test` nor the packet's validation names a command to run them with"
            )));
        }
        let mut failed: Vec<(u32, String)> = Vec::new();
        let mut ran = 0;
        for c in all.iter().filter(|c| c.passed) {
            let Some(head) = c.commit.as_deref() else {
                continue;
            };
            ran += 1;
            if let Some(reason) = self.run_tests_on(c.number, head, tests, &commands)? {
                failed.push((c.number, reason));
            }
        }
        if ran == 0 {
            return Ok(Tested::not_held(format!(
                "the tester's tests ({files}) ran on no candidate: none passed before them"
            )));
        }
        if failed.len() == ran {
            let mut note = format!(
                "the tester's tests ({files}) failed on every candidate they ran on, so they were set aside (the tests may be wrong) and the choice was made without them:"
            );
            for (k, reason) in &failed {
                note.push_str(&format!("\n  - c{k}: {reason}"));
            }
            return Ok(Tested::not_held(note));
        }
        for (k, reason) in &failed {
            if let Some(c) = all.iter_mut().find(|c| c.number == *k) {
                c.passed = false;
                c.reason = reason.clone();
                // What it came to now: `status` shows it, and a resumed packet does not run
                // the tests on it again.
                self.record(c.ended(self.packet, self.rec.attempt))?;
            }
        }
        let dropped: Vec<String> = failed.iter().map(|(k, _)| format!("c{k}")).collect();
        let note = match dropped.len() {
            0 => format!("the tester's tests ({files}) passed on every candidate they ran on"),
            _ => format!(
                "the tester's tests ({files}) dropped {} before the choice",
                dropped.join(", ")
            ),
        };
        Ok(Tested { note, held: true })
    }

    /// Runs `commands` on candidate `k`'s commit `head` with the tester's tests brought over
    /// in a scratch checkout (removed after); returns why they failed, `None` when they passed.
    fn run_tests_on(
        &self,
        k: u32,
        head: &str,
        tests: &TesterTests,
        commands: &[String],
    ) -> Result<Option<String>, Halt> {
        let git = self.ctx.repo.git();
        let scratch = PathBuf::from(format!("{}.tested-c{k}", self.wt.display()));
        let remove = || {
            let _registrations = gitops::registration_lock();
            let _ = git.force_remove_worktree(&scratch);
            let _ = git.prune_worktrees();
        };
        remove();
        {
            let _registrations = gitops::registration_lock();
            git.add_detached_worktree(&scratch, head).map_err(|e| {
                Halt::Fail(format!(
                    "cannot check out candidate {k} to run the tester's tests: {e}"
                ))
            })?;
        }
        let mut step = self.clone();
        step.wt = scratch.clone();
        step.dir = self.dir.join(format!("tester-c{k}"));
        let outcome = step.run_tester_commands(tests, commands);
        remove();
        let files = tests.files.join(", ");
        Ok(outcome?.map(|(command, described, log, tail)| {
            format!(
                "the tester's tests ({files}) failed with `{command}` ({described}); log: {}\n{tail}",
                log.display()
            )
        }))
    }

    /// Brings the tester's tests into the step's (scratch) worktree and runs `commands` there,
    /// confined as the candidate's validation is; returns the first that failed, with how, its
    /// log and the end of its output.
    fn run_tester_commands(
        &self,
        tests: &TesterTests,
        commands: &[String],
    ) -> Result<Option<(String, String, PathBuf, String)>, Halt> {
        let git = gitops::Git::pinned(&self.ctx.repo.common_dir, &self.wt)
            .map_err(|e| Halt::Fail(format!("cannot run git in the scratch checkout: {e}")))?;
        git.restore_from(&tests.commit, &tests.files)
            .map_err(|e| Halt::Fail(format!("cannot bring the tester's tests over: {e}")))?;
        fs_err::create_dir_all(&self.dir)
            .map_err(|e| Halt::Fail(format!("cannot prepare the tester's tests' log: {e}")))?;
        let confine = match (self.ctx.worker_cmd, self.ctx.worker) {
            (None, Some(w)) => w.confine(),
            _ => self.ctx.sandboxes.validation.as_deref(),
        };
        let ran = self.run_validation_commands(commands, confine)?;
        Ok(ran
            .into_iter()
            .find(|(_, out, _)| !out.success())
            .map(|(c, out, log)| {
                (
                    c.clone(),
                    out.describe(self.ctx.timeout),
                    log,
                    // A test's output may print what it read: no credential reaches the notes.
                    crate::gate::mask_secrets(out.tail.trim_end()),
                )
            }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_testers_packet_keeps_the_id_and_asks_for_tests_only() {
        let packet: Packet = toml::from_str(
            "id = \"p1\"\ntitle = \"Parse dates\"\ndescription = \"Accept ISO dates\"\nfiles = [\"src/date.rs\"]\nvalidation = [\"cargo test\"]\nattempts = 3\n",
        )
        .unwrap();
        let tester = tester_packet(&packet);
        assert_eq!(tester.id, "p1", "its model calls count with the packet's");
        assert_eq!(tester.role, "tester");
        assert!(tester.files.iter().any(|f| f == "tests/**"));
        assert!(
            tester.validation.is_empty(),
            "its tests fail until the packet is done"
        );
        assert_eq!(tester.candidates(), 1);
        assert!(tester.description.contains("Accept ISO dates"));
        assert!(tester.description.contains("src/date.rs"));
        assert_eq!(
            tests_ref("r-1", "p1"),
            format!("{}p1", run_tests_prefix("r-1"))
        );
    }
}

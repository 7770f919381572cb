//! The steps of the batching loop that stand on their own: starting the integration branch,
//! validating a candidate, sending a packet back, and having a conflicting packet's worker
//! resolve its conflicts.

use std::sync::atomic::AtomicBool;

use super::MergeError;
use super::coordinator::{MergeOptions, is_ancestor, rev};
use super::report::SentBack;
use super::resolve::{
    BrokenValidation, ConflictJob, ConflictWorker, ResolveError, resolve as resolve_conflicts,
};
use super::tree::{MergeTree, commit_merge, merge_tree};
use crate::engine::Journal;
use crate::gate::{MovingScratch, run_validation_in};
use crate::plan::Plan;
use crate::store::Event;
use orchestra_git::git::{Expected, Git, GitError};

/// What sending a conflicting packet back to its worker needs, for the whole merge.
pub(super) struct Resolver<'a> {
    pub run_id: &'a str,
    pub objective: &'a str,
    pub records: &'a [crate::store::PacketRecord],
    pub plan: &'a Plan,
    pub worker: Option<ConflictWorker<'a>>,
    pub opts: &'a MergeOptions,
    pub branch: &'a str,
    pub dir: &'a orchestra_sys::exec::RunDir,
    /// The repository's common git directory (see `ConflictJob::common_dir`).
    pub common_dir: &'a std::path::Path,
    /// The repository (see `ConflictJob::repo`).
    pub repo: &'a orchestra_git::git::RepoInfo,
    pub stop: &'a AtomicBool,
    pub journal: &'a dyn Fn(Event) -> Result<(), crate::store::StoreError>,
}

impl Resolver<'_> {
    /// Has packet `id`'s worker resolve its conflicts with `onto` in `paths` (its `round`-th
    /// try): returns the resolved commit, or why the packet goes back unresolved.
    pub(super) fn resolve(
        &self,
        id: &str,
        onto: &str,
        paths: &[String],
        round: &mut u32,
    ) -> Result<Result<String, String>, MergeError> {
        let reason = format!("conflicts with {} in {}", self.branch, paths.join(", "));
        self.send_to_worker(id, onto, paths, None, reason, round)
    }

    /// Has packet `id`'s worker fix the validation its clean merge onto `onto` broke (its
    /// `round`-th try): returns the fixed commit, or why the packet goes back.
    pub(super) fn fix_broken(
        &self,
        id: &str,
        onto: &str,
        failure: &CandidateFailure,
        round: &mut u32,
    ) -> Result<Result<String, String>, MergeError> {
        let broken = BrokenValidation {
            command: &failure.command,
            tail: &failure.tail,
        };
        self.send_to_worker(id, onto, &[], Some(broken), failure.reason.clone(), round)
    }

    fn send_to_worker(
        &self,
        id: &str,
        onto: &str,
        paths: &[String],
        broken: Option<BrokenValidation<'_>>,
        reason: String,
        round: &mut u32,
    ) -> Result<Result<String, String>, MergeError> {
        let rec = self.records.iter().find(|r| r.id == id);
        let packet = self.plan.packets.iter().find(|p| p.id == id);
        let (Some(worker), Some(rec), Some(packet), true) =
            (self.worker, rec, packet, self.opts.resolve_rounds > 0)
        else {
            return Ok(Err(reason));
        };
        if *round >= self.opts.resolve_rounds {
            return Ok(Err(format!(
                "{reason}; still failing after {round} round{} with its worker",
                if *round == 1 { "" } else { "s" }
            )));
        }
        *round += 1;
        let r = ConflictJob {
            run: self.run_id,
            objective: self.objective,
            record: rec,
            packet,
            integration: self.branch,
            onto,
            paths,
            common_dir: self.common_dir,
            repo: self.repo,
            confine: match worker {
                ConflictWorker::Agent(w) => w.confine(),
                ConflictWorker::Command(_) => self.opts.sandboxes.validation.as_deref(),
            },
            worker_confine: self.opts.sandboxes.worker.as_deref(),
            dir: &self.dir.packet(id),
            round: *round,
            stop: self.stop,
            timeout: self.opts.timeout,
            revalidate: true,
            broken,
            journal: self.journal,
        };
        match resolve_conflicts(&r, worker) {
            Ok(commit) => Ok(Ok(commit)),
            Err(ResolveError::Store(e)) => Err(e.into()),
            // A resolution cut short by a stop request is not the worker's failure: the
            // packet is not sent back, and integrating again resolves it anew.
            Err(_) if self.stop.load(std::sync::atomic::Ordering::SeqCst) => {
                Err(MergeError::Interrupted {
                    run: self.run_id.to_string(),
                })
            }
            Err(e) => Ok(Err(format!("{reason}; {e}"))),
        }
    }
}

/// Returns the integration branch's tip: created at the target, kept when it already contains
/// the target, or caught up with a target that moved (an in-memory merge; conflicts refuse).
pub(super) fn start_integration(
    git: &Git,
    branch: &str,
    int_ref: &str,
    target: &str,
    target_tip: &str,
) -> Result<String, MergeError> {
    Ok(match rev(git, int_ref)? {
        None => {
            git.update_ref(int_ref, target_tip, Expected::Absent, None)
                .map_err(GitError::from)?;
            target_tip.to_string()
        }
        Some(t) if is_ancestor(git, target_tip, &t)? => t,
        Some(t) => match merge_tree(git, &t, target_tip)? {
            MergeTree::Clean { tree } => {
                let msg = format!("Merge {target} into {branch}");
                let c = commit_merge(git, &tree, &[&t, target_tip], &msg)?;
                git.update_ref(int_ref, &c, Expected::At(&t), None)
                    .map_err(GitError::from)?;
                c
            }
            MergeTree::Conflicts { paths } => {
                return Err(MergeError::TargetConflicts {
                    branch: branch.to_string(),
                    target: target.to_string(),
                    paths: paths.join(", "),
                });
            }
        },
    })
}

/// Journals that `packet` goes back to its worker, and why.
pub(super) fn send_back(
    journal: &Journal<'_>,
    sent_back: &mut Vec<SentBack>,
    packet: String,
    reason: String,
    conflicts: Vec<String>,
) -> Result<(), MergeError> {
    journal.record(Event::PacketSentBack {
        packet: packet.clone(),
        reason: reason.clone(),
    })?;
    sent_back.push(SentBack {
        packet,
        reason,
        conflicts,
        broken: None,
    });
    Ok(())
}

/// A validation command that failed on a candidate.
pub(super) struct CandidateFailure {
    /// For the report: the command, how it failed, where its log is.
    pub reason: String,
    pub command: String,
    /// The end of its output.
    pub tail: String,
}

/// Runs `commands` on the candidate commit in the merge's scratch checkout (moved to the
/// candidate, or made when it is the first), confined as `opts` says, journaling each outcome;
/// returns the first failure, described. A command `stop` cut short is not journaled: the
/// merge ends with [`MergeError::Interrupted`] and validates again when it is resumed.
pub(super) fn validate_candidate(
    scratch: &mut MovingScratch,
    journal: &Journal<'_>,
    candidate: &str,
    commands: &[String],
    packets: &[String],
    (opts, stop): (&super::MergeOptions, &AtomicBool),
    log_dir: &std::path::Path,
) -> Result<Option<CandidateFailure>, MergeError> {
    let timeout = opts.timeout;
    let confine = opts.sandboxes.validation.as_deref();
    let until = (timeout, stop);
    if commands.is_empty() {
        return Ok(None);
    }
    let dir = scratch.checkout(candidate)?;
    let results = run_validation_in(dir, candidate, commands, until, log_dir, confine)?;
    if results.iter().any(|(_, outcome, _)| outcome.interrupted) {
        return Err(MergeError::Interrupted {
            run: journal.run()?.id,
        });
    }
    let mut failure = None;
    for (command, outcome, log) in &results {
        journal.record(Event::MergeValidationFinished {
            packets: packets.to_vec(),
            command: command.clone(),
            exit_code: outcome.exit_code,
            duration_ms: outcome.duration.as_millis() as u64,
            timed_out: outcome.timed_out,
            tail: outcome.tail.clone(),
        })?;
        if !outcome.success() && failure.is_none() {
            failure = Some(CandidateFailure {
                reason: format!(
                    "validation `{command}` failed on the merged tree ({}); log {}",
                    outcome.describe(timeout),
                    log.display()
                ),
                command: command.clone(),
                tail: outcome.tail.clone(),
            });
        }
    }
    Ok(failure)
}

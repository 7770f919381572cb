//! One merge of a run: the packets to integrate in dependency order, the integration branch,
//! the batching loop (`batch`) over them, and the target advanced at the end.

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::MergeError;
use super::approval::{Approval, vouch_for_integration};
use super::batch::{Batcher, Item, Progress};
use super::report::MergeReport;
use super::resolve::ConflictWorker;
use super::steps::{Resolver, start_integration};
use crate::engine::{Journal, Worker};
use crate::plan::Plan;
use crate::store::{Event, PacketState, Store};
use orchestra_git::git::{Expected, Git, GitError, RefError, RepoInfo};
use orchestra_sys::exec::RunLock;
use orchestra_sys::names;

/// Default largest batch of packets validated together.
pub const DEFAULT_MAX_BATCH: usize = 8;

/// Default resolution rounds for a conflicting packet.
pub const DEFAULT_RESOLVE_ROUNDS: u32 = 2;

/// Choices for one merge.
#[derive(Debug, Clone)]
pub struct MergeOptions {
    /// The branch to advance at the end; default: the plan's base when it is a local branch,
    /// else the current branch.
    pub target: Option<String>,
    /// Longest one validation command may run.
    pub timeout: Duration,
    /// Largest batch validated at once (at least 1).
    pub max_batch: usize,
    /// How many times a conflicting packet goes back to its worker to resolve the conflicts
    /// in its worktree before it stays sent back; 0 sends it back at once.
    pub resolve_rounds: u32,
    /// Keep the worktrees of integrated packets instead of removing them (unsaved work saved
    /// first) once they are in.
    pub keep_worktrees: bool,
    /// How the merged tree's validation commands and a worker command resolving conflicts
    /// are confined.
    pub sandboxes: orchestra_sys::exec::process::Sandboxes,
    /// How many clean worktrees of integrated packets are parked for new packets instead of
    /// removed (`[worktree] recycle`).
    pub recycle_worktrees: usize,
    /// Run the commands of the packets integrated before a batch on its merged tree too
    /// (`[merge] revalidate_integrated`); otherwise a batch runs its own packets' commands.
    pub revalidate_integrated: bool,
}

impl Default for MergeOptions {
    fn default() -> Self {
        MergeOptions {
            target: None,
            timeout: orchestra_sys::exec::DEFAULT_TIMEOUT,
            max_batch: DEFAULT_MAX_BATCH,
            resolve_rounds: DEFAULT_RESOLVE_ROUNDS,
            keep_worktrees: false,
            sandboxes: Default::default(),
            recycle_worktrees: 0,
            revalidate_integrated: false,
        }
    }
}

impl MergeOptions {
    /// Returns the options the repository's configuration asks for: its command timeout
    /// (`[run] timeout`), kept and recycled worktrees, and `sandboxes` (built from
    /// `[sandbox]` by the agents' part, which this module sits below); the rest default.
    ///
    /// Every caller starts from here and overrides what its command line or request says.
    pub fn from_config(
        config: &crate::config::RepoConfig,
        sandboxes: orchestra_sys::exec::process::Sandboxes,
    ) -> Self {
        MergeOptions {
            timeout: config.timeout(None),
            keep_worktrees: config.keep_worktrees(),
            sandboxes,
            recycle_worktrees: config.recycle_worktrees(),
            revalidate_integrated: config.merge.revalidates_integrated(),
            ..Default::default()
        }
    }
}

/// Returns the integration branch of a run: `orchestra/<run>/integration`.
pub fn integration_branch(run: &str) -> String {
    names::packet_branch(run, "integration")
}

/// Integrates run `run_id`'s succeeded packets and advances the target; see the module docs.
/// Conflicts go back to the run's worker command, if it has one.
pub fn integrate(
    repo: &RepoInfo,
    run_id: &str,
    opts: &MergeOptions,
    on_event: &(dyn Fn(&str, &Event) + Sync),
) -> Result<MergeReport, MergeError> {
    integrate_with(repo, run_id, opts, None, on_event)
}

/// Integrates like [`integrate`], sending conflicting packets back to the run's worker
/// command or, for runs without one, to `agent`, to resolve in their worktrees and re-enter
/// the queue (at most `opts.resolve_rounds` times each).
pub fn integrate_with(
    repo: &RepoInfo,
    run_id: &str,
    opts: &MergeOptions,
    agent: Option<&dyn Worker>,
    on_event: &(dyn Fn(&str, &Event) + Sync),
) -> Result<MergeReport, MergeError> {
    // Nothing stops a stand-alone merge but the signal that kills it; merging again resumes.
    let stop = AtomicBool::new(false);
    integrate_until(repo, run_id, opts, (agent, &stop), on_event)
}

/// Integrates like [`integrate_with`] until `stop` is set, which ends the merge between steps
/// (or stops its validation) with [`MergeError::Interrupted`]; integrating again continues.
pub fn integrate_until(
    repo: &RepoInfo,
    run_id: &str,
    opts: &MergeOptions,
    (agent, stop): (Option<&dyn Worker>, &AtomicBool),
    on_event: &(dyn Fn(&str, &Event) + Sync),
) -> Result<MergeReport, MergeError> {
    let dir = orchestra_sys::exec::RunDir::new(&repo.common_dir, run_id);
    let _lock = RunLock::acquire(dir.path(), run_id)?;
    let store = Store::open(&repo.common_dir)?;
    let journal = Journal::new(store, run_id, on_event, None);
    integrate_journaled(repo, opts, agent, &journal, stop)
}

/// Integrates the journal's run like [`integrate_with`], for a caller that holds the run's
/// lock and journals the run itself (the engine, integrating a run asked to be merged, through
/// [`super::phase::RunIntegrator`]).
///
/// When `stop` is set the merge ends between steps with [`MergeError::Interrupted`]: a
/// conflict resolution it cut short sends nothing back, no `merge_finished` is journaled, and
/// integrating again later continues from the integration branch.
pub fn integrate_journaled(
    repo: &RepoInfo,
    opts: &MergeOptions,
    agent: Option<&dyn Worker>,
    journal: &Journal<'_>,
    stop: &AtomicBool,
) -> Result<MergeReport, MergeError> {
    let run = journal.run()?;
    let run_id = run.id.as_str();
    let dir = orchestra_sys::exec::RunDir::new(&repo.common_dir, run_id);
    let plan = run.plan().map_err(|e| MergeError::StoredPlan {
        run: run_id.to_string(),
        message: e.to_string(),
    })?;
    if plan.packets.iter().any(|p| p.id == "integration") {
        return Err(MergeError::IntegrationNameTaken {
            run: run_id.to_string(),
        });
    }
    let git = repo.git();
    let target = resolve_target(&git, repo, &plan, opts.target.as_deref())?;
    let target_ref = format!("refs/heads/{target}");
    let target_tip = rev(&git, &target_ref)?.ok_or_else(|| MergeError::BadTarget {
        target: target.clone(),
    })?;
    let branch = integration_branch(run_id);
    let int_ref = format!("refs/heads/{branch}");

    let tip = start_integration(&git, &branch, &int_ref, &target, &target_tip)?;

    let records = journal.packets()?;
    let (already, queue) = queue_packets(&git, &plan, &records, (&tip, &run.base))?;
    journal_found_integrated(journal, &already, &tip)?;
    journal.record(Event::MergeStarted {
        target: target.clone(),
        integration: branch.clone(),
        packets: queue.iter().map(|i| i.id.clone()).collect(),
        already: already.clone(),
    })?;
    let validations = validations_of(&plan, &already);
    let conflict_worker = match (&run.worker_cmd, agent) {
        (Some(cmd), _) => Some(ConflictWorker::Command(cmd.as_str())),
        (None, w) => w.map(ConflictWorker::Agent),
    };
    let record_event = |e| journal.record(e);
    let resolver = Resolver {
        run_id,
        objective: &run.objective,
        records: &records,
        plan: &plan,
        worker: conflict_worker,
        opts,
        branch: &branch,
        dir: &dir,
        common_dir: &repo.common_dir,
        repo,
        stop,
        journal: &record_event,
    };
    let batcher = Batcher {
        git: &git,
        journal,
        resolver: &resolver,
        opts,
        branch: &branch,
        int_ref: &int_ref,
        log_root: dir.merge_logs(),
        scratch: std::cell::RefCell::new(crate::gate::MovingScratch::new(
            repo,
            &format!("merge-{run_id}"),
        )),
    };
    let approval = Approval {
        repo,
        git: &git,
        run_id,
        run_base: &run.base,
        plan: &plan,
        records: &records,
    };
    let (mut progress, signers) = approval.progress(journal, queue, &already, tip, validations)?;
    while !progress.queue.is_empty() {
        interrupted(stop, run_id)?;
        batcher.step(&mut progress)?;
    }
    interrupted(stop, run_id)?;
    let ends = Ends {
        target,
        target_ref,
        target_tip,
        branch,
        already,
        signers,
    };
    conclude(repo, journal, &run, opts, ends, progress)
}

/// Journals as integrated the packets of `already` (found on the integration branch at `tip`)
/// whose journal does not say so: a merge killed between advancing the integration branch and
/// journaling it left them there, and reports read the journal.
fn journal_found_integrated(
    journal: &Journal<'_>,
    already: &[String],
    tip: &str,
) -> Result<(), MergeError> {
    if already.is_empty() {
        return Ok(());
    }
    let landing = journal.read(|s, run| {
        s.events_of_kinds(
            run,
            &[
                crate::store::EventKind::PacketIntegrated,
                crate::store::EventKind::PacketSentBack,
            ],
        )
    })?;
    for id in already {
        let said = landing.iter().rev().find_map(|e| match &e.event {
            Event::PacketIntegrated { packet, .. } if packet == id => Some(true),
            Event::PacketSentBack { packet, .. } if packet == id => Some(false),
            _ => None,
        });
        if said != Some(true) {
            journal.record(Event::PacketIntegrated {
                packet: id.clone(),
                commit: tip.to_string(),
            })?;
        }
    }
    Ok(())
}

/// Returns [`MergeError::Interrupted`] once `stop` is set.
fn interrupted(stop: &AtomicBool, run: &str) -> Result<(), MergeError> {
    if stop.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(MergeError::Interrupted {
            run: run.to_string(),
        });
    }
    Ok(())
}

/// What the end of a merge needs from its start.
struct Ends {
    target: String,
    target_ref: String,
    /// The target's tip when the merge started.
    target_tip: String,
    branch: String,
    already: Vec<String>,
    signers: Vec<std::collections::BTreeSet<String>>,
}

/// Advances the target to the integration tip (journaled first), vouches for the integrated
/// packets, releases their worktrees and journals the end of the merge.
fn conclude(
    repo: &RepoInfo,
    journal: &Journal<'_>,
    run: &crate::store::RunRecord,
    opts: &MergeOptions,
    ends: Ends,
    progress: Progress,
) -> Result<MergeReport, MergeError> {
    let git = repo.git();
    let Progress {
        tip,
        integrated,
        sent_back,
        batches,
        validations: validated,
        ..
    } = progress;
    let Ends {
        target,
        target_ref,
        target_tip,
        branch,
        already,
        signers,
    } = ends;
    journal.record(Event::TargetAdvancing {
        target: target.clone(),
        commit: tip.clone(),
    })?;
    let (target_advanced, target_note) =
        advance_target(repo, (&target, &target_ref), &target_tip, &tip)?;
    // The ref is compared, not the flag: a target already at the tip "advances" in place.
    let target_moved =
        target_advanced && rev(&git, &target_ref)?.as_deref() != Some(target_tip.as_str());
    if target_advanced {
        let merged: Vec<String> = already.iter().chain(&integrated).cloned().collect();
        let signed = (
            signers.as_slice(),
            validated.as_slice(),
            opts.revalidate_integrated,
        );
        vouch_for_integration(&git, &target_tip, &tip, &merged, signed)?;
    }
    release_worktrees(
        repo,
        journal,
        (run.id.as_str(), integrated.as_slice()),
        opts,
    )?;
    journal.record(Event::MergeFinished {
        integration: branch.clone(),
        commit: tip.clone(),
        integrated: integrated.clone(),
        sent_back: sent_back.iter().map(|s| s.packet.clone()).collect(),
        target_advanced,
        target_note: target_note.clone(),
        target_moved: Some(target_moved),
    })?;
    Ok(MergeReport {
        run: run.id.clone(),
        target,
        integration: branch,
        commit: tip,
        integrated,
        already_integrated: already,
        sent_back,
        batches,
        target_advanced,
        target_note,
        target_moved,
    })
}

/// Returns the validation commands of the packets in `already`, which every candidate runs.
fn validations_of(plan: &Plan, already: &[String]) -> Vec<String> {
    plan.packets
        .iter()
        .filter(|p| already.contains(&p.id))
        .flat_map(|p| p.validation.clone())
        .collect()
}

/// Returns the succeeded packets already in `tip` and, in dependency order, the ones still to
/// integrate.
fn queue_packets(
    git: &Git,
    plan: &Plan,
    records: &[crate::store::PacketRecord],
    (tip, base): (&str, &str),
) -> Result<(Vec<String>, VecDeque<Item>), MergeError> {
    let mut already = Vec::new();
    let mut queue = VecDeque::new();
    let succeeded: Vec<String> = records
        .iter()
        .filter(|r| r.state == PacketState::Succeeded)
        .filter_map(|r| r.commit.clone())
        .collect();
    // One git process for every packet's "already in the tip?", unless the answer is known.
    let in_tip = match descendants_of_base(records, &succeeded, base) {
        true if tip == base => succeeded.iter().filter(|c| *c == base).cloned().collect(),
        _ => git.ancestors_of(&succeeded, tip)?,
    };
    for packet in &plan.packets {
        let Some(rec) = records.iter().find(|r| r.id == packet.id) else {
            continue;
        };
        let (PacketState::Succeeded, Some(commit)) = (rec.state, rec.commit.clone()) else {
            continue;
        };
        if in_tip.contains(&commit) {
            already.push(packet.id.clone());
            continue;
        }
        queue.push_back(Item {
            id: packet.id.clone(),
            commit,
            deps: packet.depends_on.clone(),
            validation: packet.validation.clone(),
        });
    }
    // Plan order is not necessarily dependency order: stable topological sort.
    Ok((already, topo_order(queue).into()))
}

/// Returns true when every succeeded packet's commit is known to descend from `base` (or be
/// it): the engine commits a packet on its start, which is `base` or here another succeeded
/// packet's commit. Then, while the integration branch is still at `base`, only a commit that
/// is `base` itself is in it. A start git merged from several dependencies is not known so.
fn descendants_of_base(
    records: &[crate::store::PacketRecord],
    succeeded: &[String],
    base: &str,
) -> bool {
    records
        .iter()
        .filter(|r| r.state == PacketState::Succeeded)
        .all(|r| {
            r.start
                .as_deref()
                .is_some_and(|s| s == base || succeeded.iter().any(|c| c == s))
        })
}

/// Orders items so each comes after its dependencies, keeping plan order otherwise.
fn topo_order(items: VecDeque<Item>) -> Vec<Item> {
    let ids: HashSet<String> = items.iter().map(|i| i.id.clone()).collect();
    let mut pending: Vec<Item> = items.into();
    let mut placed: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    while !pending.is_empty() {
        let pos = pending
            .iter()
            .position(|i| {
                i.deps
                    .iter()
                    .all(|d| placed.contains(d) || !ids.contains(d))
            })
            .unwrap_or(0); // a cycle cannot pass plan validation; keep going regardless
        let item = pending.remove(pos);
        placed.insert(item.id.clone());
        out.push(item);
    }
    out
}

/// Fast-forwards the target to `tip`: in the worktree that has it checked out (so that
/// worktree follows), or by compare-and-swap on the ref. Returns whether it advanced and why
/// not otherwise. `started` is the target's tip the integration started from, which `tip`
/// contains (see `steps::start_integration`): a target still there needs no ancestry check.
fn advance_target(
    repo: &RepoInfo,
    (target, target_ref): (&str, &str),
    started: &str,
    tip: &str,
) -> Result<(bool, Option<String>), MergeError> {
    let git = repo.git();
    let current = rev(&git, target_ref)?.unwrap_or_default();
    if current == tip {
        return Ok((true, None));
    }
    if current != started && !is_ancestor(&git, &current, tip)? {
        return Ok((
            false,
            Some(format!(
                "{target} moved during the merge; run the merge again to bring it in"
            )),
        ));
    }
    // From the registrations' files: `git worktree list` would read every registered
    // worktree, parked and packet ones included.
    let checked_out = orchestra_git::git::registrations(repo)
        .into_iter()
        .find(|w| w.branch.as_deref() == Some(target_ref));
    if let Some(wt) = checked_out {
        return match Git::new(&wt.path).merge_ff_only(tip) {
            Ok(()) => Ok((true, None)),
            Err(GitError::Failed { stderr, .. }) => Ok((
                false,
                Some(format!(
                    "{target} is checked out in {} and could not fast-forward ({stderr}); run `git merge --ff-only {tip}` there",
                    wt.path.display()
                )),
            )),
            Err(e) => Err(e.into()),
        };
    }
    match git.update_ref(target_ref, tip, Expected::At(&current), None) {
        Ok(()) => Ok((true, None)),
        Err(RefError::RefMoved { .. }) => Ok((
            false,
            Some(format!(
                "{target} moved during the merge; run the merge again"
            )),
        )),
        Err(RefError::Git(e)) => Err(e.into()),
    }
}

fn resolve_target(
    git: &Git,
    repo: &RepoInfo,
    plan: &Plan,
    given: Option<&str>,
) -> Result<String, MergeError> {
    if let Some(t) = given {
        let t = t.strip_prefix("refs/heads/").unwrap_or(t);
        return if rev(git, &format!("refs/heads/{t}"))?.is_some() {
            Ok(t.to_string())
        } else {
            Err(MergeError::BadTarget {
                target: t.to_string(),
            })
        };
    }
    if let Some(base) = &plan.base {
        let b = base.strip_prefix("refs/heads/").unwrap_or(base);
        if rev(git, &format!("refs/heads/{b}"))?.is_some() {
            return Ok(b.to_string());
        }
    }
    repo.branch.clone().ok_or(MergeError::NoTarget)
}

/// Returns the commit `spec` names, `None` when it names none.
pub(super) fn rev(git: &Git, spec: &str) -> Result<Option<String>, MergeError> {
    Ok(git.resolve_commit(spec)?)
}

/// Returns true if and only if commit `a` is an ancestor of (or equal to) commit `b`.
pub(super) fn is_ancestor(git: &Git, a: &str, b: &str) -> Result<bool, MergeError> {
    Ok(git.is_ancestor(a, b)?)
}

/// Removes (or parks for recycling) the worktrees of the packets just integrated, unless
/// `[run] keep_worktrees` keeps them.
fn release_worktrees(
    repo: &RepoInfo,
    journal: &Journal<'_>,
    (run_id, integrated): (&str, &[String]),
    opts: &MergeOptions,
) -> Result<(), MergeError> {
    if opts.keep_worktrees {
        return Ok(());
    }
    let recycle = opts.recycle_worktrees;
    // Read again: a worktree parked when its packet succeeded, or checked out again since to
    // resolve a conflict, is journaled after the merge read its records; a park still under
    // way (it goes on while the merge starts) is waited for.
    crate::engine::wait_for_parks();
    let records = journal.packets()?;
    crate::engine::gc::remove_integrated(repo, journal, run_id, &records, integrated, recycle)
        .map_err(|e| MergeError::Worktree(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_from_config_take_the_timeout_and_worktree_settings() {
        let mut config = crate::config::RepoConfig::default();
        config.run.timeout_secs = Some(42);
        config.run.keep_worktrees = Some(true);
        config.worktree.recycle = Some(3);
        let o = MergeOptions::from_config(&config, Default::default());
        assert_eq!(o.timeout, Duration::from_secs(42));
        assert!(o.keep_worktrees);
        assert_eq!(o.recycle_worktrees, 3);
        assert_eq!(o.max_batch, DEFAULT_MAX_BATCH);
        assert_eq!(o.resolve_rounds, DEFAULT_RESOLVE_ROUNDS);
        assert_eq!(o.target, None);
    }
}

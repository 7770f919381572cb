//! The batching loop: merge a batch in memory, validate the candidate, advance the
//! integration branch by compare-and-swap; grow the batch on success, halve it on failure.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::MergeError;
use super::report::{Batch, MergeReport, SentBack};
use super::resolve::ConflictWorker;
use super::steps::{Resolver, send_back, start_integration, validate_candidate};
use super::tree::{MergeTree, commit_merge, merge_tree};
use crate::engine::{Journal, Worker};
use crate::exec::RunLock;
use crate::git::{Expected, Git, GitError, RefError, RepoInfo};
use crate::names;
use crate::plan::Plan;
use crate::store::{Event, PacketState, Store};

/// Default largest batch of packets validated together.
pub const DEFAULT_MAX_BATCH: usize = 8;

/// Default resolution rounds for a conflicting packet.
pub const DEFAULT_RESOLVE_ROUNDS: u32 = 2;

/// How many times a batch is retried because the integration branch moved underneath it.
const MAX_CAS_RETRIES: usize = 5;

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
}

impl Default for MergeOptions {
    fn default() -> Self {
        MergeOptions {
            target: None,
            timeout: crate::exec::DEFAULT_TIMEOUT,
            max_batch: DEFAULT_MAX_BATCH,
            resolve_rounds: DEFAULT_RESOLVE_ROUNDS,
        }
    }
}

/// Returns the integration branch of a run: `orchestra/<run>/integration`.
pub fn integration_branch(run: &str) -> String {
    names::packet_branch(run, "integration")
}

struct Item {
    id: String,
    commit: String,
    deps: Vec<String>,
    validation: Vec<String>,
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
    let dir = crate::exec::run_dir(&repo.common_dir, run_id);
    let _lock = RunLock::acquire(&dir, run_id)?;
    let store = Store::open(&repo.common_dir)?;
    let run = store.require_run(run_id)?;
    let plan = Plan::from_toml_str(&run.plan_toml, &run.plan_path).map_err(|e| {
        MergeError::StoredPlan {
            run: run_id.to_string(),
            message: e.to_string(),
        }
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

    let mut tip = start_integration(&git, &branch, &int_ref, &target, &target_tip)?;

    let records = store.packets(run_id)?;
    let journal = Journal::new(store, run_id, on_event, None);
    let mut already = Vec::new();
    let mut queue = VecDeque::new();
    for packet in &plan.packets {
        let Some(rec) = records.iter().find(|r| r.id == packet.id) else {
            continue;
        };
        let (PacketState::Succeeded, Some(commit)) = (rec.state, rec.commit.clone()) else {
            continue;
        };
        if is_ancestor(&git, &commit, &tip)? {
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
    let queue = topo_order(queue);
    let mut queue: VecDeque<Item> = queue.into();
    journal.record(Event::MergeStarted {
        target: target.clone(),
        integration: branch.clone(),
        packets: queue.iter().map(|i| i.id.clone()).collect(),
    })?;

    let mut integrated: Vec<String> = Vec::new();
    let mut validations: Vec<String> = plan
        .packets
        .iter()
        .filter(|p| already.contains(&p.id))
        .flat_map(|p| p.validation.clone())
        .collect();
    let mut sent_back: Vec<SentBack> = Vec::new();
    let mut batches = Vec::new();
    let mut size = 1usize;
    let mut retries = 0usize;
    let log_root = dir.join("merge");
    let mut attempt = 0usize;
    let conflict_worker = match (&run.worker_cmd, agent) {
        (Some(cmd), _) => Some(ConflictWorker::Command(cmd.as_str())),
        (None, Some(w)) => Some(ConflictWorker::Agent(w)),
        (None, None) => None,
    };
    let mut rounds: HashMap<String, u32> = HashMap::new();
    let stop = AtomicBool::new(false);
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
        stop: &stop,
        journal: &record_event,
    };
    while !queue.is_empty() {
        // Take up to `size` packets whose dependencies are all integrated (or not in the run's
        // succeeded set at all: those were never candidates); send back dependents of packets
        // that were sent back.
        let blocked: HashSet<String> = sent_back.iter().map(|s| s.packet.clone()).collect();
        let mut batch: Vec<Item> = Vec::new();
        let mut rest = VecDeque::new();
        while let Some(item) = queue.pop_front() {
            if let Some(dep) = item.deps.iter().find(|d| blocked.contains(*d)) {
                let reason = format!("its dependency `{dep}` was not integrated");
                send_back(&journal, &mut sent_back, item.id, reason, Vec::new())?;
                continue;
            }
            if batch.len() < size {
                batch.push(item);
            } else {
                rest.push_back(item);
            }
        }
        queue = rest;
        if batch.is_empty() {
            continue;
        }

        // Merge the batch in memory on top of the confirmed tip.
        let base_tip = tip.clone();
        let mut candidate = tip.clone();
        let mut merged: Vec<Item> = Vec::new();
        let mut postponed: Vec<Item> = Vec::new();
        for mut item in batch {
            match merge_tree(&git, &candidate, &item.commit)? {
                MergeTree::Clean { tree } => {
                    let msg = format!("Merge packet {} into {branch}", item.id);
                    candidate = commit_merge(&git, &tree, &[&candidate, &item.commit], &msg)?;
                    merged.push(item);
                }
                MergeTree::Conflicts { paths } if merged.is_empty() => {
                    journal.record(Event::PacketConflicted {
                        packet: item.id.clone(),
                        paths: paths.clone(),
                    })?;
                    let round = rounds.entry(item.id.clone()).or_insert(0);
                    match resolver.resolve(&item.id, &tip, &paths, round)? {
                        Ok(commit) => {
                            // Back into the queue with the resolved commit.
                            item.commit = commit;
                            postponed.push(item);
                            continue;
                        }
                        Err(reason) => {
                            send_back(&journal, &mut sent_back, item.id, reason, paths)?;
                        }
                    }
                }
                // It may only conflict with a batch-mate that could still fail validation:
                // try it again on its own, on the confirmed tip.
                MergeTree::Conflicts { .. } => postponed.push(item),
            }
        }
        for item in postponed.into_iter().rev() {
            queue.push_front(item);
        }
        if merged.is_empty() {
            continue;
        }

        // Validate the candidate with the commands of everything integrated so far.
        let mut commands = validations.clone();
        for item in &merged {
            commands.extend(item.validation.iter().cloned());
        }
        let mut seen = HashSet::new();
        commands.retain(|c| seen.insert(c.clone()));
        attempt += 1;
        let names: Vec<String> = merged.iter().map(|i| i.id.clone()).collect();
        let failure = validate_candidate(
            repo,
            &journal,
            &candidate,
            &commands,
            &names,
            opts.timeout,
            &log_root.join(format!("batch-{attempt}")),
        )?;
        let passed = failure.is_none();
        batches.push(Batch {
            packets: names.clone(),
            candidate: candidate.clone(),
            passed,
        });
        if let Some(reason) = failure {
            if merged.len() == 1 {
                let item = merged.remove(0);
                send_back(&journal, &mut sent_back, item.id, reason, Vec::new())?;
            } else {
                size = (merged.len() / 2).max(1);
                for item in merged.into_iter().rev() {
                    queue.push_front(item);
                }
            }
            continue;
        }

        // Advance the integration branch only if nobody else moved it meanwhile.
        match git.update_ref(&int_ref, &candidate, Expected::At(&base_tip), None) {
            Ok(()) => {}
            Err(RefError::RefMoved { .. }) if retries < MAX_CAS_RETRIES => {
                retries += 1;
                tip = rev(&git, &int_ref)?.ok_or_else(|| MergeError::Contended {
                    branch: branch.clone(),
                })?;
                for item in merged.into_iter().rev() {
                    queue.push_front(item);
                }
                continue;
            }
            Err(RefError::RefMoved { .. }) => return Err(MergeError::Contended { branch }),
            Err(RefError::Git(e)) => return Err(e.into()),
        }
        tip = candidate;
        for item in merged {
            journal.record(Event::PacketIntegrated {
                packet: item.id.clone(),
                commit: tip.clone(),
            })?;
            validations.extend(item.validation);
            integrated.push(item.id);
        }
        size = (size * 2).min(opts.max_batch.max(1));
    }

    let (target_advanced, target_note) = advance_target(repo, &target, &target_ref, &tip)?;
    journal.record(Event::MergeFinished {
        integration: branch.clone(),
        commit: tip.clone(),
        integrated: integrated.clone(),
        sent_back: sent_back.iter().map(|s| s.packet.clone()).collect(),
        target_advanced,
    })?;
    Ok(MergeReport {
        run: run_id.to_string(),
        target,
        integration: branch,
        commit: tip,
        integrated,
        already_integrated: already,
        sent_back,
        batches,
        target_advanced,
        target_note,
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
/// not otherwise.
fn advance_target(
    repo: &RepoInfo,
    target: &str,
    target_ref: &str,
    tip: &str,
) -> Result<(bool, Option<String>), MergeError> {
    let git = repo.git();
    let current = rev(&git, target_ref)?.unwrap_or_default();
    if current == tip {
        return Ok((true, None));
    }
    if !is_ancestor(&git, &current, tip)? {
        return Ok((
            false,
            Some(format!(
                "{target} moved during the merge; run the merge again to bring it in"
            )),
        ));
    }
    let checked_out = crate::git::list(repo)
        .map_err(|e| MergeError::Worktree(e.to_string()))?
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

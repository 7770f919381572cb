//! Subtask packets: a packet's agent hands a self-contained part of its work to a child agent
//! (`spawn_subtask`), waits for it, and gets its work merged into its own worktree.
//!
//! A child is a packet of its own — id `<parent>.s<n>`, branch `orchestra/<run>/<parent>-s<n>`,
//! its own worktree beside the parent's — forked from the parent's committed work (the
//! parent's work in progress is committed first, under the engine's identity and trailers).
//! It goes through the usual steps: agent, commit, scope check, validation; then its branch is
//! merged in memory with the parent's and the parent's worktree fast-forwards to the merge.
//! A conflict is returned to the parent, the child's work staying on its branch.
//!
//! Every step is journaled before the next: a resumed parent that asks for the same subtask
//! again gets the finished one's result without rerunning it, and an unfinished one resumes in
//! its worktree with its model turns replayed. Ids are numbered in the order of distinct
//! requests, so a replayed parent finds the same ids.

use std::path::PathBuf;

use super::start_journal::WorkflowEvent;
use super::start_worker::{AgentJob, StartWorker};
use crate::agent::{SubtaskRequest, WorkerState};
use orchestra_core::plan::{DEFAULT_ROLE, Packet};
use orchestra_git::git::MergeOutcome;
use orchestra_git::git::commit::{self, Trailers};
use orchestra_git::git::{self as gitops, Git, RepoInfo, Reuse, WorktreeRequest};
use orchestra_sys::exec::process::{self, Spec};
use orchestra_sys::names;

/// Default deepest nesting of subtasks: a subtask cannot spawn subtasks of its own.
pub const DEFAULT_DEPTH: u32 = 1;
/// Default most subtasks one packet may spawn.
pub const DEFAULT_PER_PACKET: u32 = 3;

/// What the journal knows of a parent's subtasks.
struct Known {
    /// Ids and requests of the parent's subtasks, in spawning order.
    spawned: Vec<(String, SubtaskRequest)>,
    /// The `SubtaskFinished` events, by child id.
    finished: Vec<WorkflowEvent>,
}

fn known(worker: &StartWorker, parent: &str) -> Result<Known, String> {
    let entries = worker
        .journal()
        .lock()
        .map_err(|_| "the workflow journal is unavailable".to_string())?
        .entries()
        .map_err(|e| e.to_string())?;
    let mut k = Known {
        spawned: Vec::new(),
        finished: Vec::new(),
    };
    for e in entries {
        match e.event {
            WorkflowEvent::SubtaskSpawned {
                parent: p,
                child,
                title,
                description,
                role,
                files,
                validation,
                ..
            } if p == parent => k.spawned.push((
                child,
                SubtaskRequest {
                    title,
                    description,
                    files,
                    validation,
                    role: Some(role),
                },
            )),
            event @ WorkflowEvent::SubtaskFinished { .. } => k.finished.push(event),
            _ => {}
        }
    }
    Ok(k)
}

fn same_request(a: &SubtaskRequest, b: &SubtaskRequest) -> bool {
    a.title == b.title
        && a.description == b.description
        && a.files == b.files
        && a.validation == b.validation
        && a.role.as_deref().unwrap_or(DEFAULT_ROLE) == b.role.as_deref().unwrap_or(DEFAULT_ROLE)
}

/// Runs the subtask `req` of the agent doing `parent` (a `role` agent), to its end; returns
/// what the parent is told.
pub(super) fn spawn(
    worker: &StartWorker,
    parent: &AgentJob<'_>,
    role: &str,
    req: &SubtaskRequest,
) -> Result<String, String> {
    let k = known(worker, &parent.packet.id)?;
    let child = child_packet(worker, parent, req, &k)?;
    let id = child.id.clone();
    let branch = names::packet_branch(parent.run, &id);
    if let Some((commit, message, ok)) = finished(&k, &id) {
        // Finished before a restart: make sure its work is in the parent, never redo it.
        if let (true, Some(commit)) = (ok, commit) {
            merge_into_parent(parent, &id, &commit)?;
        }
        return if ok { Ok(message) } else { Err(message) };
    }
    let base = fork(worker, parent, role, &child, &branch, &k)?;
    let worktree = child_worktree(parent, &id, &branch, &base)?;
    let result = run_child(worker, parent, &child, &worktree, &base);
    let (state, summary, commit, changed, message) = match result {
        Err(Stop::Interrupted) => return Err("cancelled: the run is stopping".into()),
        Err(Stop::Failed(reason)) => {
            let message = format!(
                "subtask {id} did not complete: {reason}; its work stays in {} on branch {branch}",
                worktree.display()
            );
            ("failed", reason, None, Vec::new(), message)
        }
        Ok((summary, head, changed)) => match merge_into_parent(parent, &id, &head) {
            Ok(()) => {
                let message = format!(
                    "Subtask {id} completed; its work (commit {}, branch {branch}) is merged into your worktree. Changed: {}. Its summary: {summary}",
                    &head[..head.len().min(12)],
                    if changed.is_empty() {
                        "nothing".to_string()
                    } else {
                        changed.join(", ")
                    }
                );
                ("completed", summary, Some(head), changed, message)
            }
            Err(conflict) => ("failed", conflict.clone(), None, changed, conflict),
        },
    };
    worker.record(&WorkflowEvent::SubtaskFinished {
        parent: parent.packet.id.clone(),
        child: id,
        state: state.to_string(),
        summary,
        commit,
        changed,
        message: message.clone(),
    });
    if state == "completed" {
        Ok(message)
    } else {
        Err(message)
    }
}

/// Returns the child packet `req` asks for, with the id it already has (same request) or the
/// next one; refuses beyond the depth and per-packet limits or for an unknown role.
fn child_packet(
    worker: &StartWorker,
    parent: &AgentJob<'_>,
    req: &SubtaskRequest,
    k: &Known,
) -> Result<Packet, String> {
    let cfg = &worker.models().config.agents;
    let max_depth = cfg.subtask_depth.unwrap_or(DEFAULT_DEPTH);
    if parent.depth + 1 > max_depth {
        return Err(format!(
            "depth limit: `{}` is itself a subtask, and subtasks nest at most {max_depth} deep ([agents] subtask_depth); do this part yourself",
            parent.packet.id
        ));
    }
    let child_role = req.role.clone().unwrap_or_else(|| DEFAULT_ROLE.to_string());
    worker
        .models()
        .roles
        .get(&child_role)
        .map_err(|e| e.to_string())?;
    let id = match k.spawned.iter().find(|(_, r)| same_request(r, req)) {
        Some((id, _)) => id.clone(),
        None => {
            let max = cfg.subtasks_per_packet.unwrap_or(DEFAULT_PER_PACKET);
            if k.spawned.len() as u32 >= max {
                return Err(format!(
                    "subtask limit: packet `{}` already spawned {} subtasks, the most allowed ([agents] subtasks_per_packet); do the rest yourself",
                    parent.packet.id,
                    k.spawned.len()
                ));
            }
            format!("{}.s{}", parent.packet.id, k.spawned.len() + 1)
        }
    };
    Ok(Packet {
        id,
        title: req.title.clone(),
        role: child_role,
        description: req.description.clone(),
        files: req.files.clone(),
        depends_on: Vec::new(),
        validation: req.validation.clone(),
        acceptance: Vec::new(),
        risks: Vec::new(),
        may_be_empty: false,
        risky: false,
        attempts: None,
        symbols: Vec::new(),
    })
}

/// Returns the journaled end of child `id` — its commit, what the parent was told, and
/// whether it completed — or `None` when it has not finished.
fn finished(k: &Known, id: &str) -> Option<(Option<String>, String, bool)> {
    k.finished.iter().find_map(|e| match e {
        WorkflowEvent::SubtaskFinished {
            child: c,
            commit,
            message,
            state,
            ..
        } if c == id => Some((commit.clone(), message.clone(), state == "completed")),
        _ => None,
    })
}

/// Commits the parent's work in progress (a `role` agent's) and journals the child as spawned
/// from it, once; returns the commit the child starts from.
fn fork(
    worker: &StartWorker,
    parent: &AgentJob<'_>,
    role: &str,
    child: &Packet,
    branch: &str,
    k: &Known,
) -> Result<String, String> {
    let id = &child.id;
    let trailers = Trailers {
        run: parent.run,
        packet: &parent.packet.id,
        role,
    };
    let git = pinned(parent.common_dir, parent.worktree)?;
    commit::commit_all(
        &git,
        &commit::message(
            &format!(
                "Work in progress of {} before subtask {id}",
                parent.packet.id
            ),
            &trailers,
        ),
    )
    .map_err(|e| format!("cannot commit your work in progress before the subtask: {e}"))?;
    let base = git.head().map_err(|e| e.to_string())?;
    if !k.spawned.iter().any(|(c, _)| c == id) {
        worker.record(&WorkflowEvent::SubtaskSpawned {
            parent: parent.packet.id.clone(),
            child: id.clone(),
            title: child.title.clone(),
            description: child.description.clone(),
            role: child.role.clone(),
            files: child.files.clone(),
            validation: child.validation.clone(),
            branch: branch.to_string(),
            base: base.clone(),
        });
    }
    Ok(base)
}

/// Why a child ended without work to merge.
enum Stop {
    Failed(String),
    Interrupted,
}

/// Creates (or, on resume, reuses) the child's worktree beside the parent's.
fn child_worktree(
    parent: &AgentJob<'_>,
    id: &str,
    branch: &str,
    base: &str,
) -> Result<PathBuf, String> {
    // The repository as its common directory names it (its main working tree), never as the
    // parent's writable `.git` file would.
    let main = parent.common_dir.parent().unwrap_or(parent.common_dir);
    let repo = RepoInfo::discover(main).map_err(|e| e.to_string())?;
    let dir = parent
        .worktree
        .parent()
        .unwrap_or(parent.worktree)
        .join(names::sanitize(id, 64));
    let request = WorktreeRequest {
        repo: &repo,
        path: &dir,
        branch,
        base,
        reuse: Reuse::ReportDirty,
    };
    gitops::create_repairing(&request, true)
        .map_err(|e| format!("cannot prepare the subtask's worktree: {e}"))?;
    Ok(dir)
}

/// Runs the child's agent, commits its work, checks its scope and runs its validation;
/// returns its summary, commit and changed paths.
fn run_child(
    worker: &StartWorker,
    parent: &AgentJob<'_>,
    child: &Packet,
    worktree: &std::path::Path,
    base: &str,
) -> Result<(String, String, Vec<String>), Stop> {
    let dir = parent
        .log
        .parent()
        .unwrap_or(parent.worktree)
        .join(names::sanitize(&child.id, 64));
    let log = dir.join("worker.log");
    let job = AgentJob {
        run: parent.run,
        objective: parent.objective,
        packet: child,
        worktree,
        common_dir: parent.common_dir,
        log: &log,
        stop: parent.stop,
        timeout: parent.timeout,
        fixes: None,
        depth: parent.depth + 1,
        dependencies: "",
        journal: None,
        profile: None,
        strategy: None,
    };
    let mut transcript = crate::agent::open_transcript(&log);
    let outcome = worker
        .run_agent(&job, &mut transcript)
        .map_err(Stop::Failed)?;
    match outcome.state {
        WorkerState::Completed => {}
        WorkerState::Cancelled if parent.stop.load(std::sync::atomic::Ordering::SeqCst) => {
            return Err(Stop::Interrupted);
        }
        state => {
            return Err(Stop::Failed(format!(
                "{}: {}",
                state.as_str(),
                outcome.reason
            )));
        }
    }
    let summary = outcome.summary.unwrap_or_default();
    let failed = |what: &str, e: &dyn std::fmt::Display| Stop::Failed(format!("{what}: {e}"));
    let git = pinned(parent.common_dir, worktree).map_err(Stop::Failed)?;
    commit::commit_all(
        &git,
        &commit::message(
            &child.title,
            &Trailers {
                run: parent.run,
                packet: &child.id,
                role: &child.role,
            },
        ),
    )
    .map_err(|e| failed("cannot commit its work", &e))?;
    let head = git
        .head()
        .map_err(|e| failed("cannot read its branch", &e))?;
    let changed = commit::changed_paths(&git, base, &head)
        .map_err(|e| failed("cannot list its changes", &e))?;
    let scope = child
        .scope()
        .map_err(|e| failed("invalid file scope", &e))?;
    let outside: Vec<String> = scope
        .violations(changed.iter().map(String::as_str))
        .iter()
        .map(|p| orchestra_core::gate::mask_secrets(p))
        .collect();
    if !outside.is_empty() {
        return Err(Stop::Failed(format!(
            "it changed files outside its declared scope: {} (declared: {})",
            outside.join(", "),
            child.files.join(", ")
        )));
    }
    for (n, command) in child.validation.iter().enumerate() {
        let spec = Spec {
            command,
            dir: worktree,
            env: &[],
            log: &dir.join(format!("validate-{}.log", n + 1)),
            timeout: parent.timeout,
            // The agent chose these commands: they run in its sandbox.
            confine: orchestra_core::engine::Worker::confine(worker),
        };
        let out = process::run(&spec, parent.stop, &mut |_| {})
            .map_err(|e| failed("cannot run its validation", &e))?;
        if out.interrupted {
            return Err(Stop::Interrupted);
        }
        if !out.success() {
            return Err(Stop::Failed(format!(
                "validation `{command}` failed ({}): {}",
                out.describe(parent.timeout),
                out.tail
            )));
        }
    }
    Ok((summary, head, changed))
}

/// Merges commit `child` into the parent's branch in memory and moves the parent's worktree
/// to the result (a fast-forward: the parent's work was committed before the child forked).
fn merge_into_parent(parent: &AgentJob<'_>, id: &str, child: &str) -> Result<(), String> {
    let git = pinned(parent.common_dir, parent.worktree)?;
    let head = git.head().map_err(|e| e.to_string())?;
    let message = format!(
        "Merge subtask {id} into {}\n\nOrchestra-Run: {}\nOrchestra-Packet: {}\n",
        parent.packet.id, parent.run, parent.packet.id
    );
    match git.merge_in_memory(&head, child, &message) {
        Ok(MergeOutcome::Merged(merged)) if merged == head => Ok(()),
        Ok(MergeOutcome::Merged(merged)) => git.merge_ff_only(&merged).map_err(|e| {
            format!("subtask {id}'s work could not be brought into your worktree: {e}")
        }),
        Ok(MergeOutcome::Conflict(paths)) => Err(format!(
            "subtask {id}'s work conflicts with yours in {}; it stays on branch {} — resolve by redoing that part yourself",
            paths.join(", "),
            names::packet_branch(parent.run, id)
        )),
        Err(e) => Err(format!("cannot merge subtask {id}'s work: {e}")),
    }
}

/// Returns the engine's git runner for an agent's worktree, pinned to its registration (see
/// [`Git::pinned`]): an agent that changed its `.git` gets the refusal as its tool error.
fn pinned(common_dir: &std::path::Path, worktree: &std::path::Path) -> Result<Git, String> {
    Git::pinned(common_dir, worktree).map_err(|e| format!("cannot run git in the worktree: {e}"))
}

//! Resolution of a packet the merge sent back for conflicts, in the packet's own worktree:
//! merge the integration tip into the packet's branch leaving conflict markers, let the
//! packet's worker resolve them, commit with the engine's trailers, then re-check the packet's
//! scope and validation so the new commit can re-enter the merge queue.
//!
//! The worker is whatever the run has: an external command (re-run in the worktree with
//! `ORCHESTRA_FIXES_FILE` naming a Markdown file that lists the conflicting paths) or an
//! in-process [`Worker`] such as our agents. A failed attempt aborts the merge, so the packet's
//! own commits are never lost.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::engine::{Worker, WorkerJob};
use crate::gate;
use crate::plan::Packet;
use crate::store::{Event, PacketRecord, StoreError};
use orchestra_git::git::commit::{self, Trailers};
use orchestra_git::git::{self, Git, MergeStart};
use orchestra_sys::exec::process::{self, Spec};

/// Why a conflict was not resolved; the packet stays sent back with this reason.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error(
        "packet `{packet}`: its worktree {path} is gone and could not be checked out again ({reason}); resolve on branch {branch} by hand"
    )]
    NoWorktree {
        packet: String,
        path: String,
        branch: String,
        reason: String,
    },
    #[error(
        "packet `{packet}`: its worktree {path} has uncommitted changes; commit or discard them and merge again"
    )]
    Dirty { packet: String, path: String },
    #[error("packet `{packet}`: {message}")]
    Git { packet: String, message: String },
    #[error("packet `{packet}`: git refused to start the merge ({kind}): {message}")]
    MergeRefused {
        packet: String,
        kind: git::FailureKind,
        message: String,
    },
    #[error("packet `{packet}`: the worker did not resolve the conflicts: {reason}")]
    Unresolved { packet: String, reason: String },
    #[error("packet `{packet}`: the resolution was committed as {commit} but {reason}")]
    Rejected {
        packet: String,
        commit: String,
        reason: String,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Who resolves the conflicts.
#[derive(Clone, Copy)]
pub enum ConflictWorker<'a> {
    /// An external command, run with `sh -c` in the packet's worktree.
    Command(&'a str),
    /// An in-process worker (our agents).
    Agent(&'a dyn Worker),
}

/// A validation command that failed on the merged tree: what a packet sent back for it must fix.
#[derive(Debug, Clone, Copy)]
pub struct BrokenValidation<'a> {
    pub command: &'a str,
    /// The end of the command's output.
    pub tail: &'a str,
}

/// Describes one conflicted packet to resolve: which packet, onto what, where its notes go and
/// how each step is journaled; both `merge` and `start` build it.
pub struct ConflictJob<'a> {
    pub run: &'a str,
    pub objective: &'a str,
    pub record: &'a PacketRecord,
    pub packet: &'a Packet,
    /// The integration branch's name, for messages.
    pub integration: &'a str,
    /// The commit (or ref) the packet must merge in: the confirmed integration tip.
    pub onto: &'a str,
    pub paths: &'a [String],
    /// The repository's common git directory: git runs in the worktree pinned to it.
    pub common_dir: &'a Path,
    /// The repository, where the packet's worktree is checked out again when it was parked
    /// or removed after the packet succeeded.
    pub repo: &'a git::RepoInfo,
    /// The confinement of the packet's validation commands (our agents' sandbox), if any.
    pub confine: Option<&'a process::Confine>,
    /// The confinement of a worker command resolving the conflicts.
    pub worker_confine: Option<&'a process::Confine>,
    /// Where the fixes file and the logs go.
    pub dir: &'a Path,
    /// The round, from 1; names the fixes file and logs.
    pub round: u32,
    pub stop: &'a AtomicBool,
    pub timeout: Duration,
    /// Re-run the packet's scope check and validation commands on the resolution.
    pub revalidate: bool,
    /// Set when the packet merged cleanly but broke this validation command on the merged
    /// tree: the worker fixes that instead of conflicts (`paths` is then empty).
    pub broken: Option<BrokenValidation<'a>>,
    /// Journals one event of the resolution durably.
    pub journal: &'a dyn Fn(Event) -> Result<(), StoreError>,
}

/// Resolves one conflicted packet with `worker`; returns the packet's new, journaled commit.
pub fn resolve(r: &ConflictJob<'_>, worker: ConflictWorker<'_>) -> Result<String, ResolveError> {
    let id = &r.packet.id;
    // A succeeded packet's worktree may have been parked for other packets (or removed):
    // checked out again on the packet's branch, which holds all of its work.
    let wt = crate::engine::restore_worktree(r.repo, r.record, r.journal).map_err(|e| match e {
        crate::engine::RestoreError::Store(e) => ResolveError::Store(e),
        e => ResolveError::NoWorktree {
            packet: id.clone(),
            path: r.record.worktree.clone(),
            branch: r.record.branch.clone(),
            reason: e.to_string(),
        },
    })?;
    let g = Git::pinned(r.common_dir, &wt).map_err(|e| ResolveError::Git {
        packet: id.clone(),
        message: e.to_string(),
    })?;
    let gerr = |e: git::GitError| ResolveError::Git {
        packet: id.clone(),
        message: e.to_string(),
    };
    // A resumed resolution finds the merge already under way.
    let merging = g.is_merging().map_err(gerr)?;
    if !merging {
        if !g
            .status_porcelain(git::Untracked::Normal)
            .map_err(gerr)?
            .is_empty()
        {
            return Err(ResolveError::Dirty {
                packet: id.clone(),
                path: r.record.worktree.clone(),
            });
        }
        // Only a merge that stopped with conflicts goes to the worker; one git refused (no
        // identity, a held lock, local changes) is reported as what it is.
        match g.merge_no_commit(r.onto) {
            Ok(MergeStart::Conflicted) => {}
            // It merges cleanly now (the integration branch changed): just commit.
            Ok(MergeStart::Clean) if r.broken.is_none() => return finish(r, &g),
            // A clean merge that broke a validation: the worker fixes it on the merged tree.
            Ok(MergeStart::Clean) => {}
            Err(e) => {
                return Err(ResolveError::MergeRefused {
                    packet: id.clone(),
                    kind: e.kind(),
                    message: e.to_string(),
                });
            }
        }
    }
    let before = g.head().map_err(gerr)?;
    let merging_in = g.merge_head().map_err(gerr)?;
    // A worker that may write outside the worktree (a command, an agent CLI) is watched as in
    // the packet's own rounds: a change outside fails the round, and none of its work is used.
    let watched = match worker {
        ConflictWorker::Command(_) => true,
        ConflictWorker::Agent(w) => w.commits_itself(),
    };
    let snapshot = || {
        crate::engine::outside_of_run(r.common_dir, r.run).map_err(|reason| {
            ResolveError::Unresolved {
                packet: id.clone(),
                reason,
            }
        })
    };
    let outside = if watched { Some(snapshot()?) } else { None };
    let mut outcome = run_worker(r, &wt, worker).and_then(|()| markers_left(r, &wt));
    if let Some(before) = &outside {
        let changed = crate::engine::outside_changes(before, &snapshot()?);
        if !changed.is_empty() {
            outcome = Err(ResolveError::Unresolved {
                packet: id.clone(),
                reason: crate::engine::outside_reason(&changed),
            });
        }
    }
    // The worker may have changed the worktree's `.git`: pinned again, which refuses then.
    let g = Git::pinned(r.common_dir, &wt).map_err(|e| ResolveError::Git {
        packet: id.clone(),
        message: e.to_string(),
    })?;
    if let (ConflictWorker::Command(_), Some(merging_in)) = (worker, &merging_in) {
        take_back_worker_commits(&g, &before, merging_in).map_err(gerr)?;
    }
    if let Err(e) = outcome {
        // Never lose work: the packet's branch goes back to its own commits.
        let _ = g.merge_abort();
        return Err(e);
    }
    finish(r, &g)
}

/// Takes back commits an external worker made itself while resolving (concluding the merge
/// included): the branch goes back to `before` with the worktree as the worker left it, and
/// the merge of `merging_in` is under way again, so the engine's commit is the one merge that
/// enters the branch and is checked.
fn take_back_worker_commits(g: &Git, before: &str, merging_in: &str) -> Result<(), git::GitError> {
    if g.head()? == before {
        return Ok(());
    }
    tracing::warn!(packet_tip = %before, "the worker committed itself while resolving; taken back");
    commit::uncommit_to(g, before)?;
    g.set_merge_head(merging_in)
}

/// Returns the Markdown the worker reads in a conflict round, or in a round that fixes a
/// validation the merge broke.
pub fn fixes_text(r: &ConflictJob<'_>) -> String {
    if let Some(b) = r.broken {
        return format!(
            "# Fix the merged tree\n\n{} merged into this worktree without conflicts, but the \
             validation command `{}` fails on the result. The end of its output:\n\n```\n{}\n```\n\n\
             Change this packet's files so that it passes with the other packets' work in place. \
             Do not commit: the engine commits.\n",
            r.integration,
            b.command,
            b.tail.trim_end()
        );
    }
    let mut s = format!(
        "# Resolve the merge conflicts\n\n{} changed these files too; `{}` merged it into this \
         worktree and left conflict markers in them:\n\n",
        r.integration, r.packet.id
    );
    for p in r.paths {
        s.push_str(&format!("- `{p}`\n"));
    }
    s.push_str(
        "\nKeep the intent of both sides and remove every conflict marker \
         (`<<<<<<<`, `=======`, `>>>>>>>`). Do not commit: the engine commits.\n",
    );
    s
}

fn run_worker(
    r: &ConflictJob<'_>,
    wt: &Path,
    worker: ConflictWorker<'_>,
) -> Result<(), ResolveError> {
    let id = &r.packet.id;
    let fixes = fixes_text(r);
    let file = r.dir.join(format!("conflicts-{}.md", r.round));
    let log = r.dir.join(format!("resolve-{}.log", r.round));
    let io = |e: std::io::Error| ResolveError::Unresolved {
        packet: id.clone(),
        reason: format!("cannot write {}: {e}", file.display()),
    };
    fs_err::create_dir_all(r.dir).map_err(io)?;
    fs_err::write(&file, &fixes).map_err(io)?;
    let label = match worker {
        ConflictWorker::Command(c) => c.to_string(),
        ConflictWorker::Agent(w) => w.label(r.packet),
    };
    (r.journal)(Event::WorkerStarted {
        packet: id.clone(),
        command: label,
        log: log.to_string_lossy().into_owned(),
    })?;
    let started = std::time::Instant::now();
    let (ok, exit_code, timed_out, tail) = match worker {
        ConflictWorker::Command(command) => {
            let out = run_command(r, command, wt, &file, &log, r.worker_confine)?;
            (out.success(), out.exit_code, out.timed_out, out.tail)
        }
        ConflictWorker::Agent(w) => {
            let mut task = r.packet.clone();
            task.description = match r.broken {
                Some(_) => format!(
                    "{}\nThe packet's original task:\n{}",
                    fixes, r.packet.description
                ),
                None => format!(
                    "Resolve the merge conflicts in {}: the integration branch changed these \
                     files too. Keep the intent of both sides and remove every conflict marker \
                     (<<<<<<<, =======, >>>>>>>).\n\nThe packet's original task:\n{}",
                    r.paths.join(", "),
                    r.packet.description
                ),
            };
            for p in r.paths {
                if !task.files.contains(p) {
                    task.files.push(p.clone());
                }
            }
            let report = w.work(&WorkerJob {
                run: r.run,
                objective: r.objective,
                packet: &task,
                worktree: wt,
                common_dir: r.common_dir,
                log: &log,
                stop: r.stop,
                timeout: r.timeout,
                // The agent's own events stay in its transcript log.
                journal: &|_| {},
                // The task itself is the conflict list; this is not a review's fix round.
                fixes: None,
                round: 0,
                dependencies: "",
                candidate: None,
            });
            let code = if report.success { 0 } else { 1 };
            (report.success, Some(code), false, report.summary)
        }
    };
    (r.journal)(Event::WorkerFinished {
        packet: id.clone(),
        exit_code,
        duration_ms: started.elapsed().as_millis() as u64,
        timed_out,
        tail: tail.clone(),
    })?;
    if !ok {
        return Err(ResolveError::Unresolved {
            packet: id.clone(),
            reason: format!("it failed (log {}): {}", log.display(), tail.trim()),
        });
    }
    Ok(())
}

fn markers_left(r: &ConflictJob<'_>, wt: &Path) -> Result<(), ResolveError> {
    let left: Vec<&String> = r
        .paths
        .iter()
        .filter(|p| {
            fs_err::read_to_string(wt.join(p))
                .unwrap_or_default()
                .lines()
                .any(|l| l.starts_with("<<<<<<<") || l.starts_with(">>>>>>>"))
        })
        .collect();
    if left.is_empty() {
        return Ok(());
    }
    Err(ResolveError::Unresolved {
        packet: r.packet.id.clone(),
        reason: format!(
            "conflict markers remain in {}",
            left.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    })
}

fn run_command(
    r: &ConflictJob<'_>,
    command: &str,
    wt: &Path,
    fixes: &Path,
    log: &Path,
    confine: Option<&process::Confine>,
) -> Result<process::Outcome, ResolveError> {
    let mut env = vec![
        ("ORCHESTRA_RUN".to_string(), r.run.to_string()),
        ("ORCHESTRA_PACKET".to_string(), r.packet.id.clone()),
        (
            "ORCHESTRA_WORKTREE".to_string(),
            wt.to_string_lossy().into_owned(),
        ),
        ("ORCHESTRA_CONFLICTS".to_string(), r.paths.join("\n")),
    ];
    if !fixes.as_os_str().is_empty() {
        env.push((
            "ORCHESTRA_FIXES_FILE".to_string(),
            fixes.to_string_lossy().into_owned(),
        ));
        // Only the worker command is given a fixes file; it alone gets the API keys the engine
        // took out of its own environment (validation commands do not).
        env.extend(orchestra_sys::exec::command_env::provider_settings());
        env.extend(orchestra_sys::exec::secret_env::stashed().iter().cloned());
    }
    let packet_file = r.dir.join("packet.json");
    if packet_file.exists() {
        env.push((
            "ORCHESTRA_PACKET_FILE".to_string(),
            packet_file.to_string_lossy().into_owned(),
        ));
    }
    let spec = Spec {
        command,
        dir: wt,
        env: &env,
        log,
        timeout: r.timeout,
        confine,
    };
    let out = process::run(&spec, r.stop, &mut |_| {}).map_err(|e| ResolveError::Unresolved {
        packet: r.packet.id.clone(),
        reason: e.to_string(),
    })?;
    if out.interrupted {
        return Err(ResolveError::Unresolved {
            packet: r.packet.id.clone(),
            reason: "interrupted".into(),
        });
    }
    Ok(out)
}

/// Commits the resolution with trailers, re-checks it when asked, and journals it.
fn finish(r: &ConflictJob<'_>, g: &Git) -> Result<String, ResolveError> {
    let id = &r.packet.id;
    let gerr = |e: git::GitError| ResolveError::Git {
        packet: id.clone(),
        message: e.to_string(),
    };
    let subject = match r.broken {
        Some(b) => format!("Merge {} into {id} and fix `{}`", r.integration, b.command),
        None => format!("Merge {} into {id} and resolve conflicts", r.integration),
    };
    let msg = commit::message(
        &subject,
        &Trailers {
            run: r.run,
            packet: id,
            role: &r.packet.role,
        },
    );
    let new = match commit::commit_all(g, &msg).map_err(|e| {
        let _ = g.merge_abort();
        gerr(e)
    })? {
        Some(c) => c,
        // Committed before a crash but not recorded: the branch tip is the resolution, if it
        // moved past the recorded commit.
        None => {
            let head = g.head().map_err(gerr)?;
            if r.record.commit.as_deref() == Some(head.trim()) {
                return Err(ResolveError::Unresolved {
                    packet: id.clone(),
                    reason: "nothing to commit after the merge".into(),
                });
            }
            head.trim().to_string()
        }
    };
    if r.revalidate {
        revalidate(r, g, &new)?;
    }
    // Every resolution gets its verdict, so the merge can let it in.
    review_resolution(r, g.dir(), &new)?;
    // What the resolution merged, as the commit it was then: `onto` may name a ref (the
    // integration branch) that moves on as other packets land.
    let merged = g.resolve_commit(&format!("{new}^2")).map_err(gerr)?;
    (r.journal)(Event::PacketResolved {
        packet: id.clone(),
        commit: new.clone(),
        onto: merged.unwrap_or_else(|| r.onto.to_string()),
    })?;
    (r.journal)(Event::PacketSucceeded {
        packet: id.clone(),
        commit: new.clone(),
    })?;
    Ok(new)
}

/// Reviews the resolution with the deterministic checks against the integration tip it merged,
/// storing the verdict, so the merge lets it in (its changes there are the packet's own).
fn review_resolution(r: &ConflictJob<'_>, wt: &Path, new: &str) -> Result<(), ResolveError> {
    let id = &r.packet.id;
    let failed = |message: String| ResolveError::Git {
        packet: id.clone(),
        message,
    };
    // The repository as its common directory names it, never as the worktree's `.git` would.
    let main = r.common_dir.parent().unwrap_or(r.common_dir);
    let repo = git::RepoInfo::discover(main).map_err(|e| failed(e.to_string()))?;
    let checks = gate::PacketChecks::for_repo(&repo.git());
    let packet_ref = gate::PacketRef {
        run: r.run.to_string(),
        packet: r.packet.clone(),
        checkout: Some(wt.to_path_buf()),
        notes: Vec::new(),
    };
    let reviewers: [&dyn gate::Reviewer; 1] = [&checks];
    let verdict = gate::review(&repo, r.onto, new, Some(&packet_ref), &reviewers)
        .map_err(|e| failed(format!("the review of the resolution failed: {e}")))?;
    if verdict.verdict == gate::Decision::Approve {
        return Ok(());
    }
    Err(ResolveError::Rejected {
        packet: id.clone(),
        commit: new.chars().take(12).collect(),
        reason: format!(
            "the review rejected it: {}",
            verdict.blocking_lines(3, 200).join("; ")
        ),
    })
}

/// Checks the packet's scope against its changes relative to the integration tip, then runs
/// its validation commands in the worktree.
fn revalidate(r: &ConflictJob<'_>, g: &Git, new: &str) -> Result<(), ResolveError> {
    let wt = g.dir();
    let id = &r.packet.id;
    let rejected = |reason: String| ResolveError::Rejected {
        packet: id.clone(),
        commit: new.chars().take(12).collect(),
        reason,
    };
    let changed = commit::changed_paths(g, r.onto, new).map_err(|e| ResolveError::Git {
        packet: id.clone(),
        message: e.to_string(),
    })?;
    let scope = r
        .packet
        .scope()
        .map_err(|e| rejected(format!("its file scope is invalid: {e}")))?;
    let outside: Vec<String> = scope
        .violations(changed.iter().map(String::as_str))
        .iter()
        .map(|p| crate::gate::mask_secrets(p))
        .collect();
    if !outside.is_empty() {
        return Err(rejected(format!(
            "it changes files outside the packet's declared scope: {}",
            outside.join(", ")
        )));
    }
    let none = PathBuf::new();
    // The command the merge broke runs too, in the packet's worktree, now on the merged tree.
    let mut commands: Vec<&str> = r.packet.validation.iter().map(String::as_str).collect();
    if let Some(b) = r.broken.filter(|b| !commands.contains(&b.command)) {
        commands.push(b.command);
    }
    for (n, command) in commands.into_iter().enumerate() {
        let log = r
            .dir
            .join(format!("resolve-{}-validate-{}.log", r.round, n + 1));
        let out = run_command(r, command, wt, &none, &log, r.confine)?;
        (r.journal)(Event::ValidationFinished {
            packet: id.clone(),
            command: command.to_string(),
            exit_code: out.exit_code,
            duration_ms: out.duration.as_millis() as u64,
            timed_out: out.timed_out,
            tail: out.tail.clone(),
        })?;
        if !out.success() {
            return Err(rejected(format!(
                "validation `{command}` failed ({}); log {}",
                out.describe(r.timeout),
                log.display()
            )));
        }
    }
    Ok(())
}

//! Restack conflicts sent back to the packet's worker: when moving a pull request's own
//! commits onto the branch its parent landed in (or onto its base that moved) conflicts, the
//! conflict becomes a fix round instead of being resolved by discarding either side.
//!
//! The round rebases the pull request's head in a fresh detached worktree under the run's
//! directory (the packet's own worktree is never touched) until git stops at the conflict, and
//! runs the packet's worker there: the run's worker command (in the workers' sandbox, as a
//! fix round's) with `ORCHESTRA_FIX_KIND=conflict` and `ORCHESTRA_FIXES_FILE`, or our agent
//! (the next turn of its conversation) or an agent CLI (its resumed session) told the same,
//! naming what conflicts: the files, the conflicting hunks as they stand in the worktree, the
//! commit of the packet being replayed and the subjects of the base's commits it meets (each
//! side's intent). What the worker leaves must hold no conflict marker; the rebase then goes
//! on (a later commit may stop again, and goes to the worker the same way), the result passes
//! the gate a fix passes ([`super::regate`]: the deterministic checks, the packet's validation,
//! and the run's review, told it reviews a conflict resolution and each side's intent), its old
//! head is saved and it is pushed with `--force-with-lease` on the head it rebased. The
//! worker's job goes through the one runner of landing workers ([`super::runner`]).
//!
//! A round that does not resolve it pushes nothing and keeps its worktree (the worker's
//! attempt is never lost). A resolution the gate rejects goes to the next round, rebased
//! afresh, with what the gate found, while `[land] max_rounds` allows; otherwise the pull
//! request waits for a person, naming the files. Rounds count
//! against `[land] max_rounds` with the fix rounds for failures and reviews, and are journaled
//! as they are (`land_fix_started`, `land_fix_ended`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use orchestra_core::gate;
use orchestra_core::plan::Packet;
use orchestra_core::store::{Event, EventKind, Store, StoreError};
use orchestra_git::git::{Git, Rebased, commit};
use orchestra_sys::names;

use super::fix::Miss;
use super::restack::{Move, Outcome, Restacker, quoted};
use super::runner::Who;
use super::{Followed, Journal, LandError, Step, fix};

/// A worker resolves at most this many stops of one rebase (one per conflicting commit).
const MAX_STOPS: usize = 20;

/// The commit subjects of the base shown to the worker, newest first.
const MAX_SUBJECTS: usize = 10;

/// The bytes of conflicting hunks shown to the worker per file.
const MAX_HUNK_BYTES: usize = 4_000;

/// One restack that conflicted: which pull request, and what it is moved onto.
pub(super) struct Conflict<'a> {
    pub packet: &'a str,
    pub number: u64,
    pub branch: &'a str,
    /// The head on the remote: what is rebased, and the push's lease.
    pub head: &'a str,
    /// The packet's own commits are those of `upstream..head`.
    pub upstream: &'a str,
    /// The commit the branch moves onto, and the branch it is (`onto`).
    pub base: &'a str,
    pub onto: &'a str,
    /// The paths the in-memory replay found conflicting.
    pub paths: &'a [String],
}

/// Returns the step to take for `followed[i]` instead of `step`: when it is a rebase onto its
/// base (which moved and conflicts with it), its own commits are moved onto the base's tip —
/// a conflict sent to the packet's worker — and pushed, its open descendants moved onto it;
/// what cannot be done waits for a person.
pub(super) fn onto_moved_base(
    r: &Restacker<'_>,
    store: &mut Store,
    followed: &[Followed],
    i: usize,
    step: Step,
    journal: &mut Journal<'_>,
) -> Result<Step, LandError> {
    let Step::Rebase { reason } = step else {
        return Ok(step);
    };
    let f = &followed[i];
    let Some(status) = &f.status else {
        return Ok(Step::Person(reason));
    };
    // Nothing is moved that no worker could resolve: a person rebases it as the reason says.
    let sendable = (store.require_run(r.run)?.worker_cmd.is_some() || r.fixers.worker.is_some())
        && fix::rounds_taken(store, r.run, &f.packet)? < r.max_rounds;
    if !sendable {
        return Ok(Step::Person(reason));
    }
    let (Some(base), Some(head)) = (r.fetch(&status.base)?, r.fetch(&f.branch)?) else {
        return Ok(Step::Person(reason));
    };
    let Some(upstream) = r.git.merge_base(&head, &base).map_err(LandError::Git)? else {
        return Ok(Step::Person(reason));
    };
    let m = Move {
        packet: &f.packet,
        number: f.number,
        branch: &f.branch,
        parent_head: &upstream,
    };
    Ok(match r.replay(store, &m, &base, &status.base, journal)? {
        // Nothing moved: the forge's conflict is not one git sees; a person looks.
        Outcome::NotNeeded => Step::Person(reason),
        Outcome::Person(why) => Step::Person(why),
        Outcome::Moved { from, to } => {
            super::restack::descendants(r, store, followed, i, &from, &to, journal)?;
            Step::Wait(format!(
                "the forge to look at the head rebased onto `{}` ({})",
                status.base,
                short(&to)
            ))
        }
    })
}

/// Sends conflict `c` back to the packet's worker as a fix round while `[land] max_rounds`
/// allows one, and returns what came of the restack: moved (resolved, checked and pushed), or
/// waiting for a person with the files named.
pub(super) fn resolve(
    r: &Restacker<'_>,
    store: &mut Store,
    c: &Conflict<'_>,
    journal: &mut Journal<'_>,
) -> Result<Outcome, LandError> {
    let reason = format!(
        "restacking it onto `{}` conflicts in {}",
        c.onto,
        quoted(c.paths)
    );
    let by_hand = format!("rebase its branch onto `{}`, resolve, and push", c.onto);
    if let Some(why) = unresolved_before(store, r.run, c.packet, c.head)? {
        return Ok(Outcome::Person(why));
    }
    let taken = fix::rounds_taken(store, r.run, c.packet)?;
    if taken >= r.max_rounds {
        let rounds = match taken {
            0 => String::new(),
            1 => " (1 fix round used)".into(),
            n => format!(" ({n} fix rounds used)"),
        };
        return Ok(Outcome::Person(format!("{reason}{rounds}; {by_hand}")));
    }
    let record = store.require_run(r.run)?;
    let Some(worker) = Who::of(record.worker_cmd.as_deref(), r.fixers) else {
        return Ok(Outcome::Person(format!(
            "{reason} (not sent back: the run's packets were done by agents, and none was \
             given the round); {by_hand}"
        )));
    };
    let plan = record.plan().map_err(|e| LandError::StoredPlan {
        run: r.run.to_string(),
        message: e.to_string(),
    })?;
    let Some(packet) = plan.packets.iter().find(|p| p.id == c.packet).cloned() else {
        return Ok(Outcome::Person(format!("{reason}; {by_hand}")));
    };
    let mut round = taken + 1;
    let mut earlier = String::new();
    loop {
        let job = Job {
            r,
            c,
            packet: &packet,
            objective: &record.objective,
            worker: &worker,
            timeout: Duration::from_secs(record.timeout_secs.max(1)),
            dir: orchestra_sys::exec::RunDir::new(&r.repo.common_dir, r.run)
                .path()
                .join("land")
                .join(format!("{}-conflict-{round}", c.packet)),
            round,
            earlier: &earlier,
        };
        match one_round(store, &job, &reason, &by_hand, journal)? {
            Ended::Moved(outcome) => return Ok(outcome),
            // A resolution the gate rejected goes back with what it found, while rounds
            // remain; as a fix round's, the next one starts again from the head.
            Ended::Rejected { fixes, .. } if round < r.max_rounds => {
                earlier = format!("{earlier}\n\n## Your resolution in round {round}\n\n{fixes}");
                round += 1;
            }
            Ended::Rejected { outcome, .. } | Ended::Failed(outcome) => {
                return Ok(Outcome::Person(outcome));
            }
        }
    }
}

/// How one conflict round ended.
enum Ended {
    /// Resolved, gated and pushed.
    Moved(Outcome),
    /// The gate rejected the resolution: `fixes` says what to fix in another round.
    Rejected { outcome: String, fixes: String },
    /// Anything else; the outcome says what a person is to do.
    Failed(String),
}

/// Runs conflict round `job.round`: journals its start, has the worker resolve the rebase's
/// stops, gates and pushes the result, and journals how it ended.
fn one_round(
    store: &mut Store,
    job: &Job<'_>,
    reason: &str,
    by_hand: &str,
    journal: &mut Journal<'_>,
) -> Result<Ended, LandError> {
    let (r, c, round) = (job.r, job.c, job.round);
    journal(
        store,
        Event::LandFixStarted {
            packet: c.packet.to_string(),
            number: c.number,
            round,
            head_sha: c.head.to_string(),
            reason: reason.to_string(),
        },
    )?;
    let pushed = work(job).and_then(|new| {
        push(r, store, c, &new, journal)
            .map(|()| new)
            .map_err(Miss::Failed)
    });
    // Git's, the worker's and the reviewer's words may quote a credential.
    let person = |why: &str| {
        format!(
            "{reason}; fix round {round} did not resolve it: {}; {by_hand}",
            gate::mask_secrets(why)
        )
    };
    let (sha, ended) = match pushed {
        Ok(new) => (
            new.clone(),
            Ended::Moved(Outcome::Moved {
                from: c.head.to_string(),
                to: new,
            }),
        ),
        Err(Miss::Failed(why)) => (String::new(), Ended::Failed(person(&why))),
        Err(Miss::Rejected { why, fixes }) => (
            String::new(),
            Ended::Rejected {
                outcome: person(&why),
                fixes: gate::mask_secrets(&fixes),
            },
        ),
    };
    let outcome = match &ended {
        Ended::Moved(_) => format!("resolved and pushed {}", short(&sha)),
        Ended::Rejected { outcome, .. } | Ended::Failed(outcome) => outcome.clone(),
    };
    journal(
        store,
        Event::LandFixEnded {
            packet: c.packet.to_string(),
            number: c.number,
            round,
            head_sha: c.head.to_string(),
            pushed: sha.clone(),
            outcome,
            review: None,
        },
    )?;
    if !sha.is_empty() {
        // The result is pushed and the old head saved: the worktree has served.
        let _ = r.git.force_remove_worktree(&job.dir.join("wt"));
    }
    Ok(ended)
}

/// Returns why a conflict round on `head` of `packet`'s pull request pushed nothing, when one
/// did: the same head is not sent back twice.
fn unresolved_before(
    store: &Store,
    run: &str,
    packet: &str,
    head: &str,
) -> Result<Option<String>, StoreError> {
    Ok(store
        .events_of_kind(run, EventKind::LandFixEnded)?
        .into_iter()
        .filter_map(|e| match e.event {
            Event::LandFixEnded {
                packet: p,
                head_sha,
                pushed,
                outcome,
                review: None,
                ..
            } if p == packet && head_sha == head && pushed.is_empty() => Some(outcome),
            _ => None,
        })
        .next_back())
}

/// Saves the old head, journals the restack and pushes `new` over it with a lease.
fn push(
    r: &Restacker<'_>,
    store: &mut Store,
    c: &Conflict<'_>,
    new: &str,
    journal: &mut Journal<'_>,
) -> Result<(), String> {
    let saved = names::saved_head_ref(r.run, c.packet, c.head);
    r.git
        .set_ref(&saved, c.head)
        .map_err(|e| format!("cannot save the old head: {e}"))?;
    journal(
        store,
        Event::PrRestacked {
            packet: c.packet.to_string(),
            number: c.number,
            from: c.head.to_string(),
            to: new.to_string(),
            onto: c.onto.to_string(),
            saved,
        },
    )
    .map_err(|e| e.to_string())?;
    r.git
        .push_with_lease(r.remote, c.branch, new, c.head)
        .map_err(|e| {
            format!(
                "pushing the resolution over {} was refused (did someone push meanwhile?): {e}",
                short(c.head)
            )
        })
}

/// What one conflict round works with.
struct Job<'a> {
    r: &'a Restacker<'a>,
    c: &'a Conflict<'a>,
    packet: &'a Packet,
    objective: &'a str,
    worker: &'a Who<'a>,
    timeout: Duration,
    /// The round's directory: its worktree (`wt`), fixes files and logs.
    dir: PathBuf,
    round: u32,
    /// What the gate found in the earlier rounds' resolutions, told the worker again.
    earlier: &'a str,
}

/// Rebases the head in a new worktree, has the worker resolve each stop, checks the result,
/// and returns the new head; or says why nothing is to be pushed.
fn work(job: &Job<'_>) -> Result<String, Miss> {
    let git = &job.r.git;
    let wt = job.dir.join("wt");
    fs_err::create_dir_all(&job.dir).map_err(|e| e.to_string())?;
    let _ = git.prune_worktrees();
    if wt.exists() {
        return Err(Miss::Failed(format!(
            "{} is in the way; remove it and land again",
            wt.display()
        )));
    }
    git.add_detached_worktree(&wt, job.c.head)
        .map_err(|e| format!("cannot check out {}: {e}", short(job.c.head)))?;
    let g = Git::pinned(&job.r.repo.common_dir, &wt)
        .map_err(|e| format!("cannot use the worktree {}: {e}", wt.display()))?;
    let mut state = g
        .rebase_onto(job.c.base, job.c.upstream)
        .map_err(|e| format!("git refused the rebase: {e}"))?;
    let mut stops = 0;
    let new = loop {
        let (commit, paths) = match state {
            Rebased::Done(new) => break new,
            Rebased::Stopped { commit, paths } => (commit, paths),
        };
        stops += 1;
        if stops > MAX_STOPS {
            return Err(Miss::Failed(format!(
                "the rebase stopped more than {MAX_STOPS} times (kept in {})",
                wt.display()
            )));
        }
        let fixes = fixes_text(job, &g, &wt, &commit, &paths);
        let before = g.head().map_err(|e| e.to_string())?;
        resolve_stop(job, &wt, &fixes, &paths, stops)?;
        // The worker may have committed itself: the rebase makes the commit.
        if g.head().map_err(|e| e.to_string())? != before {
            commit::uncommit_to(&g, &before).map_err(|e| e.to_string())?;
        }
        let left = markers_left(&wt, &paths);
        if !left.is_empty() {
            return Err(Miss::Failed(format!(
                "conflict markers remain in {} (its attempt is kept in {})",
                quoted(&left),
                wt.display()
            )));
        }
        state = g.rebase_continue().map_err(|e| {
            format!(
                "the rebase did not go on after the worker ({e}; kept in {})",
                wt.display()
            )
        })?;
    };
    let gate = super::regate::Gate {
        repo: job.r.repo,
        run: job.r.run,
        packet: reviewed_packet(job, &g),
        checkout: wt.clone(),
        fixers: job.r.fixers,
        timeout: job.timeout,
        remote: job.r.remote,
        base: Some(job.c.onto),
        logs: job.dir.join("merged"),
        what: "resolution",
    };
    super::regate::check(&gate, job.c.base, &new).map_err(|miss| match miss {
        Miss::Rejected { why, fixes } => Miss::Rejected {
            why: format!("{why} (its attempt is kept in {})", wt.display()),
            fixes,
        },
        failed => failed,
    })?;
    Ok(new)
}

/// Returns the Markdown the worker reads for a stop at `commit` conflicting in `paths`.
fn fixes_text(job: &Job<'_>, g: &Git, wt: &Path, commit: &str, paths: &[String]) -> String {
    let c = job.c;
    let theirs = g
        .subjects(&format!("{}..{}", c.head, c.base), MAX_SUBJECTS)
        .unwrap_or_default();
    let ours = g.commit_message(commit).unwrap_or_default();
    let mut s = format!(
        "# Resolve the restack conflict\n\nkind: conflict\n\nPull request #{} (packet `{}`) is \
         being rebased onto `{}`. Replaying this packet's commit {} conflicts with what `{}` \
         has now.\n\nThis packet's commit (its intent):\n\n> {}\n\n",
        c.number,
        c.packet,
        c.onto,
        short(commit),
        c.onto,
        ours.lines().next().unwrap_or_default()
    );
    if !theirs.is_empty() {
        s.push_str(&format!(
            "The commits of `{}` it meets (their intent), newest first:\n\n",
            c.onto
        ));
        for t in &theirs {
            s.push_str(&format!("- {t}\n"));
        }
        s.push('\n');
    }
    s.push_str("The conflicting files, with the conflict markers left in the worktree:\n\n");
    for p in paths {
        s.push_str(&format!("### `{p}`\n\n```\n{}```\n\n", hunks(&wt.join(p))));
    }
    s.push_str(job.earlier.trim_start());
    if !job.earlier.is_empty() {
        s.push_str("\n\n");
    }
    s.push_str(&format!(
        "Between `<<<<<<<` and `=======` is what `{}` has, between `=======` and `>>>>>>>` this \
         packet's change. Keep the intent of both sides and remove every conflict marker. Do \
         not commit and do not run `git rebase`: the engine goes on with the rebase, checks \
         the result and pushes it.\n",
        c.onto
    ));
    gate::mask_secrets(&s)
}

/// Returns the conflicting hunks of the file at `path` (each with its line number), clipped.
fn hunks(path: &Path) -> String {
    let text = fs_err::read_to_string(path).unwrap_or_default();
    let mut out = String::new();
    let mut inside = false;
    for (i, line) in text.lines().enumerate() {
        if line.starts_with("<<<<<<<") {
            inside = true;
            out.push_str(&format!("(line {})\n", i + 1));
        }
        if inside {
            out.push_str(line);
            out.push('\n');
        }
        if line.starts_with(">>>>>>>") {
            inside = false;
        }
        if out.len() > MAX_HUNK_BYTES {
            out.push_str("… (clipped)\n");
            break;
        }
    }
    if out.is_empty() {
        "(no conflict markers: the file was deleted on one side and changed on the other)\n"
            .to_string()
    } else {
        out
    }
}

/// Returns those of `paths` in `wt` that still hold a conflict marker.
fn markers_left(wt: &Path, paths: &[String]) -> Vec<String> {
    paths
        .iter()
        .filter(|p| {
            fs_err::read_to_string(wt.join(p))
                .unwrap_or_default()
                .lines()
                .any(|l| l.starts_with("<<<<<<<") || l.starts_with(">>>>>>>"))
        })
        .cloned()
        .collect()
}

/// Has the round's worker resolve stop `stop` in `wt` through the one runner of landing
/// workers, told `fixes` (also its fixes file) and, a worker command, the kind of round and
/// the conflicting `paths`; an error says how it failed and where its attempt is kept.
fn resolve_stop(
    job: &Job<'_>,
    wt: &Path,
    fixes: &str,
    paths: &[String],
    stop: usize,
) -> Result<(), String> {
    let file = job.dir.join(format!("conflict-{stop}.md"));
    let work = super::runner::Job {
        common_dir: &job.r.repo.common_dir,
        run: job.r.run,
        objective: job.objective,
        packet: job.packet,
        worktree: wt,
        feedback: fixes,
        fixes_file: &file,
        round: job.round,
        timeout: job.timeout,
        env: vec![
            ("ORCHESTRA_FIX_KIND".to_string(), "conflict".to_string()),
            ("ORCHESTRA_CONFLICTS".to_string(), paths.join("\n")),
        ],
        log: job.dir.join(format!("worker-{stop}.log")),
        transcript: format!("land-conflict-{}-{stop}.log", job.round),
    };
    super::runner::run(job.worker, &work, job.r.fixers.sandboxes)
        .map(|_| ())
        .map_err(|e| format!("{e} (its attempt is kept in {})", wt.display()))
}

/// Returns the packet as the reviewer reads it for a resolution: its description followed
/// by what the round was for — the conflict, this packet's commits and those of the branch it
/// moved onto (each side's intent) — so the review judges whether both are kept.
fn reviewed_packet(job: &Job<'_>, g: &Git) -> Packet {
    let c = job.c;
    let theirs = g
        .subjects(&format!("{}..{}", c.head, c.base), MAX_SUBJECTS)
        .unwrap_or_default();
    let ours = g
        .subjects(&format!("{}..{}", c.upstream, c.head), MAX_SUBJECTS)
        .unwrap_or_default();
    let mut text = format!(
        "\n\n## This change resolves a restack conflict\n\nThis packet's commits were rebased \
         onto `{}` and conflicted in {}; the packet's worker resolved the conflict. Judge \
         whether the resolution keeps the intent of both sides: neither may be discarded.\n",
        c.onto,
        quoted(c.paths)
    );
    let sides = [
        ("This packet's commits (its intent)".to_string(), ours),
        (
            format!("The commits of `{}` it met (their intent)", c.onto),
            theirs,
        ),
    ];
    for (side, subjects) in sides {
        if !subjects.is_empty() {
            text.push_str(&format!("\n{side}, newest first:\n\n"));
            for s in subjects {
                text.push_str(&format!("- {s}\n"));
            }
        }
    }
    let mut packet = job.packet.clone();
    packet.description.push_str(&gate::mask_secrets(&text));
    packet
}

/// Returns the first twelve characters of a commit id.
fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}

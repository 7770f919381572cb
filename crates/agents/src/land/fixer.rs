//! Who does a landing fix round's work in the worktree of the pull request's head: the run's
//! worker command (what failed in `ORCHESTRA_FIXES_FILE`, confined by the workers' sandbox as
//! in a run), or its in-process worker — our agent taking the failure as the next turn of the
//! packet's kept conversation, an agent CLI resuming the packet's session, both through the
//! one runner of landing workers ([`super::runner`]). Either way the engine then commits,
//! re-gates and pushes what the worker left (see [`super::fix`]).

use std::path::Path;

use orchestra_git::git::Git;

use super::Fixers;
use super::fix::{Context, Round};
use super::runner::{Job, Who};

/// Runs fix round `number`'s worker in `wt` through the one runner of landing workers and
/// returns what it said last, or why it failed.
pub(super) fn run(
    round: &Round<'_>,
    number: u32,
    fixers: Fixers<'_>,
    ctx: &Context,
    wt: &Path,
) -> Result<String, String> {
    let who = Who::of(ctx.worker.as_deref(), fixers).ok_or_else(|| {
        "the run's packets were done by agents, and none was given the fix round: land the \
         run with `git orchestra land`"
            .to_string()
    })?;
    let logs = ctx.dir.join(format!("{}-round-{number}", round.packet));
    let fixes = logs.join("fixes.md");
    let job = Job {
        common_dir: &round.repo.common_dir,
        run: round.run,
        objective: &ctx.objective,
        packet: &ctx.packet,
        worktree: wt,
        feedback: round.feedback,
        fixes_file: &fixes,
        round: number,
        timeout: ctx.timeout,
        env: Vec::new(),
        log: logs.join("worker.log"),
        transcript: format!("land-fix-{number}.log"),
    };
    super::runner::run(&who, &job, fixers.sandboxes)
}

/// Cleans up after fix round `number` worked in `wt` (`made` for the round): a round that
/// pushed nothing first keeps what the worktree holds under a ref, so a person can still look
/// at it, and puts the packet's own worktree back at the head; a worktree the round made is
/// removed.
pub(super) fn after_round(
    round: &Round<'_>,
    git: &Git,
    wt: &Path,
    number: u32,
    pushed: bool,
    made: bool,
) {
    if !pushed && !keep_unpushed(round, git, wt, number) {
        // Unkept work stays where it is, for a person.
        return;
    }
    if made {
        if let Err(e) = git.force_remove_worktree(wt) {
            tracing::warn!(error = %e, path = %wt.display(), "the fix round's worktree was not removed");
        }
        let _ = git.prune_worktrees();
    }
}

/// Commits what the round left in `wt` and keeps it under the round's ref; the packet's own
/// worktree goes back to the head. Returns false when that work could not be kept.
fn keep_unpushed(round: &Round<'_>, git: &Git, wt: &Path, number: u32) -> bool {
    use orchestra_git::git::commit;
    let Ok(pinned) = Git::pinned(&round.repo.common_dir, wt) else {
        return true;
    };
    let message = commit::message(
        &format!("Fix round {number} of pull request #{}", round.number),
        &commit::Trailers {
            run: round.run,
            packet: round.packet,
            role: "",
        },
    );
    let _ = commit::commit_all(&pinned, &message);
    let Ok(head) = pinned.head() else {
        return false;
    };
    if head == round.head_sha {
        return true;
    }
    let kept = orchestra_sys::names::landing_round_ref(round.run, round.packet, number);
    if let Err(e) = commit::keep_ref(git, &kept, &head) {
        tracing::warn!(error = %e, "the unpushed fix round was not kept");
        return false;
    }
    if let Err(e) = commit::reset_to(&pinned, round.head_sha) {
        tracing::warn!(error = %e, "the worktree was not put back at the pull request's head");
    }
    true
}

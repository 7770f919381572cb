//! The gate a landing round's result passes before it is pushed: a fix round's commit over the
//! pull request's head ([`super::fix`]) and a conflict round's rebased head ([`super::conflict`])
//! go through the same one, so neither kind of round can skip a step the other takes.
//!
//! In order: the deterministic checks (scope, conflict markers, secrets, the packet's
//! validation commands, confined as `[sandbox]` says); then the packet's validation commands
//! again on the tree the pull request would land — the result merged into the current tip of
//! its base, in a scratch checkout, as a local merge validates its merged tree (a base that
//! moved may break what passes on its own: a function renamed there that the fix calls); then
//! the run's review (a model, or `[roles.reviewer] agent`'s CLI), told what the round was
//! for. No model sees a result the commands reject. A rejection carries what to fix, for the
//! next round of the packet's worker.

use std::path::PathBuf;
use std::time::Duration;

use orchestra_core::gate::{self, DeterministicReviewer, PacketChecks, PacketRef};
use orchestra_core::plan::Packet;
use orchestra_git::git::{MergeOutcome, RepoInfo};
use orchestra_sys::names;

use super::Fixers;
use super::fix::Miss;

/// The last bytes of a failed command's output shown to the worker.
const TAIL_BYTES: usize = 3_000;

/// What a landing round's result is gated as.
pub(super) struct Gate<'a> {
    pub repo: &'a RepoInfo,
    pub run: &'a str,
    /// The packet the result belongs to; the reviewer reads its description (which a round
    /// may extend with what it was for).
    pub packet: Packet,
    /// The worktree holding the result.
    pub checkout: PathBuf,
    pub fixers: Fixers<'a>,
    pub timeout: Duration,
    /// The remote of the pull request, and its base branch there: the result is validated
    /// merged into that branch's tip. `None` validates the result alone.
    pub remote: &'a str,
    pub base: Option<&'a str>,
    /// Where the merged tree's validation logs go.
    pub logs: PathBuf,
    /// What is gated, in messages: `fix`, `resolution`.
    pub what: &'a str,
}

/// Gates `new` (the range `from..new`): returns `Ok` when it may be pushed, else what was
/// found — [`Miss::Rejected`] with what to fix for a finding, [`Miss::Failed`] when the gate
/// itself could not run.
pub(super) fn check(g: &Gate<'_>, from: &str, new: &str) -> Result<(), Miss> {
    let git = g.repo.git();
    let packet = PacketRef {
        run: g.run.to_string(),
        packet: g.packet.clone(),
        checkout: Some(g.checkout.clone()),
        notes: Vec::new(),
    };
    let mut options = PacketChecks::for_repo(&git).options;
    if let Some(sandboxes) = g.fixers.sandboxes {
        options.sandboxes = sandboxes.clone();
    }
    let confine = options.sandboxes.validation.clone();
    let checks = DeterministicReviewer {
        options,
        validation: Vec::new(),
        timeout: g.timeout,
    };
    // The deterministic checks first: no model sees a result they reject.
    let verdict = gate::review(g.repo, from, new, Some(&packet), &[&checks])
        .map_err(|e| format!("cannot check the {}: {e}", g.what))?;
    if verdict.verdict != gate::Decision::Approve {
        return Err(rejected(g, new, &verdict.findings));
    }
    merged_tree(g, new, confine.as_deref())?;
    let Some(model) = g.fixers.reviewer else {
        return Ok(());
    };
    let verdict = gate::review(g.repo, from, new, Some(&packet), &[model])
        .map_err(|e| format!("cannot review the {}: {e}", g.what))?;
    if verdict.verdict == gate::Decision::Approve {
        return Ok(());
    }
    Err(rejected(g, new, &verdict.findings))
}

/// Runs the packet's validation commands on `new` merged into the current tip of the pull
/// request's base; a failure is a rejection naming the command, the base and the output. A
/// result that already contains the base was validated as it is; one that conflicts with the
/// base is not validated here (the forge shows the conflict, and landing restacks it).
fn merged_tree(
    g: &Gate<'_>,
    new: &str,
    confine: Option<&orchestra_sys::exec::process::Confine>,
) -> Result<(), Miss> {
    let (Some(base), false) = (g.base, g.packet.validation.is_empty()) else {
        return Ok(());
    };
    let git = g.repo.git();
    let local = names::landing_fetch_ref(g.run, base);
    git.fetch_refs(g.remote, &[format!("+refs/heads/{base}:{local}")])
        .map_err(|e| format!("cannot fetch `{base}` to validate the merged tree: {e}"))?;
    let tip = git
        .resolve_commit(&local)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("`{base}` was fetched but names no commit"))?;
    let message = format!("Validate {} merged into {base}", short(new));
    let merged = match git
        .merge_in_memory(&tip, new, &message)
        .map_err(|e| format!("cannot merge the {} into `{base}`: {e}", g.what))?
    {
        MergeOutcome::Merged(merged) if merged == new => return Ok(()),
        MergeOutcome::Merged(merged) => merged,
        MergeOutcome::Conflict(paths) => {
            tracing::info!(
                ?paths,
                base,
                "the result conflicts with its base; not validated merged"
            );
            return Ok(());
        }
    };
    let results = gate::run_validation(
        g.repo,
        &merged,
        &g.packet.validation,
        g.timeout,
        &g.logs,
        confine,
    )
    .map_err(|e| format!("cannot validate the merged tree: {e}"))?;
    let Some((command, outcome, log)) = results.into_iter().find(|(_, o, _)| !o.success()) else {
        return Ok(());
    };
    let how = outcome.describe(g.timeout);
    let tail = orchestra_core::forge::safe_tail(&outcome.tail, None, TAIL_BYTES);
    Err(Miss::Rejected {
        why: format!(
            "the {} {} passes alone but `{command}` fails once merged into `{base}` ({how}; \
             log {})",
            g.what,
            short(new),
            log.display()
        ),
        fixes: format!(
            "Your {what} was not pushed: it passes on its own, but not on the tree the pull \
             request would land. Merged into the current tip of `{base}` ({tip}), the \
             validation command `{command}` fails ({how}):\n\n```\n{tail}\n```\n\n`{base}` \
             moved since this pull request was made: make the {what} work with what `{base}` \
             has now (the next round starts again from the pull request's head).\n",
            what = g.what,
            tip = short(&tip),
            tail = tail.trim_end(),
        ),
    })
}

/// Returns the rejection of `new` for `findings`: why, for a person, and what to fix, for the
/// next round of the packet's worker.
fn rejected(g: &Gate<'_>, new: &str, findings: &[gate::Finding]) -> Miss {
    let found: Vec<String> = findings
        .iter()
        .map(|f| format!("{} {}", f.file.as_deref().unwrap_or_default(), f.evidence))
        .collect();
    let mut fixes = format!(
        "The gate rejected your {}, so it was not pushed; the next round starts again from the \
         pull request's head. Fix these problems too:\n",
        g.what
    );
    for f in findings {
        let place = match (&f.file, f.line) {
            (Some(file), Some(line)) => format!(" {file}:{line}"),
            (Some(file), None) => format!(" {file}"),
            _ => String::new(),
        };
        fixes.push_str(&format!(
            "- [{}] {}{place}: {} — {}\n",
            f.severity.as_str(),
            f.category,
            f.evidence.trim(),
            f.suggestion.trim()
        ));
    }
    Miss::Rejected {
        why: format!(
            "the gate rejected the {} {}: {}",
            g.what,
            short(new),
            found.join("; ")
        ),
        fixes,
    }
}

/// Returns the first twelve characters of a commit id.
fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}

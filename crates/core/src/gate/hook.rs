//! The pre-push gate: installing and removing the hook without losing anyone else's, and
//! deciding, for each pushed ref, whether its tree carries an approving verdict.
//!
//! Where the hook goes: the common git directory's `hooks/`, never a tracked directory. When
//! `core.hooksPath` is set the hook goes there only if that directory is outside the working
//! tree (a shared, machine-local hooks directory); a hooks path inside the working tree is
//! usually tracked (husky's `.husky/`), and writing there would put our hook into commits, so
//! installation is refused with an explanation.
//!
//! An existing `pre-push` (hand-written, pre-commit's, lefthook's) is moved to
//! `pre-push.orchestra-chained` and run first by our hook with the same arguments and input;
//! uninstalling moves it back, bytes and mode untouched (a rename).

use std::path::{Path, PathBuf};

use super::GateError;
use super::checks::{CheckOptions, Finding, Severity};
use super::range::{commit_of, packet_of};
use super::review::{DeterministicReviewer, Reviewer, history_findings, review};
use super::verdict::{ApprovalPolicy, Decision, Verdict, approved_for_tree, read_verdict};
use orchestra_git::git::{Git, GitError, RepoInfo};

/// The hook script, embedded from `hooks/pre-push`.
pub const HOOK_SCRIPT: &str = include_str!("../../../../hooks/pre-push");
/// The line that identifies our hook.
pub const HOOK_MARKER: &str = "# git-orchestra pre-push hook";
/// The name an existing hook is moved to.
pub const CHAINED_NAME: &str = "pre-push.orchestra-chained";

/// Why the hook could not be installed or removed.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error(
        "core.hooksPath points inside the working tree ({path}); hooks there are usually tracked, so the gate will not write into it"
    )]
    HooksPathInWorktree { path: PathBuf },
    #[error(
        "{path} exists and the current pre-push hook is not git-orchestra's; move one of them away first"
    )]
    ChainedExists { path: PathBuf },
    #[error("the pre-push hook at {path} is not git-orchestra's; nothing to uninstall")]
    NotInstalled { path: PathBuf },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot list the repository's worktrees: {0}")]
    Worktrees(String),
    #[error(transparent)]
    Git(#[from] GitError),
}

/// What `install` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// The hook's path.
    pub path: PathBuf,
    /// Where the previous hook now lives, if there was one.
    pub chained: Option<PathBuf>,
    /// True when our hook was already installed and identical.
    pub unchanged: bool,
}

/// What `uninstall` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Uninstalled {
    pub path: PathBuf,
    /// True when a chained hook was moved back into place.
    pub restored: bool,
}

/// Returns the directory hooks are installed in, refusing a `core.hooksPath` inside the
/// working tree.
pub fn hooks_dir(repo: &RepoInfo) -> Result<PathBuf, HookError> {
    let git = repo.git();
    let configured = git.config_get("core.hooksPath").ok().flatten();
    if configured.is_none() {
        return Ok(repo.common_dir.join("hooks"));
    }
    let path = PathBuf::from(git.git_path("hooks")?);
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let resolved = canonical(&path);
    let inside = |top: &Path| resolved.starts_with(canonical(top));
    let worktrees =
        orchestra_git::git::list(repo).map_err(|e| HookError::Worktrees(e.to_string()))?;
    if inside(&repo.toplevel) || worktrees.iter().any(|w| !w.bare && inside(&w.path)) {
        return Err(HookError::HooksPathInWorktree { path });
    }
    Ok(path)
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> HookError + '_ {
    move |source| HookError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Returns true if and only if the file at `path` is our hook.
fn is_ours(path: &Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|t| t.lines().nth(1) == Some(HOOK_MARKER))
}

/// Installs the pre-push hook, chaining an existing foreign one; idempotent.
pub fn install(repo: &RepoInfo) -> Result<Installed, HookError> {
    let dir = hooks_dir(repo)?;
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let hook = dir.join("pre-push");
    let chained = dir.join(CHAINED_NAME);
    let exists = hook.symlink_metadata().is_ok();
    if exists && is_ours(&hook) {
        let same = std::fs::read_to_string(&hook).is_ok_and(|t| t == HOOK_SCRIPT);
        if !same {
            write_hook(&hook)?;
        }
        return Ok(Installed {
            chained: chained.exists().then_some(chained),
            path: hook,
            unchanged: same,
        });
    }
    let mut moved = None;
    if exists {
        if chained.symlink_metadata().is_ok() {
            return Err(HookError::ChainedExists { path: chained });
        }
        std::fs::rename(&hook, &chained).map_err(io(&hook))?;
        moved = Some(chained);
    }
    if let Err(e) = write_hook(&hook) {
        // Put the previous hook back rather than leave the repository without it.
        if let Some(prev) = &moved {
            let _ = std::fs::rename(prev, &hook);
        }
        return Err(e);
    }
    Ok(Installed {
        path: hook,
        chained: moved,
        unchanged: false,
    })
}

/// Writes our script next to `hook` and renames it into place, executable.
fn write_hook(hook: &Path) -> Result<(), HookError> {
    use std::os::unix::fs::PermissionsExt;
    let tmp = hook.with_file_name(format!("pre-push.orchestra-tmp-{}", std::process::id()));
    std::fs::write(&tmp, HOOK_SCRIPT).map_err(io(&tmp))?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).map_err(io(&tmp))?;
    std::fs::rename(&tmp, hook).map_err(io(hook))
}

/// Removes our hook, moving a chained hook back into place exactly as it was.
pub fn uninstall(repo: &RepoInfo) -> Result<Uninstalled, HookError> {
    let dir = hooks_dir(repo)?;
    let hook = dir.join("pre-push");
    if !is_ours(&hook) {
        return Err(HookError::NotInstalled { path: hook });
    }
    let chained = dir.join(CHAINED_NAME);
    if chained.symlink_metadata().is_ok() {
        std::fs::rename(&chained, &hook).map_err(io(&chained))?;
        Ok(Uninstalled {
            path: hook,
            restored: true,
        })
    } else {
        std::fs::remove_file(&hook).map_err(io(&hook))?;
        Ok(Uninstalled {
            path: hook,
            restored: false,
        })
    }
}

/// One line of pre-push input: `<local ref> <local oid> <remote ref> <remote oid>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushUpdate {
    pub local_ref: String,
    pub local_oid: String,
    pub remote_ref: String,
    pub remote_oid: String,
}

/// Parses the hook's standard input; malformed lines are skipped.
pub fn parse_updates(input: &str) -> Vec<PushUpdate> {
    input
        .lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            Some(PushUpdate {
                local_ref: f.next()?.to_string(),
                local_oid: f.next()?.to_string(),
                remote_ref: f.next()?.to_string(),
                remote_oid: f.next()?.to_string(),
            })
        })
        .collect()
}

/// What to do about a pushed tip with no approving verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GatePolicy {
    /// Run the deterministic review now (`orchestra.gate.review=auto`).
    Auto,
    /// Refuse and say which command reviews it (the default).
    Require,
}

/// The gate's decision for one pushed ref.
#[derive(Debug, Clone)]
pub enum RefDecision {
    /// A deletion: nothing to review.
    Deletion,
    /// Every commit is already on the remote.
    NothingNew,
    /// The verdicts' notes ref (`refs/notes/orchestra/review`) holding notes only: not code,
    /// so not reviewed. Other notes refs are reviewed like any ref.
    Notes,
    /// The tip's tree carries an approving verdict (from this review or an earlier one).
    Approved { verdict: Box<Verdict>, fresh: bool },
    /// The tip's tree was rejected: by a review that ran now (`fresh`), or by the latest
    /// review stored for it.
    Rejected {
        verdict: Box<Verdict>,
        fresh: bool,
        command: String,
    },
    /// No verdict and the policy requires one.
    Unreviewed { tree: String, command: String },
}

impl RefDecision {
    /// Returns true if and only if the ref may be pushed.
    pub fn allows(&self) -> bool {
        matches!(
            self,
            RefDecision::Deletion
                | RefDecision::NothingNew
                | RefDecision::Notes
                | RefDecision::Approved { .. }
        )
    }
}

/// Decides whether `update` may be pushed to `remote`: a tip whose tree carries a verdict
/// `approval` accepts passes, and so does one whose own verdict covers everything the remote
/// lacks. With [`GatePolicy::Auto`] an unreviewed range is reviewed by the deterministic checks
/// and `extra` reviewers (a model reviewer).
///
/// The range reviewed is `<remote oid>..<local oid>` when the remote's old tip exists locally;
/// for a new branch (or an unknown old tip) it is the commits reachable from none of
/// `published` (what the remote has, from [`published`](super::pushed::published): never this
/// repository's remote-tracking refs), based on the oldest one's parent. An annotated tag is
/// refused when its message holds a credential; the verdicts' notes ref passes unreviewed only
/// when every commit it adds holds notes and nothing else, none with a credential.
pub fn check_push(
    repo: &RepoInfo,
    published: &[String],
    update: &PushUpdate,
    policy: GatePolicy,
    approval: ApprovalPolicy,
    options: &CheckOptions,
    extra: &[&dyn Reviewer],
) -> Result<RefDecision, GateError> {
    let git = repo.git();
    let is_zero = |id: &str| !id.is_empty() && id.bytes().all(|b| b == b'0');
    if is_zero(&update.local_oid) {
        return Ok(RefDecision::Deletion);
    }
    if let Some(decision) = tag_or_notes(&git, update, published)? {
        return Ok(decision);
    }
    let tip = commit_of(&git, &update.local_oid)?;
    let known_remote = !is_zero(&update.remote_oid) && commit_of(&git, &update.remote_oid).is_ok();
    let base = if known_remote {
        if update.remote_oid == tip {
            return Ok(RefDecision::NothingNew);
        }
        update.remote_oid.clone()
    } else {
        let new = git.new_to(&tip, published)?;
        let Some(oldest) = new.last() else {
            return Ok(RefDecision::NothingNew);
        };
        match git.resolve(&format!("{oldest}^1"))? {
            Some(parent) => parent,
            None => git.empty_tree()?,
        }
    };
    let tree = git.tree_of(&tip)?;
    let approved = match approved_for_tree(&git, &tree)?.filter(|v| approval.accepts(v)) {
        Some(v) => Some(v),
        None => range_approved(&git, &tip, &base, approval)?,
    };
    if let Some(verdict) = approved {
        // A verdict speaks for the history it reviewed; the pushed commits may carry another
        // one to the same tree — with a credential added and removed again on the way.
        let history = history_findings(&git, &base, &tip)?;
        if history.is_empty() {
            return Ok(RefDecision::Approved {
                verdict: Box::new(verdict),
                fresh: false,
            });
        }
        return Ok(RefDecision::Rejected {
            verdict: Box::new(Verdict {
                commit: tip.clone(),
                tree,
                base: base.clone(),
                reviewer: super::verdict::DETERMINISTIC.to_string(),
                verdict: Decision::Reject,
                checks: vec!["secrets in history".into()],
                findings: history,
                timestamp: super::rfc3339_utc(orchestra_sys::exec::now_ms() / 1000),
                notes: Vec::new(),
                ..verdict
            }),
            fresh: true,
            command: format!("git orchestra review {base}..{tip}"),
        });
    }
    let command = format!("git orchestra review {base}..{tip}");
    match policy {
        GatePolicy::Require => Ok(match read_verdict(&git, &tree)? {
            // The latest review of this very tree rejected it: say so and why, rather than
            // that nobody reviewed it.
            Some(verdict) if verdict.verdict == Decision::Reject && verdict.tree == tree => {
                RefDecision::Rejected {
                    verdict: Box::new(verdict),
                    fresh: false,
                    command,
                }
            }
            _ => RefDecision::Unreviewed { tree, command },
        }),
        GatePolicy::Auto => {
            let packet = packet_of(repo, &tip)?;
            let reviewer = DeterministicReviewer {
                options: options.clone(),
                validation: Vec::new(),
                timeout: orchestra_sys::exec::DEFAULT_TIMEOUT,
            };
            let mut reviewers: Vec<&dyn Reviewer> = vec![&reviewer];
            reviewers.extend_from_slice(extra);
            let verdict = review(repo, &base, &tip, packet.as_ref(), &reviewers)?;
            Ok(if verdict.verdict == Decision::Approve {
                RefDecision::Approved {
                    verdict: Box::new(verdict),
                    fresh: true,
                }
            } else {
                RefDecision::Rejected {
                    verdict: Box::new(verdict),
                    fresh: true,
                    command,
                }
            })
        }
    }
}

/// Returns the decision for what a push publishes besides code: a refusal of an annotated tag
/// whose message holds a credential, and for the verdicts' notes ref, [`RefDecision::Notes`]
/// or a refusal when it adds anything but notes; `None` for everything else.
fn tag_or_notes(
    git: &Git,
    update: &PushUpdate,
    published: &[String],
) -> Result<Option<RefDecision>, GateError> {
    let tags = super::pushed::tag_findings(git, &update.local_oid, &update.local_ref)?;
    if !tags.is_empty() {
        return refusal(git, update, "tag messages", tags).map(Some);
    }
    // Verdicts travel as notes; the verdicts' notes ref holds notes about other objects, never
    // a tree of the code, so there is nothing for a review to approve — once that is checked.
    if update.remote_ref == super::verdict::NOTES_REF {
        let Some(problem) = super::pushed::not_notes(git, update, published)? else {
            // The notes themselves are published: a credential in one is one too.
            let base = match git.resolve_commit(&update.remote_oid)? {
                Some(old) => old,
                None => git.empty_tree()?,
            };
            let found = history_findings(git, &base, &update.local_oid)?;
            if found.is_empty() {
                return Ok(Some(RefDecision::Notes));
            }
            return refusal(git, update, "notes ref", found).map(Some);
        };
        let finding = Finding {
            severity: Severity::Blocker,
            category: "notes".into(),
            file: None,
            line: None,
            evidence: format!("{} is not a notes tree: {problem}", update.remote_ref),
            suggestion: "push only the notes `git orchestra review` wrote to this ref; push other work to a branch, where it is reviewed".into(),
        };
        return refusal(git, update, "notes ref", vec![finding]).map(Some);
    }
    Ok(None)
}

/// Returns the refusal of `update` for `findings` that no review can approve away (a tag's
/// message, a notes ref's contents), in the form the hook prints.
fn refusal(
    git: &Git,
    update: &PushUpdate,
    check: &str,
    findings: Vec<Finding>,
) -> Result<RefDecision, GateError> {
    let commit = git
        .resolve_commit(&update.local_oid)?
        .unwrap_or_else(|| update.local_oid.clone());
    let tree = git.tree_of(&commit).unwrap_or_default();
    Ok(RefDecision::Rejected {
        verdict: Box::new(Verdict {
            version: 1,
            commit,
            tree,
            base: update.remote_oid.clone(),
            reviewer: super::verdict::DETERMINISTIC.to_string(),
            verdict: Decision::Reject,
            checks: vec![check.to_string()],
            findings,
            packet: None,
            timestamp: super::rfc3339_utc(orchestra_sys::exec::now_ms() / 1000),
            notes: Vec::new(),
        }),
        fresh: true,
        // Nothing to review: what has to change is the tag or the ref, then the push again.
        command: "git push".to_string(),
    })
}

/// Returns the verdict stored on `tip` itself when it approves a range whose base the remote
/// already has (`base` is it or descends from it): then everything pushed was reviewed.
fn range_approved(
    git: &Git,
    tip: &str,
    base: &str,
    approval: ApprovalPolicy,
) -> Result<Option<Verdict>, GateError> {
    let Some(v) = read_verdict(git, tip)?.filter(|v| v.commit == tip && approval.accepts(v)) else {
        return Ok(None);
    };
    let covered = v.base == base || git.is_ancestor(&v.base, base).unwrap_or(false);
    Ok(covered.then_some(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_carries_the_marker_on_its_second_line() {
        assert_eq!(HOOK_SCRIPT.lines().nth(1), Some(HOOK_MARKER));
        assert!(HOOK_SCRIPT.starts_with("#!/bin/sh\n"));
    }

    #[test]
    fn parses_push_lines() {
        let got = parse_updates("refs/heads/a 111 refs/heads/a 000\n\nbad line\n");
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].remote_oid, "000");
    }
}

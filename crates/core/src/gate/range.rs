//! Works out what a review covers: the commit range (given, or HEAD against its upstream or
//! the default branch) and, from the tip's `Orchestra-Run`/`Orchestra-Packet` trailers, the
//! packet whose declared scope and validation commands apply.

use super::GateError;
use crate::plan::Packet;
use crate::store::Store;
use orchestra_git::git::{Git, RepoInfo};

/// A range ready to review, with the words that explain where its base came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedRange {
    /// The commit the range is compared against (a merge-base when the base was a branch).
    pub base: String,
    /// The reviewed commit.
    pub tip: String,
    /// How the base was chosen, e.g. "upstream origin/main" or "merge-base with main".
    pub base_source: String,
}

/// Resolves `spec` (`A..B`, `A...B`, a single commit, or `None` for HEAD) into base and tip.
/// `A` may be the empty tree's id, for a range of everything up to `B`.
///
/// A single commit is compared with its upstream when it is a branch that has one, otherwise
/// with the merge-base of the default branch (`origin/HEAD`, `main`, `master`, `origin/main`,
/// `origin/master`, first that exists).
pub fn resolve_range(repo: &RepoInfo, spec: Option<&str>) -> Result<ResolvedRange, GateError> {
    let git = repo.git();
    let spec = spec.map(str::trim).filter(|s| !s.is_empty());
    let (base, tip, source) = if let Some((a, b)) = spec.and_then(|s| s.split_once("...")) {
        let a = commit_of(&git, or_head(a))?;
        let b = commit_of(&git, or_head(b))?;
        let base = merge_base(&git, &a, &b)?;
        (base, b, "merge-base of the range's ends".to_string())
    } else if let Some((a, b)) = spec.and_then(|s| s.split_once("..")) {
        let tip = commit_of(&git, or_head(b))?;
        match empty_tree_named(&git, a)? {
            // `<empty tree>..<tip>`: everything up to the tip is new, as on a first push to an
            // empty remote (the range the pre-push gate suggests then).
            Some(empty) => (empty, tip, "the empty tree: everything is new".to_string()),
            None => (
                commit_of(&git, or_head(a))?,
                tip,
                format!("`{}` as given", or_head(a)),
            ),
        }
    } else {
        let name = spec.unwrap_or("HEAD");
        let tip = commit_of(&git, name)?;
        let (other, source) = default_base(&git, name)?;
        let other_id = commit_of(&git, &other)?;
        (merge_base(&git, &other_id, &tip)?, tip, source)
    };
    if base == tip {
        return Err(GateError::EmptyRange { base: source, tip });
    }
    Ok(ResolvedRange {
        base,
        tip,
        base_source: source,
    })
}

/// Returns the empty tree's id when `spec` names it (in full, or at least 7 of its leading
/// hex digits), `None` otherwise.
fn empty_tree_named(git: &Git, spec: &str) -> Result<Option<String>, GateError> {
    let spec = spec.trim().to_ascii_lowercase();
    if spec.len() < 7 || !spec.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(None);
    }
    let empty = git.empty_tree()?;
    Ok(empty.starts_with(&spec).then_some(empty))
}

fn or_head(s: &str) -> &str {
    if s.is_empty() { "HEAD" } else { s }
}

/// Returns the full commit id `spec` names.
pub(crate) fn commit_of(git: &Git, spec: &str) -> Result<String, GateError> {
    git.resolve_commit(spec)?
        .ok_or_else(|| GateError::UnknownRevision {
            spec: spec.to_string(),
        })
}

fn merge_base(git: &Git, a: &str, b: &str) -> Result<String, GateError> {
    match git.merge_base(a, b)? {
        Some(id) => Ok(id),
        // Unrelated histories: everything in the tip is new; compare with the empty tree.
        None => Ok(git.empty_tree()?),
    }
}

/// Returns the ref a review of `name` compares against and a description of the choice.
fn default_base(git: &Git, name: &str) -> Result<(String, String), GateError> {
    // `None` as well on a detached HEAD, without an upstream, or when the upstream is gone.
    if let Some(u) = git.upstream(name)? {
        return Ok((u.clone(), format!("upstream {u}")));
    }
    if let Some(target) = git.symbolic_target("refs/remotes/origin/HEAD")? {
        return Ok((
            target.clone(),
            format!("merge-base with default branch {target}"),
        ));
    }
    for candidate in ["main", "master", "origin/main", "origin/master"] {
        if git.resolve_commit(candidate)?.is_some() {
            return Ok((
                candidate.to_string(),
                format!("merge-base with default branch {candidate}"),
            ));
        }
    }
    Err(GateError::NoBase)
}

/// The packet a commit belongs to, as its trailers and the run store say.
#[derive(Debug, Clone)]
pub struct PacketRef {
    pub run: String,
    pub packet: Packet,
    /// The packet's own worktree when it is checked out at the reviewed commit (inside the
    /// packet pipeline): reviewers read it there instead of making a scratch checkout.
    pub checkout: Option<std::path::PathBuf>,
    /// Notes the verdict keeps (why a best-of-N packet's candidate was chosen).
    pub notes: Vec<String>,
}

/// Returns the packet named by `commit`'s `Orchestra-Run` and `Orchestra-Packet` trailers when
/// the run store knows it; `None` for ordinary commits or runs that are gone.
pub fn packet_of(repo: &RepoInfo, commit: &str) -> Result<Option<PacketRef>, GateError> {
    let git = repo.git();
    let run = git.trailer(commit, "Orchestra-Run")?;
    let packet = git.trailer(commit, "Orchestra-Packet")?;
    if run.is_empty() || packet.is_empty() {
        return Ok(None);
    }
    let store =
        Store::open_existing(&repo.common_dir).map_err(|e| GateError::Store(e.to_string()))?;
    let Some(record) = store
        .map(|s| s.run(&run))
        .transpose()
        .map_err(|e| GateError::Store(e.to_string()))?
        .flatten()
    else {
        return Ok(None);
    };
    let Ok(plan) = record.plan() else {
        return Ok(None);
    };
    Ok(plan
        .packets
        .into_iter()
        .find(|p| p.id == packet)
        .map(|packet| PacketRef {
            run,
            packet,
            checkout: None,
            notes: Vec::new(),
        }))
}

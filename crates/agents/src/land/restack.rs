//! Restacking: when a parent's pull request landed by squash or rebase, its commits are not in
//! the branch it landed in, so retargeting a child alone would carry the parent's old commits
//! along (a diff repeating the parent, often conflicting with its squashed copy). The child's
//! own commits, those after the parent's old head, are moved onto the new base instead, and
//! the same happens down the stack to each open descendant, onto the moved branch.
//!
//! Nothing of the child's is lost: its old head is saved under
//! `refs/orchestra/saved/<run>/<packet>/<head>` before the branch is pushed, and the push
//! carries a lease on the old head, so a push made in between by a person is never overwritten
//! (the push fails and the pull request is looked at again). A replay that conflicts is sent
//! back to the packet's worker as a fix round ([`super::conflict`]); when no round is left, or
//! the worker leaves it unresolved, nothing is pushed and the pull request waits for a person,
//! naming the conflicting files.

use orchestra_core::store::{Event, Store};
use orchestra_git::git::{Git, GitError, Replayed, RepoInfo};
use orchestra_sys::names;

use super::{Followed, Journal, LandError, Step};

/// Where landing's restacks read and write: the repository and the remote of the pull
/// requests.
pub(super) struct Restacker<'a> {
    pub git: Git,
    pub remote: &'a str,
    pub run: &'a str,
    /// The repository, for a conflict round's worktree and checks.
    pub repo: &'a RepoInfo,
    /// Fix rounds per pull request (`[land] max_rounds`), conflict rounds included.
    pub max_rounds: u32,
    /// Who works a conflict round when no worker command did the packets (our agent, an
    /// agent CLI), and where a worker command runs confined, as for a fix round.
    pub fixers: super::Fixers<'a>,
}

/// One branch to move: the pull request it belongs to, and the commit its own commits sit on.
pub(super) struct Move<'a> {
    pub packet: &'a str,
    pub number: u64,
    pub branch: &'a str,
    /// The parent's old head: the child's own commits are those after it.
    pub parent_head: &'a str,
}

/// What restacking one branch did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Outcome {
    /// The parent's commits are in the new base: retargeting alone suffices.
    NotNeeded,
    /// The branch moved from `from` to `to`.
    Moved { from: String, to: String },
    /// The branch waits for a person; the reason says why.
    Person(String),
}

impl Restacker<'_> {
    /// Fetches `branch` of the remote and returns the commit it points at, `None` when the
    /// remote has no such branch.
    pub fn fetch(&self, branch: &str) -> Result<Option<String>, LandError> {
        let local = names::landing_fetch_ref(self.run, branch);
        let spec = format!("+refs/heads/{branch}:{local}");
        match self.git.fetch_refs(self.remote, &[spec]) {
            Ok(()) => Ok(self.git.resolve_commit(&local).map_err(git_error)?),
            Err(e) => {
                // A branch deleted after its pull request merged is normal; anything else is
                // the remote failing and is retried on the next poll.
                if self
                    .git
                    .remote_has_branch(self.remote, &format!("refs/heads/{branch}"))
                    .map_err(git_error)?
                {
                    Err(git_error(e))
                } else {
                    Ok(None)
                }
            }
        }
    }

    /// Returns the first of `candidates` that names a commit in the repository.
    fn first_known(&self, candidates: &[&str]) -> Result<Option<String>, LandError> {
        for c in candidates.iter().filter(|c| !c.is_empty()) {
            if let Some(id) = self.git.resolve_commit(c).map_err(git_error)? {
                return Ok(Some(id));
            }
        }
        Ok(None)
    }

    /// Moves `m`'s branch onto `onto` (a branch of the remote a parent landed in) when the
    /// parent's head `m.parent_head` is not in it; `parent_branch` is the parent's local
    /// branch, the fallback when the forge's head is not in the repository.
    pub fn onto_landed(
        &self,
        store: &mut Store,
        m: &Move<'_>,
        parent_branch: &str,
        onto: &str,
        journal: &mut Journal<'_>,
    ) -> Result<Outcome, LandError> {
        let Some(base) = self.fetch(onto)? else {
            return Ok(Outcome::Person(format!(
                "`{onto}`, where its parent landed, is not on the remote"
            )));
        };
        let fetched_parent = self.fetch(parent_branch)?;
        let parent_branch_ref = format!("refs/heads/{parent_branch}");
        let Some(parent) = self.first_known(&[
            m.parent_head,
            fetched_parent.as_deref().unwrap_or_default(),
            &parent_branch_ref,
        ])?
        else {
            return Ok(Outcome::NotNeeded);
        };
        if self.git.is_ancestor(&parent, &base).map_err(git_error)? {
            return Ok(Outcome::NotNeeded);
        }
        let at = Move {
            parent_head: &parent,
            ..*m
        };
        self.replay(store, &at, &base, onto, journal)
    }

    /// Replays `m`'s own commits (after the parent's head) onto `base`, saves the old head,
    /// pushes the new one over the old with a lease, and journals what happened; `onto` names
    /// `base` in events and reasons.
    pub fn replay(
        &self,
        store: &mut Store,
        m: &Move<'_>,
        base: &str,
        onto: &str,
        journal: &mut Journal<'_>,
    ) -> Result<Outcome, LandError> {
        let Some(head) = self.fetch(m.branch)? else {
            return Ok(Outcome::Person(format!(
                "its branch `{}` is no longer on the remote",
                m.branch
            )));
        };
        let upstream = self
            .git
            .merge_base(&head, m.parent_head)
            .map_err(git_error)?
            .unwrap_or_else(|| m.parent_head.to_string());
        let new = match self
            .git
            .replay_onto(base, &upstream, &head)
            .map_err(git_error)?
        {
            Replayed::Moved(new) => new,
            Replayed::Conflict { paths, .. } => {
                journal(
                    store,
                    Event::RestackConflicted {
                        packet: m.packet.to_string(),
                        number: m.number,
                        onto: onto.to_string(),
                        files: paths.clone(),
                    },
                )?;
                let c = super::conflict::Conflict {
                    packet: m.packet,
                    number: m.number,
                    branch: m.branch,
                    head: &head,
                    upstream: &upstream,
                    base,
                    onto,
                    paths: &paths,
                };
                return super::conflict::resolve(self, store, &c, journal);
            }
            Replayed::NotLinear(commit) => {
                return Ok(Outcome::Person(format!(
                    "its branch holds merge (or root) commit {} and is not restacked automatically; rebase it onto `{onto}` and push",
                    short(&commit)
                )));
            }
        };
        if new == head {
            return Ok(Outcome::NotNeeded);
        }
        let saved = names::saved_head_ref(self.run, m.packet, &head);
        self.git.set_ref(&saved, &head).map_err(git_error)?;
        journal(
            store,
            Event::PrRestacked {
                packet: m.packet.to_string(),
                number: m.number,
                from: head.clone(),
                to: new.clone(),
                onto: onto.to_string(),
                saved,
            },
        )?;
        // The lease: a push by anyone else since the fetch makes this one fail, and the next
        // poll starts over from what is there.
        self.git
            .push_with_lease(self.remote, m.branch, &new, &head)
            .map_err(git_error)?;
        Ok(Outcome::Moved {
            from: head,
            to: new,
        })
    }
}

/// Returns `paths` as `` `a`, `b` ``.
pub(super) fn quoted(paths: &[String]) -> String {
    if paths.is_empty() {
        return "its files".into();
    }
    paths
        .iter()
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Returns the first twelve characters of a commit id.
fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// Returns a git failure while restacking as a landing error, retried at the next poll.
fn git_error(e: GitError) -> LandError {
    LandError::Git(e)
}

/// Returns the step to take for `followed[i]` instead of `step`: when it is a retarget onto
/// where a parent landed by squash or rebase, its branch is restacked there first (and its open
/// descendants onto it); a restack that needs a person turns into waiting for one.
pub(super) fn before_retarget(
    r: &Restacker<'_>,
    store: &mut Store,
    followed: &[Followed],
    i: usize,
    step: Step,
    journal: &mut Journal<'_>,
) -> Result<Step, LandError> {
    let Step::Retarget { to } = &step else {
        return Ok(step);
    };
    let f = &followed[i];
    let Some(status) = &f.status else {
        return Ok(step);
    };
    let Some((parent, parent_status)) = followed.iter().find_map(|p| {
        p.status
            .as_ref()
            .filter(|s| f.depends_on.contains(&p.packet) && s.head == status.base)
            .map(|s| (p, s))
    }) else {
        return Ok(step);
    };
    let m = Move {
        packet: &f.packet,
        number: f.number,
        branch: &f.branch,
        parent_head: &parent_status.head_sha,
    };
    match r.onto_landed(store, &m, &parent.branch, to, journal)? {
        Outcome::NotNeeded => Ok(step),
        Outcome::Person(reason) => Ok(Step::Person(reason)),
        Outcome::Moved { from, to: new } => {
            descendants(r, store, followed, i, &from, &new, journal)?;
            Ok(step)
        }
    }
}

/// Moves the open pull requests stacked on `followed[i]` (whose branch moved from `from` to
/// `to`) onto its new head, and theirs onto theirs.
pub(super) fn descendants(
    r: &Restacker<'_>,
    store: &mut Store,
    followed: &[Followed],
    i: usize,
    from: &str,
    to: &str,
    journal: &mut Journal<'_>,
) -> Result<(), LandError> {
    let parent = &followed[i];
    for (j, c) in followed.iter().enumerate() {
        if c.settled.is_some() || !c.depends_on.contains(&parent.packet) {
            continue;
        }
        let m = Move {
            packet: &c.packet,
            number: c.number,
            branch: &c.branch,
            parent_head: from,
        };
        // A conflict here is journaled; the child is looked at again when its parent lands.
        if let Outcome::Moved { from, to } = r.replay(store, &m, to, &parent.branch, journal)? {
            descendants(r, store, followed, j, &from, &to, journal)?;
        }
    }
    Ok(())
}

/// Returns `step` unless `followed[i]` would wait for a parent that itself waits for a person
/// (a restack conflict, a real failure): then it waits for a person too, so landing ends
/// instead of following it forever.
pub(super) fn behind_person(followed: &[Followed], i: usize, step: Step) -> Step {
    if !matches!(step, Step::Wait(_)) {
        return step;
    }
    let f = &followed[i];
    match followed.iter().find(|p| {
        f.depends_on.contains(&p.packet) && matches!(p.settled, Some(super::Landing::Person(_)))
    }) {
        Some(p) => Step::Person(format!(
            "{}, which this one builds on, waits for one",
            p.packet
        )),
        None => step,
    }
}

//! Fix rounds while landing: a real failure on a pull request's head (a failed check that
//! stayed failed when re-run, a failed commit status) goes back to the packet's worker, and
//! what it changes is re-gated and pushed over the head it fixed.
//!
//! The packet's worker ([`super::fixer`]: the run's worker command, our agent, an agent CLI)
//! works in the packet's worktree when that still stands at the pull request's head (else in
//! a worktree of that head made for the round and removed after it, so nothing left in the
//! packet's worktree is ever touched); the result is committed, passes the deterministic
//! checks, the packet's validation — on its own and merged into the current tip of the pull
//! request's base ([`super::regate`]) — and the run's review, and is pushed with
//! `--force-with-lease` on the head it fixed, so a push someone else made meanwhile is never
//! overwritten. A fix the gate rejects is not pushed and goes back once more with what the
//! gate found, while `[land] max_rounds` allows.
//!
//! Each round is journaled when it starts and when it ends. A `land` killed in between starts
//! the next round on the same head (the forge still shows it: nothing was pushed), counted
//! against `[land] max_rounds`; a round that pushed moved the head, so it never runs twice.

use std::path::{Path, PathBuf};
use std::time::Duration;

use orchestra_core::gate;
use orchestra_core::plan::Packet;
use orchestra_core::store::{Event, EventKind, Store, StoreError};
use orchestra_git::git::{Git, RepoInfo, Untracked, commit};

use orchestra_core::forge::{Forge, ForgeError, LOG_TAIL_BYTES, safe_tail};

use super::decide::Answer;
use super::{Fixers, Journal, LandError, LandOptions, Step};

/// One fix round to run: which pull request, on which head, with what feedback.
pub(super) struct Round<'a> {
    pub repo: &'a RepoInfo,
    pub run: &'a str,
    /// The remote the pull request's branch lives on.
    pub remote: &'a str,
    pub packet: &'a str,
    pub number: u64,
    /// The pull request's head branch.
    pub branch: &'a str,
    /// The commit the forge shows as the head: what the fix builds on, and the push's lease.
    pub head_sha: &'a str,
    /// The pull request's base branch: the fix is validated merged into its current tip.
    pub base: Option<&'a str>,
    /// What a person is told when the round cannot fix it.
    pub reason: &'a str,
    /// What the worker is told.
    pub feedback: &'a str,
    /// The review requesting changes the round answers; `None` for failed checks.
    pub review: Option<&'a Answer>,
}

/// How a fix round ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Ended {
    /// The fix was pushed as commit `sha`; the forge's checks run on it next. `summary` says
    /// what changed (the worker's last words; empty when read back from the journal).
    Pushed { sha: String, summary: String },
    /// Nothing was pushed; a person must act, for this reason.
    Person(String),
    /// The gate (the deterministic checks, the review) rejected the fix, so it was not
    /// pushed; `fixes` says what to fix in another round, `why` a person what happened.
    Rejected { why: String, fixes: String },
}

/// Why a fix round pushed nothing.
pub(super) enum Miss {
    /// The gate rejected the fix: another round may fix what it found (`fixes`).
    Rejected { why: String, fixes: String },
    /// Anything else: the worker failed or changed nothing, git refused.
    Failed(String),
}

impl From<String> for Miss {
    fn from(why: String) -> Miss {
        Miss::Failed(why)
    }
}

/// Returns how many fix rounds were started for `packet` in run `run`.
pub(super) fn rounds_taken(store: &Store, run: &str, packet: &str) -> Result<u32, StoreError> {
    let started = store
        .events_of_kind(run, EventKind::LandFixStarted)?
        .into_iter()
        .filter(|e| matches!(&e.event, Event::LandFixStarted { packet: p, .. } if p == packet))
        .count();
    Ok(u32::try_from(started).unwrap_or(u32::MAX))
}

/// Returns how the last fix round of `packet`'s pull request that ended and `matches` (its
/// head and the review it answered) ended: a head is fixed at most once for its checks, a
/// review answered at most once.
fn ended(
    store: &Store,
    run: &str,
    packet: &str,
    matches: impl Fn(&str, Option<u64>) -> bool,
) -> Result<Option<Ended>, StoreError> {
    Ok(store
        .events_of_kind(run, EventKind::LandFixEnded)?
        .into_iter()
        .filter_map(|e| match e.event {
            Event::LandFixEnded {
                packet: p,
                head_sha,
                pushed,
                outcome,
                review,
                ..
            } if p == packet && matches(&head_sha, review) => Some(if pushed.is_empty() {
                Ended::Person(outcome)
            } else {
                Ended::Pushed {
                    sha: pushed,
                    summary: String::new(),
                }
            }),
            _ => None,
        })
        .last())
}

/// Runs fix round `number` of `round`'s pull request: journals its start, has the packet's
/// worker fix it, re-gates and pushes the result, and journals how it ended.
pub(super) fn run_round(
    store: &mut Store,
    round: &Round<'_>,
    number: u32,
    fixers: Fixers<'_>,
    journal: &mut Journal<'_>,
) -> Result<Ended, LandError> {
    journal(
        store,
        Event::LandFixStarted {
            packet: round.packet.to_string(),
            number: round.number,
            round: number,
            head_sha: round.head_sha.to_string(),
            reason: round.reason.to_string(),
        },
    )?;
    // Git's and the worker's words may quote a credential (a remote URL, a log line).
    let person = |why: &str| {
        format!(
            "{}; fix round {number} did not fix it: {}",
            round.reason,
            gate::mask_secrets(why)
        )
    };
    let ended = match work(store, round, number, fixers) {
        Ok((sha, summary)) => Ended::Pushed { sha, summary },
        Err(Miss::Failed(why)) => Ended::Person(person(&why)),
        Err(Miss::Rejected { why, fixes }) => Ended::Rejected {
            why: person(&why),
            fixes: gate::mask_secrets(&fixes),
        },
    };
    let (pushed, outcome) = match &ended {
        Ended::Pushed { sha, .. } => (sha.clone(), format!("pushed {}", short(sha))),
        Ended::Person(why) | Ended::Rejected { why, .. } => (String::new(), why.clone()),
    };
    journal(
        store,
        Event::LandFixEnded {
            packet: round.packet.to_string(),
            number: round.number,
            round: number,
            head_sha: round.head_sha.to_string(),
            pushed,
            outcome,
            review: round.review.map(|a| a.review),
        },
    )?;
    Ok(ended)
}

/// What a fix round needs to know of the run and its packet.
pub(super) struct Context {
    pub packet: Packet,
    pub objective: String,
    /// The run's worker command; `None` when its in-process worker (our agents, agent CLIs)
    /// did the packets.
    pub worker: Option<String>,
    pub timeout: Duration,
    /// The packet's worktree as the run recorded it.
    worktree: PathBuf,
    /// The run's own directory, for logs and a worktree of the head.
    pub dir: PathBuf,
}

/// Does the work of a fix round and returns the commit it pushed with what the worker said
/// last, or why it pushed nothing. A worktree the round made for the head is removed after
/// it, whatever happened: what the round made is then on the remote or under a kept ref (see
/// [`super::fixer::after_round`]).
fn work(
    store: &Store,
    round: &Round<'_>,
    number: u32,
    fixers: Fixers<'_>,
) -> Result<(String, String), Miss> {
    let ctx = context(store, round)?;
    let git = round.repo.git();
    let (wt, made) = worktree(round, &ctx, &git, number)?;
    let done = fix_in(round, number, fixers, &ctx, &wt);
    super::fixer::after_round(round, &git, &wt, number, done.is_ok(), made);
    done
}

/// Has the packet's worker fix the head checked out at `wt`, commits, re-gates and pushes
/// the fix; returns the pushed commit and what the worker said last.
fn fix_in(
    round: &Round<'_>,
    number: u32,
    fixers: Fixers<'_>,
    ctx: &Context,
    wt: &Path,
) -> Result<(String, String), Miss> {
    let git = round.repo.git();
    let pinned = Git::pinned(&round.repo.common_dir, wt)
        .map_err(|e| format!("cannot use the worktree {}: {e}", wt.display()))?;
    let said = super::fixer::run(round, number, fixers, ctx, wt)?;
    // A worker's own commits are folded into the engine's one fix commit, as in a run.
    commit::take_back_worker_commits(&pinned, round.head_sha, None)
        .map_err(|e| format!("cannot take back the worker's own commits: {e}"))?;
    let message = commit::message(
        &format!("Fix what failed on pull request #{}", round.number),
        &commit::Trailers {
            run: round.run,
            packet: round.packet,
            role: &ctx.packet.role,
        },
    );
    commit::commit_all(&pinned, &message).map_err(|e| format!("cannot commit the fix: {e}"))?;
    let new = pinned.head().map_err(|e| e.to_string())?;
    if new == round.head_sha {
        return Err(Miss::Failed("the worker changed nothing".into()));
    }
    let gate = super::regate::Gate {
        repo: round.repo,
        run: round.run,
        packet: ctx.packet.clone(),
        checkout: wt.to_path_buf(),
        fixers,
        timeout: ctx.timeout,
        remote: round.remote,
        base: round.base,
        logs: ctx
            .dir
            .join(format!("{}-round-{number}", round.packet))
            .join("merged"),
        what: "fix",
    };
    super::regate::check(&gate, round.head_sha, &new)?;
    git.push_with_lease(round.remote, round.branch, &new, round.head_sha)
        .map_err(|e| {
            format!(
                "pushing the fix over {} was refused (did someone push meanwhile?): {e}",
                short(round.head_sha)
            )
        })?;
    Ok((new, safe_tail(&said, None, LOG_TAIL_BYTES / 4)))
}

/// Returns the run's worker command, the packet and where its work lives.
fn context(store: &Store, round: &Round<'_>) -> Result<Context, String> {
    let record = store.require_run(round.run).map_err(|e| e.to_string())?;
    let plan = record.plan().map_err(|e| e.to_string())?;
    let packet = plan
        .packets
        .iter()
        .find(|p| p.id == round.packet)
        .cloned()
        .ok_or_else(|| format!("packet `{}` is not in the run's plan", round.packet))?;
    let worktree = store
        .packets(round.run)
        .map_err(|e| e.to_string())?
        .into_iter()
        .find(|p| p.id == round.packet)
        .map(|p| PathBuf::from(p.worktree))
        .unwrap_or_default();
    Ok(Context {
        packet,
        objective: record.objective.clone(),
        worker: record.worker_cmd.clone(),
        timeout: Duration::from_secs(record.timeout_secs.max(1)),
        worktree,
        dir: orchestra_sys::exec::RunDir::new(&round.repo.common_dir, round.run)
            .path()
            .join("land"),
    })
}

/// Returns the worktree the fix is made in, and whether this round made it: the packet's own
/// when it is clean at the head (recreated there when it was removed), else a fresh one of
/// the head under the run's directory.
fn worktree(
    round: &Round<'_>,
    ctx: &Context,
    git: &Git,
    number: u32,
) -> Result<(PathBuf, bool), String> {
    let at_head = |path: &Path| {
        Git::pinned(&round.repo.common_dir, path).is_ok_and(|g| {
            g.head().is_ok_and(|h| h == round.head_sha)
                && g.status_porcelain(Untracked::All)
                    .is_ok_and(|s| s.trim().is_empty())
        })
    };
    let own = &ctx.worktree;
    if !own.as_os_str().is_empty() && own.is_dir() && at_head(own) {
        return Ok((own.clone(), false));
    }
    let _ = git.prune_worktrees();
    let path = if !own.as_os_str().is_empty() && !own.exists() {
        own.clone()
    } else {
        ctx.dir
            .join(format!("{}-round-{number}", round.packet))
            .join("wt")
    };
    if path.exists() && at_head(&path) {
        return Ok((path, true));
    }
    if let Some(parent) = path.parent() {
        fs_err::create_dir_all(parent).map_err(|e| e.to_string())?;
    }
    git.add_detached_worktree(&path, round.head_sha)
        .map_err(|e| {
            format!(
                "cannot check out {} at {}: {e}",
                short(round.head_sha),
                path.display()
            )
        })?;
    Ok((path, true))
}

/// Returns the first twelve characters of a commit id.
fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}

/// What a fix step needs of the landing: the repository, the run, its options and forge.
pub(super) struct Env<'a> {
    pub repo: &'a RepoInfo,
    pub run: &'a str,
    pub opts: &'a LandOptions,
    pub forge: &'a dyn Forge,
    pub fixers: Fixers<'a>,
}

/// Turns a [`Step::Fix`] for `f` (at `head_sha`) into what landing does now: runs the next fix
/// round while `[land] max_rounds` allows one (and replies on the review it answers), else
/// hands the pull request to a person; any other step is returned unchanged.
pub(super) fn step(
    store: &mut Store,
    env: &Env<'_>,
    f: &super::Followed,
    head_sha: &str,
    step: Step,
    journal: &mut Journal<'_>,
) -> Result<Step, LandError> {
    let Step::Fix {
        reason,
        feedback,
        review,
    } = step
    else {
        return Ok(step);
    };
    let earlier = match &review {
        Some(a) => ended(store, env.run, &f.packet, |_, r| r == Some(a.review))?,
        None => ended(store, env.run, &f.packet, |h, r| {
            h == head_sha && r.is_none()
        })?,
    };
    match (earlier, &review) {
        (Some(Ended::Pushed { sha, .. }), Some(a)) => {
            return Ok(Step::Wait(format!(
                "{} to review the fix {}",
                a.author,
                short(&sha)
            )));
        }
        (Some(Ended::Pushed { sha, .. }), None) => {
            return Ok(Step::Wait(format!(
                "the forge to show the fix {} as the head",
                short(&sha)
            )));
        }
        (Some(Ended::Person(why) | Ended::Rejected { why, .. }), _) => {
            return Ok(Step::Person(why));
        }
        (None, _) => {}
    }
    let taken = rounds_taken(store, env.run, &f.packet)?;
    if taken >= env.opts.max_rounds {
        return Ok(Step::Person(match taken {
            0 => reason,
            1 => format!("{reason} (1 fix round did not fix it)"),
            n => format!("{reason} ({n} fix rounds did not fix it)"),
        }));
    }
    if store.require_run(env.run)?.worker_cmd.is_none() && env.fixers.worker.is_none() {
        return Ok(Step::Person(format!(
            "{reason} (not sent back: no worker to send it to; land the run with \
             `git orchestra land`, which sends it to the run's agents)"
        )));
    }
    // The head is fetched before the round starts: a remote out of reach is a failed look,
    // tried again at the next one, not a round spent.
    env.repo
        .git()
        .fetch_branch(&env.opts.remote, &f.branch)
        .map_err(|e| LandError::Forge(ForgeError::Git(e)))?;
    let mut feedback = feedback;
    let mut number = taken + 1;
    loop {
        let round = Round {
            repo: env.repo,
            run: env.run,
            remote: &env.opts.remote,
            packet: &f.packet,
            number: f.number,
            branch: &f.branch,
            head_sha,
            base: f.status.as_ref().map(|s| s.base.as_str()),
            reason: &reason,
            feedback: &feedback,
            review: review.as_ref(),
        };
        match run_round(store, &round, number, env.fixers, journal)? {
            Ended::Pushed { sha, summary } => {
                return Ok(match &review {
                    Some(a) => {
                        reply(env.forge, f.number, a, &sha, &summary, number);
                        Step::Wait(format!("{} to review the fix {}", a.author, short(&sha)))
                    }
                    None => Step::Wait(format!(
                        "the checks of fix round {number} ({})",
                        short(&sha)
                    )),
                });
            }
            // A fix the gate rejected goes back with what it found, while rounds remain; as
            // in a run, the worker sees what failed and what its fix got wrong.
            Ended::Rejected { fixes, .. } if number < env.opts.max_rounds => {
                feedback = format!("{feedback}\n\n## Your fix in round {number}\n\n{fixes}");
                number += 1;
            }
            Ended::Person(why) | Ended::Rejected { why, .. } => return Ok(Step::Person(why)),
        }
    }
}

/// Replies on the review `answer` names: on each of its inline threads, or in the
/// conversation when it has none, saying what fix round `round` pushed as `sha`. A reply the
/// forge refuses is logged, not retried: the fix is pushed and journaled either way.
fn reply(forge: &dyn Forge, number: u64, answer: &Answer, sha: &str, summary: &str, round: u32) {
    let said = if summary.trim().is_empty() {
        String::new()
    } else {
        format!("\n\nWhat the agent said:\n\n```\n{}\n```", summary.trim())
    };
    let body = format!(
        "@{} fix round {round} pushed {} for this review.{said}",
        answer.author,
        short(sha)
    );
    let sent = if answer.threads.is_empty() {
        forge.comment(number, &body)
    } else {
        answer
            .threads
            .iter()
            .try_for_each(|t| forge.reply_to_review_comment(number, *t, &body))
    };
    if let Err(e) = sent {
        tracing::warn!(error = %e, number, "the reply to the review was not posted");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use orchestra_core::forge::{ForgeKind, NewPullRequest, PullRequest, PullRequestUpdate};
    use orchestra_core::store::NewRun;

    /// A forge that is never reached.
    struct Unreachable;

    impl Forge for Unreachable {
        fn kind(&self) -> ForgeKind {
            ForgeKind::GitHub
        }
        fn find_by_head(&self, _: &str) -> Result<Option<PullRequest>, ForgeError> {
            Err(ForgeError::Config("unreachable".into()))
        }
        fn create(&self, _: &NewPullRequest) -> Result<PullRequest, ForgeError> {
            Err(ForgeError::Config("unreachable".into()))
        }
        fn update(
            &self,
            _: &PullRequest,
            _: &PullRequestUpdate,
        ) -> Result<PullRequest, ForgeError> {
            Err(ForgeError::Config("unreachable".into()))
        }
        fn add_labels(&self, _: u64, _: &[String]) -> Result<(), ForgeError> {
            Err(ForgeError::Config("unreachable".into()))
        }
        fn request_reviewers(&self, _: u64, _: &[String]) -> Result<(), ForgeError> {
            Err(ForgeError::Config("unreachable".into()))
        }
        fn comment(&self, _: u64, _: &str) -> Result<(), ForgeError> {
            Err(ForgeError::Config("unreachable".into()))
        }
    }

    #[test]
    fn a_failure_in_a_run_done_by_agents_waits_for_a_person_without_a_round() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = RepoInfo {
            toplevel: tmp.path().into(),
            common_dir: tmp.path().into(),
            branch: None,
            head: String::new(),
        };
        let mut store = Store::open(tmp.path()).unwrap();
        store
            .create_run(&NewRun {
                id: "r1".into(),
                objective: "o".into(),
                base: "main".into(),
                plan_toml: String::new(),
                plan_path: "plan.toml".into(),
                worker_cmd: None,
                max_parallel: 1,
                timeout_secs: 1,
                worktree_root: String::new(),
                packets: Vec::new(),
            })
            .unwrap();
        let opts = LandOptions::default();
        let env = Env {
            repo: &repo,
            run: "r1",
            opts: &opts,
            forge: &Unreachable,
            fixers: Fixers::default(),
        };
        let f = super::super::Followed {
            packet: "p1".into(),
            title: "P1".into(),
            role: "coder".into(),
            branch: "b1".into(),
            depends_on: Vec::new(),
            number: 1,
            url: String::new(),
            status: None,
            observed: None,
            person: None,
            settled: None,
            summary: None,
            flaky: Vec::new(),
            rounds: 0,
            queued: None,
        };
        let mut journal = |s: &mut Store, e: Event| -> Result<(), LandError> {
            s.record("r1", &e)?;
            Ok(())
        };
        let fix = Step::Fix {
            reason: "check `test` failed (failure)".into(),
            feedback: "the log".into(),
            review: None,
        };
        let next = step(&mut store, &env, &f, "abc", fix, &mut journal).unwrap();
        assert_eq!(
            next,
            Step::Person(
                "check `test` failed (failure) (not sent back: no worker to send it to; land \
                 the run with `git orchestra land`, which sends it to the run's agents)"
                    .into()
            )
        );
        assert_eq!(rounds_taken(&store, "r1", "p1").unwrap(), 0);
    }
}

//! Landing a run's pull requests: after `pr` opened one per packet, `land` follows them on the
//! forge until each is merged, closed by a person, or waits for one.
//!
//! Every poll reads each pull request's state, its head's checks and its reviews, and
//! [`decide`]s the next step: wait for parents to land, retarget a child onto the branch its
//! parent landed in, re-run a failed check once (a pass then is reported flaky), merge when
//! checks pass and no counted reviewer requests changes, or hand the pull request to a person
//! with the reason. Each step is journaled before it is taken and the forge is the source of
//! truth, so a `land` killed at any moment and started again continues where it was: a check
//! is re-run at most once per head (the journal says which were), and the summary comment is
//! found again by its marker rather than posted twice.
//!
//! A real failure (a failed check that stays failed when re-run, a failed commit status) goes
//! back to the packet's worker as a fix round ([`fix`]), at most `[land] max_rounds` times;
//! then the pull request waits for a person with the reason.
//!
//! A counted reviewer's review requesting changes goes back the same way, with their inline
//! comments; the fix is answered on the review's threads.
//!
//! A child whose parent landed by squash or rebase is [`restack`]ed first: its own commits
//! move onto the branch the parent landed in before it is retargeted.
//!
//! A restack that conflicts goes back to the packet's worker as a fix round too
//! ([`conflict`]): it resolves the conflict in a worktree where the rebase stopped, and the
//! checked result is pushed; when it cannot, the pull request waits for a person, naming the
//! files.

mod commands;
mod conflict;
mod decide;
mod fix;
mod fixer;
mod queued;
mod regate;
mod restack;
mod runner;
mod view;

use std::sync::Arc;
use std::time::Duration;

use orchestra_core::forge::{
    Check, Forge, ForgeError, MergeMethod, MergeOutcome, PrState, PrStatus, choose_method,
};
use orchestra_core::store::{Event, EventKind, Store, StoreError};
use orchestra_git::git::RepoInfo;
use serde::Serialize;

pub use decide::{Answer, Facts, Parent, Step, changes_requested, counted, decide};
pub use view::{AutoMerge, PrLanding, markdown, states};

/// Default seconds between polls.
pub const DEFAULT_POLL_SECS: u64 = 60;

/// Default fix rounds per pull request (`[land] max_rounds`).
pub const DEFAULT_MAX_ROUNDS: u32 = 3;

/// Consecutive failed polls after which landing gives up with the last error.
const MAX_FAILED_POLLS: u32 = 5;

/// How to land, from `[land]` and the command line.
#[derive(Debug, Clone)]
pub struct LandOptions {
    /// Time between polls; doubled after a failed poll, up to ten times this.
    pub poll: Duration,
    /// Whether to merge, or only follow.
    pub merge: bool,
    /// The merge method wanted; `None`: the first the repository allows of merge, squash,
    /// rebase.
    pub method: Option<MergeMethod>,
    /// Accounts whose reviews count; `None`: everyone the forge lets review.
    pub reviewers: Option<Vec<String>>,
    /// Stop after this many polls (`None`: until done); for a single look.
    pub max_polls: Option<u32>,
    /// Cuts the wait between polls short (a verified webhook event); `None`: only the clock.
    pub wake: Option<Arc<orchestra_core::forge::Wake>>,
    /// Fix rounds per pull request before it waits for a person; 0 sends nothing back.
    pub max_rounds: u32,
    /// The remote the pull requests' branches live on: fixes are fetched from and pushed to it.
    pub remote: String,
}

impl Default for LandOptions {
    fn default() -> LandOptions {
        LandOptions {
            poll: Duration::from_secs(DEFAULT_POLL_SECS),
            merge: true,
            method: None,
            reviewers: None,
            max_polls: None,
            wake: None,
            max_rounds: DEFAULT_MAX_ROUNDS,
            remote: "origin".to_string(),
        }
    }
}

/// Who works and re-gates the fix rounds of a run: its in-process worker (our agents, the
/// roles' agent CLIs) when no worker command did its packets, the review its packets passed,
/// and the sandboxes its commands run in. The front end builds them from the configuration;
/// the default has none of them (fix rounds of a run done by agents then wait for a person,
/// and commands run unconfined).
#[derive(Clone, Copy, Default)]
pub struct Fixers<'a> {
    /// The run's in-process worker: a fix round is the next turn of the packet agent's
    /// conversation, or its agent CLI's resumed session.
    pub worker: Option<&'a dyn orchestra_core::engine::Worker>,
    /// The review (a model, or `[roles.reviewer] agent`'s CLI) a fix must pass besides the
    /// deterministic checks; `None` when the run has none.
    pub reviewer: Option<&'a (dyn orchestra_core::gate::Reviewer + Sync)>,
    /// Where worker and validation commands run confined (`[sandbox]`).
    pub sandboxes: Option<&'a orchestra_sys::exec::process::Sandboxes>,
}

/// Where one packet's pull request stands at the end of landing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Landing {
    Merged,
    /// Closed by a person without merging.
    Closed,
    /// Waits for a person; the reason says why.
    Person(String),
    /// Still followed (polling stopped before it settled); the reason says what it waits for.
    Waiting(String),
}

/// One packet's pull request in the report.
#[derive(Debug, Clone, Serialize)]
pub struct LandEntry {
    pub packet: String,
    pub number: u64,
    pub branch: String,
    pub landing: Landing,
    /// Checks that failed once and passed when re-run.
    pub flaky: Vec<String>,
}

/// What landing did.
#[derive(Debug, Clone, Serialize)]
pub struct LandReport {
    pub run: String,
    pub entries: Vec<LandEntry>,
    /// Packets without a pull request (never published, or not succeeded).
    pub without_pr: Vec<String>,
}

/// Why landing stopped early.
#[derive(Debug, thiserror::Error)]
pub enum LandError {
    #[error(transparent)]
    Forge(#[from] ForgeError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Lock(orchestra_sys::exec::LockError),
    #[error("restacking a pull request's branch failed: {0}")]
    Git(orchestra_git::git::GitError),
    #[error(
        "another `git orchestra land` already follows the pull requests of run `{run}`; let it go on, or stop it (Ctrl-C) first"
    )]
    Busy { run: String },
    #[error("the plan stored with run `{run}` no longer parses: {message}")]
    StoredPlan { run: String, message: String },
    #[error(
        "run `{run}` has no pull requests on the forge; open them with `git orchestra pr {run}` first"
    )]
    NothingToLand { run: String },
    #[error(
        "[land] method = \"{wanted}\" is not allowed by the repository (allowed: {allowed}); change [land] method or the repository's settings"
    )]
    MethodNotAllowed { wanted: String, allowed: String },
}

/// One followed pull request and what landing remembers of it between polls.
struct Followed {
    packet: String,
    /// The packet's title and role, for the summary comment.
    title: String,
    role: String,
    branch: String,
    depends_on: Vec<String>,
    number: u64,
    /// The pull request's address, for `status` and the web view.
    url: String,
    status: Option<PrStatus>,
    /// The last observation journaled, so unchanged polls journal nothing.
    observed: Option<(String, String, String)>,
    /// The last reason a person was asked to act, so it is journaled once.
    person: Option<String>,
    settled: Option<Landing>,
    /// The summary comment's text as last written.
    summary: Option<String>,
    flaky: Vec<String>,
    /// Fix rounds started for it, by this `land` or earlier ones.
    rounds: u32,
    /// The forge merges it itself (a merge train, merge when the pipeline succeeds): how,
    /// since the last hand-over landing journaled.
    queued: Option<queued::Queued>,
}

/// Follows run `run`'s pull requests on `forge` until each has landed, was closed, or waits
/// for a person (or `opts.max_polls` polls have passed), journaling every step and calling
/// `on_event` with it.
pub fn land(
    repo: &RepoInfo,
    run: &str,
    forge: &dyn Forge,
    opts: &LandOptions,
    on_event: &mut dyn FnMut(&Event),
) -> Result<LandReport, LandError> {
    land_with(repo, run, forge, opts, Fixers::default(), on_event)
}

/// Follows run `run`'s pull requests as [`land`] does, with `fixers` working and re-gating
/// its fix rounds.
pub fn land_with(
    repo: &RepoInfo,
    run: &str,
    forge: &dyn Forge,
    opts: &LandOptions,
    fixers: Fixers<'_>,
    on_event: &mut dyn FnMut(&Event),
) -> Result<LandReport, LandError> {
    // One `land` per run: two would race each other's merges and re-runs. Its own lock, so
    // `pr`, `status` or `retry` of the run are not blocked while it follows for days.
    let dir = orchestra_sys::exec::RunDir::new(&repo.common_dir, run)
        .path()
        .join("land");
    let _lock = orchestra_sys::exec::RunLock::acquire(&dir, run).map_err(|e| match e {
        orchestra_sys::exec::LockError::Busy { .. } => LandError::Busy {
            run: run.to_string(),
        },
        other => LandError::Lock(other),
    })?;
    let mut store = Store::open(&repo.common_dir)?;
    let (mut followed, without_pr) = find_pull_requests(&store, run, forge)?;
    if followed.is_empty() {
        return Err(LandError::NothingToLand { run: run.into() });
    }
    restore_flaky(&store, run, &mut followed)?;
    queued::restore(&store, run, &mut followed)?;
    let mut journal = |store: &mut Store, e: Event| -> Result<(), LandError> {
        store.record(run, &e)?;
        on_event(&e);
        Ok(())
    };
    journal(
        &mut store,
        Event::LandStarted {
            pid: std::process::id(),
            merge: opts.merge,
        },
    )?;
    // Without `[land] merge` a `/orchestra land` comment may still ask for a merge.
    let method = match merge_method(forge, opts.method) {
        Ok(m) => Some(m),
        Err(e) if opts.merge => return Err(e),
        Err(_) => None,
    };
    let restacker = restack::Restacker {
        git: repo.git(),
        remote: &opts.remote,
        run,
        repo,
        max_rounds: opts.max_rounds,
        fixers,
    };
    let mut polls = 0;
    let mut failed = 0;
    loop {
        polls += 1;
        match poll(
            repo,
            fixers,
            &mut store,
            &restacker,
            forge,
            opts,
            method,
            &mut followed,
            &mut journal,
        ) {
            Ok(()) => failed = 0,
            Err(e @ LandError::Git(_)) if failed + 1 < MAX_FAILED_POLLS => {
                failed += 1;
                tracing::warn!(error = %e, failed, "restacking failed; backing off");
            }
            Err(LandError::Forge(e)) if failed + 1 < MAX_FAILED_POLLS => {
                failed += 1;
                tracing::warn!(error = %e, failed, "a look at the forge failed; backing off");
            }
            Err(e) => return Err(e),
        }
        let done = followed.iter().all(|f| f.settled.is_some());
        if done || opts.max_polls.is_some_and(|m| polls >= m) {
            break;
        }
        wait(opts, failed);
    }
    let count = |want: fn(&Landing) -> bool| {
        followed
            .iter()
            .filter(|f| f.settled.as_ref().is_some_and(want))
            .count()
    };
    journal(
        &mut store,
        Event::LandFinished {
            merged: count(|l| *l == Landing::Merged),
            closed: count(|l| *l == Landing::Closed),
            waiting: count(|l| matches!(l, Landing::Person(_))),
        },
    )?;
    Ok(LandReport {
        run: run.to_string(),
        entries: followed
            .into_iter()
            .map(|f| LandEntry {
                landing: f.settled.clone().unwrap_or_else(|| {
                    Landing::Waiting(f.observed.map(|o| o.2).unwrap_or_default())
                }),
                packet: f.packet,
                number: f.number,
                branch: f.branch,
                flaky: f.flaky,
            })
            .collect(),
        without_pr,
    })
}

/// Puts what earlier `land`s of `run` found flaky back into `followed`, so it stays in the
/// summary.
fn restore_flaky(store: &Store, run: &str, followed: &mut [Followed]) -> Result<(), LandError> {
    for e in store.events_of_kind(run, EventKind::CheckFlaky)? {
        if let Event::CheckFlaky { packet, check, .. } = e.event
            && let Some(f) = followed.iter_mut().find(|f| f.packet == packet)
            && !f.flaky.contains(&check)
        {
            f.flaky.push(check);
        }
    }
    Ok(())
}

/// Waits until the next poll: `[land] poll_secs`, doubled per failed look in a row (at most
/// tenfold), cut short by a verified webhook event.
fn wait(opts: &LandOptions, failed: u32) {
    let pause = opts.poll * 2u32.pow(failed).min(10);
    match &opts.wake {
        Some(wake) => {
            wake.sleep(pause);
        }
        None => std::thread::sleep(pause),
    }
}

/// Returns the method to merge with, from what the repository allows and `wanted`.
fn merge_method(forge: &dyn Forge, wanted: Option<MergeMethod>) -> Result<MergeMethod, LandError> {
    let allowed = forge.allowed_methods()?;
    choose_method(&allowed, wanted).ok_or_else(|| LandError::MethodNotAllowed {
        wanted: wanted.map_or("(any)", MergeMethod::as_str).to_string(),
        allowed: allowed
            .iter()
            .map(|m| m.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// Returns the run's packets that have a pull request, in the plan's dependency order, and
/// the ids of those without one.
fn find_pull_requests(
    store: &Store,
    run: &str,
    forge: &dyn Forge,
) -> Result<(Vec<Followed>, Vec<String>), LandError> {
    let record = store.require_run(run)?;
    let plan = record.plan().map_err(|e| LandError::StoredPlan {
        run: run.to_string(),
        message: e.to_string(),
    })?;
    let records = store.packets(run)?;
    let mut followed = Vec::new();
    let mut without = Vec::new();
    for packet in &plan.packets {
        let Some(rec) = records.iter().find(|r| r.id == packet.id) else {
            continue;
        };
        match forge.find_by_head(&rec.branch)? {
            Some(pr) => followed.push(Followed {
                packet: packet.id.clone(),
                title: packet.title.clone(),
                role: packet.role.clone(),
                branch: rec.branch.clone(),
                depends_on: packet.depends_on.clone(),
                number: pr.number,
                url: pr.url.clone(),
                status: None,
                observed: None,
                person: None,
                settled: None,
                summary: None,
                flaky: Vec::new(),
                rounds: 0,
                queued: None,
            }),
            None => without.push(packet.id.clone()),
        }
    }
    Ok((topo(followed), without))
}

/// Returns `items` ordered so each comes after the ones it depends on.
fn topo(mut rest: Vec<Followed>) -> Vec<Followed> {
    let mut out: Vec<Followed> = Vec::new();
    while !rest.is_empty() {
        let ids: Vec<String> = rest.iter().map(|f| f.packet.clone()).collect();
        let at = rest
            .iter()
            .position(|f| f.depends_on.iter().all(|d| !ids.contains(d)))
            .unwrap_or(0);
        out.push(rest.remove(at));
    }
    out
}

pub(super) type Journal<'a> = dyn FnMut(&mut Store, Event) -> Result<(), LandError> + 'a;

/// Looks at every unsettled pull request once, parents first, and takes its next step.
#[allow(clippy::too_many_arguments)]
fn poll(
    repo: &RepoInfo,
    fixers: Fixers<'_>,
    store: &mut Store,
    restacker: &restack::Restacker<'_>,
    forge: &dyn Forge,
    opts: &LandOptions,
    method: Option<MergeMethod>,
    followed: &mut [Followed],
    journal: &mut Journal<'_>,
) -> Result<(), LandError> {
    let run = restacker.run;
    for i in 0..followed.len() {
        if followed[i].settled.is_some() {
            continue;
        }
        let status = forge.pr_status(followed[i].number)?;
        followed[i].status = Some(status.clone());
        let parents: Vec<Parent> = followed[i]
            .depends_on
            .iter()
            .filter_map(|d| followed.iter().find(|f| &f.packet == d))
            .filter_map(|f| {
                f.status.as_ref().map(|s| Parent {
                    packet: f.packet.clone(),
                    head: s.head.clone(),
                    state: s.state,
                    base: s.base.clone(),
                })
            })
            .collect();
        let checks = if status.state == PrState::Open {
            forge.checks(&status.head_sha)?
        } else {
            Vec::new()
        };
        let (reviews, inline) = if status.state == PrState::Open {
            (
                forge.reviews(status.number)?,
                forge.review_comments(status.number)?,
            )
        } else {
            (Vec::new(), Vec::new())
        };
        if status.state == PrState::Open {
            view::look(
                store,
                &view::Look {
                    run,
                    packet: &followed[i].packet,
                    url: &followed[i].url,
                    status: &status,
                    checks: &checks,
                    reviews: &reviews,
                    reviewers: opts.reviewers.as_deref(),
                },
                journal,
            )?;
        }
        let target = commands::Target {
            run,
            packet: &followed[i].packet,
            number: followed[i].number,
            reviewers: opts.reviewers.as_deref(),
        };
        let asked = if status.state == PrState::Open {
            commands::read(store, forge, &target, journal)?
        } else {
            commands::Asked::default()
        };
        if asked.retry {
            commands::rerun_failed(store, forge, &target, &status.head_sha, &checks, journal)?;
        }
        let rerun = reruns(store, run, &followed[i].packet, &status.head_sha)?;
        note_flaky(&mut followed[i], &checks, &rerun, &status, journal, store)?;
        let step = match (&asked.stopped_by, asked.retry) {
            (Some(who), _) => Step::Person(format!(
                "{who} stopped landing it (/orchestra stop); comment /orchestra land to go on"
            )),
            (None, true) => Step::Wait("the failed checks re-run by /orchestra retry".into()),
            (None, false) => decide(&Facts {
                status: &status,
                checks: &checks,
                reviews: &reviews,
                inline: &inline,
                reviewers: opts.reviewers.as_deref(),
                parents: &parents,
                rerun: &rerun,
                merge: opts.merge || asked.land,
            }),
        };
        let step = restack::before_retarget(restacker, store, followed, i, step, journal)?;
        let step = conflict::onto_moved_base(restacker, store, followed, i, step, journal)?;
        let env = fix::Env {
            repo,
            run,
            opts,
            forge,
            fixers,
        };
        let step = fix::step(store, &env, &followed[i], &status.head_sha, step, journal)?;
        followed[i].rounds = fix::rounds_taken(store, run, &followed[i].packet)?;
        let step = restack::behind_person(followed, i, step);
        act(store, forge, method, &mut followed[i], step, journal)?;
    }
    Ok(())
}

/// Returns the names of the checks already re-run on `head_sha` of `packet`'s pull request.
fn reruns(
    store: &Store,
    run: &str,
    packet: &str,
    head_sha: &str,
) -> Result<Vec<String>, LandError> {
    Ok(store
        .events_of_kind(run, EventKind::CheckRerun)?
        .into_iter()
        .filter_map(|e| match e.event {
            Event::CheckRerun {
                packet: p,
                check,
                head_sha: h,
                ..
            } if p == packet && h == head_sha => Some(check),
            _ => None,
        })
        .collect())
}

/// Journals, once, each re-run check that now passes: it was flaky.
fn note_flaky(
    f: &mut Followed,
    checks: &[Check],
    rerun: &[String],
    status: &PrStatus,
    journal: &mut Journal<'_>,
    store: &mut Store,
) -> Result<(), LandError> {
    for c in checks {
        let passed = matches!(
            c.conclusion,
            orchestra_core::forge::CheckConclusion::Success
        );
        if passed && rerun.contains(&c.name) && !f.flaky.contains(&c.name) {
            f.flaky.push(c.name.clone());
            journal(
                store,
                Event::CheckFlaky {
                    packet: f.packet.clone(),
                    number: f.number,
                    check: c.name.clone(),
                    head_sha: status.head_sha.clone(),
                },
            )?;
        }
    }
    Ok(())
}

/// Takes `step` for `f`: journals it, then acts on the forge, and keeps the summary comment
/// up to date.
fn act(
    store: &mut Store,
    forge: &dyn Forge,
    method: Option<MergeMethod>,
    f: &mut Followed,
    step: Step,
    journal: &mut Journal<'_>,
) -> Result<(), LandError> {
    let Some(status) = f.status.clone() else {
        return Ok(());
    };
    let state = match status.state {
        PrState::Open => "open",
        PrState::Merged => "merged",
        PrState::Closed => "closed",
    };
    let waiting = match &step {
        Step::Wait(r) => r.clone(),
        // A fix or rebase step that was not turned into a round is a person's to take.
        Step::Person(r) | Step::Fix { reason: r, .. } | Step::Rebase { reason: r } => {
            format!("a person: {r}")
        }
        _ => String::new(),
    };
    // Handed to the forge at this head: the next looks wait for the forge, not for nothing.
    let waiting = match &f.queued {
        Some(q) if step == Step::Merge && q.head_sha == status.head_sha => q.waiting(),
        _ => waiting,
    };
    let observed = (state.to_string(), status.head_sha.clone(), waiting.clone());
    if f.observed.as_ref() != Some(&observed) {
        journal(
            store,
            Event::PrObserved {
                packet: f.packet.clone(),
                number: f.number,
                state: state.into(),
                head_sha: status.head_sha.clone(),
                waiting: waiting.clone(),
            },
        )?;
        f.observed = Some(observed);
    }
    let summary_line = match step {
        Step::Landed => {
            f.settled = Some(Landing::Merged);
            "merged".to_string()
        }
        Step::Closed => {
            f.settled = Some(Landing::Closed);
            return Ok(());
        }
        Step::Wait(reason) => format!("waiting for {reason}"),
        Step::Person(reason) | Step::Fix { reason, .. } | Step::Rebase { reason } => {
            if f.person.as_deref() != Some(reason.as_str()) {
                journal(
                    store,
                    Event::LandWaiting {
                        packet: f.packet.clone(),
                        number: f.number,
                        reason: reason.clone(),
                    },
                )?;
                f.person = Some(reason.clone());
            }
            f.settled = Some(Landing::Person(reason.clone()));
            format!("waiting for a person: {reason}")
        }
        Step::Retarget { to } => {
            journal(
                store,
                Event::PrRetargeted {
                    packet: f.packet.clone(),
                    number: f.number,
                    from: status.base.clone(),
                    to: to.clone(),
                },
            )?;
            forge.retarget(f.number, &to)?;
            format!("retargeted to `{to}`: its parent landed")
        }
        Step::Rerun(check) => {
            journal(
                store,
                Event::CheckRerun {
                    packet: f.packet.clone(),
                    number: f.number,
                    check: check.name.clone(),
                    head_sha: status.head_sha.clone(),
                },
            )?;
            if !forge.rerun(&check)? {
                tracing::info!(check = %check.name, "the check cannot be re-run");
            }
            format!("re-running `{}` once to tell a flaky failure", check.name)
        }
        Step::Merge => merge(store, forge, method, f, &status, journal)?,
    };
    let text = summary_text(f, &summary_line);
    if f.summary.as_deref() != Some(text.as_str()) {
        forge.upsert_summary(f.number, &text)?;
        f.summary = Some(text);
    }
    Ok(())
}

/// Merges `f`'s pull request and returns the summary line; a refusal hands it to a person.
fn merge(
    store: &mut Store,
    forge: &dyn Forge,
    method: Option<MergeMethod>,
    f: &mut Followed,
    status: &PrStatus,
    journal: &mut Journal<'_>,
) -> Result<String, LandError> {
    let Some(method) = method else {
        return Ok("ready; merging is left to people".into());
    };
    match forge.merge(f.number, method, &status.head_sha)? {
        MergeOutcome::Merged { .. } => {
            journal(
                store,
                Event::PrMerged {
                    packet: f.packet.clone(),
                    number: f.number,
                    method: method.as_str().into(),
                },
            )?;
            f.settled = Some(Landing::Merged);
            if let Some(s) = f.status.as_mut() {
                s.state = PrState::Merged;
            }
            Ok(format!("merged ({})", method.as_str()))
        }
        // The forge merges it itself (a merge train, once its pipeline succeeds); the next
        // looks follow it until it shows merged, asking nothing again.
        MergeOutcome::Queued { how, position } => {
            queued::note(store, f, status, how, position, journal)
        }
        MergeOutcome::Refused { reason } => {
            let reason = format!("the forge refused to merge it: {reason}");
            journal(
                store,
                Event::LandWaiting {
                    packet: f.packet.clone(),
                    number: f.number,
                    reason: reason.clone(),
                },
            )?;
            f.person = Some(reason.clone());
            f.settled = Some(Landing::Person(reason.clone()));
            Ok(format!("waiting for a person: {reason}"))
        }
    }
}

/// Returns the summary comment's text for `f` with `line` as its current state.
fn summary_text(f: &Followed, line: &str) -> String {
    let mut text = format!(
        "**git-orchestra** is landing this pull request: packet `{}` ({}), done by the `{}` role.\n\n- {line}\n",
        f.packet, f.title, f.role
    );
    if f.rounds > 0 {
        text.push_str(&format!(
            "- fix rounds (failures and reviews sent back to the packet's worker): {}\n",
            f.rounds
        ));
    }
    if !f.flaky.is_empty() {
        text.push_str(&format!(
            "- flaky (failed, then passed when re-run): {}\n",
            f.flaky.join(", ")
        ));
    }
    text
}

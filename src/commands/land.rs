//! `git orchestra land [<run>]`: follows a run's pull requests until they are merged, closed by
//! a person, or wait for one.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use git_orchestra::config::RepoConfig;
use git_orchestra::forge::{self, ForgeSettings, MergeMethod};
use git_orchestra::git::RepoInfo;
use git_orchestra::land::{LandError, LandOptions, LandReport, Landing};
use git_orchestra::store::Event;

use super::CommandError;

/// The variable holding the webhook secret when `[land] webhook_secret_env` names none.
const DEFAULT_WEBHOOK_SECRET_ENV: &str = "ORCHESTRA_WEBHOOK_SECRET";

/// Follows a run's pull requests to merged.
///
/// Polls the forge every `[land] poll_secs` (default 60). A pull request lands when its
/// checks pass, no reviewer counted by `[land] reviewers` requests changes, and the pull
/// requests of the packets it depends on have landed; it is merged through the API with
/// `[land] method` (default: what the repository allows, merge first), unless
/// `[land] merge = false`. A child whose parent landed is retargeted to the parent's base. A
/// failed check is re-run once: a pass then is reported as flaky. A real failure or a counted
/// review requesting changes goes back to the packet's worker as a fix round (a worker
/// command, our agent continuing its conversation, an agent CLI resuming its session); the
/// fix is re-gated (checks, validation, the run's review) and pushed with a lease, at most
/// `[land] max_rounds` times. A conflict or a refused merge leaves the pull request waiting
/// for a person, with the reason. Each pull request carries one summary comment, kept up to
/// date.
/// Comments `/orchestra stop`, `/orchestra land` (merge it even with `[land] merge = false`)
/// and `/orchestra retry` (re-run its failed checks) by counted reviewers steer one pull
/// request; other accounts' are shown, never acted on.
/// Every step is journaled: run `land` again after an interruption and it continues.
/// With `--webhook` (or `[land] webhook`) it also listens for the forge's webhook events: a
/// verified one makes it look at once instead of at the next poll.
#[derive(Debug, Args)]
pub struct LandArgs {
    /// The run (default: the newest run; see `git orchestra status`).
    run: Option<String>,
    /// The remote whose forge holds the pull requests (default: orchestra.forge.remote, else
    /// origin).
    #[arg(long, value_name = "NAME")]
    remote: Option<String>,
    /// Look once and stop, instead of following until every pull request has settled.
    #[arg(long)]
    once: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Listen on this address for the forge's webhook events (overrides `[land] webhook`); an
    /// event signed with the secret in `$ORCHESTRA_WEBHOOK_SECRET` (or the variable `[land]
    /// webhook_secret_env` names) makes landing look at once, any other is answered 401.
    #[arg(long, value_name = "ADDR:PORT")]
    webhook: Option<String>,
}

/// Runs `land`.
pub fn cmd_land(cwd: &Path, args: &LandArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    let mut config = super::load_config(&repo)?;
    if let Some(addr) = &args.webhook {
        config.land.webhook = Some(addr.clone());
    }
    let run = super::open_run(&repo, args.run.as_deref())?;
    run_land(
        &repo,
        &config,
        run.id(),
        args.remote.as_deref(),
        args.once,
        args.json,
    )
}

/// Follows run `run`'s pull requests on the forge of `remote` as `config`'s `[land]` says,
/// with progress lines on stderr and the report on stdout; `once` stops after one look.
pub fn run_land(
    repo: &RepoInfo,
    config: &RepoConfig,
    run: &str,
    remote: Option<&str>,
    once: bool,
    json: bool,
) -> Result<(), CommandError> {
    let run = super::open_run(repo, Some(run))?;
    let settings = ForgeSettings::load(&repo.git(), remote).map_err(CommandError::user)?;
    let forge = forge::open_forge(&settings).map_err(CommandError::user)?;
    let mut opts = options(config, once)?;
    if !once && let Some(addr) = &config.land.webhook {
        opts.wake = Some(listen(addr, config.land.webhook_secret_env.as_deref())?);
    }
    opts.remote = settings.remote.clone();
    // Fix rounds go to the run's own workers, re-gated by its review, confined as in a run.
    let has_cmd = run
        .record()
        .map_err(super::lifecycle_error)?
        .is_some_and(|r| r.worker_cmd.is_some());
    let forced = super::agent_cli::chosen(repo, run.id());
    let crew = git_orchestra::crew::Crew::assemble(repo, config, forced.as_deref(), None, has_cmd)
        .map_err(|e| {
            CommandError::user(e).hint("`git orchestra agents` lists the agent CLIs it knows")
        })?
        .continuing_kept();
    let ours = if has_cmd {
        None
    } else {
        Some(super::agent_worker(repo, config)?.continuing_kept())
    };
    let mut model = super::review::model_reviewer(
        repo,
        false,
        "fix the reviewer's profile (`git orchestra agents` shows where it comes from)",
    )?;
    if let (Some(m), Some(w)) = (model.as_mut(), ours.as_ref()) {
        m.share_gates(w.gates());
    }
    let review = crew.review(
        model
            .as_ref()
            .map(|m| m as &(dyn git_orchestra::gate::Reviewer + Sync)),
    );
    let workers = crew.workers(
        ours.as_ref()
            .map(|w| w as &dyn git_orchestra::engine::Worker),
    );
    let sandboxes =
        git_orchestra::agent::sandbox::command_sandboxes(&repo.common_dir, &config.sandbox);
    let fixers = git_orchestra::land::Fixers {
        worker: workers.worker(),
        reviewer: review.as_ref().map(|r| r.reviewer),
        sandboxes: Some(&sandboxes),
    };
    let mut print = |e: &Event| {
        if let Some(line) = event_line(e)
            && !json
        {
            // Reasons quote the forge's text (check output, comments): never let it drive
            // the terminal.
            eprintln!("{}", git_orchestra::redact::terminal_safe(&line));
        }
    };
    let report = run
        .land_with(forge.as_ref(), &opts, fixers, &mut print)
        .map_err(land_error)?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(CommandError::internal)?
        );
    } else {
        print!("{}", git_orchestra::redact::terminal_safe(&render(&report)));
    }
    Ok(())
}

/// Returns the landing options `[land]` of `config` sets.
fn options(config: &RepoConfig, once: bool) -> Result<LandOptions, CommandError> {
    let land = &config.land;
    let method = match land.method.as_deref() {
        None => None,
        Some(m) => Some(MergeMethod::parse(m).ok_or_else(|| {
            CommandError::user(format!(
                "[land] method = \"{m}\" is not a merge method; use merge, squash or rebase"
            ))
        })?),
    };
    Ok(LandOptions {
        poll: Duration::from_secs(
            land.poll_secs
                .unwrap_or(git_orchestra::land::DEFAULT_POLL_SECS)
                .max(1),
        ),
        merge: land.merge.unwrap_or(true),
        method,
        reviewers: land.reviewers.clone(),
        max_polls: once.then_some(1),
        wake: None,
        max_rounds: land
            .max_rounds
            .unwrap_or(git_orchestra::land::DEFAULT_MAX_ROUNDS),
        ..LandOptions::default()
    })
}

/// Starts the webhook listener on `addr`, its secret read from `secret_env` (default
/// `ORCHESTRA_WEBHOOK_SECRET`), and returns what it wakes.
fn listen(addr: &str, secret_env: Option<&str>) -> Result<Arc<forge::Wake>, CommandError> {
    let env = secret_env.unwrap_or(DEFAULT_WEBHOOK_SECRET_ENV);
    let secret = forge::WebhookSecret::from_env(env).map_err(CommandError::user)?;
    let wake = Arc::new(forge::Wake::default());
    let bound =
        forge::listen_for_webhooks(addr, secret, wake.clone()).map_err(CommandError::user)?;
    eprintln!("listening for webhook events on {bound}");
    Ok(wake)
}

/// Returns the progress line for a landing event, if it gets one.
fn event_line(e: &Event) -> Option<String> {
    Some(match e {
        Event::PrObserved {
            packet,
            number,
            state,
            waiting,
            ..
        } if !waiting.is_empty() => format!("{packet} #{number}: {state}, waiting for {waiting}"),
        Event::CheckRerun {
            packet,
            number,
            check,
            ..
        } => format!("{packet} #{number}: check `{check}` failed; re-running it once"),
        Event::CheckFlaky {
            packet,
            number,
            check,
            ..
        } => format!("{packet} #{number}: check `{check}` passed when re-run: flaky"),
        Event::PrRetargeted {
            packet,
            number,
            from,
            to,
        } => format!("{packet} #{number}: retargeted from {from} to {to}"),
        Event::PrRestacked {
            packet,
            number,
            from,
            to,
            onto,
            ..
        } => format!(
            "{packet} #{number}: restacked onto {onto}: its own commits moved from {} to {} (old head saved)",
            from.get(..12).unwrap_or(from),
            to.get(..12).unwrap_or(to)
        ),
        Event::RestackConflicted {
            packet,
            number,
            onto,
            files,
        } => format!(
            "{packet} #{number}: restacking onto {onto} conflicts in {}",
            files.join(", ")
        ),
        Event::PrMerged {
            packet,
            number,
            method,
        } => format!("{packet} #{number}: merged ({method})"),
        Event::PrQueued {
            packet,
            number,
            how,
            position,
            ..
        } => format!(
            "{packet} #{number}: handed to the forge: waiting for {how}{}",
            position.map_or(String::new(), |n| format!(", in merge train position {n}"))
        ),
        Event::LandWaiting {
            packet,
            number,
            reason,
        } => format!("{packet} #{number}: waits for a person: {reason}"),
        Event::LandFixStarted {
            packet,
            number,
            round,
            ..
        } => format!("{packet} #{number}: fix round {round}: sending what failed to its worker"),
        Event::LandFixEnded {
            packet,
            number,
            round,
            outcome,
            ..
        } => format!("{packet} #{number}: fix round {round} ended: {outcome}"),
        Event::LandCommand {
            packet,
            number,
            author,
            command,
            acted,
            ..
        } => format!(
            "{packet} #{number}: /orchestra {command} by {author}{}",
            if *acted {
                ""
            } else {
                ": not acted on (an unknown command, or an account [land] reviewers does not count)"
            }
        ),
        _ => return None,
    })
}

/// Returns the report as text.
pub fn render(r: &LandReport) -> String {
    let mut out = format!("pull requests of run {}:\n", r.run);
    for e in &r.entries {
        let state = match &e.landing {
            Landing::Merged => "merged".to_string(),
            Landing::Closed => "closed by a person".to_string(),
            Landing::Person(reason) => format!("waits for a person: {reason}"),
            Landing::Waiting(reason) => format!("still waiting for {reason}"),
        };
        out.push_str(&format!("  {} #{}: {state}\n", e.packet, e.number));
        if !e.flaky.is_empty() {
            out.push_str(&format!("    flaky: {}\n", e.flaky.join(", ")));
        }
    }
    for p in &r.without_pr {
        out.push_str(&format!("  {p}: no pull request\n"));
    }
    out
}

fn land_error(e: LandError) -> CommandError {
    match e {
        LandError::NothingToLand { .. }
        | LandError::MethodNotAllowed { .. }
        | LandError::Busy { .. } => CommandError::user(e),
        LandError::Forge(forge::ForgeError::Auth { .. } | forge::ForgeError::Config(_)) => {
            CommandError::user(e)
        }
        LandError::Forge(_) => CommandError::failed(e),
        other => CommandError::internal(other),
    }
}

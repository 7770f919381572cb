//! `git orchestra run <plan.toml>`: executes a hand-written plan, one worktree and branch per
//! packet, with any command-line agent as the worker.

use std::path::{Path, PathBuf};

use clap::Args;
use git_orchestra::engine::{self, RunOptions};
use git_orchestra::git::RepoInfo;
use git_orchestra::run::Run;
use git_orchestra::store::RunState;
use git_orchestra::{merge, names, plan};

use super::drive::{drive_once_ready, print_final};
use super::{CommandError, agent_worker, engine_error, load_config, progress};

/// Runs a plan: every packet in its own worktree and branch, ready packets in parallel.
///
/// Running the same plan again on the same base resumes the existing run instead of starting
/// a second one.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("afterwards").args(["merge", "pr"])))]
pub struct RunArgs {
    /// The plan file (TOML); the user guide's plan format chapter describes it.
    plan: PathBuf,
    /// The worker command, run with `sh -c` in each packet's worktree, instead of our own
    /// agents (the default, using the model profiles of `git orchestra agents`). It sees
    /// ORCHESTRA_PACKET_FILE (the packet as JSON), ORCHESTRA_RUN, ORCHESTRA_PACKET,
    /// ORCHESTRA_WORKTREE, ORCHESTRA_BASE and ORCHESTRA_PORT_BASE.
    #[arg(long, value_name = "COMMAND")]
    worker_cmd: Option<String>,
    /// An agent CLI that works every packet instead of our agents: claude, codex, gemini,
    /// opencode, qwen, or one described as [agents.cli.<name>] in .orchestra/config.toml
    /// (`[roles.<role>] agent = …` chooses one per role). Kept with the run.
    #[arg(long, value_name = "NAME", conflicts_with = "worker_cmd")]
    agent: Option<String>,
    /// Works every packet with N candidates (1 to 8) at once, each in its own worktree and
    /// branch; among those that pass its validation, the reviewer's choice (else the smallest
    /// change) becomes the packet's work (overrides the plan's `attempts`). A worker command
    /// sees its candidate's number in ORCHESTRA_CANDIDATE; `[best_of] arms` varies our agents'
    /// profiles.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=8))]
    best_of: Option<u32>,
    /// Most workers running at once, packets and their candidates together (default: the
    /// plan's max_parallel, else 4).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    max_parallel: Option<u16>,
    /// Longest a worker or validation command may run, in seconds (default 3600).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    timeout: Option<u64>,
    /// Where packet worktrees go (default: <repo-parent>/.orchestra/<repo-name>).
    #[arg(long, value_name = "DIR")]
    worktree_root: Option<PathBuf>,
    /// Where packets run: `local` (worktrees beside the repository), `ssh` (the hosts of
    /// `[executor.ssh]`) or `github-actions` (one workflow run per packet); default
    /// `[executor] kind`, else local. Kept with the run.
    #[arg(long, value_enum, value_name = "KIND")]
    executor: Option<super::executor::ExecutorArg>,
    /// Print only the final summary.
    #[arg(long, short)]
    quiet: bool,
    /// Print the final summary as JSON.
    #[arg(long)]
    json: bool,
    /// Afterwards, integrate the succeeded packets and advance the target (`git orchestra merge`).
    #[arg(long)]
    merge: bool,
    /// With --merge: the branch to advance; with --pr: the branch stacks target (default: the
    /// plan's base branch, else the current one).
    #[arg(long, value_name = "BRANCH", requires = "afterwards")]
    target: Option<String>,
    /// Afterwards, open or update one pull request per succeeded packet, stacked by
    /// dependency (`git orchestra pr`); `--pr=local` only writes them as Markdown files in
    /// the run's state directory and leaves the branches ready to push.
    #[arg(long, value_enum, value_name = "MODE", num_args = 0..=1, require_equals = true,
          default_missing_value = "auto", conflicts_with = "merge")]
    pr: Option<super::pr::PrMode>,
    /// With --pr: the remote to push to (default: orchestra.forge.remote, else origin).
    #[arg(long, value_name = "NAME", requires = "pr")]
    remote: Option<String>,
    /// With --pr: then follow the pull requests until they are merged, closed or wait for a
    /// person (`git orchestra land`).
    #[arg(long, requires = "pr")]
    land: bool,
}

/// Validates the plan, creates (or finds) its run, and drives it to the end.
pub fn cmd_run(cwd: &Path, args: &RunArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    // The main checkout's status (for the note below) while the plan is read and checked.
    let dirty = {
        let repo = repo.clone();
        std::thread::spawn(move || repo.is_dirty())
    };
    let config = load_config(&repo)?;
    let plan_path = cwd.join(&args.plan);
    let text = fs_err::read_to_string(&plan_path).map_err(|e| {
        CommandError::user(e).hint(
            "pass the path of a plan file; `git orchestra plan check <plan.toml>` validates one",
        )
    })?;
    let display = args.plan.display().to_string();
    let mut plan = plan::Plan::from_toml_str(&text, &display).map_err(CommandError::user)?;
    if let Err(issues) = plan::validate(&plan, &repo.toplevel) {
        let list: Vec<String> = issues.iter().map(|i| i.to_string()).collect();
        return Err(CommandError::user(format!(
            "{display} has {} problem{}:\n  {}",
            list.len(),
            if list.len() == 1 { "" } else { "s" },
            list.join("\n  ")
        ))
        .hint(format!(
            "`git orchestra plan check {display}` shows them with the schedule"
        )));
    }
    let text = best_of(&mut plan, text, args.best_of)?;
    let text = cap_candidates(&repo, &config, &mut plan, text, args)?;
    let base = repo.resolve_base(plan.base.as_deref())?;
    check_target(&repo, args)?;
    let run_id = names::run_id(&plan.objective, &base);
    let existing = Run::existing(&repo, &run_id).map_err(super::lifecycle_error)?;
    let executor = super::executor::choose(&repo, &config, args.executor, existing.as_ref())?;
    local_candidates(&plan, executor)?;
    check_agents(&repo, &config, &plan, args, existing.as_ref())?;
    let opts = RunOptions {
        worker_cmd: args.worker_cmd.clone(),
        max_parallel: config.max_parallel(args.max_parallel),
        timeout: config.timeout(args.timeout),
        worktree_root: config.worktree_root(args.worktree_root.as_deref(), cwd),
        kind: engine::RunKind::Plan,
    };
    let prepared = engine::prepare(&repo, &plan, &text, &display, &opts).map_err(engine_error)?;
    if let Some(name) = &args.agent {
        super::agent_cli::remember(&repo, &prepared.run.id, name)?;
    }
    super::executor::keep(&repo, &prepared, args.executor.is_some(), executor)?;
    if !prepared.created {
        if let Some(w) = &args.worker_cmd
            && prepared.run.worker_cmd.as_deref() != Some(w.as_str())
        {
            eprintln!(
                "note: run {} already exists; it keeps its worker command `{}`",
                prepared.run.id,
                prepared.run.worker_cmd.as_deref().unwrap_or("")
            );
        }
        let integrate =
            args.merge && matches!(prepared.run.state, RunState::Completed | RunState::Failed);
        if prepared.run.state.is_finished() && !integrate {
            eprintln!(
                "run {} is already {}",
                prepared.run.id,
                prepared.run.state.as_str()
            );
            say_if_dirty(dirty, &base)?;
            let shown = print_final(&repo, &prepared.run.id, args.json, prepared.run.state);
            if prepared.run.state == RunState::Cancelled {
                return shown;
            }
            return afterwards(&repo, &prepared.run.id, args, &config, shown);
        }
        if integrate {
            // Integrated as a phase of the run, like a new one: requested, then reopened for
            // the engine, so a crash or Ctrl-C leaves it for `resume` to integrate.
            eprintln!(
                "run {} is already {}; integrating it",
                prepared.run.id,
                prepared.run.state.as_str()
            );
            request_merge(&repo, &prepared.run.id, args, &config)?;
            engine::reopen_to_integrate(&repo, &prepared.run.id).map_err(engine_error)?;
        } else {
            eprintln!("run {} exists; resuming it", prepared.run.id);
        }
    } else if !args.quiet {
        eprintln!(
            "run {} ({} packets, base {})",
            prepared.run.id,
            plan.packets.len(),
            progress::short(&base)
        );
    }
    if args.merge && !prepared.run.state.is_finished() {
        request_merge(&repo, &prepared.run.id, args, &config)?;
    }
    // Joined last: the status runs while the run is prepared and its engine set up.
    let driven = drive_once_ready(
        &repo,
        &prepared.run.id,
        &config,
        (args.quiet, args.json),
        || say_if_dirty(dirty, &base),
    );
    // An interrupted or broken run is left alone.
    if let Err(e) = &driven
        && e.kind != super::error::ErrorKind::Failed
    {
        return driven;
    }
    if args.merge {
        return driven;
    }
    afterwards(&repo, &prepared.run.id, args, &config, driven)
}

/// Says so when `dirty`, the main checkout's status read on a thread, found uncommitted
/// changes: packets start from `base` without them. The note is all the status is for: one
/// that could not be read is said, and the run goes on.
fn say_if_dirty(
    dirty: std::thread::JoinHandle<Result<bool, git_orchestra::git::RepoError>>,
    base: &str,
) -> Result<(), CommandError> {
    let dirty = dirty
        .join()
        .map_err(|_| CommandError::internal("reading the working tree's status panicked"))?;
    match dirty {
        Ok(true) => eprintln!(
            "note: the working tree has uncommitted changes; packets start from the base commit {} and do not see them",
            progress::short(base)
        ),
        Ok(false) => {}
        Err(e) => eprintln!("warning: cannot read the working tree's status: {e}"),
    }
    Ok(())
}

/// Gives every packet of `plan` `n` candidates when `--best-of N` asks for it, and returns the
/// plan text the run keeps: `text` as written, or the plan written out again with its
/// `attempts` so that a resumed run keeps them.
fn best_of(plan: &mut plan::Plan, text: String, n: Option<u32>) -> Result<String, CommandError> {
    let Some(n) = n else {
        return Ok(text);
    };
    for packet in &mut plan.packets {
        packet.attempts = Some(n);
    }
    toml::to_string(&*plan).map_err(|e| {
        CommandError::internal(format!("cannot write the plan with --best-of {n}: {e}"))
    })
}

/// Refuses a plan whose packets have several candidates when they would run elsewhere: only
/// the local executor works a packet with candidates.
fn local_candidates(
    plan: &plan::Plan,
    executor: git_orchestra::config::ExecutorKind,
) -> Result<(), CommandError> {
    if executor == git_orchestra::config::ExecutorKind::Local {
        return Ok(());
    }
    engine::remote::check_candidates(plan, executor.as_str()).map_err(engine_error)
}

/// Caps each best-of-N packet's candidates to what `[best_of]`'s per-packet budget allows by
/// the packet's forecast, saying so for each packet it caps; returns the plan text the run
/// keeps (written out again when a packet was capped).
fn cap_candidates(
    repo: &RepoInfo,
    config: &git_orchestra::config::RepoConfig,
    plan: &mut plan::Plan,
    text: String,
    args: &RunArgs,
) -> Result<String, CommandError> {
    let budget = &config.best_of;
    if !budget.caps() || plan.packets.iter().all(|p| p.candidates() < 2) {
        return Ok(text);
    }
    // A worker command or an agent CLI names no model we know: forecast by role.
    let roles = git_orchestra::agent::Roles::load_with_trust(&repo.toplevel, config.trusted).ok();
    let by_cli = args.worker_cmd.is_some() || args.agent.is_some();
    let Some(forecast) = git_orchestra::orchestrator::plan_forecast(
        &repo.common_dir,
        plan,
        config,
        &|role| {
            let roles = roles.as_ref().filter(|_| !by_cli)?;
            git_orchestra::orchestrator::models::model_label(config, roles, role)
        },
        config.max_parallel(args.max_parallel),
    ) else {
        return Ok(text);
    };
    let mut capped = false;
    for packet in &mut plan.packets {
        let wanted = packet.candidates();
        let Some(f) = forecast.packet(&packet.id).filter(|_| wanted > 1) else {
            continue;
        };
        let (n, why) = git_orchestra::forecast::affordable_candidates(
            f,
            wanted,
            (budget.packet_tokens, budget.packet_cost),
            budget.tests_by_tester(),
        );
        if let Some(why) = why {
            eprintln!("note: packet `{}`: {why}", packet.id);
            packet.attempts = Some(n);
            capped = true;
        }
    }
    if !capped {
        return Ok(text);
    }
    toml::to_string(&*plan)
        .map_err(|e| CommandError::internal(format!("cannot write the capped plan: {e}")))
}

/// Checks, before anything starts, the roles our own agents would work (those without an
/// agent CLI) and their model profiles, unless a worker command does the work.
fn check_agents(
    repo: &RepoInfo,
    config: &git_orchestra::config::RepoConfig,
    plan: &plan::Plan,
    args: &RunArgs,
    existing: Option<&git_orchestra::store::RunRecord>,
) -> Result<(), CommandError> {
    if existing.is_some_and(|r| r.worker_cmd.is_some()) || args.worker_cmd.is_some() {
        return Ok(());
    }
    // Our own agents do the work of roles without an agent CLI: check those roles and
    // their profiles before anything starts.
    let forced = args
        .agent
        .clone()
        .or_else(|| existing.and_then(|r| super::agent_cli::chosen(repo, &r.id)));
    let cli = super::agent_cli::cli_worker(repo, config, forced.as_deref())?;
    let worker = agent_worker(repo, config)?;
    worker
        .check(
            plan.packets
                .iter()
                .map(|p| p.role.as_str())
                .filter(|r| cli.agent_for(r).is_none()),
        )
        .map_err(|e| {
            CommandError::user(e).hint(
                "configure a model profile (see `git orchestra agents`), or pass --worker-cmd '<command>' to use an external agent",
            )
        })?;
    Ok(())
}

/// Refuses a `--merge --target` that names no local branch before any packet runs: the
/// integration would fail only after all the work.
fn check_target(repo: &RepoInfo, args: &RunArgs) -> Result<(), CommandError> {
    let Some(target) = args.target.as_deref().filter(|_| args.merge) else {
        return Ok(());
    };
    let branch = target.strip_prefix("refs/heads/").unwrap_or(target);
    let found = repo
        .git()
        .resolve_commit(&format!("refs/heads/{branch}"))
        .map_err(CommandError::internal)?;
    match found {
        Some(_) => Ok(()),
        None => Err(super::merge::merge_error(merge::MergeError::BadTarget {
            target: branch.to_string(),
        })
        .hint("`git branch` lists the local branches; nothing was run")),
    }
}

/// Journals that `run` is to be integrated as `--merge` asks, before any packet of it runs:
/// the engine integrates once the packets are final (a failed run may still have succeeded
/// packets worth integrating), and a resume after a crash or Ctrl-C integrates too.
fn request_merge(
    repo: &RepoInfo,
    run: &str,
    args: &RunArgs,
    config: &git_orchestra::config::RepoConfig,
) -> Result<(), CommandError> {
    Run::request_merge(repo, run, &merge_options(repo, args, config))
        .map_err(super::lifecycle_error)
}

/// Returns the merge settings `--merge` asks for.
fn merge_options(
    repo: &RepoInfo,
    args: &RunArgs,
    config: &git_orchestra::config::RepoConfig,
) -> merge::MergeOptions {
    merge::MergeOptions {
        target: args.target.clone(),
        // The merged tree is validated under the run's own limit, as its packets were.
        timeout: config.timeout(args.timeout),
        ..merge::MergeOptions::from_config(
            config,
            git_orchestra::agent::sandbox::command_sandboxes(&repo.common_dir, &config.sandbox),
        )
    }
}

/// Does what `--pr` or `--merge` asks once the run has ended with `outcome`, and returns the
/// outcome combined with that step's.
fn afterwards(
    repo: &RepoInfo,
    run: &str,
    args: &RunArgs,
    config: &git_orchestra::config::RepoConfig,
    outcome: Result<(), CommandError>,
) -> Result<(), CommandError> {
    if let Some(mode) = args.pr {
        let published = super::pr::run_pr(
            repo,
            run,
            mode,
            args.remote.as_deref(),
            args.target.as_deref(),
            args.json,
        );
        if args.land && outcome.is_ok() && published.is_ok() {
            if mode == super::pr::PrMode::Local {
                return Err(CommandError::user(
                    "--land needs the pull requests on a forge; drop --pr=local",
                ));
            }
            return super::land::run_land(
                repo,
                config,
                run,
                args.remote.as_deref(),
                false,
                args.json,
            );
        }
        return outcome.and(published);
    }
    if args.merge {
        let opts = merge_options(repo, args, config);
        return outcome.and(super::merge::run_merge(repo, run, &opts, args.json));
    }
    outcome
}

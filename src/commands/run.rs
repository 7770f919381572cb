//! `git orchestra run <plan.toml>`: executes a hand-written plan, one worktree and branch per
//! packet, with any command-line agent as the worker.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use git_orchestra::agent::AgentWorker;
use git_orchestra::config::RepoConfig;
use git_orchestra::engine::{self, Control, RunOptions, Summary};
use git_orchestra::git::RepoInfo;
use git_orchestra::store::{RunState, Store};
use git_orchestra::{names, plan};

use super::CommandError;
use super::progress;

/// Runs a plan: every packet in its own worktree and branch, ready packets in parallel.
///
/// Running the same plan again on the same base resumes the existing run instead of starting
/// a second one.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("afterwards").args(["merge", "pr"])))]
pub struct RunArgs {
    /// The plan file (TOML); see README for its format.
    plan: PathBuf,
    /// The worker command, run with `sh -c` in each packet's worktree, instead of our own
    /// agents (the default, using the model profiles of `git orchestra agents`). It sees
    /// ORCHESTRA_PACKET_FILE (the packet as JSON), ORCHESTRA_RUN, ORCHESTRA_PACKET,
    /// ORCHESTRA_WORKTREE, ORCHESTRA_BASE and ORCHESTRA_PORT_BASE.
    #[arg(long, value_name = "COMMAND")]
    worker_cmd: Option<String>,
    /// Most packets running at once (default: the plan's max_parallel, else 4).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    max_parallel: Option<u16>,
    /// Longest a worker or validation command may run, in seconds (default 3600).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    timeout: Option<u64>,
    /// Where packet worktrees go (default: <repo-parent>/.orchestra/<repo-name>).
    #[arg(long, value_name = "DIR")]
    worktree_root: Option<PathBuf>,
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
}

/// Validates the plan, creates (or finds) its run, and drives it to the end.
pub fn cmd_run(cwd: &Path, args: &RunArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    let config = load_config(&repo)?;
    let plan_path = cwd.join(&args.plan);
    let text = fs_err::read_to_string(&plan_path).map_err(|e| {
        CommandError::user(e).hint(
            "pass the path of a plan file; `git orchestra plan check <plan.toml>` validates one",
        )
    })?;
    let display = args.plan.display().to_string();
    let plan = plan::Plan::from_toml_str(&text, &display).map_err(CommandError::user)?;
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
    let base = repo.resolve_base(plan.base.as_deref())?;
    let run_id = names::run_id(&plan.objective, &base);
    let existing = Store::open_existing(&repo.common_dir)
        .map_err(CommandError::internal)?
        .map(|s| s.run(&run_id))
        .transpose()
        .map_err(CommandError::internal)?
        .flatten();
    if existing.as_ref().is_none_or(|r| r.worker_cmd.is_none()) && args.worker_cmd.is_none() {
        // Our own agents do the work: check roles and profiles before anything starts.
        let worker = agent_worker(&repo, &config)?;
        worker
            .check(plan.packets.iter().map(|p| p.role.as_str()))
            .map_err(|e| {
                CommandError::user(e).hint(
                    "configure a model profile (see `git orchestra agents`), or pass --worker-cmd '<command>' to use an external agent",
                )
            })?;
    }
    if repo.is_dirty()? {
        eprintln!(
            "note: the working tree has uncommitted changes; packets start from the base commit {} and do not see them",
            progress::short(&base)
        );
    }
    let opts = RunOptions {
        worker_cmd: args.worker_cmd.clone(),
        max_parallel: args
            .max_parallel
            .map(usize::from)
            .or(config.run.max_parallel),
        timeout: Duration::from_secs(
            args.timeout
                .or(config.run.timeout_secs)
                .unwrap_or(git_orchestra::exec::DEFAULT_TIMEOUT.as_secs()),
        ),
        worktree_root: args
            .worktree_root
            .as_ref()
            .map(|p| cwd.join(p))
            .or(config.worktree.root.clone()),
    };
    let prepared = engine::prepare(&repo, &plan, &text, &display, &opts).map_err(engine_error)?;
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
        if prepared.run.state.is_finished() {
            eprintln!(
                "run {} is already {}",
                prepared.run.id,
                prepared.run.state.as_str()
            );
            let shown = print_final(&repo, &prepared.run.id, args.json, prepared.run.state);
            if let Some(mode) = args.pr
                && prepared.run.state != RunState::Cancelled
            {
                let published = super::pr::run_pr(
                    &repo,
                    &prepared.run.id,
                    mode,
                    args.remote.as_deref(),
                    args.target.as_deref(),
                    args.json,
                );
                return shown.and(published);
            }
            if args.merge && prepared.run.state != RunState::Cancelled {
                let opts = git_orchestra::merge::MergeOptions {
                    target: args.target.clone(),
                    ..Default::default()
                };
                let merged = super::merge::run_merge(&repo, &prepared.run.id, &opts, args.json);
                return shown.and(merged);
            }
            return shown;
        }
        eprintln!("run {} exists; resuming it", prepared.run.id);
    } else if !args.quiet {
        eprintln!(
            "run {} ({} packets, base {})",
            prepared.run.id,
            plan.packets.len(),
            progress::short(&base)
        );
    }
    let driven = drive(&repo, &prepared.run.id, &config, args.quiet, args.json);
    if !args.merge && args.pr.is_none() {
        return driven;
    }
    // A failed run may still have succeeded packets worth integrating; an interrupted or
    // broken one is left alone.
    if let Err(e) = &driven
        && e.kind != super::error::ErrorKind::Failed
    {
        return driven;
    }
    if let Some(mode) = args.pr {
        let published = super::pr::run_pr(
            &repo,
            &prepared.run.id,
            mode,
            args.remote.as_deref(),
            args.target.as_deref(),
            args.json,
        );
        return driven.and(published);
    }
    let opts = git_orchestra::merge::MergeOptions {
        target: args.target.clone(),
        ..Default::default()
    };
    let merged = super::merge::run_merge(&repo, &prepared.run.id, &opts, args.json);
    driven.and(merged)
}

/// Executes a run with progress on stderr and the summary on stdout; maps the outcome to the
/// exit code (0 completed, 1 failed, 130 interrupted).
pub fn drive(
    repo: &RepoInfo,
    run_id: &str,
    config: &RepoConfig,
    quiet: bool,
    json: bool,
) -> Result<(), CommandError> {
    let stop = git_orchestra::exec::install_signal_handlers();
    let model = super::review::model_reviewer(repo, false)?;
    let review = model.as_ref().map(|m| engine::PacketReview {
        reviewer: m,
        max_rounds: engine::DEFAULT_FIX_ROUNDS,
    });
    let printer = progress::printer(quiet || json);
    let crash_after_events = std::env::var("ORCHESTRA_CRASH_AFTER_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok());
    let ctl = Control {
        stop,
        on_event: &printer,
        setup: config.worktree.setup.clone(),
        crash_after_events,
        review: review.as_ref(),
    };
    let store = Store::open(&repo.common_dir).map_err(CommandError::internal)?;
    let has_cmd = store
        .require_run(run_id)
        .map_err(CommandError::internal)?
        .worker_cmd
        .is_some();
    drop(store);
    let worker = if has_cmd {
        None
    } else {
        Some(agent_worker(repo, config)?)
    };
    let worker_ref = worker.as_ref().map(|w| w as &dyn engine::Worker);
    let summary: Summary =
        engine::execute_with(repo, run_id, &ctl, worker_ref).map_err(engine_error)?;
    print_final(repo, run_id, json, summary.state)
}

/// Returns the repository's configuration merged over the user's
/// (`~/.config/git-orchestra/config.toml`, or under `$XDG_CONFIG_HOME`).
pub fn load_config(repo: &RepoInfo) -> Result<RepoConfig, CommandError> {
    let env = |k: &str| std::env::var(k).ok();
    let user = git_orchestra::config::user_config_path(&env);
    RepoConfig::load_with_user(&repo.toplevel, user.as_deref()).map_err(CommandError::user)
}

/// Returns our agents as the worker for runs without a worker command.
pub fn agent_worker(repo: &RepoInfo, config: &RepoConfig) -> Result<AgentWorker, CommandError> {
    let worker = AgentWorker::new(&repo.toplevel, config.clone()).map_err(|e| {
        CommandError::user(e)
            .hint("fix the agent file named above, or pass --worker-cmd '<command>'")
    })?;
    if let Some(notice) = worker.sandbox_notice() {
        eprintln!("{notice}");
    }
    Ok(worker)
}

pub(super) fn print_final(
    repo: &RepoInfo,
    run_id: &str,
    json: bool,
    state: RunState,
) -> Result<(), CommandError> {
    let store = Store::open(&repo.common_dir).map_err(CommandError::internal)?;
    let run = store.require_run(run_id).map_err(CommandError::internal)?;
    let packets = store.packets(run_id).map_err(CommandError::internal)?;
    let agents = store.agent_usage(run_id).map_err(CommandError::internal)?;
    if json {
        let value = serde_json::json!({ "run": run, "packets": packets, "agents": agents });
        println!(
            "{}",
            serde_json::to_string_pretty(&value).map_err(CommandError::internal)?
        );
    } else {
        let mut out = String::new();
        super::status::render(&mut out, &run, &packets);
        super::status::render_agents(&mut out, &agents);
        print!("{out}");
    }
    match state {
        RunState::Completed => Ok(()),
        RunState::Interrupted => Err(CommandError::interrupted(format!(
            "run {run_id} interrupted; `git orchestra resume` continues it"
        ))),
        _ => Err(CommandError::failed(format!(
            "run {run_id} {}: see the packets above; their work stays on their branches",
            state.as_str()
        ))),
    }
}

/// Maps engine errors to the CLI's kinds: bad input and lock contention are the user's to fix.
pub fn engine_error(e: engine::EngineError) -> CommandError {
    use engine::EngineError as E;
    match e {
        E::Repo(e) => e.into(),
        E::Lock(_)
        | E::MissingWorker { .. }
        | E::NotResumable { .. }
        | E::NothingToResume
        | E::NotFinished { .. } => CommandError::user(e),
        E::Store(git_orchestra::store::StoreError::UnknownRun { .. }) => CommandError::user(e),
        other => CommandError::internal(other),
    }
}

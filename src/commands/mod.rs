//! The command line: one file per subcommand, each with its clap `Args` beside its `cmd_*`
//! function; the doc comments are the help text.

mod agent;
mod agent_cli;
mod agents;
mod answer;
mod cancel;
mod demo;
mod detach;
mod diff;
mod drive;
mod error;
mod eval;
mod eval_compare;
mod eval_report;
mod eval_run;
mod eval_run_suite;
mod executor;
mod gc;
mod hook;
mod init;
mod land;
mod lsp;
mod manual;
mod mcp;
mod memory;
mod merge;
mod nav;
mod notify;
mod packet;
mod pause;
mod plan;
mod pr;
mod progress;
mod reference;
mod reference_cli;
mod reference_keys;
mod reference_source;
mod resume;
mod retry;
mod review;
mod run;
mod start;
mod status;
mod trust;
mod ui;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use error::CommandError;

use git_orchestra::agent::AgentWorker;
use git_orchestra::config::RepoConfig;
use git_orchestra::engine;
use git_orchestra::git::RepoInfo;
use git_orchestra::run::{LifecycleError, Run, RunRef};

/// Runs several coding agents in parallel on one repository, one git worktree and branch per
/// packet of work, and integrates their work only through review and merge gates.
#[derive(Debug, Parser)]
#[command(name = "git-orchestra", bin_name = "git orchestra", version, about, long_about = None)]
struct Cli {
    /// Run as if started in this directory instead of the current one.
    #[arg(short = 'C', long, global = true, value_name = "DIR")]
    directory: Option<std::path::PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Start(start::StartArgs),
    Init(init::InitArgs),
    Answer(answer::AnswerArgs),
    Demo(demo::DemoArgs),
    Pause(pause::PauseArgs),
    Run(run::RunArgs),
    /// Checks plan files and shows how their packets will be scheduled.
    Plan(plan::PlanArgs),
    Status(status::StatusArgs),
    Resume(resume::ResumeArgs),
    Retry(retry::RetryArgs),
    Cancel(cancel::CancelArgs),
    Gc(gc::GcArgs),
    Review(review::ReviewArgs),
    Hook(hook::HookArgs),
    Merge(merge::MergeArgs),
    Pr(pr::PrArgs),
    Land(land::LandArgs),
    Nav(nav::NavArgs),
    Mcp(mcp::McpArgs),
    Lsp(lsp::LspArgs),
    Agents(agents::AgentsArgs),
    Memory(memory::MemoryArgs),
    Agent(agent::AgentArgs),
    Ui(ui::UiArgs),
    Diff(diff::DiffArgs),
    Packet(packet::PacketArgs),
    Executor(executor::ExecutorArgs),
    Trust(trust::TrustArgs),
    Eval(eval::EvalArgs),
    #[command(hide = true)]
    Reference(reference::ReferenceArgs),
}

/// Parses the command line, runs the command and maps its error to an exit code and message.
pub fn main() -> ExitCode {
    init_tracing();
    manual::install_beside_binary();
    let cli = Cli::parse();
    let cwd = match std::env::current_dir() {
        Ok(dir) => match &cli.directory {
            Some(d) => dir.join(d),
            None => dir,
        },
        Err(e) => {
            return CommandError::internal(format!("cannot read the current directory: {e}"))
                .report();
        }
    };
    let result = match cli.command {
        Command::Start(args) => start::cmd_start(&cwd, &args),
        Command::Answer(args) => answer::cmd_answer(&cwd, &args),
        Command::Demo(args) => demo::cmd_demo(&cwd, &args),
        Command::Pause(args) => pause::cmd_pause(&cwd, &args),
        Command::Run(args) => run::cmd_run(&cwd, &args),
        Command::Status(args) => status::cmd_status(&cwd, &args),
        Command::Resume(args) => resume::cmd_resume(&cwd, &args),
        Command::Retry(args) => retry::cmd_retry(&cwd, &args),
        Command::Cancel(args) => cancel::cmd_cancel(&cwd, &args),
        Command::Gc(args) => gc::cmd_gc(&cwd, &args),
        Command::Init(args) => init::cmd_init(&cwd, &args),
        Command::Memory(args) => memory::cmd_memory(&cwd, &args),
        Command::Plan(args) => plan::cmd_plan(&cwd, &args),
        Command::Review(args) => review::cmd_review(&cwd, &args),
        Command::Hook(args) => hook::cmd_hook(&cwd, &args),
        Command::Merge(args) => merge::cmd_merge(&cwd, &args),
        Command::Pr(args) => pr::cmd_pr(&cwd, &args),
        Command::Land(args) => land::cmd_land(&cwd, &args),
        Command::Nav(args) => nav::cmd_nav(&cwd, args),
        Command::Mcp(args) => mcp::cmd_mcp(&cwd, &args),
        Command::Lsp(args) => lsp::cmd_lsp(&cwd, &args),
        Command::Agents(args) => agents::cmd_agents(&cwd, &args),
        Command::Agent(args) => agent::cmd_agent(&cwd, &args),
        Command::Ui(args) => ui::cmd_ui(&cwd, &args),
        Command::Diff(args) => diff::cmd_diff(&cwd, &args),
        Command::Packet(args) => packet::cmd_packet(&cwd, &args),
        Command::Executor(args) => executor::cmd_executor(&cwd, &args),
        Command::Trust(args) => trust::cmd_trust(&cwd, &args),
        Command::Eval(args) => eval::cmd_eval(&cwd, &args),
        Command::Reference(args) => reference::cmd_reference(&cwd, &args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => e.report(),
    }
}

/// Sends logs to stderr when `ORCHESTRA_LOG` is set (e.g. `ORCHESTRA_LOG=debug`); silent
/// otherwise, so progress output stays readable.
fn init_tracing() {
    if let Ok(filter) = std::env::var("ORCHESTRA_LOG") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .try_init();
    }
}

/// Returns the repository's configuration merged over the user's
/// (`~/.config/git-orchestra/config.toml`, or under `$XDG_CONFIG_HOME`).
/// What loading ignored (a repository's settings loosening the sandbox, or needing a trust
/// the user has not given) is said on stderr, once per setting.
pub(crate) fn load_config(repo: &RepoInfo) -> Result<RepoConfig, CommandError> {
    let config = load_config_quietly(repo)?;
    for notice in &config.notices {
        eprintln!("warning: {}", git_orchestra::redact::terminal_safe(notice));
    }
    Ok(config)
}

/// Does what [`load_config`] does without a word, for a second reading.
pub(crate) fn load_config_quietly(repo: &RepoInfo) -> Result<RepoConfig, CommandError> {
    let env = |k: &str| std::env::var(k).ok();
    let user = git_orchestra::config::user_config_path(&env);
    let mut config =
        RepoConfig::load_with_user(&repo.toplevel, user.as_deref()).map_err(CommandError::user)?;
    if let Some(problem) = config.best_of.arms_problem(config.profiles.keys()) {
        return Err(CommandError::user(problem)
            .hint("fix [best_of] arms in .orchestra/config.toml or the user configuration"));
    }
    if !config.trusted {
        // Role files are read by the agents' part; what of them is ignored joins the notices.
        use git_orchestra::config::trust::{self, TrustState};
        let state = user
            .as_deref()
            .and_then(|u| trust::state(&repo.toplevel, u).ok())
            .unwrap_or(TrustState::Untrusted);
        config.notices.extend(
            git_orchestra::agent::role::trust_items(&repo.toplevel)
                .iter()
                .map(|item| item.notice(state)),
        );
    }
    Ok(config)
}

/// Returns our agents as the worker for runs without a worker command.
pub(crate) fn agent_worker(
    repo: &RepoInfo,
    config: &RepoConfig,
) -> Result<AgentWorker, CommandError> {
    let worker = AgentWorker::in_repo(repo, config.clone()).map_err(|e| {
        CommandError::user(e)
            .hint("fix the agent file named above, or pass --worker-cmd '<command>'")
    })?;
    if let Some(notice) = worker.sandbox_notice() {
        eprintln!("{notice}");
    }
    Ok(worker)
}

/// Maps engine errors to the CLI's kinds: bad input and lock contention are the user's to fix.
pub(crate) fn engine_error(e: engine::EngineError) -> CommandError {
    use engine::EngineError as E;
    match e {
        E::Repo(e) => e.into(),
        E::Lock(_)
        | E::MissingWorker { .. }
        | E::NotResumable { .. }
        | E::NothingToResume
        | E::NotRetryable { .. }
        | E::NoSuchPacket { .. }
        | E::PacketNotRetryable { .. }
        | E::NothingToRetry { .. }
        | E::NotFinished { .. }
        | E::CandidatesElsewhere { .. }
        | E::Executor(_) => CommandError::user(e),
        E::Store(git_orchestra::store::StoreError::UnknownRun { .. }) => CommandError::user(e),
        other => CommandError::internal(other),
    }
}

/// Maps a refused or failed verb of a run's life to the CLI's kinds, with the hint that says
/// what to do next.
pub(crate) fn lifecycle_error(e: LifecycleError) -> CommandError {
    use LifecycleError as L;
    match e {
        L::Engine(e) => engine_error(e),
        L::Start(e) => start::start_error(e),
        e @ (L::UnknownRun { .. } | L::NoRun | L::UnknownStart { .. }) => {
            CommandError::user(e).hint("`git orchestra status` lists the runs")
        }
        e @ L::NoQuestion { .. } => CommandError::user(e)
            .hint("`git orchestra status` shows the questions waiting for an answer"),
        e if e.is_refusal() => CommandError::user(e),
        e => CommandError::internal(e),
    }
}

/// Opens the run named, or the newest run `git orchestra status` shows when none is, as the
/// command's error when there is no such run.
pub(crate) fn open_run(repo: &RepoInfo, run: Option<&str>) -> Result<Run, CommandError> {
    Run::open(repo, RunRef::from_arg(run)).map_err(lifecycle_error)
}

/// Returns `run`, or the newest run `git orchestra status` shows, checking it has packets: a
/// `start` run still planning has none to show, merge or publish yet, and is named as such.
pub(crate) fn pick_run_with_packets(
    repo: &RepoInfo,
    run: Option<&str>,
) -> Result<String, CommandError> {
    let picked = open_run(repo, run)?;
    let id = picked.id().to_string();
    match picked.require_packets() {
        Ok(r) => Ok(r.id().to_string()),
        Err(e) => Err(hint_unnamed(lifecycle_error(e), run.is_none(), &id)),
    }
}

/// Returns `e` with a hint naming the way to another run when the command picked `run` itself.
///
/// Commands whose run is optional act on the newest run only; when that one does not fit they
/// say so and never fall back to an older run, so the user is told how to name one.
pub(crate) fn hint_unnamed(e: CommandError, unnamed: bool, run: &str) -> CommandError {
    if !unnamed {
        return e;
    }
    e.hint(format!(
        "`{run}` is the newest run; `git orchestra status` lists the others, name one to act on it"
    ))
}

//! `git orchestra agent <role> "<task>"`: single-agent mode — one packet, one worktree and
//! branch, one of our agents, the engine's commit on the branch.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use git_orchestra::engine::{self, RunOptions};
use git_orchestra::git::RepoInfo;
use git_orchestra::names;
use git_orchestra::plan::{Packet, Plan};

use super::CommandError;
use super::drive::{drive, print_final};
use super::{agent_worker, engine_error};

/// Runs one of our agents on a task in its own worktree and branch, then commits its work.
///
/// The same task on the same base resumes the existing run instead of starting another.
#[derive(Debug, Args)]
pub struct AgentArgs {
    /// The role (see `git orchestra agents`), e.g. coder.
    role: String,
    /// What the agent should do.
    task: String,
    /// Files the agent may change (globs; default: everything its role may write).
    #[arg(long = "files", value_name = "GLOB")]
    files: Vec<String>,
    /// Commands that must pass after the agent completes (repeatable).
    #[arg(long = "validate", value_name = "COMMAND")]
    validation: Vec<String>,
    /// Longest the agent may run, in seconds (default: the role's timeout).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    timeout: Option<u64>,
    /// Where the worktree goes (default: <repo-parent>/.orchestra/<repo-name>).
    #[arg(long, value_name = "DIR")]
    worktree_root: Option<PathBuf>,
    /// Print only the final summary.
    #[arg(long, short)]
    quiet: bool,
    /// Print the final summary as JSON.
    #[arg(long)]
    json: bool,
    /// An agent CLI that does the task instead of our agent: claude, codex, gemini, opencode,
    /// qwen, or one described as [agents.cli.<name>] in .orchestra/config.toml.
    #[arg(long, value_name = "NAME")]
    agent: Option<String>,
    /// Works the task with N candidates (1 to 8) at once, each in its own worktree and branch;
    /// among those that pass the --validate commands, the reviewer's choice (else the smallest
    /// change) becomes the run's work. `[best_of] arms` varies their profiles.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=8))]
    best_of: Option<u32>,
}

/// Refuses `--best-of N` (N > 1) when `[executor] kind` runs packets elsewhere: candidates
/// run only on the local executor.
fn check_best_of_here(
    repo: &RepoInfo,
    config: &git_orchestra::config::RepoConfig,
    best_of: Option<u32>,
) -> Result<(), CommandError> {
    let kind = super::executor::kind_of(repo, config, None);
    match best_of {
        Some(n) if n > 1 && kind != git_orchestra::config::ExecutorKind::Local => {
            Err(CommandError::user(format!(
                "--best-of {n} asks for {n} candidates, but candidates run only on the local executor, not {}",
                kind.as_str()
            ))
            .hint("drop --best-of, or set `[executor] kind = \"local\"` in .orchestra/config.toml"))
        }
        _ => Ok(()),
    }
}

/// Builds a one-packet plan for the task and drives it with our agent.
pub fn cmd_agent(cwd: &Path, args: &AgentArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    let config = super::load_config(&repo)?;
    if args.task.trim().is_empty() {
        return Err(CommandError::user("the task is empty")
            .hint("git orchestra agent coder \"Make parse() reject empty input\""));
    }
    check_best_of_here(&repo, &config, args.best_of)?;
    let worker = agent_worker(&repo, &config)?;
    let cli = super::agent_cli::cli_worker(&repo, &config, args.agent.as_deref())?;
    if cli.agent_for(&args.role).is_none() {
        worker.check([args.role.as_str()]).map_err(|e| {
            CommandError::user(e)
                .hint("`git orchestra agents` lists the roles and their model profiles")
        })?;
    }
    let role = worker.roles().get(&args.role).map_err(CommandError::user)?;
    let id = names::sanitize(&role.name, 40);
    let id = if id.is_empty() {
        "agent".to_string()
    } else {
        id
    };
    let title: String = args
        .task
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(72)
        .collect();
    let packet = Packet {
        id,
        title,
        role: role.name.clone(),
        description: args.task.clone(),
        files: if args.files.is_empty() {
            vec!["**".to_string()]
        } else {
            args.files.clone()
        },
        symbols: Vec::new(),
        depends_on: Vec::new(),
        validation: args.validation.clone(),
        acceptance: Vec::new(),
        risks: Vec::new(),
        may_be_empty: false,
        risky: false,
        attempts: args.best_of,
    };
    let plan = Plan::new(args.task.clone(), vec![packet]);
    let text = toml::to_string(&plan).map_err(CommandError::internal)?;
    let timeout = args.timeout.unwrap_or(role.timeout_secs);
    let opts = RunOptions {
        worker_cmd: None,
        max_parallel: Some(1),
        timeout: Duration::from_secs(timeout),
        worktree_root: config.worktree_root(args.worktree_root.as_deref(), cwd),
        kind: engine::RunKind::Agent,
    };
    let prepared =
        engine::prepare(&repo, &plan, &text, "(agent task)", &opts).map_err(engine_error)?;
    if let Some(name) = &args.agent {
        super::agent_cli::remember(&repo, &prepared.run.id, name)?;
    }
    if prepared.run.state == git_orchestra::store::RunState::Failed {
        // The same task again is another try: the packet starts from the work it left.
        engine::reopen(&repo, &prepared.run.id, &[], None).map_err(engine_error)?;
        if !args.quiet {
            eprintln!(
                "run {} failed before; trying again from its worktree",
                prepared.run.id
            );
        }
        return drive(&repo, &prepared.run.id, &config, args.quiet, args.json);
    }
    if prepared.run.state.is_finished() {
        eprintln!(
            "run {} is already {}",
            prepared.run.id,
            prepared.run.state.as_str()
        );
        return print_final(&repo, &prepared.run.id, args.json, prepared.run.state);
    }
    if !args.quiet {
        eprintln!("run {} (agent {}, one packet)", prepared.run.id, role.name);
    }
    drive(&repo, &prepared.run.id, &config, args.quiet, args.json)
}

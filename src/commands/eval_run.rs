//! `git orchestra eval run`: works each arm on each valid task of a range of history, every
//! attempt in its own clean repository, and prints how many each arm resolved.

use std::path::{Path, PathBuf};

use clap::Args;
use git_orchestra::eval::{self, Check};
use git_orchestra::eval_run::{self, AttemptResult, EvalRun, journal};
use git_orchestra::git::RepoInfo;
use git_orchestra::redact::terminal_safe;

use super::CommandError;

/// Compares arms on the valid tasks of a range of history, or on the tasks of a suite file.
///
/// Every arm works every valid task once, each attempt in a new repository that holds the
/// task's base and its history only (no later commit, no other attempt's branch, no hidden
/// test), through the one-packet flow of `run --merge`. The task's hidden tests, taken from
/// the task's commit, are then written over what landed and the test command runs there: the
/// attempt is resolved if and only if it passes.
///
/// A suite file's tasks (as `eval tasks SUITE` lists them, not checked) each start from their
/// own repository's base; to judge an attempt, its test files are put back as the base has
/// them, its setup command runs, its test patch is applied, and its check runs: every
/// FAIL_TO_PASS test must pass and no PASS_TO_PASS test fail, or, naming none, the check must
/// exit 0.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["suite", "from_history"])))]
pub struct RunArgs {
    /// A task suite file: `*.toml` with `[[task]]` tables, else JSONL (ours or SWE-bench's).
    #[arg(value_name = "SUITE", conflicts_with = "from_history")]
    suite: Option<PathBuf>,
    /// The revision range whose valid tasks are attempted, e.g. `HEAD~50..HEAD`.
    #[arg(long = "from-history", value_name = "REV-RANGE")]
    from_history: Option<String>,
    /// Where a SWE-bench suite's `owner/name` repositories are: `DIR/owner__name` or `DIR/name`.
    #[arg(long = "repos-dir", value_name = "DIR", requires = "suite")]
    repos_dir: Option<PathBuf>,
    /// An arm, as `<name>=<spec>[,<option>…]`; repeat for each arm. `cmd:<shell>` runs an
    /// external worker command under the worker contract in the attempt's packet worktree;
    /// `agent:<role>[@<profile>]` one of our agents in that role (with that profile, else the
    /// role's configured one); `cli:<name>` one packet worked by that agent CLI;
    /// `start[@<profile>]` the whole flow unattended. Options (not for `cmd:`): `budget=<cost>`,
    /// `tokens=<n>`, `profile.<role>=<profile>`, `model.<role>=<model>`.
    #[arg(long = "arm", value_name = "NAME=SPEC", required = true)]
    arms: Vec<String>,
    /// The test command that judges tasks and attempts (as for `eval tasks`); a suite task's
    /// own `check` comes first.
    #[arg(long = "test", value_name = "COMMAND")]
    test: Option<String>,
    /// Longest one run of the test command, and of an arm's worker, may take, in seconds
    /// (default: `[run] timeout_secs`).
    #[arg(long, value_name = "SECS")]
    timeout: Option<u64>,
    /// Attempts of each arm at each task.
    #[arg(long, value_name = "K", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// Most attempts worked at once, each in its own repository.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..))]
    jobs: u16,
    /// Print `{"arms": [...], "attempts": [...]}` as JSON instead of tables.
    #[arg(long)]
    json: bool,
}

/// Mines the range's tasks (or reads the suite's), works every arm on each valid one and
/// prints the results.
pub fn cmd_run(cwd: &Path, args: &RunArgs) -> Result<(), CommandError> {
    let arms = eval_run::parse_all(&args.arms).map_err(|e| {
        CommandError::user(e)
            .hint("each `--arm` is `<name>=cmd:<shell>`, `<name>=agent:<role>[@<profile>]`, `<name>=cli:<name>` or `<name>=start[@<profile>]`, with options such as `,budget=0.50`")
    })?;
    let suite = match &args.suite {
        Some(path) => Some(super::eval_run_suite::read(
            cwd,
            path,
            args.repos_dir.as_deref(),
        )?),
        None => None,
    };
    let repo = super::eval_run_suite::home(cwd, suite.as_deref())?;
    let config = super::load_config(&repo)?;
    check_agents(&repo, &config, &arms)?;
    let command = match &suite {
        // A suite's tasks each find their own check; this one judges none of them directly.
        Some(_) => args
            .test
            .clone()
            .or_else(|| config.eval.test.clone())
            .unwrap_or_else(|| "(each task's own check)".to_string()),
        None => {
            super::eval::test_command(&repo, args.test.as_deref(), config.eval.test.as_deref())?
        }
    };
    let sandboxes =
        git_orchestra::agent::sandbox::command_sandboxes(&repo.common_dir, &config.sandbox);
    let check = Check {
        command: &command,
        timeout: config.timeout(args.timeout),
        confine: sandboxes.validation.as_deref(),
        stop: git_orchestra::exec::install_signal_handlers(),
    };
    warn_unconfined(&config);
    let (source, tasks, suites) = match (suite, &args.from_history) {
        (Some(tasks), _) => {
            let label = format!(
                "suite {}",
                args.suite.as_deref().unwrap_or(Path::new("")).display()
            );
            let suites = super::eval_run_suite::records(&tasks, args.test.as_deref())?;
            let tasks = tasks.into_iter().map(super::eval_run_suite::task).collect();
            (label, tasks, suites)
        }
        (None, Some(range)) => (
            range.clone(),
            mined(&repo, range, &check, args.json)?,
            Default::default(),
        ),
        (None, None) => {
            return Err(CommandError::user(
                "no tasks: give a suite file or `--from-history <REV-RANGE>`",
            ));
        }
    };
    let specs: Vec<&str> = args.arms.iter().map(String::as_str).collect();
    let tip = repo
        .git()
        .resolve_commit("HEAD")
        .ok()
        .flatten()
        .unwrap_or_default();
    let id = git_orchestra::names::run_id(
        &format!("eval {source}"),
        &format!(
            "{tip}\0{}\0{command}\0{}",
            specs.join("\0"),
            git_orchestra::exec::now_ms()
        ),
    );
    let run = EvalRun {
        id,
        source: &repo,
        config: &config,
        tasks,
        suites,
        arms,
        check: &check,
        repeat: args.repeat,
        jobs: usize::from(args.jobs),
    };
    run.create(&source).map_err(run_error)?;
    if !args.json {
        eprintln!(
            "eval {}: {} tasks × {} arms × {} attempts, {} at once",
            run.id,
            run.tasks.len(),
            run.arms.len(),
            run.repeat,
            run.jobs
        );
    }
    work(&run, args.json, 0)
}

/// Returns the valid tasks mined from `range` of `repo`, checked with `check`.
fn mined(
    repo: &RepoInfo,
    range: &str,
    check: &Check<'_>,
    json: bool,
) -> Result<Vec<eval::Task>, CommandError> {
    if !json {
        eprintln!(
            "checking the tasks of {} with `{}`",
            terminal_safe(range),
            terminal_safe(check.command)
        );
    }
    let tasks = eval::from_history(repo, range, check).map_err(|e| match e {
        eval::EvalError::Range { .. } | eval::EvalError::EmptyRange { .. } => CommandError::user(e),
        eval::EvalError::Interrupted { .. } => CommandError::interrupted(e),
        other => CommandError::internal(other),
    })?;
    Ok(tasks.into_iter().filter(|t| t.valid).collect())
}

/// Continues a stopped or killed eval.
///
/// Attempts that ended are kept; an attempt that started and never ended is redone from a
/// fresh repository; the others run.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The eval to continue (default: the newest).
    eval: Option<String>,
    /// Most attempts worked at once, each in its own repository.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..))]
    jobs: u16,
    /// Print `{"arms": [...], "attempts": [...]}` as JSON instead of tables.
    #[arg(long)]
    json: bool,
}

/// Continues an eval that was stopped or killed: attempts that ended are kept, attempts that
/// started and never ended are redone from a fresh repository, the rest run.
pub fn cmd_resume(cwd: &Path, args: &ResumeArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    let config = super::load_config(&repo)?;
    let id = journal::pick(&repo.common_dir, args.eval.as_deref()).map_err(CommandError::user)?;
    let state = journal::load(&repo.common_dir, &id).map_err(CommandError::user)?;
    let arms = eval_run::parse_all(&state.arms).map_err(CommandError::internal)?;
    warn_unconfined(&config);
    let sandboxes =
        git_orchestra::agent::sandbox::command_sandboxes(&repo.common_dir, &config.sandbox);
    let check = Check {
        command: &state.test,
        timeout: std::time::Duration::from_secs(state.timeout_secs),
        confine: sandboxes.validation.as_deref(),
        stop: git_orchestra::exec::install_signal_handlers(),
    };
    if !args.json {
        eprintln!(
            "eval {id}: {} of {} attempts ended; continuing",
            state.results.len(),
            state.tasks.len() * arms.len() * state.repeat as usize
        );
    }
    let run = EvalRun {
        id,
        source: &repo,
        config: &config,
        tasks: state.tasks.iter().map(|t| t.task()).collect(),
        suites: state
            .tasks
            .iter()
            .filter_map(|t| Some((t.commit.clone(), t.suite.clone()?)))
            .collect(),
        arms,
        check: &check,
        repeat: state.repeat,
        jobs: usize::from(args.jobs),
    };
    work(&run, args.json, state.results.len())
}

/// Works the eval's attempts (`already` of them ended before), with a line per attempt on
/// stderr counting how many ended, then prints the results and keeps them in git.
fn work(run: &EvalRun<'_>, json: bool, already: usize) -> Result<(), CommandError> {
    let total = run.tasks.len() * run.arms.len() * run.repeat.max(1) as usize;
    let done = std::sync::atomic::AtomicUsize::new(already);
    run.run(&|r| {
        let n = done.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        if !json {
            let line = format!(
                "{} {n}/{total} {}",
                super::eval_report::progress_bar(n, total),
                attempt_line(r)
            );
            eprintln!("{}", terminal_safe(&line));
        }
    })
    .map_err(run_error)?;
    super::eval_report::finish(run.source, &run.id, json)
}

/// Checks, before anything runs, each arm's options (every profile it names is defined) and
/// that what works its tasks can: the role of an `agent:` arm and the planning roles of a
/// `start` arm have a usable model profile, the CLI of a `cli:` arm is known.
fn check_agents(
    repo: &RepoInfo,
    config: &git_orchestra::config::RepoConfig,
    arms: &[eval_run::Arm],
) -> Result<(), CommandError> {
    use eval_run::ArmKind;
    let roles: Vec<String> =
        git_orchestra::agent::Roles::load_with_trust(&repo.toplevel, config.trusted)
            .map_err(|e| CommandError::user(e).hint("fix the agent file named above"))?
            .by_name
            .into_keys()
            .collect();
    for arm in arms {
        let named =
            |e: &dyn std::fmt::Display| CommandError::user(format!("arm `{}`: {e}", arm.name));
        let arm_config = arm.config(config, &roles).map_err(|e| {
            CommandError::user(e).hint("`git orchestra agents` lists the configured profiles")
        })?;
        let needs: Vec<&str> = match &arm.kind {
            ArmKind::Cmd(_) => continue,
            ArmKind::Cli(name) => {
                git_orchestra::agent::cli::CliWorker::new(&repo.toplevel, arm_config, Some(name))
                    .map_err(|e| {
                        named(&e).hint("`git orchestra agents` lists the agent CLIs it knows; configure others under [agents.cli.<name>]")
                    })?;
                continue;
            }
            ArmKind::Agent(role) => vec![role.as_str()],
            ArmKind::Start => vec!["planner", "clarifier"],
        };
        super::agent_worker(repo, &arm_config)?
            .check(needs)
            .map_err(|e| {
                named(&e).hint(
                    "configure a model profile (see `git orchestra agents`), or use a `cmd:` arm",
                )
            })?;
    }
    Ok(())
}

/// Warns when worker commands run unconfined: the sandbox is what keeps an attempt from
/// reading the source repository (which holds the answer) through the file system.
fn warn_unconfined(config: &git_orchestra::config::RepoConfig) {
    if config.sandbox.workers == Some(git_orchestra::config::WorkersSandbox::Off) {
        eprintln!(
            "warning: [sandbox] workers = \"off\": an attempt's worker can read this repository through the file system, the task's solution included; results may be contaminated"
        );
    }
}

/// Returns the command error for an eval that could not run.
fn run_error(e: eval_run::EvalRunError) -> CommandError {
    match e {
        eval_run::EvalRunError::NoTasks(_) | eval_run::EvalRunError::Busy { .. } => {
            CommandError::user(e)
        }
        eval_run::EvalRunError::Interrupted { .. } => CommandError::interrupted(e),
        other => CommandError::internal(other),
    }
}

/// Returns one attempt in a line: task, arm, and resolved or why not.
fn attempt_line(r: &AttemptResult) -> String {
    let outcome = match r.failure {
        None if r.resolved => "resolved".to_string(),
        None => "not resolved".to_string(),
        Some(f) => format!("not resolved: {}", f.as_str()),
    };
    format!(
        "{} {:<12} {outcome} ({:.1}s)",
        &r.task[..r.task.len().min(10)],
        r.arm,
        r.wall_ms as f64 / 1000.0
    )
}

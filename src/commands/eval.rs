//! `git orchestra eval`: measures what orchestration is worth on the repository's own history;
//! `eval tasks` lists the tasks its history holds and which of them are valid; `eval run`
//! (`eval_run.rs`) compares arms on them.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use git_orchestra::eval::{self, Check, Task};
use git_orchestra::git::RepoInfo;
use git_orchestra::project::Purpose;
use git_orchestra::redact::terminal_safe;

use super::CommandError;

/// Evaluates orchestration on this repository: tasks mined from its history.
#[derive(Debug, Args)]
pub struct EvalArgs {
    #[command(subcommand)]
    command: EvalCommand,
}

#[derive(Debug, Subcommand)]
enum EvalCommand {
    Tasks(TasksArgs),
    Run(super::eval_run::RunArgs),
    Resume(super::eval_run::ResumeArgs),
    Report(super::eval_run::ReportArgs),
}

/// Lists the tasks a range of history or a task suite file holds and which of them are valid.
///
/// A suite file (`SUITE`) is TOML (`[[task]]` tables) or JSONL (one task per line), in our format
/// or SWE-bench's; its tasks are listed as declared, after every field is checked (a bad one
/// exits 2 naming the task and the field).
///
/// Every first-parent commit that changes source and test files is a candidate (base: its parent; objective: its message; hidden tests: its
/// changes to test files). Where the test command reports per-test results (pytest, `cargo test`,
/// any runner printing `PASSED <id>` / `FAILED <id>` lines) a candidate is valid when some test
/// fails at the base with the hidden tests and passes at the commit (FAIL_TO_PASS) and no test
/// passing at the base fails at the commit (PASS_TO_PASS); otherwise when the command fails at
/// the base with the hidden tests and passes at the commit. Each check runs sandboxed in a
/// scratch worktree that is removed afterwards.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["suite", "from_history"])))]
pub struct TasksArgs {
    /// A task suite file: `*.toml` with `[[task]]` tables, else JSONL (ours or SWE-bench's).
    #[arg(value_name = "SUITE", conflicts_with = "from_history")]
    suite: Option<PathBuf>,
    /// The revision range to mine, e.g. `HEAD~50..HEAD` or `v1.0..main`.
    #[arg(long = "from-history", value_name = "REV-RANGE")]
    from_history: Option<String>,
    /// Where a history task's objective comes from: `commit` (its message, the default) or
    /// `model` (the `init` role rewrites the message as an issue statement naming no solution,
    /// after reading the code at the task's base; valid tasks only).
    #[arg(long = "objective-from", value_enum, default_value_t = ObjectiveFrom::Commit, conflicts_with = "suite")]
    objective_from: ObjectiveFrom,
    /// Check each suite task at its base: after its setup command and with its test patch
    /// applied, its check must fail (per test: no FAIL_TO_PASS test passes, no PASS_TO_PASS test
    /// fails). Its check command is its `check`, else `--test`, else its repository's.
    #[arg(long, requires = "suite")]
    check: bool,
    /// Where a SWE-bench suite's `owner/name` repositories are: `DIR/owner__name` or `DIR/name`.
    #[arg(long = "repos-dir", value_name = "DIR", requires = "suite")]
    repos_dir: Option<PathBuf>,
    /// The test command (run with `sh -c` at the top of each checkout); default: `[eval] test`,
    /// else the test command `init` detects. `pytest` is narrowed to the changed test files;
    /// every command finds them, one per line, in `ORCHESTRA_EVAL_TESTS`.
    #[arg(long = "test", value_name = "COMMAND")]
    test: Option<String>,
    /// Longest one run of the test command may take, in seconds (default: `[run] timeout_secs`).
    #[arg(long, value_name = "SECS")]
    timeout: Option<u64>,
    /// Print `{"tasks": [...], "counts": {...}}` as JSON instead of a list.
    #[arg(long)]
    json: bool,
}

/// Where a history task's objective comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ObjectiveFrom {
    /// The commit message, subject and body.
    Commit,
    /// The `init` role's issue statement written from the commit message.
    Model,
}

/// Runs an `eval` subcommand.
pub fn cmd_eval(cwd: &Path, args: &EvalArgs) -> Result<(), CommandError> {
    match &args.command {
        EvalCommand::Tasks(a) => cmd_tasks(cwd, a),
        EvalCommand::Run(a) => super::eval_run::cmd_run(cwd, a),
        EvalCommand::Resume(a) => super::eval_run::cmd_resume(cwd, a),
        EvalCommand::Report(a) => super::eval_run::cmd_report(cwd, a),
    }
}

/// Mines, checks and lists the tasks of a range of history, or lists a suite's.
fn cmd_tasks(cwd: &Path, args: &TasksArgs) -> Result<(), CommandError> {
    let range = match (&args.suite, &args.from_history) {
        (Some(suite), _) => return cmd_suite(cwd, suite, args),
        (None, Some(range)) => range,
        (None, None) => {
            return Err(CommandError::user(
                "give a task suite file or `--from-history <REV-RANGE>`",
            ));
        }
    };
    let repo = RepoInfo::discover(cwd)?;
    let config = super::load_config(&repo)?;
    let command = test_command(&repo, args.test.as_deref(), config.eval.test.as_deref())?;
    let sandboxes =
        git_orchestra::agent::sandbox::command_sandboxes(&repo.common_dir, &config.sandbox);
    let check = Check {
        command: &command,
        timeout: config.timeout(args.timeout),
        confine: sandboxes.validation.as_deref(),
        stop: git_orchestra::exec::install_signal_handlers(),
    };
    if !args.json {
        eprintln!(
            "checking the tasks of {} with `{}`",
            terminal_safe(range),
            terminal_safe(&command)
        );
    }
    if args.objective_from == ObjectiveFrom::Model {
        git_orchestra::orchestrator::explore::model_check(&repo.toplevel, &config, "init")
            .map_err(|why| {
                CommandError::user(format!(
                    "`--objective-from model` needs a model for the init role: {why}"
                ))
                .hint("configure a model profile, or leave the objective to the commit message")
            })?;
    }
    let quiet = args.json;
    let mut to_check = 0;
    let mut progress = |p: eval::Progress<'_>| match p {
        eval::Progress::Listed {
            commits,
            to_check: n,
        } if !quiet => {
            to_check = n;
            eprintln!(
                "{commits} commits, {n} of them change source and test files: checking those"
            );
        }
        eval::Progress::Checking { n, commit } if !quiet => {
            eprintln!(
                "[{n}/{to_check}] checking {}…",
                &commit[..commit.len().min(10)]
            );
        }
        _ => {}
    };
    let mut tasks =
        eval::from_history_with(&repo, range, &check, &mut progress).map_err(|e| match e {
            eval::EvalError::Range { .. } | eval::EvalError::EmptyRange { .. } => {
                CommandError::user(e)
            }
            eval::EvalError::Interrupted { .. } => CommandError::interrupted(e),
            other => CommandError::internal(other),
        })?;
    if args.objective_from == ObjectiveFrom::Model {
        rewrite_objectives(&repo, &config, &mut tasks, args.json)?;
    }
    if args.json {
        print_json(&tasks)
    } else {
        print_list(&tasks);
        Ok(())
    }
}

/// Replaces each valid task's objective with the `init` role's issue statement of it.
fn rewrite_objectives(
    repo: &RepoInfo,
    config: &git_orchestra::config::RepoConfig,
    tasks: &mut [Task],
    quiet: bool,
) -> Result<(), CommandError> {
    let stop = git_orchestra::exec::install_signal_handlers();
    for task in tasks.iter_mut().filter(|t| t.valid) {
        let Some(base) = task.base.clone() else {
            continue;
        };
        let short = &task.commit[..task.commit.len().min(10)];
        if !quiet {
            eprintln!("the init role writes the objective of {short}…");
        }
        let statement = git_orchestra::orchestrator::objective::issue_statement(
            repo,
            config,
            &base,
            &task.objective,
            stop,
        )
        .map_err(|e| {
            CommandError::internal(format!(
                "the init role could not write the objective of {short}: {e}"
            ))
        })?;
        task.objective = statement;
    }
    Ok(())
}

/// Reads and lists the tasks of the suite file `suite`.
fn cmd_suite(cwd: &Path, suite: &Path, args: &TasksArgs) -> Result<(), CommandError> {
    let path = cwd.join(suite);
    let repos_dir = args.repos_dir.as_ref().map(|d| cwd.join(d));
    let repos = eval::suite::Repos {
        dir: repos_dir.as_deref(),
    };
    let mut tasks = eval::suite::from_file(&path, &repos).map_err(CommandError::user)?;
    if args.check {
        check_suite(&mut tasks, args)?;
    }
    if args.json {
        let out = serde_json::json!({ "tasks": tasks });
        let text = serde_json::to_string_pretty(&out).map_err(CommandError::internal)?;
        println!("{text}");
        return Ok(());
    }
    for t in &tasks {
        print_suite_task(t, args.check);
    }
    let name = suite.display().to_string();
    let shown = terminal_safe(&name);
    if args.check {
        let all: Vec<Task> = tasks.iter().map(|t| t.task.clone()).collect();
        let (valid, reasons) = eval::counts(&all);
        let mut summary = format!("{} tasks in {shown}: {valid} valid", tasks.len());
        for (reason, n) in reasons {
            summary.push_str(&format!(", {n} {}", reason.as_str()));
        }
        println!("{summary}");
    } else {
        println!(
            "{} tasks in {shown} (as declared; not checked: `--check` runs them at their base)",
            tasks.len()
        );
    }
    Ok(())
}

/// Checks each suite task at its base with its check command (its own `check`, else `--test`,
/// else its repository's `[eval] test` or detected test command).
fn check_suite(tasks: &mut [eval::suite::SuiteTask], args: &TasksArgs) -> Result<(), CommandError> {
    let stop = git_orchestra::exec::install_signal_handlers();
    let total = tasks.len();
    for (done, task) in tasks.iter_mut().enumerate() {
        let repo = RepoInfo::discover(&task.repo)?;
        let config = super::load_config(&repo)?;
        let flag = task.check.as_deref().or(args.test.as_deref());
        let command = test_command(&repo, flag, config.eval.test.as_deref())?;
        let sandboxes =
            git_orchestra::agent::sandbox::command_sandboxes(&repo.common_dir, &config.sandbox);
        let check = Check {
            command: &command,
            timeout: config.timeout(args.timeout),
            confine: sandboxes.validation.as_deref(),
            stop,
        };
        if !args.json {
            eprintln!(
                "checking {} with `{}`",
                terminal_safe(&task.id),
                terminal_safe(&command)
            );
        }
        eval::suite_check::check_suite_task(&repo, task, &check).map_err(CommandError::internal)?;
        if stop.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(CommandError::interrupted(eval::EvalError::Interrupted {
                done,
                total,
            }));
        }
    }
    Ok(())
}

/// Prints one suite task: its id, base, how it is judged and its hidden tests, with its
/// validity when it was checked, then its objective's first line.
fn print_suite_task(t: &eval::suite::SuiteTask, checked: bool) {
    let subject = t.task.objective.lines().next().unwrap_or_default();
    let base = t.task.base.as_deref().unwrap_or_default();
    let judged = match &t.check {
        Some(check) if t.task.fail_to_pass.is_empty() => format!("check `{check}`"),
        _ => format!(
            "{} fail to pass, {} pass to pass",
            t.task.fail_to_pass.len(),
            t.task.pass_to_pass.len()
        ),
    };
    let status = match (checked, t.task.reason) {
        (false, _) => String::new(),
        (true, None) => "valid; ".to_string(),
        (true, Some(r)) => format!("invalid: {}; ", r.as_str()),
    };
    let line = format!(
        "{} {} {status}{judged}; hidden tests: {}",
        t.id,
        &base[..base.len().min(10)],
        t.task.tests.join(" ")
    );
    println!("{}", terminal_safe(&line));
    if let Some(detail) = &t.task.detail {
        println!("    {}", terminal_safe(detail));
    }
    println!("    {}", terminal_safe(subject));
}

/// Returns the test command: `--test`, else `[eval] test`, else the one detection finds.
pub(super) fn test_command(
    repo: &RepoInfo,
    flag: Option<&str>,
    configured: Option<&str>,
) -> Result<String, CommandError> {
    if let Some(c) = flag.or(configured).filter(|c| !c.trim().is_empty()) {
        return Ok(c.to_string());
    }
    let files = repo.git().tracked_files().map_err(CommandError::internal)?;
    let facts = git_orchestra::project::detect::detect(&repo.toplevel, &files);
    facts
        .commands
        .into_iter()
        .find(|c| c.purpose == Purpose::Test)
        .map(|c| c.command)
        .ok_or_else(|| {
            CommandError::user(
                "no test command: this repository declares none that `init` can find",
            )
            .hint("give one with `--test <COMMAND>` or set `[eval] test` in .orchestra/config.toml")
        })
}

/// Prints one line per task, then how many are valid and how many invalid for each reason.
fn print_list(tasks: &[Task]) {
    for t in tasks {
        let subject = t.objective.lines().next().unwrap_or_default();
        let status = match t.reason {
            None => "valid".to_string(),
            Some(r) => format!("invalid: {}", r.as_str()),
        };
        let line = format!(
            "{} {status:<28} {subject}",
            &t.commit[..t.commit.len().min(10)]
        );
        println!("{}", terminal_safe(&line));
        if let Some(detail) = &t.detail {
            println!("    {}", terminal_safe(detail));
        }
        if !t.fail_to_pass.is_empty() {
            let line = format!(
                "    fail to pass: {}; pass to pass: {}",
                t.fail_to_pass.join(" "),
                t.pass_to_pass.len()
            );
            println!("{}", terminal_safe(&line));
        }
    }
    let (valid, reasons) = eval::counts(tasks);
    let mut summary = format!("{} candidates: {valid} valid", tasks.len());
    for (reason, n) in reasons {
        summary.push_str(&format!(", {n} {}", reason.as_str()));
    }
    println!("{summary}");
    let per_test = tasks.iter().filter(|t| t.per_test).count();
    if per_test == 0 {
        println!("(validity is judged by the test command's exit status, not per test)");
    } else {
        println!(
            "({per_test} judged test by test; any other checked by the test command's exit status)"
        );
    }
}

/// Prints the tasks and the counts as one JSON object.
fn print_json(tasks: &[Task]) -> Result<(), CommandError> {
    let (valid, reasons) = eval::counts(tasks);
    let mut counts = serde_json::Map::new();
    counts.insert("valid".into(), valid.into());
    for (reason, n) in reasons {
        let key = serde_json::to_value(reason).map_err(CommandError::internal)?;
        if let Some(k) = key.as_str() {
            counts.insert(k.to_string(), n.into());
        }
    }
    let out = serde_json::json!({ "tasks": tasks, "counts": counts });
    let text = serde_json::to_string_pretty(&out).map_err(CommandError::internal)?;
    println!("{text}");
    Ok(())
}

//! `git orchestra eval`: measures what orchestration is worth on the repository's own history;
//! `eval tasks` lists the tasks its history holds and which of them are valid; `eval run`
//! (`eval_run.rs`) compares arms on them.

use std::path::Path;

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

/// Lists the tasks a range of history holds and which of them are valid.
///
/// Every first-parent commit that changes source and test files is a candidate (base: its parent; objective: its message; hidden tests: its
/// changes to test files), valid when the test command fails at the base with the hidden tests
/// added and passes at the commit. Validity is judged by the test command's exit status, not
/// per test. Each check runs sandboxed in a scratch worktree that is removed afterwards.
#[derive(Debug, Args)]
pub struct TasksArgs {
    /// The revision range to mine, e.g. `HEAD~50..HEAD` or `v1.0..main`.
    #[arg(long = "from-history", value_name = "REV-RANGE")]
    from_history: String,
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

/// Runs an `eval` subcommand.
pub fn cmd_eval(cwd: &Path, args: &EvalArgs) -> Result<(), CommandError> {
    match &args.command {
        EvalCommand::Tasks(a) => cmd_tasks(cwd, a),
        EvalCommand::Run(a) => super::eval_run::cmd_run(cwd, a),
        EvalCommand::Resume(a) => super::eval_run::cmd_resume(cwd, a),
        EvalCommand::Report(a) => super::eval_run::cmd_report(cwd, a),
    }
}

/// Mines, checks and lists the tasks of a range of history.
fn cmd_tasks(cwd: &Path, args: &TasksArgs) -> Result<(), CommandError> {
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
            terminal_safe(&args.from_history),
            terminal_safe(&command)
        );
    }
    let tasks = eval::from_history(&repo, &args.from_history, &check).map_err(|e| match e {
        eval::EvalError::Range { .. } | eval::EvalError::EmptyRange { .. } => CommandError::user(e),
        eval::EvalError::Interrupted { .. } => CommandError::interrupted(e),
        other => CommandError::internal(other),
    })?;
    if args.json {
        print_json(&tasks)
    } else {
        print_list(&tasks);
        Ok(())
    }
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
    }
    let (valid, reasons) = eval::counts(tasks);
    let mut summary = format!("{} candidates: {valid} valid", tasks.len());
    for (reason, n) in reasons {
        summary.push_str(&format!(", {n} {}", reason.as_str()));
    }
    println!("{summary}");
    println!("(validity is judged by the test command's exit status, not per test)");
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

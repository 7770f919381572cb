//! `git orchestra eval run`: works each arm on each valid task of a range of history, every
//! attempt in its own clean repository, and prints how many each arm resolved.

use std::path::Path;

use clap::Args;
use git_orchestra::eval::{self, Check};
use git_orchestra::eval_run::{self, ArmSummary, AttemptResult, EvalRun};
use git_orchestra::git::RepoInfo;
use git_orchestra::redact::terminal_safe;

use super::CommandError;

/// Compares arms on the valid tasks of a range of history.
///
/// Every arm works every valid task once, each attempt in a new repository that holds the
/// task's base and its history only (no later commit, no other attempt's branch, no hidden
/// test), through the one-packet flow of `run --merge`. The task's hidden tests, taken from
/// the task's commit, are then written over what landed and the test command runs there: the
/// attempt is resolved if and only if it passes.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The revision range whose valid tasks are attempted, e.g. `HEAD~50..HEAD`.
    #[arg(long = "from-history", value_name = "REV-RANGE")]
    from_history: String,
    /// An arm, as `<name>=<spec>`; repeat for each arm. The spec `cmd:<shell>` runs an
    /// external worker command under the worker contract in the attempt's packet worktree.
    #[arg(long = "arm", value_name = "NAME=SPEC", required = true)]
    arms: Vec<String>,
    /// The test command that judges tasks and attempts (as for `eval tasks`).
    #[arg(long = "test", value_name = "COMMAND")]
    test: Option<String>,
    /// Longest one run of the test command, and of an arm's worker, may take, in seconds
    /// (default: `[run] timeout_secs`).
    #[arg(long, value_name = "SECS")]
    timeout: Option<u64>,
    /// Print `{"arms": [...], "attempts": [...]}` as JSON instead of tables.
    #[arg(long)]
    json: bool,
}

/// Mines the range's tasks, works every arm on each valid one and prints the results.
pub fn cmd_run(cwd: &Path, args: &RunArgs) -> Result<(), CommandError> {
    let arms = eval_run::parse_all(&args.arms)
        .map_err(|e| CommandError::user(e).hint("each `--arm` is `<name>=cmd:<shell command>`"))?;
    let repo = RepoInfo::discover(cwd)?;
    let config = super::load_config(&repo)?;
    let command =
        super::eval::test_command(&repo, args.test.as_deref(), config.eval.test.as_deref())?;
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
    let specs: Vec<&str> = args.arms.iter().map(String::as_str).collect();
    let tip = repo
        .git()
        .resolve_commit("HEAD")
        .ok()
        .flatten()
        .unwrap_or_default();
    let id = git_orchestra::names::run_id(
        &format!("eval {}", args.from_history),
        &format!("{tip}\0{}\0{command}", specs.join("\0")),
    );
    let run = EvalRun {
        id,
        source: &repo,
        config: &config,
        tasks: &tasks,
        arms: &arms,
        check: &check,
    };
    let quiet = args.json;
    let results = run
        .run(&mut |r| {
            if !quiet {
                eprintln!("{}", terminal_safe(&attempt_line(r)));
            }
        })
        .map_err(|e| match e {
            eval_run::EvalRunError::NoTasks(_) => CommandError::user(e),
            eval_run::EvalRunError::Interrupted { .. } => CommandError::interrupted(e),
            other => CommandError::internal(other),
        })?;
    let summaries = eval_run::summarize(&arms, &results);
    if args.json {
        let out = serde_json::json!({ "eval": run.id, "arms": summaries, "attempts": results });
        let text = serde_json::to_string_pretty(&out).map_err(CommandError::internal)?;
        println!("{text}");
    } else {
        print!("{}", terminal_safe(&table(&summaries)));
    }
    Ok(())
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

/// Returns the table of arms: attempts, resolved, rate, tokens, cost, median wall time and the
/// failure classes.
fn table(arms: &[ArmSummary]) -> String {
    let mut out = format!(
        "{:<16} {:>8} {:>8} {:>6} {:>12} {:>10} {:>10}  failures\n",
        "arm", "attempts", "resolved", "rate", "tokens in/out", "cost", "median s"
    );
    for a in arms {
        let cost = a.cost.map_or("-".to_string(), |c| format!("${c:.2}"));
        let failures: Vec<String> = a
            .failures
            .iter()
            .map(|(f, n)| format!("{n} {}", f.as_str()))
            .collect();
        out.push_str(&format!(
            "{:<16} {:>8} {:>8} {:>5.0}% {:>12} {:>10} {:>10.1}  {}\n",
            a.name,
            a.attempts,
            a.resolved,
            a.resolved_rate * 100.0,
            format!("{}/{}", a.tokens_in, a.tokens_out),
            cost,
            a.median_wall_ms as f64 / 1000.0,
            if failures.is_empty() {
                "-".to_string()
            } else {
                failures.join(", ")
            }
        ));
    }
    out
}

//! `git orchestra eval report`: an eval's table with each arm's statistics (or JSON), its
//! progress while it runs, and its report files (`report.md`, `report.json`, `report.html`);
//! `--list` lists the evals of the journal and those kept in git.

use std::path::{Path, PathBuf};

use clap::Args;
use git_orchestra::eval_run::kept;
use git_orchestra::eval_run::lookup::{self, LookupError, Prefer};
use git_orchestra::eval_run::report::{ArmReport, EvalReport};
use git_orchestra::eval_run::{html, markdown};
use git_orchestra::git::RepoInfo;
use git_orchestra::redact::terminal_safe;

use super::CommandError;

/// Prints an eval's results: a table per arm with its statistics, or JSON; writes the report
/// files.
///
/// Per arm: attempts, resolved, the resolved rate with its 95% Wilson interval, pass@k and
/// pass^k (k = `--repeat`), tokens, cost per resolved task, median and p90 wall time, and the
/// failure classes. While the eval runs it shows how many attempts ended. `report.md`,
/// `report.json` and a self-contained `report.html` (charts inline, nothing loaded from the
/// net) are written to `--out`, by default `.git/orchestra/evals/<eval>/report/`. A finished
/// eval's results are kept in git under `refs/orchestra/eval/<eval>`; an eval found only there
/// (fetched from another clone) is reported too.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The eval to report (default: the newest).
    eval: Option<String>,
    /// Print the report as JSON: `{"eval", "finished", "done", "total", "arms": [...],
    /// "tasks": [...], "attempts": [...]}`.
    #[arg(long)]
    json: bool,
    /// The directory the report files are written to (default:
    /// `.git/orchestra/evals/<eval>/report/`).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// List the evals (journaled here or kept under `refs/orchestra/eval/`) instead.
    #[arg(long, conflicts_with_all = ["eval", "out"])]
    list: bool,
}

/// Prints an eval's report (or the list of evals) and writes its report files.
pub fn cmd_report(cwd: &Path, args: &ReportArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    if args.list {
        return list(&repo, args.json);
    }
    let report =
        lookup::report(&repo, args.eval.as_deref(), Prefer::Journal).map_err(lookup_error)?;
    if report.finished && kept::read(&repo.git(), &report.eval).is_err() {
        keep(&repo, &report);
    }
    let dir = match &args.out {
        Some(out) => cwd.join(out),
        None => git_orchestra::eval_run::report::default_dir(&repo.common_dir, &report.eval),
    };
    let written = write_files(&dir, &report)?;
    if args.json {
        print_json(&report)?;
    } else {
        println!("{}", terminal_safe(&header(&report)));
        print!("{}", terminal_safe(&table(&report.arms, report.repeat)));
    }
    eprintln!(
        "report written to {}",
        terminal_safe(&written.display().to_string())
    );
    Ok(())
}

/// Prints the report of the eval `id` after a run ended, kept in git when finished: the table
/// or JSON.
pub fn finish(repo: &RepoInfo, id: &str, json: bool) -> Result<(), CommandError> {
    let report = lookup::report(repo, Some(id), Prefer::Journal).map_err(lookup_error)?;
    if report.finished {
        keep(repo, &report);
    }
    if json {
        print_json(&report)
    } else {
        print!("{}", terminal_safe(&table(&report.arms, report.repeat)));
        Ok(())
    }
}

/// Keeps `report` under its ref; a failure is a warning, as the journal still holds it.
fn keep(repo: &RepoInfo, report: &EvalReport) {
    if let Err(e) = kept::keep(&repo.git(), report) {
        eprintln!(
            "warning: {}; `git orchestra eval report {}` tries again",
            terminal_safe(&e.to_string()),
            report.eval
        );
    }
}

/// Returns the command error for an eval that was not found.
pub(super) fn lookup_error(e: LookupError) -> CommandError {
    match e {
        LookupError::Unknown { .. } | LookupError::None => CommandError::user(e),
        other => CommandError::internal(other),
    }
}

/// The name of the report's JSON file.
const JSON_FILE: &str = "report.json";

/// Writes `report.md`, `report.json` and `report.html` into `dir`; returns the HTML's path.
fn write_files(dir: &Path, report: &EvalReport) -> Result<PathBuf, CommandError> {
    fs_err::create_dir_all(dir).map_err(CommandError::internal)?;
    let json = serde_json::to_string_pretty(report).map_err(CommandError::internal)?;
    fs_err::write(dir.join(JSON_FILE), format!("{json}\n")).map_err(CommandError::internal)?;
    fs_err::write(dir.join(markdown::FILE), markdown::render(report))
        .map_err(CommandError::internal)?;
    let page = dir.join(html::FILE);
    fs_err::write(&page, html::render(report)).map_err(CommandError::internal)?;
    Ok(page)
}

/// Prints `report` as JSON.
fn print_json(report: &EvalReport) -> Result<(), CommandError> {
    let text = serde_json::to_string_pretty(report).map_err(CommandError::internal)?;
    println!("{text}");
    Ok(())
}

/// Returns the line above the table: the eval, its tasks and test, and its progress.
fn header(report: &EvalReport) -> String {
    let how = if report.finished {
        "finished".to_string()
    } else {
        format!(
            "unfinished: {} of {} attempts ended {}; `git orchestra eval resume {}` continues it if it stopped",
            report.done,
            report.total,
            progress_bar(report.done, report.total),
            report.eval
        )
    };
    format!(
        "eval {} on {} with `{}`: {how}",
        report.eval, report.range, report.test
    )
}

/// Returns a bar of 20 cells, `done` of `total` of them filled.
pub(super) fn progress_bar(done: usize, total: usize) -> String {
    let filled = (done * 20).checked_div(total).unwrap_or(20).min(20);
    format!("[{}{}]", "#".repeat(filled), "-".repeat(20 - filled))
}

/// Returns the table of arms: attempts, resolved, rate and interval, pass@k and pass^k,
/// tokens, cost per resolved, median and p90 wall time, median model time, and the failure
/// classes.
pub(super) fn table(arms: &[ArmReport], k: u32) -> String {
    let mut out = format!(
        "{:<14} {:>8} {:>8} {:>6} {:>15} {:>7} {:>7} {:>13} {:>10} {:>9} {:>9} {:>9}  failures\n",
        "arm",
        "attempts",
        "resolved",
        "rate",
        "95% interval",
        format!("pass@{k}"),
        format!("pass^{k}"),
        "tokens in/out",
        "$/resolved",
        "p50 s",
        "p90 s",
        "model s"
    );
    let fraction = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.3}"));
    let secs = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.1}"));
    for a in arms {
        let failures: Vec<String> = a
            .failures
            .iter()
            .map(|(f, n)| format!("{n} {}", f.as_str()))
            .collect();
        out.push_str(&format!(
            "{:<14} {:>8} {:>8} {:>6.3} {:>15} {:>7} {:>7} {:>13} {:>10} {:>9} {:>9} {:>9}  {}\n",
            a.name,
            a.attempts,
            a.resolved,
            a.rate,
            format!("[{:.3}, {:.3}]", a.interval[0], a.interval[1]),
            fraction(a.pass_at_k),
            fraction(a.pass_hat_k),
            format!("{}/{}", a.tokens_in, a.tokens_out),
            a.cost_per_resolved
                .map_or("-".to_string(), |c| format!("${c:.2}")),
            secs(a.wall_p50),
            secs(a.wall_p90),
            secs(a.model_p50),
            if failures.is_empty() {
                "-".to_string()
            } else {
                failures.join(", ")
            }
        ));
    }
    out
}

/// Lists the evals: those journaled here and those kept in git, with their progress and each
/// arm's resolved count.
fn list(repo: &RepoInfo, json: bool) -> Result<(), CommandError> {
    let reports: Vec<(EvalReport, bool)> = lookup::all(repo)
        .map_err(lookup_error)?
        .into_iter()
        .map(|l| (l.report, l.kept))
        .collect();
    if json {
        let evals: Vec<serde_json::Value> = reports
            .iter()
            .map(|(r, is_kept)| {
                serde_json::json!({
                    "eval": r.eval, "range": r.range, "finished": r.finished, "done": r.done,
                    "total": r.total, "kept": is_kept,
                    "arms": r.arms.iter().map(|a| serde_json::json!({
                        "name": a.name, "attempts": a.attempts, "resolved": a.resolved, "rate": a.rate,
                        "interval": a.interval,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        let text = serde_json::to_string_pretty(&serde_json::json!({ "evals": evals }))
            .map_err(CommandError::internal)?;
        println!("{text}");
        return Ok(());
    }
    if reports.is_empty() {
        println!("no eval in this repository; start one with `git orchestra eval run`");
    }
    for (r, is_kept) in &reports {
        let arms: Vec<String> = r
            .arms
            .iter()
            .map(|a| format!("{} {}/{}", a.name, a.resolved, a.attempts))
            .collect();
        let line = format!(
            "{} {} {}/{} attempts{}{}: {}",
            r.eval,
            r.range,
            r.done,
            r.total,
            if r.finished { "" } else { " (unfinished)" },
            if *is_kept { ", kept in git" } else { "" },
            arms.join(", ")
        );
        println!("{}", terminal_safe(&line));
    }
    Ok(())
}

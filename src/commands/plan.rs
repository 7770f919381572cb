//! `git orchestra plan …`: commands that work on plan files.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use git_orchestra::git::{RepoError, RepoInfo};
use git_orchestra::orchestrator;
use git_orchestra::plan::{self, Plan, PlanError, PlanIssue, Schedule};
use serde::Serialize;

use super::CommandError;

/// Works with plan files: the objective split into packets that `start` executes.
#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(subcommand)]
    command: PlanCommand,
}

#[derive(Debug, Subcommand)]
enum PlanCommand {
    /// Checks a plan file against the repository and shows how its packets will be scheduled.
    ///
    /// Reports every problem at once (with file:line:column) and exits 2 if there are any;
    /// never changes the repository.
    Check(CheckArgs),
}

#[derive(Debug, Args)]
struct CheckArgs {
    /// The plan file (TOML), relative to the current directory.
    plan: PathBuf,
    /// Print the summary as JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Where the packets would run (default: `[executor] kind`, else local).
    #[arg(long, value_enum, value_name = "KIND")]
    executor: Option<super::executor::ExecutorArg>,
}

/// Runs a `plan` subcommand in `cwd`.
pub fn cmd_plan(cwd: &Path, args: &PlanArgs) -> Result<(), CommandError> {
    match &args.command {
        PlanCommand::Check(check) => cmd_check(cwd, check),
    }
}

/// The summary `plan check` prints, in text or as JSON.
#[derive(Debug, Serialize)]
struct CheckReport<'a> {
    plan: String,
    valid: bool,
    objective: &'a str,
    packets: usize,
    base: Base,
    max_parallel: Option<usize>,
    waves: &'a [Vec<String>],
    serialized: Vec<Serialized<'a>>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    parallel: &'a [String],
    runs_on: RunsOn,
    /// Tokens, cost and time the plan's packets are expected to take, from the run store.
    #[serde(skip_serializing_if = "Option::is_none")]
    forecast: Option<git_orchestra::forecast::PlanForecast>,
}

/// Where the packets run: `local`, or an executor and the hosts it picks from.
#[derive(Debug, Serialize)]
struct RunsOn {
    executor: &'static str,
    hosts: Vec<String>,
}

/// What `plan check --json` prints when the plan has problems.
#[derive(Debug, Serialize)]
struct FailedReport<'a> {
    plan: &'a str,
    valid: bool,
    issues: &'a [PlanIssue],
}

#[derive(Debug, Serialize)]
struct Base {
    /// The name the plan gave, or the current branch when it gave none.
    name: String,
    commit: String,
}

#[derive(Debug, Serialize)]
struct Serialized<'a> {
    first: &'a str,
    second: &'a str,
    reason: &'a str,
}

fn cmd_check(cwd: &Path, args: &CheckArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    let shown = args.plan.display().to_string();
    let text = fs_err::read_to_string(cwd.join(&args.plan)).map_err(|e| {
        CommandError::user(format!("cannot read plan: {e}"))
            .hint("give the path of a plan file, relative to the current directory")
    })?;
    let (plan, mut issues) = match Plan::from_toml_str(&text, &shown) {
        Ok(plan) => {
            let issues = plan::validate(&plan, &repo.toplevel)
                .err()
                .unwrap_or_default();
            (Some(plan), issues)
        }
        Err(PlanError::Syntax {
            location, message, ..
        }) => {
            let issue = PlanIssue {
                location,
                message,
                hint: String::new(),
            };
            (None, vec![issue])
        }
        Err(e) => return Err(CommandError::user(e)),
    };
    let commit = match &plan {
        Some(plan) => base_or_issue(&repo, plan, &mut issues)?,
        None => None,
    };
    plan::sort_by_location(&mut issues);
    let (Some(plan), Some(commit), true) = (plan, commit, issues.is_empty()) else {
        return Err(report_issues(&shown, &issues, args.json));
    };
    // Symbols were checked by `validate`; those that resolve make shared files parallel.
    let (spans, _) = plan::resolve_symbols(&plan, &repo.toplevel, &commit);
    let schedule = plan::schedule_with(&plan, &spans);
    let config = super::load_config(&repo)?;
    let kind = match args.executor {
        Some(e) => e.kind(),
        None => super::executor::kind_of(&repo, &config, None),
    };
    let runs_on = RunsOn {
        executor: kind.as_str(),
        hosts: super::executor::build(&repo, &config, kind)?
            .map(|e| e.places())
            .unwrap_or_default(),
    };
    // Our agents work the packets unless the run names a worker command: forecast for them.
    let roles = git_orchestra::agent::Roles::load_with_trust(&repo.toplevel, config.trusted).ok();
    let model_of = |role: &str| {
        let roles = roles.as_ref()?;
        orchestrator::models::model_label(&config, roles, role)
    };
    // A run of this plan caps work at once as `[run] max_parallel` says, else as the plan does.
    let parallel = config.max_parallel(None);
    let forecast =
        orchestrator::plan_forecast(&repo.common_dir, &plan, &config, &model_of, parallel);
    let report = CheckReport {
        forecast,
        runs_on,
        plan: shown,
        valid: true,
        objective: &plan.objective,
        packets: plan.packets.len(),
        base: Base {
            name: plan
                .base
                .clone()
                .or_else(|| repo.branch.clone())
                .unwrap_or_else(|| "HEAD".to_string()),
            commit,
        },
        max_parallel: plan.max_parallel,
        waves: &schedule.waves,
        serialized: serialized(&schedule),
        parallel: &schedule.parallel,
    };
    if args.json {
        print_json(&report)?;
    } else {
        print_text(&report);
    }
    Ok(())
}

/// Returns the commit the plan's base names; an unknown base (or a detached HEAD without one)
/// becomes a plan issue pointing at the `base` key, other repository failures an error.
fn base_or_issue(
    repo: &RepoInfo,
    plan: &Plan,
    issues: &mut Vec<PlanIssue>,
) -> Result<Option<String>, CommandError> {
    match repo.resolve_base(plan.base.as_deref()) {
        Ok(commit) => Ok(Some(commit)),
        Err(e @ (RepoError::UnknownBase { .. } | RepoError::DetachedHead)) => {
            let text = e.to_string();
            let (message, hint) = text.split_once("; ").unwrap_or((&text, ""));
            issues.push(PlanIssue {
                location: plan.base_location(),
                message: message.to_string(),
                hint: hint.to_string(),
            });
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// Prints every issue (text on stderr, or JSON on stdout) and returns the exit-2 error.
fn report_issues(shown: &str, issues: &[PlanIssue], json: bool) -> CommandError {
    if json {
        let failed = FailedReport {
            plan: shown,
            valid: false,
            issues,
        };
        if let Err(e) = print_json(&failed) {
            return e;
        }
    } else {
        for issue in issues {
            let issue = issue.to_string();
            eprintln!("error: {}", git_orchestra::redact::terminal_safe(&issue));
        }
    }
    let n = issues.len();
    CommandError::user(format!(
        "{shown}: {n} problem{} found; nothing was changed",
        if n == 1 { "" } else { "s" }
    ))
}

fn print_json(value: &impl Serialize) -> Result<(), CommandError> {
    let json = serde_json::to_string_pretty(value)
        .map_err(|e| CommandError::internal(format!("cannot render JSON: {e}")))?;
    println!("{json}");
    Ok(())
}

fn serialized(schedule: &Schedule) -> Vec<Serialized<'_>> {
    schedule
        .serialized
        .iter()
        .map(|(first, second, reason)| Serialized {
            first,
            second,
            reason,
        })
        .collect()
}

/// Prints the check's report; the plan's names, objective and reasons come from a plan file
/// (perhaps a model's), so control characters in them are escaped.
fn print_text(r: &CheckReport) {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(out, "plan {} is valid", r.plan);
    let _ = writeln!(out, "objective: {}", r.objective);
    let _ = writeln!(out, "packets: {}", r.packets);
    let _ = writeln!(out, "base: {} ({})", r.base.name, r.base.commit);
    if let Some(n) = r.max_parallel {
        let _ = writeln!(out, "max parallel: {n}");
    }
    let _ = writeln!(out, "waves:");
    for (i, wave) in r.waves.iter().enumerate() {
        let _ = writeln!(out, "  {}: {}", i + 1, wave.join(", "));
    }
    if r.serialized.is_empty() {
        let _ = writeln!(out, "serialized: none");
    } else {
        let _ = writeln!(out, "serialized:");
        for s in &r.serialized {
            let _ = writeln!(out, "  {} before {}: {}", s.first, s.second, s.reason);
        }
    }
    for note in r.parallel {
        let _ = writeln!(out, "parallel: {note}");
    }
    if r.runs_on.hosts.is_empty() {
        let _ = writeln!(
            out,
            "runs on: this machine (worktrees beside the repository)"
        );
    } else {
        let how = if r.runs_on.executor == "github-actions" {
            "each packet as a run of"
        } else {
            "each packet on the first free host of"
        };
        let _ = writeln!(
            out,
            "runs on: {} — {how} {}",
            r.runs_on.executor,
            r.runs_on.hosts.join(", ")
        );
    }
    if let Some(f) = &r.forecast {
        let _ = writeln!(out, "forecast: {}", f.text());
        for p in &f.packets {
            let _ = writeln!(out, "  {}: {}", p.packet, p.text());
        }
    }
    print!("{}", git_orchestra::redact::terminal_safe(&out));
}

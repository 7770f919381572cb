//! `git orchestra merge [<run>]`: integrates a run's succeeded packets; `--predict A B` says
//! whether two branches would conflict.

use std::path::Path;

use clap::Args;
use git_orchestra::git::RepoInfo;
use git_orchestra::merge::{self, MergeError, MergeOptions, MergeReport, MergeTree};

use super::CommandError;
use super::progress::{self, short};

/// Integrates a run's succeeded packets into orchestra/<run>/integration in dependency order,
/// then fast-forwards the target branch.
///
/// Each batch of packets is merged in memory (git merge-tree), checked out in a scratch
/// worktree and validated with the validation commands of every packet merged so far; only
/// then does the integration branch move (compare-and-swap). Batches grow while they pass and
/// halve when they fail, so a failing packet is isolated without keeping others out.
/// Conflicting or failing packets are sent back (see `git orchestra status`).
///
/// Exit status: 0 when every packet was integrated and the target advanced, 1 otherwise,
/// 2 on bad input. With --predict: 0 clean, 1 conflicts.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The run to integrate (default: the newest run; see `git orchestra status`).
    run: Option<String>,
    /// The branch to advance (default: the plan's base when it is a branch, else the current
    /// branch).
    #[arg(long, value_name = "BRANCH")]
    target: Option<String>,
    /// Only say whether merging these two commits would conflict, and where.
    #[arg(long, num_args = 2, value_names = ["A", "B"], conflicts_with_all = ["run", "target"])]
    predict: Option<Vec<String>>,
    /// Largest batch of packets validated together (default 8).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    max_batch: Option<u16>,
    /// Longest a validation command may run, in seconds (default 3600).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    timeout: Option<u64>,
    /// How many times a conflicting packet, or one whose merge broke a validation command,
    /// goes back to its worker (the run's --worker-cmd, else our agents) to fix it in its
    /// worktree before it stays sent back (default 2; 0 sends it back at once).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=10))]
    resolve_rounds: Option<u32>,
    /// Print the merge report as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs the merge or the prediction.
pub fn cmd_merge(cwd: &Path, args: &MergeArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    if let Some(pair) = &args.predict {
        return predict(&repo, &pair[0], &pair[1], args.json);
    }
    let run = super::pick_run_with_packets(&repo, args.run.as_deref())?;
    let config = super::load_config(&repo)?;
    let opts = MergeOptions {
        target: args.target.clone(),
        timeout: config.timeout(args.timeout),
        max_batch: args
            .max_batch
            .map(usize::from)
            .unwrap_or(merge::DEFAULT_MAX_BATCH),
        resolve_rounds: args.resolve_rounds.unwrap_or(merge::DEFAULT_RESOLVE_ROUNDS),
        ..MergeOptions::from_config(
            &config,
            git_orchestra::agent::sandbox::command_sandboxes(&repo.common_dir, &config.sandbox),
        )
    };
    run_merge(&repo, &run, &opts, args.json)
}

/// Integrates `run` with progress on stderr and the report on stdout.
pub fn run_merge(
    repo: &RepoInfo,
    run: &str,
    opts: &MergeOptions,
    json: bool,
) -> Result<(), CommandError> {
    let printer = progress::printer(json);
    // Runs without a worker command resolve conflicts with our agents, when they are set up.
    let needs_agent = opts.resolve_rounds > 0
        && super::open_run(repo, Some(run))
            .ok()
            .and_then(|r| r.record().ok().flatten())
            .is_some_and(|r| r.worker_cmd.is_none());
    let agent = if needs_agent {
        super::load_config(repo)
            .and_then(|config| super::agent_worker(repo, &config))
            .ok()
    } else {
        None
    };
    let agent_ref = agent
        .as_ref()
        .map(|w| w as &dyn git_orchestra::engine::Worker);
    let report =
        merge::integrate_with(repo, run, opts, agent_ref, &printer).map_err(merge_error)?;
    show_report(&report, json)
}

/// Prints the merge report on stdout (JSON or text) and maps it to the command's outcome:
/// success only when every packet went in and the target advanced.
pub fn show_report(report: &MergeReport, json: bool) -> Result<(), CommandError> {
    let run = &report.run;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(report).map_err(CommandError::internal)?
        );
    } else {
        print!("{}", git_orchestra::redact::terminal_safe(&render(report)));
    }
    if report.sent_back.is_empty() && report.target_advanced {
        Ok(())
    } else {
        Err(CommandError::failed(format!(
            "merge of run {run} incomplete: {} packet{} sent back{}",
            report.sent_back.len(),
            if report.sent_back.len() == 1 { "" } else { "s" },
            if report.target_advanced {
                String::new()
            } else {
                format!("; {} not advanced", report.target)
            }
        )))
    }
}

/// Returns the merge report as text.
pub fn render(r: &MergeReport) -> String {
    let mut out = format!(
        "merge of run {}: {} at {}\n",
        r.run,
        r.integration,
        short(&r.commit)
    );
    if r.integrated.is_empty() && r.already_integrated.is_empty() && r.sent_back.is_empty() {
        out.push_str("  nothing to merge: no packet succeeded\n");
    }
    if !r.integrated.is_empty() {
        out.push_str(&format!("  integrated: {}\n", r.integrated.join(", ")));
    }
    if !r.already_integrated.is_empty() {
        out.push_str(&format!(
            "  already integrated: {}\n",
            r.already_integrated.join(", ")
        ));
    }
    for s in &r.sent_back {
        out.push_str(&format!("  sent back: {}: {}\n", s.packet, s.reason));
    }
    let failed = r.batches.iter().filter(|b| !b.passed).count();
    out.push_str(&format!(
        "  {} validated batch{} ({failed} failed)\n",
        r.batches.len(),
        if r.batches.len() == 1 { "" } else { "es" }
    ));
    match (&r.target_advanced, &r.target_note) {
        (true, _) if r.target_moved => out.push_str(&format!(
            "  {} advanced to {}\n",
            r.target,
            short(&r.commit)
        )),
        (true, _) => out.push_str(&format!(
            "  {} unchanged at {}\n",
            r.target,
            short(&r.commit)
        )),
        (false, Some(note)) => out.push_str(&format!("  {} not advanced: {note}\n", r.target)),
        (false, None) => {}
    }
    out
}

fn predict(repo: &RepoInfo, a: &str, b: &str, json: bool) -> Result<(), CommandError> {
    let result = merge::predict(&repo.git(), a, b).map_err(merge_error)?;
    let paths = match &result {
        MergeTree::Clean { .. } => Vec::new(),
        MergeTree::Conflicts { paths } => paths.clone(),
    };
    if json {
        let value =
            serde_json::json!({ "a": a, "b": b, "conflicts": !paths.is_empty(), "paths": paths });
        println!("{value}");
    } else if paths.is_empty() {
        println!("{a} and {b} merge cleanly");
    } else {
        println!("{a} and {b} conflict in:");
        for p in &paths {
            println!("  {}", git_orchestra::redact::quote_path(p));
        }
    }
    if paths.is_empty() {
        Ok(())
    } else {
        Err(CommandError::failed(format!(
            "merging {a} and {b} would conflict in {} path{}",
            paths.len(),
            if paths.len() == 1 { "" } else { "s" }
        )))
    }
}

/// Maps a merge coordinator's error to the command error of its kind.
pub(crate) fn merge_error(e: MergeError) -> CommandError {
    use git_orchestra::store::StoreError;
    match e {
        MergeError::UnknownRevision { .. }
        | MergeError::NoTarget
        | MergeError::BadTarget { .. }
        | MergeError::IntegrationNameTaken { .. }
        | MergeError::Lock(_)
        | MergeError::Store(StoreError::UnknownRun { .. }) => CommandError::user(e),
        MergeError::TargetConflicts { .. } | MergeError::Contended { .. } => {
            CommandError::failed(e)
        }
        other => CommandError::internal(other),
    }
}

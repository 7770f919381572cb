//! `git orchestra pr [<run>]` (and `run --pr`): one pull request per succeeded packet, stacked
//! where packets depend on each other, or the same pull requests as local Markdown files.

use std::path::Path;

use clap::{Args, ValueEnum};
use git_orchestra::forge::{self, ForgeSettings, PrAction, PrReport, PublishOptions};
use git_orchestra::git::RepoInfo;

use super::CommandError;

/// Where pull requests go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PrMode {
    /// To the remote's forge when it is known and a token is available, else local files.
    Auto,
    /// Only Markdown files in the run's state directory; nothing is pushed.
    Local,
}

/// Opens or updates one pull request per succeeded packet of a run.
///
/// Each packet's branch is pushed with `git push` (credential helpers, SSH and hooks apply),
/// then its pull request is found by head branch and updated, or opened: title from the
/// packet, body from its description, acceptance criteria, validation and review verdict;
/// draft until the review approves. A packet that depends on another targets that packet's
/// branch (a stack); once the lower pull request is merged, running this again retargets the
/// upper one to the target branch and then deletes the merged branch from the remote.
///
/// The forge is github.com or gitlab.com from the remote URL, or set with
/// orchestra.forge.type (github, gitea, forgejo, gitlab), orchestra.forge.apiUrl and
/// orchestra.forge.repo. The token comes from GH_TOKEN, GITHUB_TOKEN or `gh auth token`
/// (GITEA_TOKEN or FORGEJO_TOKEN for Gitea and Forgejo, GITLAB_TOKEN for GitLab); it is never
/// printed or stored. Without a forge or
/// token the bodies are written as Markdown files and the branches are left ready to push.
/// Labels and reviewers for new pull requests: orchestra.pr.labels, orchestra.pr.reviewers.
#[derive(Debug, Args)]
pub struct PrArgs {
    /// The run (default: the newest run; see `git orchestra status`).
    run: Option<String>,
    /// Only write the Markdown files; push nothing and call no forge.
    #[arg(long)]
    local: bool,
    /// The remote to push to (default: orchestra.forge.remote, else origin).
    #[arg(long, value_name = "NAME")]
    remote: Option<String>,
    /// The branch stacks target (default: the plan's base when it is a branch, else the
    /// current branch).
    #[arg(long, value_name = "BRANCH")]
    target: Option<String>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs the publication.
pub fn cmd_pr(cwd: &Path, args: &PrArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    let mode = if args.local {
        PrMode::Local
    } else {
        PrMode::Auto
    };
    let run = super::pick_run_with_packets(&repo, args.run.as_deref())?;
    run_pr(
        &repo,
        &run,
        mode,
        args.remote.as_deref(),
        args.target.as_deref(),
        args.json,
    )
}

/// Publishes `run`'s packets in `mode`, with notes on stderr and the report on stdout.
pub fn run_pr(
    repo: &RepoInfo,
    run: &str,
    mode: PrMode,
    remote: Option<&str>,
    target: Option<&str>,
    json: bool,
) -> Result<(), CommandError> {
    let report = publish_report(repo, run, mode, remote, target, Default::default())?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(CommandError::internal)?
        );
    } else {
        print!("{}", render(&report));
    }
    Ok(())
}

/// Opens or updates the pull requests of `run`, appending `notes` (Markdown by packet id) to
/// the bodies, and returns what was done; prints nothing but a note when the forge cannot be
/// reached and local files are written instead.
pub fn publish_report(
    repo: &RepoInfo,
    run: &str,
    mode: PrMode,
    remote: Option<&str>,
    target: Option<&str>,
    notes: std::collections::BTreeMap<String, String>,
) -> Result<PrReport, CommandError> {
    let git = repo.git();
    let settings = ForgeSettings::load(&git, remote).map_err(CommandError::user)?;
    let forge = match mode {
        PrMode::Local => None,
        PrMode::Auto => match forge::open_forge(&settings) {
            Ok(f) => Some(f),
            Err(reason) => {
                eprintln!("note: {reason}; writing the pull requests as local files instead");
                None
            }
        },
    };
    let opts = PublishOptions {
        target: target.map(str::to_string),
        settings,
        checks: super::review::check_options(repo, &git, None),
        timeout: git_orchestra::exec::DEFAULT_TIMEOUT,
        notes,
    };
    super::open_run(repo, Some(run))?
        .publish(forge.as_deref(), &opts)
        .map_err(forge_error)
}

/// Returns the report as text.
pub fn render(r: &PrReport) -> String {
    let mut out = match &r.forge {
        Some(f) => format!(
            "pull requests of run {} on {f} (remote {}):\n",
            r.run, r.remote
        ),
        None => format!(
            "pull requests of run {} (local files in {}):\n",
            r.run,
            r.dir.display()
        ),
    };
    for e in &r.entries {
        let action = match e.action {
            PrAction::Created => "opened",
            PrAction::Updated => "updated",
            PrAction::Unchanged => "up to date",
            PrAction::Merged => "merged",
            PrAction::Closed => "closed (left alone)",
            PrAction::Written => "written",
        };
        let number = e.number.map(|n| format!(" #{n}")).unwrap_or_default();
        let draft = if e.draft { " draft" } else { "" };
        out.push_str(&format!(
            "  {}:{number} {action}{draft}: {} -> {}",
            e.packet, e.branch, e.base
        ));
        if let Some(from) = &e.retargeted_from {
            out.push_str(&format!(" (retargeted from {from})"));
        }
        match &e.url {
            Some(u) => out.push_str(&format!("  {u}\n")),
            None => out.push_str(&format!("  {}\n", e.file.display())),
        }
    }
    for s in &r.skipped {
        out.push_str(&format!("  {}: no pull request: {}\n", s.packet, s.reason));
    }
    for d in &r.deleted {
        out.push_str(&format!("  deleted merged branch {d} from the remote\n"));
    }
    if r.forge.is_none() && !r.entries.is_empty() {
        let branches: Vec<&str> = r.entries.iter().map(|e| e.branch.as_str()).collect();
        out.push_str(&format!(
            "  branches ready to push: git push {} {}\n",
            r.remote,
            branches.join(" ")
        ));
    }
    out
}

fn forge_error(e: forge::ForgeError) -> CommandError {
    use forge::ForgeError as E;
    use git_orchestra::store::StoreError;
    match e {
        E::Config(_) | E::NoTarget | E::Lock(_) | E::Auth { .. } => CommandError::user(e),
        E::Store(StoreError::UnknownRun { .. }) => CommandError::user(e),
        E::Push { .. } => CommandError::failed(e)
            .hint("the push was refused; a pre-push hook or the remote said why above"),
        E::RateLimited { .. } | E::Status { .. } | E::Connect { .. } => CommandError::failed(e),
        other => CommandError::internal(other),
    }
}

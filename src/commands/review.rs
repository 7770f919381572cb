//! `git orchestra review [<range>]`: the deterministic gate over a commit range, its verdict
//! stored as git notes; `--show` prints a stored verdict.

use std::path::Path;
use std::time::Duration;

use clap::Args;
use git_orchestra::gate::{
    self, CheckOptions, Decision, DeterministicReviewer, GateError, Reviewer, Verdict,
};
use git_orchestra::git::{Git, RepoInfo};

use super::CommandError;
use super::progress::short;

/// Reviews a commit range: declared scope, conflict markers, secrets, file sizes and
/// validation commands. The verdict is stored in git (refs/notes/orchestra/review) on the tip
/// commit and its tree, so an identical tree is not reviewed twice.
///
/// Exit status: 0 approved, 1 rejected, 2 bad input.
#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// The range: `<base>..<tip>`, `<base>...<tip>`, or a commit (reviewed against its upstream,
    /// else the merge-base with the default branch). Default: HEAD.
    range: Option<String>,
    /// Print the verdict stored for this commit (or tree) instead of reviewing.
    #[arg(long, value_name = "COMMIT", conflicts_with = "range")]
    show: Option<String>,
    /// A validation command to run (`sh -c`) in a scratch checkout of the tip; repeatable.
    /// A packet's own validation commands run anyway when the tip is a packet's commit.
    #[arg(long = "validate", value_name = "COMMAND")]
    validate: Vec<String>,
    /// Largest size of an added file in bytes (default: `orchestra.gate.maxFileSize`, else 1 MiB).
    #[arg(long, value_name = "BYTES")]
    max_file_size: Option<u64>,
    /// Longest a validation command may run, in seconds (default 3600).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    timeout: Option<u64>,
    /// Review again even if the tip's tree already has an approving verdict.
    #[arg(long)]
    again: bool,
    /// Skip the model reviewer even when `[roles.reviewer] profile` is configured.
    #[arg(long)]
    no_model: bool,
    /// Print the verdict as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs the review (or shows a stored verdict) and maps the verdict to the exit status.
pub fn cmd_review(cwd: &Path, args: &ReviewArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    let git = repo.git();
    if let Some(object) = &args.show {
        return show(&git, object, args.json);
    }
    let range = gate::resolve_range(&repo, args.range.as_deref()).map_err(gate_error)?;
    if !args.json {
        eprintln!(
            "reviewing {}..{} (base: {})",
            short(&range.base),
            short(&range.tip),
            range.base_source
        );
    }
    let tree = git.tree_of(&range.tip).map_err(CommandError::internal)?;
    // A tree's approval carries over to another commit only when that commit's own history
    // holds nothing the tip hides (a credential added and removed on the way).
    let reusable = |v: &gate::Verdict| -> Result<bool, CommandError> {
        Ok(v.commit == range.tip
            || gate::history_findings(&git, &range.base, &range.tip)
                .map_err(gate_error)?
                .is_empty())
    };
    if !args.again
        && let Some(v) = gate::approved_for_tree(&git, &tree).map_err(gate_error)?
        && reusable(&v)?
    {
        if !args.json {
            eprintln!(
                "tree {} was already approved (reviewed as commit {} by {}); use --again to review anew",
                short(&tree),
                short(&v.commit),
                v.reviewer
            );
        }
        return print_verdict(&v, args.json);
    }
    let packet = gate::packet_of(&repo, &range.tip).map_err(gate_error)?;
    if let (Some(p), false) = (&packet, args.json) {
        eprintln!(
            "packet {}/{}: checking its declared scope and validation",
            p.run, p.packet.id
        );
    }
    let reviewer = DeterministicReviewer {
        options: check_options(&repo, &git, args.max_file_size),
        validation: args.validate.clone(),
        timeout: Duration::from_secs(
            args.timeout
                .unwrap_or(git_orchestra::exec::DEFAULT_TIMEOUT.as_secs()),
        ),
    };
    let model = model_reviewer(
        &repo,
        args.no_model,
        "pass --no-model for the deterministic checks only",
    )?;
    let mut reviewers: Vec<&dyn Reviewer> = vec![&reviewer];
    if let Some(m) = &model {
        if !args.json {
            eprintln!("asking the model reviewer ({})", m.name());
        }
        reviewers.push(m);
    }
    let verdict = gate::review(&repo, &range.base, &range.tip, packet.as_ref(), &reviewers)
        .map_err(gate_error)?;
    print_verdict(&verdict, args.json)
}

/// Returns the model reviewer when the reviewer role has a model profile (see
/// `ModelReviewer::configured`) and it was not refused; `off` says how the user turns it off
/// where the command was run, for the error's hint.
pub fn model_reviewer(
    repo: &RepoInfo,
    refused: bool,
    off: &str,
) -> Result<Option<git_orchestra::agent::ModelReviewer>, CommandError> {
    use git_orchestra::agent::ModelReviewer;
    let config = super::load_config(repo)?;
    if refused || !ModelReviewer::configured(&repo.toplevel, &config) {
        return Ok(None);
    }
    ModelReviewer::new(&repo.toplevel, config)
        .map(Some)
        .map_err(|e| {
            CommandError::user(e).hint(format!(
                "fix the reviewer's profile (`git orchestra agents` shows where it comes from), or {off}"
            ))
        })
}

/// Returns the check options from flags, then `orchestra.gate.maxFileSize`, then defaults;
/// validation commands confined as `[sandbox]` says (as by default when the configuration
/// cannot be read: a broken file never unconfines them).
pub fn check_options(repo: &RepoInfo, git: &Git, flag: Option<u64>) -> CheckOptions {
    let configured = git
        .config_get_int("orchestra.gate.maxFileSize")
        .and_then(|v| u64::try_from(v).ok());
    let sandbox = super::load_config_quietly(repo)
        .map(|c| c.sandbox)
        .unwrap_or_default();
    CheckOptions {
        max_file_size: flag.or(configured).unwrap_or(gate::DEFAULT_MAX_FILE_SIZE),
        sandboxes: git_orchestra::agent::sandbox::command_sandboxes(&repo.common_dir, &sandbox),
    }
}

fn show(git: &Git, object: &str, json: bool) -> Result<(), CommandError> {
    let id = git.resolve(object).ok().flatten().ok_or_else(|| {
        CommandError::user(format!(
            "`{object}` does not name an object in this repository"
        ))
    })?;
    match gate::read_verdict(git, &id).map_err(gate_error)? {
        Some(v) => print_verdict(&v, json),
        None => Err(CommandError::user(format!(
            "no verdict is stored for {object} ({})",
            short(&id)
        ))
        .hint(format!("`git orchestra review {object}` reviews it"))),
    }
}

/// Prints the verdict (text or JSON) and returns an error exactly when it rejects.
fn print_verdict(v: &Verdict, json: bool) -> Result<(), CommandError> {
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(v).map_err(CommandError::internal)?
        );
    } else {
        print!("{}", git_orchestra::redact::terminal_safe(&render(v)));
    }
    match v.verdict {
        Decision::Approve => Ok(()),
        Decision::Reject => Err(CommandError::failed(format!(
            "review rejected {} ({} finding{})",
            short(&v.commit),
            v.findings.len(),
            if v.findings.len() == 1 { "" } else { "s" }
        ))),
    }
}

/// Returns the verdict as text: a headline, then one block per finding.
pub fn render(v: &Verdict) -> String {
    let mut out = format!(
        "{} {} (tree {}, base {}) by {} at {}; checks: {}\n",
        match v.verdict {
            Decision::Approve => "APPROVED",
            Decision::Reject => "REJECTED",
        },
        short(&v.commit),
        short(&v.tree),
        short(&v.base),
        v.reviewer,
        v.timestamp,
        v.checks.join(", ")
    );
    for f in &v.findings {
        let place = match (&f.file, f.line) {
            (Some(file), Some(line)) => format!(" {file}:{line}"),
            (Some(file), None) => format!(" {file}"),
            _ => String::new(),
        };
        out.push_str(&format!(
            "  [{}] {}{place}: {}\n    → {}\n",
            f.severity.as_str(),
            f.category,
            f.evidence.trim_end().replace('\n', "\n      "),
            f.suggestion
        ));
    }
    out
}

/// Maps gate errors: unknown revisions and empty ranges are the user's to fix.
pub fn gate_error(e: GateError) -> CommandError {
    match e {
        GateError::UnknownRevision { .. } => {
            CommandError::user(e).hint("pass a range such as `main..HEAD`, or a commit")
        }
        GateError::EmptyRange { .. } => CommandError::user(e)
            .hint("pass the range to review explicitly, e.g. `git orchestra review main~1..HEAD`"),
        GateError::NoBase | GateError::Scope { .. } => CommandError::user(e),
        GateError::Reviewer { .. } => CommandError::failed(e).hint(
            "no verdict was stored; run the review again, or pass --no-model for the deterministic checks only",
        ),
        other => CommandError::internal(other),
    }
}

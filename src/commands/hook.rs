//! `git orchestra hook install|uninstall|pre-push`: the pre-push gate.

use std::io::Read;
use std::path::Path;

use clap::{Args, Subcommand};
use git_orchestra::gate::ApprovalPolicy;
use git_orchestra::gate::hook::{self, GatePolicy, HookError, RefDecision};
use git_orchestra::gate::{Verdict, mask_secrets};
use git_orchestra::git::RepoInfo;

use super::CommandError;
use super::progress::short;
use super::review::{check_options, gate_error};

/// Installs or removes the pre-push gate, which refuses to push a branch whose tip's tree has
/// no approving review.
///
/// The hook goes into the repository's own hooks directory (or an outside core.hooksPath); an
/// existing pre-push hook is kept and run first. Set `git config orchestra.gate.review auto`
/// to review unreviewed tips during the push instead of refusing them.
#[derive(Debug, Args)]
pub struct HookArgs {
    #[command(subcommand)]
    action: HookAction,
}

#[derive(Debug, Subcommand)]
enum HookAction {
    /// Installs the pre-push hook (idempotent), chaining any existing one.
    Install,
    /// Removes the hook and puts back the one it replaced, byte for byte.
    Uninstall,
    /// Run by the hook: reads `<local ref> <local oid> <remote ref> <remote oid>` lines on stdin.
    #[command(name = "pre-push")]
    PrePush {
        /// The remote's name (or URL when pushing to a URL).
        remote: String,
        /// The remote's URL.
        url: Option<String>,
    },
}

/// Dispatches the hook subcommands.
pub fn cmd_hook(cwd: &Path, args: &HookArgs) -> Result<(), CommandError> {
    match &args.action {
        // The hook discovers the repository only when it has to (see `pre_push`).
        HookAction::PrePush { remote, url } => pre_push(cwd, remote, url.as_deref()),
        HookAction::Install => install(&RepoInfo::discover(cwd)?),
        HookAction::Uninstall => uninstall(&RepoInfo::discover(cwd)?),
    }
}

fn install(repo: &RepoInfo) -> Result<(), CommandError> {
    let done = hook::install(repo).map_err(hook_error)?;
    if done.unchanged {
        println!("pre-push gate already installed at {}", done.path.display());
    } else {
        println!("installed the pre-push gate at {}", done.path.display());
    }
    if let Some(chained) = done.chained {
        println!(
            "the previous pre-push hook runs first from {}",
            chained.display()
        );
    }
    Ok(())
}

fn uninstall(repo: &RepoInfo) -> Result<(), CommandError> {
    let done = hook::uninstall(repo).map_err(hook_error)?;
    if done.restored {
        println!(
            "removed the pre-push gate; restored the previous hook at {}",
            done.path.display()
        );
    } else {
        println!("removed the pre-push gate from {}", done.path.display());
    }
    Ok(())
}

fn pre_push(cwd: &Path, remote: &str, url: Option<&str>) -> Result<(), CommandError> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .map_err(|e| CommandError::internal(format!("cannot read the hook's input: {e}")))?;
    // Once a model reviewer is configured, approvals the deterministic checks gave alone do
    // not let work out. The hook runs at the top of the worktree.
    let approval = approval_policy(cwd);
    // Reviewed work is the common case: answer it in-process, without spawning git.
    let updates = hook::parse_updates(&input);
    if git_orchestra::gate::all_approved(cwd, &updates, approval) {
        return Ok(());
    }
    let repo = &RepoInfo::discover(cwd)?;
    let git = repo.git();
    let policy = match git
        .config_get("orchestra.gate.review")
        .ok()
        .flatten()
        .as_deref()
    {
        Some("auto") => GatePolicy::Auto,
        _ => GatePolicy::Require,
    };
    let options = check_options(repo, &git, None);
    let model_off = git
        .config_get("orchestra.gate.model")
        .ok()
        .flatten()
        .is_some_and(|v| {
            ["false", "no", "off", "0"].contains(&v.trim().to_ascii_lowercase().as_str())
        });
    let model = match policy {
        GatePolicy::Auto => super::review::model_reviewer(repo, model_off, MODEL_OFF)?,
        GatePolicy::Require => None,
    };
    let extra: Vec<&dyn git_orchestra::gate::Reviewer> = model
        .iter()
        .map(|m| m as &dyn git_orchestra::gate::Reviewer)
        .collect();
    // What the remote has, in its own words: never this repository's remote-tracking refs.
    let published = git_orchestra::gate::pushed::published(&git, url.unwrap_or(remote), &updates)
        .map_err(gate_error)?;
    let mut refused = Vec::new();
    for update in updates {
        let decision = hook::check_push(
            repo, &published, &update, policy, approval, &options, &extra,
        )
        .map_err(|e| {
            let mut e = gate_error(e);
            if e.hints.iter().any(|h| h.contains("--no-model")) {
                // `git push` takes no such flag: say what works from a push.
                e.hints = vec![MODEL_OFF.to_string()];
            }
            e
        })?;
        let name = &update.local_ref;
        match &decision {
            RefDecision::Approved {
                verdict,
                fresh: true,
            } => eprintln!(
                "git-orchestra: {name}: reviewed now and approved (tree {})",
                short(&verdict.tree)
            ),
            RefDecision::Rejected {
                verdict,
                fresh,
                command,
            } => {
                eprint!("{}", mask_secrets(&super::review::render(verdict)));
                refused.push(rejection(name, verdict, *fresh, command));
            }
            RefDecision::Unreviewed { tree, command } => refused.push(format!(
                "{name}: tree {} has no approving review{}; run `{command}`",
                short(tree),
                if approval.model_required {
                    " by the configured model reviewer (the deterministic checks alone do not suffice once one is set up)"
                } else {
                    ""
                }
            )),
            _ => {}
        }
    }
    if refused.is_empty() {
        return Ok(());
    }
    for line in &refused {
        eprintln!("git-orchestra: push refused: {line}");
    }
    Err(CommandError::failed("pre-push gate refused the push").hint(
        "or `git config orchestra.gate.review auto` to review during the push; `git push --no-verify` skips every hook",
    ))
}

/// Returns which approvals suffice in the worktree at `toplevel`: a model reviewer's once the
/// reviewer role has a model profile (a configuration that cannot be read is reported by the
/// review that needs it).
fn approval_policy(toplevel: &Path) -> ApprovalPolicy {
    let env = |k: &str| std::env::var(k).ok();
    let user = git_orchestra::config::user_config_path(&env);
    let model_required =
        git_orchestra::config::RepoConfig::load_with_user(toplevel, user.as_deref())
            .is_ok_and(|c| git_orchestra::agent::ModelReviewer::configured(toplevel, &c));
    ApprovalPolicy { model_required }
}

/// What a person pushing can do when the model reviewer is in the way: `git push` takes no
/// `--no-model`, but a configuration value set for one push reaches the hook.
const MODEL_OFF: &str = "push with the model reviewer off (the deterministic checks still run): `git -c orchestra.gate.model=false push …`, or `git config orchestra.gate.model false` to keep it off";

/// Returns the refusal of a ref whose tree a review rejected: by whom and when, each finding's
/// place (the findings themselves are printed above, secrets masked), and what to do.
fn rejection(name: &str, v: &Verdict, fresh: bool, command: &str) -> String {
    let when = if fresh {
        "now".to_string()
    } else {
        format!("at {}", v.timestamp)
    };
    let findings: Vec<String> = v
        .findings
        .iter()
        .map(|f| {
            let place = match (&f.file, f.line) {
                (Some(file), Some(line)) => format!(" {file}:{line}"),
                (Some(file), None) => format!(" {file}"),
                _ => String::new(),
            };
            mask_secrets(&format!("[{}] {}{place}", f.severity.as_str(), f.category))
        })
        .collect();
    format!(
        "{name}: rejected by review (tree {}, reviewed by {} {when}): {}; fix the findings, commit, then `{command}`",
        short(&v.tree),
        v.reviewer,
        if findings.is_empty() {
            "no findings recorded".to_string()
        } else {
            findings.join(", ")
        }
    )
}

fn hook_error(e: HookError) -> CommandError {
    match e {
        HookError::HooksPathInWorktree { .. } => CommandError::user(e).hint(
            "call `git-orchestra hook pre-push \"$@\"` from your tracked pre-push hook yourself, or point core.hooksPath outside the working tree",
        ),
        HookError::ChainedExists { .. } | HookError::NotInstalled { .. } => {
            CommandError::user(e)
        }
        other => CommandError::internal(other),
    }
}

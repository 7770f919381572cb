//! `git orchestra hook install|uninstall|pre-push`: the pre-push gate.

use std::io::Read;
use std::path::Path;

use clap::{Args, Subcommand};
use git_orchestra::gate::hook::{self, GatePolicy, HookError, RefDecision};
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
    let repo = RepoInfo::discover(cwd)?;
    match &args.action {
        HookAction::Install => {
            let done = hook::install(&repo).map_err(hook_error)?;
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
        HookAction::Uninstall => {
            let done = hook::uninstall(&repo).map_err(hook_error)?;
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
        HookAction::PrePush { remote, .. } => pre_push(&repo, remote),
    }
}

fn pre_push(repo: &RepoInfo, remote: &str) -> Result<(), CommandError> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .map_err(|e| CommandError::internal(format!("cannot read the hook's input: {e}")))?;
    let git = repo.git();
    let policy = match git
        .run(["config", "--get", "orchestra.gate.review"])
        .ok()
        .as_deref()
    {
        Some("auto") => GatePolicy::Auto,
        _ => GatePolicy::Require,
    };
    let options = check_options(&git, None);
    let mut refused = Vec::new();
    for update in hook::parse_updates(&input) {
        let decision =
            hook::check_push(repo, remote, &update, policy, &options).map_err(gate_error)?;
        let name = &update.local_ref;
        match &decision {
            RefDecision::Approved {
                verdict,
                fresh: true,
            } => eprintln!(
                "git-orchestra: {name}: reviewed now and approved (tree {})",
                short(&verdict.tree)
            ),
            RefDecision::Rejected { verdict, command } => {
                eprint!("{}", super::review::render(verdict));
                refused.push(format!(
                    "{name}: review rejected tree {}; fix the findings, then `{command}`",
                    short(&verdict.tree)
                ));
            }
            RefDecision::Unreviewed { tree, command } => refused.push(format!(
                "{name}: tree {} has no approving review; run `{command}`",
                short(tree)
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

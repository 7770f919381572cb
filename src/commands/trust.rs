//! `git orchestra trust`: shows what a repository's configuration runs, sends or changes, and
//! allows it (or takes that back).

use std::path::{Path, PathBuf};

use clap::Args;
use git_orchestra::config::RepoConfig;
use git_orchestra::config::trust::{self, Item, TrustState};
use git_orchestra::git::RepoInfo;
use git_orchestra::redact::terminal_safe;

use super::CommandError;

/// Shows every command, server, URL, key variable name, webhook and role override this
/// repository's configuration (.orchestra/config.toml, .mcp.json, .orchestra/agents/,
/// .claude/agents/, .github/agents/) would use, then trusts it: until then those settings are
/// ignored, each with a notice. The trust is a hash of those files kept in your configuration
/// directory (trust.toml beside config.toml); a change to any of them needs `trust` again.
#[derive(Debug, Args)]
pub struct TrustArgs {
    /// Only show what the configuration would use and whether it is trusted; change nothing.
    #[arg(long, conflicts_with = "revoke")]
    show: bool,
    /// Take the trust back: the settings are ignored again.
    #[arg(long)]
    revoke: bool,
}

/// Shows the repository's trust-relevant settings, then pins, or revokes, the user's trust.
pub fn cmd_trust(cwd: &Path, args: &TrustArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    let user = user_config()?;
    let top = &repo.toplevel;
    let state = trust::state(top, &user).map_err(CommandError::user)?;
    if args.revoke {
        let had = trust::revoke(top, &user).map_err(CommandError::user)?;
        let what = if had {
            "no longer trusted"
        } else {
            "was not trusted"
        };
        println!("{what}: {}", terminal_safe(&top.display().to_string()));
        return Ok(());
    }
    let items = items(top)?;
    let said = match state {
        TrustState::Trusted => "trusted",
        TrustState::Untrusted => "not trusted",
        TrustState::Changed => "changed since you trusted it",
    };
    println!("{}: {said}", terminal_safe(&top.display().to_string()));
    if items.is_empty() {
        println!("its configuration runs nothing and sends nothing elsewhere");
    } else {
        println!("what its configuration runs, sends or changes once trusted:");
        for item in &items {
            let line = format!("  {}: {} {}", item.file, item.setting, item.detail);
            println!("{}", terminal_safe(&line));
        }
    }
    if args.show {
        return Ok(());
    }
    let sha = trust::pin(top, &user).map_err(CommandError::user)?;
    println!(
        "trusted (sha256 {}) in {}; a change to {} makes it untrusted again",
        &sha[..12.min(sha.len())],
        trust::trust_file(&user).display(),
        match trust::relevant_files(top).join(", ") {
            files if files.is_empty() => "these files".to_string(),
            files => files,
        }
    );
    Ok(())
}

/// Returns the user configuration file's path, or an error saying which variable to set.
fn user_config() -> Result<PathBuf, CommandError> {
    let env = |k: &str| std::env::var(k).ok();
    git_orchestra::config::user_config_path(&env).ok_or_else(|| {
        CommandError::user(
            "cannot tell where your configuration lives: neither HOME nor XDG_CONFIG_HOME is set",
        )
        .hint("set HOME (or XDG_CONFIG_HOME) and run the command again")
    })
}

/// Returns every setting of the repository at `toplevel` that needs trust: its configuration
/// file's, `.mcp.json`'s and its role files'.
pub(crate) fn items(toplevel: &Path) -> Result<Vec<Item>, CommandError> {
    let config = RepoConfig::read_repository(toplevel).map_err(CommandError::user)?;
    let mut items = trust::config_items(&config);
    items.extend(trust::mcp_json_items(toplevel));
    items.extend(git_orchestra::agent::role::trust_items(toplevel));
    Ok(items)
}

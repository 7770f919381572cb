//! `git orchestra memory`: lists and forgets what agents learned, kept across runs.

use std::path::Path;

use clap::{Args, Subcommand};
use git_orchestra::git::RepoInfo;

use super::CommandError;

/// Lists what agents learned in earlier runs (the learnings of their `complete`, kept once
/// their packet succeeded, credentials redacted), which the planners and agents of later runs
/// are given; `forget` drops some or all of them.
#[derive(Debug, Args)]
pub struct MemoryArgs {
    #[command(subcommand)]
    action: Option<MemoryAction>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum MemoryAction {
    /// Forgets the learnings with these ids (see `git orchestra memory`), or all with --all.
    Forget {
        ids: Vec<i64>,
        /// Forget every learning.
        #[arg(long, conflicts_with = "ids")]
        all: bool,
    },
}

/// Lists or forgets the kept learnings.
pub fn cmd_memory(cwd: &Path, args: &MemoryArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    if let Some(MemoryAction::Forget { ids, all }) = &args.action {
        if ids.is_empty() && !all {
            return Err(
                CommandError::user("name the learnings to forget by id").hint(
                    "`git orchestra memory` lists them with their ids; --all forgets every one",
                ),
            );
        }
        let n = git_orchestra::store::memory::forget_in(&repo.common_dir, ids)
            .map_err(CommandError::internal)?;
        println!("forgot {n} learning{}", if n == 1 { "" } else { "s" });
        return Ok(());
    }
    let mut all = git_orchestra::store::memory::learnings_in(
        &repo.common_dir,
        git_orchestra::store::memory::MAX_LEARNINGS,
    )
    .map_err(CommandError::internal)?;
    // Agent output, maybe kept before it was redacted on the way in.
    for l in &mut all {
        l.text = git_orchestra::gate::safe_to_show(&l.text);
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&all).map_err(CommandError::internal)?
        );
        return Ok(());
    }
    if all.is_empty() {
        println!("nothing learned yet: agents' learnings are kept here once their packets succeed");
    }
    // Learnings are agents' text: their escape sequences are shown, never obeyed.
    let safe = git_orchestra::redact::terminal_safe;
    for l in &all {
        println!(
            "{:>4}  {}  ({} / {})",
            l.id,
            safe(&l.text),
            safe(&l.run),
            safe(&l.packet)
        );
    }
    Ok(())
}

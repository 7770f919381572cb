//! `git orchestra diff [<run>] [<packet>]`: a packet's own change (against its start, or
//! against the integration tip its conflict resolution merged), in the terminal.

use std::path::Path;

use clap::Args;
use git_orchestra::git::{Git, RepoInfo};

use super::CommandError;

/// Shows what packets changed: each packet's commit against the point it started from, or
/// after a conflict resolution against the integration tip it merged (every packet of the
/// run, or the one named).
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The run (default: the newest).
    run: Option<String>,
    /// Only this packet.
    packet: Option<String>,
}

/// Runs `diff`.
pub fn cmd_diff(cwd: &Path, args: &DiffArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    let run = super::pick_run_with_packets(&repo, args.run.as_deref())?;
    let opened = super::open_run(&repo, Some(&run))?;
    let packets = opened.packets().map_err(super::lifecycle_error)?;
    let chosen: Vec<_> = match &args.packet {
        Some(id) => match packets.iter().find(|p| &p.id == id) {
            Some(p) => vec![p],
            None => {
                let known: Vec<&str> = packets.iter().map(|p| p.id.as_str()).collect();
                return Err(CommandError::user(format!(
                    "run {run} has no packet `{id}`; its packets: {}",
                    known.join(", ")
                )));
            }
        },
        None => packets.iter().collect(),
    };
    let git = Git::new(&repo.common_dir);
    for p in chosen {
        let change = opened.own_change(p).map_err(super::lifecycle_error)?;
        let Some(change) = change else {
            println!("# {} ({}): no commit yet", p.id, p.state.as_str());
            continue;
        };
        let against = if change.merged_onto {
            " (against the integration tip its conflict resolution merged)"
        } else {
            ""
        };
        println!(
            "# {} ({}): {}..{}{against}",
            p.id,
            p.state.as_str(),
            &change.base[..change.base.len().min(12)],
            &change.tip[..change.tip.len().min(12)],
        );
        let patch = git
            .diff_patch(&change.base, &change.tip)
            .map_err(CommandError::internal)?;
        // The patch is an agent's text: its escape sequences are shown, never obeyed.
        print!("{}", git_orchestra::redact::terminal_safe(&patch));
    }
    Ok(())
}

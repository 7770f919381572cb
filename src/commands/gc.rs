//! `git orchestra gc`: removes finished runs' worktrees and spent branches, never losing work.

use std::path::Path;

use clap::Args;
use git_orchestra::engine::gc::{GcItem, GcReport, gc, trim_pools};
use git_orchestra::git::{RepoInfo, UNCOMMITTED_REF};

use super::CommandError;
use super::engine_error;

/// Removes the worktrees of finished runs, saving any unsaved work to
/// refs/orchestra/backup/<run>/<packet> first (nested git repositories as bundles and ignored
/// files as a tar archive under .git/orchestra/runs/<run>/<packet>/saved/); deletes packet branches only when they add
/// nothing or are merged into HEAD. Without --run, also removes the parked worktrees beyond
/// `[worktree] recycle` from the recycling pools of runs no process drives.
#[derive(Debug, Args)]
pub struct GcArgs {
    /// Only this run (it must be finished).
    #[arg(long)]
    run: Option<String>,
    /// List what would be removed and the disk space it frees, without changing anything.
    #[arg(long)]
    dry_run: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Runs the cleanup and prints what was (or would be) removed.
pub fn cmd_gc(cwd: &Path, args: &GcArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    let mut report = gc(&repo, args.run.as_deref(), args.dry_run).map_err(engine_error)?;
    // A whole gc also brings the recycling pools back to `[worktree] recycle` (a configuration
    // that cannot be read leaves them as they are).
    if args.run.is_none()
        && let Ok(config) = super::load_config_quietly(&repo)
    {
        let keep = config.recycle_worktrees();
        report.trimmed = trim_pools(&repo, keep, args.dry_run).map_err(engine_error)?;
    }
    print_report(&report, args.json)
}

/// Prints a gc report as text or JSON.
pub fn print_report(report: &GcReport, json: bool) -> Result<(), CommandError> {
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(report).map_err(CommandError::internal)?
        );
        return Ok(());
    }
    for dir in &report.unregistered {
        println!(
            "left {} in place: git does not know it as a worktree (its creation was cut short); look inside, then delete it yourself",
            dir.display()
        );
    }
    let verb = if report.dry_run {
        "would remove"
    } else {
        "removed"
    };
    if report.trimmed > 0 {
        println!(
            "{verb} {} parked worktree{} from the recycling pool, beyond `[worktree] recycle`",
            report.trimmed,
            if report.trimmed == 1 { "" } else { "s" }
        );
    }
    if report.items.is_empty() {
        if report.unregistered.is_empty() && report.trimmed == 0 {
            println!("nothing to clean up");
        }
        return Ok(());
    }
    for item in &report.items {
        if let Some(wt) = &item.worktree {
            print!("{verb} worktree {} ({})", wt.display(), human(item.bytes));
            match &item.backup {
                Some(b) => println!("; unsaved work saved to {b}"),
                None => println!(),
            }
            print_leftovers(item, report.dry_run);
        }
        if item.delete_branch {
            println!(
                "{} branch {}",
                if report.dry_run {
                    "would delete"
                } else {
                    "deleted"
                },
                item.branch
            );
        } else if let Some(reason) = &item.keep_reason {
            println!("kept branch {}: {reason}", item.branch);
        }
    }
    println!(
        "{} {} of disk space",
        if report.dry_run {
            "would free"
        } else {
            "freed"
        },
        human(report.bytes)
    );
    Ok(())
}

/// Prints where a worktree's nested repositories and ignored files went (or would go).
fn print_leftovers(item: &GcItem, dry_run: bool) {
    for nested in &item.nested {
        match &nested.bundle {
            Some(b) => println!(
                "  nested git repository {} saved to the bundle {} (uncommitted files under {UNCOMMITTED_REF})",
                nested.path,
                b.display()
            ),
            None if dry_run => println!(
                "  would save the nested git repository {} to a bundle",
                nested.path
            ),
            None => {}
        }
    }
    if !item.regenerable.is_empty() {
        println!("  build output not saved: {}", item.regenerable.join(", "));
    }
    if !item.too_large.is_empty() {
        let files: Vec<String> = item
            .too_large
            .iter()
            .map(|(path, size)| {
                format!(
                    "{} ({})",
                    git_orchestra::redact::quote_path(path),
                    human(*size)
                )
            })
            .collect();
        println!("  too large to archive, not saved: {}", files.join(", "));
    }
    match &item.archive {
        Some(a) => println!(
            "  {} ignored path(s) archived in {}",
            item.ignored,
            a.display()
        ),
        None if dry_run && item.ignored > 0 => println!(
            "  would archive {} ignored path(s) in the run store",
            item.ignored
        ),
        None => {}
    }
}

fn human(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

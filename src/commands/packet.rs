//! `git orchestra packet exec <run> <packet>`: the remote side of an executor that runs
//! packets on other machines.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use git_orchestra::engine::remote::{self, ExecOptions, ExecResult};

use super::{CommandError, engine_error, progress};

/// Works packets of a run on this machine for a coordinator elsewhere.
#[derive(Debug, Args)]
pub struct PacketArgs {
    #[command(subcommand)]
    command: PacketCommand,
}

#[derive(Debug, Subcommand)]
enum PacketCommand {
    Exec(ExecArgs),
}

/// Works one packet from the job its coordinator pushed to a git remote: fetches the job
/// (refs/orchestra/jobs/<run>/<packet>) and its start commit, creates the packet's worktree
/// and branch, runs the worker command (or, for a job without one, our agents with the model
/// profiles configured on this machine), commits with the usual trailers, checks the scope
/// and runs the validation commands, then pushes the branch and its events
/// (refs/orchestra/events/<run>/<packet>, JSON lines) back. A job whose result is already
/// there is not worked again. Exits 0 whenever a result was written, whatever it says.
#[derive(Debug, Args)]
struct ExecArgs {
    /// The run's id.
    run: String,
    /// The packet's id.
    packet: String,
    /// The git remote the job is in and the results go to (a URL, or a path on this machine).
    #[arg(long, value_name = "REMOTE")]
    remote: String,
    /// The repository to work in (created bare when missing). Default: the remote itself
    /// when it is a directory here, else a cache directory per remote.
    #[arg(long, value_name = "DIR")]
    repo: Option<PathBuf>,
    /// Print only the result.
    #[arg(long, short)]
    quiet: bool,
}

/// Runs `packet <command>`.
pub fn cmd_packet(cwd: &Path, args: &PacketArgs) -> Result<(), CommandError> {
    match &args.command {
        PacketCommand::Exec(exec) => cmd_exec(cwd, exec),
    }
}

fn cmd_exec(cwd: &Path, args: &ExecArgs) -> Result<(), CommandError> {
    let local = cwd.join(&args.remote);
    let repo = match &args.repo {
        Some(dir) => cwd.join(dir),
        None if local.is_dir() => local,
        None => cache_repo(&args.remote)?,
    };
    let stop = git_orchestra::exec::install_signal_handlers();
    let printer = progress::printer(args.quiet);
    // The sandbox of the worker and validation commands is this machine's user's (the
    // repository's configuration stays with the coordinator).
    let env = |k: &str| std::env::var(k).ok();
    let user = git_orchestra::config::user_config_path(&env);
    let config = git_orchestra::config::RepoConfig::load_with_user(&repo, user.as_deref())
        .map_err(CommandError::user)?;
    let sandboxes = git_orchestra::agent::sandbox::command_sandboxes(&repo, &config.sandbox);
    // A job without a worker command is worked by our agents, with this machine's profiles.
    let agents = git_orchestra::agent::AgentWorker::new(&repo, config.clone()).ok();
    let remote = if local_is_path(&args.remote, cwd) {
        cwd.join(&args.remote).to_string_lossy().into_owned()
    } else {
        args.remote.clone()
    };
    let report = remote::exec(&ExecOptions {
        run: &args.run,
        packet: &args.packet,
        remote: &remote,
        repo: &repo,
        sandboxes,
        worker: agents
            .as_ref()
            .map(|a| a as &dyn git_orchestra::engine::Worker),
        stop,
        on_event: &printer,
    })
    .map_err(engine_error)?;
    let again = if report.reused {
        " (worked before)"
    } else {
        ""
    };
    let line = match &report.result {
        ExecResult::Passed { head } => format!(
            "packet {} passed{again}: {} on {}",
            args.packet,
            progress::short(head),
            report.branch
        ),
        ExecResult::Checked { reason, .. } => {
            format!("packet {} needs fixes{again}: {reason}", args.packet)
        }
        ExecResult::Failed { reason } => format!("packet {} failed{again}: {reason}", args.packet),
    };
    println!("{}", git_orchestra::redact::terminal_safe(&line));
    Ok(())
}

/// Returns true when `remote` names a directory here rather than a URL.
fn local_is_path(remote: &str, cwd: &Path) -> bool {
    !remote.contains("://") && cwd.join(remote).is_dir()
}

/// Returns the cache repository for a remote that is not a directory here.
fn cache_repo(remote: &str) -> Result<PathBuf, CommandError> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .ok_or_else(|| {
            CommandError::user("neither XDG_CACHE_HOME nor HOME is set")
                .hint("pass --repo <dir> for the repository to work in")
        })?;
    Ok(base
        .join("git-orchestra/exec")
        .join(git_orchestra::names::sanitize(remote, 80)))
}

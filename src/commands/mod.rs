//! The command line: one file per subcommand, each with its clap `Args` beside its `cmd_*`
//! function; the doc comments are the help text.

mod error;
mod nav;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use error::{CommandError, ErrorKind};

/// Runs several coding agents in parallel on one repository, one git worktree and branch per
/// packet of work, and integrates their work only through review and merge gates.
#[derive(Debug, Parser)]
#[command(name = "git-orchestra", bin_name = "git orchestra", version, about, long_about = None)]
struct Cli {
    /// Run as if started in this directory instead of the current one.
    #[arg(short = 'C', long, global = true, value_name = "DIR")]
    directory: Option<std::path::PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Nav(nav::NavArgs),
}

/// Parses the command line, runs the command and maps its error to an exit code and message.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let cwd = match cli.directory.clone() {
        Some(dir) => dir,
        None => match std::env::current_dir() {
            Ok(dir) => dir,
            Err(e) => {
                return CommandError::internal(format!("cannot read the current directory: {e}"))
                    .report();
            }
        },
    };
    let result: Result<(), CommandError> = match cli.command {
        Command::Nav(args) => nav::cmd_nav(&cwd, args),
    };
    let _ = cwd;
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => e.report(),
    }
}

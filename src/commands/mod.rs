//! The command line: one file per subcommand, each with its clap `Args` beside its `cmd_*`
//! function; the doc comments are the help text.

mod error;
mod plan;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use error::CommandError;

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
    /// Checks plan files and shows how their packets will be scheduled.
    Plan(plan::PlanArgs),
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
    let result = match &cli.command {
        Command::Plan(args) => plan::cmd_plan(&cwd, args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => e.report(),
    }
}

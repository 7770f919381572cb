//! `git orchestra answer <packet> "<text>"`: replies to a question an agent asked a person,
//! whatever kind of run it works in.

use std::path::Path;

use clap::Args;
use git_orchestra::git::RepoInfo;
use git_orchestra::run::{LifecycleError, Run, RunRef};

use super::{CommandError, lifecycle_error};

/// Answers the question a packet's agent is waiting on (shown by `git orchestra status`).
#[derive(Debug, Args)]
pub struct AnswerArgs {
    /// The packet whose agent asked.
    packet: String,
    /// The answer, in words.
    text: String,
    /// The run (default: the newest run with an open question from this packet).
    #[arg(long)]
    run: Option<String>,
}

/// Journals the answer where the waiting agent looks for it.
pub fn cmd_answer(cwd: &Path, args: &AnswerArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    if args.text.trim().is_empty() {
        return Err(lifecycle_error(LifecycleError::EmptyAnswer));
    }
    let run = Run::open_with_question(&repo, RunRef::from_arg(args.run.as_deref()), &args.packet)
        .map_err(lifecycle_error)?;
    let question = run
        .answer(&args.packet, &args.text)
        .map_err(lifecycle_error)?;
    eprintln!(
        "answered `{question}` for packet {} of run {}",
        args.packet,
        run.id()
    );
    Ok(())
}

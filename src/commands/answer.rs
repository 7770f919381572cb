//! `git orchestra answer <packet> "<text>"`: replies to a question an agent asked a person.

use std::path::Path;

use clap::Args;
use git_orchestra::git::RepoInfo;
use git_orchestra::orchestrator::{StartJournal, WorkflowEvent};

use super::CommandError;

/// Answers the question a packet's agent is waiting on (shown by `git orchestra status`).
#[derive(Debug, Args)]
pub struct AnswerArgs {
    /// The packet whose agent asked.
    packet: String,
    /// The answer, in words.
    text: String,
    /// The run (default: the newest run with a question from this packet).
    #[arg(long)]
    run: Option<String>,
}

/// Journals the answer where the waiting agent looks for it.
pub fn cmd_answer(cwd: &Path, args: &AnswerArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    if args.text.trim().is_empty() {
        return Err(CommandError::user("the answer is empty"));
    }
    let runs = StartJournal::runs(&repo.common_dir).map_err(CommandError::internal)?;
    let candidates: Vec<String> = match &args.run {
        Some(r) if runs.contains(r) => vec![r.clone()],
        Some(r) => {
            return Err(
                CommandError::user(format!("no `start` run `{r}` in this repository"))
                    .hint("`git orchestra status` lists the runs"),
            );
        }
        None => runs,
    };
    for run in candidates {
        let j = StartJournal::open(&repo.common_dir, &run).map_err(CommandError::internal)?;
        let entries = j.entries().map_err(CommandError::internal)?;
        let question = entries.iter().rev().find_map(|e| match &e.event {
            WorkflowEvent::Asked { packet, question } if *packet == args.packet => {
                Some(question.clone())
            }
            _ => None,
        });
        if let Some(q) = question {
            j.append(&WorkflowEvent::Answered {
                packet: args.packet.clone(),
                text: args.text.clone(),
            })
            .map_err(CommandError::internal)?;
            eprintln!("answered `{q}` for packet {} of run {run}", args.packet);
            return Ok(());
        }
    }
    Err(CommandError::user(format!(
        "no agent of packet `{}` has asked a question",
        args.packet
    ))
    .hint("`git orchestra status` shows the questions waiting for an answer"))
}

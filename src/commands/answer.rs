//! `git orchestra answer <packet> "<text>"`: replies to a question an agent asked a person, in
//! a `start` run (its workflow journal) or a run the engine drives (`run`, `agent`: its store).

use std::path::Path;

use clap::Args;
use git_orchestra::git::RepoInfo;
use git_orchestra::orchestrator::{StartJournal, WorkflowEvent};
use git_orchestra::store::{Event, Store};

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
    let store = Store::open_existing(&repo.common_dir).map_err(CommandError::internal)?;
    let engine_runs: Vec<String> = match &store {
        Some(s) => s
            .runs()
            .map_err(CommandError::internal)?
            .into_iter()
            .map(|r| r.id)
            .collect(),
        None => Vec::new(),
    };
    let (candidates, engine_candidates): (Vec<String>, Vec<String>) = match &args.run {
        Some(r) if runs.contains(r) => (vec![r.clone()], Vec::new()),
        Some(r) if engine_runs.contains(r) => (Vec::new(), vec![r.clone()]),
        Some(r) => {
            return Err(
                CommandError::user(format!("no run `{r}` in this repository"))
                    .hint("`git orchestra status` lists the runs"),
            );
        }
        None => (runs, engine_runs),
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
    // Runs the engine drives (`run`, `agent`): the question waits in the run store.
    if let Some(mut store) = store {
        for run in engine_candidates {
            let open = store
                .open_question(&run, &args.packet)
                .map_err(CommandError::internal)?;
            if let Some(q) = open {
                store
                    .record(
                        &run,
                        &Event::QuestionAnswered {
                            packet: args.packet.clone(),
                            text: args.text.clone(),
                        },
                    )
                    .map_err(CommandError::internal)?;
                eprintln!("answered `{q}` for packet {} of run {run}", args.packet);
                return Ok(());
            }
        }
    }
    Err(CommandError::user(format!(
        "no agent of packet `{}` has asked a question",
        args.packet
    ))
    .hint("`git orchestra status` shows the questions waiting for an answer"))
}

//! Questions an agent asks a person, and their answers: one path for both kinds of run (a
//! `start` run's workflow journal, an engine run's store), so no frontend searches journals.

use crate::orchestrator::{StartJournal, WorkflowEvent};
use orchestra_core::store::{Event, Store};
use orchestra_git::git::RepoInfo;

use super::{LifecycleError, Run, RunRef};

impl Run {
    /// Opens the run whose agent of `packet` waits on a question: the run `which` names, or
    /// when none is named the newest run with an open question from `packet` — never an older
    /// run whose question was answered already, nor one of another packet.
    pub fn open_with_question(
        repo: &RepoInfo,
        which: RunRef,
        packet: &str,
    ) -> Result<Run, LifecycleError> {
        if let RunRef::Id(id) = &which {
            if super::is_start_run(&repo.common_dir, id) {
                return Ok(Run::at(repo, id, false));
            }
            return Run::open(repo, which);
        }
        let mut newest: Option<(i64, Run)> = None;
        for (id, started_ms) in every_run(repo)? {
            let run = Run::at(repo, &id, true);
            if run.open_question(packet)?.is_some()
                && newest.as_ref().is_none_or(|(ts, _)| started_ms > *ts)
            {
                newest = Some((started_ms, run));
            }
        }
        newest
            .map(|(_, run)| run)
            .ok_or_else(|| LifecycleError::NoQuestion {
                packet: packet.to_string(),
            })
    }

    /// Returns the question `packet`'s agent waits on in this run: its latest question, when
    /// no answer came after it.
    pub fn open_question(&self, packet: &str) -> Result<Option<String>, LifecycleError> {
        Ok(self.find_question(packet)?.map(|(q, _)| q))
    }

    /// Returns the open question of `packet` and true when it waits in the workflow journal
    /// (a `start` run's agents), false in the store (the engine's agents).
    fn find_question(&self, packet: &str) -> Result<Option<(String, bool)>, LifecycleError> {
        if super::is_start_run(self.common(), &self.id) {
            let j = StartJournal::open(self.common(), &self.id)?;
            let mut open = None;
            for e in j.entries()? {
                match e.event {
                    WorkflowEvent::Asked {
                        packet: p,
                        question,
                    } if p == packet => open = Some(question),
                    WorkflowEvent::Answered { packet: p, .. } if p == packet => open = None,
                    _ => {}
                }
            }
            if let Some(q) = open {
                return Ok(Some((q, true)));
            }
        }
        match Store::open_existing(self.common())? {
            Some(store) => Ok(store.open_question(&self.id, packet)?.map(|q| (q, false))),
            None => Ok(None),
        }
    }

    /// Answers the question `packet`'s agent waits on, where that agent looks for it; returns
    /// the question answered.
    pub fn answer(&self, packet: &str, text: &str) -> Result<String, LifecycleError> {
        if text.trim().is_empty() {
            return Err(LifecycleError::EmptyAnswer);
        }
        let Some((question, in_workflow)) = self.find_question(packet)? else {
            return Err(LifecycleError::NoQuestion {
                packet: packet.to_string(),
            });
        };
        if in_workflow {
            StartJournal::open(self.common(), &self.id)?.append(&WorkflowEvent::Answered {
                packet: packet.to_string(),
                text: text.to_string(),
            })?;
        } else {
            Store::open(self.common())?.record(
                &self.id,
                &Event::QuestionAnswered {
                    packet: packet.to_string(),
                    text: text.to_string(),
                },
            )?;
        }
        Ok(question)
    }
}

/// Returns every run of the repository with when it began: `start` runs (by their first
/// journal entry) and engine runs, each once.
fn every_run(repo: &RepoInfo) -> Result<Vec<(String, i64)>, LifecycleError> {
    let mut out: Vec<(String, i64)> = Vec::new();
    for id in StartJournal::runs(&repo.common_dir)? {
        let j = StartJournal::open(&repo.common_dir, &id)?;
        let ts = j.entries()?.first().map_or(0, |e| e.ts_ms);
        out.push((id, ts));
    }
    if let Some(store) = Store::open_existing(&repo.common_dir)? {
        for r in store.runs()? {
            if !out.iter().any(|(id, _)| *id == r.id) {
                out.push((r.id, r.created_ms));
            }
        }
    }
    Ok(out)
}

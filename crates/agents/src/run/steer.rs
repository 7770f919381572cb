//! A person steering a run: deciding on the plan a `start` run waits on, and commenting on a
//! packet's diff (required fixes for its next fix round).

use serde::Deserialize;

use crate::orchestrator::{Approval, StartJournal, WorkflowEvent, WorkflowState};
use orchestra_core::store::{Event, Store};

use super::{LifecycleError, Run};

/// A person's comment on a line of a packet's diff.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Comment {
    /// The file commented on.
    #[serde(default)]
    pub file: String,
    /// The line commented on, when one was.
    #[serde(default)]
    pub line: Option<u64>,
    /// The code on that line, quoted to the agent.
    #[serde(default)]
    pub code: String,
    /// What the person says.
    #[serde(default)]
    pub text: String,
}

impl Run {
    /// Returns the plan the `start` run's planner proposed last that passed validation.
    pub fn proposed_plan(&self) -> Option<String> {
        let j = StartJournal::open(self.common(), &self.id).ok()?;
        j.entries().ok()?.iter().rev().find_map(|e| match &e.event {
            WorkflowEvent::PlanProposed { toml, issues, .. } if issues.is_empty() => {
                Some(toml.clone())
            }
            _ => None,
        })
    }

    /// Returns true if and only if the run is a `start` run waiting for its plan's approval.
    pub fn awaits_approval(&self) -> bool {
        self.start_state()
            .is_some_and(|s| s.phase == WorkflowState::AwaitingApproval)
    }

    /// Journals `decision` on the plan a stopped `start` run waits on: a rejection cancels the
    /// run; an approval (as proposed or as edited) or a plan sent back is journaled for its
    /// driver. Returns true when a driver must now continue the run (everything but a
    /// rejection); the frontend starts one.
    pub fn approve(&self, decision: Approval) -> Result<bool, LifecycleError> {
        if !self.awaits_approval() {
            return Err(LifecycleError::NoApprovalWaiting {
                run: self.id.clone(),
            });
        }
        let j = StartJournal::open(self.common(), &self.id)?;
        let (how, plan) = match decision {
            Approval::Reject => {
                let mut wf = j.workflow()?;
                j.transition(
                    &mut wf,
                    WorkflowState::Cancelled,
                    "plan rejected on the page",
                )?;
                return Ok(false);
            }
            Approval::Revise(feedback) => {
                if feedback.trim().is_empty() {
                    return Err(LifecycleError::EmptyFeedback);
                }
                j.append(&WorkflowEvent::PlanSentBack { feedback })?;
                return Ok(true);
            }
            Approval::Edited(plan) => ("edited on the page", plan),
            Approval::Approve => (
                "page",
                self.proposed_plan().ok_or(LifecycleError::NoValidPlan)?,
            ),
        };
        j.append(&WorkflowEvent::PlanApproved {
            how: how.into(),
            toml: plan,
        })?;
        Ok(true)
    }

    /// Sends a person's `comments` on `packet`'s diff to its agent as required fixes for its
    /// next fix round; returns how many were sent. A packet that has ended is refused: its
    /// comments could no longer reach a fix round of this run.
    pub fn comment(&self, packet: &str, comments: &[Comment]) -> Result<usize, LifecycleError> {
        let mut fixes = String::new();
        for c in comments {
            let note = c.text.trim();
            if note.is_empty() {
                continue;
            }
            let line = c.line.map(|l| format!(" line {l}")).unwrap_or_default();
            let code = c.code.trim();
            let quoted = if code.is_empty() {
                String::new()
            } else {
                format!(" (`{}`)", orchestra_sys::redact::clip(code, 200))
            };
            fixes.push_str(&format!(
                "- A person reviewing your diff says at {}{line}{quoted}: {note}\n",
                c.file
            ));
        }
        if fixes.is_empty() {
            return Err(LifecycleError::NoComment);
        }
        let Some(mut store) = Store::open_existing(self.common())? else {
            return Err(LifecycleError::NoRun);
        };
        let found = store
            .packets(&self.id)
            .ok()
            .and_then(|list| list.into_iter().find(|p| p.id == packet));
        match found {
            Some(p) if !p.state.is_final() => {}
            Some(p) => {
                return Err(LifecycleError::PacketFinal {
                    packet: packet.to_string(),
                    state: p.state.as_str().to_string(),
                });
            }
            None => {
                return Err(LifecycleError::NoSuchPacket {
                    run: self.id.clone(),
                    packet: packet.to_string(),
                });
            }
        }
        let event = Event::CommentsSent {
            packet: packet.to_string(),
            fixes,
        };
        store.record(&self.id, &event)?;
        Ok(comments.len())
    }
}

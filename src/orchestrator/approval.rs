//! The approval phase of `start`: the valid plan is approved by `--yes`, or shown to the
//! person at the terminal, who approves, edits (the edit is validated again) or rejects it.

use super::driver::{Approval, Ctx, StartError};
use super::planning;
use super::start_journal::WorkflowEvent;
use super::workflow::WorkflowState as S;
use crate::plan::Plan;

impl Ctx<'_> {
    /// Returns Some(true) when approved, Some(false) when rejected, None when nobody can say.
    pub(super) fn approve(&self) -> Result<Option<bool>, StartError> {
        if self
            .since_entering(S::AwaitingApproval)?
            .iter()
            .any(|e| matches!(e.event, WorkflowEvent::PlanApproved { .. }))
        {
            return Ok(Some(true));
        }
        let Some(mut plan) = self.valid_plan()? else {
            return Ok(Some(false));
        };
        let how = if self.settings.yes {
            "flag"
        } else if !self.ui.interactive() {
            return Ok(None);
        } else {
            let mut problems = Vec::new();
            let mut edited = false;
            loop {
                match self.ui.approve(&plan, &problems) {
                    Approval::Approve if problems.is_empty() => break,
                    Approval::Approve => {}
                    Approval::Reject => return Ok(Some(false)),
                    Approval::Edited(text) => {
                        plan = text;
                        edited = true;
                    }
                }
                let worker_cmd = self.settings.worker_cmd.is_some();
                problems = planning::check(&plan, &self.repo.toplevel, &|r| {
                    worker_cmd || self.models.roles.get(r).is_ok()
                });
                if let Ok(p) = Plan::from_toml_str(&plan, "plan.toml")
                    && p.objective.trim() != self.req.objective.trim()
                {
                    problems.push(
                        "the objective must stay as it is (the run is named after it)".into(),
                    );
                }
            }
            if edited { "edited" } else { "user" }
        };
        self.j()?.append(&WorkflowEvent::PlanApproved {
            how: how.to_string(),
            toml: plan,
        })?;
        Ok(Some(true))
    }

    /// Returns the journaled approved plan, if any.
    pub(super) fn approved_plan(&self) -> Result<Option<String>, StartError> {
        Ok(self.all()?.iter().rev().find_map(|e| match &e.event {
            WorkflowEvent::PlanApproved { toml, .. } => Some(toml.clone()),
            _ => None,
        }))
    }
}

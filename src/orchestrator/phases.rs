//! The steps before execution, as [`Ctx`] methods: clarify, plan (with validation rounds),
//! review the plan, approve it. Each reads the journal first so a resumed run does not repeat
//! a step it finished.

use super::driver::{Approval, Ctx, StartError, ask_err};
use super::plan_phase::{self, PlanInputs};
use super::start_journal::{ClarifyOutcome, WorkflowEvent};
use super::workflow::{Workflow, WorkflowState as S};
use crate::plan::Plan;

/// Most planner rounds to reach a plan that passes validation.
pub const MAX_PLAN_ROUNDS: usize = 3;
/// Most plan review rounds before the last valid plan goes to approval as it is.
pub const MAX_REVIEW_ROUNDS: usize = 2;

impl Ctx<'_> {
    pub(super) fn clarify(&self) -> Result<(), StartError> {
        if self
            .all()?
            .iter()
            .any(|e| matches!(e.event, WorkflowEvent::Clarified { .. }))
        {
            return Ok(());
        }
        let project = plan_phase::project_context(&self.repo.toplevel);
        let c = plan_phase::clarify(&self.models, &self.req.objective, &project, self.stop)
            .map_err(ask_err("clarify"))?;
        let mut answers = Vec::new();
        if !c.questions.is_empty() && self.ui.interactive() {
            for q in &c.questions {
                if let Some(a) = self.ui.ask(q).filter(|a| !a.trim().is_empty()) {
                    answers.push((q.clone(), a));
                }
            }
        }
        let outcome = if c.questions.is_empty() {
            ClarifyOutcome::Clear
        } else if answers.len() == c.questions.len() {
            ClarifyOutcome::Clarified
        } else {
            ClarifyOutcome::Assumptions
        };
        let assumptions = if outcome == ClarifyOutcome::Assumptions {
            c.assumptions
        } else {
            Vec::new()
        };
        self.j()?.append(&WorkflowEvent::Clarified {
            outcome,
            requirements: c.requirements,
            assumptions,
            answers,
        })?;
        Ok(())
    }

    pub(super) fn notes(&self) -> Result<Vec<String>, StartError> {
        Ok(self
            .all()?
            .iter()
            .find_map(|e| match &e.event {
                WorkflowEvent::Clarified {
                    requirements,
                    assumptions,
                    answers,
                    ..
                } => Some(
                    requirements
                        .iter()
                        .cloned()
                        .chain(assumptions.iter().map(|a| format!("assumed: {a}")))
                        .chain(answers.iter().map(|(q, a)| format!("{q} {a}")))
                        .collect(),
                ),
                _ => None,
            })
            .unwrap_or_default())
    }

    /// Returns the last plan that passed validation, if any.
    pub(super) fn valid_plan(&self) -> Result<Option<String>, StartError> {
        Ok(self.all()?.iter().rev().find_map(|e| match &e.event {
            WorkflowEvent::PlanProposed { toml, issues, .. } if issues.is_empty() => {
                Some(toml.clone())
            }
            _ => None,
        }))
    }

    pub(super) fn plan(&self, wf: &Workflow) -> Result<(), StartError> {
        let state = wf.state();
        let here = self.since_entering(state)?;
        let mut round = self
            .all()?
            .iter()
            .filter(|e| matches!(e.event, WorkflowEvent::PlanProposed { .. }))
            .count() as u32;
        let mut last: Option<(String, Vec<String>)> =
            here.iter().rev().find_map(|e| match &e.event {
                WorkflowEvent::PlanProposed { toml, issues, .. } => {
                    Some((toml.clone(), issues.clone()))
                }
                _ => None,
            });
        if last.as_ref().is_some_and(|(_, i)| i.is_empty()) {
            return Ok(());
        }
        let mut feedback: Vec<String> = match (&last, state) {
            (Some((_, issues)), _) => issues.clone(),
            (None, S::PlanRevision) => self
                .all()?
                .iter()
                .rev()
                .find_map(|e| match &e.event {
                    WorkflowEvent::PlanReviewed { findings, .. } => Some(findings.clone()),
                    _ => None,
                })
                .unwrap_or_default(),
            (None, _) => Vec::new(),
        };
        let mut previous = match state {
            S::PlanRevision => self.valid_plan()?,
            _ => None,
        };
        if let Some((t, _)) = &last {
            previous = Some(t.clone());
        }
        let done = here
            .iter()
            .filter(|e| matches!(e.event, WorkflowEvent::PlanProposed { .. }))
            .count();
        let notes = self.notes()?;
        let project = plan_phase::project_context(&self.repo.toplevel);
        let map = plan_phase::repo_map(&self.repo.toplevel, &self.req.objective);
        let roles = &self.models.roles;
        for attempt in done..MAX_PLAN_ROUNDS {
            round += 1;
            self.ui
                .progress(&format!("{}: planning, round {round}", self.run));
            let toml = plan_phase::propose(
                &self.models,
                &PlanInputs {
                    objective: &self.req.objective,
                    base: &self.base,
                    notes: &notes,
                    project: &project,
                    repo_map: &map,
                    feedback: &feedback,
                    previous: previous.as_deref(),
                    attempt: (attempt + 1, MAX_PLAN_ROUNDS),
                },
                self.stop,
            )
            .map_err(ask_err("plan"))?;
            let worker_cmd = self.settings.worker_cmd.is_some();
            let issues = plan_phase::check(&toml, &self.repo.toplevel, &|r| {
                worker_cmd || roles.get(r).is_ok()
            });
            self.j()?.append(&WorkflowEvent::PlanProposed {
                round,
                toml: toml.clone(),
                issues: issues.clone(),
            })?;
            if issues.is_empty() {
                return Ok(());
            }
            feedback = issues.clone();
            previous = Some(toml);
            last = Some((String::new(), issues));
        }
        Err(StartError::PlanInvalid {
            rounds: MAX_PLAN_ROUNDS,
            issues: last.map(|(_, i)| i.join("\n  ")).unwrap_or_default(),
        })
    }

    /// Reviews the current plan; returns true when it goes on to approval.
    pub(super) fn review(&self) -> Result<bool, StartError> {
        let done: Vec<(bool, usize)> = self
            .all()?
            .iter()
            .filter_map(|e| match &e.event {
                WorkflowEvent::PlanReviewed {
                    approved, findings, ..
                } => Some((*approved, findings.len())),
                _ => None,
            })
            .collect();
        let here = self.since_entering(S::PlanReview)?;
        if let Some(approved) = here.iter().find_map(|e| match &e.event {
            WorkflowEvent::PlanReviewed { approved, .. } => Some(*approved),
            _ => None,
        }) {
            return Ok(approved || done.len() >= MAX_REVIEW_ROUNDS);
        }
        if self.models.check("reviewer").is_err() {
            self.ui.progress(&format!(
                "{}: no reviewer model; plan review skipped",
                self.run
            ));
            return Ok(true);
        }
        let Some(plan) = self.valid_plan()? else {
            return Ok(true);
        };
        let (approved, findings) =
            plan_phase::review(&self.models, &self.req.objective, &plan, self.stop)
                .map_err(ask_err("plan review"))?;
        let round = done.len() as u32 + 1;
        self.j()?.append(&WorkflowEvent::PlanReviewed {
            round,
            approved,
            findings,
        })?;
        Ok(approved || round as usize >= MAX_REVIEW_ROUNDS)
    }

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
                problems = plan_phase::check(&plan, &self.repo.toplevel, &|r| {
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

    pub(super) fn approved_plan(&self) -> Result<Option<String>, StartError> {
        Ok(self.all()?.iter().rev().find_map(|e| match &e.event {
            WorkflowEvent::PlanApproved { toml, .. } => Some(toml.clone()),
            _ => None,
        }))
    }
}

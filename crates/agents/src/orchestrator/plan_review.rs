//! The plan review phase of `start`: the reviewer role reads the valid plan and approves it or
//! sends findings back to the planner, for a bounded number of rounds; skipped when the
//! reviewer role has no model.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use super::driver::{Ctx, StartError, ask_err};
use super::models::{RoleModels, extract_json, strings};
use super::start_journal::WorkflowEvent;
use super::workflow::WorkflowState as S;
use crate::agent::SetupError;

/// Most plan review rounds before the last valid plan goes to approval as it is.
pub const MAX_REVIEW_ROUNDS: usize = 2;

const REVIEW_GUIDANCE: &str = "You are reviewing a plan before any work starts. Check that the packets achieve the objective, that file scopes are complete and as disjoint as possible, that dependencies are right and that every packet has validation. Check the scopes against the code: read what the packets will change, and find the callers, importers and tests of the symbols they change (nav_callers, nav_refs, nav_importers); a packet whose change needs a file outside its `files` (a caller to update, a test file, a module's `__init__.py`/`mod.rs`/index export) gets a finding naming the packet and the missing paths. Reply with only a JSON object: {\"verdict\": \"approve\" or \"revise\", \"findings\": [concrete problems, most severe first]}";

/// Asks the reviewer about a plan; returns whether it is approved and the findings.
///
/// With `explore` (the repository and the transcript's path) the reviewer reads the code with
/// read-only tools before it answers; without, it answers in one completion.
pub fn review(
    models: &RoleModels,
    objective: &str,
    plan_toml: &str,
    explore: Option<(&Path, &Path)>,
    stop: &AtomicBool,
) -> Result<(bool, Vec<String>), SetupError> {
    // The plan is the planner agent's output: quoted in a frame it cannot close.
    let prompt = format!(
        "Objective: {objective}\n\n{}",
        crate::agent::untrusted::frame("The plan", "toml", plan_toml)
    );
    let answer = match explore {
        Some((root, transcript)) => models.explore_checked(
            "reviewer",
            REVIEW_GUIDANCE,
            &prompt,
            root,
            transcript,
            stop,
            &super::answers::verdict,
        )?,
        None => models.ask_checked(
            "reviewer",
            REVIEW_GUIDANCE,
            &prompt,
            stop,
            &super::answers::verdict,
        )?,
    };
    let v = extract_json(&answer).unwrap_or_default();
    let verdict = v.get("verdict").and_then(|s| s.as_str()).unwrap_or("");
    let findings = strings(&v, "findings");
    Ok((verdict.eq_ignore_ascii_case("approve"), findings))
}

impl Ctx<'_> {
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
        let round = done.len() as u32 + 1;
        let transcript = orchestra_sys::exec::RunDir::new(&self.repo.common_dir, &self.run)
            .plan_review_log(round);
        let (approved, findings) = review(
            &self.models,
            &self.req.objective,
            &plan,
            Some((&self.repo.toplevel, &transcript)),
            self.stop,
        )
        .map_err(ask_err("plan review"))?;
        self.j()?.append(&WorkflowEvent::PlanReviewed {
            round,
            approved,
            findings,
        })?;
        Ok(approved || round as usize >= MAX_REVIEW_ROUNDS)
    }
}

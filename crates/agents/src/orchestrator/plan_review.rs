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

const REVIEW_GUIDANCE: &str = "You are reviewing a plan before any work starts. Check that the packets achieve the objective, that file scopes are complete and as disjoint as possible, that dependencies are right and that every packet has validation. Check the scopes against the code: read what the packets will change, and find the callers, importers and tests of the symbols they change (nav_callers, nav_refs, nav_importers); a packet whose change needs a file outside its `files` (a caller to update, a test file, a module's `__init__.py`/`mod.rs`/index export) gets a finding naming the packet and the missing paths. Also name the packets that are risky — a change that is easy to get subtly wrong (concurrency, parsing, security, money, data migrations, wide refactors) — so they can be worked by several candidates and the best one kept. Reply with only a JSON object: {\"verdict\": \"approve\" or \"revise\", \"findings\": [concrete problems, most severe first], \"risky\": [ids of risky packets, or none]}";

/// What the reviewer said about a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanVerdict {
    /// True if and only if the reviewer approved the plan as it is.
    pub approved: bool,
    /// Concrete problems, most severe first.
    pub findings: Vec<String>,
    /// Ids of the packets the reviewer judged risky.
    pub risky: Vec<String>,
}

/// Asks the reviewer about a plan; returns whether it is approved, the findings and the
/// packets it judged risky.
///
/// With `explore` (the repository and the transcript's path) the reviewer reads the code with
/// read-only tools before it answers; without, it answers in one completion.
pub fn review(
    models: &RoleModels,
    objective: &str,
    plan_toml: &str,
    explore: Option<(&Path, &Path)>,
    stop: &AtomicBool,
) -> Result<PlanVerdict, SetupError> {
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
    Ok(PlanVerdict {
        approved: verdict.eq_ignore_ascii_case("approve"),
        findings: strings(&v, "findings"),
        risky: strings(&v, "risky"),
    })
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
        let PlanVerdict {
            approved,
            findings,
            risky,
        } = review(
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
            risky,
        })?;
        Ok(approved || round as usize >= MAX_REVIEW_ROUNDS)
    }
}

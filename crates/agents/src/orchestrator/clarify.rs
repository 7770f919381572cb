//! The clarification phase of `start`: the clarifier role reads the objective and says what
//! is required, what only a person can answer and what it assumes otherwise; the answers (or
//! the assumptions) are journaled once, so a resumed run does not ask again.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use super::answers;
use super::context::summarize;
use super::driver::{Ctx, StartError, ask_err};
use super::models::{RoleModels, extract_json, strings};
use super::planning::project_context;
use super::start_journal::{ClarifyOutcome, WorkflowEvent};
use crate::agent::SetupError;

/// What the clarifier said.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Clarification {
    pub requirements: Vec<String>,
    pub questions: Vec<String>,
    pub assumptions: Vec<String>,
}

const CLARIFY_GUIDANCE: &str = "You are the clarification phase of a run. Reply with only a JSON object:
{\"outcome\": \"clear\" or \"questions\", \"requirements\": [testable requirements],
 \"questions\": [questions only a person can answer], \"assumptions\": [what you will assume for each question if nobody answers]}";

/// Asks the clarifier about `objective`.
///
/// With `explore` (the repository and the transcript's path) the clarifier reads the code with
/// read-only tools first, so it asks only what the code cannot answer.
pub fn clarify(
    models: &RoleModels,
    objective: &str,
    project: &str,
    explore: Option<(&Path, &Path)>,
    stop: &AtomicBool,
) -> Result<Clarification, SetupError> {
    let prompt = format!("Objective: {objective}\n\n{project}");
    let answer = match explore {
        Some((root, transcript)) => models.explore_checked(
            "clarifier",
            CLARIFY_GUIDANCE,
            &prompt,
            root,
            transcript,
            stop,
            &answers::clarification,
        )?,
        None => models.ask_checked(
            "clarifier",
            CLARIFY_GUIDANCE,
            &prompt,
            stop,
            &answers::clarification,
        )?,
    };
    let Some(v) = extract_json(&answer) else {
        // An answer that is not the requested object is read as requirements text.
        return Ok(Clarification {
            requirements: vec![summarize(answer.trim(), 200)],
            ..Default::default()
        });
    };
    Ok(Clarification {
        requirements: strings(&v, "requirements"),
        questions: strings(&v, "questions"),
        assumptions: strings(&v, "assumptions"),
    })
}

impl Ctx<'_> {
    /// Runs the clarification phase unless the journal says it ended, asking the person at
    /// the terminal (when there is one) the clarifier's questions.
    pub(super) fn clarify(&self) -> Result<(), StartError> {
        if self
            .all()?
            .iter()
            .any(|e| matches!(e.event, WorkflowEvent::Clarified { .. }))
        {
            return Ok(());
        }
        let project = project_context(&self.repo.toplevel);
        let transcript =
            orchestra_sys::exec::RunDir::new(&self.repo.common_dir, &self.run).clarifier_log();
        let c = clarify(
            &self.models,
            &self.req.objective,
            &project,
            Some((&self.repo.toplevel, &transcript)),
            self.stop,
        )
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

    /// Returns the journaled requirements, assumptions and answers, as planner notes.
    pub(super) fn notes(&self) -> Result<Vec<String>, StartError> {
        let entries = self.all()?;
        let noted = entries.iter().filter_map(|e| match &e.event {
            WorkflowEvent::Noted { note } => Some(format!("from the person running this: {note}")),
            WorkflowEvent::PlanSentBack { feedback } => Some(format!(
                "from the person running this, sending an earlier plan back: {feedback}"
            )),
            _ => None,
        });
        let mut notes: Vec<String> = noted.collect();
        let clarified: Vec<String> = entries
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
            .unwrap_or_default();
        notes.splice(0..0, clarified);
        Ok(notes)
    }
}

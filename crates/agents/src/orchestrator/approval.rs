//! The approval phase of `start`: the valid plan is approved by `--yes`, or shown to the
//! person at the terminal (or on the web view), who approves, edits (the edit is validated
//! again), sends it back to the planner with feedback, or rejects it.

use super::driver::{Approval, Ctx, StartError};
use super::planning;
use super::start_journal::WorkflowEvent;
use super::workflow::WorkflowState as S;
use orchestra_core::forecast::{self, PlanForecast};
use orchestra_core::plan::Plan;

/// What became of the plan waiting for approval.
pub(super) enum Decision {
    Approved,
    Rejected,
    /// Sent back to the planner with the person's feedback (journaled as `PlanSentBack`).
    SentBack,
    /// Nobody can decide now (no terminal): the run stops and says how to approve.
    Nobody,
}

impl Ctx<'_> {
    /// Decides on the valid plan: a decision journaled since the run began waiting (by the
    /// web view, or before a crash) stands; otherwise `--yes` approves, or the person does.
    pub(super) fn approve(&self) -> Result<Decision, StartError> {
        let waiting = self.since_entering(S::AwaitingApproval)?;
        for e in waiting.iter().rev() {
            match e.event {
                WorkflowEvent::PlanApproved { .. } => return Ok(Decision::Approved),
                WorkflowEvent::PlanSentBack { .. } => return Ok(Decision::SentBack),
                _ => {}
            }
        }
        let Some(plan) = self.valid_plan()? else {
            return Ok(Decision::Rejected);
        };
        let mut plan = self.as_it_runs(&plan)?;
        let how = if self.settings.yes {
            "flag"
        } else if !self.ui.interactive() {
            return Ok(Decision::Nobody);
        } else {
            let forecast = self.forecast(&plan);
            self.ui
                .progress(&overview(&plan, &self.plan_findings()?, forecast.as_ref()));
            let mut problems = Vec::new();
            let mut edited = false;
            loop {
                match self.ui.approve(&plan, &problems) {
                    Approval::Approve if problems.is_empty() => break,
                    Approval::Approve => {}
                    Approval::Reject => return Ok(Decision::Rejected),
                    Approval::Revise(feedback) if !feedback.trim().is_empty() => {
                        self.j()?.append(&WorkflowEvent::PlanSentBack {
                            feedback: feedback.trim().to_string(),
                        })?;
                        return Ok(Decision::SentBack);
                    }
                    Approval::Revise(_) => continue,
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
        Ok(Decision::Approved)
    }

    /// Returns the journaled approved plan, if any.
    pub(super) fn approved_plan(&self) -> Result<Option<String>, StartError> {
        Ok(self.all()?.iter().rev().find_map(|e| match &e.event {
            WorkflowEvent::PlanApproved { toml, .. } => Some(toml.clone()),
            _ => None,
        }))
    }
}

impl Ctx<'_> {
    /// Returns the forecast of the plan `toml` from the repository's run history, or `None`
    /// when the plan does not parse or the store cannot be read.
    pub(super) fn forecast(&self, toml: &str) -> Option<PlanForecast> {
        let plan = Plan::from_toml_str(toml, "plan.toml").ok()?;
        let by_cli = self.settings.worker_cmd.is_some() || self.settings.agent.is_some();
        let model_of = |role: &str| {
            // A worker command or an agent CLI names no model we know: compare by role.
            (!by_cli).then(|| self.models.model_label(role)).flatten()
        };
        let config = &self.models.config;
        let parallel = self.settings.max_parallel;
        plan_forecast(&self.repo.common_dir, &plan, config, &model_of, parallel)
    }

    /// Returns the findings of the last plan review, if any.
    pub(super) fn plan_findings(&self) -> Result<Vec<String>, StartError> {
        Ok(self
            .all()?
            .iter()
            .rev()
            .find_map(|e| match &e.event {
                WorkflowEvent::PlanReviewed { findings, .. } => Some(findings.clone()),
                _ => None,
            })
            .unwrap_or_default())
    }
}

/// Returns the forecast of `plan` from the run store under `common_dir`, priced by `config`'s
/// `[prices]`; `model_of` names the model a role answers with (if known) and `max_parallel`
/// is the run's cap on work at once when it sets one (else the plan's). `None` when the store
/// cannot be read. Every front end's forecast (approval, `plan check`, `run`, the web view)
/// is this one computation.
pub fn plan_forecast(
    common_dir: &std::path::Path,
    plan: &Plan,
    config: &orchestra_core::config::RepoConfig,
    model_of: &dyn Fn(&str) -> Option<String>,
    max_parallel: Option<usize>,
) -> Option<PlanForecast> {
    let prices = |m: &str| config.price(m);
    let samples = match orchestra_core::store::Store::open_existing(common_dir) {
        Ok(Some(store)) => forecast::history(&store, &prices).ok()?,
        Ok(None) => Vec::new(),
        Err(_) => return None,
    };
    Some(forecast::forecast(
        plan,
        &samples,
        model_of,
        &prices,
        max_parallel,
    ))
}

/// Returns the forecast of the plan `toml` waiting for approval in the `start` run `run`, as
/// its approval shows it (for front ends other than the driving process, such as the web
/// view); `None` when the plan does not parse or the store cannot be read.
pub fn approval_forecast(
    repo: &orchestra_git::git::RepoInfo,
    config: &orchestra_core::config::RepoConfig,
    run: &str,
    toml: &str,
) -> Option<PlanForecast> {
    let entries = super::StartJournal::open(&repo.common_dir, run)
        .and_then(|j| j.entries())
        .ok()?;
    let risky = super::risky::reviewed_risky(&entries);
    let toml = super::risky::as_it_runs(toml, &risky, config);
    let plan = Plan::from_toml_str(&toml, "plan.toml").ok()?;
    let settings = entries.into_iter().find_map(|e| match e.event {
        WorkflowEvent::Started { settings, .. } => Some(settings),
        _ => None,
    })?;
    let by_cli = settings.worker_cmd.is_some() || settings.agent.is_some();
    let roles = crate::agent::Roles::load_with_trust(&repo.toplevel, config.trusted).ok()?;
    let model_of = |role: &str| {
        (!by_cli)
            .then(|| super::models::model_label(config, &roles, role))
            .flatten()
    };
    plan_forecast(
        &repo.common_dir,
        &plan,
        config,
        &model_of,
        settings.max_parallel,
    )
}

/// Returns the plan as a person reads it before approving: each packet with its role, files,
/// dependencies, checks and `forecast`, then the plan's total forecast and the plan reviewer's
/// findings. A plan that does not parse is shown as its text.
pub fn overview(toml: &str, findings: &[String], forecast: Option<&PlanForecast>) -> String {
    let Ok(plan) = Plan::from_toml_str(toml, "plan.toml") else {
        return toml.to_string();
    };
    let mut out = format!(
        "Plan: {} packet{} for \"{}\"\n",
        plan.packets.len(),
        if plan.packets.len() == 1 { "" } else { "s" },
        plan.objective.trim()
    );
    for p in &plan.packets {
        let role = if p.role.is_empty() { "coder" } else { &p.role };
        out.push_str(&format!("\n  {} — {} ({role})\n", p.id, p.title));
        out.push_str(&format!("      files: {}\n", p.files.join(", ")));
        if !p.depends_on.is_empty() {
            out.push_str(&format!("      after: {}\n", p.depends_on.join(", ")));
        }
        if !p.validation.is_empty() {
            out.push_str(&format!("      checks: {}\n", p.validation.join("; ")));
        }
        match (p.candidates(), p.risky) {
            (1, false) => {}
            (1, true) => out.push_str("      risky (one candidate)\n"),
            (n, risky) => out.push_str(&format!(
                "      candidates: best of {n}{}\n",
                if risky { " (risky)" } else { "" }
            )),
        }
        if let Some(f) = forecast.and_then(|f| f.packet(&p.id)) {
            out.push_str(&format!("      forecast: {}\n", f.text()));
        }
    }
    if let Some(f) = forecast {
        out.push_str(&format!("\nForecast: {}\n", f.text()));
    }
    if findings.is_empty() {
        out.push_str("\nPlan review: no findings\n");
    } else {
        out.push_str("\nPlan review findings:\n");
        for f in findings {
            out.push_str(&format!("  - {f}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::overview;

    #[test]
    fn the_overview_lists_packets_and_the_findings() {
        let toml = "objective = \"o\"\n\n[[packet]]\nid = \"p1\"\ntitle = \"One\"\ndescription = \"d\"\nfiles = [\"a.py\"]\nvalidation = [\"pytest\"]\n\n[[packet]]\nid = \"p2\"\ntitle = \"Two\"\nrole = \"tester\"\ndescription = \"d\"\nfiles = [\"tests/a.py\"]\ndepends_on = [\"p1\"]\n";
        let o = overview(toml, &["p2 misses tests/conftest.py".into()], None);
        assert!(o.starts_with("Plan: 2 packets for \"o\""), "{o}");
        assert!(
            o.contains("p1 — One (coder)\n      files: a.py\n      checks: pytest"),
            "{o}"
        );
        assert!(
            o.contains("p2 — Two (tester)\n      files: tests/a.py\n      after: p1"),
            "{o}"
        );
        assert!(
            o.contains("Plan review findings:\n  - p2 misses tests/conftest.py"),
            "{o}"
        );
        assert_eq!(overview("not toml [", &[], None), "not toml [");
    }
}

//! The phases after integration, as [`Ctx`] methods: the docs role documents and the tester
//! role tests the integrated change, each as a one-packet plan on the integrated commit, run
//! by the engine and integrated by the merge coordinator like the approved plan's packets.
//!
//! Each phase's engine run is derived from the objective and the commit the phase started
//! from (journaled as the `Merged` event before it), so a resumed phase finds its run again.

use super::driver::{Ctx, StartError};
use super::start_journal::WorkflowEvent;
use super::workflow::WorkflowState as S;
use crate::merge::{self, MergeOptions};
use crate::plan::Plan;
use crate::store::Event;

impl Ctx<'_> {
    /// Returns the state that follows `state` once it is done, given the run's settings.
    pub(super) fn after(&self, state: S) -> S {
        match state {
            S::Integrating if self.settings.docs => S::Documenting,
            S::Integrating | S::Documenting if self.settings.tests => S::Testing,
            _ => S::Completed,
        }
    }

    /// Runs the documenting or testing phase; returns the reason to move on, or None when
    /// the run was stopped.
    pub(super) fn finishing(&self, phase: S) -> Result<Option<String>, StartError> {
        let base = self.phase_base(phase)?;
        let (toml, label) = self.phase_plan(phase, &base);
        let plan = Plan::from_toml_str(&toml, "plan.toml").map_err(super::execute::plan_invalid)?;
        let run = crate::names::run_id(&plan.objective, &base);
        let known = self
            .all()?
            .iter()
            .any(|e| matches!(&e.event, WorkflowEvent::PhaseRun { run: r, .. } if *r == run));
        if !known {
            self.j()?.append(&WorkflowEvent::PhaseRun { phase, run })?;
        }
        let Some((id, any_ok)) = self.run_packets(&plan, &toml)? else {
            return Ok(None);
        };
        if !any_ok {
            return Ok(Some(format!(
                "the {label} packet of run {id} did not succeed; its work stays on its branch"
            )));
        }
        let opts = MergeOptions {
            target: self.req.target.clone(),
            timeout: self.req.timeout,
            keep_worktrees: self.models.config.keep_worktrees(),
            ..Default::default()
        };
        let on_event = |run: &str, e: &Event| {
            self.ui.engine_event(run, e);
            super::fault::step();
        };
        let report = merge::integrate(self.repo, &id, &opts, &on_event)?;
        let integrated = report.sent_back.is_empty();
        self.j()?.append(&WorkflowEvent::Merged {
            report: serde_json::to_value(&report).unwrap_or_default(),
        })?;
        Ok(Some(if integrated {
            format!("{label} integrated (run {id})")
        } else {
            format!(
                "the {label} packet of run {id} could not be integrated; it stays on its branch"
            )
        }))
    }

    /// Returns the commit the phase works on: the one the last integration before entering
    /// `phase` produced, else the run's base.
    fn phase_base(&self, phase: S) -> Result<String, StartError> {
        let entries = self.all()?;
        let entered = entries
            .iter()
            .rposition(|e| matches!(e.event, WorkflowEvent::Transition { to, .. } if to == phase))
            .unwrap_or(entries.len());
        Ok(entries[..entered]
            .iter()
            .rev()
            .find_map(|e| match &e.event {
                WorkflowEvent::Merged { report } => report
                    .get("commit")
                    .and_then(|c| c.as_str())
                    .map(str::to_string),
                _ => None,
            })
            .unwrap_or_else(|| self.base.clone()))
    }

    /// Returns the engine runs of the phases after integration, in the order they ran.
    pub(super) fn phase_runs(&self) -> Result<Vec<String>, StartError> {
        Ok(self
            .all()?
            .iter()
            .filter_map(|e| match &e.event {
                WorkflowEvent::PhaseRun { run, .. } => Some(run.clone()),
                _ => None,
            })
            .collect())
    }

    /// Returns the one-packet plan of `phase` on `base`, and the phase's name.
    fn phase_plan(&self, phase: S, base: &str) -> (String, &'static str) {
        let (id, role, title, files, task, label) = match phase {
            S::Documenting => (
                "docs",
                "docs",
                "Document the change",
                r#"["docs/**", "*.md", "**/*.md"]"#,
                "Update the documentation so it describes the change: what it adds, how to use it, and any changed behaviour.",
                "documentation",
            ),
            _ => (
                "tests",
                "tester",
                "Test the change",
                r#"["tests/**", "test/**", "**/*test*", "**/*spec*"]"#,
                "Add or extend tests that check the change's behaviour, including edge cases, and make sure they pass.",
                "test",
            ),
        };
        let description = format!(
            "The objective \"{}\" is implemented and integrated; `git diff {}..HEAD` shows the change. {task}",
            self.req.objective.trim(),
            self.base
        );
        let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
        let toml = format!(
            "objective = {}\nbase = {}\nmax_parallel = 1\n\n[[packet]]\nid = {}\ntitle = {}\nrole = {}\ndescription = {}\nfiles = {files}\n",
            q(&format!("{} ({label})", self.req.objective.trim())),
            q(base),
            q(id),
            q(title),
            q(role),
            q(&description),
        );
        (toml, label)
    }
}

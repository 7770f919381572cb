//! The phases after integration, as [`Ctx`] methods: the docs role documents and the tester
//! role tests the integrated change, each as a one-packet plan on the integrated commit, run
//! by the engine and integrated by the merge coordinator like the approved plan's packets.
//!
//! Each phase's engine run is derived from the objective and the commit the phase started
//! from (journaled as the `Merged` event before it), so a resumed phase finds its run again.

use super::driver::{Ctx, StartError};
use super::start_journal::WorkflowEvent;
use super::workflow::WorkflowState as S;
use orchestra_core::merge::{self, MergeOptions};
use orchestra_core::plan::Plan;
use orchestra_core::store::{Event, PacketState, Store};

/// Where tests live, as the tester's scope (and part of a test fix's).
const TEST_FILES: [&str; 4] = ["tests/**", "test/**", "**/*test*", "**/*spec*"];

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
    ///
    /// When the tests the tester wrote fail on the integrated change (its validation, the
    /// project's test command, still fails after its fix rounds), a fix packet starts from the
    /// tests' commit with the failure as its task and the plan's files as its scope; once it
    /// makes them pass, the tests and the fix are integrated together.
    pub(super) fn finishing(&self, phase: S) -> Result<Option<String>, StartError> {
        let base = self.phase_base(phase)?;
        // The project's test command, read once: it validates the tests packet and its fix.
        let test = match phase {
            S::Testing => self.test_command(),
            _ => None,
        };
        let (toml, label) = self.phase_plan(phase, &base, test.as_deref());
        let Some((mut id, any_ok)) = self.phase_packets(phase, &toml, &base)? else {
            return Ok(None);
        };
        if !any_ok {
            let fix = match phase {
                S::Testing => self.tests_fix(&id, test.as_deref())?,
                _ => None,
            };
            let Some((fix_toml, fix_base)) = fix else {
                return Ok(Some(format!(
                    "the {label} packet of run {id} did not succeed; its work stays on its branch"
                )));
            };
            self.ui.progress(&format!(
                "{}: the new tests fail on the change; a fix packet makes them pass",
                self.run
            ));
            let Some((fix_id, fixed)) = self.phase_packets(phase, &fix_toml, &fix_base)? else {
                return Ok(None);
            };
            if !fixed {
                return Ok(Some(format!(
                    "the new tests of run {id} fail and the fix packet of run {fix_id} did not make them pass; the work stays on their branches"
                )));
            }
            id = fix_id;
        }
        let opts = MergeOptions {
            target: self.req.target.clone(),
            timeout: self.req.timeout,
            ..MergeOptions::from_config(
                &self.models.config,
                crate::agent::sandbox::command_sandboxes(
                    &self.repo.common_dir,
                    &self.models.config.sandbox,
                ),
            )
        };
        let on_event = |run: &str, e: &Event| {
            self.ui.engine_event(run, e);
            super::fault::step();
        };
        let report = merge::integrate_until(self.repo, &id, &opts, (None, self.stop), &on_event)?;
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

    /// Runs the one-packet plan `toml` of `phase` on `base` through the engine, journaling its
    /// run first so a resumed phase finds it again; returns the run and whether it succeeded.
    fn phase_packets(
        &self,
        phase: S,
        toml: &str,
        base: &str,
    ) -> Result<Option<(String, bool)>, StartError> {
        let plan = Plan::from_toml_str(toml, "plan.toml").map_err(super::execute::plan_invalid)?;
        let run = orchestra_sys::names::run_id(&plan.objective, base);
        let known = self
            .all()?
            .iter()
            .any(|e| matches!(&e.event, WorkflowEvent::PhaseRun { run: r, .. } if *r == run));
        if !known {
            self.j()?.append(&WorkflowEvent::PhaseRun { phase, run })?;
        }
        self.run_packets(&plan, toml)
    }

    /// Returns the fix packet's plan and base when the tests packet of `tests_run` failed on
    /// its validation with a commit to start from, else None.
    fn tests_fix(
        &self,
        tests_run: &str,
        test: Option<&str>,
    ) -> Result<Option<(String, String)>, StartError> {
        let store = Store::open(&self.repo.common_dir)?;
        let Some(rec) = store
            .packets(tests_run)?
            .into_iter()
            .find(|p| p.id == "tests")
        else {
            return Ok(None);
        };
        let (Some(commit), Some(reason), Some(test)) = (rec.commit, rec.reason, test) else {
            return Ok(None);
        };
        if rec.state != PacketState::Failed || !reason.contains("validation `") {
            return Ok(None);
        }
        let mut files: Vec<String> = match self.approved_plan()? {
            Some(t) => Plan::from_toml_str(&t, "plan.toml")
                .map_err(super::execute::plan_invalid)?
                .packets
                .into_iter()
                .flat_map(|p| p.files)
                .collect(),
            None => Vec::new(),
        };
        files.extend(TEST_FILES.iter().map(|f| f.to_string()));
        // Each glob once, in the plan's order.
        let mut seen = std::collections::HashSet::new();
        files.retain(|f| seen.insert(f.clone()));
        let task = format!(
            "The objective \"{}\" is implemented and integrated, and the tester's new tests (the commit this branch starts from) fail on it:\n\n{}\n\nFix the implementation so `{test}` passes. Change a test only where the test itself is wrong, and say why in your summary.",
            self.req.objective.trim(),
            reason.trim()
        );
        let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
        let toml = format!(
            "objective = {}\nbase = {}\nmax_parallel = 1\n\n[[packet]]\nid = \"fix\"\ntitle = \"Make the new tests pass (they land with this fix)\"\nrole = \"coder\"\ndescription = {}\nfiles = {}\nvalidation = [{}]\n",
            q(&format!("{} (test fix)", self.req.objective.trim())),
            q(&commit),
            q(&task),
            serde_json::to_string(&files).unwrap_or_default(),
            q(test),
        );
        Ok(Some((toml, commit)))
    }

    /// Returns the project's test command as its files declare it, if any.
    fn test_command(&self) -> Option<String> {
        let files = orchestra_git::git::Git::new(&self.repo.toplevel)
            .tracked_files()
            .ok()?;
        orchestra_core::project::detect::detect(&self.repo.toplevel, &files)
            .commands
            .into_iter()
            .find(|c| c.purpose == orchestra_core::project::detect::Purpose::Test)
            .map(|c| c.command)
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
    fn phase_plan(&self, phase: S, base: &str, test: Option<&str>) -> (String, &'static str) {
        let tests = serde_json::to_string(&TEST_FILES).unwrap_or_default();
        let (id, role, title, files, task, label) = match phase {
            S::Documenting => (
                "docs",
                "docs",
                "Document the change",
                r#"["docs/**", "*.md", "**/*.md"]"#.to_string(),
                "Update the documentation so it describes the change: what it adds, how to use it, and any changed behaviour.",
                "documentation",
            ),
            _ => (
                "tests",
                "tester",
                "Test the change",
                tests,
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
        let mut toml = format!(
            "objective = {}\nbase = {}\nmax_parallel = 1\n\n[[packet]]\nid = {}\ntitle = {}\nrole = {}\ndescription = {}\nfiles = {files}\n",
            q(&format!("{} ({label})", self.req.objective.trim())),
            q(base),
            q(id),
            q(title),
            q(role),
            q(&description),
        );
        // The tests must pass: the project's own test command checks them.
        if let Some(test) = test {
            toml.push_str(&format!("validation = [{}]\n", q(test)));
        }
        (toml, label)
    }
}

//! The layout of one run's directory, `<common-dir>/orchestra/runs/<run>`: every file a run
//! keeps there is named here and nowhere else, as `names.rs` does for refs and branches.
//!
//! Callers ask for a file by what it is (`report_md`, `driver_lock`, `planner_log(2)`), so a
//! renamed file changes in one place and two modules cannot disagree on a name. `tests/layout`
//! checks that no other module joins these names onto a run directory by hand.

use std::path::{Path, PathBuf};

/// The directory of one run's files: logs, locks, reports, per-packet logs and saved leftovers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunDir {
    path: PathBuf,
}

impl RunDir {
    /// Returns the directory of run `run` in the repository whose common dir is `common_dir`.
    pub fn new(common_dir: &Path, run: &str) -> Self {
        Self {
            path: super::run_dir(common_dir, run),
        }
    }

    /// Returns the directory itself; the engine's run lock lives in it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Returns the directory of the lock held by the process driving a `start` run's workflow.
    pub fn driver_lock(&self) -> PathBuf {
        self.path.join("driver")
    }

    /// Returns the file older versions kept the `--executor` chosen for the run in (now a
    /// record in the store; read once to move it there).
    pub fn executor_choice(&self) -> PathBuf {
        self.path.join("executor")
    }

    /// Returns the file older versions kept the `--agent` CLI chosen for the run in (now a
    /// record in the store; read once to move it there).
    pub fn agent_cli_choice(&self) -> PathBuf {
        self.path.join("agent-cli")
    }

    /// Returns the run's final report in Markdown.
    pub fn report_md(&self) -> PathBuf {
        self.path.join("report.md")
    }

    /// Returns the run's final report in JSON.
    pub fn report_json(&self) -> PathBuf {
        self.path.join("report.json")
    }

    /// Returns the file keeping the planner's last proposal when every round was rejected.
    pub fn plan_rejected(&self) -> PathBuf {
        self.path.join("plan-rejected.toml")
    }

    /// Returns the file holding the hash of the plan the run was started with, checked on every
    /// resume so a plan edited in the store is noticed.
    pub fn plan_hash(&self) -> PathBuf {
        self.path.join("plan.sha256")
    }

    /// Returns the directory of the pull request descriptions `pr` writes.
    pub fn pr_dir(&self) -> PathBuf {
        self.path.join("pr")
    }

    /// Returns the directory of the merge coordinator's logs.
    pub fn merge_logs(&self) -> PathBuf {
        self.path.join("merge")
    }

    /// Returns the directory of the artifacts (plan, diffs, merge report) the orchestrator
    /// model reads through its tools when it advises.
    pub fn artifacts(&self) -> PathBuf {
        self.path.join("artifacts")
    }

    /// Returns the directory of the run-level transcripts (clarifier, planner, orchestrator).
    pub fn logs(&self) -> PathBuf {
        self.path.join("logs")
    }

    /// Returns the clarifier's transcript.
    pub fn clarifier_log(&self) -> PathBuf {
        self.logs().join("clarifier.log")
    }

    /// Returns the planner's transcript of planning round `round` (from 1).
    pub fn planner_log(&self, round: u32) -> PathBuf {
        self.logs().join(format!("planner-{round}.log"))
    }

    /// Returns the plan reviewer's transcript of review round `round` (from 1).
    pub fn plan_review_log(&self, round: u32) -> PathBuf {
        self.logs().join(format!("plan-review-{round}.log"))
    }

    /// Returns the orchestrator model's transcript of its closing advice.
    pub fn orchestrator_log(&self) -> PathBuf {
        self.logs().join("orchestrator.log")
    }

    /// Returns the directory of the agent resolving the merge conflicts of `packet`.
    pub fn resolve_logs(&self, packet: &str) -> PathBuf {
        self.logs().join(format!("{packet}-resolve"))
    }

    /// Returns the output of a command the web view started for the run (`resume`, `retry`).
    pub fn ui_log(&self, verb: &str) -> PathBuf {
        self.path.join(format!("ui-{verb}.log"))
    }

    /// Returns the directory of packet `packet`'s files: worker, validation and review logs.
    pub fn packet(&self, packet: &str) -> PathBuf {
        self.path.join(packet)
    }

    /// Returns the packet file handed to `packet`'s worker and validation commands.
    pub fn packet_file(&self, packet: &str) -> PathBuf {
        self.packet(packet).join("packet.json")
    }

    /// Returns the directory where `gc` and cleanup save the ignored files of `packet`'s
    /// worktree before removing it.
    pub fn saved(&self, packet: &str) -> PathBuf {
        self.packet(packet).join("saved")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_sit_where_earlier_versions_wrote_them() {
        let d = RunDir::new(Path::new("/r/.git"), "run-1");
        let root = Path::new("/r/.git/orchestra/runs/run-1");
        assert_eq!(d.path(), root);
        assert_eq!(d.driver_lock(), root.join("driver"));
        assert_eq!(d.report_md(), root.join("report.md"));
        assert_eq!(d.planner_log(2), root.join("logs/planner-2.log"));
        assert_eq!(d.resolve_logs("p1"), root.join("logs/p1-resolve"));
        assert_eq!(d.saved("p1"), root.join("p1/saved"));
    }
}

//! Packet reviews by an agent CLI (`[roles.reviewer] agent = "<cli>"`): the CLI reads the
//! packet's worktree at the reviewed commit — sandboxed like a CLI worker, our navigation as
//! its MCP server — and ends its answer with the JSON findings our model reviewer gives; they
//! are held to the same rules (its verdict counts as given, a large diff is reviewed in parts,
//! each framed as untrusted data). What its
//! commands change in the worktree is saved and undone, as after a model review.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::adapter::{self, Adapter};
use super::{DEFAULT_HEARTBEAT, DEFAULT_STALL, Launch};
use crate::agent::review_agent::{Tasks, combined, restored, review_tasks};
use orchestra_core::config::RepoConfig;
use orchestra_core::engine::WorkerJob;
use orchestra_core::gate::{GateError, ReviewInput, ReviewOutcome, Reviewer};

/// Longest one review by a CLI may take.
const REVIEW_TIMEOUT: Duration = Duration::from_secs(1800);

/// Reviews packets with an agent CLI.
pub struct CliReviewer {
    config: RepoConfig,
    adapter: Adapter,
    /// The name in verdicts: `reviewer:cli:<name>`.
    name: String,
}

impl CliReviewer {
    /// Returns the reviewer of `[roles.reviewer] agent`, `None` when none is configured, or
    /// an error for a CLI that is not known.
    pub fn configured(config: &RepoConfig) -> Result<Option<CliReviewer>, adapter::AdapterError> {
        let Some(name) = config
            .roles
            .get(crate::agent::REVIEWER_ROLE)
            .and_then(|r| r.agent.as_deref())
        else {
            return Ok(None);
        };
        let adapter = adapter::adapter(name, config.agents.cli.get(name))?;
        Ok(Some(CliReviewer {
            config: config.clone(),
            adapter,
            name: format!("{}:cli:{name}", crate::agent::REVIEWER_ROLE),
        }))
    }

    fn fail(&self, message: impl Into<String>) -> GateError {
        GateError::Reviewer {
            reviewer: self.name.clone(),
            message: message.into(),
        }
    }

    /// Runs the CLI once in `dir` with `prompt` and returns the text of its answer.
    fn ask(
        &self,
        input: &ReviewInput<'_>,
        dir: &std::path::Path,
        prompt: String,
    ) -> Result<String, GateError> {
        let packet = input
            .packet
            .ok_or_else(|| self.fail("an agent CLI reviews packets only"))?;
        let logs = orchestra_sys::exec::RunDir::new(&input.repo.common_dir, &packet.run)
            .packet(&packet.packet.id);
        let tmp = logs.join(format!("review-{}-tmp", self.adapter.name));
        let log = logs.join(format!("review-{}.log", self.adapter.name));
        fs_err::create_dir_all(&tmp).map_err(|e| self.fail(e.to_string()))?;
        let stop = AtomicBool::new(false);
        let job = WorkerJob {
            run: &packet.run,
            objective: "",
            packet: &packet.packet,
            worktree: dir,
            common_dir: &input.repo.common_dir,
            log: &log,
            stop: &stop,
            timeout: REVIEW_TIMEOUT,
            journal: &|_| {},
            fixes: None,
            round: 0,
            dependencies: "",
            candidate: None,
        };
        let (out, _, report) = Launch {
            adapter: &self.adapter,
            config: &self.config,
            tmp: &tmp,
            prompt_file: &tmp.join("review-prompt.md"),
            resume: None,
            stall: DEFAULT_STALL,
            heartbeat: DEFAULT_HEARTBEAT,
            limit: None,
        }
        .run(&job, prompt)
        .map_err(|e| self.fail(e))?;
        if !out.outcome.success() {
            return Err(self.fail(format!(
                "{} ended without a review: {}; its output is in {}",
                self.adapter.name,
                report.error.unwrap_or_else(|| "no error reported".into()),
                log.display()
            )));
        }
        Ok(report.messages.join("\n"))
    }
}

impl Reviewer for CliReviewer {
    fn name(&self) -> &str {
        &self.name
    }

    fn review(&self, input: &ReviewInput<'_>) -> Result<ReviewOutcome, GateError> {
        let Some(dir) = input.packet.and_then(|p| p.checkout.as_deref()) else {
            return Err(self.fail(
                "an agent CLI reviews packets in their worktrees (`run`, `agent`, `start`); use the reviewer's model profile for `review`",
            ));
        };
        let tasks = match review_tasks(
            input,
            "There is no `complete` tool here: end your answer with one JSON object and nothing after it:",
        )? {
            Tasks::TooLarge(outcome) => return Ok(outcome),
            Tasks::Parts(tasks) => tasks,
        };
        let reviewed = combined(tasks, |task| {
            let answer = self.ask(input, dir, task)?;
            let findings = crate::agent::parse_findings(&answer).map_err(|e| {
                self.fail(format!(
                    "{} did not end its answer with the JSON asked for: {e}",
                    self.adapter.name
                ))
            })?;
            Ok(ReviewOutcome {
                checks: vec!["cli-review".into()],
                findings,
            })
        });
        restored(dir, input, reviewed, |m| self.fail(m))
    }
}

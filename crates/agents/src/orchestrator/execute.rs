//! The steps from execution on, as [`Ctx`] methods: run the packets through the engine,
//! integrate them (resolving conflicts), and build the report with the orchestrator's bounded
//! view of the run.

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use super::context::{self, Artifact, ContextLimits, OrchestratorView};
use super::driver::{Ctx, StartError};
use super::models::{extract_json, strings};
use super::report::{self, Report};
use super::start_journal::WorkflowEvent;
use super::start_reviewer::StartReviewer;
use super::start_worker::StartWorker;
use super::workflow::WorkflowState as S;
use crate::crew::Crew;
use orchestra_core::engine::{self, Control, RunOptions};
use orchestra_core::merge::{self, MergeOptions};
use orchestra_core::plan::Plan;
use orchestra_core::store::{Event, RunState, Store};
use orchestra_sys::exec::now_ms;

/// Returns the error for a journaled or stored plan that no longer parses: the run fails as
/// one without a valid plan.
pub(super) fn plan_invalid(e: orchestra_core::plan::PlanError) -> StartError {
    StartError::StoredPlanUnreadable(e.to_string())
}

/// Most merge attempts while conflicted packets are being resolved.
pub const MAX_MERGE_ROUNDS: usize = 3;

impl Ctx<'_> {
    /// Returns the `[routing]` router of the run's packets; `None` when routing is off.
    fn router(&self) -> Result<Option<super::routing::Router>, StartError> {
        super::routing::Router::configured(
            &self.models.config,
            &self.repo.toplevel,
            &self.repo.common_dir,
        )
        .map_err(StartError::Routing)
    }

    /// Runs the packets; returns Some(any succeeded) when all are final, None when stopped.
    pub(super) fn execute(&self) -> Result<Option<bool>, StartError> {
        let toml = self.approved_plan()?.ok_or_else(|| {
            StartError::StoredPlanUnreadable("no approved plan in the journal".into())
        })?;
        // A plan approved on the web view is the proposal as the planner wrote it.
        let toml = self.as_it_runs(&toml)?;
        let plan = Plan::from_toml_str(&toml, "plan.toml").map_err(plan_invalid)?;
        Ok(self.run_packets(&plan, &toml)?.map(|(_, any_ok)| any_ok))
    }

    /// Runs `plan` through the engine (resuming its run if it exists); returns its run id
    /// and whether any packet succeeded when all are final, None when stopped.
    pub(super) fn run_packets(
        &self,
        plan: &Plan,
        toml: &str,
    ) -> Result<Option<(String, bool)>, StartError> {
        let opts = RunOptions {
            worker_cmd: self.settings.worker_cmd.clone(),
            max_parallel: self.settings.max_parallel,
            timeout: self.req.timeout,
            worktree_root: self.req.worktree_root.clone(),
            kind: engine::RunKind::Plan,
        };
        // A plan whose packets have candidates (the planner's `attempts`) cannot run elsewhere.
        if let Some(kind) = self.settings.executor
            && kind != orchestra_core::config::ExecutorKind::Local
        {
            engine::remote::check_candidates(plan, kind.as_str())?;
        }
        let prepared = engine::prepare(self.repo, plan, toml, "plan.toml", &opts)?;
        let id = prepared.run.id.clone();
        let mut state = prepared.run.state;
        if !state.is_finished() {
            let on_event = |run: &str, e: &Event| {
                self.ui.engine_event(run, e);
                super::fault::step();
            };
            let mut worker = StartWorker::new(
                self.models.clone(),
                self.req.answer_wait,
                &self.repo.common_dir,
            );
            worker.router = self.router()?;
            worker.standing_answer = self.ui.standing_answer();
            // The engine stops on the user's signal or when a packet finds the budget spent.
            let halt = worker.halt.clone();
            let done = std::sync::atomic::AtomicBool::new(false);
            let crew = Crew::assemble(
                self.repo,
                &self.models.config,
                self.settings.agent.as_deref(),
                self.settings.executor,
                prepared.run.worker_cmd.is_some(),
            )?;
            // `[roles.reviewer] agent` reviews with that agent CLI; else the role's model.
            let reviewer = StartReviewer::new(self.models.clone(), halt.clone());
            let review = crew.review(
                reviewer
                    .as_ref()
                    .map(|r| r as &(dyn orchestra_core::gate::Reviewer + Sync)),
            );
            let ctl = Control {
                stop: &halt,
                on_event: &on_event,
                setup: self.req.setup.clone(),
                sparse: self.models.config.sparse_worktrees(),
                sandboxes: crate::agent::sandbox::command_sandboxes(
                    &self.repo.common_dir,
                    &self.models.config.sandbox,
                ),
                crash_after_events: self.req.crash_after_events,
                review: review.as_ref(),
                fix_rounds: self.req.fix_rounds,
                retries: self.models.config.retries(),
                executor: crew.executor(),
                // A `start` run integrates in its own workflow phase, after the engine.
                integrator: None,
                arms: self.models.config.best_of.arms.clone().unwrap_or_default(),
                tests: self.models.config.eval.test.clone(),
                tester: engine::Tester::from_config(&self.models.config.best_of),
                // A merging `start` integrates after the engine: its packets' worktrees are
                // parked as they succeed, as the integration would park them.
                park_early: (self.settings.merge && !self.models.config.keep_worktrees())
                    .then(|| self.models.config.recycle_worktrees()),
            };
            // Roles with an agent CLI (every one with `--agent`) go to it.
            let workers = crew.workers(Some(&worker));
            let w = workers.worker();
            let result = std::thread::scope(|scope| {
                scope.spawn(|| {
                    while !done.load(Ordering::SeqCst) {
                        if self.stop.load(Ordering::SeqCst) {
                            halt.store(true, Ordering::SeqCst);
                        }
                        std::thread::sleep(std::time::Duration::from_millis(50));
                    }
                });
                let r = engine::execute_with(self.repo, &id, &ctl, w);
                done.store(true, Ordering::SeqCst);
                r
            });
            state = result?.state;
        }
        if state == RunState::Interrupted || self.stop.load(Ordering::SeqCst) {
            return Ok(None);
        }
        let store = Store::open(&self.repo.common_dir)?;
        let packets = store.packets(&id)?;
        let any_ok = packets
            .iter()
            .any(|p| p.state == orchestra_core::store::PacketState::Succeeded);
        Ok(Some((id, any_ok)))
    }

    pub(super) fn integrate(&self) -> Result<(), StartError> {
        let opts = MergeOptions {
            target: self.req.target.clone(),
            timeout: self.req.timeout,
            // Conflicts are resolved below, by the packet's worker, between merge rounds.
            resolve_rounds: 0,
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
        let store = Store::open(&self.repo.common_dir)?;
        let run = store.require_run(&self.run)?;
        let plan = run.plan().map_err(plan_invalid)?;
        let mut worker = StartWorker::new(
            self.models.clone(),
            self.req.answer_wait,
            &self.repo.common_dir,
        );
        // A conflicted packet goes back to the worker routing gave it.
        worker.router = self.router()?;
        worker.standing_answer = self.ui.standing_answer();
        let mut last = None;
        for round in 0..MAX_MERGE_ROUNDS {
            self.stopped()?;
            let until = (None, self.stop);
            let report = merge::integrate_until(self.repo, &self.run, &opts, until, &on_event)?;
            // Conflicts, and validations a clean merge broke, go back to the packet's agent.
            let conflicted: Vec<_> = report
                .sent_back
                .iter()
                .filter(|s| !s.conflicts.is_empty() || s.broken.is_some())
                .cloned()
                .collect();
            last = Some(report.clone());
            if conflicted.is_empty() {
                break;
            }
            let records = store.packets(&self.run)?;
            for s in conflicted {
                let (Some(rec), Some(packet)) = (
                    records.iter().find(|r| r.id == s.packet),
                    plan.packets.iter().find(|p| p.id == s.packet),
                ) else {
                    continue;
                };
                self.announce_sent_back(&s);
                let dir = orchestra_sys::exec::RunDir::new(&self.repo.common_dir, &self.run)
                    .resolve_logs(&s.packet);
                let onto = format!("refs/heads/{}", report.integration);
                let journal = |event| -> Result<(), orchestra_core::store::StoreError> {
                    Store::open(&self.repo.common_dir)?
                        .record(&self.run, &event)
                        .map(|_| ())
                };
                let job = merge::ConflictJob {
                    run: &self.run,
                    objective: &self.req.objective,
                    record: rec,
                    packet,
                    integration: &report.integration,
                    onto: &onto,
                    paths: &s.conflicts,
                    common_dir: &self.repo.common_dir,
                    repo: self.repo,
                    confine: match &self.settings.worker_cmd {
                        Some(_) => opts.sandboxes.validation.as_deref(),
                        None => orchestra_core::engine::Worker::confine(&worker),
                    },
                    // A worker command resolving the conflicts runs in the workers' sandbox.
                    worker_confine: opts.sandboxes.worker.as_deref(),
                    dir: &dir,
                    round: round as u32 + 1,
                    stop: self.stop,
                    timeout: self.req.timeout,
                    revalidate: false,
                    broken: s.broken.as_ref().map(|b| merge::BrokenValidation {
                        command: &b.command,
                        tail: &b.tail,
                    }),
                    journal: &journal,
                };
                // The run's worker resolves: the external command (with ORCHESTRA_FIXES_FILE) or
                // the packet's agent.
                let resolver = match &self.settings.worker_cmd {
                    Some(cmd) => merge::ConflictWorker::Command(cmd),
                    None => merge::ConflictWorker::Agent(&worker),
                };
                match merge::resolve_conflicts(&job, resolver) {
                    Ok(commit) => {
                        self.j()?.append(&WorkflowEvent::ConflictResolved {
                            packet: s.packet.clone(),
                            commit,
                            paths: s.conflicts.clone(),
                        })?;
                    }
                    Err(e) => {
                        // Cut short by a stop request: the run pauses in this phase, and a
                        // resume integrates (and resolves) again.
                        self.stopped()?;
                        self.stopped_at_soft_threshold()?;
                        self.ui.progress(&format!("{}: {e}", self.run));
                    }
                }
            }
        }
        if let Some(report) = last {
            self.j()?.append(&WorkflowEvent::Merged {
                report: serde_json::to_value(&report).unwrap_or_default(),
            })?;
        }
        Ok(())
    }

    /// Returns the interruption of the integration once a stop was requested, so the
    /// workflow pauses in its integrating phase instead of finishing without the packets.
    fn stopped(&self) -> Result<(), StartError> {
        if self.stop.load(Ordering::SeqCst) {
            return Err(StartError::Merge(merge::MergeError::Interrupted {
                run: self.run.clone(),
            }));
        }
        Ok(())
    }

    /// Returns the interruption of the integration once the run reached a soft threshold of
    /// `[budget]` (and no hard limit): the run pauses to ask in this phase, and going on
    /// integrates (and resolves) again.
    fn stopped_at_soft_threshold(&self) -> Result<(), StartError> {
        if self.models.hard_exceeded(None).is_none() && self.models.soft_reached().is_some() {
            return Err(StartError::Merge(merge::MergeError::Interrupted {
                run: self.run.clone(),
            }));
        }
        Ok(())
    }

    /// Says which packet the merge sent back for what, and who fixes it.
    fn announce_sent_back(&self, s: &merge::SentBack) {
        let who = if self.settings.worker_cmd.is_some() {
            "its worker command"
        } else {
            "its agent"
        };
        self.ui.progress(&match &s.broken {
            Some(b) => format!(
                "{}: {} broke `{}` on the merged tree; {who} fixes it",
                self.run, s.packet, b.command
            ),
            None => format!(
                "{}: {} conflicts in {}; {who} resolves them",
                self.run,
                s.packet,
                s.conflicts.join(", ")
            ),
        });
    }

    /// Builds, saves and returns the report (the journaled one when already written).
    ///
    /// `advise` asks the orchestrator model for next steps.
    pub(super) fn report(&self, state: S, advise: bool) -> Result<(Report, PathBuf), StartError> {
        let dir = orchestra_sys::exec::RunDir::new(&self.repo.common_dir, &self.run);
        let path = dir.report_md();
        let store = Store::open(&self.repo.common_dir)?;
        let run = store.run(&self.run)?;
        let mut packets = store.packets(&self.run).unwrap_or_default();
        let mut events = store.events(&self.run, 0).unwrap_or_default();
        // The documenting and testing packets are reported with the plan's.
        for phase in self.phase_runs()? {
            packets.extend(store.packets(&phase).unwrap_or_default());
            events.extend(store.events(&phase, 0).unwrap_or_default());
        }
        // Tests that failed on the change land with the fix packet that made them pass: the
        // fix stands for them.
        let fixed = |p: &orchestra_core::store::PacketRecord| {
            p.id == "fix" && p.state == orchestra_core::store::PacketState::Succeeded
        };
        if packets.iter().any(fixed) {
            packets.retain(|p| {
                p.id != "tests" || p.state != orchestra_core::store::PacketState::Failed
            });
        }
        let plan = run.as_ref().and_then(|r| r.plan().ok());
        let artifacts = self.artifacts(&dir, plan.as_ref(), &packets)?;
        let advice = if advise {
            self.advice(state, &artifacts, &packets)
        } else {
            Vec::new()
        };
        let workflow = self.all()?;
        let price = |m: &str| self.models.price(m);
        // The one accounting every view shows: the report's table agrees with `status`.
        let usage = super::spend::lines(
            &super::spend::model_calls(&self.repo.common_dir, &self.run),
            &price,
        );
        let report = report::build(&report::Sources {
            run: &self.run,
            objective: &self.req.objective,
            state,
            workflow: &workflow,
            packets: &packets,
            events: &events,
            plan: plan.as_ref(),
            usage: &usage,
            price: &price,
            advice,
            now_ms: workflow
                .iter()
                .rev()
                .find(|e| matches!(e.event, WorkflowEvent::Transition { .. }))
                .map_or_else(now_ms, |e| e.ts_ms),
            merge: self.settings.merge,
        });
        let markdown = report::render(&report);
        let io = |source| StartError::Report {
            path: path.clone(),
            source,
        };
        fs_err::create_dir_all(dir.path()).map_err(io)?;
        fs_err::write(&path, &markdown).map_err(io)?;
        let json_path = dir.report_json();
        fs_err::write(
            &json_path,
            serde_json::to_string_pretty(&report).unwrap_or_default(),
        )
        .map_err(io)?;
        if !workflow
            .iter()
            .any(|e| matches!(e.event, WorkflowEvent::ReportSaved { .. }))
        {
            self.j()?.append(&WorkflowEvent::ReportSaved {
                markdown: path.display().to_string(),
                json: json_path.display().to_string(),
            })?;
        }
        Ok((report, path))
    }

    /// Stores the plan, each packet's diff and the merge report once as artifacts.
    pub(super) fn artifacts(
        &self,
        dir: &orchestra_sys::exec::RunDir,
        plan: Option<&Plan>,
        packets: &[orchestra_core::store::PacketRecord],
    ) -> Result<Vec<Artifact>, StartError> {
        let limits = ContextLimits::default();
        let adir = dir.artifacts();
        let mut out = Vec::new();
        let io = |source| StartError::Report {
            path: adir.clone(),
            source,
        };
        if let Some(toml) = self.approved_plan()? {
            out.push(
                context::store_artifact(&adir, "plan", "plan", &toml, limits.summary_tokens)
                    .map_err(io)?,
            );
        }
        let git = self.repo.git();
        for p in packets {
            if let (Some(start), Some(commit)) = (&p.start, &p.commit)
                && let Ok(diff) = git.diff_patch(start, commit)
            {
                out.push(
                    context::store_artifact(&adir, "diff", &p.id, &diff, limits.summary_tokens)
                        .map_err(io)?,
                );
            }
        }
        let _ = plan;
        if let Some(merged) = self.all()?.iter().rev().find_map(|e| match &e.event {
            WorkflowEvent::Merged { report } => Some(report.to_string()),
            _ => None,
        }) {
            out.push(
                context::store_artifact(
                    &adir,
                    "merge",
                    "integration",
                    &merged,
                    limits.summary_tokens,
                )
                .map_err(io)?,
            );
        }
        Ok(out)
    }

    /// Asks the orchestrator role, with a bounded view of the run, for next steps.
    pub(super) fn advice(
        &self,
        state: S,
        artifacts: &[Artifact],
        packets: &[orchestra_core::store::PacketRecord],
    ) -> Vec<String> {
        if self.models.check("orchestrator").is_err() {
            return Vec::new();
        }
        let todo: Vec<String> = packets
            .iter()
            .filter(|p| p.state != orchestra_core::store::PacketState::Succeeded)
            .map(|p| format!("{} is {}", p.id, p.state.as_str()))
            .collect();
        let history: Vec<String> = self
            .all()
            .unwrap_or_default()
            .iter()
            .filter_map(|e| match &e.event {
                WorkflowEvent::Transition { to, reason, .. } => Some(format!("{to}: {reason}")),
                _ => None,
            })
            .collect();
        let prompt = context::orchestrator_prompt(
            &OrchestratorView {
                objective: &self.req.objective,
                state: state.as_str(),
                artifacts,
                todo: &todo,
                history: &history,
            },
            &ContextLimits::default(),
        );
        let guidance = "The run has ended. Reply with only a JSON object {\"next_steps\": [at most five concrete follow-ups for the user]}. Each step is a plain sentence or a command the user can type (e.g. `git orchestra status`), never the name of a tool or a phase.";
        // Like the planner, the orchestrator may read the code (the integrated result in the
        // checkout, the packets' changes through the tools) before it advises.
        let transcript =
            orchestra_sys::exec::RunDir::new(&self.repo.common_dir, &self.run).orchestrator_log();
        match self.models.explore(
            "orchestrator",
            guidance,
            &prompt,
            &self.repo.toplevel,
            &transcript,
            self.stop,
        ) {
            Ok(text) => extract_json(&text)
                .map(|v| strings(&v, "next_steps"))
                .unwrap_or_default(),
            Err(e) => vec![format!("(the orchestrator gave no advice: {e})")],
        }
    }
}

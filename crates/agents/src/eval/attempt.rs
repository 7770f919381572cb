//! Works one attempt: a fresh clean repository at the task's base, the arm's worker through
//! the product's own one-packet flow (a one-packet plan run by the engine and integrated into
//! the attempt's `main` as `run --merge` does), then the hidden tests on the landed tree.

use std::path::Path;
use std::time::Instant;

use orchestra_core::config::RepoConfig;
use orchestra_core::engine::{self, Control, RunKind, RunOptions};
use orchestra_core::eval::attempt::{self as clean, ATTEMPT_BRANCH, AttemptError};
use orchestra_core::eval::{Check, Task};
use orchestra_core::merge::{self, phase::RunIntegrator};
use orchestra_core::plan::Plan;
use orchestra_core::store::{PacketState, RunState, Store};
use orchestra_git::git::RepoInfo;

use super::hidden::{self, Verdict};
use super::journal::SuiteRecord;
use super::{Arm, ArmKind, AttemptResult, EvalRunError, Failure};
use crate::agent::limit::SpendLimit;

/// The id of the one packet an attempt's plan holds.
const PACKET: &str = "task";

/// How an arm's work landed on the attempt's `main`.
#[derive(Debug, Default)]
pub(super) struct Landing {
    /// True if and only if every packet landed with no conflict.
    pub clean: bool,
    /// A packet the merge kept out over a conflict nobody resolved: which, and why.
    pub conflict: Option<String>,
}

/// What one attempt needs besides its task and arm.
pub(super) struct AttemptEnv<'a> {
    pub source: &'a RepoInfo,
    pub config: &'a RepoConfig,
    pub check: &'a Check<'a>,
    /// Where the attempt's repository and worktrees go (removed afterwards).
    pub dir: &'a Path,
    /// What the task needs besides when it comes from a suite file; `None` for a task mined
    /// from `source`'s history.
    pub suite: Option<&'a SuiteRecord>,
}

/// Works `arm` on `task` (`repeat` counts attempts of the same pair from 1) and returns what
/// came of it; the attempt's repository and worktrees are removed afterwards.
pub(super) fn work(
    env: &AttemptEnv<'_>,
    task: &Task,
    arm: &Arm,
    repeat: u32,
) -> Result<AttemptResult, EvalRunError> {
    let started = Instant::now();
    let mut result = AttemptResult {
        task: task.commit.clone(),
        arm: arm.name.clone(),
        repeat,
        resolved: false,
        failure: None,
        detail: None,
        tokens_in: 0,
        tokens_out: 0,
        cost: None,
        wall_ms: 0,
        packets: 0,
        fix_rounds: 0,
        questions: 0,
        model_ms: 0,
    };
    let base = task.base.clone().unwrap_or_default();
    let repo_dir = env.dir.join("repo");
    // A suite task's attempts start from its own repository.
    let suite_source = match env.suite {
        Some(s) => Some(RepoInfo::discover(&s.repo).map_err(|e| AttemptError::Open {
            path: s.repo.clone(),
            message: e.to_string(),
        })?),
        None => None,
    };
    let attempt = clean::prepare(
        suite_source.as_ref().unwrap_or(env.source),
        &base,
        &repo_dir,
    )?;
    let worked = arm_config(env, &attempt, arm).and_then(|config| match arm.kind {
        ArmKind::Start => super::start_arm::work(env, &attempt, task, arm, &config, &mut result),
        _ => run_packet(env, &attempt, task, arm, &config, &base, &mut result)
            .map(|()| Landing::default()),
    });
    super::measure::engine_runs(&attempt, &mut result);
    match worked {
        Err(detail) => {
            result.failure = Some(Failure::Crash);
            result.detail = Some(detail);
        }
        Ok(_) if result.failure.is_some() => {}
        Ok(landing) => match arm.over_budget(result.tokens_in + result.tokens_out, result.cost) {
            Some(over) => {
                result.failure = Some(Failure::Budget);
                result.detail = Some(over);
            }
            None => {
                judge(env, &attempt, task, &base, &mut result);
                conflicts(&landing, &mut result);
            }
        },
    }
    result.wall_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let _ = fs_err::remove_dir_all(env.dir);
    Ok(result)
}

/// Reclasses a failing check by how the work landed: several packets that merged without a
/// conflict into a tree whose tests fail are a semantic conflict; a tree whose tests fail
/// while a packet stayed out over a merge conflict is a merge conflict.
fn conflicts(landing: &Landing, result: &mut AttemptResult) {
    if result.failure != Some(Failure::TestsFail) {
        return;
    }
    if landing.clean && result.packets > 1 {
        result.failure = Some(Failure::SemanticConflict);
    } else if let Some(conflict) = &landing.conflict {
        result.failure = Some(Failure::MergeConflict);
        result.detail = Some(match result.detail.take() {
            Some(tests) => format!("{conflict}; {tests}"),
            None => conflict.clone(),
        });
    }
}

/// Returns the configuration the arm's attempt runs under: the source's with the arm's
/// profile choices applied (`@<profile>` of a `start` arm goes to every role the attempt
/// knows) and no worker retries. The error is a crash's detail.
fn arm_config(env: &AttemptEnv<'_>, attempt: &RepoInfo, arm: &Arm) -> Result<RepoConfig, String> {
    let roles: Vec<String> = match arm.kind {
        ArmKind::Start => {
            crate::agent::Roles::load_with_trust(&attempt.toplevel, env.config.trusted)
                .map_err(|e| e.to_string())?
                .by_name
                .into_keys()
                .collect()
        }
        _ => Vec::new(),
    };
    let mut config = arm.config(env.config, &roles).map_err(|e| e.to_string())?;
    // An attempt is one try: a worker that ran out of the packet's time (or was killed) is
    // not started again, which would multiply the time limit and hide the timeout.
    config.run.retries = Some(0);
    Ok(config)
}

/// Runs the arm's one packet on the attempt repository and integrates it into `main`; sets
/// the failure class when the packet or the merge failed. The error is a crash's detail.
fn run_packet(
    env: &AttemptEnv<'_>,
    attempt: &RepoInfo,
    task: &Task,
    arm: &Arm,
    config: &RepoConfig,
    base: &str,
    result: &mut AttemptResult,
) -> Result<(), String> {
    let (worker_cmd, role, forced) = match &arm.kind {
        ArmKind::Cmd(command) => (Some(command.clone()), "coder", None),
        ArmKind::Agent(role) => (None, role.as_str(), None),
        ArmKind::Cli(name) => (None, "coder", Some(name.as_str())),
        ArmKind::Start => return Err("a `start` arm runs the whole flow, not one packet".into()),
    };
    // Nobody answers an attempt's questions: each gets "decide yourself" (see `unattended`);
    // the arm's `tokens=`/`budget=` stop the agent's model calls (or its agent CLI) once spent.
    let limit = std::sync::Arc::new(SpendLimit::new(
        arm.options.tokens,
        arm.options.budget,
        config.prices.clone(),
    ));
    let agent = match &arm.kind {
        ArmKind::Agent(_) => Some(
            crate::agent::AgentWorker::new(&attempt.toplevel, config.clone())
                .map_err(|e| e.to_string())?
                .with_person(
                    std::sync::Arc::new(super::unattended::NoPerson),
                    &attempt.common_dir,
                )
                .with_limit(limit.clone()),
        ),
        _ => None,
    };
    let crew = crate::crew::Crew::assemble(attempt, config, forced, None, worker_cmd.is_some())
        .map_err(|e| e.to_string())?
        .with_cli_limit(limit);
    // The same gates as `run`: the reviewer role's model reviews the validated packet when it
    // has a profile (`[roles.reviewer] agent` reviews with that CLI instead).
    let mut model = if crate::agent::ModelReviewer::configured(&attempt.toplevel, config) {
        Some(
            crate::agent::ModelReviewer::new(&attempt.toplevel, config.clone())
                .map_err(|e| e.to_string())?,
        )
    } else {
        None
    };
    if let (Some(m), Some(w)) = (model.as_mut(), agent.as_ref()) {
        m.share_gates(w.gates());
    }
    let review = crew.review(
        model
            .as_ref()
            .map(|m| m as &(dyn orchestra_core::gate::Reviewer + Sync)),
    );
    let best_of = arm.options.best_of.map(|n| (n, env.check.command));
    let text = plan_toml(task, base, role, best_of).map_err(|e| e.to_string())?;
    let plan = Plan::from_toml_str(&text, "eval.toml").map_err(|e| e.to_string())?;
    let opts = RunOptions {
        worker_cmd,
        max_parallel: Some(1),
        timeout: env.check.timeout,
        worktree_root: Some(env.dir.join("worktrees")),
        kind: RunKind::Plan,
    };
    let prepared =
        engine::prepare(attempt, &plan, &text, "eval.toml", &opts).map_err(|e| e.to_string())?;
    let run_id = prepared.run.id;
    let sandboxes = crate::agent::sandbox::command_sandboxes(&attempt.common_dir, &config.sandbox);
    let merge_opts = merge::MergeOptions {
        target: Some(ATTEMPT_BRANCH.to_string()),
        timeout: env.check.timeout,
        ..merge::MergeOptions::from_config(config, sandboxes.clone())
    };
    {
        let mut store = Store::open(&attempt.common_dir).map_err(|e| e.to_string())?;
        merge::phase::request(&mut store, &run_id, &merge_opts).map_err(|e| e.to_string())?;
    }
    let integrator = RunIntegrator::new(sandboxes.clone());
    let ctl = Control {
        stop: env.check.stop,
        on_event: &|_, _| {},
        setup: worktree_setup(config, env.suite),
        sparse: None,
        sandboxes,
        crash_after_events: None,
        review: review.as_ref(),
        fix_rounds: config.fix_rounds(),
        retries: config.retries(),
        executor: None,
        integrator: Some(&integrator),
        arms: config.best_of.arms.clone().unwrap_or_default(),
        // The eval's own test command judges the attempt: its candidates must not see it.
        tests: None,
        tester: None,
        park_early: None,
    };
    let workers = crew.workers(agent.as_ref().map(|w| w as &dyn engine::Worker));
    let summary = engine::execute_with(attempt, &run_id, &ctl, workers.worker())
        .map_err(|e| e.to_string())?;
    spend(config, attempt, &run_id, result);
    if summary.state == RunState::Interrupted {
        return Err("the attempt was interrupted".to_string());
    }
    if let Some(Err(e)) = integrator.take() {
        let text = e.to_string();
        result.failure = Some(if text.contains("conflict") {
            Failure::MergeConflict
        } else {
            Failure::GateRejected
        });
        result.detail = Some(text);
    } else if summary.failed > 0 || summary.state != RunState::Completed {
        let reason = failed_reason(attempt, &run_id).unwrap_or_default();
        result.failure = Some(classify(&reason));
        result.detail = Some(reason);
    }
    Ok(())
}

/// Reads the attempt run's tokens, cost and packet count into `result`.
fn spend(config: &RepoConfig, attempt: &RepoInfo, run_id: &str, result: &mut AttemptResult) {
    let price = |model: &str| config.price(model);
    if let Ok(status) = crate::status::of_run(&attempt.common_dir, run_id, &price) {
        result.tokens_in = status.spend.input_tokens;
        result.tokens_out = status.spend.output_tokens;
        result.cost = status.spend.cost;
        result.packets = status.packets.len();
    }
}

/// Returns the reason the attempt run's failed packet gives.
fn failed_reason(attempt: &RepoInfo, run_id: &str) -> Option<String> {
    let store = Store::open(&attempt.common_dir).ok()?;
    store
        .packets(run_id)
        .ok()?
        .into_iter()
        .find(|p| p.state == PacketState::Failed)
        .and_then(|p| p.reason)
}

/// Returns the setup command of an attempt's worktrees: `[worktree] setup`, then the suite
/// task's `setup` (the one the judging checkout runs), the second only once the first
/// succeeded. The engine runs it in each worktree it makes, before the worker starts.
pub(super) fn worktree_setup(config: &RepoConfig, suite: Option<&SuiteRecord>) -> Option<String> {
    let task = suite.and_then(|s| s.setup.clone());
    match (config.worktree.setup.clone(), task) {
        (Some(ours), Some(task)) => Some(format!("{{ {ours}\n}} && {{ {task}\n}}")),
        (ours, task) => ours.or(task),
    }
}

/// Returns true if and only if a failed packet's reason says its worktree's setup command
/// failed (the engine's words), before the worker started.
pub(super) fn setup_failed(reason: &str) -> bool {
    reason.contains("setup command `")
}

/// Returns the failure class a failed packet's reason stands for.
pub(super) fn classify(reason: &str) -> Failure {
    let lower = reason.to_ascii_lowercase();
    if setup_failed(reason) {
        Failure::SetupFailed
    } else if lower.contains("changed no file") {
        Failure::NoChange
    } else if super::unattended::gave_up(&lower) {
        Failure::GaveUp
    } else if lower.contains("timed out") {
        Failure::Timeout
    } else if lower.contains("budget") {
        Failure::Budget
    } else if lower.contains("scope") || lower.contains("validation") || lower.contains("review") {
        Failure::GateRejected
    } else {
        Failure::Crash
    }
}

/// Runs the hidden tests on what landed on the attempt's `main` and sets resolved or the
/// failure class.
pub(super) fn judge(
    env: &AttemptEnv<'_>,
    attempt: &RepoInfo,
    task: &Task,
    base: &str,
    result: &mut AttemptResult,
) {
    let landed = attempt
        .git()
        .resolve_commit(&format!("refs/heads/{ATTEMPT_BRANCH}"))
        .ok()
        .flatten();
    let Some(landed) = landed.filter(|l| l != base) else {
        result.failure = Some(Failure::NoChange);
        return;
    };
    let verdict = match env.suite {
        Some(suite) => hidden::judge_suite(attempt, &landed, &suite.suite_task(task), env.check),
        None => hidden::judge(env.source, attempt, &landed, task, env.check),
    };
    match verdict {
        Verdict::Passed => result.resolved = true,
        Verdict::Failed(detail) => {
            result.failure = Some(Failure::TestsFail);
            result.detail = detail;
        }
        Verdict::Broken { timed_out, detail } => {
            result.failure = Some(if timed_out {
                Failure::Timeout
            } else {
                Failure::Crash
            });
            result.detail = Some(detail);
        }
    }
}

/// Returns the one-packet plan of `task` on `base` for `role`: the objective as the packet's
/// description, the whole tree as its scope, no validation (the hidden tests judge). With
/// `best_of` (n, the project's test command) the packet has n candidates and the test command
/// as its validation: what the candidates are chosen by (the hidden tests are not in the tree).
fn plan_toml(
    task: &Task,
    base: &str,
    role: &str,
    best_of: Option<(u32, &str)>,
) -> Result<String, toml::ser::Error> {
    let mut packet = toml::Table::new();
    packet.insert("id".into(), PACKET.into());
    packet.insert("role".into(), role.into());
    let title = task.objective.lines().next().unwrap_or("the task");
    packet.insert("title".into(), title.into());
    packet.insert("description".into(), task.objective.clone().into());
    packet.insert("files".into(), toml::Value::Array(vec!["**".into()]));
    packet.insert("depends_on".into(), toml::Value::Array(Vec::new()));
    let validation = match best_of {
        Some((n, check)) => {
            packet.insert("attempts".into(), i64::from(n).into());
            vec![check.into()]
        }
        None => Vec::new(),
    };
    packet.insert("validation".into(), toml::Value::Array(validation));
    let mut plan = toml::Table::new();
    plan.insert("objective".into(), task.objective.clone().into());
    plan.insert("base".into(), base.into());
    plan.insert(
        "packet".into(),
        toml::Value::Array(vec![toml::Value::Table(packet)]),
    );
    toml::to_string(&plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failing(packets: usize) -> AttemptResult {
        AttemptResult {
            task: "t".into(),
            arm: "a".into(),
            repeat: 1,
            resolved: false,
            failure: Some(Failure::TestsFail),
            detail: Some("FAIL tests/test_mul.sh".into()),
            tokens_in: 0,
            tokens_out: 0,
            cost: None,
            wall_ms: 0,
            packets,
            fix_rounds: 0,
            questions: 0,
            model_ms: 0,
        }
    }

    #[test]
    fn a_failing_check_is_reclassed_by_how_the_packets_landed() {
        let clean = Landing {
            clean: true,
            conflict: None,
        };
        let kept_out = Landing {
            clean: false,
            conflict: Some("packet b: sent back by the merge: conflicts in x".into()),
        };
        let mut r = failing(2);
        conflicts(&clean, &mut r);
        assert_eq!(r.failure, Some(Failure::SemanticConflict));
        let mut r = failing(1);
        conflicts(&clean, &mut r);
        assert_eq!(r.failure, Some(Failure::TestsFail));
        let mut r = failing(2);
        conflicts(&kept_out, &mut r);
        assert_eq!(r.failure, Some(Failure::MergeConflict));
        assert_eq!(
            r.detail.as_deref(),
            Some("packet b: sent back by the merge: conflicts in x; FAIL tests/test_mul.sh")
        );
        // Only a failing check is reclassed: a resolved attempt stays resolved.
        let mut r = failing(2);
        r.failure = None;
        r.resolved = true;
        conflicts(&kept_out, &mut r);
        assert_eq!(r.failure, None);
    }
}

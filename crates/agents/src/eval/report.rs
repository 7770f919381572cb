//! An eval's report: its results with each arm's statistics (resolved rate with its 95% Wilson
//! interval, pass@k and pass^k over `--repeat`, cost per resolved task, tokens, median and p90
//! wall time, median and total model time, failure classes), as `eval report` prints it and as
//! `results.json` keeps it in git.
//!
//! The statistics come from `orchestra_core::eval::stats`; this module only groups attempts by
//! arm and task. A report is plain data: the same one is rendered as a table, Markdown, HTML
//! and JSON, and read back from git by `eval compare`.

use std::collections::BTreeMap;

use orchestra_core::eval::stats;
use serde::{Deserialize, Serialize};

use super::journal::{EvalState, TaskRecord};
use super::{AttemptResult, Failure};

/// One arm's statistics over its ended attempts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmReport {
    /// The arm's name.
    pub name: String,
    /// The arm's spec, as given after `<name>=`.
    pub spec: String,
    /// Attempts that ended and count: those whose setup failed before the arm started are
    /// left out of this and every statistic below but `failures`.
    pub attempts: usize,
    /// Attempts that resolved their task.
    pub resolved: usize,
    /// Resolved attempts over attempts (0 without attempts).
    pub rate: f64,
    /// The 95% Wilson interval of the rate: `[low, high]`.
    pub interval: [f64; 2],
    /// The k of pass@k and pass^k: the eval's attempts per task and arm (`--repeat`).
    pub k: u32,
    /// The mean over tasks of the unbiased pass@k (some of k attempts resolves the task);
    /// `None` until a task has k ended attempts.
    pub pass_at_k: Option<f64>,
    /// The mean over tasks of the unbiased pass^k (all of k attempts resolve the task);
    /// `None` until a task has k ended attempts.
    pub pass_hat_k: Option<f64>,
    /// Model tokens read by the arm's attempts.
    pub tokens_in: u64,
    /// Model tokens written by the arm's attempts.
    pub tokens_out: u64,
    /// Summed cost; `None` when no attempt had one.
    pub cost: Option<f64>,
    /// Cost over resolved attempts; `None` without a cost or without a resolved attempt.
    pub cost_per_resolved: Option<f64>,
    /// Median wall time of an attempt, in seconds; `None` without attempts.
    pub wall_p50: Option<f64>,
    /// 90th percentile of an attempt's wall time, in seconds; `None` without attempts.
    pub wall_p90: Option<f64>,
    /// Median time an attempt spent waiting on models, in seconds; `None` without attempts.
    #[serde(default)]
    pub model_p50: Option<f64>,
    /// Time the arm's attempts spent waiting on models, summed, in seconds.
    #[serde(default)]
    pub model_total: f64,
    /// How many attempts ended in each failure class (classes with none left out).
    pub failures: BTreeMap<Failure, usize>,
}

/// An eval's results and statistics: what `eval report --json` prints and `results.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalReport {
    /// The eval's id.
    pub eval: String,
    /// The revision range (or suite) its tasks came from.
    pub range: String,
    /// The test command that judged the attempts.
    pub test: String,
    /// Attempts of each arm at each task.
    pub repeat: u32,
    /// Whether every attempt has ended.
    pub finished: bool,
    /// Attempts that ended.
    pub done: usize,
    /// Attempts the eval holds in all: tasks × arms × repeat.
    pub total: usize,
    /// Each arm's statistics, in the order the arms were given.
    pub arms: Vec<ArmReport>,
    /// The eval's valid tasks.
    pub tasks: Vec<TaskRecord>,
    /// Every ended attempt, in task, arm, repeat order.
    pub attempts: Vec<AttemptResult>,
}

impl EvalReport {
    /// Returns the report of what the journal `state` says.
    pub fn of(state: &EvalState) -> EvalReport {
        let repeat = state.repeat.max(1);
        let arms: Vec<(String, String)> = state.arms.iter().map(|a| split_arm(a)).collect();
        let mut attempts = state.results.clone();
        let task_order = |task: &str| state.tasks.iter().position(|t| t.commit == task);
        let arm_order = |arm: &str| arms.iter().position(|(n, _)| n == arm);
        attempts.sort_by_key(|r| (task_order(&r.task), arm_order(&r.arm), r.repeat));
        EvalReport {
            eval: state.id.clone(),
            range: state.range.clone(),
            test: state.test.clone(),
            repeat,
            finished: state.finished,
            done: attempts.len(),
            total: state.tasks.len() * arms.len() * repeat as usize,
            arms: arms
                .iter()
                .map(|(name, spec)| arm_report(name, spec, repeat, &attempts))
                .collect(),
            // The hidden tests stay out of reports, as `eval tasks` leaves them out.
            tasks: state
                .tasks
                .iter()
                .cloned()
                .map(|mut t| {
                    if let Some(suite) = t.suite.as_mut() {
                        suite.test_patch = None;
                    }
                    t
                })
                .collect(),
            attempts,
        }
    }

    /// Returns the ended attempts of `arm` at `task`, in repeat order.
    pub fn cell(&self, task: &str, arm: &str) -> Vec<&AttemptResult> {
        self.attempts
            .iter()
            .filter(|r| r.task == task && r.arm == arm)
            .collect()
    }
}

/// Returns the directory an eval's report files go to by default:
/// `<git-dir>/orchestra/evals/<eval>/report/` (the attempts' repositories live elsewhere,
/// beside the repository; the report stays with the repository's own state).
pub fn default_dir(common_dir: &std::path::Path, eval: &str) -> std::path::PathBuf {
    orchestra_sys::exec::state_dir(common_dir)
        .join("evals")
        .join(eval)
        .join("report")
}

/// Returns the name and spec of an arm given as `<name>=<spec>` (all name without `=`).
fn split_arm(arm: &str) -> (String, String) {
    match arm.split_once('=') {
        Some((name, spec)) => (name.to_string(), spec.to_string()),
        None => (arm.to_string(), String::new()),
    }
}

/// Returns the statistics of the arm `name` over `results`.
fn arm_report(name: &str, spec: &str, k: u32, results: &[AttemptResult]) -> ArmReport {
    let all: Vec<&AttemptResult> = results.iter().filter(|r| r.arm == name).collect();
    // An attempt whose setup failed before the arm started says nothing about the arm.
    let mine: Vec<&AttemptResult> = all.iter().copied().filter(|r| r.counted()).collect();
    let resolved = mine.iter().filter(|r| r.resolved).count();
    // `resolved` counts a subset of `mine`, so the rate cannot fail.
    let rate = stats::resolved_rate(resolved, mine.len()).unwrap_or(stats::Rate {
        rate: 0.0,
        low: 0.0,
        high: 1.0,
    });
    let costs: Vec<f64> = mine.iter().filter_map(|r| r.cost).collect();
    let cost = (!costs.is_empty()).then(|| costs.iter().sum::<f64>());
    let walls: Vec<f64> = mine.iter().map(|r| r.wall_ms as f64 / 1000.0).collect();
    let models: Vec<f64> = mine.iter().map(|r| r.model_ms as f64 / 1000.0).collect();
    let mut failures = BTreeMap::new();
    for f in all.iter().filter_map(|r| r.failure) {
        *failures.entry(f).or_insert(0) += 1;
    }
    let (pass_at_k, pass_hat_k) = pass_k(&mine, k as usize);
    ArmReport {
        name: name.to_string(),
        spec: spec.to_string(),
        attempts: mine.len(),
        resolved,
        rate: rate.rate,
        interval: [rate.low, rate.high],
        k,
        pass_at_k,
        pass_hat_k,
        tokens_in: mine.iter().map(|r| r.tokens_in).sum(),
        tokens_out: mine.iter().map(|r| r.tokens_out).sum(),
        cost,
        cost_per_resolved: cost.and_then(|c| stats::cost_per_resolved(c, resolved)),
        wall_p50: stats::median(&walls),
        wall_p90: stats::p90(&walls),
        model_p50: stats::median(&models),
        model_total: models.iter().sum(),
        failures,
    }
}

/// Returns the mean over tasks of pass@k and of pass^k, counting only the tasks with at least
/// k ended attempts; `None` for both when there is none.
fn pass_k(attempts: &[&AttemptResult], k: usize) -> (Option<f64>, Option<f64>) {
    let mut per_task: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for r in attempts {
        let entry = per_task.entry(r.task.as_str()).or_insert((0, 0));
        entry.0 += 1;
        entry.1 += usize::from(r.resolved);
    }
    let (mut at, mut hat) = (Vec::new(), Vec::new());
    for (n, c) in per_task.values() {
        if let (Ok(a), Ok(h)) = (stats::pass_at_k(*n, *c, k), stats::pass_hat_k(*n, *c, k)) {
            at.push(a);
            hat.push(h);
        }
    }
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    (mean(&at), mean(&hat))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(task: &str, arm: &str, repeat: u32, resolved: bool, wall_ms: u64) -> AttemptResult {
        AttemptResult {
            task: task.to_string(),
            arm: arm.to_string(),
            repeat,
            resolved,
            failure: (!resolved).then_some(Failure::NoChange),
            detail: None,
            tokens_in: 10,
            tokens_out: 5,
            cost: Some(0.5),
            wall_ms,
            packets: 1,
            fix_rounds: 0,
            questions: 0,
            model_ms: 0,
        }
    }

    fn state(results: Vec<AttemptResult>) -> EvalState {
        let task = |c: &str| TaskRecord {
            commit: c.to_string(),
            base: "b".to_string(),
            objective: "o".to_string(),
            tests: Vec::new(),
            suite: None,
        };
        EvalState {
            id: "e".to_string(),
            range: "HEAD~2..HEAD".to_string(),
            test: "true".to_string(),
            timeout_secs: 1,
            repeat: 2,
            arms: vec!["a=cmd:true".to_string(), "b=cmd:false".to_string()],
            tasks: vec![task("t1"), task("t2")],
            results,
            unfinished: 0,
            finished: false,
        }
    }

    #[test]
    fn an_arm_gets_its_rate_interval_pass_k_cost_and_wall_quantiles() {
        let report = EvalReport::of(&state(vec![
            attempt("t2", "a", 1, false, 4000),
            attempt("t1", "a", 1, true, 1000),
            attempt("t1", "a", 2, true, 2000),
            attempt("t2", "a", 2, true, 3000),
            attempt("t1", "b", 1, false, 1000),
        ]));
        assert_eq!(report.total, 8);
        assert_eq!(report.done, 5);
        assert_eq!(report.attempts[0].task, "t1");
        let a = &report.arms[0];
        assert_eq!((a.name.as_str(), a.spec.as_str()), ("a", "cmd:true"));
        assert_eq!((a.attempts, a.resolved), (4, 3));
        let wilson = stats::resolved_rate(3, 4).unwrap();
        assert_eq!(a.interval, [wilson.low, wilson.high]);
        // t1: 2 of 2, t2: 1 of 2 → pass@2 = (1 + 1) / 2, pass^2 = (1 + 0) / 2.
        assert_eq!(a.pass_at_k, Some(1.0));
        assert_eq!(a.pass_hat_k, Some(0.5));
        assert_eq!(a.cost, Some(2.0));
        assert_eq!(a.cost_per_resolved, Some(2.0 / 3.0));
        assert_eq!(a.wall_p50, Some(2.5));
        assert_eq!(a.wall_p90, stats::p90(&[1.0, 2.0, 3.0, 4.0]));
        assert_eq!(a.failures, BTreeMap::from([(Failure::NoChange, 1)]));
        // b has a task with fewer than k attempts only: no pass@k yet.
        let b = &report.arms[1];
        assert_eq!((b.attempts, b.resolved, b.pass_at_k), (1, 0, None));
        assert_eq!(b.cost_per_resolved, None);
    }
}

/// Builders for other modules' tests.
#[cfg(test)]
pub(crate) mod tests_support {
    use super::ArmReport;

    /// Returns an arm named `name` with no attempts.
    pub(crate) fn arm(name: &str) -> ArmReport {
        ArmReport {
            name: name.to_string(),
            spec: "cmd:true".to_string(),
            attempts: 0,
            resolved: 0,
            rate: 0.0,
            interval: [0.0, 1.0],
            k: 1,
            pass_at_k: None,
            pass_hat_k: None,
            tokens_in: 0,
            tokens_out: 0,
            cost: None,
            cost_per_resolved: None,
            wall_p50: None,
            wall_p90: None,
            model_p50: None,
            model_total: 0.0,
            failures: Default::default(),
        }
    }
}

//! Two arms compared task by task: the attempts of arm X in one eval paired with those of arm
//! Y in another (or the same) eval by task and repeat index, then the exact McNemar test on the
//! discordant pairs and a fixed-seed paired bootstrap of the difference in resolved rate.
//!
//! Only pairs both sides ended count: a task one eval never attempted, an attempt still
//! running, or one whose setup failed before its arm started, is left out (and the number left out is reported), so an unfinished eval compares
//! on what it has.

use orchestra_core::eval::stats;
use serde::Serialize;

use super::report::EvalReport;

/// Bootstrap resamples of a comparison.
pub const RESAMPLES: usize = 10_000;

/// The bootstrap's seed: a comparison printed twice says the same.
pub const SEED: u64 = 0x0E7A_1C0F_FEE5;

/// One side of a comparison: an arm of an eval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Side {
    /// The eval's id.
    pub eval: String,
    /// The arm's name.
    pub arm: String,
    /// The arm's resolved rate over the paired attempts.
    pub rate: f64,
}

/// What comparing two arms found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The first side.
    pub a: Side,
    /// The second side.
    pub b: Side,
    /// Attempts paired by task and repeat index.
    pub pairs: usize,
    /// Ended attempts of either side with no partner on the other, left out.
    pub unpaired: usize,
    /// Pairs both resolved.
    pub both: usize,
    /// Pairs only the first side resolved.
    pub only_a: usize,
    /// Pairs only the second side resolved.
    pub only_b: usize,
    /// Pairs neither resolved.
    pub neither: usize,
    /// The first side's resolved rate minus the second's, over the pairs.
    pub difference: f64,
    /// The 95% paired-bootstrap interval of the difference: `[low, high]`.
    pub interval: [f64; 2],
    /// The exact McNemar test's two-sided p-value.
    pub p_value: f64,
    /// True if and only if the p-value is below 0.05.
    pub significant: bool,
}

/// Why two arms could not be compared.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("eval `{eval}` has no arm `{arm}`; its arms are: {arms}")]
    NoArm {
        eval: String,
        arm: String,
        arms: String,
    },
    #[error(
        "arm `{a_arm}` of eval `{a}` and arm `{b_arm}` of eval `{b}` share no ended attempt at the same task and repeat; there is nothing to compare"
    )]
    NoPairs {
        a: String,
        a_arm: String,
        b: String,
        b_arm: String,
    },
}

/// Returns arm `a_arm` of `a` compared with arm `b_arm` of `b`, pairing their ended attempts
/// by task and repeat index.
pub fn compare(
    a: &EvalReport,
    a_arm: &str,
    b: &EvalReport,
    b_arm: &str,
) -> Result<Comparison, CompareError> {
    let a_results = attempts_of(a, a_arm)?;
    let b_results = attempts_of(b, b_arm)?;
    let mut xs = Vec::new();
    let mut ys = Vec::new();
    for (key, x) in &a_results {
        if let Some((_, y)) = b_results.iter().find(|(k, _)| k == key) {
            xs.push(*x);
            ys.push(*y);
        }
    }
    let unpaired = a_results.len() + b_results.len() - 2 * xs.len();
    let paired = stats::compare(&xs, &ys, RESAMPLES, SEED).map_err(|_| CompareError::NoPairs {
        a: a.eval.clone(),
        a_arm: a_arm.to_string(),
        b: b.eval.clone(),
        b_arm: b_arm.to_string(),
    })?;
    let rate = |v: &[bool]| v.iter().filter(|x| **x).count() as f64 / v.len() as f64;
    Ok(Comparison {
        a: Side {
            eval: a.eval.clone(),
            arm: a_arm.to_string(),
            rate: rate(&xs),
        },
        b: Side {
            eval: b.eval.clone(),
            arm: b_arm.to_string(),
            rate: rate(&ys),
        },
        pairs: xs.len(),
        unpaired,
        both: paired.both,
        only_a: paired.only_a,
        only_b: paired.only_b,
        neither: paired.neither,
        difference: paired.difference,
        interval: [paired.bootstrap.0, paired.bootstrap.1],
        p_value: paired.mcnemar_p,
        significant: paired.significant(),
    })
}

/// Returns the arms both reports hold, in `a`'s order.
pub fn common_arms(a: &EvalReport, b: &EvalReport) -> Vec<String> {
    a.arms
        .iter()
        .filter(|x| b.arms.iter().any(|y| y.name == x.name))
        .map(|x| x.name.clone())
        .collect()
}

/// An ended attempt as a comparison pairs it: ((task, repeat index), resolved).
type Outcome = ((String, u32), bool);

/// Returns each ended attempt of `arm` in `report` as ((task, repeat), resolved).
fn attempts_of(report: &EvalReport, arm: &str) -> Result<Vec<Outcome>, CompareError> {
    if !report.arms.iter().any(|a| a.name == arm) {
        return Err(CompareError::NoArm {
            eval: report.eval.clone(),
            arm: arm.to_string(),
            arms: report
                .arms
                .iter()
                .map(|a| a.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    Ok(report
        .attempts
        .iter()
        .filter(|r| r.arm == arm && r.counted())
        .map(|r| ((r.task.clone(), r.repeat), r.resolved))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::AttemptResult;

    fn report(eval: &str, arm: &str, outcomes: &[(&str, u32, bool)]) -> EvalReport {
        EvalReport {
            eval: eval.to_string(),
            range: String::new(),
            test: String::new(),
            repeat: 2,
            finished: true,
            done: outcomes.len(),
            total: outcomes.len(),
            arms: vec![crate::eval::report::tests_support::arm(arm)],
            tasks: Vec::new(),
            attempts: outcomes
                .iter()
                .map(|(task, repeat, resolved)| AttemptResult {
                    task: task.to_string(),
                    arm: arm.to_string(),
                    repeat: *repeat,
                    resolved: *resolved,
                    failure: None,
                    detail: None,
                    tokens_in: 0,
                    tokens_out: 0,
                    cost: None,
                    wall_ms: 0,
                    packets: 1,
                    fix_rounds: 0,
                    questions: 0,
                    model_ms: 0,
                })
                .collect(),
        }
    }

    #[test]
    fn attempts_pair_by_task_and_repeat_and_the_unpaired_are_counted() {
        let a = report(
            "a",
            "x",
            &[
                ("t1", 1, true),
                ("t1", 2, false),
                ("t2", 1, true),
                ("t3", 1, true),
            ],
        );
        let b = report(
            "b",
            "x",
            &[("t1", 1, true), ("t1", 2, true), ("t2", 1, false)],
        );
        let c = compare(&a, "x", &b, "x").unwrap();
        assert_eq!((c.pairs, c.unpaired), (3, 1));
        assert_eq!((c.both, c.only_a, c.only_b, c.neither), (1, 1, 1, 0));
        assert_eq!(c.p_value, 1.0);
        assert!(!c.significant);
        let again = compare(&a, "x", &b, "x").unwrap();
        assert_eq!(again.interval, c.interval, "the bootstrap's seed is fixed");
        assert!(matches!(
            compare(&a, "y", &b, "x"),
            Err(CompareError::NoArm { arm, .. }) if arm == "y"
        ));
        let none = report("c", "x", &[("t9", 1, true)]);
        assert!(matches!(
            compare(&a, "x", &none, "x"),
            Err(CompareError::NoPairs { .. })
        ));
    }
}

//! The `[best_of]` table: the budget the candidates of a best-of-N packet share, the arms
//! that vary their workers, and how many candidates a risky packet gets under
//! `[start] best_of = "auto"`.

use serde::Deserialize;

/// How an arm worked by an agent CLI starts: `cli:<name>`.
pub const CLI_ARM: &str = "cli:";

/// How an arm that keeps the packet's worker and gives its candidate an approach starts:
/// `strategy:<text>`.
pub const STRATEGY_ARM: &str = "strategy:";

/// Candidates a risky packet gets under `[start] best_of = "auto"` when `[best_of] n` is unset.
pub const DEFAULT_BEST_OF_N: u32 = 3;

/// The `[best_of]` table: what the candidates of one best-of-N packet (`attempts = N` in the
/// plan, `run --best-of N`) may together be forecast to spend. N is capped, before the run
/// starts, to as many candidates as the high end of the packet's forecast fits in.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BestOfConfig {
    /// Most tokens (input plus output) a best-of-N packet's candidates together may be
    /// forecast to use; unset, the number of candidates is not capped by tokens.
    #[serde(default)]
    pub packet_tokens: Option<u64>,
    /// Most cost (in `[prices]`' currency) a best-of-N packet's candidates together may be
    /// forecast to spend; unset, or without a price for the packet's model, the number of
    /// candidates is not capped by cost.
    #[serde(default)]
    pub packet_cost: Option<f64>,
    /// The workers a best-of-N packet's candidates cycle through when our agents work it
    /// (in `run`, `agent` and `start` runs): candidate 1 gets the first arm, candidate 2 the
    /// second, and so on, starting over after the last. Each arm is the name of a
    /// `[profiles]` entry, used by the candidate's agent instead of its role's own profile
    /// (and, in a `start` run, instead of the worker `[routing]` picks), `model:<name>`: the
    /// candidate's agent keeps its role's profile (same provider, key and address) and asks
    /// it for that model, or `cli:<name>`: the candidate is worked by that agent CLI (built
    /// in or `[agents.cli.<name>]`, as for `--agent`), or `strategy:<text>`: the candidate keeps the
    /// packet's worker and is told the approach `<text>` (our agent in its task, a worker
    /// command in `ORCHESTRA_STRATEGY`). Unset, every candidate uses its role's profile (or its routed worker).
    #[serde(default)]
    pub arms: Option<Vec<String>>,
    /// How many candidates a packet the planner or plan reviewer marked risky gets under
    /// `[start] best_of = "auto"` (1 to 8, default 3).
    #[serde(default)]
    pub n: Option<u32>,
    /// Whether a best-of-N packet first gets tests written for it by a tester (default
    /// false): the `tester` role (its write scope `tests/**` and the like) writes them from
    /// the packet's description, from the packet's start, before the candidates work; each
    /// candidate that passed its validation and the deterministic checks then runs them
    /// (applied on top of it in a scratch checkout, never committed into it) with `[eval]
    /// test`, or the packet's validation when that is unset, and a candidate failing them
    /// cannot win. Tests failing on every candidate are set aside and the reviewer decides.
    #[serde(default)]
    pub tester: Option<bool>,
    /// The command that plays the tester in runs whose packets a worker command works
    /// (`run --worker-cmd`), run in the tester's worktree with `ORCHESTRA_TESTER=1`; unset,
    /// the worker command itself plays it.
    #[serde(default)]
    pub tester_cmd: Option<String>,
}

/// Returns the arm of candidate `k` (1…N) among `arms`, taken in turn; `None` without arms.
pub fn arm_of(arms: &[String], k: u32) -> Option<&str> {
    if arms.is_empty() {
        return None;
    }
    let at = (k.max(1) as usize - 1) % arms.len();
    arms.get(at).map(String::as_str)
}

impl BestOfConfig {
    /// Returns `self` with every setting it leaves unset taken from `base`.
    pub(super) fn over(self, base: BestOfConfig) -> BestOfConfig {
        BestOfConfig {
            packet_tokens: self.packet_tokens.or(base.packet_tokens),
            packet_cost: self.packet_cost.or(base.packet_cost),
            arms: self.arms.or(base.arms),
            n: self.n.or(base.n),
            tester: self.tester.or(base.tester),
            tester_cmd: self.tester_cmd.or(base.tester_cmd),
        }
    }

    /// Returns the arm of candidate `k` (1…N): the arms taken in turn, `None` without arms.
    pub fn arm(&self, k: u32) -> Option<&str> {
        arm_of(self.arms.as_deref()?, k)
    }

    /// Returns the arm that changes candidate `k`'s worker (a profile, `model:<name>` or
    /// `cli:<name>`): its arm unless that is a `strategy:` arm, which keeps the worker.
    pub fn worker_arm(&self, k: u32) -> Option<&str> {
        self.arm(k).filter(|a| !a.starts_with(STRATEGY_ARM))
    }

    /// Returns the approach candidate `k`'s arm gives it (`strategy:<text>`), if it is one.
    pub fn strategy(&self, k: u32) -> Option<&str> {
        self.arm(k)?.strip_prefix(STRATEGY_ARM)
    }

    /// Returns the agent CLIs the arms name (`cli:<name>`), in order.
    pub fn cli_arms(&self) -> impl Iterator<Item = &str> {
        self.arms
            .iter()
            .flatten()
            .filter_map(|a| a.strip_prefix(CLI_ARM))
    }

    /// Returns the agent CLI candidate `k`'s arm names (`cli:<name>`), if it is one.
    pub fn cli_arm(&self, k: u32) -> Option<&str> {
        self.arm(k)?.strip_prefix(CLI_ARM)
    }

    /// Returns what is wrong with `[best_of] arms` given the `profiles` defined, naming the
    /// arm and the valid choices; `None` when every arm names a profile.
    pub fn arms_problem<'p>(&self, profiles: impl Iterator<Item = &'p String>) -> Option<String> {
        let arms = self.arms.as_deref()?;
        let defined: Vec<&String> = profiles.collect();
        if arms.is_empty() {
            return Some(
                "[best_of] arms is empty: name at least one profile, or leave arms out".into(),
            );
        }
        if let Some(empty) = arms.iter().find(|a| {
            a.strip_prefix(STRATEGY_ARM)
                .is_some_and(|t| t.trim().is_empty())
        }) {
            return Some(format!(
                "[best_of] arms has `{empty}`, which gives no approach: write it as `strategy:<text>`, such as `strategy:minimal change`"
            ));
        }
        for arm in arms.iter().filter(|a| !a.starts_with(STRATEGY_ARM)) {
            if let Err(problem) = super::worker_model(arm, "[best_of] arms") {
                return Some(problem);
            }
        }
        // `cli:<name>` arms are checked against the agent CLIs where those are known.
        let bad = arms.iter().find(|a| {
            !a.starts_with(CLI_ARM)
                && !a.starts_with(super::MODEL_WORKER)
                && !a.starts_with(STRATEGY_ARM)
                && !defined.contains(a)
        })?;
        let choices = if defined.is_empty() {
            "none is defined: add a [profiles.<name>] table".to_string()
        } else {
            let names: Vec<&str> = defined.iter().map(|s| s.as_str()).collect();
            format!("the defined profiles are {}", names.join(", "))
        };
        Some(format!(
            "[best_of] arms names `{bad}`, which is not a profile: each arm is the name of a [profiles] entry; {choices}"
        ))
    }

    /// Returns true if and only if a tester writes tests for best-of-N packets.
    pub fn tests_by_tester(&self) -> bool {
        self.tester.unwrap_or(false)
    }

    /// Returns true if and only if a budget caps the number of candidates.
    pub fn caps(&self) -> bool {
        self.packet_tokens.is_some() || self.packet_cost.is_some()
    }
}

impl BestOfConfig {
    /// Returns how many candidates a risky packet gets in auto mode (`n`, default
    /// [`DEFAULT_BEST_OF_N`]), or why `n` is not a number of candidates.
    pub fn risky_candidates(&self) -> Result<u32, String> {
        let n = self.n.unwrap_or(DEFAULT_BEST_OF_N);
        if (1..=crate::plan::MAX_ATTEMPTS).contains(&n) {
            Ok(n)
        } else {
            Err(format!(
                "[best_of] n = {n} is outside 1 to {}; set it to the number of candidates a risky packet gets",
                crate::plan::MAX_ATTEMPTS
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_cycle_through_the_arms_and_a_bad_arm_is_named_with_the_choices() {
        let c = BestOfConfig {
            arms: Some(vec!["fast".into(), "strong".into()]),
            ..Default::default()
        };
        let arms: Vec<Option<&str>> = (1..=3).map(|k| c.arm(k)).collect();
        assert_eq!(arms, [Some("fast"), Some("strong"), Some("fast")]);
        assert_eq!(BestOfConfig::default().arm(1), None);
        let defined = ["fast".to_string(), "strong".to_string()];
        assert_eq!(c.arms_problem(defined.iter()), None);
        let bad = BestOfConfig {
            arms: Some(vec!["fast".into(), "strnog".into()]),
            ..Default::default()
        };
        let said = bad.arms_problem(defined.iter()).unwrap();
        assert!(said.contains("`strnog`"), "{said}");
        assert!(said.contains("fast, strong"), "{said}");
    }

    #[test]
    fn an_agent_cli_arm_is_no_profile_and_is_named_for_its_candidates() {
        let c = BestOfConfig {
            arms: Some(vec!["fast".into(), "cli:mine".into()]),
            ..Default::default()
        };
        assert_eq!(c.arms_problem(["fast".to_string()].iter()), None);
        assert_eq!(c.cli_arms().collect::<Vec<_>>(), ["mine"]);
        let clis: Vec<Option<&str>> = (1..=3).map(|k| c.cli_arm(k)).collect();
        assert_eq!(clis, [None, Some("mine"), None]);
    }

    #[test]
    fn a_model_arm_is_no_profile_and_one_without_a_model_is_named() {
        let c = BestOfConfig {
            arms: Some(vec!["fast".into(), "model:big".into()]),
            ..Default::default()
        };
        assert_eq!(c.arms_problem(["fast".to_string()].iter()), None);
        assert_eq!(c.cli_arm(2), None);
        let empty = BestOfConfig {
            arms: Some(vec!["fast".into(), "model:".into()]),
            ..Default::default()
        };
        let said = empty.arms_problem(["fast".to_string()].iter()).unwrap();
        assert!(said.contains("`model:` names no model"), "{said}");
    }

    #[test]
    fn a_tester_is_off_unless_asked_for_and_its_command_comes_from_the_base() {
        assert!(!BestOfConfig::default().tests_by_tester());
        let user = BestOfConfig {
            tester_cmd: Some("write-tests".into()),
            ..Default::default()
        };
        let repo = BestOfConfig {
            tester: Some(true),
            ..Default::default()
        };
        let both = repo.over(user);
        assert!(both.tests_by_tester());
        assert_eq!(both.tester_cmd.as_deref(), Some("write-tests"));
        let read: BestOfConfig = toml::from_str("tester = true").unwrap();
        assert!(read.tests_by_tester());
    }

    #[test]
    fn a_strategy_arm_keeps_the_worker_and_one_without_text_is_named() {
        let c = BestOfConfig {
            arms: Some(vec!["strategy:minimal".into(), "fast".into()]),
            ..Default::default()
        };
        assert_eq!(c.arms_problem(["fast".to_string()].iter()), None);
        assert_eq!(c.strategy(1), Some("minimal"));
        assert_eq!(c.worker_arm(1), None);
        assert_eq!(c.worker_arm(2), Some("fast"));
        assert_eq!(c.cli_arm(1), None);
        let empty = BestOfConfig {
            arms: Some(vec!["strategy: ".into()]),
            ..Default::default()
        };
        let said = empty.arms_problem(std::iter::empty()).unwrap();
        assert!(said.contains("`strategy: `"), "{said}");
    }
}

//! Which packets of a `start` plan fan out to best-of-N candidates under `[start] best_of`.
//!
//! The planner marks a packet `risky = true` in the plan; the plan reviewer may name more
//! risky packets in its verdict. In auto mode a risky packet without its own `attempts` gets
//! `[best_of] n` candidates and every other packet one; with a number every packet without its
//! own `attempts` gets that many. A packet's own `attempts` always wins: it is what the planner
//! or the person approving the plan wrote.

use serde::Deserialize;

use super::model::{MAX_ATTEMPTS, Plan};

/// Which packets of a `start` plan fan out to candidates (`[start] best_of`): `"auto"` (the
/// packets the planner or the plan reviewer marked risky, `[best_of] n` each) or a number of
/// candidates (1 to 8) for every packet. A packet's own `attempts` always wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BestOfMode {
    /// Risky packets get `[best_of] n` candidates, the others one.
    Auto,
    /// Every packet gets this many candidates.
    All(u32),
}

impl<'de> Deserialize<'de> for BestOfMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<BestOfMode, D::Error> {
        d.deserialize_any(ModeVisitor)
    }
}

/// Reads `"auto"` or a number of candidates.
struct ModeVisitor;

impl serde::de::Visitor<'_> for ModeVisitor {
    type Value = BestOfMode;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "\"auto\" or a number of candidates from 1 to {}",
            MAX_ATTEMPTS
        )
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<BestOfMode, E> {
        match v.trim() {
            "auto" => Ok(BestOfMode::Auto),
            other => Err(E::custom(format!(
                "best_of = \"{other}\" is not a mode: write best_of = \"auto\" (risky packets get [best_of] n candidates) or a number of candidates from 1 to {}",
                MAX_ATTEMPTS
            ))),
        }
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<BestOfMode, E> {
        match u32::try_from(v) {
            Ok(n) if (1..=MAX_ATTEMPTS).contains(&n) => Ok(BestOfMode::All(n)),
            _ => Err(E::custom(format!(
                "best_of = {v} is outside 1 to {}: write the number of candidates every packet gets, or \"auto\"",
                MAX_ATTEMPTS
            ))),
        }
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<BestOfMode, E> {
        self.visit_i64(i64::try_from(v).unwrap_or(i64::MAX))
    }

    // The generated reference probes types with a unit value.
    fn visit_unit<E: serde::de::Error>(self) -> Result<BestOfMode, E> {
        Ok(BestOfMode::Auto)
    }
}

/// Marks the packets of `plan` named in `risky` (the plan reviewer's list; unknown ids are
/// ignored) as risky, then gives each packet its candidates under `mode` with `n` candidates
/// per risky packet in auto mode. Returns true if and only if the plan changed.
pub fn fan_out(plan: &mut Plan, mode: Option<BestOfMode>, n: u32, risky: &[String]) -> bool {
    let mut changed = false;
    for packet in &mut plan.packets {
        if !packet.risky && risky.contains(&packet.id) {
            packet.risky = true;
            changed = true;
        }
        if packet.attempts.is_some() {
            continue;
        }
        let candidates = match mode {
            Some(BestOfMode::Auto) if packet.risky => n,
            Some(BestOfMode::All(k)) => k,
            _ => continue,
        };
        if candidates > 1 {
            packet.attempts = Some(candidates);
            changed = true;
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan::from_toml_str(
            "objective = \"o\"\n[[packet]]\nid = \"a\"\ntitle = \"A\"\ndescription = \"d\"\nfiles = [\"a\"]\nrisky = true\n\n[[packet]]\nid = \"b\"\ntitle = \"B\"\ndescription = \"d\"\nfiles = [\"b\"]\n\n[[packet]]\nid = \"c\"\ntitle = \"C\"\ndescription = \"d\"\nfiles = [\"c\"]\nrisky = true\nattempts = 2\n",
            "plan.toml",
        )
        .unwrap()
    }

    fn candidates(plan: &Plan) -> Vec<u32> {
        plan.packets.iter().map(|p| p.candidates()).collect()
    }

    #[test]
    fn auto_fans_out_only_risky_packets_without_their_own_attempts() {
        let mut p = plan();
        assert!(fan_out(&mut p, Some(BestOfMode::Auto), 3, &[]));
        assert_eq!(candidates(&p), [3, 1, 2]);
        // The reviewer's marks count as the planner's.
        let mut p = plan();
        assert!(fan_out(
            &mut p,
            Some(BestOfMode::Auto),
            4,
            &["b".into(), "ghost".into()]
        ));
        assert_eq!(candidates(&p), [4, 4, 2]);
        assert!(p.packets[1].risky);
    }

    #[test]
    fn a_number_fans_out_every_packet_and_no_mode_none() {
        let mut p = plan();
        assert!(fan_out(&mut p, Some(BestOfMode::All(5)), 3, &[]));
        assert_eq!(candidates(&p), [5, 5, 2]);
        let mut p = plan();
        assert!(!fan_out(&mut p, None, 3, &[]));
        assert_eq!(candidates(&p), [1, 1, 2]);
        let mut p = plan();
        assert!(!fan_out(&mut p, Some(BestOfMode::All(1)), 3, &[]));
        assert_eq!(candidates(&p), [1, 1, 2]);
    }
}

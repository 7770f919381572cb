//! Forecasts of what a plan will cost before it runs: tokens, cost and wall time per packet and
//! in total, each as a range, from the packets this repository's run store says succeeded
//! before.
//!
//! A packet is compared with earlier packets of the same role answered by the same model (any
//! model when the role's model is not known, as for a worker command). Each comparable packet's
//! tokens, cost and time are scaled by the ratio of the packets' sizes (files plus symbols in
//! scope), and the range is the lowest to the highest of them, widened by a quarter below and a
//! half above: a packet is never a copy of an earlier one, and overruns are likelier than
//! savings. Without comparable packets the range is [`DEFAULT_TOKENS`] and
//! [`DEFAULT_SECS`] per packet — wide on purpose — and the forecast says it is a default.
//!
//! A best-of-N packet's tokens and cost are those of all its candidates together; its time is
//! one candidate's for each round of candidates the run's `max_parallel` lets run at once
//! (three candidates two at a time take two rounds), never less than one packet's.
//!
//! The plan's total adds the packets' tokens and costs; its wall time ranges from the longest
//! packet (all run in parallel) to the sum of all (one after another).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::config::{Price, price_key};
use crate::llm::Usage;
use crate::plan::{Packet, Plan};
use crate::store::{PhaseDurations, Store, StoreError};

/// Tokens a packet without history is forecast to use, lowest and highest.
pub const DEFAULT_TOKENS: (f64, f64) = (20_000.0, 400_000.0);
/// Seconds a packet without history is forecast to take, lowest and highest.
pub const DEFAULT_SECS: (f64, f64) = (60.0, 1_800.0);
/// Share of a packet's tokens assumed to be input when tokens are priced without history.
const INPUT_SHARE: f64 = 0.9;
/// How far below the lowest comparable packet the range starts.
const LOW_MARGIN: f64 = 0.75;
/// How far above the highest comparable packet the range ends.
const HIGH_MARGIN: f64 = 1.5;

/// One earlier packet as the forecast compares it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sample {
    pub role: String,
    /// The model its role's agent answered with, if known.
    pub model: Option<String>,
    /// Files plus symbols in its scope (at least 1).
    pub size: usize,
    /// Input plus output tokens of every agent on it.
    pub tokens: u64,
    /// What it cost, when its calls were priced.
    pub cost: Option<f64>,
    /// Seconds from its worktree to its integration, when its journal says.
    pub secs: Option<f64>,
}

/// The lowest and highest value a forecast expects.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Range {
    pub low: f64,
    pub high: f64,
}

/// Where a packet's forecast comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Basis {
    /// This many comparable earlier packets.
    History { packets: usize },
    /// No comparable packet: the documented defaults.
    Defaults,
}

/// The forecast of one packet.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PacketForecast {
    pub packet: String,
    pub role: String,
    /// How many candidates work the packet: its tokens and cost are all of theirs together.
    pub candidates: u32,
    /// How many of its candidates run at once (the run's `max_parallel`, at most
    /// `candidates`): its time is one candidate's for each round of them.
    pub at_once: u32,
    pub tokens: Range,
    /// `None` when neither history nor `[prices]` can price it.
    pub cost: Option<Range>,
    pub secs: Range,
    pub basis: Basis,
}

/// The forecast of a whole plan: each packet's, and the totals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanForecast {
    pub packets: Vec<PacketForecast>,
    pub tokens: Range,
    /// `None` when some packet's cost cannot be forecast.
    pub cost: Option<Range>,
    pub secs: Range,
}

/// Returns the size of `packet` as forecasts scale by it: files plus symbols, at least 1.
pub fn size(packet: &Packet) -> usize {
    (packet.files.len() + packet.symbols.len()).max(1)
}

/// Returns the earlier packets of `store` as samples; calls without a journaled cost are
/// priced by `prices` under their model.
pub fn history(
    store: &Store,
    prices: &dyn Fn(&str) -> Option<Price>,
) -> Result<Vec<Sample>, StoreError> {
    let mut out = Vec::new();
    let mut loaded: Option<(String, Option<Plan>, BTreeMap<String, PhaseDurations>)> = None;
    for row in store.packet_history()? {
        if loaded.as_ref().is_none_or(|(run, ..)| *run != row.run) {
            let plan = store.run(&row.run)?.and_then(|r| r.plan().ok());
            let timings = crate::engine::timings::packet_timings(&store.events(&row.run, 0)?);
            loaded = Some((row.run.clone(), plan, timings));
        }
        let Some((_, plan, timings)) = &loaded else {
            continue;
        };
        let packet = plan
            .as_ref()
            .and_then(|p| p.packets.iter().find(|p| p.id == row.packet));
        let usage = Usage {
            input_tokens: row.input_tokens,
            output_tokens: row.output_tokens,
        };
        let priced = || {
            let model = row.model.as_deref()?;
            prices(price_key(model)).map(|p| p.cost(usage))
        };
        out.push(Sample {
            role: row.role,
            model: row.model.clone(),
            size: packet.map_or(1, size),
            tokens: row.input_tokens + row.output_tokens,
            cost: row.cost_nanos.map(|n| n as f64 / 1e9).or_else(priced),
            secs: timings
                .get(&row.packet)
                .map(|t| t.values().sum::<u64>() as f64 / 1000.0)
                .filter(|s| *s > 0.0),
        });
    }
    Ok(out)
}

/// Returns the range of `values` widened by the margins, `None` when there are none.
fn widened(values: impl Iterator<Item = f64>) -> Option<Range> {
    let mut range: Option<Range> = None;
    for v in values {
        let r = range.get_or_insert(Range { low: v, high: v });
        r.low = r.low.min(v);
        r.high = r.high.max(v);
    }
    range.map(|r| Range {
        low: r.low * LOW_MARGIN,
        high: r.high * HIGH_MARGIN,
    })
}

/// Returns the cost of `tokens` at `price`, counting [`INPUT_SHARE`] of them as input.
fn priced(tokens: f64, price: Price) -> f64 {
    (tokens * INPUT_SHARE * price.input_per_mtok
        + tokens * (1.0 - INPUT_SHARE) * price.output_per_mtok)
        / 1e6
}

/// Returns the forecast of `packet`, whose role answers with `model` (if known) priced at
/// `price`, from the comparable `samples`, when up to `parallel` of its candidates run at once.
pub fn estimate(
    packet: &Packet,
    model: Option<&str>,
    price: Option<Price>,
    samples: &[Sample],
    parallel: usize,
) -> PacketForecast {
    let role = if packet.role.is_empty() {
        crate::plan::DEFAULT_ROLE
    } else {
        &packet.role
    };
    let like: Vec<&Sample> = samples
        .iter()
        .filter(|s| {
            // Labels are `provider:model` or the model alone: compare the model names.
            s.role == role
                && model.is_none_or(|m| s.model.as_deref().map(price_key) == Some(price_key(m)))
        })
        .collect();
    let scale = |s: &Sample| size(packet) as f64 / s.size.max(1) as f64;
    let tokens = widened(like.iter().map(|s| s.tokens as f64 * scale(s)));
    let by_price = |t: Range| {
        price.map(|p| Range {
            low: priced(t.low, p),
            high: priced(t.high, p),
        })
    };
    let (tokens, basis) = match tokens {
        Some(t) => (
            t,
            Basis::History {
                packets: like.len(),
            },
        ),
        None => (
            Range {
                low: DEFAULT_TOKENS.0,
                high: DEFAULT_TOKENS.1,
            },
            Basis::Defaults,
        ),
    };
    let cost = if like.is_empty() || like.iter().any(|s| s.cost.is_none()) {
        by_price(tokens)
    } else {
        widened(like.iter().filter_map(|s| Some(s.cost? * scale(s))))
    };
    let secs = widened(like.iter().filter_map(|s| Some(s.secs? * scale(s)))).unwrap_or(Range {
        low: DEFAULT_SECS.0,
        high: DEFAULT_SECS.1,
    });
    // Every candidate of a best-of-N packet spends about what one packet does, and takes
    // about as long: those running at once take one packet's time together.
    let candidates = packet.candidates().max(1);
    let at_once = u32::try_from(parallel.max(1))
        .unwrap_or(u32::MAX)
        .min(candidates);
    let times = |r: Range, n: u32| Range {
        low: r.low * f64::from(n),
        high: r.high * f64::from(n),
    };
    PacketForecast {
        packet: packet.id.clone(),
        role: role.to_string(),
        candidates,
        at_once,
        tokens: times(tokens, candidates),
        cost: cost.map(|c| times(c, candidates)),
        secs: times(secs, candidates.div_ceil(at_once)),
        basis,
    }
}

/// Returns the forecast of every packet of `plan` and the totals; `model_of` names the model a
/// role answers with now (if known), `prices` prices a model and `max_parallel` is the run's
/// cap on work at once when it sets one (else the plan's, else the engine's default), which
/// bounds how many of a packet's candidates run at once.
pub fn forecast(
    plan: &Plan,
    samples: &[Sample],
    model_of: &dyn Fn(&str) -> Option<String>,
    prices: &dyn Fn(&str) -> Option<Price>,
    max_parallel: Option<usize>,
) -> PlanForecast {
    let parallel = max_parallel
        .or(plan.max_parallel)
        .unwrap_or(crate::engine::DEFAULT_MAX_PARALLEL)
        .max(1);
    let packets: Vec<PacketForecast> = plan
        .packets
        .iter()
        .map(|p| {
            let role = if p.role.is_empty() {
                crate::plan::DEFAULT_ROLE
            } else {
                &p.role
            };
            let model = model_of(role);
            let price = model.as_deref().and_then(|m| prices(price_key(m)));
            estimate(p, model.as_deref(), price, samples, parallel)
        })
        .collect();
    let sum = |f: &dyn Fn(&PacketForecast) -> Range| Range {
        low: packets.iter().map(|p| f(p).low).sum(),
        high: packets.iter().map(|p| f(p).high).sum(),
    };
    let cost = packets.iter().all(|p| p.cost.is_some()).then(|| {
        sum(&|p| {
            p.cost.unwrap_or(Range {
                low: 0.0,
                high: 0.0,
            })
        })
    });
    PlanForecast {
        tokens: sum(&|p| p.tokens),
        cost,
        secs: Range {
            low: packets.iter().map(|p| p.secs.low).fold(0.0, f64::max),
            high: packets.iter().map(|p| p.secs.high).sum(),
        },
        packets,
    }
}

/// Returns `n` tokens as people read them: `950`, `12.3k`, `1.2M`.
fn tokens_text(n: f64) -> String {
    if n < 1_000.0 {
        format!("{n:.0}")
    } else if n < 1_000_000.0 {
        format!("{:.1}k", n / 1_000.0)
    } else {
        format!("{:.1}M", n / 1_000_000.0)
    }
}

/// Returns a duration in seconds as people read it: `45 s`, `12 min`, `1.5 h`.
fn secs_text(s: f64) -> String {
    if s < 90.0 {
        format!("{s:.0} s")
    } else if s < 5_400.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3_600.0)
    }
}

/// Returns tokens, cost and time ranges in one line.
fn ranges_text(tokens: Range, cost: Option<Range>, secs: Range) -> String {
    let cost = match cost {
        Some(c) => format!("cost {:.4}–{:.4}", c.low, c.high),
        None => "cost unknown (no [prices] entry for the model)".to_string(),
    };
    format!(
        "{}–{} tokens, {cost}, {}–{}",
        tokens_text(tokens.low),
        tokens_text(tokens.high),
        secs_text(secs.low),
        secs_text(secs.high)
    )
}

impl PacketForecast {
    /// Returns the forecast in one line, saying what it is based on.
    pub fn text(&self) -> String {
        let basis = match self.basis {
            Basis::History { packets: 1 } => "from 1 earlier packet".to_string(),
            Basis::History { packets } => format!("from {packets} earlier packets"),
            Basis::Defaults => "no history: defaults".to_string(),
        };
        let basis = match (self.candidates, self.at_once) {
            (0 | 1, _) => basis,
            (n, k) if k >= n => format!("{n} candidates; {basis}"),
            (n, k) => format!("{n} candidates, {k} at a time; {basis}"),
        };
        format!(
            "{} ({basis})",
            ranges_text(self.tokens, self.cost, self.secs)
        )
    }
}

impl PlanForecast {
    /// Returns the plan's total forecast in one line, saying how many packets have history.
    pub fn text(&self) -> String {
        let known = self
            .packets
            .iter()
            .filter(|p| matches!(p.basis, Basis::History { .. }))
            .count();
        let basis = match known {
            0 => "no history: defaults".to_string(),
            n if n == self.packets.len() => "every packet from history".to_string(),
            n => format!(
                "{n} of {} packets from history, the rest defaults",
                self.packets.len()
            ),
        };
        format!(
            "{} ({basis}; time from all packets in parallel to one after another)",
            ranges_text(self.tokens, self.cost, self.secs)
        )
    }

    /// Returns the forecast of packet `id`, if the plan has it.
    pub fn packet(&self, id: &str) -> Option<&PacketForecast> {
        self.packets.iter().find(|p| p.packet == id)
    }
}

/// Returns how many of `wanted` candidates of a packet forecast as `forecast` (for all its
/// candidates together) fit in the budget `tokens` and `cost` (each when set) by the high end
/// of the forecast of one candidate — at least one — and, when that is fewer than `wanted`, why.
/// With `tester`, the packet's tester (`[best_of] tester`) is forecast as one more candidate
/// and takes its share of the budget first.
pub fn affordable_candidates(
    forecast: &PacketForecast,
    wanted: u32,
    (tokens, cost): (Option<u64>, Option<f64>),
    tester: bool,
) -> (u32, Option<String>) {
    let fits = |budget: f64, each: f64| {
        if each <= 0.0 {
            wanted
        } else {
            ((budget / each).floor() as u32)
                .saturating_sub(u32::from(tester))
                .clamp(1, wanted)
        }
    };
    let per = f64::from(forecast.candidates.max(1));
    let mut n = wanted;
    let mut why = None;
    if let Some(budget) = tokens {
        let each = forecast.tokens.high / per;
        let by_tokens = fits(budget as f64, each);
        if by_tokens < n {
            n = by_tokens;
            why = Some(format!(
                "each candidate is forecast to use up to {} tokens and [best_of] packet_tokens is {}",
                tokens_text(each),
                tokens_text(budget as f64)
            ));
        }
    }
    if let (Some(budget), Some(all)) = (cost, forecast.cost) {
        let each = all.high / per;
        let by_cost = fits(budget, each);
        if by_cost < n {
            n = by_cost;
            why = Some(format!(
                "each candidate is forecast to cost up to {each:.4} and [best_of] packet_cost is {budget:.4}"
            ));
        }
    }
    let tester = if tester {
        " (the tester writing its tests takes as much)"
    } else {
        ""
    };
    let why = why.map(|w| format!("best of {wanted} capped to {n}: {w}{tester}"));
    (n, why)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(id: &str, role: &str, files: usize) -> Packet {
        let mut p = Plan::from_toml_str(
            "objective = \"o\"\n[[packet]]\nid = \"x\"\ntitle = \"t\"\ndescription = \"d\"\nfiles = [\"a\"]\n",
            "plan.toml",
        )
        .unwrap()
        .packets
        .remove(0);
        p.id = id.into();
        p.role = role.into();
        p.files = (0..files).map(|i| format!("f{i}.py")).collect();
        p
    }

    #[test]
    fn candidates_are_capped_to_what_the_forecast_fits_in_the_budget() {
        let f = estimate(&packet("p", "coder", 1), None, None, &[], 1);
        // Defaults: up to 400k tokens per candidate.
        let (n, why) = affordable_candidates(&f, 3, (Some(900_000), None), false);
        assert_eq!(n, 2);
        let why = why.unwrap();
        assert!(why.contains("best of 3 capped to 2"), "{why}");
        assert!(why.contains("400.0k tokens"), "{why}");
        assert_eq!(affordable_candidates(&f, 3, (Some(10), None), false).0, 1);
        assert_eq!(affordable_candidates(&f, 3, (None, None), false), (3, None));
        // Without a price, a cost budget cannot judge and caps nothing.
        assert_eq!(
            affordable_candidates(&f, 3, (None, Some(0.01)), false),
            (3, None)
        );
        // A tester takes one candidate's share first.
        let (n, why) = affordable_candidates(&f, 3, (Some(900_000), None), true);
        assert_eq!(n, 1);
        assert!(why.unwrap().contains("the tester writing its tests"));
    }

    #[test]
    fn a_best_of_n_packet_is_forecast_for_all_its_candidates_and_capped_per_candidate() {
        let mut p = packet("p", "coder", 1);
        p.attempts = Some(3);
        let f = estimate(&p, None, None, &[], 4);
        assert_eq!(f.candidates, 3);
        assert_eq!(
            f.tokens,
            Range {
                low: 3.0 * DEFAULT_TOKENS.0,
                high: 3.0 * DEFAULT_TOKENS.1
            }
        );
        assert!(
            f.text().ends_with("(3 candidates; no history: defaults)"),
            "{}",
            f.text()
        );
        // All three run at once with room for four: one packet's time; one at a time: three.
        assert_eq!(f.at_once, 3);
        assert_eq!(
            f.secs,
            Range {
                low: DEFAULT_SECS.0,
                high: DEFAULT_SECS.1
            }
        );
        let one = estimate(&p, None, None, &[], 1);
        assert_eq!(
            (one.secs.low, one.secs.high),
            (3.0 * DEFAULT_SECS.0, 3.0 * DEFAULT_SECS.1)
        );
        assert_eq!((one.tokens, one.cost), (f.tokens, f.cost));
        assert!(
            one.text()
                .ends_with("(3 candidates, 1 at a time; no history: defaults)"),
            "{}",
            one.text()
        );
        let two = estimate(&p, None, None, &[], 2);
        assert_eq!(two.secs.high, 2.0 * DEFAULT_SECS.1);
        // The budget still judges one candidate's forecast: 400k tokens each.
        let (n, why) = affordable_candidates(&f, 3, (Some(900_000), None), false);
        assert_eq!(n, 2);
        assert!(why.unwrap().contains("400.0k tokens"));
    }

    fn sample(role: &str, model: &str, size: usize, tokens: u64, cost: f64, secs: f64) -> Sample {
        Sample {
            role: role.into(),
            model: Some(model.into()),
            size,
            tokens,
            cost: Some(cost),
            secs: Some(secs),
        }
    }

    #[test]
    fn comparable_packets_give_their_scaled_range_widened() {
        let samples = [
            sample("coder", "m", 1, 10_000, 0.10, 100.0),
            sample("coder", "m", 2, 40_000, 0.20, 400.0),
            sample("coder", "other", 1, 1_000_000, 9.0, 9_000.0),
            sample("tester", "m", 1, 1_000_000, 9.0, 9_000.0),
        ];
        let f = estimate(&packet("p", "coder", 2), Some("m"), None, &samples, 1);
        assert_eq!(f.basis, Basis::History { packets: 2 });
        // Scaled to size 2: 20k and 40k tokens, 0.2 and 0.2 cost, 200 s and 400 s.
        assert_eq!(
            f.tokens,
            Range {
                low: 15_000.0,
                high: 60_000.0
            }
        );
        let cost = f.cost.unwrap();
        assert!((cost.low - 0.15).abs() < 1e-9 && (cost.high - 0.3).abs() < 1e-9);
        assert_eq!(
            f.secs,
            Range {
                low: 150.0,
                high: 600.0
            }
        );
        assert_eq!(
            f.text(),
            "15.0k–60.0k tokens, cost 0.1500–0.3000, 2 min–10 min (from 2 earlier packets)"
        );
        // A label with its provider names the same model.
        let labelled = estimate(
            &packet("p", "coder", 2),
            Some("openai:m"),
            None,
            &samples,
            1,
        );
        assert_eq!(labelled.basis, Basis::History { packets: 2 });
        // An unknown model compares with every packet of the role.
        let any = estimate(&packet("p", "coder", 1), None, None, &samples, 1);
        assert_eq!(any.basis, Basis::History { packets: 3 });
    }

    #[test]
    fn without_history_the_wide_defaults_are_priced_when_the_model_has_a_price() {
        let price = Price {
            input_per_mtok: 1.0,
            output_per_mtok: 10.0,
        };
        let f = estimate(&packet("p", "", 1), Some("m"), Some(price), &[], 1);
        assert_eq!((f.basis, f.role.as_str()), (Basis::Defaults, "coder"));
        assert_eq!(
            f.tokens,
            Range {
                low: DEFAULT_TOKENS.0,
                high: DEFAULT_TOKENS.1
            }
        );
        // 90% input at 1.0, 10% output at 10.0 per million tokens: 1.9 per million.
        let cost = f.cost.unwrap();
        assert!((cost.low - 0.038).abs() < 1e-9 && (cost.high - 0.76).abs() < 1e-9);
        assert!(f.text().ends_with("(no history: defaults)"), "{}", f.text());
        let unpriced = estimate(&packet("p", "coder", 1), Some("m"), None, &[], 1);
        assert!(
            unpriced.text().contains("cost unknown"),
            "{}",
            unpriced.text()
        );
    }

    #[test]
    fn the_plan_total_adds_packets_and_spans_parallel_to_serial_time() {
        let plan = Plan::new("o", vec![packet("a", "coder", 1), packet("b", "tester", 1)]);
        let samples = [sample("coder", "m", 1, 10_000, 0.1, 100.0)];
        let model_of = |_: &str| Some("m".to_string());
        let f = forecast(&plan, &samples, &model_of, &|_| None, None);
        assert_eq!(f.packets[0].basis, Basis::History { packets: 1 });
        assert_eq!(f.packets[1].basis, Basis::Defaults);
        assert_eq!(f.tokens.low, 7_500.0 + DEFAULT_TOKENS.0);
        assert_eq!(f.tokens.high, 15_000.0 + DEFAULT_TOKENS.1);
        // The defaulted packet has no price: the total cost is unknown.
        assert_eq!(f.cost, None);
        assert_eq!(f.secs.low, DEFAULT_SECS.0.max(75.0));
        assert_eq!(f.secs.high, 150.0 + DEFAULT_SECS.1);
        assert!(
            f.text().contains("1 of 2 packets from history"),
            "{}",
            f.text()
        );
        assert!(f.packet("b").is_some() && f.packet("c").is_none());
    }
}

//! Orders a plan's packets into waves that can run side by side.

use serde::Serialize;

use super::graph::reaches;
use super::model::Plan;
use super::symbols::SymbolSpans;

/// The static order of a plan: waves of packets that may run together, and the overlapping
/// pairs kept apart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Schedule {
    /// Packet ids per wave; every packet's dependencies sit in earlier waves.
    pub waves: Vec<Vec<String>>,
    /// `(earlier, later, reason)` for every pair of packets whose scopes overlap and that no
    /// dependency orders: the later one never runs while the earlier one does.
    pub serialized: Vec<(String, String, String)>,
    /// One sentence per pair of packets that share files but edit symbols apart in them and
    /// that no dependency orders: they may run at the same time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parallel: Vec<String>,
}

impl Schedule {
    /// Returns the 0-based wave the packet is in.
    pub fn wave_of(&self, id: &str) -> Option<usize> {
        self.waves.iter().position(|w| w.iter().any(|p| p == id))
    }
}

/// Returns the waves of a plan.
///
/// Packets are placed one at a time in dependency order, ties broken by plan order; each goes
/// to the earliest wave after all its dependencies that holds no packet its scope overlaps with
/// (packets linked by a dependency path are ordered anyway). The result depends only on the plan.
///
/// Meant for validated plans. On others it still terminates: unknown dependencies are ignored and
/// packets on a dependency cycle are placed after everything else, in plan order.
pub fn schedule(plan: &Plan) -> Schedule {
    schedule_with(plan, &SymbolSpans::default())
}

/// Returns the waves of a plan with symbol-aware overlaps: packets that share a file but edit
/// symbols whose spans (`spans`, at the run's base) are apart may share a wave.
pub fn schedule_with(plan: &Plan, spans: &SymbolSpans) -> Schedule {
    let n = plan.packets.len();
    let deps = plan.dependency_indices();
    let all = plan.overlaps_with(spans);
    let overlaps = all.conflicts;
    let parallel = all
        .shared
        .iter()
        .filter(|s| !reaches(&deps, s.first, s.second) && !reaches(&deps, s.second, s.first))
        .map(|s| plan.shared_note(s))
        .collect();
    let mut wave: Vec<Option<usize>> = vec![None; n];
    let mut serialized_idx: Vec<(usize, usize, String)> = Vec::new();
    let mut placed_any = true;
    while placed_any {
        placed_any = false;
        // The first unplaced packet in plan order whose dependencies are all placed.
        let ready =
            (0..n).find(|&i| wave[i].is_none() && deps[i].iter().all(|&d| wave[d].is_some()));
        if let Some(i) = ready {
            let mut w = deps[i]
                .iter()
                .filter_map(|&d| wave[d])
                .map(|d| d + 1)
                .max()
                .unwrap_or(0);
            let conflicts: Vec<(usize, &str)> = overlaps
                .iter()
                .filter_map(|o| {
                    let other = if o.first == i {
                        o.second
                    } else if o.second == i {
                        o.first
                    } else {
                        return None;
                    };
                    let ordered = reaches(&deps, i, other) || reaches(&deps, other, i);
                    (!ordered).then_some((other, o.reason.as_str()))
                })
                .collect();
            while conflicts.iter().any(|&(o, _)| wave[o] == Some(w)) {
                w += 1;
            }
            wave[i] = Some(w);
            for (other, reason) in conflicts {
                if wave[other].is_some() {
                    serialized_idx.push((other, i, reason.to_string()));
                }
            }
            placed_any = true;
        }
    }
    // Packets on a cycle (or depending on one) never became ready.
    let last = wave.iter().flatten().max().map_or(0, |m| m + 1);
    for w in wave.iter_mut().filter(|w| w.is_none()) {
        *w = Some(last);
    }
    let count = wave.iter().flatten().max().map_or(0, |m| m + 1);
    let mut waves: Vec<Vec<String>> = vec![Vec::new(); count];
    for (i, w) in wave.iter().enumerate() {
        if let Some(w) = w {
            waves[*w].push(plan.packets[i].id.clone());
        }
    }
    serialized_idx.sort_by_key(|&(a, b, _)| (wave[a], a, wave[b], b));
    let serialized = serialized_idx
        .into_iter()
        .map(|(a, b, r)| {
            // Name the packet in the earlier wave first.
            let (a, b) = if wave[b] < wave[a] { (b, a) } else { (a, b) };
            (plan.packets[a].id.clone(), plan.packets[b].id.clone(), r)
        })
        .collect();
    Schedule {
        waves,
        serialized,
        parallel,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Packet;

    fn packet(id: &str, files: &[&str], deps: &[&str]) -> Packet {
        Packet {
            id: id.into(),
            title: "t".into(),
            role: "coder".into(),
            description: "d".into(),
            files: files.iter().map(|s| s.to_string()).collect(),
            symbols: vec![],
            depends_on: deps.iter().map(|s| s.to_string()).collect(),
            validation: vec![],
            acceptance: vec![],
            risks: vec![],
            may_be_empty: false,
            risky: false,
            attempts: None,
        }
    }

    #[test]
    fn diamond_with_overlap() {
        let plan = Plan::new(
            "x",
            vec![
                packet("a", &["src/core.rs"], &[]),
                packet("b", &["src/b.rs"], &["a"]),
                packet("c", &["src/*.rs"], &["a"]),
                packet("d", &["docs"], &["b", "c"]),
                packet("e", &["docs/x.md"], &[]),
            ],
        );
        let s = schedule(&plan);
        assert_eq!(
            s.waves,
            vec![vec!["a", "e"], vec!["b"], vec!["c"], vec!["d"]]
        );
        assert_eq!(
            s.serialized,
            vec![
                ("b".into(), "c".into(), "src/*.rs overlaps src/b.rs".into()),
                ("e".into(), "d".into(), "docs contains docs/x.md".into()),
            ]
        );
        assert_eq!(s.wave_of("d"), Some(3));
        assert_eq!(schedule(&plan), s, "deterministic");
    }

    #[test]
    fn later_packet_can_fill_an_earlier_wave() {
        // `c` is listed last but has no dependency: it runs in wave 0 beside `a`.
        let plan = Plan::new(
            "x",
            vec![
                packet("a", &["a"], &[]),
                packet("b", &["b"], &["a"]),
                packet("c", &["c"], &[]),
            ],
        );
        assert_eq!(schedule(&plan).waves, vec![vec!["a", "c"], vec!["b"]]);
    }

    #[test]
    fn cycles_do_not_hang() {
        let plan = Plan::new(
            "x",
            vec![
                packet("a", &["a"], &["b"]),
                packet("b", &["b"], &["a"]),
                packet("c", &["c"], &["zz"]),
            ],
        );
        assert_eq!(schedule(&plan).waves, vec![vec!["c"], vec!["a", "b"]]);
    }
}

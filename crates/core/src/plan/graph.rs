//! Relations between packets: dependencies, dependents, reachability and scope overlaps.
//!
//! These are what a scheduler needs at run time: which packets wait for which, and which pairs
//! must never run at the same time because their declared files overlap.

use serde::Serialize;

use super::model::{Packet, Plan};
use super::overlap::{Relation, relate};
use super::symbols::SymbolSpans;

/// Two packets whose declared scopes may touch the same path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Overlap {
    /// Index in plan order of the earlier packet.
    pub first: usize,
    /// Index in plan order of the later packet.
    pub second: usize,
    /// Why, e.g. "both declare src/parser.rs" or "src/*.rs overlaps src/parser.rs".
    pub reason: String,
}

/// Two packets that share files in which both edit symbols far enough apart to run together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SharedFiles {
    /// Index in plan order of the earlier packet.
    pub first: usize,
    /// Index in plan order of the later packet.
    pub second: usize,
    /// The shared files.
    pub files: Vec<String>,
}

/// The pairs a symbol-aware schedule keeps apart and the pairs it lets share files.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Overlaps {
    pub conflicts: Vec<Overlap>,
    pub shared: Vec<SharedFiles>,
}

impl Plan {
    /// Returns the packet with this id (the first one, should ids repeat).
    pub fn packet(&self, id: &str) -> Option<&Packet> {
        self.packets.iter().find(|p| p.id == id)
    }

    /// Returns the plan-order index of the packet with this id.
    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.packets.iter().position(|p| p.id == id)
    }

    /// Returns the packets that list `id` in their `depends_on`, in plan order.
    pub fn dependents(&self, id: &str) -> Vec<&Packet> {
        self.packets
            .iter()
            .filter(|p| p.depends_on.iter().any(|d| d == id))
            .collect()
    }

    /// Returns the plan-order indices each packet depends on directly; unknown ids are skipped.
    pub fn dependency_indices(&self) -> Vec<Vec<usize>> {
        self.packets
            .iter()
            .map(|p| {
                let mut deps: Vec<usize> = p
                    .depends_on
                    .iter()
                    .filter_map(|d| self.index_of(d))
                    .collect();
                deps.sort_unstable();
                deps.dedup();
                deps
            })
            .collect()
    }

    /// Returns true if and only if packet `a` depends on packet `b` through a chain of one or
    /// more `depends_on` links.
    pub fn depends_on_transitively(&self, a: &str, b: &str) -> bool {
        match (self.index_of(a), self.index_of(b)) {
            (Some(a), Some(b)) => reaches(&self.dependency_indices(), a, b),
            _ => false,
        }
    }

    /// Returns true if and only if one of the two packets depends on the other, directly or
    /// transitively, so they can never run at the same time anyway.
    pub fn has_dependency_path(&self, a: &str, b: &str) -> bool {
        self.depends_on_transitively(a, b) || self.depends_on_transitively(b, a)
    }

    /// Returns every pair of packets whose declared scopes may touch the same path, in plan
    /// order; a run must never execute both packets of a pair at the same time.
    pub fn overlaps(&self) -> Vec<Overlap> {
        self.overlaps_with(&SymbolSpans::default()).conflicts
    }

    /// Returns the pairs of packets that must not run together once declared symbols are
    /// taken into account (`spans`, resolved at the run's base), and the pairs that share
    /// files but edit symbols apart in them; both in plan order.
    pub fn overlaps_with(&self, spans: &SymbolSpans) -> Overlaps {
        // Compile every scope once: pairs are quadratic in the number of packets.
        let scopes: Vec<_> = self.packets.iter().map(Packet::scope).collect();
        let mut out = Overlaps::default();
        for (i, a) in scopes.iter().enumerate() {
            for (j, b) in scopes.iter().enumerate().skip(i + 1) {
                let relation = match (a, b) {
                    (Ok(a), Ok(b)) => relate(i, a, j, b, spans),
                    // A scope nobody can interpret overlaps everything (see `overlap`).
                    (Err(e), _) | (_, Err(e)) => {
                        Relation::Conflict(format!("{e}; treated as overlapping"))
                    }
                };
                match relation {
                    Relation::Disjoint => {}
                    Relation::Conflict(reason) => out.conflicts.push(Overlap {
                        first: i,
                        second: j,
                        reason,
                    }),
                    Relation::SharedSymbols(files) => out.shared.push(SharedFiles {
                        first: i,
                        second: j,
                        files,
                    }),
                }
            }
        }
        out
    }

    /// Returns the sentence that explains why packets `first` and `second` run side by side
    /// although they share `files`.
    pub fn shared_note(&self, shared: &SharedFiles) -> String {
        format!(
            "{} and {} share {} but edit disjoint symbols: run in parallel",
            self.packets[shared.first].id,
            self.packets[shared.second].id,
            shared.files.join(", ")
        )
    }
}

/// Returns true if and only if `from` reaches `to` through one or more edges of `deps`.
pub(crate) fn reaches(deps: &[Vec<usize>], from: usize, to: usize) -> bool {
    let mut seen = vec![false; deps.len()];
    let mut stack: Vec<usize> = deps.get(from).cloned().unwrap_or_default();
    while let Some(n) = stack.pop() {
        if n == to {
            return true;
        }
        if let Some(s) = seen.get_mut(n)
            && !*s
        {
            *s = true;
            stack.extend(deps.get(n).into_iter().flatten().copied());
        }
    }
    false
}

/// Returns one cycle per group of mutually dependent packets, as index paths that start and end
/// at the same packet (`[a, b, c, a]`), ordered by their first packet in plan order.
///
/// Self-dependencies are left to the caller (they are reported as such, not as cycles).
pub(crate) fn cycles(deps: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let n = deps.len();
    let mut reported = vec![false; n];
    let mut out = Vec::new();
    for start in 0..n {
        if reported[start] || !reaches_without_self(deps, start) {
            continue;
        }
        // Shortest path back to `start` by breadth-first search, following dependencies in
        // plan order so the named cycle is deterministic.
        let mut prev: Vec<Option<usize>> = vec![None; n];
        let mut queue = std::collections::VecDeque::new();
        let mut found = None;
        for &d in &deps[start] {
            if d != start && prev[d].is_none() {
                prev[d] = Some(start);
                queue.push_back(d);
            }
        }
        while let Some(node) = queue.pop_front() {
            if deps[node].contains(&start) {
                found = Some(node);
                break;
            }
            for &d in &deps[node] {
                if d != start && prev[d].is_none() {
                    prev[d] = Some(node);
                    queue.push_back(d);
                }
            }
        }
        let Some(mut node) = found else { continue };
        let mut path = vec![start];
        let mut back = vec![node];
        while let Some(p) = prev[node] {
            if p == start {
                break;
            }
            back.push(p);
            node = p;
        }
        back.reverse();
        path.extend(back);
        path.push(start);
        // Every packet of the strongly connected group is on some cycle through `start`;
        // mark the whole group so it is named once.
        for (k, done) in reported.iter_mut().enumerate() {
            if reaches(deps, start, k) && reaches(deps, k, start) {
                *done = true;
            }
        }
        out.push(path);
    }
    out
}

/// Returns true if and only if `start` lies on a cycle longer than a self-loop.
fn reaches_without_self(deps: &[Vec<usize>], start: usize) -> bool {
    let pruned: Vec<Vec<usize>> = deps
        .iter()
        .enumerate()
        .map(|(i, d)| d.iter().copied().filter(|&x| x != i).collect())
        .collect();
    reaches(&pruned, start, start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reachability_follows_chains() {
        let deps = vec![vec![], vec![0], vec![1], vec![]];
        assert!(reaches(&deps, 2, 0));
        assert!(!reaches(&deps, 0, 2));
        assert!(!reaches(&deps, 3, 0));
        assert!(!reaches(&deps, 0, 0));
    }

    #[test]
    fn cycles_are_named_once_per_group() {
        // 0 -> 1 -> 2 -> 0, 3 -> 3 (self, ignored), 4 -> 5 -> 4, 6 -> 0 (feeds the cycle)
        let deps = vec![
            vec![1],
            vec![2],
            vec![0],
            vec![3],
            vec![5],
            vec![4],
            vec![0],
        ];
        assert_eq!(cycles(&deps), vec![vec![0, 1, 2, 0], vec![4, 5, 4]]);
        assert!(cycles(&[vec![], vec![0]]).is_empty());
    }
}

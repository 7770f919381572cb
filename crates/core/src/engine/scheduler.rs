//! Decides which packets start next: dependencies first, a parallelism cap, and never two
//! packets with overlapping declared files at the same time.
//!
//! Pure functions over indices, so the policy is tested without git or processes.

use crate::store::PacketState;

/// The static shape of a plan as the scheduler sees it.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    /// `deps[i]`: the packets `i` depends on directly.
    pub deps: Vec<Vec<usize>>,
    /// `conflicts[i]`: packets whose declared files overlap `i`'s and that have no dependency
    /// path to or from `i`; they must not run at the same time as `i`.
    pub conflicts: Vec<Vec<usize>>,
}

impl Graph {
    /// Builds the graph from direct dependencies and a symmetric overlap predicate, keeping only
    /// overlaps between packets not already ordered by a dependency path.
    pub fn new(deps: Vec<Vec<usize>>, overlaps: impl Fn(usize, usize) -> bool) -> Graph {
        let n = deps.len();
        let reach = reachability(&deps);
        let mut conflicts = vec![Vec::new(); n];
        for a in 0..n {
            for b in (a + 1)..n {
                if !reach[a][b] && !reach[b][a] && overlaps(a, b) {
                    conflicts[a].push(b);
                    conflicts[b].push(a);
                }
            }
        }
        Graph { deps, conflicts }
    }

    /// Returns the number of packets.
    pub fn len(&self) -> usize {
        self.deps.len()
    }

    /// Returns true if and only if the plan has no packets.
    pub fn is_empty(&self) -> bool {
        self.deps.is_empty()
    }
}

/// `reach[a][b]` is true when `a` depends on `b`, directly or transitively.
fn reachability(deps: &[Vec<usize>]) -> Vec<Vec<bool>> {
    let n = deps.len();
    let mut reach = vec![vec![false; n]; n];
    for (start, row) in reach.iter_mut().enumerate() {
        let mut stack: Vec<usize> = deps[start].clone();
        while let Some(d) = stack.pop() {
            if d < n && !row[d] {
                row[d] = true;
                stack.extend(deps[d].iter().copied());
            }
        }
    }
    reach
}

/// What the scheduler wants done now.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Decision {
    /// Packets to start, in plan order.
    pub start: Vec<usize>,
    /// Pending packets that can never run, with the dependency that blocks them.
    pub skip: Vec<(usize, usize)>,
}

/// Returns the next decision given every packet's state and which are executing right now.
///
/// In-flight packets found at resume (`Running`/`Interrupted` but not executing) restart first:
/// their dependencies had succeeded when they began.
pub fn decide(
    graph: &Graph,
    states: &[PacketState],
    executing: &[bool],
    max_parallel: usize,
) -> Decision {
    let mut decision = Decision::default();
    for (i, state) in states.iter().enumerate() {
        if *state != PacketState::Pending {
            continue;
        }
        if let Some(&blocker) = graph.deps[i].iter().find(|&&d| {
            matches!(
                states[d],
                PacketState::Failed | PacketState::Skipped | PacketState::Cancelled
            )
        }) {
            decision.skip.push((i, blocker));
        }
    }
    let mut busy: Vec<bool> = executing.to_vec();
    let mut slots = max_parallel
        .max(1)
        .saturating_sub(busy.iter().filter(|b| **b).count());
    let restart = |i: usize| matches!(states[i], PacketState::Running | PacketState::Interrupted);
    let ready = |i: usize| {
        states[i] == PacketState::Pending
            && graph.deps[i]
                .iter()
                .all(|&d| states[d] == PacketState::Succeeded)
    };
    let order = (0..states.len())
        .filter(|&i| restart(i))
        .chain((0..states.len()).filter(|&i| !restart(i)));
    for i in order {
        if slots == 0 {
            break;
        }
        if busy[i] || !(restart(i) || ready(i)) {
            continue;
        }
        if graph.conflicts[i].iter().any(|&c| busy[c]) {
            continue;
        }
        busy[i] = true;
        slots -= 1;
        decision.start.push(i);
    }
    decision.start.sort_unstable();
    decision
}

#[cfg(test)]
mod tests {
    use super::*;
    use PacketState::*;

    fn graph(deps: &[&[usize]], overlapping: &[(usize, usize)]) -> Graph {
        Graph::new(deps.iter().map(|d| d.to_vec()).collect(), |a, b| {
            overlapping.contains(&(a, b)) || overlapping.contains(&(b, a))
        })
    }

    #[test]
    fn respects_dependencies_and_cap() {
        // 0 and 1 independent, 2 needs both.
        let g = graph(&[&[], &[], &[0, 1]], &[]);
        let d = decide(&g, &[Pending, Pending, Pending], &[false; 3], 4);
        assert_eq!(d.start, vec![0, 1]);
        let d = decide(&g, &[Pending, Pending, Pending], &[false; 3], 1);
        assert_eq!(d.start, vec![0]);
        let d = decide(&g, &[Succeeded, Running, Pending], &[false, true, false], 4);
        assert!(d.start.is_empty());
        let d = decide(&g, &[Succeeded, Succeeded, Pending], &[false; 3], 4);
        assert_eq!(d.start, vec![2]);
    }

    #[test]
    fn overlapping_packets_never_run_together() {
        let g = graph(&[&[], &[], &[]], &[(0, 1)]);
        let d = decide(&g, &[Pending, Pending, Pending], &[false; 3], 4);
        assert_eq!(d.start, vec![0, 2]);
        let d = decide(&g, &[Running, Pending, Succeeded], &[true, false, false], 4);
        assert!(d.start.is_empty());
        let d = decide(&g, &[Succeeded, Pending, Succeeded], &[false; 3], 4);
        assert_eq!(d.start, vec![1]);
    }

    #[test]
    fn overlap_along_a_dependency_path_is_not_a_conflict() {
        let g = graph(&[&[], &[0], &[1]], &[(0, 2)]);
        assert!(g.conflicts.iter().all(Vec::is_empty));
    }

    #[test]
    fn failed_dependency_skips_dependents() {
        let g = graph(&[&[], &[0], &[]], &[]);
        let d = decide(&g, &[Failed, Pending, Pending], &[false; 3], 4);
        assert_eq!(d.skip, vec![(1, 0)]);
        assert_eq!(d.start, vec![2]);
    }

    #[test]
    fn in_flight_packets_restart_first_on_resume() {
        let g = graph(&[&[], &[], &[]], &[]);
        let d = decide(&g, &[Pending, Interrupted, Running], &[false; 3], 2);
        assert_eq!(d.start, vec![1, 2]);
    }
}

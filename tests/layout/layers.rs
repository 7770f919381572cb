//! Checks on which layer may name which: the engine runs packets through seams (`Worker`,
//! `Executor`) and names neither the executors that implement them nor the forge they call.

use std::collections::BTreeSet;

use super::module_graph;

/// Returns every module `from` reaches through the graph's edges, `from` excluded.
fn reached(from: &str) -> BTreeSet<String> {
    let graph = module_graph();
    let mut seen = BTreeSet::new();
    let mut stack = vec![from.to_string()];
    while let Some(m) = stack.pop() {
        for next in graph.get(&m).into_iter().flatten() {
            if seen.insert(next.clone()) {
                stack.push(next.clone());
            }
        }
    }
    seen.remove(from);
    seen
}

#[test]
fn the_engine_reaches_neither_the_executors_nor_the_forge() {
    let below = reached("engine");
    assert!(
        below.contains("store") && below.contains("git"),
        "expected the engine's own modules below it, found {below:?}"
    );
    for above in ["executor", "forge", "orchestrator"] {
        assert!(
            !below.contains(above),
            "the engine reaches `{above}` ({below:?}); executors plug in through \
             `engine::Executor` from `src/executor/`, above the engine"
        );
    }
}

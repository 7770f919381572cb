//! Agent tools: JSON arguments, bounded answers, readable argument errors, the grep pointer and
//! the symbolic/textual counter.

use git_orchestra::nav::tools::{NavCounter, ToolError, call, tool_specs};
use serde_json::json;

use crate::nav::index;
use crate::support::TestRepo;

#[test]
fn tools_answer_within_bounds_and_count_symbolic_and_textual_calls() {
    let repo = TestRepo::with_files(&[
        (
            "a.py",
            "from b import beta\n\ndef alpha():\n    return beta()\n",
        ),
        ("b.py", "def beta():\n    return 1\n"),
    ]);
    let mut idx = index(&repo);
    let counter = NavCounter::default();
    let specs = tool_specs();
    assert!(specs.iter().all(|s| s.parameters["type"] == "object"));
    let out = call(
        &mut idx,
        &counter,
        "nav_def",
        &json!({"symbol": "beta", "from": "a.py:4"}),
    )
    .unwrap();
    assert!(
        out.contains("b.py:1:5 function beta") && out.contains("[resolved]"),
        "{out}"
    );
    let out = call(
        &mut idx,
        &counter,
        "nav_callers",
        &json!({"symbol": "beta", "max_chars": 200}),
    )
    .unwrap();
    assert!(
        out.chars().count() <= 200 && out.contains("a.py (in alpha): 4\n"),
        "{out}"
    );
    let out = call(&mut idx, &counter, "nav_show", &json!({"symbol": "alpha"})).unwrap();
    assert!(out.contains("def alpha():\n    return beta()"), "{out}");
    let out = call(&mut idx, &counter, "nav_map", &json!({"tokens": 64})).unwrap();
    assert!(out.contains("b.py"), "{out}");
    let grep = call(&mut idx, &counter, "grep", &json!({"pattern": "beta\\("})).unwrap();
    assert!(
        grep.contains("a.py:4:") && grep.contains("nav_refs"),
        "{grep}"
    );
    assert_eq!(counter.counts(), (4, 1));
    assert_eq!(counter.symbolic_share(), Some(0.8));
    match call(&mut idx, &counter, "nav_refs", &json!({})) {
        Err(ToolError::Arguments(m)) => assert!(m.contains("symbol"), "{m}"),
        other => panic!("{other:?}"),
    }
    match call(&mut idx, &counter, "nav_def", &json!({"symbol": "nope"})) {
        Err(ToolError::Arguments(m)) => assert!(m.contains("nav search"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn places_are_listed_by_file_and_show_source_lines_on_request() {
    let repo = TestRepo::with_files(&[
        (
            "a.py",
            "from b import beta\n\ndef alpha():\n    return beta()\n",
        ),
        (
            "b.py",
            "def beta():\n    return 1\n\ndef gamma():\n    beta()\n",
        ),
    ]);
    let mut idx = index(&repo);
    let counter = NavCounter::default();
    let compact = call(
        &mut idx,
        &counter,
        "nav_callers",
        &json!({"symbol": "beta"}),
    )
    .unwrap();
    assert_eq!(
        compact,
        "callers of beta: 2 resolved; each call unless marked\n\
         a.py (in alpha): 4\nb.py (in gamma): 5\n"
    );
    let full = call(
        &mut idx,
        &counter,
        "nav_callers",
        &json!({"symbol": "beta", "context": true}),
    )
    .unwrap();
    assert!(
        full.contains("a.py:4:12 call beta in alpha [resolved]\n    return beta()"),
        "{full}"
    );
    let spec = tool_specs()
        .into_iter()
        .find(|s| s.name == "nav_refs")
        .unwrap();
    assert_eq!(spec.parameters["properties"]["context"]["type"], "boolean");
}

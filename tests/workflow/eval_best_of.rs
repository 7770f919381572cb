//! The best-of-N arm of `git orchestra eval run` against the single arm, with a worker whose
//! success per task and candidate is known: the difference in resolved tasks is exactly the
//! tasks only some candidate solves, and `eval compare` says so.

use super::eval_fixtures::history;
use crate::support::{orchestra, text};

/// A worker of known success: multiplication is solved by candidate 2 only (the others write a
/// broken script, which the project's visible tests catch), subtraction by every candidate,
/// negation by none (a wrong answer the visible tests cannot see). Without a candidate number
/// it works as candidate 1.
const WORKER: &str = r#"k=${ORCHESTRA_CANDIDATE:-1}; if grep -q multiplication "$ORCHESTRA_PACKET_FILE"; then if [ "$k" = 2 ]; then echo 'mul() { echo $(($1 * $2)); }' >> src/calc.sh; else echo 'mul() {' >> src/calc.sh; fi; fi; if grep -q subtraction "$ORCHESTRA_PACKET_FILE"; then echo 'sub() { echo $(($1 - $2)); }' >> src/calc.sh; fi; if grep -q negation "$ORCHESTRA_PACKET_FILE"; then echo 'neg() { echo $1; }' >> src/calc.sh; fi"#;

#[test]
fn the_best_of_3_arm_resolves_the_task_only_its_second_candidate_solves() {
    let (repo, commits) = history();
    let single = format!("single=cmd:{WORKER}");
    let best = format!("best3=cmd[best_of=3]:{WORKER}");
    let out = orchestra(
        &repo.path,
        &[
            "eval",
            "run",
            "--from-history",
            "HEAD~3..HEAD",
            "--test",
            "sh run_tests.sh",
            "--arm",
            &single,
            "--arm",
            &best,
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let arm = |name: &str| {
        json["arms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == name)
            .unwrap_or_else(|| panic!("no arm {name}: {json}"))
            .clone()
    };
    assert_eq!(arm("single")["attempts"], 3, "{json}");
    assert_eq!(arm("best3")["attempts"], 3, "{json}");
    assert_eq!(arm("single")["resolved"], 1, "{json}");
    assert_eq!(arm("best3")["resolved"], 2, "{json}");
    let resolved = |arm: &str, task: &str| {
        json["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["arm"] == arm && a["task"] == task)
            .unwrap_or_else(|| panic!("no attempt {arm} {task}: {json}"))["resolved"]
            .clone()
    };
    // commits: multiplication, subtraction, negation.
    assert_eq!(resolved("single", &commits[0]), false, "{json}");
    assert_eq!(resolved("best3", &commits[0]), true, "{json}");
    for arm in ["single", "best3"] {
        assert_eq!(resolved(arm, &commits[1]), true, "{json}");
        assert_eq!(resolved(arm, &commits[2]), false, "{json}");
    }

    // `eval compare` pairs the arms task by task: one task only the best-of-3 arm resolves.
    let eval = json["eval"].as_str().unwrap();
    let out = orchestra(
        &repo.path,
        &[
            "eval", "compare", eval, "--arm", "best3", "--arm", "single", "--json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let cmp: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &cmp["comparisons"][0];
    assert_eq!(
        (
            c["pairs"].as_u64(),
            c["both"].as_u64(),
            c["only_a"].as_u64(),
            c["only_b"].as_u64(),
            c["neither"].as_u64()
        ),
        (Some(3), Some(1), Some(1), Some(0), Some(1)),
        "{cmp}"
    );
    let out = orchestra(
        &repo.path,
        &["eval", "compare", eval, "--arm", "best3", "--arm", "single"],
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("only A 1, only B 0"), "{said}");
}

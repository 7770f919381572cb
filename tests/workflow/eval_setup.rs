//! A suite task's `setup` command prepares every attempt's worktree before the arm works in it,
//! as it prepares the judging checkout: what it generates is there for the worker, an ignored
//! file it writes is no change, and a setup that fails there is classed `setup failed`, left
//! out of the arm's resolved rate.

use super::eval_fixtures::{arm, attempt};
use crate::support::{TestRepo, orchestra, text};

/// The hidden test of the `mul` tasks, as a test patch.
const PATCH: &str = "diff --git a/tests/test_mul.sh b/tests/test_mul.sh\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_mul.sh\n@@ -0,0 +1 @@\n+mul_small:[ \"$(mul 2 3)\" = 6 ]\n";

/// Returns the calculator repository (its `build/` ignored) with a suite beside it: `mul`,
/// whose setup generates `build/mul.sh`, and `broken`, whose setup fails.
fn repo_and_suite() -> (TestRepo, std::path::PathBuf) {
    let repo = TestRepo::with_files(&[
        (".gitignore", "build/\n"),
        ("run_tests.sh", super::eval_fixtures::PER_TEST_RUN_TESTS),
        ("src/calc.sh", "add() { echo $(($1 + $2)); }\n"),
        ("tests/test_add.sh", "add_small:[ \"$(add 1 2)\" = 3 ]\n"),
    ]);
    repo.git(&["tag", "v1"]);
    let mut lines = String::new();
    for (id, setup) in [
        (
            "mul",
            "mkdir -p build && echo 'mul() { echo $(($1 * $2)); }' > build/mul.sh",
        ),
        ("broken", "echo preparing the environment; exit 3"),
    ] {
        let task = serde_json::json!({
            "id": id, "repo": "repo", "base": "v1", "objective": "Add multiplication",
            "test_patch": PATCH, "fail_to_pass": ["tests/test_mul.sh::mul_small"],
            "check": "sh run_tests.sh", "setup": setup,
        });
        lines.push_str(&format!("{task}\n"));
    }
    let suite = repo.path.parent().unwrap().join("setup.jsonl");
    std::fs::write(&suite, lines).unwrap();
    (repo, suite)
}

#[test]
fn a_suite_setup_prepares_the_attempt_worktree_and_its_failure_is_not_held_against_the_arm() {
    let (repo, suite) = repo_and_suite();
    let out = orchestra(
        &repo.path,
        &[
            "eval",
            "run",
            suite.to_str().unwrap(),
            "--arm",
            "solver=cmd:cat build/mul.sh >> src/calc.sh",
            "--arm",
            "noop=cmd:true",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The worker reads what the setup generated in its own worktree.
    assert_eq!(attempt(&json, "solver", "mul")["resolved"], true, "{json}");
    // What the setup writes where the repository ignores it is no change of the worker's.
    assert_eq!(
        attempt(&json, "noop", "mul")["failure"],
        "no_change",
        "{json}"
    );
    // A setup failing before the arm starts says nothing about the arm.
    for name in ["solver", "noop"] {
        let broken = attempt(&json, name, "broken");
        assert_eq!(broken["failure"], "setup_failed", "{json}");
        let detail = broken["detail"].as_str().unwrap_or_default();
        assert!(detail.contains("preparing the environment"), "{json}");
        assert_eq!(arm(&json, name)["attempts"], 1, "{json}");
        assert_eq!(arm(&json, name)["failures"]["setup_failed"], 1, "{json}");
    }
    assert_eq!(arm(&json, "solver")["resolved"], 1, "{json}");
    assert_eq!(arm(&json, "solver")["rate"], 1.0, "{json}");
    // The table says so too.
    let table = orchestra(&repo.path, &["eval", "report"]);
    assert!(table.status.success(), "{}", text(&table));
    assert!(text(&table).contains("setup failed"), "{}", text(&table));
}

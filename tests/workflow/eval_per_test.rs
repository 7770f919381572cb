//! `git orchestra eval tasks --from-history` with a test runner that reports each test: the
//! candidates are judged test by test (FAIL_TO_PASS, PASS_TO_PASS), with exact lists.

use super::eval_fixtures::{PER_TEST_RUN_TESTS as RUN_TESTS, commit};
use crate::support::{TestRepo, orchestra, text};

/// Returns a repository whose base holds a passing test and a test broken at every commit,
/// then four candidates: a feature with new failing-before tests (valid despite the broken
/// test), a feature that breaks a passing test, a change whose new test already passed, and a
/// feature whose test fails at its own commit.
fn history() -> TestRepo {
    let repo = TestRepo::with_files(&[
        ("run_tests.sh", RUN_TESTS),
        ("src/calc.sh", "add() { echo $(($1 + $2)); }\n"),
        ("tests/test_add.sh", "add_small:[ \"$(add 1 2)\" = 3 ]\n"),
        ("tests/test_legacy.sh", "legacy_broken:false\n"),
    ]);
    let commit = |files: &[(&str, &str)], message: &str| commit(&repo, files, message);
    let mul = "add() { echo $(($1 + $2)); }\nmul() { echo $(($1 * $2)); }\n";
    commit(
        &[
            ("src/calc.sh", mul),
            (
                "tests/test_mul.sh",
                "mul_small:[ \"$(mul 2 3)\" = 6 ]\nmul_zero:[ \"$(mul 0 3)\" = 0 ]\n",
            ),
        ],
        "Add multiplication",
    );
    let sub = "add() { echo $(($1 - $2)); }\nmul() { echo $(($1 * $2)); }\nsub() { echo $(($1 - $2)); }\n";
    commit(
        &[
            ("src/calc.sh", sub),
            ("tests/test_sub.sh", "sub_small:[ \"$(sub 5 3)\" = 2 ]\n"),
        ],
        "Add subtraction",
    );
    commit(
        &[
            ("src/calc.sh", &format!("# Arithmetic.\n{sub}")),
            (
                "tests/test_mul.sh",
                "mul_small:[ \"$(mul 2 3)\" = 6 ]\nmul_zero:[ \"$(mul 0 3)\" = 0 ]\nmul_one:[ \"$(mul 1 7)\" = 7 ]\n",
            ),
        ],
        "Comment the calculator",
    );
    commit(
        &[
            (
                "src/calc.sh",
                &format!("# Arithmetic.\n{sub}neg() {{ echo $1; }}\n"),
            ),
            ("tests/test_neg.sh", "neg_one:[ \"$(neg 1)\" = -1 ]\n"),
        ],
        "Add negation",
    );
    repo
}

/// Regression: validity was judged by the test command's exit status only, so a test broken at
/// every commit made every candidate "tests fail after", and a commit breaking a passing test
/// while making its own new test pass counted like any other failure.
#[test]
fn a_runner_reporting_each_test_is_judged_test_by_test_with_exact_lists() {
    let repo = history();
    let out = orchestra(
        &repo.path,
        &[
            "eval",
            "tasks",
            "--from-history",
            "HEAD~4..HEAD",
            "--test",
            "sh run_tests.sh",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let tasks = v["tasks"].as_array().unwrap();
    let field = |i: usize, name: &str| tasks[i][name].clone();
    let reasons: Vec<&str> = tasks
        .iter()
        .map(|t| t["reason"].as_str().unwrap_or("valid"))
        .collect();
    assert_eq!(
        reasons,
        [
            "valid",
            "breaks_passing_tests",
            "tests_pass_before",
            "tests_fail_after"
        ],
        "{v}"
    );
    assert!(tasks.iter().all(|t| t["per_test"] == true), "{v}");
    assert_eq!(
        field(0, "fail_to_pass"),
        serde_json::json!([
            "tests/test_mul.sh::mul_small",
            "tests/test_mul.sh::mul_zero"
        ])
    );
    assert_eq!(
        field(0, "pass_to_pass"),
        serde_json::json!(["tests/test_add.sh::add_small"])
    );
    assert_eq!(
        field(1, "fail_to_pass"),
        serde_json::json!(["tests/test_sub.sh::sub_small"])
    );
    assert_eq!(
        field(1, "pass_to_pass"),
        serde_json::json!([
            "tests/test_mul.sh::mul_small",
            "tests/test_mul.sh::mul_zero"
        ])
    );
    assert_eq!(
        field(1, "detail"),
        "passing at the base, failing at the commit: tests/test_add.sh::add_small"
    );
    assert_eq!(field(2, "fail_to_pass"), serde_json::json!([]));
    assert_eq!(
        field(3, "detail"),
        "failing at the commit: tests/test_neg.sh::neg_one"
    );
    assert_eq!(
        v["counts"],
        serde_json::json!({"valid": 1, "tests_pass_before": 1, "tests_fail_after": 1,
            "breaks_passing_tests": 1})
    );
}

#[test]
fn the_list_names_the_fail_to_pass_tests_and_says_how_validity_was_judged() {
    let repo = history();
    let out = orchestra(
        &repo.path,
        &[
            "eval",
            "tasks",
            "--from-history",
            "HEAD~4..HEAD~2",
            "--test",
            "sh run_tests.sh",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for expected in [
        "fail to pass: tests/test_mul.sh::mul_small tests/test_mul.sh::mul_zero; pass to pass: 1",
        "invalid: breaks passing tests",
        "2 candidates: 1 valid, 1 breaks passing tests",
        "(2 judged test by test; any other checked by the test command's exit status)",
    ] {
        assert!(stdout.contains(expected), "{expected}: {}", text(&out));
    }
}

/// Returns a Python that runs pytest: `python3`, else the system's; `None` when there is none
/// (a failure instead when `ORCHESTRA_REQUIRE_PYTEST` is set, as CI sets it).
fn python_with_pytest() -> Option<String> {
    for python in ["python3", "/usr/bin/python3"] {
        let ok = std::process::Command::new(python)
            .args(["-m", "pytest", "--version"])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return Some(python.to_string());
        }
    }
    assert!(
        std::env::var_os("ORCHESTRA_REQUIRE_PYTEST").is_none(),
        "pytest is required (ORCHESTRA_REQUIRE_PYTEST) but `python3 -m pytest` does not run"
    );
    eprintln!("skipped: no python3 with pytest");
    None
}

#[test]
fn a_real_pytest_project_yields_exact_fail_to_pass_and_pass_to_pass_lists() {
    let Some(python) = python_with_pytest() else {
        return;
    };
    let repo = TestRepo::with_files(&[
        ("pytest.ini", "[pytest]\npythonpath = .\n"),
        ("calc.py", "def add(a, b):\n    return a + b\n"),
        (
            "tests/test_add.py",
            "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
        ),
    ]);
    repo.write(
        "calc.py",
        "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n",
    );
    repo.write(
        "tests/test_add.py",
        "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\ndef test_add_zero():\n    assert add(0, 0) == 0\n",
    );
    repo.write(
        "tests/test_mul.py",
        "from calc import mul\n\n\ndef test_mul_small():\n    assert mul(2, 3) == 6\n\n\ndef test_mul_zero():\n    assert mul(0, 3) == 0\n",
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "Add multiplication"]);
    let command = format!("{python} -m pytest -q -p no:cacheprovider");
    let out = orchestra(
        &repo.path,
        &[
            "eval",
            "tasks",
            "--from-history",
            "HEAD~1..HEAD",
            "--test",
            &command,
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let task = &v["tasks"][0];
    assert_eq!(task["valid"], true, "{v}");
    assert_eq!(task["per_test"], true, "{v}");
    assert_eq!(
        task["fail_to_pass"],
        serde_json::json!([
            "tests/test_mul.py::test_mul_small",
            "tests/test_mul.py::test_mul_zero"
        ]),
        "{v}"
    );
    // Narrowed to the changed test files: at the base alone only `tests/test_add.py` exists,
    // holding `test_add` (its `test_add_zero` is new and already passes with the hidden tests).
    assert_eq!(
        task["pass_to_pass"],
        serde_json::json!(["tests/test_add.py::test_add"]),
        "{v}"
    );
}

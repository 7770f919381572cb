//! `git orchestra eval run <SUITE>`: arms worked on the tasks of a suite file (the bundled
//! Python suite, our JSONL and SWE-bench's), each attempt in a clean repository made from the
//! task's own repository, judged by the task's test patch and its FAIL_TO_PASS / PASS_TO_PASS
//! tests or its check command.

use std::path::Path;

use super::eval_suite::{PYTHON_SOLUTIONS, calculator, tree};
use crate::support::{TestRepo, orchestra, text};

/// Returns the arm named `name` of an `eval run --json` output.
fn arm(json: &serde_json::Value, name: &str) -> serde_json::Value {
    json["arms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == name)
        .unwrap_or_else(|| panic!("no arm {name}: {json}"))
        .clone()
}

/// Returns the failure class of arm `arm`'s attempt at task `task`.
fn failure(json: &serde_json::Value, arm: &str, task: &str) -> serde_json::Value {
    json["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["arm"] == arm && a["task"] == task)
        .unwrap_or_else(|| panic!("no attempt {arm} {task}: {json}"))["failure"]
        .clone()
}

/// Returns `eval run <args>` in `dir`, which must succeed, parsed.
fn run(dir: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["eval", "run"];
    all.extend_from_slice(args);
    all.push("--json");
    let out = orchestra(dir, &all);
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)))
}

#[test]
fn the_bundled_python_suite_is_resolved_by_a_solver_and_by_nothing_else() {
    if !Path::new("/usr/bin/python3").exists() {
        eprintln!("skipped: no /usr/bin/python3");
        return;
    }
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/eval/python");
    let mut files = Vec::new();
    tree(&fixture.join("repo"), Path::new(""), &mut files);
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_str()))
        .collect();
    let repo = TestRepo::with_files(&files);
    repo.git(&["tag", "base"]);
    let suite = repo.path.parent().unwrap().join("python-suite.toml");
    std::fs::copy(fixture.join("suite.toml"), &suite).unwrap();
    // Solves `slugify` and `initials`, never `is_palindrome` (its solution is wrong).
    let solver = format!(
        "solver=cmd:cat >> textkit/words.py <<'END'\n{}\nEND",
        PYTHON_SOLUTIONS.replace("kept == kept", "kept != kept")
    );
    // Writes the hidden test files itself, passing trivially: it gets no credit.
    let cheat = "cheat=cmd:for t in slugify initials palindrome; do printf 'import unittest\\n' > tests/test_$t.py; done; echo '# touched' >> textkit/words.py";
    let json = run(
        &repo.path,
        &[
            suite.to_str().unwrap(),
            "--arm",
            &solver,
            "--arm",
            "noop=cmd:true",
            "--arm",
            cheat,
        ],
    );
    assert_eq!(arm(&json, "solver")["attempts"], 3, "{json}");
    assert_eq!(arm(&json, "solver")["resolved"], 2, "{json}");
    assert_eq!(arm(&json, "noop")["resolved"], 0, "{json}");
    assert_eq!(arm(&json, "cheat")["resolved"], 0, "{json}");
    assert_eq!(failure(&json, "solver", "slugify"), serde_json::Value::Null);
    assert_eq!(
        failure(&json, "solver", "initials"),
        serde_json::Value::Null
    );
    assert_eq!(failure(&json, "solver", "palindrome"), "tests_fail");
    assert_eq!(failure(&json, "noop", "slugify"), "no_change");
    for task in ["slugify", "initials", "palindrome"] {
        assert_eq!(failure(&json, "cheat", task), "tests_fail", "{json}");
    }
    // The source repository is as it was: no branch, no hidden test.
    assert_eq!(repo.git(&["branch", "--format=%(refname:short)"]), "main");
    assert!(!repo.path.join("tests/test_slugify.py").exists());
}

/// A worker that adds `mul`; with `BREAK` in its command it also breaks `add`.
const MUL: &str = "echo 'mul() { echo $(($1 * $2)); }' >> src/calc.sh";

#[test]
fn a_jsonl_and_a_swe_bench_suite_are_judged_test_by_test() {
    let repo = calculator();
    let base = repo.git(&["rev-parse", "v1"]);
    let patch = "diff --git a/tests/test_mul.sh b/tests/test_mul.sh\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_mul.sh\n@@ -0,0 +1 @@\n+mul_small:[ \"$(mul 2 3)\" = 6 ]\n";
    let ours = serde_json::json!({
        "id": "mul", "repo": "repo", "base": "v1", "objective": "Add multiplication",
        "test_patch": patch, "fail_to_pass": ["tests/test_mul.sh::mul_small"],
        "pass_to_pass": ["tests/test_add.sh::add_small"], "setup": "true",
    });
    let swe = serde_json::json!({
        "instance_id": "calc__calc-1", "repo": "calc/repo", "base_commit": base,
        "problem_statement": "There is no way to multiply", "test_patch": patch,
        "patch": "GOLD", "FAIL_TO_PASS": "[\"tests/test_mul.sh::mul_small\"]",
        "PASS_TO_PASS": "[\"tests/test_add.sh::add_small\"]",
    });
    let suite = repo.path.parent().unwrap().join("tiny.jsonl");
    std::fs::write(&suite, format!("{ours}\n{swe}\n")).unwrap();
    let dir = repo.path.parent().unwrap().to_str().unwrap().to_string();
    let solver = format!("solver=cmd:{MUL}");
    let breaker = format!("breaker=cmd:{MUL}; echo 'add() {{ echo 0; }}' >> src/calc.sh");
    let json = run(
        &repo.path,
        &[
            suite.to_str().unwrap(),
            "--repos-dir",
            &dir,
            "--test",
            "sh run_tests.sh",
            "--arm",
            &solver,
            "--arm",
            "noop=cmd:true",
            "--arm",
            &breaker,
        ],
    );
    assert_eq!(arm(&json, "solver")["resolved"], 2, "{json}");
    assert_eq!(arm(&json, "noop")["resolved"], 0, "{json}");
    assert_eq!(arm(&json, "breaker")["resolved"], 0, "{json}");
    for task in ["mul", "calc__calc-1"] {
        assert_eq!(failure(&json, "breaker", task), "tests_fail", "{json}");
        assert_eq!(failure(&json, "noop", task), "no_change", "{json}");
    }
    let detail = json["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["arm"] == "breaker")
        .unwrap()["detail"]
        .clone();
    assert!(
        detail.as_str().unwrap_or_default().contains("add_small"),
        "{json}"
    );
    // `eval report` reads the same eval back, its tasks named by their ids.
    let out = orchestra(&repo.path, &["eval", "report", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(arm(&report, "solver")["resolved"], 2, "{report}");
    // The hidden tests are in neither the report nor its output.
    assert!(!report.to_string().contains("mul_small:"), "{report}");
    assert!(!json.to_string().contains("mul_small:"), "{json}");
}

#[test]
fn a_suite_task_without_a_check_command_exits_2_naming_it() {
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    repo.git(&["tag", "v1"]);
    let body = "[[task]]\nid = \"t\"\nrepo = \"repo\"\nbase = \"v1\"\nobjective = \"o\"\ntests = [\"tests/test_a.py\"]\nfail_to_pass = [\"tests/test_a.py::t\"]\n";
    let suite = repo.path.parent().unwrap().join("s.toml");
    std::fs::write(&suite, body).unwrap();
    let out = orchestra(
        &repo.path,
        &[
            "eval",
            "run",
            suite.to_str().unwrap(),
            "--arm",
            "a=cmd:true",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("task `t`"), "{}", text(&out));
}

#[test]
fn a_suite_eval_killed_mid_attempt_resumes_with_its_tasks_repositories_and_checks() {
    use std::time::{Duration, Instant};
    let repo = calculator();
    repo.scratch_writable();
    let (started, go) = (repo.scratch().join("started"), repo.scratch().join("go"));
    let patch = "diff --git a/tests/test_mul.sh b/tests/test_mul.sh\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_mul.sh\n@@ -0,0 +1 @@\n+mul_small:[ \"$(mul 2 3)\" = 6 ]\n";
    let mut lines = String::new();
    for id in ["first", "second"] {
        let task = serde_json::json!({
            "id": id, "repo": "repo", "base": "v1", "objective": format!("Add multiplication ({id})"),
            "test_patch": patch, "fail_to_pass": ["tests/test_mul.sh::mul_small"],
            "check": "sh run_tests.sh",
        });
        lines.push_str(&format!("{task}\n"));
    }
    let suite = repo.path.parent().unwrap().join("two.jsonl");
    std::fs::write(&suite, lines).unwrap();
    // The second task's first attempt hangs until `go` exists: that one is killed.
    let solver = format!(
        "solver=cmd:if grep -q second \"$ORCHESTRA_PACKET_FILE\" && [ ! -e {go} ]; then touch {started}; sleep 60; fi; {MUL}",
        go = go.display(),
        started = started.display()
    );
    let mut child = crate::support::orchestra_command(
        &repo.path,
        &["eval", "run", suite.to_str().unwrap(), "--arm", &solver],
    )
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !started.exists() {
        assert!(
            Instant::now() < deadline,
            "the second attempt never started"
        );
        assert!(child.try_wait().unwrap().is_none(), "the eval ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    std::fs::write(&go, "").unwrap();
    let out = orchestra(&repo.path, &["eval", "resume", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(arm(&json, "solver")["attempts"], 2, "{json}");
    assert_eq!(arm(&json, "solver")["resolved"], 2, "{json}");
    assert_eq!(failure(&json, "solver", "second"), serde_json::Value::Null);
}

//! `git orchestra eval tasks <SUITE>`: task suites read from files (our TOML and JSONL, and
//! SWE-bench's JSONL) and listed as the same tasks history mining yields; a bad file exits 2
//! naming the task and the field, with nothing changed.

use std::path::{Path, PathBuf};

use super::eval_fixtures::state;
use crate::support::{TestRepo, orchestra, text};

/// Returns a calculator repository whose first commit is tagged `v1`, the suites' base; its
/// `run_tests.sh` prints a `PASSED` / `FAILED` line per test.
pub(super) fn calculator() -> TestRepo {
    let repo = TestRepo::with_files(&[
        ("run_tests.sh", super::eval_fixtures::PER_TEST_RUN_TESTS),
        ("src/calc.sh", "add() { echo $(($1 + $2)); }\n"),
        ("tests/test_add.sh", "add_small:[ \"$(add 1 2)\" = 3 ]\n"),
    ]);
    repo.git(&["tag", "v1"]);
    repo
}

/// Returns where the fixture suite `name` is copied: beside the repository, as the suite's
/// relative `repo = "repo"` expects.
fn place(repo: &TestRepo, name: &str) -> PathBuf {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/eval")
        .join(name);
    let to = repo.path.parent().unwrap().join(name);
    std::fs::copy(fixture, &to).unwrap();
    to
}

/// Returns `eval tasks <suite> --json <extra>` run in the repository, parsed.
fn listed(repo: &TestRepo, suite: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["eval", "tasks", suite.to_str().unwrap(), "--json"];
    args.extend_from_slice(extra);
    let out = orchestra(&repo.path, &args);
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[test]
fn our_toml_and_jsonl_suites_list_the_same_tasks() {
    let repo = calculator();
    let base = repo.git(&["rev-parse", "v1"]);
    let before = state(&repo.path);
    for name in ["suite.toml", "suite.jsonl"] {
        let v = listed(&repo, &place(&repo, name), &[]);
        let tasks = v["tasks"].as_array().unwrap();
        assert_eq!(tasks.len(), 2, "{name}: {v}");
        let mul = &tasks[0];
        assert_eq!(mul["id"], "mul", "{name}");
        assert_eq!(mul["base"], base.as_str(), "{name}");
        assert_eq!(
            mul["objective"], "Add multiplication\n\nmul multiplies its two arguments.",
            "{name}"
        );
        assert_eq!(mul["tests"], serde_json::json!(["tests/test_mul.sh"]));
        assert_eq!(
            mul["fail_to_pass"],
            serde_json::json!(["tests/test_mul.sh::mul_small"])
        );
        assert_eq!(
            mul["pass_to_pass"],
            serde_json::json!(["tests/test_add.sh::add_small"])
        );
        assert_eq!(mul["setup"], "true");
        assert!(
            mul.get("test_patch").is_none(),
            "{name}: the hidden tests were shown"
        );
        let three = &tasks[1];
        assert_eq!(three["id"], "add-three");
        assert_eq!(three["tests"], serde_json::json!(["tests/test_add.sh"]));
        assert_eq!(three["check"], "sh run_tests.sh");
        assert_eq!(three["fail_to_pass"], serde_json::json!([]));
        assert_eq!(
            Path::new(three["repo"].as_str().unwrap())
                .canonicalize()
                .unwrap(),
            repo.path.canonicalize().unwrap()
        );
    }
    let out = orchestra(
        &repo.path,
        &[
            "eval",
            "tasks",
            place(&repo, "suite.toml").to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for expected in [
        format!(
            "mul {} 1 fail to pass, 1 pass to pass; hidden tests: tests/test_mul.sh",
            &base[..10]
        ),
        "    Add multiplication".to_string(),
        "add-three".to_string(),
        "check `sh run_tests.sh`; hidden tests: tests/test_add.sh".to_string(),
        "2 tasks in".to_string(),
    ] {
        assert!(stdout.contains(&expected), "{expected}: {}", text(&out));
    }
    assert_eq!(state(&repo.path), before, "the repository changed");
}

#[test]
fn a_swe_bench_suite_finds_its_repository_under_repos_dir_and_never_shows_the_gold_patch() {
    let repo = calculator();
    let suite = place(&repo, "swe-bench.jsonl");
    let dir = repo.path.parent().unwrap().to_str().unwrap().to_string();
    let out = orchestra(
        &repo.path,
        &[
            "eval",
            "tasks",
            suite.to_str().unwrap(),
            "--json",
            "--repos-dir",
            &dir,
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("GOLD_SOLUTION"),
        "{}",
        text(&out)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let task = &v["tasks"][0];
    assert_eq!(task["id"], "example__repo-1");
    assert_eq!(task["base"], repo.git(&["rev-parse", "v1"]).as_str());
    assert_eq!(
        task["objective"],
        "There is no way to multiply\n\nadd adds; nothing multiplies."
    );
    assert_eq!(task["tests"], serde_json::json!(["tests/test_mul.sh"]));
    assert_eq!(
        task["fail_to_pass"],
        serde_json::json!(["tests/test_mul.sh::mul_small"])
    );
    assert_eq!(
        task["pass_to_pass"],
        serde_json::json!(["tests/test_add.sh::add_small"])
    );
    // `DIR/owner__name` is looked up before `DIR/name`.
    std::fs::create_dir(repo.path.parent().unwrap().join("example__repo")).unwrap();
    let out = orchestra(
        &repo.path,
        &[
            "eval",
            "tasks",
            suite.to_str().unwrap(),
            "--repos-dir",
            &dir,
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("line 1 (task `example__repo-1`): field `repo`"),
        "{}",
        text(&out)
    );
}

/// Writes `body` as a suite file named `name` beside the repository and returns its path.
fn suite(repo: &TestRepo, name: &str, body: &str) -> PathBuf {
    let path = repo.path.parent().unwrap().join(name);
    std::fs::write(&path, body).unwrap();
    path
}

#[test]
fn each_kind_of_bad_suite_exits_2_naming_the_task_and_the_field_with_nothing_changed() {
    let repo = calculator();
    let before = state(&repo.path);
    let good = r#""id": "t", "repo": "repo", "base": "v1", "objective": "o", "tests": ["tests/a.sh"], "check": "true""#;
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "missing.jsonl",
            format!("{{{good}}}\n{{\"id\": \"u\", \"repo\": \"repo\", \"objective\": \"o\", \"tests\": [\"a\"], \"check\": \"true\"}}\n"),
            "line 2 (task `u`): field `base` is missing",
        ),
        (
            "type.jsonl",
            format!("{{{good}, \"fail_to_pass\": \"tests/a.sh::x\"}}\n"),
            "line 1 (task `t`): field `fail_to_pass` must be a list of strings",
        ),
        (
            "unknown.jsonl",
            format!("{{{good}, \"bsae\": \"v1\"}}\n"),
            "line 1 (task `t`): field `bsae` is not a task field",
        ),
        (
            "url.jsonl",
            format!("{{{}}}\n", good.replace("\"repo\": \"repo\"", "\"repo\": \"https://example.com/x.git\"")),
            "field `repo` is a URL (`https://example.com/x.git`): evaluation uses local repositories only",
        ),
        (
            "base.jsonl",
            format!("{{{}}}\n", good.replace("\"v1\"", "\"v9\"")),
            "line 1 (task `t`): field `base` `v9` names no commit",
        ),
        (
            "duplicate.jsonl",
            format!("{{{good}}}\n{{{good}}}\n"),
            "line 2 (task `t`): field `id` repeats the id `t`",
        ),
        (
            "json.jsonl",
            format!("{{{good}}}\n{{\"id\": \n"),
            "line 2 is not valid JSON",
        ),
        (
            "check.jsonl",
            format!("{{{}}}\n", good.replace(", \"check\": \"true\"", "")),
            "line 1 (task `t`): field `fail_to_pass` is missing: name the tests",
        ),
        (
            "patch.toml",
            "[[task]]\nid = \"t\"\nrepo = \"repo\"\nbase = \"v1\"\nobjective = \"o\"\ntest_patch = \"not a diff\"\ncheck = \"true\"\n".to_string(),
            "task 1 (task `t`): field `test_patch` names no file",
        ),
        (
            "toml.toml",
            "[[task]]\nid = \"t\"\nbase = 3\n".to_string(),
            "task 1 (task `t`): field `repo` is missing",
        ),
        (
            "swe.jsonl",
            "{\"instance_id\": \"a__b-1\", \"repo\": \"a/b\", \"base_commit\": \"v1\", \"problem_statement\": \"p\", \"test_patch\": \"--- a/t.py\\n+++ b/t.py\\n\", \"FAIL_TO_PASS\": \"[]\"}\n".to_string(),
            "line 1 (task `a__b-1`): field `repo` names `a/b`, which is no local repository: give `--repos-dir DIR`",
        ),
        (
            "encoded.jsonl",
            "{\"instance_id\": \"a__b-1\", \"repo\": \"repo\", \"base_commit\": \"v1\", \"problem_statement\": \"p\", \"test_patch\": \"--- a/t.py\\n+++ b/t.py\\n\", \"FAIL_TO_PASS\": \"[\\\"x\\\"\"}\n".to_string(),
            "line 1 (task `a__b-1`): field `FAIL_TO_PASS` must be a list of strings or a JSON-encoded one",
        ),
    ];
    for (name, body, expected) in cases {
        let path = suite(&repo, name, &body);
        let out = orchestra(&repo.path, &["eval", "tasks", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", text(&out));
        assert!(
            text(&out).contains(expected),
            "{name}: {expected}: {}",
            text(&out)
        );
        assert!(out.stdout.is_empty(), "{name}: {}", text(&out));
    }
    assert_eq!(state(&repo.path), before, "the repository changed");
}

#[test]
fn check_runs_each_suite_task_at_its_base_and_judges_it_per_test() {
    let repo = calculator();
    let before = state(&repo.path);
    let patch = |body: &str| {
        format!(
            "--- /dev/null\\n+++ b/tests/test_new.sh\\n@@ -0,0 +1 @@\\n+{}\\n",
            body.replace('"', "\\\"")
        )
    };
    let task = |id: &str, extra: &str| {
        format!(
            "{{\"id\": \"{id}\", \"repo\": \"repo\", \"base\": \"v1\", \"objective\": \"o\", {extra}}}\n"
        )
    };
    let body = [
        task(
            "fails-before",
            &format!(
                "\"test_patch\": \"{}\", \"fail_to_pass\": [\"tests/test_new.sh::mul_small\"], \"pass_to_pass\": [\"tests/test_add.sh::add_small\"]",
                patch("mul_small:[ \"$(mul 2 3)\" = 6 ]")
            ),
        ),
        task(
            "passes-before",
            &format!(
                "\"test_patch\": \"{}\", \"fail_to_pass\": [\"tests/test_new.sh::add_zero\"]",
                patch("add_zero:[ \"$(add 0 0)\" = 0 ]")
            ),
        ),
        task(
            "setup-fails",
            "\"tests\": [\"tests/test_add.sh\"], \"fail_to_pass\": [\"x\"], \"setup\": \"exit 3\"",
        ),
        task(
            "patch-fails",
            "\"test_patch\": \"--- a/tests/test_add.sh\\n+++ b/tests/test_add.sh\\n@@ -1 +1 @@\\n-nothing like this\\n+x\\n\", \"fail_to_pass\": [\"x\"]",
        ),
        task(
            "check-passes",
            "\"tests\": [\"tests/test_add.sh\"], \"check\": \"true\"",
        ),
    ]
    .concat();
    let path = suite(&repo, "check.jsonl", &body);
    let v = listed(&repo, &path, &["--check", "--test", "sh run_tests.sh"]);
    let verdicts: Vec<(String, String)> = v["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["reason"].as_str().unwrap_or("valid").to_string(),
                t["detail"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(verdicts[0], ("valid".to_string(), String::new()), "{v}");
    assert_eq!(
        verdicts[1],
        (
            "tests_pass_before".to_string(),
            "FAIL_TO_PASS tests pass at the base: tests/test_new.sh::add_zero".to_string()
        )
    );
    assert_eq!(verdicts[2].0, "setup_failed");
    assert_eq!(verdicts[2].1, "the setup command `exit 3` failed");
    assert_eq!(verdicts[3].0, "setup_failed");
    assert!(
        verdicts[3]
            .1
            .starts_with("the test patch does not apply at the base"),
        "{v}"
    );
    assert_eq!(verdicts[4].0, "tests_pass_before", "{v}");
    let out = orchestra(
        &repo.path,
        &[
            "eval",
            "tasks",
            path.to_str().unwrap(),
            "--check",
            "--test",
            "sh run_tests.sh",
        ],
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("5 tasks in ")
            && String::from_utf8_lossy(&out.stdout)
                .contains(": 1 valid, 2 tests pass before, 2 setup failed"),
        "{}",
        text(&out)
    );
    assert_eq!(state(&repo.path), before, "the repository changed");
    let left = std::fs::read_dir(git_orchestra::exec::outside_dir(
        &repo.path.join(".git"),
        ".scratch",
    ))
    .map(|d| d.count())
    .unwrap_or(0);
    assert_eq!(left, 0, "a scratch checkout was left behind");
}

/// Reference solutions of the bundled Python suite's tasks (`fixtures/eval/python/`), added to
/// `textkit/words.py` to show that its hidden tests can be passed.
pub(super) const PYTHON_SOLUTIONS: &str = r#"

def slugify(text):
    words = "".join(c.lower() if c.isalnum() else " " for c in text).split()
    return "-".join(words)


def initials(name):
    return "".join(word[0].upper() for word in name.split())


def is_palindrome(text):
    kept = [c.lower() for c in text if c.isalnum()]
    return kept == kept[::-1]
"#;

/// Returns every file under `dir` as (path relative to `dir`, contents).
pub(super) fn tree(dir: &Path, rel: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir.join(rel)).unwrap() {
        let entry = entry.unwrap();
        let name = rel.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            tree(dir, &name, out);
        } else if !name.to_string_lossy().contains("__pycache__") {
            let body = std::fs::read_to_string(entry.path()).unwrap();
            out.push((name.to_string_lossy().into_owned(), body));
        }
    }
}

#[test]
fn the_bundled_python_suite_fails_at_its_base_and_passes_with_a_solution() {
    let python = std::process::Command::new("python3")
        .arg("--version")
        .output();
    if !python.is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: no python3");
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
    let v = listed(&repo, &suite, &["--check"]);
    let tasks = v["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 3, "{v}");
    for task in tasks {
        assert!(task["reason"].is_null(), "{v}");
    }
    // Every hidden test passes once the functions exist, and the base's test still does.
    let parsed: toml::Table = std::fs::read_to_string(&suite).unwrap().parse().unwrap();
    for task in parsed["task"].as_array().unwrap() {
        let patch = repo.tmp.path().join("hidden.patch");
        std::fs::write(&patch, task["test_patch"].as_str().unwrap()).unwrap();
        repo.git(&["apply", patch.to_str().unwrap()]);
    }
    let words = repo.path.join("textkit/words.py");
    let mut body = std::fs::read_to_string(&words).unwrap();
    body.push_str(PYTHON_SOLUTIONS);
    std::fs::write(&words, body).unwrap();
    let out = std::process::Command::new("sh")
        .args(["run_tests.sh"])
        .current_dir(&repo.path)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Ran 7 tests"),
        "{}",
        text(&out)
    );
}

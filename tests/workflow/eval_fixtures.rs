//! Fixtures the eval tests share: small shell projects whose history holds tasks, the test
//! runners that judge them, and what a read-only command must leave unchanged.

use std::path::Path;

use crate::support::{TestRepo, git, refs};

/// Runs every `tests/test_*.sh`; fails when one fails.
pub(super) const RUN_TESTS: &str = "fail=0\nfor t in tests/test_*.sh; do sh \"$t\" || { echo \"FAIL $t\"; fail=1; }; done\nexit $fail\n";

/// Returns a repository whose three last commits are valid tasks (multiplication,
/// subtraction, negation, each with its test), and their commit ids.
pub(crate) fn history() -> (TestRepo, Vec<String>) {
    let repo = TestRepo::with_files(&[
        ("run_tests.sh", RUN_TESTS),
        ("src/calc.sh", "add() { echo $(($1 + $2)); }\n"),
        (
            "tests/test_add.sh",
            ". ./src/calc.sh\n[ \"$(add 1 2)\" = 3 ]\n",
        ),
    ]);
    let mut calc = "add() { echo $(($1 + $2)); }\n".to_string();
    let mut commits = Vec::new();
    for (name, body, test, message) in [
        (
            "mul",
            "mul() { echo $(($1 * $2)); }\n",
            "[ \"$(mul 2 3)\" = 6 ]\n",
            "Add multiplication\n\nmul multiplies its two arguments.",
        ),
        (
            "sub",
            "sub() { echo $(($1 - $2)); }\n",
            "[ \"$(sub 5 3)\" = 2 ]\n",
            "Add subtraction\n\nsub subtracts its second argument from its first.",
        ),
        (
            "neg",
            "neg() { echo $((0 - $1)); }\n",
            "[ \"$(neg 4)\" = -4 ]\n",
            "Add negation\n\nneg negates its argument.",
        ),
    ] {
        calc.push_str(body);
        repo.write("src/calc.sh", &calc);
        repo.write(
            &format!("tests/test_{name}.sh"),
            &format!(". ./src/calc.sh\n{test}"),
        );
        commits.push(commit(&repo, &[], message));
    }
    (repo, commits)
}

/// Runs each `name:command` line of every `tests/test_*.sh` as one test and prints pytest's
/// `-rA` summary lines for it; fails when one fails.
pub(super) const PER_TEST_RUN_TESTS: &str = r#"fail=0
for t in tests/test_*.sh; do
  while IFS=: read -r name cmd; do
    [ -n "$name" ] || continue
    if (. ./src/calc.sh; eval "$cmd") </dev/null >/dev/null 2>&1; then
      echo "PASSED $t::$name"
    else
      echo "FAILED $t::$name - assertion failed"; fail=1
    fi
  done < "$t"
done
exit $fail
"#;

/// Writes `files` (path, contents) into `repo`, commits everything with `message` and returns
/// the new commit's id.
pub(super) fn commit(repo: &TestRepo, files: &[(&str, &str)], message: &str) -> String {
    for (path, body) in files {
        repo.write(path, body);
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", message]);
    repo.git(&["rev-parse", "HEAD"])
}

/// Returns what a run of `eval tasks` must not change: refs, worktrees, branches, status.
pub(super) fn state(repo: &Path) -> String {
    format!(
        "{}\n{}\n{}",
        refs(repo),
        git(repo, &["worktree", "list", "--porcelain"]),
        git(repo, &["status", "--porcelain", "--untracked-files=all"])
    )
}

/// Starts a scripted model serving `scripts` and points the coder role of `repo` at it.
pub(super) fn coder_on(
    repo: &TestRepo,
    scripts: serde_json::Value,
) -> git_orchestra::demo::MockModel {
    let model = git_orchestra::demo::MockModel::start(
        git_orchestra::demo::parse_scripts(&scripts.to_string()).unwrap(),
    )
    .unwrap();
    repo.user_config(&format!(
        "[profiles.mock]\nprovider = \"openai-compatible\"\nmodel = \"mock-model\"\nbase_url = \"{}\"\n\n[roles.coder]\nprofile = \"mock\"\n",
        model.url
    ));
    model
}

/// Returns the arm named `name` in the arm table of an `eval run --json` output.
pub(super) fn arm<'a>(json: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    json["arms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == name)
        .unwrap_or_else(|| panic!("no arm {name}: {json}"))
}

/// Returns the attempt of arm `arm` at task `task` of an `eval run --json` output.
pub(super) fn attempt<'a>(
    json: &'a serde_json::Value,
    arm: &str,
    task: &str,
) -> &'a serde_json::Value {
    json["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["arm"] == arm && a["task"] == task)
        .unwrap_or_else(|| panic!("no attempt of {arm} at {task}: {json}"))
}

/// Runs `eval run` over the range `range` of `repo` with `arms` and `env`, the test command
/// `sh run_tests.sh`; returns the JSON it printed (the run must succeed).
pub(super) fn eval(
    repo: &TestRepo,
    range: &str,
    arms: &[&str],
    env: &[(&str, &str)],
) -> serde_json::Value {
    let mut args = vec![
        "eval",
        "run",
        "--from-history",
        range,
        "--test",
        "sh run_tests.sh",
        "--json",
    ];
    for arm in arms {
        args.extend(["--arm", arm]);
    }
    let out = crate::support::orchestra_with_env(&repo.path, &args, env);
    assert!(out.status.success(), "{}", crate::support::text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Asserts that `eval run` over the last three commits of `repo` refuses each arm of `cases`
/// (arm, what the error says) as bad input, and that nothing changed: `repo`'s refs are still
/// `before` and no attempt directory was made.
pub(super) fn assert_arms_refused(repo: &TestRepo, before: &str, cases: &[(&str, &str)]) {
    for (arm, says) in cases {
        let out = crate::support::orchestra(
            &repo.path,
            &[
                "eval",
                "run",
                "--from-history",
                "HEAD~3..HEAD",
                "--test",
                "sh run_tests.sh",
                "--arm",
                arm,
            ],
        );
        assert_eq!(
            out.status.code(),
            Some(2),
            "{arm}: {}",
            crate::support::text(&out)
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{arm}: {err}");
    }
    assert_eq!(refs(&repo.path), before);
    assert!(!git_orchestra::exec::outside_dir(&repo.path.join(".git"), ".evals").exists());
}

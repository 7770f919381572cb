//! `git orchestra eval run`: arms of worker commands on the valid tasks of a small shell
//! project's history, each attempt in a clean repository, judged by the hidden tests.

use crate::support::{TestRepo, orchestra, orchestra_with_env, refs, text};

/// Runs every `tests/test_*.sh`; fails when one fails.
pub(super) const RUN_TESTS: &str = "fail=0\nfor t in tests/test_*.sh; do sh \"$t\" || { echo \"FAIL $t\"; fail=1; }; done\nexit $fail\n";

/// Returns a repository whose three last commits are valid tasks (multiplication,
/// subtraction, negation, each with its test), and their commit ids.
pub(super) fn history() -> (TestRepo, Vec<String>) {
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
        repo.git(&["add", "-A"]);
        repo.git(&["commit", "-q", "-m", message]);
        commits.push(repo.git(&["rev-parse", "HEAD"]));
    }
    (repo, commits)
}

/// A worker that solves the multiplication and subtraction tasks: it appends the function
/// the objective names.
const SOLVER: &str = "cmd:if grep -q multiplication \"$ORCHESTRA_PACKET_FILE\"; then echo 'mul() { echo $(($1 * $2)); }' >> src/calc.sh; fi; if grep -q subtraction \"$ORCHESTRA_PACKET_FILE\"; then echo 'sub() { echo $(($1 - $2)); }' >> src/calc.sh; fi";

/// A worker that makes every test file pass trivially instead of solving anything.
const CHEAT: &str = "cmd:for t in mul sub neg; do echo 'exit 0' > tests/test_$t.sh; done";

#[test]
fn arms_resolve_exactly_what_they_solve_and_nothing_leaks_or_cheats() {
    let (repo, commits) = history();
    let before = refs(&repo.path);
    // Tries every git route to the answer: every ref, reflog and the task commits by id, in
    // the attempt's repository and in every directory above it (the source repository holds
    // the attempt's; the worker sandbox keeps it from reading there).
    let peek = format!(
        "cmd:d=$(pwd); while :; do for c in $(git -C \"$d\" log --all --reflog --format=%H 2>/dev/null) {}; do git -C \"$d\" show \"$c:src/calc.sh\" > .peek 2>/dev/null && grep -q '^mul\\|^sub\\|^neg' .peek && cp .peek src/calc.sh; done; [ \"$d\" = / ] && break; d=$(dirname \"$d\"); done; rm -f .peek; true",
        commits.join(" ")
    );
    let solver = format!("solver={SOLVER}");
    let cheat = format!("cheat={CHEAT}");
    let peek = format!("peek={peek}");
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
            &solver,
            "--arm",
            "noop=cmd:true",
            "--arm",
            &cheat,
            "--arm",
            &peek,
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
    for (name, resolved) in [("solver", 2), ("noop", 0), ("cheat", 0), ("peek", 0)] {
        assert_eq!(arm(name)["attempts"], 3, "{name}: {json}");
        assert_eq!(arm(name)["resolved"], resolved, "{name}: {json}");
    }
    assert_eq!(arm("noop")["failures"], serde_json::json!({"no_change": 3}));
    assert_eq!(
        arm("cheat")["failures"],
        serde_json::json!({"tests_fail": 3})
    );
    let attempts = json["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 12);
    let failure = |arm: &str, task: &str| {
        attempts
            .iter()
            .find(|a| a["arm"] == arm && a["task"] == task)
            .unwrap()["failure"]
            .clone()
    };
    assert_eq!(failure("solver", &commits[0]), serde_json::Value::Null);
    assert_eq!(failure("solver", &commits[2]), "no_change");
    for task in &commits {
        assert_eq!(failure("noop", task), "no_change", "{json}");
        assert_eq!(failure("cheat", task), "tests_fail", "{json}");
        assert_eq!(failure("peek", task), "no_change", "{json}");
    }
    // The source repository is as it was, and no attempt repository is left.
    assert_eq!(refs(&repo.path), before);
    let evals = git_orchestra::exec::outside_dir(&repo.path.join(".git"), ".evals");
    for eval in std::fs::read_dir(&evals).unwrap() {
        let left: Vec<_> = std::fs::read_dir(eval.unwrap().path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n != "lock")
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}

#[test]
fn a_bad_arm_is_refused_by_name_before_anything_runs() {
    let (repo, _) = history();
    let before = refs(&repo.path);
    for (arm, says) in [
        ("nameless", "has no name"),
        ("x=cmd:", "needs a command"),
        ("x=cli:claude", "not supported yet"),
        ("x=agent:", "needs a role name"),
        // Without a model profile (the test home has none), checked before any mining.
        ("x=agent:coder", "no model profile for role `coder`"),
        ("x=agent:nosuchrole", "unknown role `nosuchrole`"),
        ("x=teleport:now", "unknown kind"),
    ] {
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
                arm,
            ],
        );
        assert_eq!(out.status.code(), Some(2), "{arm}: {}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{arm}: {err}");
    }
    assert_eq!(refs(&repo.path), before);
    assert!(!git_orchestra::exec::outside_dir(&repo.path.join(".git"), ".evals").exists());
}

#[test]
fn repeats_count_each_attempt_and_jobs_run_attempts_at_once() {
    let (repo, _) = history();
    repo.scratch_writable();
    let scratch = repo.scratch();
    // Each worker marks itself running and waits (up to 20 s) to see another one running.
    let worker = format!(
        "solver={SOLVER}; touch {s}/running.$$; i=0; while [ $i -lt 200 ]; do \
         [ $(ls {s} | grep -c '^running\\.') -ge 2 ] && {{ echo overlap >> {s}/overlaps; break; }}; \
         sleep 0.1; i=$((i + 1)); done; rm -f {s}/running.$$",
        s = scratch.display()
    );
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
            &worker,
            "--repeat",
            "2",
            "--jobs",
            "3",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["arms"][0]["attempts"], 6, "{json}");
    assert_eq!(json["arms"][0]["resolved"], 4, "{json}");
    let mut keys: Vec<(String, u64)> = json["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["task"].as_str().unwrap().to_string(),
                a["repeat"].as_u64().unwrap(),
            )
        })
        .collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 6, "each task twice, no duplicate: {json}");
    let overlaps = std::fs::read_to_string(scratch.join("overlaps")).unwrap_or_default();
    assert!(!overlaps.is_empty(), "no two attempts ran at once");
    let report = orchestra(&repo.path, &["eval", "report", "--json"]);
    let stored: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(stored["arms"][0]["attempts"], 6, "{stored}");
    assert_eq!(stored["finished"], true);
}

#[test]
fn an_agent_arm_works_each_task_with_the_configured_model() {
    let (repo, commits) = history();
    // The scripted coder solves the multiplication task and gives up on the others.
    let scripts = serde_json::json!([
        {"name": "mul", "match": ["# Coder", "Add multiplication"], "replies": [
            {"calls": [{"name": "write_file", "args": {"path": "src/calc.sh",
                "content": "add() { echo $(($1 + $2)); }\nmul() { echo $(($1 * $2)); }\n"}}]},
            {"calls": [{"name": "complete", "args": {"summary": "added mul"}}]}]},
        {"name": "other", "match": ["# Coder"], "replies": [
            {"calls": [{"name": "complete", "args": {"summary": "cannot"}}]},
            {"calls": [{"name": "complete", "args": {"summary": "cannot"}}]},
            {"calls": [{"name": "complete", "args": {"summary": "cannot"}}]},
            {"calls": [{"name": "complete", "args": {"summary": "cannot"}}]}]}
    ]);
    let model = git_orchestra::demo::MockModel::start(
        git_orchestra::demo::parse_scripts(&scripts.to_string()).unwrap(),
    )
    .unwrap();
    let env = [
        ("ORCHESTRA_PROVIDER", "openai-compatible"),
        ("ORCHESTRA_BASE_URL", model.url.as_str()),
        ("ORCHESTRA_MODEL", "scripted"),
    ];
    let out = orchestra_with_env(
        &repo.path,
        &[
            "eval",
            "run",
            "--from-history",
            "HEAD~3..HEAD",
            "--test",
            "sh run_tests.sh",
            "--arm",
            "ours=agent:coder",
            "--json",
        ],
        &env,
    );
    assert!(out.status.success(), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["arms"][0]["attempts"], 3, "{json}");
    assert_eq!(json["arms"][0]["resolved"], 1, "{json}");
    let attempts = json["attempts"].as_array().unwrap();
    let first = attempts.iter().find(|a| a["task"] == commits[0]).unwrap();
    assert_eq!(first["resolved"], true, "{json}");
    assert!(first["tokens_in"].as_u64().unwrap() > 0, "{json}");
    assert!(model.requests() >= 4);
}

#[test]
fn a_worker_that_runs_past_the_timeout_fails_as_timeout() {
    let (repo, _) = history();
    repo.user_config("[run]\nretries = 0\n");
    let out = orchestra(
        &repo.path,
        &[
            "eval",
            "run",
            "--from-history",
            "HEAD~1..HEAD",
            "--test",
            "sh run_tests.sh",
            "--timeout",
            "2",
            "--arm",
            "slow=cmd:sleep 30",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["arms"][0]["resolved"], 0, "{json}");
    assert_eq!(json["attempts"][0]["failure"], "timeout", "{json}");
}

//! `git orchestra eval run`: arms of worker commands on the valid tasks of a small shell
//! project's history, each attempt in a clean repository, judged by the hidden tests; a
//! best-of-N arm against the single arm with a worker whose success per candidate is known.

use super::eval_fixtures::{arm, attempt};
use super::eval_fixtures::{assert_arms_refused, history};
use crate::support::{TestRepo, orchestra, orchestra_with_env, refs, text};

/// Returns `eval run --from-history <range> --test "sh run_tests.sh" --arm <arm>… --json` run
/// in `repo`, which must succeed, parsed.
fn run_history(repo: &TestRepo, range: &str, arms: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "eval",
        "run",
        "--from-history",
        range,
        "--test",
        "sh run_tests.sh",
        "--json",
    ];
    for a in arms {
        args.extend(["--arm", a]);
    }
    let out = orchestra(&repo.path, &args);
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)))
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
    let json = run_history(
        &repo,
        "HEAD~3..HEAD",
        &[&solver, "noop=cmd:true", &cheat, &peek],
    );
    for (name, resolved) in [("solver", 2), ("noop", 0), ("cheat", 0), ("peek", 0)] {
        assert_eq!(arm(&json, name)["attempts"], 3, "{name}: {json}");
        assert_eq!(arm(&json, name)["resolved"], resolved, "{name}: {json}");
    }
    assert_eq!(
        arm(&json, "noop")["failures"],
        serde_json::json!({"no_change": 3})
    );
    assert_eq!(
        arm(&json, "cheat")["failures"],
        serde_json::json!({"tests_fail": 3})
    );
    assert_eq!(json["attempts"].as_array().unwrap().len(), 12);
    let failure = |arm: &str, task: &str| attempt(&json, arm, task)["failure"].clone();
    assert_eq!(failure("solver", &commits[0]), serde_json::Value::Null);
    assert_eq!(failure("solver", &commits[2]), "no_change");
    for task in &commits {
        assert_eq!(failure("noop", task), "no_change", "{json}");
        assert_eq!(failure("cheat", task), "tests_fail", "{json}");
        assert_eq!(failure("peek", task), "no_change", "{json}");
    }
    // The source repository is as it was but for the eval's kept results, and no attempt
    // repository is left.
    let kept = refs(&repo.path)
        .lines()
        .filter(|l| !l.starts_with("refs/orchestra/eval/"))
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(kept, before);
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
    assert_arms_refused(
        &repo,
        &before,
        &[
            ("nameless", "has no name"),
            ("x=cmd:", "needs a command"),
            ("x=agent:", "needs a role name"),
            // Without a model profile (the test home has none), checked before any mining.
            ("x=agent:coder", "no model profile for role `coder`"),
            ("x=agent:nosuchrole", "unknown role `nosuchrole`"),
            ("x=teleport:now", "unknown kind"),
        ],
    );
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
fn attempts_of_one_task_at_once_leave_each_others_workers_running() {
    // Every arm runs the same plan on the same base, so the attempts' runs share an id:
    // starting one attempt's run must not stop another's worker as a leftover of its own.
    let (repo, _) = history();
    repo.scratch_writable();
    let s = repo.scratch();
    let wait_for = |name: &str| {
        format!(
            "i=0; while [ ! -e {s}/{name} ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done",
            s = s.display()
        )
    };
    let solve = "echo 'neg() { echo $((0 - $1)); }' >> src/calc.sh";
    // On two threads: `first` runs until `last`'s worker has started, `second` until `first`'s
    // has, so `last`'s run starts while `first`'s worker is running.
    let first = format!(
        "first=cmd:touch {}/first; {}; {solve}",
        s.display(),
        wait_for("last")
    );
    let second = format!("second=cmd:{}", wait_for("first"));
    let last = format!("last=cmd:touch {}/last; {solve}", s.display());
    let out = orchestra(
        &repo.path,
        &[
            "eval",
            "run",
            "--from-history",
            "HEAD~1..HEAD",
            "--test",
            "sh run_tests.sh",
            "--arm",
            &first,
            "--arm",
            &second,
            "--arm",
            &last,
            "--jobs",
            "2",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        s.join("last").exists(),
        "the last worker never started: {json}"
    );
    for name in ["first", "last"] {
        assert_eq!(arm(&json, name)["resolved"], 1, "{name}: {json}");
    }
}

#[test]
fn an_agent_arm_works_each_task_with_the_configured_model() {
    let (repo, commits) = history();
    // The scripted coder solves the multiplication task and gives up on the others.
    let scripts = serde_json::json!([
        {"name": "review", "match": ["# Reviewer"], "replies": [
            {"text": "{\"verdict\": \"approve\", \"findings\": []}"}]},
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

#[test]
fn a_check_that_hangs_on_the_landed_tree_is_stopped_at_the_timeout_as_timeout() {
    let (repo, _) = history();
    // The check hangs on a tree holding `hang`, which only the worker writes.
    let out = orchestra(
        &repo.path,
        &[
            "eval",
            "run",
            "--from-history",
            "HEAD~1..HEAD",
            "--test",
            "if [ -e hang ]; then sleep 60; fi; sh run_tests.sh",
            "--timeout",
            "3",
            "--arm",
            "hanger=cmd:touch hang; echo 'neg() { echo $((0 - $1)); }' >> src/calc.sh",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let attempt = &json["attempts"][0];
    assert_eq!(attempt["resolved"], false, "{json}");
    assert_eq!(attempt["failure"], "timeout", "{json}");
    assert!(
        attempt["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("check"),
        "{json}"
    );
    assert!(attempt["wall_ms"].as_u64().unwrap() < 30_000, "{json}");
}

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
    let json = run_history(&repo, "HEAD~3..HEAD", &[&single, &best]);
    assert_eq!(arm(&json, "single")["attempts"], 3, "{json}");
    assert_eq!(arm(&json, "best3")["attempts"], 3, "{json}");
    assert_eq!(arm(&json, "single")["resolved"], 1, "{json}");
    assert_eq!(arm(&json, "best3")["resolved"], 2, "{json}");
    let resolved = |arm: &str, task: &str| attempt(&json, arm, task)["resolved"].clone();
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

//! Best-of-N with a tester (`[best_of] tester = true`): before the candidates work, a tester
//! (here `[best_of] tester_cmd`, the command that plays it in a worker command's run) writes
//! tests for the packet; every candidate that passed its validation runs them on top of its
//! work, and one failing them cannot win. Tests failing on every candidate are set aside and
//! the reviewer decides; the tests are kept as a ref until `gc`.

use crate::support::*;
use git_orchestra::demo::{MockModel, parse_scripts};
use git_orchestra::store::{Event, Store};

/// Candidate 1 writes `bad` (the smaller change), candidate 2 two lines starting with `good`;
/// both pass the packet's validation.
const WORKER: &str = r#"if [ "$ORCHESTRA_CANDIDATE" = 1 ]; then echo bad > out.txt; else printf 'good\nmore\n' > out.txt; fi"#;

/// The project's tests: every shell script under `tests/` (none before the tester's).
const PROJECT_TESTS: &str =
    r#"for t in tests/*.sh; do [ -e \"$t\" ] || continue; sh \"$t\" || exit 1; done"#;

/// Returns the user configuration turning the tester on with `tester_cmd` as its command.
fn config(tester_cmd: &str, tester: bool) -> String {
    format!(
        "[eval]\ntest = \"{PROJECT_TESTS}\"\n[best_of]\ntester = {tester}\ntester_cmd = \"{tester_cmd}\"\n"
    )
}

/// A tester writing `tests/check.sh`, which wants `good` in `out.txt`.
const TESTER_GOOD: &str = "mkdir -p tests && echo 'grep -q good out.txt' > tests/check.sh";

/// A tester writing `tests/check.sh`, which wants `perfect` in `out.txt`: no candidate has it.
const TESTER_WRONG: &str = "mkdir -p tests && echo 'grep -q perfect out.txt' > tests/check.sh";

/// Runs the two-candidate packet with `extra` environment; returns the run's output.
fn run_two(repo: &TestRepo, env: &[(&str, &str)]) -> std::process::Output {
    let body = format!(
        "objective = \"Tested by the tester\"\n\n{}",
        packet("p1", "\"out.txt\"", "", "\"test -s out.txt\"")
    );
    let plan = repo.write_plan("plan.toml", &body);
    let root = repo.scratch().join("wt");
    orchestra_with_env(
        &repo.path,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            WORKER,
            "--worktree-root",
            root.to_str().unwrap(),
            "--best-of",
            "2",
        ],
        env,
    )
}

/// Returns the run's events whose packet is `packet`.
fn events_of(repo: &TestRepo, packet: &str) -> Vec<Event> {
    let run = run_id(&repo.path);
    let store = Store::open(&repo.path.join(".git")).unwrap();
    store
        .events(&run, 0)
        .unwrap()
        .into_iter()
        .map(|e| e.event)
        .filter(|e| e.packet() == Some(packet))
        .collect()
}

/// Returns the refs under `prefix`.
fn refs(repo: &TestRepo, prefix: &str) -> Vec<String> {
    repo.git(&["for-each-ref", "--format=%(refname)", prefix])
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_candidate_failing_the_testers_test_loses_to_one_passing_it() {
    let repo = TestRepo::new();
    repo.user_config(&config(TESTER_GOOD, true));
    let out = run_two(&repo, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let v = status_json(&repo.path);
    let shown = &v["candidates"][0];
    assert_eq!(shown["winner"], 2, "{v:#}");
    let c1 = &shown["candidates"][0];
    assert_eq!(c1["passed"], false, "{v:#}");
    assert!(
        c1["reason"]
            .as_str()
            .unwrap()
            .starts_with("the tester's tests (tests/check.sh) failed with `for t in tests/*.sh"),
        "{v:#}"
    );
    let reasons = shown["reasons"].as_str().unwrap();
    assert!(
        reasons.contains("candidate 1: the tester's tests (tests/check.sh) failed"),
        "{reasons}"
    );
    assert!(
        reasons.contains("the tester's tests (tests/check.sh) dropped c1 before the choice"),
        "{reasons}"
    );
    assert!(
        reasons.contains("the deterministic checks and the tester's tests, the only one that did"),
        "{reasons}"
    );
    // The tests were never committed into the winner, and the winner landed without them.
    let run = run_id(&repo.path);
    let branch = format!("orchestra/{run}/p1");
    assert_eq!(
        repo.git(&["show", &format!("{branch}:out.txt")]),
        "good\nmore"
    );
    let listed = repo.git(&["ls-tree", "-r", "--name-only", &branch]);
    assert!(!listed.contains("tests/check.sh"), "{listed}");
    // The tester ran once, journaled under `p1.tests`, and its tests are kept as a ref.
    let tester = events_of(&repo, "p1.tests");
    let started = tester
        .iter()
        .filter(|e| matches!(e, Event::WorkerStarted { .. }))
        .count();
    assert_eq!(started, 1, "{tester:?}");
    let kept = refs(&repo, "refs/orchestra/tests/");
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(
        repo.git(&["show", &format!("{}:tests/check.sh", kept[0])]),
        "grep -q good out.txt"
    );
    // `gc` drops the tests with the run's candidates.
    let gc = orchestra(&repo.path, &["gc"]);
    assert!(gc.status.success(), "{}", text(&gc));
    assert_eq!(refs(&repo, "refs/orchestra/tests/"), Vec::<String>::new());
}

#[test]
fn tests_failing_on_every_candidate_are_set_aside_and_the_reviewer_decides() {
    let repo = TestRepo::new();
    repo.user_config(&config(TESTER_WRONG, true));
    let scripts = serde_json::json!([
        {"name": "compare", "match": ["# Candidate comparison"], "replies": [
            {"text": "{\"choice\": \"c2\", \"reason\": \"c2 says more\"}"}]},
        {"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]}
    ]);
    let model = MockModel::start(parse_scripts(&scripts.to_string()).unwrap()).unwrap();
    let out = run_two(
        &repo,
        &[
            ("ORCHESTRA_PROVIDER", "openai-compatible"),
            ("ORCHESTRA_BASE_URL", model.url.as_str()),
            ("ORCHESTRA_MODEL", "scripted"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let v = status_json(&repo.path);
    let shown = &v["candidates"][0];
    // Without the reviewer the smaller change, candidate 1, would have won.
    assert_eq!(shown["winner"], 2, "{v:#}");
    let reasons = shown["reasons"].as_str().unwrap();
    assert!(reasons.contains("the reviewer chose it"), "{reasons}");
    assert!(
        reasons.contains("failed on every candidate they ran on, so they were set aside"),
        "{reasons}"
    );
}

#[test]
fn without_the_setting_no_tester_runs() {
    let repo = TestRepo::new();
    repo.user_config(&config(TESTER_GOOD, false));
    let out = run_two(&repo, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(events_of(&repo, "p1.tests"), Vec::new());
    assert_eq!(refs(&repo, "refs/orchestra/tests/"), Vec::<String>::new());
    // The smaller change wins, as it does without a tester.
    let v = status_json(&repo.path);
    assert_eq!(v["candidates"][0]["winner"], 1, "{v:#}");
    let reasons = v["candidates"][0]["reasons"].as_str().unwrap();
    assert!(!reasons.contains("tester"), "{reasons}");
}

/// Runs the two-candidate packet with a counting tester, killed after its `n`th event, then
/// resumes it; returns how many times the tester ran.
fn crash_and_resume(n: usize) -> usize {
    let repo = TestRepo::new();
    let counter = repo.scratch().join("tester.txt");
    let tester = format!("echo ran >> {}; {TESTER_GOOD}", counter.display());
    repo.user_config(&format!(
        "[sandbox]\nwritable = [\"{}\"]\n{}",
        repo.scratch().display(),
        config(&tester, true)
    ));
    let n_text = n.to_string();
    let out = run_two(&repo, &[("ORCHESTRA_CRASH_AFTER_EVENTS", &n_text)]);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        out.status.signal(),
        Some(9),
        "crash point {n}: {}",
        text(&out)
    );
    let resumed = orchestra(&repo.path, &["resume"]);
    assert!(
        resumed.status.success(),
        "crash point {n}: {}",
        text(&resumed)
    );
    let v = status_json(&repo.path);
    assert_eq!(v["candidates"][0]["winner"], 2, "crash point {n}: {v:#}");
    assert_eq!(refs(&repo, "refs/orchestra/tests/").len(), 1);
    std::fs::read_to_string(&counter).unwrap().lines().count()
}

#[test]
fn a_crash_after_the_tester_ended_resumes_without_writing_the_tests_again() {
    // Where the tester's events fall in an uninterrupted run.
    let probe = TestRepo::new();
    probe.user_config(&config(TESTER_GOOD, true));
    assert!(run_two(&probe, &[]).status.success());
    let run = run_id(&probe.path);
    let store = Store::open(&probe.path.join(".git")).unwrap();
    let events: Vec<Event> = store.events(&run, 0).unwrap()[1..]
        .iter()
        .map(|e| e.event.clone())
        .collect();
    // The tester's command has run, but its tests are not journaled yet.
    let in_flight = events
        .iter()
        .position(|e| matches!(e, Event::WorkerFinished { packet, .. } if packet == "p1.tests"))
        .unwrap();
    let ended = events
        .iter()
        .position(|e| matches!(e, Event::TesterEnded { .. }))
        .unwrap();
    // Cut short before it ended, the tester writes its tests again; once it ended, never.
    assert_eq!(crash_and_resume(in_flight + 1), 2);
    assert_eq!(crash_and_resume(ended + 1), 1);
}

#[test]
fn a_failing_tester_leaves_the_choice_to_the_other_steps_and_says_why() {
    let repo = TestRepo::new();
    repo.user_config(&config("echo cannot write tests; exit 3", true));
    let out = run_two(&repo, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let v = status_json(&repo.path);
    let shown = &v["candidates"][0];
    assert_eq!(shown["winner"], 1, "the smaller change: {v:#}");
    let reasons = shown["reasons"].as_str().unwrap();
    assert!(
        reasons.contains("the tester wrote no tests the candidates could run: the tester failed: worker failed (exit"),
        "{reasons}"
    );
    assert_eq!(refs(&repo, "refs/orchestra/tests/"), Vec::<String>::new());
    // Its worktree stays for a person to look at until `gc`.
    let run = run_id(&repo.path);
    let kept = repo.git(&["worktree", "list"]);
    assert!(
        kept.contains(&format!("[orchestra/{run}/p1.tests]")),
        "{kept}"
    );
    let gc = orchestra(&repo.path, &["gc"]);
    assert!(gc.status.success(), "{}", text(&gc));
    let left = repo.git(&["worktree", "list"]);
    assert!(!left.contains("p1.tests"), "{left}");
}

#[test]
fn the_per_packet_budget_leaves_the_tester_its_share() {
    let repo = TestRepo::new();
    // Without history a candidate is forecast at up to 400k tokens: 900k fit two of three,
    // one once the tester takes its share.
    repo.user_config(&format!(
        "{}packet_tokens = 900000\n",
        config(TESTER_GOOD, true)
    ));
    let body = format!(
        "objective = \"Budgeted\"\n\n{}attempts = 3\n",
        packet("p1", "\"out.txt\"", "", "\"test -s out.txt\"")
    );
    let plan = repo.write_plan("plan.toml", &body);
    let out = repo.run_plan(&plan, WORKER, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("packet `p1`: best of 3 capped to 1: each candidate is forecast to use up to 400.0k tokens and [best_of] packet_tokens is 900.0k (the tester writing its tests takes as much)"),
        "{said}"
    );
}

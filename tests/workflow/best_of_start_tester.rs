//! `[best_of] tester` in `start` runs: before a best-of-N packet's candidates work, our
//! `tester` role writes tests from the packet's description; a candidate that passes the
//! packet's validation but fails the tester's test loses to one that passes it, and the
//! tester's model calls count with the packet's.

use git_orchestra::demo::{self, MockModel};
use git_orchestra::store::{Event, Store};

use crate::support::{git, hermetic, orchestra, text};

/// Starts the scripted models: the planner (one packet of two attempts), two coders told
/// different approaches by their `strategy:` arms (the first writing the smaller change,
/// `bad`), the tester (a test wanting `good`), the reviewer and the orchestrator.
fn model() -> MockModel {
    let plan = "```toml\n[[packet]]\nid = \"p1\"\ntitle = \"One\"\ndescription = \"Write good to p1.txt\"\nfiles = [\"p1.txt\"]\nvalidation = [\"test -s p1.txt\"]\nattempts = 2\n```";
    let coder = |approach: &str, content: &str| {
        serde_json::json!({"name": approach, "match": ["# Coder", format!("Approach for this attempt: {approach}")], "replies": [
            {"calls": [{"name": "write_file", "args": {"path": "p1.txt", "content": content}}]},
            {"calls": [{"name": "complete", "args": {"summary": "wrote p1.txt"}}]}]})
    };
    let scripts = serde_json::json!([
        {"name": "planner", "match": ["# Planner"], "replies": [{"text": plan}]},
        {"name": "tester", "match": ["# Tester", "Write good to p1.txt"], "replies": [
            {"calls": [{"name": "write_file", "args": {"path": "tests/p1_good.sh", "content": "grep -q good p1.txt\n"}}]},
            {"calls": [{"name": "complete", "args": {"summary": "wrote tests/p1_good.sh"}}]}]},
        coder("terse", "bad\n"),
        coder("careful", "good\nmore\n"),
        {"name": "compare", "match": ["# Candidate comparison"], "replies": [
            {"text": "{\"choice\": \"c1\", \"reason\": \"c1 is smaller\"}"}]},
        {"name": "review", "match": ["# Reviewer"], "replies": [
            {"text": "{\"verdict\": \"approve\", \"findings\": []}"}]},
        {"name": "orchestrator", "match": ["# Orchestrator"], "replies": [{"text": "{}"}]}
    ]);
    MockModel::start(demo::parse_scripts(&scripts.to_string()).unwrap()).unwrap()
}

#[test]
fn a_start_runs_tester_writes_the_test_that_drops_a_candidate() {
    hermetic();
    let model = model();
    let tmp = tempfile::tempdir().unwrap();
    let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
    let config = format!(
        "[sandbox]\nif_unavailable = \"warn\"\n[profiles.default]\nprovider = \"openai-compatible\"\nmodel = \"scripted\"\nbase_url = \"{}\"\n[eval]\ntest = \"for t in tests/*.sh; do [ -e \\\"$t\\\" ] || continue; sh \\\"$t\\\" || exit 1; done\"\n[best_of]\ntester = true\narms = [\"strategy:terse\", \"strategy:careful\"]\n",
        model.url
    );
    let user_config = tmp.path().join("user-config/git-orchestra/config.toml");
    std::fs::create_dir_all(user_config.parent().unwrap()).unwrap();
    std::fs::write(&user_config, config).unwrap();
    let root = tmp.path().join("worktrees");
    let out = orchestra(
        &repo,
        &[
            "start",
            "--yes",
            "--no-clarify",
            "--worktree-root",
            root.to_str().unwrap(),
            "One file",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let status = orchestra(&repo, &["status", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let shown = &v["candidates"][0];
    // Without the tester's test the reviewer's choice, the smaller c1, would have won.
    assert_eq!(shown["winner"], 2, "{v:#}");
    let reasons = shown["reasons"].as_str().unwrap();
    assert!(
        reasons.contains(
            "candidate 1: [arm strategy:terse] the tester's tests (tests/p1_good.sh) failed"
        ),
        "{reasons}"
    );
    assert!(
        reasons.contains("dropped c1 before the choice"),
        "{reasons}"
    );
    let branch = v["packets"][0]["branch"].as_str().unwrap();
    assert_eq!(
        git(&repo, &["show", &format!("{branch}:p1.txt")]),
        "good\nmore"
    );
    // The tests are kept, never in the packet's work.
    let kept = git(
        &repo,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/orchestra/tests/",
        ],
    );
    assert_eq!(
        git(
            &repo,
            &["show", &format!("{}:tests/p1_good.sh", kept.trim())]
        ),
        "grep -q good p1.txt"
    );
    let listed = git(&repo, &["ls-tree", "-r", "--name-only", branch]);
    assert!(!listed.contains("tests/p1_good.sh"), "{listed}");
    // The tester's model calls are the packet's, as its candidates' are.
    let store = Store::open(&repo.join(".git")).unwrap();
    let tester_calls: usize = store
        .runs()
        .unwrap()
        .iter()
        .map(|r| {
            store
                .events(&r.id, 0)
                .unwrap()
                .iter()
                .filter(|e| matches!(&e.event, Event::AgentModelCall { packet, role, .. } if packet == "p1" && role == "tester"))
                .count()
        })
        .sum();
    assert_eq!(tester_calls, 2, "the tester's two turns");
}

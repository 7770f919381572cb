//! Landing fix rounds for `start` runs, through the binary against the fake GitHub: a packet
//! our agent worked inside `start` keeps its conversation (provider keys replaced), so a CI
//! failure on its pull request reaches it as the next turn of that conversation, as for `run`
//! packets.

use git_orchestra::demo::{self, MockModel};
use serde_json::{Value, json};

use crate::forge::forge_mock::{FakeForge, Flavour};
use crate::forge::land_fixtures::{configure, messages, request_saying};
use crate::forge::pull_requests::{TOKEN, run_env, setup};
use crate::support::*;

/// The provider key the scripted model is called with; the coder quotes it in its first turn.
const KEY: &str = "sk-startKEY0123456789abcdef";

const LOG: &str = "running 1 test\nthread 'greets' panicked at src/lib.rs:3:5\nassertion failed: greeting ends with a full stop";

/// The planner, reviewer and orchestrator of a `start` run planning packet p1 alone, and p1's
/// coder: it writes `out-p1.txt` (quoting the key in passing) and completes, then, in its next
/// turn of work, writes the fix and completes again.
fn scripts() -> Value {
    let plan = "```toml\n[[packet]]\nid = \"p1\"\ntitle = \"One\"\ndescription = \"Does p1.\"\nfiles = [\"out-p1.txt\"]\nvalidation = [\"test -f out-p1.txt\"]\n```";
    json!([
        {"name": "planner", "match": ["# Planner"], "replies": [{"text": plan}]},
        {"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]},
        {"name": "orchestrator", "match": ["# Orchestrator"], "replies": [{"text": "{}"}]},
        {"name": "coder", "match": ["Does p1."], "replies": [
            {"text": format!("Using the key {KEY} as configured."),
             "calls": [{"name": "write_file", "args": {"path": "out-p1.txt", "content": "p1\n"}}]},
            {"calls": [{"name": "complete", "args": {"summary": "wrote p1"}}]},
            {"calls": [{"name": "write_file", "args": {"path": "out-p1.txt", "content": "p1.\n"}}]},
            {"calls": [{"name": "complete", "args": {"summary": "ended it with a full stop"}}]}
        ]}
    ])
}

#[test]
fn a_start_packets_ci_failure_reaches_its_agent_as_the_next_turn_of_its_conversation() {
    let model = MockModel::start(demo::parse_scripts(&scripts().to_string()).unwrap()).unwrap();
    let forge = FakeForge::start(Flavour::GitHub);
    let (repo, bare) = setup(Some(&forge), Flavour::GitHub);
    let env = [
        ("ORCHESTRA_PROVIDER", "openai-compatible"),
        ("ORCHESTRA_BASE_URL", model.url.as_str()),
        ("ORCHESTRA_MODEL", "scripted"),
        ("ORCHESTRA_API_KEY_ENV", "SCRIPTED_KEY"),
        ("SCRIPTED_KEY", KEY),
        ("GH_TOKEN", TOKEN),
    ];
    let root = repo.scratch().join("wt");
    let out = run_env(
        &repo,
        &[
            "start",
            "--yes",
            "--no-clarify",
            "--pr",
            "--worktree-root",
            root.to_str().unwrap(),
            "Write p1",
        ],
        &env,
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(forge.pulls().len(), 1, "{}", text(&out));
    forge.follow_git(&bare);
    configure(&repo, "[land]\npoll_secs = 1\n");
    let branch = forge.pulls()[0]["head"]["ref"]
        .as_str()
        .unwrap()
        .to_string();
    let head = |b: &str| {
        git(&bare, &["rev-parse", &format!("refs/heads/{b}")])
            .trim()
            .to_string()
    };
    let h1 = head(&branch);
    let failed = forge.add_check_run(&h1, "test", Some("failure"), LOG);
    forge.on_rerun(failed, "failure", LOG);
    forge.on_new_heads("test", "success", "");

    // The conversation is kept, without the key it quoted.
    let run = run_id(&repo.path);
    let kept = repo
        .path
        .join(".git/orchestra/runs")
        .join(&run)
        .join("p1/conversation.json");
    let saved =
        std::fs::read_to_string(&kept).unwrap_or_else(|e| panic!("{}: {e}", kept.display()));
    assert!(saved.contains("Does p1."), "{saved}");
    assert!(!saved.contains(KEY), "{saved}");
    let asked = model.received().len();

    let out = run_env(&repo, &["land"], &env);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("p1 #1: fix round 1 ended: pushed"), "{all}");
    assert!(all.contains("p1 #1: merged"), "{all}");

    // The failure was the next turn of the packet's conversation: its task, its earlier turns,
    // then the check's name, conclusion and log tail; never the key.
    let sent: Vec<Value> = model.received()[asked..].to_vec();
    let fix_turn = request_saying(&sent, "assertion failed: greeting ends", "the log tail");
    let turns = messages(fix_turn);
    assert!(
        turns
            .iter()
            .any(|(r, t)| r == "user" && t.contains("Does p1.")),
        "{turns:?}"
    );
    assert!(
        turns.iter().filter(|(r, _)| r == "assistant").count() >= 2,
        "the earlier turns of the conversation: {turns:?}"
    );
    let last_user = turns.iter().rev().find(|(r, _)| r == "user").unwrap();
    assert!(
        last_user.1.contains("Check `test` failed (failure)"),
        "{last_user:?}"
    );
    assert!(!fix_turn.to_string().contains(KEY));
    assert!(!fix_turn.to_string().contains(TOKEN));
    let fixed = head(&branch);
    assert_eq!(git(&bare, &["rev-parse", &format!("{fixed}^")]).trim(), h1);
    assert_eq!(git(&bare, &["show", &format!("{fixed}:out-p1.txt")]), "p1.");
}

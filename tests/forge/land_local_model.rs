//! End to end: a landing fix round worked by the real local model (llama.cpp's `llama-server`
//! with a small model, through a recording relay) against the fake GitHub following a real
//! bare remote, after a `run --pr` whose packet was done by the scripted model (so a pull
//! request exists whatever the small model can do).
//!
//! Opt-in like the other local-model tests: runs only when `ORCHESTRA_E2E_LLM_URL` holds the
//! server's base URL (`.ci/run` exports it), otherwise it says it was skipped and passes. The
//! small model cannot be trusted to fix anything, so the test asserts the plumbing and that
//! the outcome is consistent, never that the model succeeded: CI failed once on the pull
//! request, the failure went to the packet's agent as the next turn of its kept conversation
//! (the requests the server got carry the packet's task, its earlier turns and the log tail,
//! and no token), the server answered, and then either the fix was pushed over the failed head
//! and the pull request merged, or nothing was lost and it waits for a person with a reason.

use std::time::{Duration, Instant};

use git_orchestra::demo::{self, MockModel};
use serde_json::json;

use crate::agent::agent_cli_e2e::Relay;
use crate::forge::forge_mock::{FakeForge, Flavour};
use crate::forge::pull_requests::{TOKEN, packet, run_env, setup, write_plan};
use crate::support::*;

const LOG: &str = "running 1 test\ntest greeting ... FAILED\nassertion failed: out-p1.txt must say `hello world`, it says `hello`";

/// A coder role small enough for the small model on two cores: three tools, three turns.
const ROLE: &str = "---\nname: coder\ndescription: Writes the packet's file.\ntools: [read_file, write_file, complete]\nwrite_scope: [\"**\"]\ntimeout: 1200\nmax_turns: 3\n---\n\n# Coder\n\nYou work in a repository. Write files with the tool write_file, then call the tool complete with a one-line summary.\n";

#[test]
fn e2e_a_ci_failure_goes_to_the_local_model_as_its_next_turn_and_the_pull_request_settles() {
    let Some(url) = crate::agent::e2e::server_url() else {
        return;
    };
    let _turn = crate::agent::e2e::local_server_turn();
    let relay = Relay::start(url.trim_end_matches("/v1"));
    let scripts = json!([
        {"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]},
        {"name": "coder", "match": ["Does p1."], "replies": [
            {"calls": [{"name": "write_file", "args": {"path": "out-p1.txt", "content": "hello\n"}}]},
            {"calls": [{"name": "complete", "args": {"summary": "wrote hello to out-p1.txt"}}]}
        ]}
    ]);
    let scripted = MockModel::start(demo::parse_scripts(&scripts.to_string()).unwrap()).unwrap();
    let forge = FakeForge::start(Flavour::GitHub);
    let (repo, bare) = setup(Some(&forge), Flavour::GitHub);
    std::fs::create_dir_all(repo.path.join(".orchestra/agents")).unwrap();
    std::fs::write(repo.path.join(".orchestra/agents/coder.md"), ROLE).unwrap();
    repo.trust();
    let plan = write_plan(&repo, &packet("p1", "", ""));
    let root = repo.scratch().join("wt");
    let out = run_env(
        &repo,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worktree-root",
            root.to_str().unwrap(),
            "--pr",
        ],
        &[
            ("ORCHESTRA_PROVIDER", "openai-compatible"),
            ("ORCHESTRA_BASE_URL", scripted.url.as_str()),
            ("ORCHESTRA_MODEL", "scripted"),
            ("GH_TOKEN", TOKEN),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    forge.follow_git(&bare);
    let branch = forge.pulls()[0]["head"]["ref"]
        .as_str()
        .unwrap()
        .to_string();
    let head = || {
        git(&bare, &["rev-parse", &format!("refs/heads/{branch}")])
            .trim()
            .to_string()
    };
    let h1 = head();
    let failed = forge.add_check_run(&h1, "test", Some("failure"), LOG);
    forge.on_rerun(failed, "failure", LOG);
    forge.on_new_heads("test", "success", "");
    // From now on the packet's agent is the local model; its reviewer has no profile, so the
    // fix is gated by the packet's checks alone.
    std::fs::write(
        repo.path.join(".orchestra/config.toml"),
        format!(
            "[land]\npoll_secs = 1\nmax_rounds = 1\n\n[profiles.local]\nprovider = \"openai-compatible\"\nbase_url = \"{}/v1\"\nmodel = \"local-qwen\"\ntemperature = 0.0\nmax_tokens = 256\ncontext_tokens = 8192\ntimeout_secs = 600\n\n[roles.coder]\nprofile = \"local\"\n",
            relay.url
        ),
    )
    .unwrap();
    repo.trust();
    let before = worktrees(&repo);

    let started = Instant::now();
    let out = run_env(&repo, &["land"], &[("GH_TOKEN", TOKEN)]);
    let all = text(&out);
    eprintln!(
        "land with the local model ended after {:.0}s ({} answers): {all}",
        started.elapsed().as_secs_f64(),
        relay.answered()
    );
    assert!(out.status.success(), "{all}");
    assert!(all.contains("p1 #1: fix round 1: sending"), "{all}");
    assert!(all.contains("p1 #1: fix round 1 ended: "), "{all}");

    // The round was the next turn of the packet's kept conversation, and the server answered.
    let bodies = relay.bodies();
    let fix_turn = bodies
        .iter()
        .find(|b| b.contains("must say `hello world`"))
        .unwrap_or_else(|| panic!("no request carried the log tail: {bodies:?}"));
    assert!(fix_turn.contains("Does p1."), "{fix_turn}");
    assert!(fix_turn.contains("wrote hello to out-p1.txt"), "{fix_turn}");
    assert!(
        fix_turn.contains("Check `test` failed (failure)"),
        "{fix_turn}"
    );
    assert!(bodies.iter().all(|b| !b.contains(TOKEN)));
    assert!(
        relay.answered_within(1, Duration::from_secs(10)) >= 1,
        "the server answered none of {} requests whole: {all}",
        bodies.len()
    );

    // Settled one way or the other, consistently, and nothing was lost.
    let now = head();
    let pull = &forge.pulls()[0];
    if pull["merged"] == true {
        assert!(all.contains("p1 #1: merged"), "{all}");
        assert_ne!(now, h1, "merged without the fix: {all}");
        assert_eq!(git(&bare, &["rev-parse", &format!("{now}^")]).trim(), h1);
        let on_main = git(&bare, &["merge-base", "--is-ancestor", &now, "main"]);
        assert_eq!(on_main.trim(), "");
    } else {
        assert!(all.contains("p1 #1: waits for a person: "), "{all}");
        assert_eq!(
            now, h1,
            "a fix that did not pass its gate was pushed: {all}"
        );
    }
    assert_eq!(worktrees(&repo), before);
}

/// Returns the worktrees `git worktree list` shows for `repo`.
fn worktrees(repo: &TestRepo) -> Vec<String> {
    repo.git(&["worktree", "list", "--porcelain"])
        .lines()
        .filter_map(|l| l.strip_prefix("worktree ").map(str::to_string))
        .collect()
}

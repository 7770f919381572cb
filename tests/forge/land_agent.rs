//! Landing fix rounds for runs done by our agents and agent CLIs, through the binary against
//! the fake GitHub whose pull request heads follow a real bare remote: a CI failure reaches
//! the packet's agent as the next turn of its conversation (a CLI: its resumed session), as
//! does a review requesting changes (answered on its thread with what the agent said), the
//! fix is re-gated by the run's review and pushed with a lease, a fix the review rejects is
//! not pushed and counts as a round, and the worktree a round made is gone afterwards. A
//! restack conflict reaches the packet's agent (or CLI) the same way: its resolution, free of
//! conflict markers, is checked, pushed with a lease and lands.

use std::path::{Path, PathBuf};
use std::process::Output;

use git_orchestra::demo::{self, MockModel};
use serde_json::{Value, json};

use crate::forge::forge_mock::{FakeForge, Flavour};
use crate::forge::land_fixtures::{configure, messages, request_saying};
use crate::forge::pull_requests::{TOKEN, packet, run_env, setup, write_plan};
use crate::support::*;

const LOG: &str =
    "running 3 tests\nthread 'parses' panicked at src/lib.rs:7:5\nassertion failed: left == right";

/// The user configuration that keeps CI green on #2 as well (see [`published`]).
const GREEN: &str = "# CI passes on every head\n";

/// The replies of a packet agent writing `out-<id>.txt` with each of `contents` in turn, one
/// write and one `complete` per turn of work.
fn coder(id: &str, contents: &[&str]) -> Value {
    let mut replies = Vec::new();
    for c in contents {
        replies.push(json!({"calls": [{"name": "write_file",
            "args": {"path": format!("out-{id}.txt"), "content": c}}]}));
        replies.push(
            json!({"calls": [{"name": "complete", "args": {"summary": format!("wrote {c:?}")}}]}),
        );
    }
    json!({"name": format!("coder-{id}"), "match": [format!("Does {id}.")], "replies": replies})
}

/// The reviewer rejecting a diff holding `bad`, approving any other.
fn reviewer(bad: &str) -> Vec<Value> {
    let reject = json!({"verdict": "reject", "findings": [{"severity": "blocker",
        "category": "correctness", "file": "out-p2.txt", "line": 2,
        "evidence": "out-p2.txt says it only tried", "suggestion": "say that it is fixed"}]});
    vec![
        json!({"name": "reject", "match": ["# Reviewer", bad], "replies": [{"text": reject.to_string()}]}),
        json!({"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]}),
    ]
}

/// The environment pointing every role at `model`, with the forge's token.
fn model_env(model: &MockModel) -> Vec<(&'static str, String)> {
    vec![
        ("ORCHESTRA_PROVIDER", "openai-compatible".into()),
        ("ORCHESTRA_BASE_URL", model.url.clone()),
        ("ORCHESTRA_MODEL", "scripted".into()),
        ("GH_TOKEN", TOKEN.into()),
    ]
}

/// A run of p1 ← p2 by our agents (or an agent CLI, as `extra` arguments say) published as
/// pull requests #1 and #2 on `forge`, with `user` as the user configuration; CI green on #1
/// and failing on #2 (also when re-run; green with [`GREEN`]), green on every head pushed
/// later. Returns the repository and the bare remote.
fn published(
    forge: &FakeForge,
    env: &[(&str, &str)],
    extra: &[&str],
    user: &str,
) -> (TestRepo, PathBuf) {
    let (repo, bare) = setup(Some(forge), Flavour::GitHub);
    if !user.is_empty() {
        repo.user_config(user);
    }
    let plan = write_plan(
        &repo,
        &format!("{}{}", packet("p1", "", ""), packet("p2", "\"p1\"", "")),
    );
    let root = repo.scratch().join("wt");
    let mut args = vec![
        "run",
        plan.to_str().unwrap(),
        "--worktree-root",
        root.to_str().unwrap(),
        "--pr",
    ];
    args.extend_from_slice(extra);
    let out = run_env(&repo, &args, env);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(forge.pulls().len(), 2);
    forge.follow_git(&bare);
    configure(&repo, "[land]\npoll_secs = 1\nreviewers = [\"alice\"]\n");
    let h1 = head(&bare, &branch(forge, 1));
    let h2 = head(&bare, &branch(forge, 2));
    forge.add_check_run(&h1, "test", Some("success"), "");
    if user != GREEN {
        let failed = forge.add_check_run(&h2, "test", Some("failure"), LOG);
        forge.on_rerun(failed, "failure", LOG);
    }
    forge.on_new_heads("test", "success", "");
    (repo, bare)
}

/// Returns the commit branch `branch` points at in the bare repository `bare`.
fn head(bare: &Path, branch: &str) -> String {
    git(bare, &["rev-parse", &format!("refs/heads/{branch}")])
        .trim()
        .to_string()
}

/// Returns pull request `number`'s head branch.
fn branch(forge: &FakeForge, number: usize) -> String {
    forge.pulls()[number - 1]["head"]["ref"]
        .as_str()
        .unwrap()
        .to_string()
}

fn land(repo: &TestRepo, env: &[(&str, &str)]) -> Output {
    run_env(repo, &["land"], env)
}

fn land_once(repo: &TestRepo, env: &[(&str, &str)]) -> Output {
    run_env(repo, &["land", "--once"], env)
}

/// Returns the worktrees `git worktree list` shows for `repo`.
fn worktrees(repo: &TestRepo) -> Vec<String> {
    repo.git(&["worktree", "list", "--porcelain"])
        .lines()
        .filter_map(|l| l.strip_prefix("worktree ").map(str::to_string))
        .collect()
}

#[test]
fn a_ci_failure_reaches_the_packets_agent_as_its_next_turn_and_the_fix_lands_after_its_parent() {
    let scripts = json!([
        reviewer("never written")[1].clone(),
        coder("p1", &["p1\n"]),
        coder("p2", &["p2\n", "p2\nfixed\n"]),
    ]);
    let model = MockModel::start(demo::parse_scripts(&scripts.to_string()).unwrap()).unwrap();
    let env = model_env(&model);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let forge = FakeForge::start(Flavour::GitHub);
    let (repo, bare) = published(&forge, &env, &[], "");
    let (b1, b2) = (branch(&forge, 1), branch(&forge, 2));
    let h2 = head(&bare, &b2);
    // The packet's own worktree is gone (cleaned up after the run): the round makes one.
    let own = repo.scratch().join("wt");
    let p2_tree: Vec<String> = worktrees(&repo)
        .into_iter()
        .filter(|w| w.starts_with(own.to_str().unwrap()) && w.ends_with("p2"))
        .collect();
    assert_eq!(p2_tree.len(), 1, "{:?}", worktrees(&repo));
    repo.git(&["worktree", "remove", "--force", &p2_tree[0]]);
    let before = worktrees(&repo);
    let asked = model.received().len();

    let out = land(&repo, &env);
    assert!(out.status.success(), "{}", text(&out));
    let all = text(&out);
    assert!(all.contains("p1 #1: merged"), "{all}");
    assert!(all.contains("p2 #2: fix round 1 ended: pushed"), "{all}");
    assert!(all.contains("p2 #2: merged"), "{all}");
    assert!(!all.contains(TOKEN), "{all}");

    // The agent got the failure as the next turn of its own conversation: its task, its
    // earlier turns, then the check's name, conclusion and log tail.
    let sent: Vec<Value> = model.received()[asked..].to_vec();
    let fix_turn = request_saying(&sent, "assertion failed: left == right", "the log tail");
    let turns = messages(fix_turn);
    assert!(
        turns
            .iter()
            .any(|(r, t)| r == "user" && t.contains("Does p2."))
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
    assert!(!fix_turn.to_string().contains(TOKEN));

    // The fix is one commit over the failed head, pushed, and what landed after p1.
    let fixed = head(&bare, &b2);
    assert_eq!(git(&bare, &["rev-parse", &format!("{fixed}^")]).trim(), h2);
    assert_eq!(
        git(&bare, &["show", &format!("{fixed}:out-p2.txt")]),
        "p2\nfixed"
    );
    let calls = forge.calls();
    let at = |call: &str| calls.iter().position(|c| c == call).unwrap();
    assert!(
        at("PUT /repos/acme/widgets/pulls/1/merge") < at("PUT /repos/acme/widgets/pulls/2/merge")
    );
    assert_ne!(head(&bare, &b1), "");

    // The worktree the round made is gone again; nothing else changed.
    assert_eq!(worktrees(&repo), before);
}

/// Writes a stand-in for Claude Code into `bin` that runs `resumed` when resumed
/// (`--resume <session>`, its arguments and stdin in `$argv`/`$stdin`) and `fresh` otherwise,
/// in the worktree it works in, then prints `recording`.
fn fake_claude(bin: &Path, recording: &str, resumed: &str, fresh: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(bin).unwrap();
    let script = format!(
        r#"#!/bin/sh
stdin=$(cat)
id=$(basename "$(pwd)")
case " $* " in
  *" --resume "*) {resumed};;
  *) {fresh};;
esac
cat "{bin}/claude.jsonl"
"#,
        bin = bin.display()
    );
    std::fs::write(bin.join("claude"), script).unwrap();
    std::fs::set_permissions(bin.join("claude"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(bin.join("claude.jsonl"), recording).unwrap();
}

/// A stand-in for Claude Code: in the worktree of packet `<id>` (its directory's name) it
/// writes `out-<id>.txt`; resumed it appends `fixed` to it and keeps its arguments and what
/// it read on stdin in `<seen>/resumed-<id>.txt`. It prints `recording`.
fn claude(bin: &Path, seen: &Path, recording: &str) {
    let resumed = format!(
        r#"echo fixed >> "out-$id.txt"; {{ echo "argv: $*"; echo "$stdin"; }} > "{}/resumed-$id.txt""#,
        seen.display()
    );
    fake_claude(bin, recording, &resumed, r#"echo "$id" > "out-$id.txt""#);
}

/// A fake `claude` installed in a directory of its own by one of this file's installers, the
/// session id of its recording, and where it keeps what it was told.
struct Claude {
    session: String,
    /// Holds `bin` and `seen`, removed with the value.
    _scratch: tempfile::TempDir,
    bin: PathBuf,
    seen: PathBuf,
    /// `PATH` with `bin` first.
    path: String,
}

impl Claude {
    /// Installs the fake with `install` (`bin`, `seen`, the recording it prints).
    fn install(install: fn(&Path, &Path, &str)) -> Claude {
        let recording = crate::agent::agent_cli::fixture("claude");
        let session = git_orchestra::agent::cli::parse::parse(
            crate::agent::agent_cli::format_of("claude"),
            &recording,
        )
        .session
        .unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let (bin, seen) = (scratch.path().join("bin"), scratch.path().join("seen"));
        std::fs::create_dir_all(&seen).unwrap();
        install(&bin, &seen, &recording);
        let path = format!("{}:/usr/bin:/bin", bin.display());
        Claude {
            session,
            _scratch: scratch,
            bin,
            seen,
            path,
        }
    }

    /// The environment of a command using the fake: its `PATH` and the forge token.
    fn env(&self) -> [(&str, &str); 2] {
        [("PATH", self.path.as_str()), ("GH_TOKEN", TOKEN)]
    }

    /// The user's sandbox settings that let the workers run the fake and write `seen`.
    fn sandbox(&self) -> String {
        format!(
            "[sandbox]\nif_unavailable = \"warn\"\nread = [\"{}\"]\nwritable = [\"{}\"]\n",
            self.bin.display(),
            self.seen.display()
        )
    }
}

#[test]
fn an_agent_cli_gets_the_ci_failure_in_its_resumed_session_and_the_fix_lands() {
    let cli = Claude::install(claude);
    let (session, seen) = (&cli.session, &cli.seen);
    let env = cli.env();
    let forge = FakeForge::start(Flavour::GitHub);
    let config = cli.sandbox();
    let (repo, bare) = published(&forge, &env, &["--agent", "claude"], &config);
    let b2 = branch(&forge, 2);
    let h2 = head(&bare, &b2);
    assert_eq!(git(&bare, &["show", &format!("{h2}:out-p2.txt")]), "p2");

    let out = land(&repo, &env);
    assert!(out.status.success(), "{}", text(&out));
    let all = text(&out);
    assert!(all.contains("p2 #2: fix round 1 ended: pushed"), "{all}");
    assert!(all.contains("p2 #2: merged"), "{all}");

    // The CLI's session was resumed with the failure, in the packet's worktree.
    let resumed = std::fs::read_to_string(seen.join("resumed-p2.txt")).unwrap();
    assert!(
        resumed.contains(&format!("--resume {session}")),
        "{resumed}"
    );
    assert!(
        resumed.contains("Check `test` failed (failure)"),
        "{resumed}"
    );
    assert!(
        resumed.contains("assertion failed: left == right"),
        "{resumed}"
    );
    assert!(!seen.join("resumed-p1.txt").exists());
    let fixed = head(&bare, &b2);
    assert_eq!(git(&bare, &["rev-parse", &format!("{fixed}^")]).trim(), h2);
    assert_eq!(
        git(&bare, &["show", &format!("{fixed}:out-p2.txt")]),
        "p2\nfixed"
    );
}

#[test]
fn a_fix_the_review_rejects_is_not_pushed_and_counts_as_a_round() {
    let mut scripts = reviewer("first try");
    scripts.push(coder("p1", &["p1\n"]));
    scripts.push(coder("p2", &["p2\n", "p2\nfirst try\n", "p2\nfixed\n"]));
    let model =
        MockModel::start(demo::parse_scripts(&json!(scripts).to_string()).unwrap()).unwrap();
    let env = model_env(&model);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let forge = FakeForge::start(Flavour::GitHub);
    let (repo, bare) = published(&forge, &env, &[], "");
    let b2 = branch(&forge, 2);
    let h2 = head(&bare, &b2);
    let merges = || {
        forge
            .calls()
            .iter()
            .filter(|c| c.starts_with("PUT /repos/acme/widgets/pulls/2/merge"))
            .count()
    };

    let out = land(&repo, &env);
    assert!(out.status.success(), "{}", text(&out));
    let all = text(&out);
    assert!(
        all.contains("p2 #2: fix round 1 ended: check `test` failed"),
        "{all}"
    );
    assert!(all.contains("the gate rejected the fix"), "{all}");
    assert!(all.contains("p2 #2: fix round 2 ended: pushed"), "{all}");
    assert!(all.contains("p2 #2: merged"), "{all}");
    assert_eq!(merges(), 1);

    // Only the accepted fix was pushed: one commit over the failed head, never the first try.
    let fixed = head(&bare, &b2);
    assert_eq!(git(&bare, &["rev-parse", &format!("{fixed}^")]).trim(), h2);
    assert_eq!(
        git(&bare, &["show", &format!("{fixed}:out-p2.txt")]),
        "p2\nfixed"
    );
    let log = git(&bare, &["log", "--format=%H", &format!("{h2}..{fixed}")]);
    assert_eq!(log.lines().count(), 1, "{log}");

    // The second round told the agent what the review found in its first.
    let second = model
        .received()
        .into_iter()
        .find(|b| {
            messages(b)
                .iter()
                .any(|(r, t)| r == "user" && t.contains("out-p2.txt says it only tried"))
        })
        .expect("the rejection reached the agent");
    assert!(
        second
            .to_string()
            .contains("assertion failed: left == right")
    );
}

#[test]
fn a_review_requesting_changes_reaches_the_agent_and_its_reply_is_posted_on_the_thread() {
    let scripts = json!([
        reviewer("never written")[1].clone(),
        coder("p1", &["p1\n"]),
        coder("p2", &["p2\n", "p2\nfixed\n"]),
    ]);
    let model = MockModel::start(demo::parse_scripts(&scripts.to_string()).unwrap()).unwrap();
    let env = model_env(&model);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let forge = FakeForge::start(Flavour::GitHub);
    let (repo, bare) = published(&forge, &env, &[], GREEN);
    forge.add_review(
        2,
        "alice",
        "CHANGES_REQUESTED",
        "Please say that it is fixed.",
    );
    forge.add_review_comment(2, "alice", "say fixed here", "out-p2.txt", 1);
    let thread = forge.review_comments_of(2)[0]["id"].as_u64().unwrap();
    let asked = model.received().len();

    let mut last = String::new();
    for _ in 0..3 {
        let out = land_once(&repo, &env);
        assert!(out.status.success(), "{}", text(&out));
        last = text(&out);
    }
    assert!(last.contains("p1 #1: merged"), "{last}");
    assert!(
        last.contains("p2 #2: still waiting for alice to review the fix"),
        "{last}"
    );

    // The review and the reviewer's inline comment were the agent's next turn.
    let sent: Vec<Value> = model.received()[asked..].to_vec();
    let fix_turn = request_saying(&sent, "say fixed here", "the review");
    let turns = messages(fix_turn);
    assert!(turns.iter().filter(|(r, _)| r == "assistant").count() >= 2);
    assert!(
        turns
            .iter()
            .any(|(_, t)| t.contains("Please say that it is fixed.")),
        "{turns:?}"
    );

    // The fix is pushed, and answered on the reviewer's thread with what the agent said.
    let fixed = head(&bare, &branch(&forge, 2));
    assert_eq!(
        git(&bare, &["show", &format!("{fixed}:out-p2.txt")]),
        "p2\nfixed"
    );
    let replies: Vec<Value> = forge
        .review_comments_of(2)
        .into_iter()
        .filter(|c| !c["in_reply_to_id"].is_null())
        .collect();
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_eq!(replies[0]["in_reply_to_id"], thread);
    let body = replies[0]["body"].as_str().unwrap();
    assert!(
        body.contains(&format!("@alice fix round 1 pushed {}", &fixed[..12])),
        "{body}"
    );
    assert!(body.contains("What the agent said"), "{body}");
}

/// A run of p1 alone (by our agent, or an agent CLI as `extra` arguments say, with `user` as
/// the user configuration) published as pull request #1 on `forge`, after which someone else
/// pushes their own `out-p1.txt` to main: #1 conflicts with its base. Returns the repository,
/// the bare remote and #1's head.
fn conflicting(
    forge: &FakeForge,
    env: &[(&str, &str)],
    extra: &[&str],
    user: &str,
) -> (TestRepo, PathBuf, String) {
    let (repo, bare) = setup(Some(forge), Flavour::GitHub);
    if !user.is_empty() {
        repo.user_config(user);
    }
    let plan = write_plan(&repo, &packet("p1", "", ""));
    let root = repo.scratch().join("wt");
    let mut args = vec![
        "run",
        plan.to_str().unwrap(),
        "--worktree-root",
        root.to_str().unwrap(),
        "--pr",
    ];
    args.extend_from_slice(extra);
    let out = run_env(&repo, &args, env);
    assert!(out.status.success(), "{}", text(&out));
    forge.follow_git(&bare);
    configure(&repo, "[land]\npoll_secs = 1\n");
    let old1 = head(&bare, &branch(forge, 1));
    crate::forge::land_conflict::someone_writes(&repo, &bare, "out-p1.txt");
    (repo, bare, old1)
}

/// A stand-in for Claude Code writing `out-p1.txt`; resumed, it resolves the conflict there
/// (main's line, then its own) and keeps its arguments and what it read on stdin in
/// `<seen>/resumed.txt`. It prints `recording`.
fn resolving_claude(bin: &Path, seen: &Path, recording: &str) {
    let resumed = format!(
        r#"printf "someone else's\np1's work\n" > out-p1.txt; {{ echo "argv: $*"; echo "$stdin"; }} > "{}/resumed.txt""#,
        seen.display()
    );
    fake_claude(bin, recording, &resumed, r#"echo "p1's work" > out-p1.txt"#);
}

#[test]
fn a_restack_conflict_reaches_an_agent_clis_resumed_session_and_its_resolution_lands() {
    let cli = Claude::install(resolving_claude);
    let (session, seen) = (&cli.session, &cli.seen);
    let env = cli.env();
    let forge = FakeForge::start(Flavour::GitHub);
    let config = cli.sandbox();
    let (repo, bare, old1) = conflicting(&forge, &env, &["--agent", "claude"], &config);

    let out = land(&repo, &env);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("p1 #1: merged"), "{all}");

    // The CLI's session was resumed with the conflict.
    let resumed = std::fs::read_to_string(seen.join("resumed.txt")).unwrap();
    assert!(
        resumed.contains(&format!("--resume {session}")),
        "{resumed}"
    );
    for want in [
        "kind: conflict",
        "`out-p1.txt`",
        "<<<<<<<",
        "Someone else writes out-p1.txt",
    ] {
        assert!(resumed.contains(want), "{want:?} not in {resumed}");
    }
    assert!(!resumed.contains(TOKEN));
    assert_eq!(
        git(&bare, &["show", "main:out-p1.txt"]),
        "someone else's\np1's work"
    );
    let saved = repo.git(&[
        "for-each-ref",
        "--format=%(objectname)",
        "refs/orchestra/saved/",
    ]);
    assert!(saved.contains(&old1), "{saved}");
}

#[test]
fn a_restack_conflict_reaches_the_packets_agent_as_its_next_turn_and_its_resolution_lands() {
    let scripts = json!([
        reviewer("never written")[1].clone(),
        coder("p1", &["p1's work\n", "someone else's\np1's work\n"]),
    ]);
    let model = MockModel::start(demo::parse_scripts(&scripts.to_string()).unwrap()).unwrap();
    let env = model_env(&model);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let forge = FakeForge::start(Flavour::GitHub);
    let (repo, bare, old1) = conflicting(&forge, &env, &[], "");
    let asked = model.received().len();

    let out = land(&repo, &env);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("p1 #1: merged"), "{all}");

    // The agent got the conflict (the file, its hunks, main's commit) as the next turn of its
    // own conversation.
    let sent: Vec<Value> = model.received()[asked..].to_vec();
    let turn = request_saying(&sent, "kind: conflict", "the conflict");
    let turns = messages(turn);
    assert!(
        turns
            .iter()
            .any(|(r, t)| r == "user" && t.contains("Does p1."))
    );
    let last_user = turns.iter().rev().find(|(r, _)| r == "user").unwrap();
    for want in [
        "`out-p1.txt`",
        "<<<<<<<",
        ">>>>>>>",
        "Someone else writes out-p1.txt",
    ] {
        assert!(last_user.1.contains(want), "{want:?} not in {last_user:?}");
    }

    // Its resolution keeps both sides, without markers, on main; the old head is saved.
    assert_eq!(
        git(&bare, &["show", "main:out-p1.txt"]),
        "someone else's\np1's work"
    );
    let saved = repo.git(&[
        "for-each-ref",
        "--format=%(objectname)",
        "refs/orchestra/saved/",
    ]);
    assert!(saved.contains(&old1), "{saved}");
}

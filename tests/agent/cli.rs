//! The commands: `agents`, `agent <role> "<task>"` and `run` without `--worker-cmd`.

use crate::agent::mock::MockServer;
use crate::support::{TestRepo, orchestra, orchestra_with_env, refs, text};

fn quick_profile(server: &MockServer) -> Vec<(&'static str, String)> {
    vec![
        ("ORCHESTRA_PROVIDER", "openai-compatible".to_string()),
        ("ORCHESTRA_BASE_URL", server.url.clone()),
        ("ORCHESTRA_MODEL", "mock-model".to_string()),
    ]
}

fn with<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

#[test]
fn agents_lists_roles_with_profiles_tools_and_scopes() {
    let repo = TestRepo::new();
    let out = orchestra(&repo.path, &["agents"]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("tester") && stdout.contains("tests/**"),
        "{stdout}"
    );
    assert!(
        stdout.contains("ORCHESTRA_PROVIDER"),
        "says how to get a profile: {stdout}"
    );
    let server = MockServer::start(vec![]);
    let env = quick_profile(&server);
    let out = orchestra_with_env(&repo.path, &["agents", "--json"], &with(&env));
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let coder = v["roles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["role"]["name"] == "coder")
        .unwrap();
    assert_eq!(coder["profiles"][0]["name"], "env");
    assert_eq!(coder["profiles"][0]["base_url"], server.url.as_str());
    assert!(
        coder["role"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "edit_file")
    );
}

#[test]
fn agents_json_lists_the_agent_clis_the_text_lists() {
    use std::os::unix::fs::PermissionsExt;
    let repo = TestRepo::new();
    // A stand-in gemini on PATH answering --version, and a CLI of the repository's own.
    let bin = repo.scratch().join("bin-fake");
    std::fs::create_dir_all(&bin).unwrap();
    let gemini = bin.join("gemini");
    std::fs::write(&gemini, "#!/bin/sh\necho 'fake gemini 9.9.9'\n").unwrap();
    std::fs::set_permissions(&gemini, std::fs::Permissions::from_mode(0o755)).unwrap();
    repo.write(
        ".orchestra/config.toml",
        "[agents.cli.mine]\ncommand = \"no-such-cli-anywhere\"\noutput = \"text\"\n",
    );
    repo.git(&["add", ".orchestra/config.toml"]);
    repo.git(&["commit", "-qm", "configuration"]);
    repo.trust();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let env = [
        ("PATH", path.as_str()),
        ("GEMINI_API_KEY", "not-a-real-key"),
    ];
    let out = orchestra_with_env(&repo.path, &["agents"], &env);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let listed: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("Agent CLIs"))
        .skip(1)
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(
        listed.contains(&"gemini") && listed.contains(&"mine"),
        "{stdout}"
    );
    for args in [
        &["agents", "--json"][..],
        &["agents", "--json", "--clis"][..],
    ] {
        let out = orchestra_with_env(&repo.path, args, &env);
        assert!(out.status.success(), "{}", text(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let clis = v["clis"].as_array().unwrap_or_else(|| panic!("{v}"));
        let names: Vec<&str> = clis.iter().filter_map(|c| c["name"].as_str()).collect();
        assert_eq!(names, listed, "{args:?}: {v}");
        let of = |name: &str| clis.iter().find(|c| c["name"] == name).unwrap();
        let g = of("gemini");
        assert_eq!(g["found"], true, "{g}");
        assert_eq!(g["path"], gemini.to_str().unwrap(), "{g}");
        assert_eq!(g["version"], "fake gemini 9.9.9", "{g}");
        assert_eq!(g["usable"], true, "{g}");
        let mine = of("mine");
        assert_eq!(
            (&mine["found"], &mine["usable"]),
            (&false.into(), &false.into()),
            "{mine}"
        );
        assert!(
            mine["note"].as_str().unwrap().contains("not on PATH"),
            "says why not: {mine}"
        );
        assert!(!v.to_string().contains("not-a-real-key"), "{v}");
    }
    let out = orchestra_with_env(&repo.path, &["agents", "--json"], &env);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["roles"].as_array().map(Vec::len), Some(12), "{v}");
}

#[test]
fn single_agent_mode_commits_the_agents_work_on_its_branch() {
    let repo = TestRepo::new();
    let server = MockServer::from_fixture_reviewed("openai/agent_edit");
    let env = quick_profile(&server);
    let out = orchestra_with_env(
        &repo.path,
        &["agent", "coder", "Swap the operands in add()", "--json"],
        &with(&env),
    );
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["run"]["state"], "completed", "{v}");
    let branch = v["packets"][0]["branch"].as_str().unwrap().to_string();
    let lib = repo.git(&["show", &format!("{branch}:src/lib.rs")]);
    assert!(lib.contains("b + a"), "{lib}");
    let trailers = repo.git(&["log", "-1", "--format=%B", &branch]);
    assert!(trailers.contains("Orchestra-Role: coder"), "{trailers}");
    assert!(
        !std::fs::read_to_string(repo.path.join("src/lib.rs"))
            .unwrap()
            .contains("b + a"),
        "the main checkout is untouched"
    );
}

#[test]
fn agent_best_of_two_keeps_the_candidate_that_passes_and_counts_both_candidates_tokens() {
    let repo = TestRepo::new();
    let write = |id: &str, content: &str| {
        calls(
            id,
            "write_file",
            serde_json::json!({"path": "out.txt", "content": content}),
        )
    };
    let done = |id: &str| {
        calls(
            id,
            "complete",
            serde_json::json!({"summary": "wrote out.txt"}),
        )
    };
    let server = MockServer::start(vec![
        write("c1", "wrong\n"),
        done("c2"),
        write("c3", "ok\n"),
        done("c4"),
        crate::agent::mock::approval(),
    ]);
    let env = quick_profile(&server);
    let out = orchestra_with_env(
        &repo.path,
        &[
            "agent",
            "coder",
            "Write ok to out.txt",
            "--files",
            "out.txt",
            "--validate",
            "grep -qx ok out.txt",
            "--best-of",
            "2",
            "--json",
        ],
        &with(&env),
    );
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["run"]["state"], "completed", "{v}");
    let branch = v["packets"][0]["branch"].as_str().unwrap().to_string();
    assert_eq!(repo.git(&["show", &format!("{branch}:out.txt")]), "ok");
    assert_eq!(v["candidates"][0]["winner"], 2, "{v:#}");
    // Both candidates' model calls count as the packet's.
    let coder: u64 = v["agents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["role"] == "coder")
        .map(|a| a["input_tokens"].as_u64().unwrap() + a["output_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(coder, 4 * 15, "{v:#}");
}

#[test]
fn agent_best_of_with_the_ssh_executor_configured_is_refused_before_anything_changes() {
    let repo = TestRepo::new();
    repo.write(
        ".orchestra/config.toml",
        "[executor]\nkind = \"ssh\"\n\n[executor.ssh]\nhosts = [\"h1\"]\nssh_command = \"false\"\n",
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "config"]);
    repo.trust();
    let server = MockServer::start(vec![]);
    let env = quick_profile(&server);
    let before = refs(&repo.path);
    let out = orchestra_with_env(
        &repo.path,
        &["agent", "coder", "Write ok to out.txt", "--best-of", "2"],
        &with(&env),
    );
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("--best-of 2 asks for 2 candidates, but candidates run only on the local executor, not ssh"),
        "{said}"
    );
    assert!(said.contains("executor"), "{said}");
    assert_eq!(refs(&repo.path), before);
}

#[test]
fn without_a_profile_nothing_starts_and_the_error_says_what_to_set() {
    let repo = TestRepo::new();
    let before = refs(&repo.path);
    let out = orchestra(&repo.path, &["agent", "coder", "do something"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("ORCHESTRA_PROVIDER") && stderr.contains("[profiles.default]"),
        "{stderr}"
    );
    assert_eq!(refs(&repo.path), before);
    let out = orchestra(&repo.path, &["agent", "wizard", "do something"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("known roles"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_plan_runs_with_our_agents_when_no_worker_command_is_given() {
    let repo = TestRepo::new();
    repo.write(
        "plan.toml",
        "objective = \"swap\"\n[[packet]]\nid = \"swap\"\ntitle = \"Swap operands\"\ndescription = \"Swap the operands in add().\"\nfiles = [\"src/lib.rs\"]\nvalidation = [\"grep -q 'b + a' src/lib.rs\"]\n",
    );
    repo.git(&["add", "plan.toml"]);
    repo.git(&["commit", "-qm", "plan"]);
    let server = MockServer::from_fixture_reviewed("openai/agent_edit");
    let env = quick_profile(&server);
    let out = orchestra_with_env(&repo.path, &["run", "plan.toml", "--json"], &with(&env));
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["packets"][0]["state"], "succeeded", "{v}");
    assert_eq!(server.unused(), 0);
}

#[test]
fn an_agent_whose_provider_stays_down_through_the_clients_retries_runs_again_later() {
    let repo = TestRepo::new();
    repo.write(
        ".orchestra/config.toml",
        "[run]\nretries = 1\nretry_delay_ms = 20\n",
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "config"]);
    // Five outages: the first call and its four client retries; then the provider is back.
    let down = serde_json::json!({"status": 503, "headers": {"retry-after": "0"},
        "json": {"error": {"message": "overloaded"}}});
    let mut replies = vec![down; 5];
    replies.extend(crate::agent::mock::fixture_replies("openai/agent_edit"));
    replies.push(crate::agent::mock::approval());
    let server = MockServer::start(replies);
    let env = quick_profile(&server);
    let out = orchestra_with_env(
        &repo.path,
        &["agent", "coder", "Swap the operands in add()"],
        &with(&env),
    );
    assert!(out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("may pass on another try: try 2"),
        "{stderr}"
    );
    let branch = repo.git(&[
        "for-each-ref",
        "--format=%(refname:short)",
        "refs/heads/orchestra/",
    ]);
    assert!(
        repo.git(&["show", &format!("{branch}:src/lib.rs")])
            .contains("b + a"),
        "the work landed on {branch}"
    );
}

/// A non-streamed model reply that calls `name` with `args`.
fn calls(id: &str, name: &str, args: serde_json::Value) -> serde_json::Value {
    serde_json::json!({"json": {"model": "mock-model", "choices": [{"index": 0, "message": {"role": "assistant", "content": null,
        "tool_calls": [{"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}}]},
        "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 10, "completion_tokens": 5}}})
}

/// A model reply that writes `content` to `path` with `write_file`.
fn writes(id: &str, path: &str, content: &str) -> serde_json::Value {
    calls(
        id,
        "write_file",
        serde_json::json!({"path": path, "content": content}),
    )
}

/// A model reply that calls `complete` with `summary`.
fn completes(id: &str, summary: &str) -> serde_json::Value {
    calls(id, "complete", serde_json::json!({"summary": summary}))
}

/// Writes `plan` as `plan.toml` and commits it.
fn commit_plan(repo: &TestRepo, plan: &str) {
    repo.write("plan.toml", plan);
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "plan"]);
}

#[test]
fn a_fix_round_is_the_next_turn_of_the_agents_conversation() {
    let repo = TestRepo::new();
    commit_plan(
        &repo,
        "objective = \"Say ok\"\n\n[[packet]]\nid = \"p1\"\ntitle = \"Write ok\"\ndescription = \"Write ok to out.txt\"\nfiles = [\"out.txt\"]\nvalidation = [\"grep -q ok out.txt || { echo out.txt says $(cat out.txt); exit 2; }\"]\n",
    );
    let server = MockServer::start(vec![
        writes("c1", "out.txt", "wrong\n"),
        completes("c2", "wrote out.txt"),
        writes("c3", "out.txt", "ok\n"),
        completes("c4", "fixed out.txt"),
        crate::agent::mock::approval(),
    ]);
    let env = quick_profile(&server);
    let out = orchestra_with_env(&repo.path, &["run", "plan.toml", "--merge"], &with(&env));
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(repo.git(&["show", "main:out.txt"]), "ok");
    // The fix round's request carries the first round's conversation, then the failure.
    let reqs = server.requests();
    let fix = reqs[2].body.to_string();
    assert!(fix.contains("wrote out.txt"), "{fix}");
    assert!(fix.contains("\\\"content\\\":\\\"wrong\\\\n\\\""), "{fix}");
    assert!(fix.contains("out.txt says wrong"), "{fix}");
    assert!(fix.contains("call `complete` again"), "{fix}");
}

#[test]
fn a_dependent_packets_first_prompt_says_what_its_dependency_did() {
    let repo = TestRepo::new();
    commit_plan(
        &repo,
        "objective = \"Two steps\"\n\n[[packet]]\nid = \"p1\"\ntitle = \"Add the helper\"\ndescription = \"Write helper.txt\"\nfiles = [\"helper.txt\"]\n\n[[packet]]\nid = \"p2\"\ntitle = \"Use the helper\"\ndescription = \"Write user.txt\"\nfiles = [\"user.txt\"]\ndepends_on = [\"p1\"]\n",
    );
    let server = MockServer::start(vec![
        writes("c1", "helper.txt", "h\n"),
        completes("c2", "added helper() taking a name"),
        crate::agent::mock::approval(),
        writes("c3", "user.txt", "u\n"),
        completes("c4", "used helper()"),
        crate::agent::mock::approval(),
    ]);
    let env = quick_profile(&server);
    let out = orchestra_with_env(&repo.path, &["run", "plan.toml"], &with(&env));
    assert!(out.status.success(), "{}", text(&out));
    let reqs = server.requests();
    let first_of_p2 = reqs[3].body.to_string();
    assert!(first_of_p2.contains("Use the helper"), "{first_of_p2}");
    assert!(
        first_of_p2.contains("What the packets this one depends on did"),
        "{first_of_p2}"
    );
    assert!(first_of_p2.contains("changed helper.txt"), "{first_of_p2}");
    assert!(
        first_of_p2.contains("added helper() taking a name"),
        "{first_of_p2}"
    );
}

#[test]
fn what_an_agent_learned_is_kept_listed_given_to_the_next_run_and_forgotten_on_request() {
    let repo = TestRepo::new();
    let server = MockServer::start(vec![
        writes(
            "c1",
            "src/lib.rs",
            "pub fn add(a: i32, b: i32) -> i32 { b + a }\n",
        ),
        calls(
            "c2",
            "complete",
            serde_json::json!({"summary": "swapped",
            "learnings": ["src/lib.rs is re-exported by the parser; keep add() public"]}),
        ),
        crate::agent::mock::approval(),
        writes("c3", "README.md", "# sample\n\nadds\n"),
        completes("c4", "documented"),
        crate::agent::mock::approval(),
    ]);
    let env = quick_profile(&server);
    let out = orchestra_with_env(
        &repo.path,
        &["agent", "coder", "Swap the operands in add()"],
        &with(&env),
    );
    assert!(out.status.success(), "{}", text(&out));
    let out = orchestra(&repo.path, &["memory", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let kept: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        kept[0]["text"],
        "src/lib.rs is re-exported by the parser; keep add() public"
    );
    assert_eq!(kept[0]["packet"], "coder");
    // The next run's agent is told.
    let out = orchestra_with_env(
        &repo.path,
        &[
            "agent",
            "docs",
            "Say what add() does in README.md",
            "--files",
            "README.md",
        ],
        &with(&env),
    );
    assert!(out.status.success(), "{}", text(&out));
    let next = server.requests()[3].body.to_string();
    assert!(next.contains("Learned in earlier runs"), "{next}");
    assert!(next.contains("keep add() public"), "{next}");
    // Forgetting needs ids or --all, and then it is gone.
    let out = orchestra(&repo.path, &["memory", "forget"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let out = orchestra(&repo.path, &["memory", "forget", "--all"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("forgot 1 learning"),
        "{}",
        text(&out)
    );
    let out = orchestra(&repo.path, &["memory", "--json"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "[]");
}

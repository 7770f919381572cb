//! Configuration the agents obey: the user's file under the repository's, and each
//! profile's concurrency limit across the packets of a run.

use serde_json::{Value, json};

use crate::agent::mock::MockServer;
use crate::support::{TestRepo, orchestra_with_env, text};

/// A streamed answer that calls `complete` at once, after `delay_ms`.
fn complete_after(delay_ms: u64) -> Value {
    json!({"delay_ms": delay_ms, "sse": [
        {"id": "c", "model": "mock-model", "choices": [{"index": 0, "delta": {"role": "assistant", "content": null,
            "tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "complete", "arguments": ""}}]}, "finish_reason": null}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"summary\": \"done\"}"}}]}, "finish_reason": null}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 2}},
        "[DONE]"
    ]})
}

/// Runs a three-packet plan with up to three packets at once, the profile allowing
/// `concurrency` calls in flight; returns the most calls the server saw at once.
fn peak_with_concurrency(concurrency: usize) -> usize {
    let repo = TestRepo::new();
    // Three agents at once, then their three reviews (the reviewer uses the default profile).
    let mut replies: Vec<Value> = (0..3).map(|_| complete_after(400)).collect();
    replies.extend((0..3).map(|_| crate::agent::mock::approval()));
    let server = MockServer::start(replies);
    repo.write(
        ".orchestra/config.toml",
        &format!(
            "[profiles.default]\nprovider = \"openai-compatible\"\nbase_url = \"{}\"\nmodel = \"mock-model\"\nconcurrency = {concurrency}\n",
            server.url
        ),
    );
    let mut plan = String::from("objective = \"three\"\n");
    for id in ["a", "b", "c"] {
        plan.push_str(&format!(
            "[[packet]]\nid = \"{id}\"\ntitle = \"Packet {id}\"\ndescription = \"Nothing to do.\"\nfiles = [\"src/{id}.rs\"]\nmay_be_empty = true\n"
        ));
    }
    repo.write("plan.toml", &plan);
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "plan"]);
    repo.trust();
    let out = orchestra_with_env(
        &repo.path,
        &["run", "plan.toml", "--max-parallel", "3", "--json"],
        &[],
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let agents = v["agents"].as_array().map_or(0, Vec::len);
    assert_eq!(agents, 3, "{}", text(&out));
    assert_eq!(server.unused(), 0, "{}", text(&out));
    server.peak_in_flight()
}

#[test]
fn a_profiles_concurrency_limit_holds_across_concurrent_packets() {
    assert_eq!(peak_with_concurrency(1), 1);
    assert!(
        peak_with_concurrency(3) > 1,
        "the packets did run in parallel when the profile allowed it"
    );
}

#[test]
fn the_user_config_applies_under_the_repositorys() {
    let repo = TestRepo::new();
    let server = MockServer::start(vec![]);
    let home = repo.scratch().join("config-home");
    std::fs::create_dir_all(home.join("git-orchestra")).unwrap();
    std::fs::write(
        home.join("git-orchestra/config.toml"),
        format!(
            "[profiles.default]\nprovider = \"openai-compatible\"\nbase_url = \"{}\"\nmodel = \"user-model\"\n\n[profiles.review]\nprovider = \"ollama\"\nmodel = \"user-reviewer\"\n\n[roles.reviewer]\nprofile = \"review\"\n",
            server.url
        ),
    )
    .unwrap();
    repo.write(
        ".orchestra/config.toml",
        "[profiles.review]\nprovider = \"ollama\"\nmodel = \"repo-reviewer\"\n",
    );
    let xdg = home.to_str().unwrap();
    let out = orchestra_with_env(
        &repo.path,
        &["agents", "--json"],
        &[("XDG_CONFIG_HOME", xdg)],
    );
    assert!(out.status.success(), "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let model_of = |role: &str| {
        v["roles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["role"]["name"] == role)
            .unwrap()["profiles"][0]["model"]
            .clone()
    };
    assert_eq!(model_of("coder"), "user-model", "from the user's file");
    assert_eq!(
        model_of("reviewer"),
        "user-reviewer",
        "the user's profile of a name is never replaced by the repository's"
    );

    // A mistake in the user's file is an error naming that file.
    std::fs::write(
        home.join("git-orchestra/config.toml"),
        "[profiles.x]\nmodle = 1\n",
    )
    .unwrap();
    let out = orchestra_with_env(&repo.path, &["agents"], &[("XDG_CONFIG_HOME", xdg)]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("git-orchestra/config.toml") && stderr.contains("modle"),
        "{stderr}"
    );
}

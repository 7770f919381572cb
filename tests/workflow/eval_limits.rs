//! `git orchestra eval run` limits enforced while an attempt works: a `cli:` arm's `tokens=`
//! stops the agent CLI mid-packet instead of judging it over budget after it finished.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::eval_fixtures::history;
use crate::support::{TestRepo, orchestra, text};

/// A stand-in agent CLI speaking Claude Code's stream-json: it adds negation at once,
/// then reports 100 input tokens a turn, half a second apart, for twenty turns.
const CHATTY_CLI: &str = r#"#!/bin/sh
cat > /dev/null
echo 'neg() { echo $((0 - $1)); }' >> src/calc.sh
echo '{"type":"system","subtype":"init","session_id":"chatty-1","model":"fake-model"}'
i=1
while [ $i -le 20 ]; do
  echo '{"type":"assistant","message":{"id":"m'$i'","usage":{"input_tokens":100,"output_tokens":0},"content":[{"type":"text","text":"thinking"}]}}'
  sleep 0.5
  i=$((i + 1))
done
echo '{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"chatty-1","num_turns":20,"usage":{"input_tokens":2000,"output_tokens":0}}'
"#;

/// Writes the chatty CLI into `repo`'s scratch space, configured as agent CLI `chatty`.
fn chatty_cli(repo: &TestRepo) -> PathBuf {
    let bin = repo.scratch().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join("chatty-agent");
    std::fs::write(&script, CHATTY_CLI).unwrap();
    crate::support::make_executable(&script);
    repo.user_config(&format!(
        "[sandbox]\nif_unavailable = \"warn\"\nread = [\"{}\"]\n\n[agents.cli.chatty]\ncommand = \"{}\"\nprompt = \"stdin\"\noutput = \"claude\"\n",
        bin.display(),
        script.display()
    ));
    script
}

#[test]
fn a_cli_arm_is_stopped_mid_packet_at_its_token_budget() {
    let (repo, commits) = history();
    chatty_cli(&repo);
    let started = Instant::now();
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
            "tight=cli:chatty,tokens=250",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let attempt = &json["attempts"][0];
    assert_eq!(attempt["task"], commits[2].as_str(), "{json}");
    assert_eq!(attempt["failure"], "budget", "{json}");
    let tokens = attempt["tokens_in"].as_u64().unwrap() + attempt["tokens_out"].as_u64().unwrap();
    // Stopped once 250 were crossed: at most one turn of 100 beyond the limit.
    assert!((250..=350).contains(&tokens), "{tokens} tokens: {json}");
    assert!(
        attempt["detail"].as_str().unwrap().contains("250 tokens"),
        "{json}"
    );
    // The CLI would have run ten seconds; it was stopped after about one and a half.
    assert!(
        started.elapsed() < Duration::from_secs(30) && attempt["wall_ms"].as_u64().unwrap() < 8_000,
        "{json}"
    );
}

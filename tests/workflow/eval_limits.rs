//! `git orchestra eval run` limits enforced while an attempt works: a `cli:` arm's `tokens=`
//! stops the agent CLI mid-packet instead of judging it over budget after it finished.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::eval_fixtures::{eval, history};
use crate::support::{TestRepo, text};

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
    let json = eval(&repo, "HEAD~1..HEAD", &["tight=cli:chatty,tokens=250"], &[]);
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

/// A stand-in agent CLI printing plain text: it adds negation at once, says so, writes its
/// process id, then goes on forever, deaf to SIGTERM, printing the tokens it used so far (100
/// more every half second) as Codex's plain output does.
const PLAIN_CLI: &str = r#"#!/bin/sh
cat > /dev/null
echo 'neg() { echo $((0 - $1)); }' >> src/calc.sh
echo "Added neg; polishing it now."
trap '' TERM
echo $$ > "$PLAIN_PIDS/$$"
i=0
while :; do i=$((i + 100)); echo "tokens used: $i"; sleep 0.5; done
"#;

#[test]
fn a_plain_text_cli_arm_is_stopped_mid_packet_at_the_time_limit_and_at_its_budget() {
    let (repo, _) = history();
    let bin = repo.scratch().join("bin");
    let pids = repo.scratch().join("pids");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&pids).unwrap();
    let script = bin.join("plain-agent");
    std::fs::write(&script, PLAIN_CLI).unwrap();
    crate::support::make_executable(&script);
    repo.user_config(&format!(
        "[sandbox]\nif_unavailable = \"warn\"\nread = [\"{}\"]\nwritable = [\"{}\"]\n\n[agents.cli.plain]\ncommand = \"plain-agent\"\nprompt = \"stdin\"\noutput = \"text\"\nenv = {{ PLAIN_PIDS = \"{}\" }}\n",
        bin.display(),
        repo.scratch().display(),
        pids.display()
    ));
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let started = Instant::now();
    let out = crate::support::orchestra_command(
        &repo.path,
        &[
            "eval",
            "run",
            "--from-history",
            "HEAD~1..HEAD",
            "--test",
            "sh run_tests.sh",
            "--timeout",
            "3",
            "--arm",
            "plain=cli:plain",
            "--arm",
            "tight=cli:plain,tokens=250",
            "--json",
        ],
    )
    .env("PATH", path)
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let attempt = |arm: &str| {
        json["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["arm"] == arm)
            .unwrap_or_else(|| panic!("no attempt of {arm}: {json}"))
            .clone()
    };
    // Its usage lines are read as it prints them: at its budget it is stopped there.
    let tight = attempt("tight");
    assert_eq!(tight["failure"], "budget", "{json}");
    let tokens = tight["tokens_in"].as_u64().unwrap() + tight["tokens_out"].as_u64().unwrap();
    // Stopped at the line that crossed 250; what it printed in its grace period counts too.
    assert!((300..=800).contains(&tokens), "{tokens} tokens: {json}");
    let detail = tight["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("250 tokens"), "{json}");
    assert!(tight["wall_ms"].as_u64().unwrap() < 12_000, "{json}");
    // Without a budget, the time limit stops it.
    let attempt = attempt("plain");
    assert_eq!(attempt["failure"], "timeout", "{json}");
    assert!(attempt["tokens_in"].as_u64().unwrap() >= 300, "{json}");
    let detail = attempt["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("3s"), "{json}");
    // The CLI's last words are kept in what the attempt says.
    assert!(detail.contains("polishing it now"), "{json}");
    // Stopped at the 3 s limit (its grace period and the attempt's own work besides), not
    // tried again nor left to run.
    let wall = attempt["wall_ms"].as_u64().unwrap();
    assert!(wall < 12_000, "{wall} ms: {json}");
    assert!(started.elapsed() < Duration::from_secs(40), "{json}");
    // No process of the CLI outlives the attempt, though it ignored SIGTERM.
    let started_pids: Vec<_> = std::fs::read_dir(&pids).unwrap().flatten().collect();
    assert!(!started_pids.is_empty(), "the CLI never started: {json}");
    for pid in started_pids {
        let pid = pid.file_name().to_string_lossy().into_owned();
        // A process gone, or a zombie nobody reaped yet, no longer runs.
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(
            stat.is_empty() || stat.contains(") Z "),
            "CLI process {pid} still runs: {stat}"
        );
    }
}

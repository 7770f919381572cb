//! End-to-end: real agent CLIs (the pinned versions `.ci/run` installs) as workers of
//! `run --agent <name>`, talking to the local llama.cpp server through a recording relay.
//!
//! Opt-in: runs when `ORCHESTRA_E2E_LLM_URL` holds the server's URL and
//! `ORCHESTRA_E2E_AGENT_CLIS` names the CLI (`.ci/run` exports both; a named CLI that is not
//! installed fails the test). The small model does no useful work, so the plumbing is
//! asserted: the CLI ran in the packet's worktree, its requests reached the server carrying our
//! prompt and listing our MCP navigation tools, it exited, and the engine ended the packet
//! (committed, scope-checked and validated, or failed with the CLI's own error) and journaled
//! the usage it parsed from the CLI's output.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::{TestRepo, git, orchestra_with_env, status_json, text};

/// Returns the server URL when CLI `name` is to be tested, or `None` after saying why not.
fn enabled(name: &str) -> Option<String> {
    let url = std::env::var("ORCHESTRA_E2E_LLM_URL")
        .ok()
        .filter(|u| !u.trim().is_empty());
    let clis = std::env::var("ORCHESTRA_E2E_AGENT_CLIS").unwrap_or_default();
    match url {
        Some(url) if clis.split_whitespace().any(|c| c == name) => {
            let found = git_orchestra::agent::cli::which(name);
            assert!(
                found.is_some(),
                "ORCHESTRA_E2E_AGENT_CLIS names {name}, but it is not on PATH"
            );
            Some(
                url.trim()
                    .trim_end_matches('/')
                    .trim_end_matches("/v1")
                    .to_string(),
            )
        }
        _ => {
            eprintln!(
                "skipped: set ORCHESTRA_E2E_LLM_URL and name {name} in ORCHESTRA_E2E_AGENT_CLIS"
            );
            None
        }
    }
}

/// A relay to the model server that keeps every request body it forwards and counts the
/// answers it delivered whole.
pub(crate) struct Relay {
    pub(crate) url: String,
    bodies: Arc<Mutex<Vec<String>>>,
    answered: Arc<AtomicUsize>,
}

impl Relay {
    pub(crate) fn start(upstream: &str) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let target = upstream.trim_start_matches("http://").to_string();
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let answered = Arc::new(AtomicUsize::new(0));
        let (kept, count) = (Arc::clone(&bodies), Arc::clone(&answered));
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let (target, kept, count) = (target.clone(), Arc::clone(&kept), Arc::clone(&count));
                std::thread::spawn(move || {
                    if relay_one(client, &target, &kept) {
                        count.fetch_add(1, Ordering::SeqCst);
                    }
                });
            }
        });
        Relay {
            url,
            bodies,
            answered,
        }
    }

    /// Returns how many successful answers reached the CLI whole.
    pub(crate) fn answered(&self) -> usize {
        self.answered.load(Ordering::SeqCst)
    }

    /// Returns how many successful answers reached the CLI whole, waiting up to `within` for
    /// at least `wanted`: a relay thread counts an answer only once the server has closed its
    /// connection, which may come after the client, having read the whole answer, went on.
    pub(crate) fn answered_within(&self, wanted: usize, within: Duration) -> usize {
        let deadline = std::time::Instant::now() + within;
        while self.answered() < wanted && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        self.answered()
    }

    /// Returns the body of every request forwarded so far, in order of arrival.
    pub(crate) fn bodies(&self) -> Vec<String> {
        self.bodies.lock().unwrap().clone()
    }
}

/// Forwards one request (as `Connection: close`) and copies the response back as it streams;
/// returns whether a successful (2xx) answer reached the client whole.
fn relay_one(mut client: TcpStream, target: &str, kept: &Mutex<Vec<String>>) -> bool {
    let _ = client.set_read_timeout(Some(Duration::from_secs(60)));
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    let head_end = loop {
        let Ok(n) = client.read(&mut chunk) else {
            return false;
        };
        if n == 0 {
            return false;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let len = content_length(&head).unwrap_or(0);
    while buf.len() < head_end + len {
        let Ok(n) = client.read(&mut chunk) else {
            return false;
        };
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    kept.lock()
        .unwrap()
        .push(String::from_utf8_lossy(&buf[head_end..]).to_string());
    let head: String = head
        .lines()
        .filter(|l| !l.to_ascii_lowercase().starts_with("connection:"))
        .filter(|l| !l.is_empty())
        .map(|l| format!("{l}\r\n"))
        .collect();
    let Ok(mut up) = TcpStream::connect(target) else {
        return false;
    };
    let _ = up.write_all(format!("{head}Connection: close\r\n\r\n").as_bytes());
    let _ = up.write_all(&buf[head_end..]);
    let Ok(n) = up.read(&mut chunk) else {
        return false;
    };
    let success = chunk[..n].starts_with(b"HTTP/1.1 2") || chunk[..n].starts_with(b"HTTP/1.0 2");
    let mut sent = chunk[..n].to_vec();
    let mut whole = client.write_all(&chunk[..n]).is_ok();
    while whole {
        match up.read(&mut chunk) {
            Ok(0) => break,
            Ok(m) => {
                whole = client.write_all(&chunk[..m]).is_ok();
                if whole {
                    sent.extend_from_slice(&chunk[..m]);
                }
            }
            Err(_) => return false,
        }
    }
    // A client that has read the answer's last event may close before the server's closing
    // bytes (the chunked body's terminator) are relayed; the answer still reached it whole.
    success && n > 0 && (whole || answer_ended(&sent))
}

/// Returns whether `sent`, a response as relayed so far, holds its answer's end: the end
/// event of an OpenAI or Anthropic event stream, or the whole body its length announced.
fn answer_ended(sent: &[u8]) -> bool {
    let text = String::from_utf8_lossy(sent);
    if text.contains("data: [DONE]") || text.contains("message_stop") {
        return true;
    }
    let Some(head_end) = text.find("\r\n\r\n") else {
        return false;
    };
    content_length(&text[..head_end]).is_some_and(|len| sent.len() >= head_end + 4 + len)
}

/// Returns the `Content-Length` an HTTP message's `head` announces, if any.
fn content_length(head: &str) -> Option<usize> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case("content-length")
            .then(|| v.trim().parse::<usize>().ok())?
    })
}

/// Runs one packet with CLI `name` configured by `cli_table` (its `[agents.cli.<name>]`),
/// with `env`, and asserts the plumbing.
fn end_to_end(name: &str, cli_table: &str, env: &[(&str, &str)], relay: &Relay) {
    let repo = TestRepo::new();
    std::fs::create_dir_all(repo.path.join(".orchestra")).unwrap();
    std::fs::write(
        repo.path.join(".orchestra/config.toml"),
        format!("[sandbox]\nif_unavailable = \"warn\"\n\n[agents.cli.{name}]\n{cli_table}"),
    )
    .unwrap();
    repo.git(&["add", ".orchestra"]);
    repo.git(&["commit", "-qm", "configuration"]);
    repo.trust();
    let plan = repo.write_plan(
        "plan.toml",
        "objective = \"Say done\"\n\n[[packet]]\nid = \"p1\"\ntitle = \"Pelican greeting\"\ndescription = \"Reply with the single word: done\"\nfiles = [\"src/**\"]\nmay_be_empty = true\n",
    );
    let root = repo.scratch().join("wt");
    let out = orchestra_with_env(
        &repo.path,
        &[
            "run",
            plan.to_str().unwrap(),
            "--agent",
            name,
            "--timeout",
            "1500",
            "--worktree-root",
            root.to_str().unwrap(),
        ],
        env,
    );
    let status = status_json(&repo.path);
    let packet = &status["packets"][0];
    let bodies = relay.bodies();
    // Its requests reached the server with our prompt and our MCP tools.
    assert!(
        bodies.iter().any(|b| b.contains("Pelican greeting")),
        "{name} sent no request with the packet's prompt ({} requests); {}",
        bodies.len(),
        text(&out)
    );
    assert!(
        bodies
            .iter()
            .any(|b| b.contains("nav_outline") && b.contains("nav_def")),
        "{name}'s requests do not list our navigation tools"
    );
    // The engine journaled the usage it parsed, once the server's answer reached the CLI (a
    // loaded server may answer after the CLI's own request timeout: no usage exists then).
    let agent = status["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["role"] == format!("coder/{name}"))
        .unwrap_or_else(|| panic!("no coder/{name} agent in {status}"));
    if relay.answered() > 0 {
        assert!(agent["input_tokens"].as_u64().unwrap() > 0, "{agent}");
    }
    assert!(
        agent["reason"].as_str().unwrap().contains("session"),
        "{agent}"
    );
    // It ran in the worktree (its own log says where) and the engine ended the packet: a
    // success is committed under the engine's identity, scope-checked, or the failure is the
    // CLI's own error.
    let branch = packet["branch"].as_str().unwrap();
    match packet["state"].as_str().unwrap() {
        "succeeded" => {
            let author = git(&repo.path, &["log", "-1", "--format=%an", branch]);
            let base = git(&repo.path, &["rev-parse", "HEAD"]);
            let tip = git(&repo.path, &["rev-parse", branch]);
            assert!(tip == base || author == "git-orchestra", "{author}");
            let files = git(&repo.path, &["diff", "--name-only", &base, &tip]);
            assert!(files.lines().all(|f| f.starts_with("src/")), "{files}");
        }
        other => {
            let reason = packet["reason"].as_str().unwrap_or_default();
            assert!(reason.contains(name), "{other}: {reason}");
        }
    }
}

#[test]
fn claude_code_works_a_packet_against_the_local_server() {
    let Some(url) = enabled("claude") else { return };
    let _turn = crate::agent::e2e::local_server_turn();
    let relay = Relay::start(&url);
    // Its own options shrink what it sends (a short system prompt, two built-in tools) so the
    // small server answers in time; the MCP tools and our prompt are still the adapter's.
    let table = format!(
        "model = \"local-qwen\"\nargs = [\"--tools\", \"Edit,Write\", \"--system-prompt\", \"You are a coding agent. Use the tools.\", \"--max-turns\", \"3\"]\nenv = {{ ANTHROPIC_BASE_URL = \"{}\" }}\n",
        relay.url
    );
    end_to_end(
        "claude",
        &table,
        &[("ANTHROPIC_API_KEY", "sk-local-e2e")],
        &relay,
    );
}

#[test]
fn qwen_code_works_a_packet_against_the_local_server() {
    let Some(url) = enabled("qwen") else { return };
    let _turn = crate::agent::e2e::local_server_turn();
    let relay = Relay::start(&url);
    let table = format!(
        "model = \"local-qwen\"\nargs = [\"--auth-type\", \"openai\", \"--system-prompt\", \"You are a coding agent. Use the tools.\", \"--core-tools\", \"write_file\", \"--max-session-turns\", \"3\"]\nenv = {{ OPENAI_BASE_URL = \"{}/v1\", OPENAI_MODEL = \"local-qwen\" }}\n",
        relay.url
    );
    end_to_end(
        "qwen",
        &table,
        &[("OPENAI_API_KEY", "sk-local-e2e")],
        &relay,
    );
}

#[test]
fn opencode_works_a_packet_against_the_local_server() {
    let Some(url) = enabled("opencode") else {
        return;
    };
    let _turn = crate::agent::e2e::local_server_turn();
    let relay = Relay::start(&url);
    let provider = serde_json::json!({
        "provider": {"local": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "local",
            "options": {"baseURL": format!("{}/v1", relay.url), "apiKey": "sk-local-e2e"},
            "models": {"local-qwen": {"name": "local-qwen"}}
        }}
    });
    let table = format!(
        "model = \"local/local-qwen\"\nenv = {{ OPENCODE_CONFIG_CONTENT = {} }}\n",
        toml_string(&provider.to_string())
    );
    end_to_end("opencode", &table, &[], &relay);
}

fn toml_string(s: &str) -> String {
    format!("'{s}'")
}

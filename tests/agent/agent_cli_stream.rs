//! An agent CLI's activity shows while it runs, not only once it exits: stand-ins on PATH print
//! a real CLI's stream format (or plain text), then wait for the test to let them finish, so
//! `status` is read while the CLI is still running. A run stopped while its CLI worked and
//! resumed shows the live attempt's states and keeps each attempt's log.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::support::{TestRepo, orchestra_command, status_json};

/// Writes the executable `name` with `script` (a shell script's body) into a new directory of
/// `repo`'s scratch space and returns that directory. The script finds `$here/go` once the
/// test lets it finish.
fn cli(repo: &TestRepo, name: &str, script: &str) -> PathBuf {
    let bin = repo.scratch().join(format!("bin-{name}"));
    std::fs::create_dir_all(&bin).unwrap();
    let body = format!(
        "#!/bin/sh\nhere=$(cd \"$(dirname \"$0\")\" && pwd)\nwait_go() {{ i=0; while [ ! -f \"$here/go\" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; }}\n{script}"
    );
    std::fs::write(bin.join(name), body).unwrap();
    std::fs::set_permissions(bin.join(name), std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// Configures `repo` (committed, trusted) with `extra` after a sandbox that may read `bin`,
/// and returns a plan of one packet `p1` writing `src/**`.
fn configure(repo: &TestRepo, bin: &Path, extra: &str) -> PathBuf {
    repo.write(
        ".orchestra/config.toml",
        &format!(
            "[sandbox]\nif_unavailable = \"warn\"\nread = [\"{}\"]\n\n{extra}",
            bin.display()
        ),
    );
    repo.git(&["add", ".orchestra/config.toml"]);
    repo.git(&["commit", "-qm", "configuration"]);
    repo.trust();
    repo.write_plan(
        "plan.toml",
        "objective = \"Add a note\"\n\n[[packet]]\nid = \"p1\"\ntitle = \"Note\"\ndescription = \"Write src/note.txt\"\nfiles = [\"src/**\"]\n",
    )
}

/// Starts the binary with `args` in `repo` with `bin` first on PATH, its output to files in
/// the scratch directory named after `label`.
fn start(repo: &TestRepo, bin: &Path, args: &[&str], label: &str) -> Child {
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::fs::File::create(repo.scratch().join(format!("{label}.out"))).unwrap();
    let err = std::fs::File::create(repo.scratch().join(format!("{label}.err"))).unwrap();
    orchestra_command(&repo.path, args)
        .env("PATH", path)
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .spawn()
        .unwrap()
}

/// Returns what the command started as `label` printed on its standard error.
fn stderr_of(repo: &TestRepo, label: &str) -> String {
    std::fs::read_to_string(repo.scratch().join(format!("{label}.err"))).unwrap_or_default()
}

/// Polls `status --json` until `ready` holds of it, for at most 30 s; returns the last status.
fn until(
    repo: &TestRepo,
    what: &str,
    ready: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = orchestra_command(&repo.path, &["status", "--json"])
            .output()
            .unwrap();
        let status: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
        if ready(&status) {
            return status;
        }
        assert!(Instant::now() < deadline, "{what}; status was {status:#}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Returns the `status --json` entry of the agent of `role`.
fn agent<'a>(status: &'a serde_json::Value, role: &str) -> Option<&'a serde_json::Value> {
    status["agents"]
        .as_array()?
        .iter()
        .find(|a| a["role"] == role)
}

const INIT: &str = r#"{"type":"system","subtype":"init","session_id":"s-stream","model":"claude-test","tools":["Edit"]}"#;
const EDIT: &str = r#"{"type":"assistant","session_id":"s-stream","message":{"id":"m1","usage":{"input_tokens":1200,"output_tokens":30},"content":[{"type":"tool_use","id":"t1","name":"Edit","input":{"file_path":"src/note.txt"}}]}}"#;
const EDITED: &str = r#"{"type":"user","session_id":"s-stream","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}"#;
const DONE: &str = r#"{"type":"result","subtype":"success","is_error":false,"session_id":"s-stream","num_turns":2,"result":"Wrote the note.","total_cost_usd":0.02,"usage":{"input_tokens":2500,"output_tokens":80}}"#;

#[test]
fn a_claude_cli_s_tool_calls_and_tokens_show_in_status_while_it_runs() {
    let repo = TestRepo::new();
    let bin = cli(
        &repo,
        "claude",
        &format!(
            "cat > /dev/null\necho noted > src/note.txt\necho '{INIT}'\necho '{EDIT}'\necho '{EDITED}'\nwait_go\necho '{DONE}'\n"
        ),
    );
    let plan = configure(&repo, &bin, "");
    let root = repo.scratch().join("wt");
    let mut child = start(
        &repo,
        &bin,
        &[
            "run",
            plan.to_str().unwrap(),
            "--agent",
            "claude",
            "--worktree-root",
            root.to_str().unwrap(),
        ],
        "run",
    );
    // While it waits, what it streamed so far is in the packet's activity.
    let live = until(
        &repo,
        "the running CLI's tool call and tokens never showed",
        |s| {
            agent(s, "coder/claude").is_some_and(|a| {
                a["tool_calls"] == 1 && a["input_tokens"] == 1200 && a["state"] == "running"
            })
        },
    );
    assert_eq!(live["packets"][0]["state"], "running", "{live:#}");
    std::fs::write(bin.join("go"), "").unwrap();
    let done = child.wait().unwrap();
    let err = stderr_of(&repo, "run");
    assert!(done.success(), "{err}");
    assert!(
        err.contains("[p1] coder/claude: Edit src/note.txt"),
        "the tool call's progress line names its file: {err}"
    );
    // The account at the end adds only what the stream had not shown: nothing twice.
    let status = status_json(&repo.path);
    let a = agent(&status, "coder/claude").unwrap();
    assert_eq!(
        (&a["input_tokens"], &a["output_tokens"], &a["tool_calls"]),
        (&2500.into(), &80.into(), &1.into()),
        "{a}"
    );
    assert_eq!(a["state"], "completed", "{a}");
}

#[test]
fn a_text_cli_shows_it_is_running_for_how_long_and_its_last_line() {
    let repo = TestRepo::new();
    let bin = cli(
        &repo,
        "mine",
        "echo 'reading the parser'\nwait_go\necho noted > src/note.txt\necho finished\n",
    );
    let plan = configure(
        &repo,
        &bin,
        &format!(
            "[roles.coder]\nagent = \"mine\"\n\n[agents.cli.mine]\ncommand = \"{}\"\noutput = \"text\"\nheartbeat_secs = 1\n",
            bin.join("mine").display()
        ),
    );
    let root = repo.scratch().join("wt");
    let mut child = start(
        &repo,
        &bin,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worktree-root",
            root.to_str().unwrap(),
        ],
        "run",
    );
    let live = until(&repo, "the running CLI never showed as running", |s| {
        agent(s, "coder/mine").is_some_and(|a| {
            a["state"] == "running"
                && a["reason"]
                    .as_str()
                    .is_some_and(|r| r.contains("last output: reading the parser"))
        })
    });
    let reason = agent(&live, "coder/mine").unwrap()["reason"].to_string();
    assert!(reason.contains("mine running for"), "{reason}");
    let shown = orchestra_command(&repo.path, &["status"]).output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains("└ mine running for") && shown.contains("last output: reading the parser"),
        "{shown}"
    );
    std::fs::write(bin.join("go"), "").unwrap();
    let done = child.wait().unwrap();
    let err = stderr_of(&repo, "run");
    assert!(done.success(), "{err}");
    assert!(
        err.contains("[p1] coder/mine: mine running for"),
        "the terminal shows it too: {err}"
    );
}

#[test]
fn a_resumed_agent_cli_shows_the_live_attempt_and_keeps_the_stopped_attempt_s_log() {
    let repo = TestRepo::new();
    // Each run of the CLI counts itself in its private directory (kept across runs).
    let bin = cli(
        &repo,
        "mine",
        "n=$(cat \"$TMPDIR/runs\" 2>/dev/null || echo 0)\nn=$((n+1))\necho $n > \"$TMPDIR/runs\"\necho \"run $n working\"\nwait_go\necho noted > src/note.txt\necho finished\n",
    );
    let plan = configure(
        &repo,
        &bin,
        &format!(
            "[roles.coder]\nagent = \"mine\"\n\n[agents.cli.mine]\ncommand = \"{}\"\noutput = \"text\"\n",
            bin.join("mine").display()
        ),
    );
    let root = repo.scratch().join("wt");
    let mut first = start(
        &repo,
        &bin,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worktree-root",
            root.to_str().unwrap(),
        ],
        "run",
    );
    let common = repo.path.join(repo.git(&["rev-parse", "--git-common-dir"]));
    let logs = |run: &str| -> Vec<(String, String)> {
        let dir = common.join(format!("orchestra/runs/{run}/p1"));
        let mut all: Vec<(String, String)> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| {
                n.starts_with("worker-") && n.ends_with(".log") && !n.ends_with(".activity.log")
            })
            .map(|n| {
                let body =
                    std::fs::read_to_string(common.join(format!("orchestra/runs/{run}/p1/{n}")))
                        .unwrap_or_default();
                (n, body)
            })
            .collect();
        all.sort();
        all
    };
    let status = until(&repo, "the first run never started", |s| {
        s["run"]["id"].is_string()
    });
    let run = status["run"]["id"].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !logs(&run).iter().any(|(_, b)| b.contains("run 1 working")) {
        assert!(
            Instant::now() < deadline,
            "the CLI never ran: {:?}",
            logs(&run)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: signals our own child process.
    unsafe { libc::kill(first.id() as i32, libc::SIGINT) };
    assert_eq!(
        first.wait().unwrap().code(),
        Some(130),
        "{}",
        stderr_of(&repo, "run")
    );
    let stopped = status_json(&repo.path);
    assert_eq!(stopped["packets"][0]["state"], "interrupted", "{stopped:#}");
    assert_eq!(agent(&stopped, "coder/mine").unwrap()["state"], "cancelled");

    let mut resumed = start(&repo, &bin, &["resume"], "resume");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !logs(&run).iter().any(|(_, b)| b.contains("run 2 working")) {
        assert!(
            Instant::now() < deadline,
            "the CLI never ran again: {:?}",
            logs(&run)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // While the CLI runs again, its packet and agent are in this attempt's states.
    let live = status_json(&repo.path);
    assert_eq!(live["packets"][0]["state"], "running", "{live:#}");
    assert_eq!(
        agent(&live, "coder/mine").unwrap()["state"],
        "running",
        "{live:#}"
    );
    // The stopped attempt's log is kept beside the live one's.
    let all = logs(&run);
    assert!(
        all.iter()
            .any(|(n, b)| n == "worker-1.log" && b.contains("run 1 working")),
        "the first attempt's log was overwritten: {all:?}"
    );
    assert_eq!(all.len(), 2, "{all:?}");
    std::fs::write(bin.join("go"), "").unwrap();
    let done = resumed.wait().unwrap();
    let err = stderr_of(&repo, "resume");
    assert!(done.success(), "{err}");
    assert_eq!(
        err.lines()
            .filter(|l| l.starts_with("resuming run"))
            .count(),
        1,
        "{err}"
    );
    assert!(err.contains("[p1] started again (attempt 1"), "{err}");
    assert_eq!(status_json(&repo.path)["packets"][0]["state"], "succeeded");
}

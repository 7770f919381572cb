//! Agent CLIs as workers (`run --agent <name>`), with stand-ins: a script on PATH named like
//! the CLI that records how the engine called it (argv, working directory, prompt, the MCP
//! settings it was given) into the packet's worktree and replays the CLI's recorded output
//! from `fixtures/agent-cli/`. The engine really runs it, commits, scope-checks, sends a fix
//! round that resumes the CLI's session, and journals what the output says.

use std::path::{Path, PathBuf};

use git_orchestra::agent::cli::{Format, parse::parse};

use crate::support::{TestRepo, git, orchestra_with_env, status_json, text};

/// Returns the recorded output of `name` kept under `fixtures/agent-cli/`.
pub fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/agent-cli")
        .join(format!("{name}.jsonl"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The output format of the built-in adapter `name`.
pub fn format_of(name: &str) -> Format {
    Format::from_name(name).unwrap()
}

const STAND_IN: &str = r#"#!/bin/sh
# Stand-in for an agent CLI: records how it was called, changes files, replays a recording.
here=$(cd "$(dirname "$0")" && pwd)
name=$(basename "$0")
stdin=$(cat)
resumed=""
case " $* " in *" --resume "*|*" resume "*|*" --session "*) resumed=yes;; esac
out=src/agent-cli.txt
[ -n "$resumed" ] && out=src/agent-cli-resumed.txt
{
  echo "cwd=$(pwd)"
  echo "argv:"
  for a in "$@"; do echo "  [$a]"; done
  echo "stdin:"
  echo "$stdin"
  for f in "${GEMINI_CLI_SYSTEM_SETTINGS_PATH:-}" "${QWEN_CODE_SYSTEM_SETTINGS_PATH:-}" "${OPENCODE_CONFIG:-}"; do
    [ -n "$f" ] && { echo "settings $f:"; cat "$f"; echo; }
  done
  prev=""
  for a in "$@"; do
    [ "$prev" = "--mcp-config" ] && { echo "mcp-config $a:"; cat "$a"; echo; }
    prev="$a"
  done
  echo "home=$HOME"
  echo "key=${ANTHROPIC_API_KEY:+given}"
} > "$out"
if [ -n "$resumed" ]; then
  rm -f outside.txt
elif [ ! -f "$here/$name.inscope" ]; then
  echo "not in the packet's scope" > outside.txt
fi
if [ -f "$here/$name.exit" ]; then
  cat "$here/$name.jsonl"
  exit "$(cat "$here/$name.exit")"
fi
cat "$here/$name.jsonl"
"#;

/// Writes the stand-in for `name` replaying `recording` into a new directory of `repo`'s
/// scratch space, and returns that directory (to put first on PATH).
pub fn stand_in(repo: &TestRepo, name: &str, recording: &str, exit: Option<i32>) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = repo.scratch().join(format!("bin-{name}"));
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join(name);
    std::fs::write(&script, STAND_IN).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(bin.join(format!("{name}.jsonl")), recording).unwrap();
    if let Some(code) = exit {
        std::fs::write(bin.join(format!("{name}.exit")), code.to_string()).unwrap();
    }
    bin
}

/// Runs `run plan.toml --agent <name>` with `bin` first on PATH; the sandbox may read it.
pub fn run_with(
    repo: &TestRepo,
    name: &str,
    bin: &Path,
    env: &[(&str, &str)],
) -> std::process::Output {
    let config = format!(
        "[sandbox]\nif_unavailable = \"warn\"\nread = [\"{}\"]\n",
        bin.display()
    );
    std::fs::create_dir_all(repo.path.join(".orchestra")).unwrap();
    std::fs::write(repo.path.join(".orchestra/config.toml"), config).unwrap();
    repo.git(&["add", ".orchestra/config.toml"]);
    repo.git(&["commit", "-qm", "configuration"]);
    let plan = repo.write_plan(
        "plan.toml",
        "objective = \"Add a note\"\n\n[[packet]]\nid = \"p1\"\ntitle = \"Note what ran\"\ndescription = \"Write src/agent-cli.txt\"\nfiles = [\"src/**\"]\nacceptance = [\"the note exists\"]\n",
    );
    let root = repo.scratch().join("wt");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut all = vec![("PATH", path.as_str())];
    all.extend_from_slice(env);
    orchestra_with_env(
        &repo.path,
        &[
            "run",
            plan.to_str().unwrap(),
            "--agent",
            name,
            "--worktree-root",
            root.to_str().unwrap(),
        ],
        &all,
    )
}

/// The argv lines the stand-in recorded in `note`.
fn argv(note: &str) -> Vec<&str> {
    note.lines()
        .skip_while(|l| *l != "argv:")
        .skip(1)
        .take_while(|l| l.starts_with("  ["))
        .map(|l| l.trim().trim_start_matches('[').trim_end_matches(']'))
        .collect()
}

/// Runs the whole scenario for CLI `name`: first call, a scope violation sent back as a fix
/// round that resumes the CLI's session, commits, journal and status.
fn scenario(name: &str, flags: &[&str]) {
    let repo = TestRepo::new();
    let recording = fixture(name);
    let expected = parse(format_of(name), &recording);
    let session = expected
        .session
        .clone()
        .expect("the recording has a session id");
    let bin = stand_in(&repo, name, &recording, None);
    let out = run_with(&repo, name, &bin, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let status = status_json(&repo.path);
    let packet = &status["packets"][0];
    let branch = packet["branch"].as_str().unwrap();
    let worktree = packet["worktree"].as_str().unwrap();
    // The first call: in the worktree, with the adapter's flags and our prompt.
    let note = git(
        &repo.path,
        &["show", &format!("{branch}:src/agent-cli.txt")],
    );
    assert!(note.contains(&format!("cwd={worktree}")), "{note}");
    let args = argv(&note);
    for flag in flags {
        assert!(args.contains(flag), "{name} misses {flag}: {args:?}");
    }
    assert!(
        note.contains("# Note what ran") && note.contains("nav_outline"),
        "the prompt (packet and navigation hint) reaches {name}: {note}"
    );
    assert!(
        !args.iter().any(|a| a.contains(&session)),
        "a first call resumes nothing: {args:?}"
    );
    // Our MCP server, as the CLI reads it: this binary, in the packet's worktree.
    let exe = env!("CARGO_BIN_EXE_git-orchestra");
    assert!(
        note.contains(exe) && note.contains(worktree) && note.contains("mcp"),
        "{name} gets our MCP server: {note}"
    );
    // Its home is its own, beside the worktree, never the user's.
    assert!(
        !note.contains(&format!("home={}", std::env::var("HOME").unwrap())),
        "{note}"
    );
    // The scope violation went back as a fix round that continued the CLI's session.
    let resumed = git(
        &repo.path,
        &["show", &format!("{branch}:src/agent-cli-resumed.txt")],
    );
    assert!(
        argv(&resumed).iter().any(|a| *a == session),
        "the fix round resumes session {session}: {resumed}"
    );
    assert!(
        resumed.contains("outside.txt") || resumed.contains("fixes"),
        "{resumed}"
    );
    let files = git(&repo.path, &["show", "--name-only", "--format=", branch]);
    assert!(!files.contains("outside.txt"), "{files}");
    let author = git(&repo.path, &["log", "-1", "--format=%an", branch]);
    assert_eq!(author, "git-orchestra");
    // What the output said is journaled and shown: tokens, tool calls, session.
    let agent = status["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["role"] == format!("coder/{name}"))
        .unwrap_or_else(|| panic!("no coder/{name} in {}", status["agents"]));
    assert_eq!(agent["input_tokens"], 2 * expected.input_tokens, "{agent}");
    assert_eq!(
        agent["output_tokens"],
        2 * expected.output_tokens,
        "{agent}"
    );
    assert_eq!(
        agent["tool_calls"],
        2 * expected.tools.len() as u64,
        "{agent}"
    );
    assert!(
        agent["reason"].as_str().unwrap().contains(&session),
        "{agent}"
    );
}

#[test]
fn claude_runs_in_the_worktree_and_resumes_its_session_in_a_fix_round() {
    scenario(
        "claude",
        &[
            "-p",
            "stream-json",
            "--verbose",
            "--mcp-config",
            "--strict-mcp-config",
        ],
    );
}

#[test]
fn codex_runs_in_the_worktree_and_resumes_its_session_in_a_fix_round() {
    scenario("codex", &["exec", "--json", "--skip-git-repo-check", "-"]);
}

#[test]
fn gemini_runs_in_the_worktree_and_resumes_its_session_in_a_fix_round() {
    scenario("gemini", &["--output-format", "stream-json", "yolo", "-p"]);
}

#[test]
fn qwen_runs_in_the_worktree_and_resumes_its_session_in_a_fix_round() {
    scenario("qwen", &["--output-format", "stream-json", "yolo", "-p"]);
}

#[test]
fn opencode_runs_in_the_worktree_and_resumes_its_session_in_a_fix_round() {
    scenario("opencode", &["run", "--format", "json"]);
}

#[test]
fn an_auth_failure_names_the_fix_and_never_shows_the_key() {
    let repo = TestRepo::new();
    let bin = stand_in(&repo, "claude", &fixture("claude-auth"), Some(1));
    let key = "sk-ant-test-0123456789abcdef";
    let out = run_with(&repo, "claude", &bin, &[("ANTHROPIC_API_KEY", key)]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let status = status_json(&repo.path);
    let reason = status["packets"][0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("ANTHROPIC_API_KEY") && reason.contains("claude setup-token"),
        "{reason}"
    );
    let all = format!("{}{}", text(&out), status);
    assert!(!all.contains(key), "the key leaked: {all}");
    // Nothing was committed for it.
    let branch = status["packets"][0]["branch"].as_str().unwrap();
    let tip = git(&repo.path, &["rev-parse", branch]);
    assert_eq!(tip, git(&repo.path, &["rev-parse", "HEAD"]));
}

#[test]
fn an_unknown_agent_is_refused_before_anything_starts() {
    let repo = TestRepo::new();
    let before = crate::support::refs(&repo.path);
    let plan = repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"o\"\n\n{}",
            crate::support::packet("p1", "\"src/**\"", "", "")
        ),
    );
    let out = orchestra_with_env(
        &repo.path,
        &["run", plan.to_str().unwrap(), "--agent", "nosuchcli"],
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("nosuchcli") && err.contains("[agents.cli.nosuchcli]"),
        "{err}"
    );
    assert_eq!(before, crate::support::refs(&repo.path));
}

#[test]
fn a_role_configured_with_an_unknown_cli_of_its_own_runs_it_as_configured() {
    // `[agents.cli.mine]` describes a CLI we do not know: text output, prompt as an argument.
    let repo = TestRepo::new();
    let bin = stand_in(&repo, "mine", "all done, nothing to report\n", None);
    std::fs::write(bin.join("mine.inscope"), "").unwrap();
    std::fs::create_dir_all(repo.path.join(".orchestra")).unwrap();
    std::fs::write(
        repo.path.join(".orchestra/config.toml"),
        format!(
            "[sandbox]\nif_unavailable = \"warn\"\nread = [\"{}\"]\n\n[roles.coder]\nagent = \"mine\"\n\n[agents.cli.mine]\ncommand = \"{}\"\nargs = [\"--headless\"]\noutput = \"text\"\n",
            bin.display(),
            bin.join("mine").display()
        ),
    )
    .unwrap();
    repo.git(&["add", ".orchestra/config.toml"]);
    repo.git(&["commit", "-qm", "configuration"]);
    repo.trust();
    let plan = repo.write_plan(
        "plan.toml",
        "objective = \"o\"\n\n[[packet]]\nid = \"p1\"\ntitle = \"Mine\"\ndescription = \"d\"\nfiles = [\"src/**\"]\n",
    );
    let root = repo.scratch().join("wt");
    let out = orchestra_with_env(
        &repo.path,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worktree-root",
            root.to_str().unwrap(),
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out));
    let status = status_json(&repo.path);
    let branch = status["packets"][0]["branch"].as_str().unwrap();
    let note = git(
        &repo.path,
        &["show", &format!("{branch}:src/agent-cli.txt")],
    );
    let args = argv(&note);
    assert_eq!(args.first(), Some(&"--headless"), "{note}");
    assert!(
        args.last().unwrap().contains("# Mine"),
        "the prompt is its last argument: {note}"
    );
    let agent = &status["agents"][0];
    assert_eq!(agent["role"], "coder/mine", "{status}");
    assert!(
        status["packets"][0]["state"] == "succeeded",
        "{}",
        status["packets"][0]
    );
}

#[test]
fn claude_stream_json_recordings_parse_into_session_usage_and_tool_calls() {
    let done = parse(Format::Claude, &fixture("claude"));
    assert_eq!(
        done.session.as_deref(),
        Some("ea73cd6e-f4f7-4405-9f08-181b19a511aa"),
        "{done:?}"
    );
    assert_eq!((done.input_tokens, done.output_tokens), (2752, 2));
    assert_eq!(done.cost_usd, Some(0.011048));
    assert_eq!(done.last_message(), Some("done"));
    assert_eq!(done.error, None);
    let looped = parse(Format::Claude, &fixture("claude-max-turns"));
    assert_eq!(
        looped.session.as_deref(),
        Some("5341ae61-8d43-4457-acfb-3f84504f935b")
    );
    assert_eq!((looped.input_tokens, looped.output_tokens), (95 + 5530, 76));
    assert_eq!(looped.cost_usd, Some(0.003006));
    assert_eq!(looped.turns, 3);
    let tools: Vec<(&str, bool)> = looped
        .tools
        .iter()
        .map(|t| (t.name.as_str(), t.ok))
        .collect();
    assert_eq!(tools, vec![("mcp__orchestra__nav_outline", false); 2]);
    assert!(
        looped
            .mcp_tools
            .iter()
            .any(|t| t == "mcp__orchestra__nav_def")
    );
    assert_eq!(
        looped.error.as_deref(),
        Some("Reached maximum number of turns (2)")
    );
    let refused = parse(Format::Claude, &fixture("claude-auth"));
    assert_eq!(
        refused.error.as_deref(),
        Some("authentication_failed (HTTP 401)")
    );
}

#[test]
fn gemini_and_qwen_recordings_parse() {
    let refused = parse(Format::Gemini, &fixture("gemini-auth"));
    assert_eq!(
        refused.session.as_deref(),
        Some("29d9db46-b56f-49f9-978f-e5b912a38299")
    );
    assert!(
        refused
            .error
            .as_deref()
            .is_some_and(|e| e.contains("authentication_error")),
        "{refused:?}"
    );
    let gemini = git_orchestra::agent::cli::adapter::adapter("gemini", None).unwrap();
    assert!(
        gemini
            .auth_hint(refused.error.as_deref().unwrap())
            .is_some_and(|h| h.contains("GEMINI_API_KEY"))
    );
    // Qwen Code streams Claude Code's line types; its recording ended without a result line.
    let qwen = parse(Format::Claude, &fixture("qwen"));
    assert_eq!(
        qwen.session.as_deref(),
        Some("a823f933-4729-459f-a602-2017f7084de3")
    );
    assert_eq!((qwen.input_tokens, qwen.output_tokens), (9199, 2));
    assert_eq!(qwen.last_message(), Some("done"));
    assert!(
        qwen.mcp_tools
            .iter()
            .any(|t| t == "mcp__orchestra__nav_outline")
    );
}

#[test]
fn an_opencode_recording_parses() {
    let done = parse(Format::Opencode, &fixture("opencode-done"));
    assert_eq!(
        done.session.as_deref(),
        Some("ses_defbbd33cffe3Dmmd3ztU70a0V")
    );
    assert_eq!((done.input_tokens, done.output_tokens), (9062, 2));
    assert_eq!((done.turns, done.cost_usd), (1, Some(0.0)));
    assert_eq!(done.last_message(), Some("done"));
    assert_eq!(done.error, None);
}

/// Writes `script` (a shell script's body) as the agent CLI `name` of our own and configures it
/// in `repo` as the agent of `role` (`[agents.cli.<name>]`, text output, readable in the
/// sandbox); commits the configuration.
fn own_cli(repo: &TestRepo, name: &str, role: &str, script: &str) {
    use std::os::unix::fs::PermissionsExt;
    let bin = repo.scratch().join(format!("bin-{name}"));
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join(name), format!("#!/bin/sh\n{script}")).unwrap();
    std::fs::set_permissions(bin.join(name), std::fs::Permissions::from_mode(0o755)).unwrap();
    repo.write(
        ".orchestra/config.toml",
        &format!(
            "[sandbox]\nif_unavailable = \"warn\"\nread = [\"{}\"]\n\n[roles.{role}]\nagent = \"{name}\"\n\n[agents.cli.{name}]\ncommand = \"{}\"\noutput = \"text\"\n",
            bin.display(),
            bin.join(name).display()
        ),
    );
    repo.git(&["add", ".orchestra/config.toml"]);
    repo.git(&["commit", "-qm", "configuration"]);
    repo.trust();
}

/// Runs a plan of one packet `p1` writing `files` (TOML array contents), with `extra`
/// arguments to `run`.
fn run_p1(repo: &TestRepo, files: &str, extra: &[&str]) -> std::process::Output {
    let plan = repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"o\"\n\n[[packet]]\nid = \"p1\"\ntitle = \"Notes\"\ndescription = \"Write notes\"\nfiles = [{files}]\n"
        ),
    );
    let root = repo.scratch().join("wt");
    let mut args = vec![
        "run",
        plan.to_str().unwrap(),
        "--worktree-root",
        root.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    orchestra_with_env(&repo.path, &args, &[])
}

#[test]
fn sandbox_workers_off_runs_an_agent_cli_as_the_user_and_otherwise_it_is_confined() {
    for off in [false, true] {
        let repo = TestRepo::new();
        // A CLI that does its work, then writes beside the repository, outside its worktree.
        let mark = repo.scratch().join("outside-mark");
        own_cli(
            &repo,
            "mine",
            "coder",
            &format!(
                "echo noted > src/note.txt\necho x > '{}' 2>/dev/null\necho done\n",
                mark.display()
            ),
        );
        if off {
            // Only the user's own configuration may turn the workers' sandbox off.
            repo.user_config("[sandbox]\nworkers = \"off\"\n");
        }
        let out = run_p1(&repo, "\"src/**\"", &[]);
        assert!(out.status.success(), "{}", text(&out));
        if off {
            assert!(mark.exists(), "workers = \"off\" runs the CLI as the user");
        } else if git_orchestra::agent::sandbox::landlock_abi().is_some() {
            assert!(!mark.exists(), "the CLI is confined to its worktree");
        }
    }
}

#[test]
fn an_agent_cli_configured_as_the_reviewer_reviews_packets_and_its_rejection_is_fixed() {
    let repo = TestRepo::new();
    // A reviewing CLI: rejects the first change it sees with an evidenced blocker, approves
    // the next; it notes the prompt it got in its own home.
    let reject = r#"{"verdict": "reject", "findings": [{"severity": "blocker", "category": "correctness", "file": "notes.txt", "line": 1, "evidence": "notes.txt holds a draft", "suggestion": "say draft-reviewed"}]}"#;
    let approve = r#"{"verdict": "approve", "findings": []}"#;
    own_cli(
        &repo,
        "rev",
        "reviewer",
        &format!(
            "for a in \"$@\"; do last=\"$a\"; done\nprintf '%s' \"$last\" > \"$HOME/prompt-$$.md\"\nif [ -e \"$HOME/reviewed-once\" ]; then echo 'Looks right.'; echo '{approve}'; else touch \"$HOME/reviewed-once\"; echo 'One problem.'; echo '{reject}'; fi\n"
        ),
    );
    let worker = "if [ -n \"$ORCHESTRA_FIXES_FILE\" ]; then echo draft-reviewed > notes.txt; else echo draft > notes.txt; fi";
    let out = run_p1(&repo, "\"notes.txt\"", &["--worker-cmd", worker]);
    assert!(out.status.success(), "{}", text(&out));
    let status = status_json(&repo.path);
    let branch = status["packets"][0]["branch"].as_str().unwrap();
    assert_eq!(
        git(&repo.path, &["show", &format!("{branch}:notes.txt")]),
        "draft-reviewed",
        "the rejection went back as a fix round and the fix landed"
    );
    let common = repo.path.join(repo.git(&["rev-parse", "--git-common-dir"]));
    let store = git_orchestra::store::Store::open(&common).unwrap();
    let id = status["run"]["id"].as_str().unwrap();
    let reviews: Vec<(String, bool)> = store
        .events_of_kind(id, git_orchestra::store::EventKind::PacketReviewed)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.event {
            git_orchestra::store::Event::PacketReviewed {
                reviewer, approved, ..
            } if reviewer.contains("cli") => Some((reviewer, approved)),
            _ => None,
        })
        .collect();
    assert_eq!(
        reviews,
        [
            ("reviewer:cli:rev".to_string(), false),
            ("reviewer:cli:rev".to_string(), true)
        ]
    );
    // It was asked to review the packet's change, with the diff.
    let home = common.join(format!("orchestra/runs/{id}/p1/review-rev-tmp/home"));
    let prompt = std::fs::read_dir(&home)
        .unwrap()
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().starts_with("prompt-"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .expect("the CLI got a prompt");
    assert!(
        prompt.contains("# Review this change") && prompt.contains("+draft"),
        "{prompt}"
    );
}

#[test]
fn files_touched_lists_only_paths_inside_the_worktree() {
    // A CLI that reports edits of system files, of /tmp and beside its worktree, and one of
    // the packet's file: only the last is a file the packet touched.
    let repo = TestRepo::new();
    let recording = [
        r#"{"type":"thread.started","thread_id":"t-files"}"#,
        r#"{"type":"item.completed","item":{"id":"i1","type":"file_change","changes":[{"path":"/etc/hosts","kind":"update"},{"path":"/tmp/orchestra-elsewhere.txt","kind":"add"},{"path":"../beside-the-worktree.txt","kind":"add"},{"path":"src/./agent-cli.txt","kind":"add"}],"status":"completed"}}"#,
        r#"{"type":"item.completed","item":{"id":"i2","type":"agent_message","text":"Wrote the note."}}"#,
        r#"{"type":"turn.completed","usage":{"input_tokens":10,"output_tokens":2}}"#,
    ]
    .join("\n");
    let bin = stand_in(&repo, "codex", &recording, None);
    std::fs::write(bin.join("codex.inscope"), "").unwrap();
    let out = run_with(&repo, "codex", &bin, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let status = status_json(&repo.path);
    let agent = status["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["role"] == "coder/codex")
        .unwrap_or_else(|| panic!("no coder/codex in {}", status["agents"]));
    let reason = agent["reason"].as_str().unwrap();
    assert!(
        reason.contains("files touched: src/agent-cli.txt"),
        "{reason}"
    );
    let all = status.to_string();
    for outside in ["/etc/hosts", "orchestra-elsewhere", "beside-the-worktree"] {
        assert!(
            !all.contains(outside),
            "{outside} is listed as touched: {all}"
        );
    }
}

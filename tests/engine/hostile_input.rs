//! Hostile files and text a cloned repository or an agent can leave behind, met by the plain
//! commands: escape sequences shown by `diff` and `memory`, a pipe or a symlink where a
//! configuration or context file belongs, and a CI workflow built to make detection slow.

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::*;

/// The bytes that retitle a terminal (OSC 0) and recolour it (SGR 31).
const ESCAPES: &str = "a\u{1b}]0;evil\u{7}b\u{1b}[31mred";

/// Runs the binary in `dir` with `args`, killing it when it has not exited within `limit`:
/// `None` then, so a command that blocks fails its test instead of hanging it.
fn orchestra_within(dir: &Path, args: &[&str], limit: Duration) -> Option<Output> {
    within(orchestra_command(dir, args), limit)
}

/// Runs `cmd` as [`orchestra_within`] does.
fn within(mut cmd: std::process::Command, limit: Duration) -> Option<Output> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(child.wait_with_output().unwrap())
}

fn mkfifo(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
}

#[test]
fn diff_writes_escape_sequences_from_a_packets_change_as_octal_escapes() {
    let repo = TestRepo::new();
    let plan = repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"Escapes\"\n\n{}",
            packet("p1", "\"evil.txt\"", "", "")
        ),
    );
    let worker = r"printf 'a\033]0;evil\007b\033[31mred\n' > evil.txt";
    let out = repo.run_plan(&plan, worker, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let out = orchestra(&repo.path, &["diff"]);
    assert!(out.status.success(), "{}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        !shown.contains('\u{1b}') && !shown.contains('\u{7}'),
        "{shown:?}"
    );
    assert!(
        shown.contains("+a\\033]0;evil\\007b\\033[31mred"),
        "{shown:?}"
    );
    assert!(shown.contains("+++ b/evil.txt"), "{shown}");
}

#[test]
fn memory_writes_escape_sequences_in_learnings_as_octal_escapes() {
    let repo = TestRepo::new();
    let common = repo.path.join(".git");
    let store = git_orchestra::store::Store::open(&common).unwrap();
    assert!(
        store
            .add_learning("r\u{1b}[2J", "p\u{9b}1", &format!("learned {ESCAPES}"))
            .unwrap()
    );
    drop(store);
    let out = orchestra(&repo.path, &["memory"]);
    assert!(out.status.success(), "{}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        !shown.contains('\u{1b}') && !shown.contains('\u{7}') && !shown.contains('\u{9b}'),
        "{shown:?}"
    );
    // The learning's text is shown through the secret scanner's safe form (control characters
    // as `?`); its run and packet names as octal escapes.
    assert!(shown.contains("learned a?]0;evil?b?[31mred"), "{shown:?}");
    assert!(shown.contains("r\\033[2J"), "{shown:?}");
    // JSON escapes control characters itself.
    let out = orchestra(&repo.path, &["memory", "--json"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains('\u{1b}'));
}

#[test]
fn a_pipe_as_the_repository_configuration_is_refused_at_once_naming_it() {
    let repo = TestRepo::new();
    mkfifo(&repo.path.join(".orchestra/config.toml"));
    let out = orchestra_within(&repo.path, &["status"], Duration::from_secs(20))
        .expect("`status` blocked on the pipe");
    assert!(!out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(".orchestra/config.toml") && err.contains("not a regular file"),
        "{err}"
    );
}

#[test]
fn a_pipe_as_the_user_configuration_or_a_role_file_is_refused_at_once_naming_it() {
    let repo = TestRepo::new();
    let xdg = repo.scratch().join("xdg");
    mkfifo(&xdg.join("git-orchestra/config.toml"));
    let mut cmd = orchestra_command(&repo.path, &["agents"]);
    cmd.env("XDG_CONFIG_HOME", &xdg);
    let out = within(cmd, Duration::from_secs(20)).expect("`agents` blocked on the user's file");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("git-orchestra/config.toml"),
        "{}",
        text(&out)
    );
    mkfifo(&repo.path.join(".orchestra/agents/coder.md"));
    let out = orchestra_within(&repo.path, &["agents"], Duration::from_secs(20))
        .expect("`agents` blocked on the role file");
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("agents/coder.md"), "{}", text(&out));
}

#[test]
fn a_pipe_as_the_project_context_or_the_mcp_servers_file_does_not_block_detection() {
    let repo = TestRepo::new();
    mkfifo(&repo.path.join("ORCHESTRA.md"));
    mkfifo(&repo.path.join("Makefile"));
    mkfifo(&repo.path.join(".github/workflows/ci.yml"));
    let out = orchestra_within(
        &repo.path,
        &["init", "--dry-run", "--no-model"],
        Duration::from_secs(30),
    )
    .expect("`init` blocked on a pipe");
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("ORCHESTRA.md"), "{}", text(&out));
    // Detection alone (the context a run builds without ORCHESTRA.md) and the MCP servers
    // file pass pipes by.
    mkfifo(&repo.path.join(".mcp.json"));
    let root = repo.path.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let facts = git_orchestra::project::detect::detect(&root, &[]);
        let (servers, notes) =
            git_orchestra::agent::mcp::servers(&root, &std::collections::BTreeMap::new());
        let _ = tx.send((facts, servers.len(), notes));
    });
    let (facts, servers, notes) = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("detection or .mcp.json blocked on a pipe");
    assert!(facts.ci.is_empty() && facts.commands.is_empty());
    assert_eq!(servers, 0);
    assert!(notes.iter().any(|n| n.contains(".mcp.json")), "{notes:?}");
}

#[test]
fn init_refuses_to_read_or_write_a_context_file_that_is_a_symlink_out_of_the_repository() {
    let repo = TestRepo::new();
    let outside = repo.scratch().join("bashrc");
    std::fs::write(&outside, "export SECRET=outside-the-repo\n").unwrap();
    std::os::unix::fs::symlink(&outside, repo.path.join("ORCHESTRA.md")).unwrap();
    let out = orchestra(&repo.path, &["init", "--no-model"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("ORCHESTRA.md"), "{}", text(&out));
    assert!(!text(&out).contains("outside-the-repo"), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "export SECRET=outside-the-repo\n"
    );
    // A symlink that stays inside is not written through either: the file is named instead.
    std::fs::remove_file(repo.path.join("ORCHESTRA.md")).unwrap();
    repo.write("docs/context.md", "# mine\n");
    std::os::unix::fs::symlink("docs/context.md", repo.path.join("ORCHESTRA.md")).unwrap();
    let out = orchestra(&repo.path, &["init", "--no-model"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("docs/context.md"), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(repo.path.join("docs/context.md")).unwrap(),
        "# mine\n"
    );
}

#[test]
fn a_repository_configuration_that_is_a_symlink_out_of_the_repository_is_not_read() {
    let repo = TestRepo::new();
    let outside = repo.scratch().join("elsewhere.toml");
    std::fs::write(&outside, "[run]\nmax_parallel = 3\n").unwrap();
    std::fs::create_dir_all(repo.path.join(".orchestra")).unwrap();
    std::os::unix::fs::symlink(&outside, repo.path.join(".orchestra/config.toml")).unwrap();
    let out = orchestra(&repo.path, &["init", "--no-model", "--dry-run"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(".orchestra/config.toml") && err.contains("outside"),
        "{err}"
    );
}

/// Returns a workflow of `lines` distinct `run:` lines.
fn big_workflow(lines: usize) -> String {
    let mut text = String::from("name: ci\non: push\njobs:\n  all:\n    steps:\n");
    for i in 0..lines {
        text.push_str(&format!("- run: c{i}\n"));
    }
    text
}

#[test]
fn a_multi_megabyte_ci_workflow_is_skipped_quickly_with_a_note() {
    let repo = TestRepo::new();
    let huge = big_workflow(220_000);
    assert!(huge.len() > 2_800_000, "{}", huge.len());
    repo.write(".github/workflows/huge.yml", &huge);
    repo.write(
        ".github/workflows/ci.yml",
        "jobs:\n  t:\n    steps:\n      - run: cargo test\n",
    );
    let started = Instant::now();
    let facts = git_orchestra::project::detect::detect(&repo.path, &[]);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(facts.ci, ["cargo test"]);
    assert!(
        facts.skipped.iter().any(|n| n.contains("huge.yml")),
        "{:?}",
        facts.skipped
    );
}

#[test]
fn a_ci_workflow_of_many_distinct_commands_below_the_cap_is_read_in_linear_time() {
    let repo = TestRepo::new();
    let big = big_workflow(70_000);
    assert!(big.len() < 1 << 20, "{}", big.len());
    repo.write(".github/workflows/big.yml", &big);
    let started = Instant::now();
    let facts = git_orchestra::project::detect::detect(&repo.path, &[]);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(facts.ci.len(), 70_000);
    assert_eq!(facts.ci[69_999], "c69999");
}

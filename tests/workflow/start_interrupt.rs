//! Interrupts during a `start` run's integration: Ctrl-C while a packet's worker fixes what
//! the merge broke, or while the merged tree is validated, pauses the run in its integrating
//! phase at once, and `resume` lands the packet.

use std::time::{Duration, Instant};

use git_orchestra::demo;

use crate::support::{git, hermetic, orchestra, orchestra_command, text};

/// Returns the demo's sample repository in a temporary directory (kept while the first value
/// lives) and a `marks` directory beside it that the user's configuration lets sandboxed
/// commands write.
fn sample_with_marks() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    hermetic();
    let tmp = tempfile::tempdir().unwrap();
    let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
    let marks = tmp.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let config = tmp.path().join("user-config/git-orchestra");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!("[sandbox]\nwritable = [\"{}\"]\n", marks.display()),
    )
    .unwrap();
    (tmp, repo, marks)
}

#[test]
fn ctrl_c_while_a_worker_fixes_a_merge_pauses_the_start_run_and_resume_lands_the_packet() {
    let (_tmp, repo, marks) = sample_with_marks();
    // Each packet passes alone; p2's check fails once p1's file is there, until p2 says so.
    let plan = "```toml\n[[packet]]\nid = \"p1\"\ntitle = \"One\"\ndescription = \"d\"\nfiles = [\"p1.txt\"]\nvalidation = [\"test -f p1.txt\"]\n\n[[packet]]\nid = \"p2\"\ntitle = \"Two\"\ndescription = \"d\"\nfiles = [\"p2.txt\"]\nvalidation = [\"test ! -e p1.txt || grep -q 'knows p1' p2.txt\"]\n```";
    let scripts = serde_json::json!([
        {"name": "planner", "match": ["# Planner"], "replies": [{"text": plan}]},
        {"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]},
        {"name": "orchestrator", "match": ["# Orchestrator"], "replies": [{"text": "{}"}]}
    ]);
    let model = demo::MockModel::start(demo::parse_scripts(&scripts.to_string()).unwrap()).unwrap();
    // The first fix round hangs until it is stopped; the next one fixes p2.
    let marker = marks.join("fixing");
    let worker = format!(
        r#"if [ -n "$ORCHESTRA_FIXES_FILE" ]; then if [ ! -f {m} ]; then touch {m}; sleep 60; fi; echo "p2 knows p1" > "$ORCHESTRA_PACKET.txt"; else echo done > "$ORCHESTRA_PACKET.txt"; fi"#,
        m = marker.display()
    );
    let mut child = orchestra_command(
        &repo,
        &[
            "start",
            "--yes",
            "--no-clarify",
            "--merge",
            "--worker-cmd",
            &worker,
            "Two files",
        ],
    )
    .env("ORCHESTRA_PROVIDER", "openai-compatible")
    .env("ORCHESTRA_BASE_URL", &model.url)
    .env("ORCHESTRA_MODEL", "scripted")
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    while !marker.exists() {
        assert!(Instant::now() < deadline, "the fix round never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signals our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
    let shown = orchestra(&repo, &["status"]);
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("phase     paused"),
        "{}",
        text(&shown)
    );
    assert!(
        !git(&repo, &["ls-tree", "--name-only", "main"]).contains("p2.txt"),
        "p2 landed before its fix"
    );

    let out = orchestra(&repo, &["resume"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(git(&repo, &["show", "main:p1.txt"]), "done");
    assert_eq!(git(&repo, &["show", "main:p2.txt"]), "p2 knows p1");
}

#[test]
fn ctrl_c_while_a_start_run_validates_the_merged_tree_stops_at_once_and_resume_lands_it() {
    let (_tmp, repo, marks) = sample_with_marks();
    let marker = marks.join("validating");
    // The validation passes at once in the packet's worktree (its path names the run's
    // worktree root); on the merged tree, in a scratch checkout, the first run hangs.
    let validation = format!(
        "test -f p1.txt && if git rev-parse --abbrev-ref HEAD | grep -q orchestra/; then true; else [ -f {m} ] || {{ touch {m}; sleep 60; }}; fi",
        m = marker.display()
    );
    let plan = format!(
        "```toml\n[[packet]]\nid = \"p1\"\ntitle = \"One\"\ndescription = \"d\"\nfiles = [\"p1.txt\"]\nvalidation = [{}]\n```",
        serde_json::to_string(&validation).unwrap()
    );
    let scripts = serde_json::json!([
        {"name": "planner", "match": ["# Planner"], "replies": [{"text": plan}]},
        {"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]},
        {"name": "orchestrator", "match": ["# Orchestrator"], "replies": [{"text": "{}"}]}
    ]);
    let model = demo::MockModel::start(demo::parse_scripts(&scripts.to_string()).unwrap()).unwrap();
    let mut child = orchestra_command(
        &repo,
        &[
            "start",
            "--yes",
            "--no-clarify",
            "--merge",
            "--worker-cmd",
            "echo done > \"$ORCHESTRA_PACKET.txt\"",
            "One file",
        ],
    )
    .env("ORCHESTRA_PROVIDER", "openai-compatible")
    .env("ORCHESTRA_BASE_URL", &model.url)
    .env("ORCHESTRA_MODEL", "scripted")
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    while !marker.exists() {
        assert!(
            Instant::now() < deadline,
            "the merged tree's validation never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let stopped = Instant::now();
    // SAFETY: signals our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert!(
        stopped.elapsed() < Duration::from_secs(20),
        "took {:?}",
        stopped.elapsed()
    );
    assert_eq!(status.code(), Some(130), "{status:?}");
    let shown = orchestra(&repo, &["status"]);
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("phase     paused"),
        "{}",
        text(&shown)
    );
    let out = orchestra(&repo, &["resume"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(git(&repo, &["show", "main:p1.txt"]), "done");
}

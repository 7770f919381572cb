//! The pre-push gate's in-process fast path: verdict notes read with gix (flat and fanned-out
//! notes trees), anything doubtful left to the full check, and no `git` spawned for a
//! reviewed push.

use std::path::{Path, PathBuf};
use std::process::Command;

use git_orchestra::gate::{
    self, ApprovalPolicy, Decision, Verdict, all_approved, hook::PushUpdate,
};
use git_orchestra::git::Git;

use crate::support::*;

fn verdict(commit: &str, tree: &str, decision: Decision) -> Verdict {
    Verdict {
        version: 1,
        commit: commit.into(),
        tree: tree.into(),
        base: commit.into(),
        reviewer: "deterministic".into(),
        verdict: decision,
        checks: vec![],
        findings: vec![],
        packet: None,
        timestamp: "2026-01-01T00:00:00Z".into(),
        notes: Vec::new(),
    }
}

fn update(local: &str, remote: &str) -> PushUpdate {
    PushUpdate {
        local_ref: "refs/heads/feature".into(),
        local_oid: local.into(),
        remote_ref: "refs/heads/feature".into(),
        remote_oid: remote.into(),
    }
}

fn feature_commit(repo: &TestRepo, file: &str) -> (String, String) {
    repo.write(file, "new\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", file]);
    (
        repo.git(&["rev-parse", "HEAD"]),
        repo.git(&["rev-parse", "HEAD^{tree}"]),
    )
}

const ZERO: &str = "0000000000000000000000000000000000000000";

#[test]
fn approved_trees_pass_and_anything_else_goes_to_the_full_check() {
    let repo = TestRepo::new();
    let (c1, t1) = feature_commit(&repo, "a.txt");
    // No notes ref at all: look closer.
    assert!(!all_approved(
        &repo.path,
        &[update(&c1, ZERO)],
        ApprovalPolicy::default()
    ));
    gate::write_verdict(&Git::new(&repo.path), &verdict(&c1, &t1, Decision::Approve)).unwrap();
    assert!(all_approved(
        &repo.path,
        &[update(&c1, ZERO)],
        ApprovalPolicy::default()
    ));
    // Once a model reviewer is configured, the deterministic checks' approval alone is not
    // enough; a verdict a model reviewer took part in is.
    let model = ApprovalPolicy {
        model_required: true,
    };
    assert!(!all_approved(&repo.path, &[update(&c1, ZERO)], model));
    let mut by_model = verdict(&c1, &t1, Decision::Approve);
    by_model.reviewer = "deterministic+reviewer:openai-compatible:m".into();
    gate::write_verdict(&Git::new(&repo.path), &by_model).unwrap();
    assert!(all_approved(&repo.path, &[update(&c1, ZERO)], model));
    // A deletion and an unchanged ref pass; an unreviewed tip does not.
    let (c2, t2) = feature_commit(&repo, "b.txt");
    assert!(all_approved(
        &repo.path,
        &[update(ZERO, &c1), update(&c2, &c2)],
        ApprovalPolicy::default()
    ));
    assert!(!all_approved(
        &repo.path,
        &[update(&c1, ZERO), update(&c2, &c1)],
        ApprovalPolicy::default()
    ));
    // A rejecting verdict is not an approval.
    gate::write_verdict(&Git::new(&repo.path), &verdict(&c2, &t2, Decision::Reject)).unwrap();
    assert!(!all_approved(
        &repo.path,
        &[update(&c2, &c1)],
        ApprovalPolicy::default()
    ));
    // Garbage input is doubt, not approval.
    assert!(!all_approved(
        &repo.path,
        &[update("not-an-id", ZERO)],
        ApprovalPolicy::default()
    ));
}

#[test]
fn notes_in_fanned_out_trees_are_found() {
    let repo = TestRepo::new();
    let (c1, t1) = feature_commit(&repo, "a.txt");
    let json = serde_json::to_string(&verdict(&c1, &t1, Decision::Approve)).unwrap();
    let g = Git::new(&repo.path);
    let blob = git_stdin(&repo.path, &["hash-object", "-w", "--stdin"], &json);
    // `ab/cd/<36 more>`: two levels of fan-out, as git writes for very many notes.
    let inner = git_stdin(
        &repo.path,
        &["mktree"],
        &format!("100644 blob {blob}\t{}\n", &t1[4..]),
    );
    let middle = git_stdin(
        &repo.path,
        &["mktree"],
        &format!("040000 tree {inner}\t{}\n", &t1[2..4]),
    );
    let root = git_stdin(
        &repo.path,
        &["mktree"],
        &format!("040000 tree {middle}\t{}\n", &t1[..2]),
    );
    let notes = repo.git(&["commit-tree", &root, "-m", "notes"]);
    repo.git(&["update-ref", gate::NOTES_REF, &notes]);
    // git itself reads it the same way.
    assert_eq!(gate::approved_for_tree(&g, &t1).unwrap().unwrap().tree, t1);
    assert!(all_approved(
        &repo.path,
        &[update(&c1, ZERO)],
        ApprovalPolicy::default()
    ));
}

/// Runs git in `dir` with `input` on stdin and returns trimmed stdout.
fn git_stdin(dir: &Path, args: &[&str], input: &str) -> String {
    use std::io::Write;
    let mut child = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .trim_end()
        .to_string()
}

fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_git-orchestra"))
        .parent()
        .unwrap()
        .to_path_buf()
}

#[test]
fn a_reviewed_push_spawns_no_git_from_the_gate() {
    let repo = TestRepo::new();
    let remote = repo.tmp.path().join("remote.git");
    git(
        repo.tmp.path(),
        &["init", "-q", "--bare", remote.to_str().unwrap()],
    );
    repo.git(&["remote", "add", "origin", remote.to_str().unwrap()]);
    repo.git(&["push", "-q", "origin", "main"]);
    let out = orchestra(&repo.path, &["hook", "install"]);
    assert!(out.status.success(), "{}", text(&out));
    repo.git(&["checkout", "-qb", "feature"]);
    let (c1, t1) = feature_commit(&repo, "a.txt");
    gate::write_verdict(&Git::new(&repo.path), &verdict(&c1, &t1, Decision::Approve)).unwrap();
    let trace = repo.scratch().join("trace.log");
    let path = format!("{}:{}", bin_dir().display(), std::env::var("PATH").unwrap());
    let out = Command::new("git")
        .current_dir(&repo.path)
        .args(["push", "-q", "origin", "feature"])
        .env("PATH", path)
        .env("GIT_TRACE", &trace)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let log = std::fs::read_to_string(&trace).unwrap();
    // Between the hook's start and git's packing, nothing ran git.
    let during: Vec<&str> = log
        .lines()
        .skip_while(|l| !l.contains("run_command: .git/hooks/pre-push"))
        .take_while(|l| !l.contains("pack-objects"))
        .collect();
    assert!(!during.is_empty(), "the hook ran:\n{log}");
    assert!(
        during.iter().all(|l| !l.contains("built-in:")),
        "git ran during the hook:\n{}",
        during.join("\n")
    );
    assert_eq!(git(&remote, &["rev-parse", "feature"]), c1);
}

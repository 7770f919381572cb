//! Attacks by a hostile external worker (`--worker-cmd`) on what the engine then does with its
//! work: the engine's own git, the scope check, the history that reaches the branch. Each test
//! runs a real plan with a worker script and asserts the attack is held.

use crate::support::*;

#[test]
fn the_worker_command_gets_the_api_keys_the_engine_keeps_from_validation_commands() {
    let repo = TestRepo::new();
    let marks = repo.scratch().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let worker = format!(
        "printf '%s' \"$SOME_TOOL_API_KEY\" > {m}/worker; echo x > out.txt",
        m = marks.display()
    );
    let plan = repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"Keys\"\n\n{}",
            packet(
                "p1",
                "\"out.txt\"",
                "",
                &format!(
                    "\"printf '%s' \\\"$SOME_TOOL_API_KEY\\\" > {}/validation\"",
                    marks.display()
                )
            )
        ),
    );
    let root = repo.scratch().join("wt");
    let out = orchestra_with_env(
        &repo.path,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            &worker,
            "--worktree-root",
            root.to_str().unwrap(),
        ],
        &[("SOME_TOOL_API_KEY", "k-123")],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(marks.join("worker")).unwrap(),
        "k-123"
    );
    assert_eq!(
        std::fs::read_to_string(marks.join("validation")).unwrap(),
        ""
    );
}

/// Runs a one-packet plan whose packet may change only `out.txt`, with `worker`; returns the
/// command's output, the status JSON and the packet's branch.
fn run_scoped(repo: &TestRepo, worker: &str) -> (std::process::Output, serde_json::Value, String) {
    let plan = repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"Attack\"\n\n{}",
            packet("p1", "\"out.txt\"", "", "\"true\"")
        ),
    );
    let out = repo.run_plan(&plan, worker, &["--json"]);
    let v = status_json(&repo.path);
    let branch = v["packets"][0]["branch"].as_str().unwrap().to_string();
    (out, v, branch)
}

#[test]
fn repository_config_cannot_hide_an_out_of_scope_gitlink_from_the_scope_check() {
    let repo = TestRepo::new();
    let worker = "set -e
git init -q vendor/evil
git -C vendor/evil -c user.name=w -c user.email=w@x commit -q --allow-empty -m inside
git config diff.ignoreSubmodules all
echo ok > out.txt";
    let (out, v, _) = run_scoped(&repo, worker);
    assert!(!out.status.success(), "{}", text(&out));
    let reason = v["packets"][0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("outside the packet's declared scope") && reason.contains("vendor/evil"),
        "{reason}"
    );
}

#[test]
fn replace_refs_cannot_make_the_scope_check_diff_a_fake_tree() {
    let repo = TestRepo::new();
    // The worker replaces the packet's start commit with one whose tree already holds its
    // out-of-scope file, so a diff that honours replace refs sees only out.txt change.
    let worker = r#"set -e
echo evil > evil.txt
echo ok > out.txt
idx=$(mktemp)
GIT_INDEX_FILE=$idx git read-tree "$ORCHESTRA_BASE"
GIT_INDEX_FILE=$idx git update-index --add evil.txt
tree=$(GIT_INDEX_FILE=$idx git write-tree)
fake=$(git commit-tree "$tree" -m fake)
git replace -f "$ORCHESTRA_BASE" "$fake""#;
    let (out, v, _) = run_scoped(&repo, worker);
    assert!(!out.status.success(), "{}", text(&out));
    let reason = v["packets"][0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("outside the packet's declared scope") && reason.contains("evil.txt"),
        "{reason}"
    );
}

#[test]
fn a_workers_own_commits_never_enter_the_branch_history() {
    let repo = TestRepo::new();
    // An out-of-scope file and a secret, committed and taken out again before the worker ends:
    // the net diff is clean, the history is not.
    let worker = "set -e
git config user.name w; git config user.email w@x
echo evil > evil.txt; echo 'AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY9' > key.env
git add evil.txt key.env && git commit -qm 'sneak in'
git rm -q evil.txt key.env && git commit -qm 'take out'
echo ok > out.txt";
    let (out, v, branch) = run_scoped(&repo, worker);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(v["packets"][0]["state"], "succeeded");
    let base = v["run"]["base"].as_str().unwrap();
    let commits = repo.git(&["rev-list", &format!("{base}..{branch}")]);
    assert_eq!(
        commits.lines().count(),
        1,
        "only the engine's commit: {commits}"
    );
    let history = repo.git(&["log", "-p", "--format=%an %s", &branch]);
    assert!(!history.contains("evil"), "{history}");
    assert!(!history.contains("wJalrXUtnFEMI"), "{history}");
    assert!(!history.contains("sneak in"), "{history}");
}

#[test]
fn a_worker_concluding_a_conflict_merge_itself_lands_only_the_engines_merge() {
    let repo = TestRepo::new();
    let body = format!(
        "objective = \"Conflict\"\n\n{}{}",
        packet("pa", "\"README.md\"", "", "\"true\""),
        packet("pb", "\"README.md\"", "", "\"true\""),
    );
    let plan = repo.write_plan("plan.toml", &body);
    // In the conflict round the worker resolves, commits the merge itself, then sneaks a file
    // in and out in commits of its own.
    let worker = r#"if [ -n "$ORCHESTRA_FIXES_FILE" ]; then
  set -e
  sed -i -e '/^<<<<<<< /d' -e '/^=======$/d' -e '/^>>>>>>> /d' README.md
  git config user.name w; git config user.email w@x
  git add -A && git commit -qm 'resolved by the worker'
  echo evil > evil.txt && git add evil.txt && git commit -qm 'sneak in'
  git rm -q evil.txt && git commit -qm 'take out'
else echo "$ORCHESTRA_PACKET was here" > README.md; fi"#;
    let out = repo.run_plan(&plan, worker, &["--merge"]);
    assert!(out.status.success(), "{}", text(&out));
    let readme = repo.git(&["show", "main:README.md"]);
    assert!(
        readme.contains("pa was here") && readme.contains("pb was here"),
        "{readme}"
    );
    let history = repo.git(&["log", "--format=%s", "main"]);
    assert!(!history.contains("sneak in"), "{history}");
    assert!(!history.contains("resolved by the worker"), "{history}");
    assert!(history.contains("resolve conflicts"), "{history}");
}

#[test]
fn a_workers_own_files_named_like_the_engines_temporary_files_are_kept() {
    let repo = TestRepo::new();
    let plan = repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"Notes\"\n\n{}",
            packet("p1", "\".orchestra-tmp-notes.md\"", "", "\"true\"")
        ),
    );
    let out = repo.run_plan(&plan, "echo kept > .orchestra-tmp-notes.md", &[]);
    assert!(out.status.success(), "{}", text(&out));
    let v = status_json(&repo.path);
    let branch = v["packets"][0]["branch"].as_str().unwrap();
    assert_eq!(
        repo.git(&["show", &format!("{branch}:.orchestra-tmp-notes.md")]),
        "kept"
    );
}

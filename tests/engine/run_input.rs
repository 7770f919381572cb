//! Bad input to `git orchestra run`: a clear message, exit code 2, and no change at all.

use std::path::Path;

use crate::support::*;

const GOOD_PLAN: &str = "objective = \"Ok\"\n\n[[packet]]\nid = \"p1\"\ntitle = \"t\"\ndescription = \"d\"\nfiles = [\"a.txt\"]\n";

/// Everything a run could change: refs, worktrees, the state directory, the working tree.
fn fingerprint(repo: &Path) -> String {
    let git_dir = repo.join(".git");
    format!(
        "{}\n--\n{}\n--\n{}\n--{}",
        refs(repo),
        git(repo, &["worktree", "list", "--porcelain"]),
        git(repo, &["status", "--porcelain", "--ignored"]),
        git_dir.join("orchestra").exists()
    )
}

fn assert_refused(dir: &Path, args: &[&str], expect: &[&str]) {
    let out = orchestra(dir, args);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(2), "{all}");
    for needle in expect {
        assert!(all.contains(needle), "expected `{needle}` in:\n{all}");
    }
}

#[test]
fn bad_plans_and_arguments_change_nothing() {
    let repo = TestRepo::new();
    let scratch = repo.scratch();
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "malformed.toml",
            "objective = \"x\"\n[[packet]\nid = 1\n",
            &["malformed.toml:2:"],
        ),
        (
            "unknown-key.toml",
            &GOOD_PLAN.replace("files", "fils"),
            &["fils"],
        ),
        (
            "duplicate.toml",
            &format!(
                "{GOOD_PLAN}\n[[packet]]\nid = \"p1\"\ntitle = \"t\"\ndescription = \"d\"\nfiles = [\"b.txt\"]\n"
            ),
            &["duplicate", "p1"],
        ),
        (
            "cycle.toml",
            "objective = \"c\"\n[[packet]]\nid = \"a\"\ntitle = \"t\"\ndescription = \"d\"\nfiles = [\"a\"]\ndepends_on = [\"b\"]\n[[packet]]\nid = \"b\"\ntitle = \"t\"\ndescription = \"d\"\nfiles = [\"b\"]\ndepends_on = [\"a\"]\n",
            &["cycle", "a -> b -> a"],
        ),
        (
            "unknown-base.toml",
            &format!("base = \"no-such-branch\"\n{GOOD_PLAN}"),
            &["no-such-branch"],
        ),
    ];
    for (name, body, expect) in cases {
        let path = scratch.join(name);
        std::fs::write(&path, body).unwrap();
        let before = fingerprint(&repo.path);
        assert_refused(
            &repo.path,
            &["run", path.to_str().unwrap(), "--worker-cmd", "true"],
            expect,
        );
        assert_eq!(
            fingerprint(&repo.path),
            before,
            "{name} changed the repository"
        );
    }

    let good = scratch.join("good.toml");
    std::fs::write(&good, GOOD_PLAN).unwrap();
    let before = fingerprint(&repo.path);
    assert_refused(
        &repo.path,
        &["run", good.to_str().unwrap()],
        &["no model profile for role `coder`", "--worker-cmd"],
    );
    assert_refused(
        &repo.path,
        &["run", "no-such-plan.toml", "--worker-cmd", "true"],
        &["no-such-plan.toml"],
    );
    assert_refused(
        &repo.path,
        &[
            "run",
            good.to_str().unwrap(),
            "--worker-cmd",
            "true",
            "--max-parallel",
            "0",
        ],
        &["max-parallel"],
    );
    assert_refused(&repo.path, &["resume"], &["no run in this repository"]);
    assert_refused(&repo.path, &["status", "no-such-run"], &[]);
    assert_eq!(fingerprint(&repo.path), before);
}

#[test]
fn repositories_that_cannot_host_a_run_are_refused() {
    let repo = TestRepo::new();
    let plan = repo.scratch().join("good.toml");
    std::fs::write(&plan, GOOD_PLAN).unwrap();
    let plan = plan.to_str().unwrap();
    let args = ["run", plan, "--worker-cmd", "true"];

    let not_repo = repo.scratch().join("plain");
    std::fs::create_dir_all(&not_repo).unwrap();
    assert_refused(
        &not_repo,
        &args,
        &["not inside a git repository", "git init"],
    );

    let empty = repo.scratch().join("empty");
    git(repo.tmp.path(), &["init", "-q", empty.to_str().unwrap()]);
    assert_refused(&empty, &args, &["no commits yet"]);
    assert!(!empty.join(".git/orchestra").exists());

    let bare = repo.scratch().join("bare.git");
    git(
        repo.tmp.path(),
        &[
            "clone",
            "-q",
            "--bare",
            repo.path.to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
    assert_refused(&bare, &args, &["bare repository"]);
    assert!(!bare.join("orchestra").exists());

    let head = repo.git(&["rev-parse", "HEAD"]);
    repo.git(&["checkout", "-q", "--detach", &head]);
    let before = fingerprint(&repo.path);
    assert_refused(&repo.path, &args, &["HEAD is detached", "base ="]);
    assert_eq!(fingerprint(&repo.path), before);
}

#[test]
fn a_dirty_working_tree_is_allowed_and_said() {
    let repo = TestRepo::new();
    repo.write("README.md", "uncommitted edit\n");
    let plan = repo.scratch().join("good.toml");
    std::fs::write(&plan, GOOD_PLAN).unwrap();
    let root = repo.scratch().join("wt");
    let out = orchestra(
        &repo.path,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            "echo a > a.txt",
            "--worktree-root",
            root.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("uncommitted changes") && stderr.contains("base commit"),
        "{stderr}"
    );
    // The user's edit is untouched and did not leak into the packet.
    assert_eq!(
        std::fs::read_to_string(repo.path.join("README.md")).unwrap(),
        "uncommitted edit\n"
    );
}

//! Sparse packet worktrees (`[worktree] sparse`): a packet's worktree holds its declared
//! directories, the top-level files and `sparse_include`; what it commits never deletes the
//! files left out; a write outside the cone is committed and caught by the scope check; a
//! packet declaring a pattern that starts with a wildcard gets the whole tree.

use std::path::{Path, PathBuf};

use crate::support::{TestRepo, packet, status_json, text};

/// A repository with three directories (`app/`, `lib/`, `shared/`) whose runs use sparse
/// worktrees that always include `shared/`.
fn sparse_repo() -> TestRepo {
    let repo = TestRepo::new();
    repo.write(
        ".orchestra/config.toml",
        "[worktree]\nsparse = true\nsparse_include = [\"shared\"]\n\n[run]\nkeep_worktrees = true\n",
    );
    repo.write("app/main.txt", "app\n");
    repo.write("shared/common.txt", "common\n");
    for i in 0..30 {
        repo.write(&format!("lib/deep/f{i}.txt"), &format!("lib {i}\n"));
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "sparse set-up"]);
    repo
}

/// Returns the worktree path of packet `id` in the newest run.
fn worktree_of(repo: &TestRepo, id: &str) -> PathBuf {
    let v = status_json(&repo.path);
    let rec = v["packets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == id)
        .cloned()
        .unwrap();
    PathBuf::from(rec["worktree"].as_str().unwrap())
}

/// The worker records what its worktree holds, in its own directory.
const SEES: &str = r#"{ for p in app/main.txt shared/common.txt lib/deep/f1.txt src/lib.rs; do if [ -e "$p" ]; then echo "$p yes"; else echo "$p no"; fi; done; } > app/seen.txt"#;

#[test]
fn a_sparse_packet_sees_its_cone_and_lands_without_deleting_what_it_did_not_see() {
    let repo = sparse_repo();
    let plan = repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"Sparse\"\n\n{}",
            packet("p1", "\"app/**\"", "", "\"test -f shared/common.txt\"")
        ),
    );
    let out = repo.run_plan(&plan, SEES, &["--merge"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("worktree ready (fresh, sparse)"),
        "{}",
        text(&out)
    );
    let wt = worktree_of(&repo, "p1");
    // The cone: the packet's directory, the included one, the top-level files.
    assert_eq!(
        std::fs::read_to_string(wt.join("app/seen.txt")).unwrap(),
        "app/main.txt yes\nshared/common.txt yes\nlib/deep/f1.txt no\nsrc/lib.rs no\n"
    );
    assert!(wt.join("README.md").is_file());
    assert!(!wt.join("lib").exists());
    // The packet's commit changes only its file: nothing left out of the cone is deleted.
    let branch = format!("orchestra/{}/p1", crate::support::run_id(&repo.path));
    let changed = repo.git(&["show", "--name-status", "--format=", &branch]);
    assert_eq!(changed.trim(), "A\tapp/seen.txt");
    // Merged: main has the new file and every file it had.
    repo.git(&["merge-base", "--is-ancestor", &branch, "HEAD"]);
    let tracked = repo.git(&["ls-files"]);
    assert!(tracked.contains("lib/deep/f29.txt") && tracked.contains("app/seen.txt"));
    assert!(repo.path.join("lib/deep/f29.txt").is_file());
    // The sparse settings belong to the packet's worktree, not to the user's checkout.
    assert_eq!(
        crate::support::git(&repo.path, &["ls-files", "-t", "lib/deep/f0.txt"]),
        "H lib/deep/f0.txt"
    );
    let sparse_here = std::process::Command::new("git")
        .args(["config", "--get", "core.sparseCheckout"])
        .current_dir(&repo.path)
        .output()
        .unwrap();
    assert_ne!(
        String::from_utf8_lossy(&sparse_here.stdout).trim(),
        "true",
        "the main checkout must stay a full checkout"
    );
}

#[test]
fn a_write_outside_the_cone_is_committed_and_caught_by_the_scope_check() {
    let repo = sparse_repo();
    let plan = repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"Sparse escape\"\n\n{}",
            packet("p1", "\"app/**\"", "", "")
        ),
    );
    let worker = "echo ok > app/ok.txt; mkdir -p lib/deep; echo sneaky > lib/deep/new.txt";
    let out = repo.run_plan(&plan, worker, &[]);
    assert!(!out.status.success(), "{}", text(&out));
    let all = text(&out);
    assert!(all.contains("lib/deep/new.txt"), "{all}");
    let v = status_json(&repo.path);
    assert_eq!(v["packets"][0]["state"], "failed", "{all}");
    // The out-of-cone file was committed (so the check saw it), and nothing else was deleted.
    let branch = format!("orchestra/{}/p1", crate::support::run_id(&repo.path));
    let changed = repo.git(&["show", "--name-status", "--format=", &branch]);
    let mut lines: Vec<&str> = changed.lines().collect();
    lines.sort();
    assert_eq!(lines, ["A\tapp/ok.txt", "A\tlib/deep/new.txt"], "{changed}");
}

#[test]
fn a_packet_declaring_a_leading_wildcard_gets_a_full_checkout() {
    let repo = sparse_repo();
    let plan = repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"Everywhere\"\n\n{}",
            packet("p1", "\"**/*.md\"", "", "\"test -f lib/deep/f1.txt\"")
        ),
    );
    let out = repo.run_plan(&plan, "echo note > NOTES.md", &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("worktree ready (fresh)"),
        "{}",
        text(&out)
    );
    assert!(worktree_of(&repo, "p1").join("lib/deep/f1.txt").is_file());
}

#[test]
fn gc_removes_a_sparse_worktree_like_any_other() {
    let repo = sparse_repo();
    let plan = repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"Sparse gc\"\n\n{}",
            packet("p1", "\"app/**\"", "", "")
        ),
    );
    let out = repo.run_plan(&plan, "echo x > app/x.txt", &[]);
    assert!(out.status.success(), "{}", text(&out));
    let wt = worktree_of(&repo, "p1");
    assert!(wt.is_dir());
    let gc = crate::support::orchestra(&repo.path, &["gc"]);
    assert!(gc.status.success(), "{}", text(&gc));
    assert!(!wt.exists(), "{}", text(&gc));
    assert!(is_listed_nowhere(&repo.path, &wt));
}

fn is_listed_nowhere(repo: &Path, wt: &Path) -> bool {
    let list = crate::support::git(repo, &["worktree", "list", "--porcelain"]);
    !list.contains(wt.to_str().unwrap())
}

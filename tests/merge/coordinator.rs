//! `git orchestra merge` and `run --merge`: in-memory merges, validation of the merged tree,
//! conflicts sent back, bisection of failing batches, and `--predict`.

use std::path::PathBuf;

use crate::support::*;

const WORKER: &str = r#"echo "$ORCHESTRA_PACKET" > "out-$ORCHESTRA_PACKET.txt"; if [ "$ORCHESTRA_PACKET" = p3 ]; then touch poison; fi"#;

#[test]
fn run_with_merge_integrates_in_dependency_order_and_advances_main() {
    let repo = TestRepo::new();
    let body = format!(
        "objective = \"Merge all\"\n\n{}{}{}",
        packet("p2", "\"out-p2.txt\"", "\"p1\"", "\"test -f out-p2.txt\""),
        packet("p1", "\"out-p1.txt\"", "", "\"test -f out-p1.txt\""),
        packet("p4", "\"out-p4.txt\"", "", "\"test -f out-p4.txt\""),
    );
    let plan = repo.write_plan("plan.toml", &body);
    let base = repo.git(&["rev-parse", "main"]);
    let out = repo.run_plan(&plan, WORKER, &["--merge"]);
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    let integration = format!("orchestra/{run}/integration");
    let tip = repo.git(&["rev-parse", &integration]);
    assert_eq!(repo.git(&["rev-parse", "main"]), tip);
    // main was checked out and clean: the working tree followed.
    for f in ["out-p1.txt", "out-p2.txt", "out-p4.txt"] {
        assert!(
            repo.path.join(f).exists(),
            "{f} missing from the working tree"
        );
    }
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    // First-parent history: p1 before p2 (its dependent), then p4.
    let subjects = repo.git(&[
        "log",
        "--first-parent",
        "--format=%s",
        &format!("{base}..main"),
    ]);
    let order: Vec<&str> = subjects.lines().rev().collect();
    assert_eq!(
        order,
        vec![
            format!("Merge packet p1 into {integration}"),
            format!("Merge packet p2 into {integration}"),
            format!("Merge packet p4 into {integration}"),
        ]
    );
    // Merging again finds everything integrated and changes nothing.
    let out = orchestra(&repo.path, &["merge", &run, "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["already_integrated"].as_array().unwrap().len(), 3);
    assert_eq!(repo.git(&["rev-parse", "main"]), tip);
}

#[test]
fn a_failing_packet_is_bisected_out_without_evicting_others() {
    let repo = TestRepo::new();
    let clean = "\"test ! -e poison\"";
    let body = format!(
        "objective = \"Bisect\"\n\n{}{}{}{}",
        packet("p1", "\"out-p1.txt\"", "", clean),
        packet("p2", "\"out-p2.txt\"", "", clean),
        packet("p3", "\"out-p3.txt\", \"poison\"", "", "\"test -f poison\""),
        packet("p4", "\"out-p4.txt\"", "", clean),
    );
    let plan = repo.write_plan("plan.toml", &body);
    let out = repo.run_plan(&plan, WORKER, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    // Work on another branch, so the target is advanced by ref (compare-and-swap).
    repo.git(&["checkout", "-q", "-b", "elsewhere"]);
    let out = orchestra(&repo.path, &["merge", &run, "--target", "main", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names = |key: &str| -> Vec<String> {
        v[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| {
                x.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| x["packet"].as_str().unwrap().to_string())
            })
            .collect()
    };
    assert_eq!(names("integrated"), vec!["p1", "p2", "p4"]);
    assert_eq!(names("sent_back"), vec!["p3"]);
    assert!(
        v["sent_back"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("test ! -e poison")
    );
    let batches: Vec<(Vec<String>, bool)> = v["batches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["packets"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| p.as_str().unwrap().to_string())
                    .collect(),
                b["passed"].as_bool().unwrap(),
            )
        })
        .collect();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        batches,
        vec![
            (s(&["p1"]), true),
            (s(&["p2", "p3"]), false),
            (s(&["p2"]), true),
            (s(&["p3", "p4"]), false),
            (s(&["p3"]), false),
            (s(&["p4"]), true),
        ]
    );
    assert!(v["target_advanced"].as_bool().unwrap());
    assert!(
        repo.git(&["ls-tree", "-r", "--name-only", "main"])
            .lines()
            .all(|l| l != "poison")
    );
    // The store marks the packet.
    let status = orchestra(&repo.path, &["status", "--json"]);
    let sv: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let p3 = sv["packets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == "p3")
        .unwrap();
    assert!(
        p3["reason"]
            .as_str()
            .unwrap()
            .starts_with("sent back by the merge"),
        "{p3}"
    );
    // No scratch worktree is left behind.
    assert_eq!(
        repo.git(&["worktree", "list"])
            .lines()
            .filter(|l| l.contains("/.scratch/"))
            .count(),
        0
    );
}

#[test]
fn conflicting_packet_is_sent_back_with_its_paths_when_its_worker_cannot_resolve() {
    let repo = TestRepo::new();
    let body = format!(
        "objective = \"Conflict\"\n\n{}{}{}",
        packet("pa", "\"README.md\"", "", ""),
        packet("pb", "\"README.md\"", "", ""),
        packet("pc", "\"out-pc.txt\"", "", "\"test -f out-pc.txt\""),
    );
    let plan = repo.write_plan("plan.toml", &body);
    // A conflict round (ORCHESTRA_FIXES_FILE set) fails: the worker cannot resolve.
    let worker = r#"if [ -n "$ORCHESTRA_FIXES_FILE" ]; then echo cannot resolve; exit 3; fi; if [ "$ORCHESTRA_PACKET" = pc ]; then echo pc > out-pc.txt; else echo "$ORCHESTRA_PACKET was here" > README.md; fi"#;
    let before_main = repo.git(&["rev-parse", "main"]);
    let out = repo.run_plan(&plan, worker, &["--merge"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let all = text(&out);
    assert!(all.contains("[pb] CONFLICTS in README.md"), "{all}");
    assert!(all.contains("sent back: pb"), "{all}");
    // pa and pc went in; main advanced to the integration tip holding pa's README.
    assert_ne!(repo.git(&["rev-parse", "main"]), before_main);
    assert_eq!(repo.git(&["show", "main:README.md"]), "pa was here");
    assert_eq!(repo.git(&["show", "main:out-pc.txt"]), "pc");
    // The reason names the paths and the failed resolution; the packet's work is intact.
    let run = run_id(&repo.path);
    let status = orchestra(&repo.path, &["status", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let pb = v["packets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == "pb")
        .unwrap()
        .clone();
    let reason = pb["reason"].as_str().unwrap_or_default().to_string();
    assert!(reason.contains("README.md"), "{pb}");
    assert!(reason.contains("did not resolve"), "{pb}");
    let branch = format!("orchestra/{run}/pb");
    assert_eq!(
        repo.git(&["show", &format!("{branch}:README.md")]),
        "pb was here"
    );
    let pb_wt = PathBuf::from(pb["worktree"].as_str().unwrap());
    // The aborted merge left the worktree on the packet's own commit, clean, no merge pending.
    assert_eq!(git(&pb_wt, &["status", "--porcelain"]), "");
    assert_eq!(
        git(&pb_wt, &["rev-parse", "HEAD"]),
        repo.git(&["rev-parse", &branch])
    );
    assert!(!pb_wt.join(".git").is_dir());
    let merging = std::process::Command::new("git")
        .args(["rev-parse", "-q", "--verify", "MERGE_HEAD"])
        .current_dir(&pb_wt)
        .output()
        .unwrap();
    assert!(!merging.status.success());
}

#[test]
fn conflicting_packet_goes_back_to_its_worker_and_re_enters_the_queue() {
    let repo = TestRepo::new();
    let body = format!(
        "objective = \"Conflict\"\n\n{}{}",
        packet(
            "pa",
            "\"README.md\"",
            "",
            "\"grep -q 'pa was here' README.md\""
        ),
        packet(
            "pb",
            "\"README.md\"",
            "",
            "\"grep -q 'pb was here' README.md\""
        ),
    );
    let plan = repo.write_plan("plan.toml", &body);
    // In a conflict round the worker takes both sides: it drops the marker lines.
    let worker = r#"if [ -n "$ORCHESTRA_FIXES_FILE" ]; then grep -q README.md "$ORCHESTRA_FIXES_FILE" && sed -i -e '/^<<<<<<< /d' -e '/^=======$/d' -e '/^>>>>>>> /d' README.md; else echo "$ORCHESTRA_PACKET was here" > README.md; fi"#;
    let before_main = repo.git(&["rev-parse", "main"]);
    let out = repo.run_plan(&plan, worker, &["--merge"]);
    assert!(out.status.success(), "{}", text(&out));
    let all = text(&out);
    assert!(all.contains("[pb] CONFLICTS in README.md"), "{all}");
    assert!(!all.contains("sent back: pb"), "{all}");
    let main = repo.git(&["rev-parse", "main"]);
    assert_ne!(main, before_main);
    let readme = repo.git(&["show", "main:README.md"]);
    assert!(
        readme.contains("pa was here") && readme.contains("pb was here"),
        "{readme}"
    );
    assert!(!readme.contains("<<<<<<<"), "{readme}");
    // The resolution is the engine's commit, with trailers, on the packet's branch.
    let run = run_id(&repo.path);
    let branch = format!("orchestra/{run}/pb");
    let msg = repo.git(&["log", "-1", "--format=%B", &branch]);
    assert!(msg.contains("resolve conflicts"), "{msg}");
    assert!(msg.contains(&format!("Orchestra-Run: {run}")), "{msg}");
    assert!(
        repo.git(&["merge-base", "--is-ancestor", &branch, "main"])
            .is_empty()
    );
    // Each step is journaled: the conflict, the resolving worker, the re-validation, the
    // validation of the merged tree with both packets' commands.
    let store = git_orchestra::store::Store::open(&repo.path.join(".git")).unwrap();
    let ev = serde_json::to_string(&store.events(&run, 0).unwrap()).unwrap();
    for kind in [
        "packet_conflicted",
        "worker_started",
        "validation_finished",
        "packet_integrated",
    ] {
        assert!(ev.contains(kind), "{kind} missing: {ev}");
    }
    assert!(ev.contains("grep -q 'pb was here' README.md"), "{ev}");
}

#[test]
fn predict_reports_conflicts_without_writing_refs() {
    let repo = TestRepo::new();
    repo.git(&["checkout", "-q", "-b", "a"]);
    repo.write("README.md", "from a\n");
    repo.git(&["commit", "-q", "-am", "a"]);
    repo.git(&["checkout", "-q", "-b", "b", "main"]);
    repo.write("README.md", "from b\n");
    repo.git(&["commit", "-q", "-am", "b"]);
    repo.git(&["checkout", "-q", "-b", "c", "main"]);
    repo.write("other.txt", "c\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "c"]);
    let before = refs(&repo.path);
    let out = orchestra(&repo.path, &["merge", "--predict", "a", "b"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("README.md"), "{}", text(&out));
    let out = orchestra(&repo.path, &["merge", "--predict", "a", "c", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["conflicts"], false);
    let out = orchestra(&repo.path, &["merge", "--predict", "a", "nope"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let out = orchestra(&repo.path, &["merge", "no-such-run"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(refs(&repo.path), before);
}

#[test]
fn merge_and_pr_without_a_run_take_the_newest_run() {
    let repo = TestRepo::new();
    // No run yet: a clear message and exit 2, nothing changed.
    let out = orchestra(&repo.path, &["merge"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("no run in this repository"),
        "{}",
        text(&out)
    );
    let body = format!(
        "objective = \"Newest\"\n\n{}",
        packet("p1", "\"out-p1.txt\"", "", "\"test -f out-p1.txt\""),
    );
    let plan = repo.write_plan("plan.toml", &body);
    let out = repo.run_plan(&plan, WORKER, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    let out = orchestra(&repo.path, &["merge", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["integrated"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(
        repo.git(&["rev-parse", "main"]),
        repo.git(&["rev-parse", &format!("orchestra/{run}/integration")])
    );
    assert_eq!(
        repo.git(&["show", "main:out-p1.txt"]),
        "p1",
        "the packet's work is on main"
    );
    let out = orchestra(&repo.path, &["pr", "--local", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = orchestra(&repo.path, &["merge", "no-such-run"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("no-such-run"), "{}", text(&out));
}

/// Stores `json` as the review note of `object`, replacing any.
fn put_note(repo: &TestRepo, object: &str, json: &str) {
    repo.git(&[
        "notes",
        "--ref=orchestra/review",
        "add",
        "-f",
        "-m",
        json,
        object,
    ]);
}

#[test]
fn merge_integrates_only_approved_packets_and_reviews_the_ones_without_a_verdict() {
    let repo = TestRepo::new();
    let body = format!(
        "objective = \"Approved only\"\n\n{}{}{}",
        packet("p1", "\"out-p1.txt\"", "", "\"test -f out-p1.txt\""),
        packet("p2", "\"out-p2.txt\"", "", "\"test -f out-p2.txt\""),
        packet("p4", "\"out-p4.txt\"", "\"p2\"", "\"test -f out-p4.txt\""),
    );
    let plan = repo.write_plan("plan.toml", &body);
    let out = repo.run_plan(&plan, WORKER, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    let tip = |p: &str| repo.git(&["rev-parse", &format!("orchestra/{run}/{p}")]);
    // Someone's later review rejected p2: its commit and tree carry the rejection.
    let (c2, t2) = (
        tip("p2"),
        repo.git(&["rev-parse", &format!("{}^{{tree}}", tip("p2"))]),
    );
    let rejection = |object: &str| {
        format!(
            r#"{{"version":1,"commit":"{c2}","tree":"{t2}","base":"{c2}","reviewer":"reviewer:m","verdict":"reject","checks":[],"findings":[{{"severity":"blocker","category":"correctness","file":"out-p2.txt","line":1,"evidence":"wrong greeting","suggestion":"fix it"}}],"timestamp":"2026-01-01T00:00:00Z","packet":"{object}"}}"#
        )
    };
    put_note(&repo, &c2, &rejection("x"));
    put_note(&repo, &t2, &rejection("x"));
    // p1's verdict is gone: the merge reviews it before it goes in.
    let (c1, t1) = (
        tip("p1"),
        repo.git(&["rev-parse", &format!("{}^{{tree}}", tip("p1"))]),
    );
    for object in [&c1, &t1] {
        repo.git(&["notes", "--ref=orchestra/review", "remove", object]);
    }

    let out = orchestra(&repo.path, &["merge", &run, "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["integrated"], serde_json::json!(["p1"]), "{v}");
    let sent: Vec<&str> = v["sent_back"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["packet"].as_str().unwrap())
        .collect();
    assert_eq!(sent, ["p2", "p4"], "{v}");
    let reason = v["sent_back"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("no approving review"), "{reason}");
    assert!(reason.contains("out-p2.txt:1"), "{reason}");
    assert!(
        v["sent_back"][1]["reason"]
            .as_str()
            .unwrap()
            .contains("`p2` was not integrated"),
        "{v}"
    );
    // What landed is p1 alone, and p1 carries the verdict the merge's review stored.
    assert!(repo.path.join("out-p1.txt").exists());
    assert!(!repo.path.join("out-p2.txt").exists());
    let note = repo.git(&["notes", "--ref=orchestra/review", "show", &c1]);
    assert!(note.contains("\"verdict\": \"approve\""), "{note}");
}

/// Each packet writes its own file; on a fix round p2 reads what it was told and writes a
/// value that gets along with p1's.
const CLASHING: &str = r#"if [ -n "$ORCHESTRA_FIXES_FILE" ]; then cp "$ORCHESTRA_FIXES_FILE" "seen-$ORCHESTRA_PACKET.md"; echo 2 > "$ORCHESTRA_PACKET.txt"; else echo 1 > "$ORCHESTRA_PACKET.txt"; fi"#;

#[test]
fn a_validation_the_merge_broke_goes_back_to_the_packet_that_broke_it_and_the_fix_lands() {
    let repo = TestRepo::new();
    // Either file alone passes; both saying 1 does not.
    repo.write(
        "check.sh",
        "if [ \"$(cat p1.txt 2>/dev/null)\" = 1 ] && [ \"$(cat p2.txt 2>/dev/null)\" = 1 ]; then echo 'p1.txt and p2.txt both say 1'; exit 4; fi\n",
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "check"]);
    let body = format!(
        "objective = \"Merged tree\"\n\n{}{}",
        packet("p1", "\"p1.txt\", \"seen-p1.md\"", "", "\"sh check.sh\""),
        packet("p2", "\"p2.txt\", \"seen-p2.md\"", "", "\"sh check.sh\""),
    );
    let plan = repo.write_plan("plan.toml", &body);
    let out = repo.run_plan(&plan, CLASHING, &["--merge"]);
    assert!(out.status.success(), "{}", text(&out));
    // Both landed, p2 with its fix, and p2's worker was told what broke.
    assert_eq!(repo.git(&["show", "main:p1.txt"]), "1");
    assert_eq!(repo.git(&["show", "main:p2.txt"]), "2");
    let seen = repo.git(&["show", "main:seen-p2.md"]);
    assert!(seen.contains("`sh check.sh` fails on the result"), "{seen}");
    assert!(seen.contains("p1.txt and p2.txt both say 1"), "{seen}");
    let log = repo.git(&["log", "--format=%s", "main"]);
    assert!(log.contains("and fix `sh check.sh`"), "{log}");
    // The merged result passes the check.
    let check = std::process::Command::new("sh")
        .arg("check.sh")
        .current_dir(&repo.path)
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", text(&check));
}

#[test]
fn integrated_packets_lose_their_worktrees_keep_their_branches_unless_configured() {
    for keep in [false, true] {
        let repo = TestRepo::new();
        if keep {
            repo.write(".orchestra/config.toml", "[run]\nkeep_worktrees = true\n");
            repo.git(&["add", "-A"]);
            repo.git(&["commit", "-qm", "config"]);
        }
        let body = format!(
            "objective = \"Tidy\"\n\n{}{}",
            packet("p1", "\"out-p1.txt\"", "", "\"test -f out-p1.txt\""),
            packet(
                "p3",
                "\"out-p3.txt\", \"poison\"",
                "",
                "\"test -f out-p3.txt\""
            ),
        );
        let plan = repo.write_plan("plan.toml", &body);
        let out = repo.run_plan(&plan, WORKER, &["--merge"]);
        assert!(out.status.success(), "{}", text(&out));
        let run = run_id(&repo.path);
        let v = status_json(&repo.path);
        for p in v["packets"].as_array().unwrap() {
            let wt = std::path::Path::new(p["worktree"].as_str().unwrap());
            assert_eq!(wt.exists(), keep, "{p}");
            let branch = format!("orchestra/{run}/{}", p["id"].as_str().unwrap());
            assert!(
                !repo.git(&["branch", "--list", &branch]).is_empty(),
                "{branch}"
            );
        }
    }
}

#[test]
fn run_merge_validates_the_merged_tree_under_the_run_s_timeout() {
    let repo = TestRepo::new();
    // Passes at once in the packet's worktree; hangs on the merged tree's scratch checkout.
    let validate = "\"case $PWD in */.scratch/*) sleep 120;; esac; test -f out-p1.txt\"";
    let body = format!(
        "objective = \"Merge one\"\n\n{}",
        packet("p1", "\"out-p1.txt\"", "", validate)
    );
    let plan = repo.write_plan("plan.toml", &body);
    let base = repo.git(&["rev-parse", "main"]);
    let started = std::time::Instant::now();
    let out = repo.run_plan(&plan, WORKER, &["--merge", "--timeout", "3"]);
    let took = started.elapsed();
    assert!(
        took < std::time::Duration::from_secs(60),
        "the merged tree's validation ran past --timeout 3: {took:?}\n{}",
        text(&out)
    );
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("timed out"), "{}", text(&out));
    assert_eq!(repo.git(&["rev-parse", "main"]), base, "main moved");
}

//! What `run --merge` says about the target: it never claims the target advanced when its ref
//! did not move, and says why there was nothing to merge.

use crate::support::*;

const WORKER: &str = r#"echo "$ORCHESTRA_PACKET" > "out-$ORCHESTRA_PACKET.txt""#;

#[test]
fn run_merge_with_only_a_failed_packet_does_not_claim_the_target_advanced() {
    let repo = TestRepo::new();
    let body = format!(
        "objective = \"Fail\"\n\n{}",
        packet("p1", "\"out-p1.txt\"", "", "\"test -f out-p1.txt\"")
    );
    let plan = repo.write_plan("plan.toml", &body);
    let base = repo.git(&["rev-parse", "main"]);
    let out = repo.run_plan(&plan, "echo broken >&2; exit 3", &["--merge"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert_eq!(repo.git(&["rev-parse", "main"]), base);
    assert!(!said.contains("target advanced"), "{said}");
    assert!(!said.contains("merging 0 packets"), "{said}");
    assert!(
        said.contains("nothing to merge: no packet succeeded"),
        "{said}"
    );
    assert!(said.contains("target unchanged"), "{said}");
    // The stand-alone merge's report says so too.
    let out = orchestra(&repo.path, &["merge", &run_id(&repo.path)]);
    let report = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        report.contains("nothing to merge: no packet succeeded"),
        "{}",
        text(&out)
    );
    assert!(report.contains("main unchanged at"), "{}", text(&out));
    assert_eq!(repo.git(&["rev-parse", "main"]), base);
}

#[test]
fn run_merge_that_moves_the_target_still_says_it_advanced() {
    let repo = TestRepo::new();
    let body = format!(
        "objective = \"Merge\"\n\n{}",
        packet("p1", "\"out-p1.txt\"", "", "\"test -f out-p1.txt\"")
    );
    let plan = repo.write_plan("plan.toml", &body);
    let base = repo.git(&["rev-parse", "main"]);
    let out = repo.run_plan(&plan, WORKER, &["--merge"]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert_ne!(repo.git(&["rev-parse", "main"]), base);
    assert!(said.contains("merging 1 packet into"), "{said}");
    assert!(said.contains("target advanced"), "{said}");
    assert!(!said.contains("nothing to merge"), "{said}");
}

#[test]
fn merging_again_with_nothing_new_says_the_target_is_unchanged() {
    let repo = TestRepo::new();
    let body = format!(
        "objective = \"Merge\"\n\n{}",
        packet("p1", "\"out-p1.txt\"", "", "\"test -f out-p1.txt\"")
    );
    let plan = repo.write_plan("plan.toml", &body);
    let out = repo.run_plan(&plan, WORKER, &["--merge"]);
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    let tip = repo.git(&["rev-parse", "main"]);
    let out = orchestra(&repo.path, &["merge", &run]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert_eq!(repo.git(&["rev-parse", "main"]), tip);
    assert!(!said.contains("target advanced"), "{said}");
    assert!(said.contains("main unchanged at"), "{said}");
    let out = orchestra(&repo.path, &["merge", &run, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["target_advanced"], true, "{v}");
    assert_eq!(v["target_moved"], false, "{v}");
}

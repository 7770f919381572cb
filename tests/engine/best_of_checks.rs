//! Best-of-N selection runs the deterministic checks (secrets, file sizes, conflict markers,
//! …) on every candidate before the choice: a candidate they reject cannot win, however small
//! its change, and its reason names the check. With a project test command (`[eval] test`)
//! configured, a candidate must pass it too.

use crate::support::*;

/// Candidate 1 writes one line holding an access key, candidate 2 two clean lines; a fix
/// round (no candidate number) writes the clean lines too.
const WORKER: &str = r#"if [ "$ORCHESTRA_CANDIDATE" = 1 ]; then echo "key = AKIAIOSFODNN7EXAMPLE" > out.txt; else printf 'key = from_env()\nsecond\n' > out.txt; fi"#;

#[test]
fn a_smaller_candidate_the_checks_reject_loses_to_a_clean_one() {
    let repo = TestRepo::new();
    let body = format!(
        "objective = \"Clean wins\"\n\n{}",
        packet("p1", "\"out.txt\"", "", "\"test -s out.txt\"")
    );
    let plan = repo.write_plan("plan.toml", &body);
    let out = repo.run_plan(&plan, WORKER, &["--best-of", "2"]);
    assert!(out.status.success(), "{}", text(&out));
    let v = status_json(&repo.path);
    let shown = &v["candidates"][0];
    assert_eq!(shown["winner"], 2, "{v:#}");
    let each = shown["candidates"].as_array().unwrap();
    let passed: Vec<bool> = each
        .iter()
        .map(|c| c["passed"].as_bool().unwrap())
        .collect();
    assert_eq!(passed, [false, true], "{v:#}");
    let reasons = shown["reasons"].as_str().unwrap();
    assert!(reasons.contains("the only one that did"), "{reasons}");
    assert!(
        reasons.contains("candidate 1: the deterministic checks rejected it (secret"),
        "{reasons}"
    );
    // The key itself is never repeated in the reasons.
    assert!(!reasons.contains("AKIAIOSFODNN7EXAMPLE"), "{reasons}");
    // The packet took no fix round: the winner was clean from the start.
    let run = run_id(&repo.path);
    assert_eq!(
        repo.git(&["show", &format!("orchestra/{run}/p1:out.txt")]),
        "key = from_env()\nsecond"
    );
    let store = git_orchestra::store::Store::open(&repo.path.join(".git")).unwrap();
    let rejected = store
        .events(&run, 0)
        .unwrap()
        .iter()
        .filter(|e| {
            matches!(&e.event, git_orchestra::store::Event::PacketReviewed { packet, approved: false, .. } if packet == "p1")
        })
        .count();
    assert_eq!(rejected, 0, "the packet's own checks never rejected it");
}

/// Candidate 1 writes `bad`, candidate 2 two lines starting with `good`; both pass the
/// packet's validation.
const TESTED: &str = r#"if [ "$ORCHESTRA_CANDIDATE" = 1 ]; then echo bad > out.txt; else printf 'good\nmore\n' > out.txt; fi"#;

#[test]
fn a_smaller_candidate_failing_the_projects_tests_loses_to_one_passing_them() {
    let repo = TestRepo::new();
    repo.user_config("[eval]\ntest = \"grep -q good out.txt\"\n");
    let body = format!(
        "objective = \"Tested wins\"\n\n{}",
        packet("p1", "\"out.txt\"", "", "\"test -s out.txt\"")
    );
    let plan = repo.write_plan("plan.toml", &body);
    let out = repo.run_plan(&plan, TESTED, &["--best-of", "2"]);
    assert!(out.status.success(), "{}", text(&out));
    let v = status_json(&repo.path);
    let shown = &v["candidates"][0];
    assert_eq!(shown["winner"], 2, "{v:#}");
    let reasons = shown["reasons"].as_str().unwrap();
    assert!(
        reasons.contains("candidate 1: the project's tests `grep -q good out.txt` failed"),
        "{reasons}"
    );
}

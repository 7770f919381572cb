//! `git orchestra retry`: a finished run's failed packet runs again from its worktree, with its
//! skipped dependents and a note for its worker, and lands the way the run was asked to.

use crate::support::*;

/// Fails until `mark` exists; keeps what `ORCHESTRA_FIXES_FILE` said in `note-seen.txt`.
fn flaky_worker(mark: &std::path::Path) -> String {
    format!(
        r#"if [ -n "$ORCHESTRA_FIXES_FILE" ]; then cp "$ORCHESTRA_FIXES_FILE" note-seen.txt; fi; test -f {} || exit 1; echo "$ORCHESTRA_PACKET" > "out-$ORCHESTRA_PACKET.txt""#,
        mark.display()
    )
}

#[test]
fn retry_runs_the_failed_packet_and_its_skipped_dependent_again_and_merges_them() {
    let repo = TestRepo::new();
    let body = format!(
        "objective = \"Retry me\"\n\n{}{}",
        packet(
            "p1",
            "\"out-p1.txt\", \"note-seen.txt\"",
            "",
            "\"test -f out-p1.txt\""
        ),
        packet(
            "p2",
            "\"out-p2.txt\", \"note-seen.txt\"",
            "\"p1\"",
            "\"test -f out-p2.txt\""
        ),
    );
    let plan = repo.write_plan("plan.toml", &body);
    let mark = repo.scratch().join("ready");
    let out = repo.run_plan(&plan, &flaky_worker(&mark), &["--merge"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let v = status_json(&repo.path);
    assert_eq!(v["packets"][0]["state"], "failed", "{v}");
    assert_eq!(v["packets"][1]["state"], "skipped", "{v}");
    let run = run_id(&repo.path);

    // Nothing to retry by name that did not fail; an unknown packet is named with the known.
    let out = orchestra(&repo.path, &["retry", &run, "ghost"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("p1, p2"), "{}", text(&out));

    std::fs::write(&mark, "").unwrap();
    let out = orchestra(&repo.path, &["retry", "--note", "the mark is there now"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("retrying p1, p2"), "{}", text(&out));
    let v = status_json(&repo.path);
    assert_eq!(v["run"]["state"], "completed", "{v}");
    assert_eq!(v["packets"][0]["attempt"], 2, "{v}");
    // The run was merged before, so the retried work is merged too: it is on main.
    assert_eq!(repo.git(&["show", "main:out-p1.txt"]), "p1");
    assert_eq!(repo.git(&["show", "main:out-p2.txt"]), "p2");
    let seen = repo.git(&["show", &format!("orchestra/{run}/p1:note-seen.txt")]);
    assert!(seen.contains("the mark is there now"), "{seen}");
    // Both attempts' logs are kept.
    let dir = repo.path.join(format!(".git/orchestra/runs/{run}/p1"));
    assert!(dir.join("worker-1.log").is_file() && dir.join("worker-2.log").is_file());

    // A run with nothing left to retry says so and changes nothing.
    let out = orchestra(&repo.path, &["retry", &run]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("no failed or skipped packet to retry"),
        "{}",
        text(&out)
    );
}

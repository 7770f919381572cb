//! `status --timings` and `status --json`: where each packet's time went, phase by phase, and
//! the run's sum per phase, derived from the journal.

use crate::support::{TestRepo, orchestra, packet, status_json, text};

#[test]
fn status_timings_show_each_phase_of_every_packet_and_the_runs_sum() {
    let repo = TestRepo::new();
    repo.user_config("[worktree]\nsetup = \"sleep 0.2\"\n");
    let plan = repo.write_plan(
        "timed.toml",
        &format!(
            "objective = \"Timed\"\n\n{}{}",
            packet("p1", "\"out-p1.txt\"", "", "\"sleep 0.3\""),
            packet("p2", "\"out-p2.txt\"", "", "\"sleep 0.3\"")
        ),
    );
    let worker = r#"sleep 1; echo "$ORCHESTRA_PACKET" > "out-$ORCHESTRA_PACKET.txt""#;
    let out = repo.run_plan(&plan, worker, &["--merge"]);
    assert!(out.status.success(), "{}", text(&out));

    let v = status_json(&repo.path);
    let ms = |t: &serde_json::Value, phase: &str| {
        t[phase]
            .as_u64()
            .unwrap_or_else(|| panic!("no {phase} phase in {t}"))
    };
    let mut worker_sum = 0;
    for p in v["packets"].as_array().unwrap() {
        let t = &p["timings"];
        assert!(ms(t, "worker") >= 1000, "the worker slept 1 s: {t}");
        assert!(ms(t, "setup") >= 200, "the setup slept 0.2 s: {t}");
        assert!(
            ms(t, "validation") >= 300,
            "the validation slept 0.3 s: {t}"
        );
        for phase in ["worktree", "commit", "checks", "integration"] {
            ms(t, phase);
        }
        assert!(t.get("review").is_none(), "no reviewer is configured: {t}");
        worker_sum += ms(t, "worker");
    }
    assert_eq!(ms(&v["phase_totals"], "worker"), worker_sum);

    let plain = orchestra(&repo.path, &["status"]);
    assert!(!text(&plain).contains("timings"), "{}", text(&plain));
    let shown = orchestra(&repo.path, &["status", "--timings"]);
    assert!(shown.status.success(), "{}", text(&shown));
    let shown = text(&shown);
    for id in ["p1", "p2"] {
        let line = shown
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{id}  worktree ")))
            .unwrap_or_else(|| panic!("no timings line for {id}:\n{shown}"));
        for phase in [
            "setup",
            "worker",
            "commit",
            "validation",
            "checks",
            "integration",
        ] {
            assert!(
                line.contains(&format!("{phase} ")),
                "{phase} missing: {line}"
            );
        }
    }
    let total = shown
        .lines()
        .find(|l| l.trim_start().starts_with("total  "))
        .unwrap_or_else(|| panic!("no total line:\n{shown}"));
    assert!(
        total.contains(&format!("worker {worker_sum} ms")),
        "{total}"
    );
}

//! A best-of-N packet's candidates work at once, each on ports of its own, within the run's
//! `max_parallel` (one cap for packets and candidates together), and a run killed with several
//! of them in flight resumes to exactly one winner. The plan and worker are `best_of.rs`'s.

use std::time::{Duration, Instant};

use crate::support::*;

use super::best_of::{WORKER as WORK, plan_with};

/// A plan whose `p1` has three candidates and passes only with a 2 in out.txt, and whose `p2`
/// copies what `p1` made (the plan of `best_of.rs`), under `max_parallel`.
fn plan(repo: &TestRepo, max_parallel: u32) -> std::path::PathBuf {
    plan_with(
        repo,
        "attempts = 3\n",
        &format!("max_parallel = {max_parallel}\n"),
    )
}

#[test]
fn three_candidates_sleeping_a_second_and_a_half_each_work_at_the_same_time() {
    let repo = TestRepo::new();
    repo.scratch_writable();
    let plan = plan(&repo, 3);
    let log = repo.scratch().join("times.log");
    let worker = format!(
        r#"if [ "$ORCHESTRA_PACKET" = p1 ]; then s=$(date +%s%N); sleep 1.5; e=$(date +%s%N); echo "c$ORCHESTRA_CANDIDATE $s $e" >> {}; fi; {WORK}"#,
        log.display()
    );
    let out = repo.run_plan(&plan, &worker, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let times = intervals(&log);
    assert_eq!(times.len(), 3, "{times:?}");
    // Each pair of candidates was working at the same moment.
    for a in &times {
        for b in &times {
            assert!(a.1 < b.2 && b.1 < a.2, "not at once: {times:?}");
        }
    }
    let first = times.iter().map(|t| t.1).min().unwrap();
    let last = times.iter().map(|t| t.2).max().unwrap();
    let span = Duration::from_nanos((last - first) as u64);
    assert!(
        span < Duration::from_millis(3000),
        "three candidates of 1.5 s took {span:?}"
    );
    let run = run_id(&repo.path);
    assert_eq!(
        repo.git(&["show", &format!("orchestra/{run}/p2:copy.txt")]),
        "2"
    );
}

#[test]
fn max_parallel_one_works_the_candidates_one_after_another() {
    let repo = TestRepo::new();
    repo.scratch_writable();
    let plan = plan(&repo, 1);
    let log = repo.scratch().join("times.log");
    let worker = format!(
        r#"if [ "$ORCHESTRA_PACKET" = p1 ]; then s=$(date +%s%N); sleep 0.3; e=$(date +%s%N); echo "c$ORCHESTRA_CANDIDATE $s $e" >> {}; fi; {WORK}"#,
        log.display()
    );
    let out = repo.run_plan(&plan, &worker, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let times = intervals(&log);
    assert_eq!(times.len(), 3, "{times:?}");
    for (i, a) in times.iter().enumerate() {
        for b in &times[i + 1..] {
            assert!(!(a.1 < b.2 && b.1 < a.2), "ran together: {times:?}");
        }
    }
}

#[test]
fn kill_9_with_every_candidate_in_flight_then_resume_lands_exactly_one_winner() {
    let repo = TestRepo::new();
    repo.scratch_writable();
    let plan = plan(&repo, 3);
    let root = repo.scratch().join("wt");
    let marks = repo.scratch();
    // Every candidate hangs the first time, half done.
    let worker = format!(
        "if [ \"$ORCHESTRA_PACKET\" = p1 ] && [ ! -f {m}/hung-$ORCHESTRA_CANDIDATE ]; then echo half > out.txt; touch {m}/hung-$ORCHESTRA_CANDIDATE; sleep 30; exit 1; fi; {WORK}",
        m = marks.display()
    );
    let mut child = orchestra_command(
        &repo.path,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            &worker,
            "--worktree-root",
            root.to_str().unwrap(),
        ],
    )
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !(1..=3).all(|k| marks.join(format!("hung-{k}")).exists()) {
        assert!(
            Instant::now() < deadline,
            "the three candidates were never in flight together"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let resumed = orchestra(&repo.path, &["resume"]);
    assert!(resumed.status.success(), "{}", text(&resumed));
    let run = run_id(&repo.path);
    assert_eq!(
        winners(&repo),
        [("p1".to_string(), 2)],
        "exactly one winner"
    );
    assert_eq!(
        repo.git(&["show", &format!("orchestra/{run}/p1:out.txt")]),
        "2"
    );
    assert_eq!(
        repo.git(&["show", &format!("orchestra/{run}/p2:copy.txt")]),
        "2"
    );
    for k in 1..=3 {
        let kept = format!("refs/orchestra/candidates/{run}/p1/c{k}");
        assert_eq!(
            repo.git(&["show", &format!("{kept}:out.txt")]),
            k.to_string()
        );
        // Started again from a clean worktree: the half-done work is not under it.
        assert_eq!(
            repo.git(&["rev-list", "--count", &format!("{kept}^..{kept}")]),
            "1"
        );
    }
    let branches = repo.git(&[
        "for-each-ref",
        "--format=%(refname)",
        &format!("refs/heads/orchestra/{run}/p1."),
    ]);
    assert_eq!(branches, "", "candidate branches are removed");
    assert_eq!(repo.git(&["fsck", "--no-progress"]), "");
}

#[test]
fn candidates_working_at_once_each_read_a_packet_file_naming_their_own_worktree() {
    let repo = TestRepo::new();
    let plan = plan(&repo, 3);
    // Each candidate waits a little so that they overlap, then checks its packet file; the
    // packet's own file must not change under a candidate's watch either.
    let worker = format!(
        r#"if [ "$ORCHESTRA_PACKET" = p1 ]; then sleep 0.5; grep -q "\"worktree\": \"$ORCHESTRA_WORKTREE\"" "$ORCHESTRA_PACKET_FILE" || exit 1; fi; {WORK}"#
    );
    let out = repo.run_plan(&plan, &worker, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let v = status_json(&repo.path);
    let each = v["candidates"][0]["candidates"].as_array().unwrap();
    for c in each {
        let reason = c["reason"].as_str().unwrap();
        assert!(
            !reason.contains("outside its worktree") && !reason.contains("worker"),
            "{v:#}"
        );
    }
    assert_eq!(v["candidates"][0]["winner"], 2, "{v:#}");
}

/// A plan of two independent packets `p1` and `p2` with `attempts` candidates each (one when
/// empty): packet `<p>` passes only with a 2 in `<p>.txt`.
fn two_packets(repo: &TestRepo, attempts: [&str; 2], max_parallel: u32) -> std::path::PathBuf {
    let mut body =
        format!("objective = \"Two packets of candidates\"\nmax_parallel = {max_parallel}\n\n");
    for (id, attempts) in ["p1", "p2"].into_iter().zip(attempts) {
        let file = format!("\"{id}.txt\"");
        let check = format!("\"grep -qx 2 {id}.txt\"");
        body.push_str(
            &packet(id, &file, "", &check)
                .replace("[[packet]]\n", &format!("[[packet]]\n{attempts}")),
        );
    }
    repo.write_plan("plan.toml", &body)
}

/// Packet `<p>`'s worker (candidate k, or 2 when it has none) writes k to `<p>.txt`.
const WRITE_OWN: &str = r#"echo "${ORCHESTRA_CANDIDATE:-2}" > "$ORCHESTRA_PACKET.txt""#;

/// Returns the events `CandidateChosen` of the newest run, as (packet, candidate).
fn winners(repo: &TestRepo) -> Vec<(String, u32)> {
    let run = run_id(&repo.path);
    let store = git_orchestra::store::Store::open(&repo.path.join(".git")).unwrap();
    store
        .events(&run, 0)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.event {
            git_orchestra::store::Event::CandidateChosen {
                packet, candidate, ..
            } => Some((packet, candidate)),
            _ => None,
        })
        .collect()
}

#[test]
fn candidates_working_at_once_each_get_their_own_ports_apart_from_other_packets() {
    let repo = TestRepo::new();
    repo.scratch_writable();
    let plan = two_packets(&repo, ["attempts = 3\n", ""], 3);
    let log = repo.scratch().join("ports.log");
    let worker = format!(
        r#"echo "$ORCHESTRA_PACKET.c${{ORCHESTRA_CANDIDATE:-0}} $ORCHESTRA_PORT_BASE $ORCHESTRA_PORT_COUNT" >> {}; {WRITE_OWN}"#,
        log.display()
    );
    let out = repo.run_plan(&plan, &worker, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let said = std::fs::read_to_string(&log).unwrap();
    let mut ranges: Vec<(String, u32, u32)> = said
        .lines()
        .map(|l| {
            let p: Vec<&str> = l.split(' ').collect();
            let base: u32 = p[1].parse().unwrap();
            (p[0].to_string(), base, base + p[2].parse::<u32>().unwrap())
        })
        .collect();
    ranges.sort();
    let names: Vec<&str> = ranges.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(names, ["p1.c1", "p1.c2", "p1.c3", "p2.c0"], "{said}");
    for (i, a) in ranges.iter().enumerate() {
        assert!(a.2 > a.1, "an empty range: {said}");
        for b in &ranges[i + 1..] {
            assert!(
                a.2 <= b.1 || b.2 <= a.1,
                "{} and {} overlap: {said}",
                a.0,
                b.0
            );
        }
    }
}

#[test]
fn max_parallel_caps_the_workers_of_the_whole_run_candidates_included() {
    let repo = TestRepo::new();
    repo.scratch_writable();
    let plan = two_packets(&repo, ["attempts = 3\n", "attempts = 3\n"], 2);
    let log = repo.scratch().join("times.log");
    let worker = format!(
        r#"s=$(date +%s%N); sleep 0.4; e=$(date +%s%N); echo "$ORCHESTRA_PACKET.c$ORCHESTRA_CANDIDATE $s $e" >> {}; {WRITE_OWN}"#,
        log.display()
    );
    let out = repo.run_plan(&plan, &worker, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let times = intervals(&log);
    assert_eq!(times.len(), 6, "{times:?}");
    // At each worker's start, count the workers running at that moment.
    let most = times
        .iter()
        .map(|a| times.iter().filter(|b| b.1 <= a.1 && a.1 < b.2).count())
        .max()
        .unwrap();
    assert!(
        most <= 2,
        "{most} workers ran at once under max_parallel = 2: {times:?}"
    );
    assert!(
        most == 2,
        "the two slots were never used together: {times:?}"
    );
    let mut won = winners(&repo);
    won.sort();
    assert_eq!(won, [("p1".to_string(), 2), ("p2".to_string(), 2)]);
}

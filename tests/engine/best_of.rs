//! Best-of-N packets: `attempts = N` in the plan or `run --best-of N` works a packet with N
//! candidates, each in its own worktree and branch with ORCHESTRA_CANDIDATE set; the one that
//! passes its validation with the smallest change becomes the packet's work, the others are
//! kept as refs until `gc`, and dependents build on the winner.

use crate::support::*;

/// Candidate k of packet `p1` writes k to out.txt; any other packet copies it.
pub(super) const WORKER: &str = r#"if [ "$ORCHESTRA_PACKET" = p1 ]; then echo "$ORCHESTRA_CANDIDATE" > out.txt; else cp out.txt copy.txt; fi"#;

/// A plan whose `p1` has `attempts` candidates and passes only with a 2 in out.txt, and whose
/// `p2` copies what `p1` made.
fn best_of_plan(repo: &TestRepo, attempts: &str) -> std::path::PathBuf {
    plan_with(repo, attempts, "")
}

/// Like [`best_of_plan`], with the top-level keys `top` (such as `max_parallel = 3\n`) before
/// the packets.
pub(super) fn plan_with(repo: &TestRepo, attempts: &str, top: &str) -> std::path::PathBuf {
    let p1 = packet("p1", "\"out.txt\"", "", "\"grep -qx 2 out.txt\"")
        .replace("[[packet]]\n", &format!("[[packet]]\n{attempts}"));
    let body = format!(
        "objective = \"Pick the right one\"\n{top}\n{p1}{}",
        packet("p2", "\"copy.txt\"", "\"p1\"", "\"grep -qx 2 copy.txt\"")
    );
    repo.write_plan("plan.toml", &body)
}

/// Returns the refs whose names start with `prefix`.
fn refs(repo: &TestRepo, prefix: &str) -> Vec<String> {
    repo.git(&["for-each-ref", "--format=%(refname)", prefix])
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn only_candidate_2_of_3_passes_validation_so_it_wins_and_the_dependent_builds_on_it() {
    let repo = TestRepo::new();
    let plan = best_of_plan(&repo, "attempts = 3\n");
    let out = repo.run_plan(&plan, WORKER, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    assert_eq!(
        repo.git(&["show", &format!("orchestra/{run}/p1:out.txt")]),
        "2"
    );
    assert_eq!(
        repo.git(&["show", &format!("orchestra/{run}/p2:copy.txt")]),
        "2",
        "the dependent starts from the winner"
    );
    // Every candidate's work is kept under its ref; the candidates' branches are gone.
    for k in 1..=3 {
        let name = format!("refs/orchestra/candidates/{run}/p1/c{k}");
        assert_eq!(
            repo.git(&["show", &format!("{name}:out.txt")]),
            k.to_string()
        );
    }
    assert!(
        refs(&repo, &format!("refs/heads/orchestra/{run}/p1.")).is_empty(),
        "candidate branches are removed once the choice is made"
    );
    // The journal says why the winner won and what the others came to.
    let store = git_orchestra::store::Store::open(&repo.path.join(".git")).unwrap();
    let events = store.events(&run, 0).unwrap();
    let chosen: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.event {
            git_orchestra::store::Event::CandidateChosen {
                candidate, reasons, ..
            } => Some((*candidate, reasons.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(chosen.len(), 1, "{chosen:?}");
    assert_eq!(chosen[0].0, 2);
    assert!(
        chosen[0].1.contains("the only one that did"),
        "{}",
        chosen[0].1
    );
    assert!(
        chosen[0]
            .1
            .contains("candidate 1: validation `grep -qx 2 out.txt` failed"),
        "{}",
        chosen[0].1
    );

    // The verdicts on the winner keep why it was chosen.
    let note = repo.git(&[
        "notes",
        "--ref=refs/notes/orchestra/review",
        "show",
        &format!("orchestra/{run}/p1"),
    ]);
    assert!(note.contains("candidate 2 of 3 chosen"), "{note}");

    // `status` and `status --json` show the candidates and why the winner won.
    let v = status_json(&repo.path);
    let shown = &v["candidates"][0];
    assert_eq!(shown["packet"], "p1", "{v:#}");
    assert_eq!(shown["winner"], 2, "{v:#}");
    let each = shown["candidates"].as_array().unwrap();
    assert_eq!(each.len(), 3, "{v:#}");
    let passed: Vec<bool> = each
        .iter()
        .map(|c| c["passed"].as_bool().unwrap())
        .collect();
    assert_eq!(passed, [false, true, false]);
    assert!(
        shown["reasons"]
            .as_str()
            .unwrap()
            .contains("the only one that did")
    );
    let status = text(&orchestra(&repo.path, &["status"]));
    assert!(status.contains("p1: candidate 2 of 3 won"), "{status}");
    assert!(
        status.contains("c1: validation `grep -qx 2 out.txt` failed"),
        "{status}"
    );
    assert!(status.contains("c2: passed, 1 changed line\n"), "{status}");

    // `gc` removes the kept candidates with the run's other refs.
    let gc = orchestra(&repo.path, &["gc"]);
    assert!(gc.status.success(), "{}", text(&gc));
    assert!(
        refs(&repo, "refs/orchestra/candidates/").is_empty(),
        "{:?}",
        refs(&repo, "refs/orchestra/candidates/")
    );
}

#[test]
fn best_of_on_the_command_line_prefers_the_smaller_of_two_passing_changes() {
    let repo = TestRepo::new();
    let body = format!(
        "objective = \"Smallest wins\"\n\n{}",
        packet("p1", "\"out.txt\"", "", "\"test -s out.txt\"")
    );
    let plan = repo.write_plan("plan.toml", &body);
    // Candidate 1 writes three lines, candidate 2 one: both pass.
    let worker = r#"if [ "$ORCHESTRA_CANDIDATE" = 1 ]; then printf 'a\nb\nc\n' > out.txt; else echo a > out.txt; fi"#;
    let out = repo.run_plan(&plan, worker, &["--best-of", "2"]);
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    assert_eq!(
        repo.git(&["show", &format!("orchestra/{run}/p1:out.txt")]),
        "a"
    );
    assert_eq!(
        refs(&repo, &format!("refs/orchestra/candidates/{run}/p1/")).len(),
        2
    );
}

#[test]
fn a_packet_none_of_whose_candidates_pass_fails_with_each_ones_reason() {
    let repo = TestRepo::new();
    let body = format!(
        "objective = \"None pass\"\n\n{}",
        packet("p1", "\"out.txt\"", "", "\"grep -qx 9 out.txt\"")
    );
    let plan = repo.write_plan("plan.toml", &body);
    let out = repo.run_plan(&plan, WORKER, &["--best-of", "2"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let v = status_json(&repo.path);
    let reason = v["packets"][0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("none of its 2 candidates passed"),
        "{reason}"
    );
    assert!(reason.contains("candidate 1: validation"), "{reason}");
    assert!(reason.contains("candidate 2: validation"), "{reason}");
    // Their work is kept all the same.
    let run = run_id(&repo.path);
    assert_eq!(
        refs(&repo, &format!("refs/orchestra/candidates/{run}/p1/")).len(),
        2
    );
}

#[test]
fn attempts_outside_one_to_eight_is_refused_with_its_line() {
    let repo = TestRepo::new();
    let plan = best_of_plan(&repo, "attempts = 9\n");
    let out = repo.run_plan(&plan, WORKER, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let said = text(&out);
    assert!(said.contains("attempts = 9 is outside 1 to 8"), "{said}");
    assert!(said.contains("plan.toml:4"), "{said}");
    let flag = repo.run_plan(&plan, WORKER, &["--best-of", "0"]);
    assert!(!flag.status.success(), "{}", text(&flag));
}

#[test]
fn a_crash_after_any_event_of_the_candidates_resumes_without_running_ended_ones_again() {
    // Count the events of an uninterrupted run first.
    let probe = TestRepo::new();
    let plan = best_of_plan(&probe, "attempts = 3\n");
    assert!(probe.run_plan(&plan, WORKER, &[]).status.success());
    let run = run_id(&probe.path);
    let store = git_orchestra::store::Store::open(&probe.path.join(".git")).unwrap();
    // The crash points: the engine's events (all but `run_created`) from the first
    // candidate's start to the choice, every third one.
    let kinds: Vec<&str> = store.events(&run, 0).unwrap()[1..]
        .iter()
        .map(|e| e.event.kind())
        .collect();
    let first = kinds
        .iter()
        .position(|k| *k == "candidate_started")
        .unwrap();
    let chosen = kinds.iter().position(|k| *k == "candidate_chosen").unwrap();

    for n in (first + 1..=chosen + 1).step_by(3) {
        let repo = TestRepo::new();
        repo.scratch_writable();
        let plan = best_of_plan(&repo, "attempts = 3\n");
        let counter = repo.scratch().join("runs.txt");
        let worker = format!(
            "echo \"$ORCHESTRA_PACKET $ORCHESTRA_CANDIDATE\" >> {}; {WORKER}",
            counter.display()
        );
        let root = repo.scratch().join("wt");
        let n_text = n.to_string();
        let args = [
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            &worker,
            "--worktree-root",
            root.to_str().unwrap(),
        ];
        let out = orchestra_with_env(
            &repo.path,
            &args,
            &[("ORCHESTRA_CRASH_AFTER_EVENTS", &n_text)],
        );
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            out.status.signal(),
            Some(9),
            "crash point {n}: {}",
            text(&out)
        );
        let resumed = orchestra(&repo.path, &["resume"]);
        assert!(
            resumed.status.success(),
            "crash point {n}: {}",
            text(&resumed)
        );
        let run = run_id(&repo.path);
        assert_eq!(
            repo.git(&["show", &format!("orchestra/{run}/p2:copy.txt")]),
            "2",
            "crash point {n}"
        );
        for k in 1..=3 {
            let name = format!("refs/orchestra/candidates/{run}/p1/c{k}");
            assert_eq!(
                repo.git(&["show", &format!("{name}:out.txt")]),
                k.to_string()
            );
        }
        assert!(refs(&repo, &format!("refs/heads/orchestra/{run}/p1.")).is_empty());
        // A candidate that ended is not run again; only those the crash cut short are (the
        // candidates work at once, so several may have been in flight).
        let runs = std::fs::read_to_string(&counter).unwrap();
        for k in 1..=3 {
            let of_k = runs.lines().filter(|l| *l == format!("p1 {k}")).count();
            assert!((1..=2).contains(&of_k), "crash point {n}: {runs}");
        }
    }
}

#[test]
fn locks_a_killed_run_left_beside_a_candidates_branch_and_ref_do_not_stop_the_resume() {
    let repo = TestRepo::new();
    repo.scratch_writable();
    let plan = best_of_plan(&repo, "attempts = 3\n");
    let root = repo.scratch().join("wt");
    let args = [
        "run",
        plan.to_str().unwrap(),
        "--worker-cmd",
        WORKER,
        "--worktree-root",
        root.to_str().unwrap(),
    ];
    // Killed right after the run started, before any candidate made its branch.
    let out = orchestra_with_env(&repo.path, &args, &[("ORCHESTRA_CRASH_AFTER_EVENTS", "2")]);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(9), "{}", text(&out));
    let run = run_id(&repo.path);
    // What a process killed while creating candidate 3's branch leaves: the ref's lock file.
    let heads = repo.path.join(format!(".git/refs/heads/orchestra/{run}"));
    std::fs::create_dir_all(&heads).unwrap();
    std::fs::write(heads.join("p1.c3.lock"), "").unwrap();
    // And one killed while keeping candidate 1's commit under its ref.
    let kept = repo
        .path
        .join(format!(".git/refs/orchestra/candidates/{run}/p1"));
    std::fs::create_dir_all(&kept).unwrap();
    std::fs::write(kept.join("c1.lock"), "").unwrap();

    let resumed = orchestra(&repo.path, &["resume"]);
    assert!(resumed.status.success(), "{}", text(&resumed));
    assert_eq!(
        repo.git(&["show", &format!("orchestra/{run}/p2:copy.txt")]),
        "2"
    );
    assert_eq!(
        repo.git(&[
            "show",
            &format!("refs/orchestra/candidates/{run}/p1/c3:out.txt")
        ]),
        "3"
    );
    assert!(refs(&repo, &format!("refs/heads/orchestra/{run}/p1.")).is_empty());
    assert!(!heads.join("p1.c3.lock").exists(), "the stale lock is gone");
    assert!(!kept.join("c1.lock").exists(), "the stale lock is gone");
}

#[test]
fn the_per_packet_budget_caps_the_candidates_and_says_why() {
    let repo = TestRepo::new();
    // Without history a candidate is forecast at up to 400k tokens: 900k fit two of three.
    repo.write(
        ".orchestra/config.toml",
        "[best_of]\npacket_tokens = 900000\n",
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "config"]);
    let plan = best_of_plan(&repo, "attempts = 3\n");
    let worker =
        r#"if [ "$ORCHESTRA_PACKET" = p1 ]; then echo 2 > out.txt; else cp out.txt copy.txt; fi"#;
    let out = repo.run_plan(&plan, worker, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("packet `p1`: best of 3 capped to 2: each candidate is forecast to use up to 400.0k tokens and [best_of] packet_tokens is 900.0k"),
        "{said}"
    );
    let run = run_id(&repo.path);
    assert_eq!(
        refs(&repo, &format!("refs/orchestra/candidates/{run}/p1/")).len(),
        2
    );
}

#[test]
fn candidates_on_another_executor_are_refused_before_anything_changes() {
    let repo = TestRepo::new();
    repo.write(
        ".orchestra/config.toml",
        "[executor.ssh]\nhosts = [\"h1\"]\n",
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "config"]);
    repo.trust();
    let plan = best_of_plan(&repo, "attempts = 3\n");
    let before = refs(&repo, "refs/");
    let out = repo.run_plan(&plan, WORKER, &["--executor", "ssh"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("packet `p1` asks for 3 candidates, but candidates run only on the local executor, not ssh"),
        "{said}"
    );
    assert!(said.contains("--executor local"), "{said}");
    assert_eq!(refs(&repo, "refs/"), before);
}

#[test]
fn kill_9_while_a_candidate_works_then_resume_stops_it_and_runs_it_again_cleanly() {
    use std::time::{Duration, Instant};
    let repo = TestRepo::new();
    repo.scratch_writable();
    let plan = best_of_plan(&repo, "attempts = 3\n");
    let root = repo.scratch().join("wt");
    let marker = repo.scratch().join("hung");
    let alive = repo.scratch().join("alive");
    // Candidate 2 hangs the first time, half done, and would write `alive` if it ever woke.
    let worker = format!(
        "if [ \"$ORCHESTRA_CANDIDATE\" = 2 ] && [ ! -f {m} ]; then echo half > out.txt; touch {m}; sleep 5; touch {a}; exit 1; fi; {WORKER}",
        m = marker.display(),
        a = alive.display()
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
    let deadline = Instant::now() + Duration::from_secs(30);
    while !marker.exists() {
        assert!(Instant::now() < deadline, "candidate 2 never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let resumed = orchestra(&repo.path, &["resume"]);
    assert!(resumed.status.success(), "{}", text(&resumed));
    let run = run_id(&repo.path);
    assert_eq!(
        repo.git(&["show", &format!("orchestra/{run}/p2:copy.txt")]),
        "2"
    );
    let kept = format!("refs/orchestra/candidates/{run}/p1/c2");
    assert_eq!(repo.git(&["show", &format!("{kept}:out.txt")]), "2");
    assert_eq!(
        repo.git(&["rev-list", "--count", &format!("{kept}^..{kept}")]),
        "1"
    );
    // The killed run's candidate does not outlive it.
    std::thread::sleep(Duration::from_secs(6));
    assert!(!alive.exists(), "the killed run's candidate kept running");
    assert_eq!(repo.git(&["fsck", "--no-progress"]), "");
}

#[test]
fn a_retried_best_of_packets_candidates_get_the_retry_note() {
    let repo = TestRepo::new();
    let body = format!(
        "objective = \"Retry with a note\"\n\n{}",
        packet("p1", "\"out.txt\"", "", "\"grep -q nine out.txt\"")
    );
    let plan = repo.write_plan("plan.toml", &body);
    // Each candidate writes what the retry note says, when it is given one.
    let worker = r#"if [ -n "$ORCHESTRA_FIXES_FILE" ]; then cat "$ORCHESTRA_FIXES_FILE" > out.txt; else echo "$ORCHESTRA_CANDIDATE" > out.txt; fi"#;
    let out = repo.run_plan(&plan, worker, &["--best-of", "2"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let out = orchestra(&repo.path, &["retry", "--note", "write nine"]);
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    let got = repo.git(&["show", &format!("orchestra/{run}/p1:out.txt")]);
    assert!(got.contains("write nine"), "{got}");
}

//! `git orchestra run / status / resume`: packets in worktrees, scope enforcement, overlap
//! serialization, deterministic names, crash safety and interrupts.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::support::*;

/// A worker that writes one file named after its packet, plus the environment it saw.
const WORKER: &str = r#"printf '%s %s %s\n' "$ORCHESTRA_RUN" "$ORCHESTRA_PORT_BASE" "$(test -f "$ORCHESTRA_PACKET_FILE" && echo file)" > "out-$ORCHESTRA_PACKET.txt""#;

fn packet_states(v: &serde_json::Value) -> Vec<(String, String)> {
    v["packets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["id"].as_str().unwrap().to_string(),
                p["state"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn three_packet_plan(repo: &TestRepo) -> PathBuf {
    let body = format!(
        "objective = \"Write outputs\"\n\n{}{}{}",
        packet("p1-a", "\"out-p1-a.txt\"", "", "\"test -f out-p1-a.txt\""),
        packet("p2-b", "\"out-p2-b.txt\"", "", "\"test -f out-p2-b.txt\""),
        packet(
            "p3-c",
            "\"out-p3-c.txt\"",
            "\"p1-a\", \"p2-b\"",
            "\"test -f out-p3-c.txt\""
        ),
    );
    repo.write_plan("plan.toml", &body)
}

/// Arguments that run `plan` with `worker`, worktrees under `root`.
fn run_args<'a>(plan: &'a str, worker: &'a str, root: &'a str) -> Vec<&'a str> {
    vec!["run", plan, "--worker-cmd", worker, "--worktree-root", root]
}

/// Writes `plan.toml` of `objective` with one packet `p1` owning `files` (a TOML list's
/// items), with no validation; returns its path.
fn p1_plan(repo: &TestRepo, objective: &str, files: &str) -> PathBuf {
    repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"{objective}\"\n\n{}",
            packet("p1", files, "", "")
        ),
    )
}

/// Returns the command running `plan` with `worker`, worktrees under the scratch directory's
/// `wt`.
fn run_command(repo: &TestRepo, plan: &Path, worker: &str) -> std::process::Command {
    let root = repo.scratch().join("wt");
    orchestra_command(
        &repo.path,
        &run_args(plan.to_str().unwrap(), worker, root.to_str().unwrap()),
    )
}

/// Waits up to 20 s for the worker to create `marker`.
fn wait_for_start(marker: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !marker.exists() {
        assert!(Instant::now() < deadline, "worker never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn run_executes_every_packet_on_its_own_branch_and_worktree() {
    let repo = TestRepo::new();
    let plan = three_packet_plan(&repo);
    let root = repo.scratch().join("wt");
    let out = run_command(&repo, &plan, WORKER).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));

    let v = status_json(&repo.path);
    assert_eq!(v["run"]["state"], "completed");
    let run = v["run"]["id"].as_str().unwrap().to_string();
    assert!(run.starts_with("write-outputs-"), "{run}");
    for (id, state) in packet_states(&v) {
        assert_eq!(state, "succeeded", "{id}");
        let branch = format!("orchestra/{run}/{id}");
        // The engine committed on the worker's behalf, with trailers and its own identity.
        let msg = repo.git(&["log", "-1", "--format=%an|%B", &branch]);
        assert!(
            msg.starts_with(&format!("git-orchestra|Packet {id}")),
            "{msg}"
        );
        assert!(msg.contains(&format!("Orchestra-Run: {run}")), "{msg}");
        assert!(msg.contains(&format!("Orchestra-Packet: {id}")), "{msg}");
        assert!(msg.contains("Orchestra-Role: coder"), "{msg}");
        let start = v["packets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["id"] == id.as_str())
            .unwrap()["start"]
            .as_str()
            .unwrap()
            .to_string();
        let changed = repo.git(&["diff", "--name-only", &start, &branch]);
        assert_eq!(changed, format!("out-{id}.txt"));
        // The worker saw its run, a port base and the packet file.
        let content = repo.git(&["show", &format!("{branch}:out-{id}.txt")]);
        let parts: Vec<&str> = content.split(' ').collect();
        assert_eq!(parts[0], run);
        assert!(parts[1].parse::<u16>().unwrap() >= 20_000);
        assert_eq!(parts[2], "file");
        let wt = root.join(&run).join(&id);
        assert!(wt.join(format!("out-{id}.txt")).exists());
    }
    // A packet starts from its dependencies' merged work: p3-c sees both outputs.
    let p3 = root.join(&run).join("p3-c");
    assert!(p3.join("out-p1-a.txt").exists() && p3.join("out-p2-b.txt").exists());
    let parents = repo.git(&[
        "rev-list",
        "--parents",
        "-n",
        "1",
        &format!("orchestra/{run}/p3-c~1"),
    ]);
    assert_eq!(
        parents.split(' ').count(),
        3,
        "p3-c should start at a merge of p1-a and p2-b"
    );
    let list = repo.git(&["worktree", "list", "--porcelain"]);
    assert_eq!(
        list.matches("branch refs/heads/orchestra/").count(),
        3,
        "{list}"
    );
    // The main working tree is untouched.
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    assert!(!repo.path.join("out-p1-a.txt").exists());
    assert_eq!(repo.git(&["fsck", "--no-progress"]), "");

    // Running the same plan again finds the finished run instead of duplicating it.
    let again = run_command(&repo, &plan, WORKER).output().unwrap();
    assert!(again.status.success(), "{}", text(&again));
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("already completed"),
        "{}",
        text(&again)
    );
    assert_eq!(
        status_json(&repo.path)["other_runs"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
}

#[test]
fn changes_outside_the_declared_scope_fail_the_packet_and_skip_dependents() {
    let repo = TestRepo::new();
    let body = format!(
        "objective = \"Scope\"\n\n{}{}{}",
        packet("p1-a", "\"out-p1-a.txt\"", "", ""),
        packet("p2-b", "\"out-p2-b.txt\"", "", ""),
        packet("p3-c", "\"out-p3-c.txt\"", "\"p1-a\"", ""),
    );
    let plan = repo.write_plan("plan.toml", &body);
    // p1-a also touches README.md, outside its scope.
    let worker = r#"echo x > "out-$ORCHESTRA_PACKET.txt"; if [ "$ORCHESTRA_PACKET" = p1-a ]; then echo changed >> README.md; fi"#;
    let out = repo.run_plan(&plan, worker, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let v = status_json(&repo.path);
    assert_eq!(v["run"]["state"], "failed");
    let states = packet_states(&v);
    assert_eq!(states[0].1, "failed");
    assert_eq!(states[1].1, "succeeded");
    assert_eq!(states[2].1, "skipped");
    let reason = v["packets"][0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("outside the packet's declared scope: README.md"),
        "{reason}"
    );
    let skip = v["packets"][2]["reason"].as_str().unwrap();
    assert!(skip.contains("p1-a"), "{skip}");
    // The offending work is kept on the branch, not thrown away.
    let run = v["run"]["id"].as_str().unwrap();
    let readme = repo.git(&["show", &format!("orchestra/{run}/p1-a:README.md")]);
    assert!(readme.contains("changed"));
}

#[test]
fn failing_worker_and_failing_validation_are_reported_with_their_output() {
    let repo = TestRepo::new();
    let body = format!(
        "objective = \"Failures\"\n\n{}{}",
        packet("p1-worker", "\"out-p1-worker.txt\"", "", ""),
        packet(
            "p2-check",
            "\"out-p2-check.txt\"",
            "",
            "\"echo checking; exit 4\""
        ),
    );
    let plan = repo.write_plan("plan.toml", &body);
    let worker = r#"echo x > "out-$ORCHESTRA_PACKET.txt"; if [ "$ORCHESTRA_PACKET" = p1-worker ]; then echo "model quota exceeded" >&2; exit 3; fi"#;
    let out = repo.run_plan(&plan, worker, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let v = status_json(&repo.path);
    let r0 = v["packets"][0]["reason"].as_str().unwrap();
    assert!(
        r0.contains("worker failed (exit 3)") && r0.contains("model quota exceeded"),
        "{r0}"
    );
    let r1 = v["packets"][1]["reason"].as_str().unwrap();
    assert!(
        r1.contains("validation `echo checking; exit 4` failed (exit 4)")
            && r1.contains("checking"),
        "{r1}"
    );
}

#[test]
fn a_worker_that_runs_too_long_times_out() {
    let repo = TestRepo::new();
    // A timeout may pass on another try: one quick retry, so it is tried twice in all.
    repo.write(
        ".orchestra/config.toml",
        "[run]\nretries = 1\nretry_delay_ms = 10\n",
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "config"]);
    let plan = p1_plan(&repo, "Slow", "\"a.txt\"");
    let root = repo.scratch().join("wt");
    let started = Instant::now();
    let out = orchestra(
        &repo.path,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            "sleep 30",
            "--timeout",
            "1",
            "--worktree-root",
            root.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(started.elapsed() < Duration::from_secs(15));
    let v = status_json(&repo.path);
    assert!(
        v["packets"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("timed out after 1s")
    );
    let reason = v["packets"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("(tried 2 times)"), "{reason}");
}

/// Reads `start end` nanosecond pairs written by the timing worker, keyed by packet.
#[test]
fn overlapping_packets_never_run_at_the_same_time_but_disjoint_ones_do() {
    let repo = TestRepo::new();
    repo.scratch_writable();
    // The timing worker changes no file, which these packets declare they may do.
    let body = format!(
        "objective = \"Overlap\"\nmax_parallel = 4\n\n{}{}{}",
        packet("p1-a", "\"src/*.rs\"", "", ""),
        packet("p2-b", "\"src/parser.rs\"", "", ""),
        packet("p3-c", "\"docs/**\"", "", ""),
    )
    .replace(
        "validation = []\n",
        "validation = []\nmay_be_empty = true\n",
    );
    let plan = repo.write_plan("plan.toml", &body);
    let log = repo.scratch().join("times.log");
    let worker = format!(
        r#"s=$(date +%s%N); sleep 0.6; e=$(date +%s%N); echo "$ORCHESTRA_PACKET $s $e" >> {}"#,
        log.display()
    );
    let out = repo.run_plan(&plan, &worker, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let times = intervals(&log);
    let get = |id: &str| times.iter().find(|t| t.0 == id).unwrap().clone();
    let (a, b, c) = (get("p1-a"), get("p2-b"), get("p3-c"));
    let overlap = |x: &(String, u128, u128), y: &(String, u128, u128)| x.1 < y.2 && y.1 < x.2;
    assert!(
        !overlap(&a, &b),
        "overlapping scopes ran together: {a:?} {b:?}"
    );
    assert!(
        overlap(&a, &c) || overlap(&b, &c),
        "disjoint packets did not run in parallel: {times:?}"
    );
}

#[test]
fn names_are_deterministic_across_clones() {
    let origin = TestRepo::new();
    let plan = three_packet_plan(&origin);
    let mut seen = Vec::new();
    for name in ["clone-a", "clone-b"] {
        let dir = origin.scratch().join(name);
        git(
            origin.tmp.path(),
            &[
                "clone",
                "-q",
                origin.path.to_str().unwrap(),
                dir.to_str().unwrap(),
            ],
        );
        let root = origin.scratch().join(format!("{name}-wt"));
        let out = orchestra(
            &dir,
            &run_args(plan.to_str().unwrap(), WORKER, root.to_str().unwrap()),
        );
        assert!(out.status.success(), "{}", text(&out));
        let run = run_id(&dir);
        let branches = git(
            &dir,
            &[
                "for-each-ref",
                "--format=%(refname)",
                "refs/heads/orchestra",
            ],
        );
        let mut dirs: Vec<String> = std::fs::read_dir(root.join(&run))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        dirs.sort();
        seen.push((run, branches, dirs));
    }
    assert_eq!(seen[0], seen[1]);
    assert_eq!(seen[0].2, vec!["p1-a", "p2-b", "p3-c"]);
}

/// Asserts the run completed with every packet's single commit on its branch and git intact.
fn assert_completed_once(repo: &TestRepo) {
    let v = status_json(&repo.path);
    assert_eq!(v["run"]["state"], "completed", "{v:#}");
    let run = v["run"]["id"].as_str().unwrap();
    for (i, (id, state)) in packet_states(&v).into_iter().enumerate() {
        assert_eq!(state, "succeeded");
        let start = v["packets"][i]["start"].as_str().unwrap();
        let count = repo.git(&[
            "rev-list",
            "--count",
            &format!("{start}..orchestra/{run}/{id}"),
        ]);
        assert_eq!(count, "1", "packet {id} should have exactly one commit");
        assert_eq!(
            repo.git(&["show", &format!("orchestra/{run}/{id}:out-{id}.txt")])
                .split(' ')
                .next(),
            Some(run)
        );
    }
    assert_eq!(repo.git(&["fsck", "--no-progress"]), "");
}

#[test]
fn a_crash_after_any_journaled_event_is_resumed_to_completion() {
    // First count the events of an uninterrupted run.
    let probe = TestRepo::new();
    let plan = three_packet_plan(&probe);
    let out = run_command(&probe, &plan, WORKER).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&probe.path);
    let store = git_orchestra::store::Store::open(&probe.path.join(".git")).unwrap();
    // The journal minus `run_created`, which is written with the run, not by the engine.
    let total = store.events(&run, 0).unwrap().len() - 1;
    assert!(
        total >= 20,
        "expected a detailed journal, got {total} events"
    );

    // Then kill the process right after each of them in turn (the first event is journaled
    // before any work) and resume.
    for n in 1..total {
        let repo = TestRepo::new();
        let plan = three_packet_plan(&repo);
        let root = repo.scratch().join("wt");
        let n_text = n.to_string();
        let out = orchestra_with_env(
            &repo.path,
            &run_args(plan.to_str().unwrap(), WORKER, root.to_str().unwrap()),
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
        assert_completed_once(&repo);
    }
}

#[test]
fn kill_9_while_a_worker_runs_then_resume_keeps_its_partial_work() {
    let repo = TestRepo::new();
    let plan = p1_plan(&repo, "Kill", "\"part1.txt\", \"part2.txt\"");
    let root = repo.scratch().join("wt");
    // First attempt writes part1 and hangs; the second sees part1 and finishes.
    let worker =
        "if [ -f part1.txt ]; then echo two > part2.txt; else echo one > part1.txt; sleep 60; fi";
    let mut child = run_command(&repo, &plan, worker)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let part1 = std::fs::read_dir(&root)
        .ok()
        .and_then(|mut d| d.next())
        .map(|e| e.unwrap().path().join("p1/part1.txt"));
    let mut part1 = part1;
    while part1.as_ref().is_none_or(|p| !p.exists()) {
        assert!(Instant::now() < deadline, "worker never started");
        std::thread::sleep(Duration::from_millis(50));
        part1 = std::fs::read_dir(&root)
            .ok()
            .and_then(|mut d| d.next())
            .map(|e| e.unwrap().path().join("p1/part1.txt"));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let resumed = orchestra(&repo.path, &["resume"]);
    assert!(resumed.status.success(), "{}", text(&resumed));
    let v = status_json(&repo.path);
    let run = v["run"]["id"].as_str().unwrap();
    let files = repo.git(&[
        "diff",
        "--name-only",
        "main",
        &format!("orchestra/{run}/p1"),
    ]);
    assert_eq!(files, "part1.txt\npart2.txt");
    assert_eq!(repo.git(&["fsck", "--no-progress"]), "");
}

#[test]
fn ctrl_c_stops_workers_and_leaves_a_resumable_run() {
    let repo = TestRepo::new();
    repo.scratch_writable();
    let plan = p1_plan(&repo, "Interrupt", "\"done.txt\"");
    let marker = repo.scratch().join("started");
    let worker = format!(
        "if [ -f {m} ]; then echo ok > done.txt; else touch {m}; sleep 60; fi",
        m = marker.display()
    );
    let mut child = run_command(&repo, &plan, &worker)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_start(&marker);
    let started = Instant::now();
    // SAFETY: signals our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(started.elapsed() < Duration::from_secs(10));
    let v = status_json(&repo.path);
    assert_eq!(v["run"]["state"], "interrupted");
    assert_eq!(v["packets"][0]["state"], "interrupted");
    let resumed = orchestra(&repo.path, &["resume"]);
    assert!(resumed.status.success(), "{}", text(&resumed));
    assert_eq!(status_json(&repo.path)["run"]["state"], "completed");
}

#[test]
fn gc_saves_unsaved_work_before_removing_worktrees() {
    let repo = TestRepo::new();
    let plan = three_packet_plan(&repo);
    let root = repo.scratch().join("wt");
    let out = run_command(&repo, &plan, WORKER).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    let wt = root.join(&run).join("p1-a");
    std::fs::write(wt.join("README.md"), "edited after the run\n").unwrap();
    std::fs::write(wt.join("notes.txt"), "untracked notes\n").unwrap();

    let before = refs(&repo.path);
    let dry = orchestra(&repo.path, &["gc", "--dry-run"]);
    assert!(dry.status.success(), "{}", text(&dry));
    let dry_text = String::from_utf8_lossy(&dry.stdout);
    assert!(
        dry_text.contains("would remove worktree") && dry_text.contains("would free"),
        "{dry_text}"
    );
    assert!(wt.exists());
    assert_eq!(refs(&repo.path), before, "a dry run changed refs");

    let out = orchestra(&repo.path, &["gc"]);
    assert!(out.status.success(), "{}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains(&format!("refs/orchestra/backup/{run}/p1-a")),
        "{shown}"
    );
    assert!(!wt.exists());
    let backup = format!("refs/orchestra/backup/{run}/p1-a");
    assert_eq!(
        repo.git(&["show", &format!("{backup}:README.md")]),
        "edited after the run"
    );
    assert_eq!(
        repo.git(&["show", &format!("{backup}:notes.txt")]),
        "untracked notes"
    );
    // Unmerged packet branches are kept, with a reason.
    assert!(shown.contains("kept branch"), "{shown}");
    assert!(
        repo.git(&["branch", "--list", "orchestra/*"])
            .contains("p1-a")
    );
    assert!(!repo.git(&["worktree", "list"]).contains(&run));
    assert_eq!(repo.git(&["fsck", "--no-progress"]), "");
}

/// Regression: after gc, `status` still said a failed packet's work "stays in" its removed
/// worktree, and the run's emptied worktree directory was left behind.
#[test]
fn after_gc_status_says_where_a_failed_packets_work_is_and_the_run_directory_is_gone() {
    let repo = TestRepo::new();
    let body = format!(
        "objective = \"Fail halfway\"\n\n{}",
        packet("p1", "\"wip.txt\"", "", "")
    );
    let plan = repo.write_plan("plan.toml", &body);
    let root = repo.scratch().join("wt");
    let out = orchestra(
        &repo.path,
        &run_args(
            plan.to_str().unwrap(),
            "echo half-done > wip.txt; exit 3",
            root.to_str().unwrap(),
        ),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let run = run_id(&repo.path);
    let wt = root.join(&run).join("p1");
    let reason = status_json(&repo.path)["packets"][0]["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        reason.contains(&format!("its work stays in {}", wt.display())),
        "{reason}"
    );

    let out = orchestra(&repo.path, &["gc"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!wt.exists());
    assert!(
        !root.join(&run).exists(),
        "the emptied run directory is left"
    );
    assert!(root.exists(), "gc removed the worktree root itself");
    let backup = format!("refs/orchestra/backup/{run}/p1");
    assert_eq!(
        repo.git(&["show", &format!("{backup}:wip.txt")]),
        "half-done"
    );
    let shown = orchestra(&repo.path, &["status"]);
    let shown = String::from_utf8_lossy(&shown.stdout).to_string();
    let line = shown
        .lines()
        .find(|l| l.starts_with("p1 "))
        .unwrap_or_else(|| panic!("no p1 line: {shown}"));
    assert!(!line.contains("stays in"), "{line}");
    assert!(
        line.contains(&format!("its worktree {} was removed by gc", wt.display())),
        "{line}"
    );
    assert!(
        line.contains(&format!("its uncommitted files are saved in {backup}")),
        "{line}"
    );
}

#[test]
fn cancel_saves_in_progress_work() {
    let repo = TestRepo::new();
    let plan = p1_plan(&repo, "Cancel me", "\"wip.txt\"");
    let root = repo.scratch().join("wt");
    let worker = "echo half-done > wip.txt; exit 0";
    // Crash right after the worker finished, before its commit: the work sits uncommitted.
    let out = orchestra_with_env(
        &repo.path,
        &run_args(plan.to_str().unwrap(), worker, root.to_str().unwrap()),
        &[("ORCHESTRA_CRASH_AFTER_EVENTS", "6")],
    );
    assert!(!out.status.success());
    let out = orchestra(&repo.path, &["cancel"]);
    assert!(out.status.success(), "{}", text(&out));
    let v = status_json(&repo.path);
    assert_eq!(v["run"]["state"], "cancelled");
    let run = v["run"]["id"].as_str().unwrap();
    assert_eq!(
        repo.git(&["show", &format!("refs/orchestra/backup/{run}/p1:wip.txt")]),
        "half-done"
    );
}

/// Returns true if and only if process `pid` runs (a zombie does not).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit(')').next().map(|r| r.trim_start().to_string()))
        .is_some_and(|r| !r.starts_with('Z'))
}

/// Waits up to 10 s for process `pid` to end, failing with `what` otherwise.
fn assert_dies(pid: i32, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(pid) {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs a one-packet plan, unconfined, whose worker leaves a background child, kills the
/// engine with SIGKILL once the child runs and returns the child's pid.
fn crash_leaving_a_workers_child(repo: &TestRepo) -> i32 {
    // Unconfined, a worker's background child outlives a killed engine (the sandbox's
    // supervisor would take it down with the engine).
    repo.sandbox_off();
    let plan = p1_plan(repo, "Crash", "\"wip.txt\"");
    let pid_file = repo.scratch().join("pid");
    let worker = format!(
        "sleep 120 & echo $! > {p}.tmp; mv {p}.tmp {p}; echo w > wip.txt; wait",
        p = pid_file.display()
    );
    let mut child = run_command(repo, &plan, &worker)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for_start(&pid_file);
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    child.kill().unwrap(); // SIGKILL: no cleanup of its own
    child.wait().unwrap();
    assert!(
        alive(pid),
        "the worker's child should have survived the crash"
    );
    pid
}

#[test]
fn cancel_after_a_crash_kills_what_the_worker_left_running() {
    let repo = TestRepo::new();
    let pid = crash_leaving_a_workers_child(&repo);
    let out = orchestra(&repo.path, &["cancel"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_dies(pid, "cancel left the worker's child running");
}

#[test]
fn cancel_kills_a_workers_leftovers_even_when_its_group_was_never_journaled() {
    let repo = TestRepo::new();
    let pid = crash_leaving_a_workers_child(&repo);
    // A kill between the worker's spawn and the journaling of its group leaves no group on
    // record: what a crash that early looks like.
    let db = rusqlite::Connection::open(repo.path.join(".git/orchestra/orchestra.db")).unwrap();
    db.execute("UPDATE packets SET pgid = NULL", []).unwrap();
    drop(db);
    let out = orchestra(&repo.path, &["cancel"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_dies(pid, "cancel left the unrecorded worker's child running");
}

#[test]
fn cancel_leaves_alone_the_workers_of_a_run_of_the_same_id_in_another_repository() {
    // The same plan on the same base gets the same run id in two repositories (as eval's
    // repeated attempts do): cancelling one must not touch the other's workers.
    let (one, other) = (TestRepo::new(), TestRepo::new());
    let mine = crash_leaving_a_workers_child(&one);
    let theirs = crash_leaving_a_workers_child(&other);
    let ids: Vec<String> = [&one, &other]
        .iter()
        .map(|r| {
            status_json(&r.path)["run"]["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(ids[0], ids[1], "the two runs should share their id");
    let out = orchestra(&one.path, &["cancel"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_dies(mine, "cancel left its own worker's child running");
    assert!(alive(theirs), "cancel killed the other repository's worker");
    let out = orchestra(&other.path, &["cancel"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_dies(theirs, "cancel left the other worker's child running");
}

#[test]
fn a_packet_whose_dependencies_conflict_fails_with_the_conflicting_paths() {
    let repo = TestRepo::new();
    let body = format!(
        "objective = \"Conflicting deps\"\n\n{}{}{}",
        packet("p1-a", "\"shared.txt\"", "", ""),
        packet("p2-b", "\"shared.txt\"", "", ""),
        packet("p3-c", "\"out-p3-c.txt\"", "\"p1-a\", \"p2-b\"", ""),
    );
    let plan = repo.write_plan("plan.toml", &body);
    let worker = r#"echo "$ORCHESTRA_PACKET" > shared.txt; echo x > "out-$ORCHESTRA_PACKET.txt" 2>/dev/null; rm -f out-p1-a.txt out-p2-b.txt"#;
    let out = repo.run_plan(&plan, worker, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let v = status_json(&repo.path);
    let states = packet_states(&v);
    assert_eq!(
        (states[0].1.as_str(), states[1].1.as_str()),
        ("succeeded", "succeeded")
    );
    assert_eq!(states[2].1, "failed");
    let reason = v["packets"][2]["reason"].as_str().unwrap();
    assert!(reason.contains("conflicts in shared.txt"), "{reason}");
}

#[test]
fn a_file_name_with_terminal_escapes_is_quoted_as_git_quotes_it_never_printed_raw() {
    let repo = TestRepo::new();
    let body = format!(
        "objective = \"Escapes\"\n\n{}",
        packet("p1", "\"out.txt\"", "", "")
    );
    let plan = repo.write_plan("plan.toml", &body);
    let root = repo.scratch().join("wt");
    // The worker writes a file outside its scope whose name would recolour the terminal.
    let worker = r#"echo x > out.txt; printf x > "$(printf 'evil\033[31mred.txt')""#;
    let out = orchestra(
        &repo.path,
        &run_args(plan.to_str().unwrap(), worker, root.to_str().unwrap()),
    );
    let all = text(&out);
    assert!(!out.status.success(), "{all}");
    assert!(all.contains(r#""evil\033[31mred.txt""#), "{all}");
    assert!(
        !all.contains('\u{1b}'),
        "a raw escape reached the output: {all:?}"
    );
}

#[test]
fn escapes_in_a_commands_output_reach_neither_the_run_nor_the_status_output_raw() {
    let repo = TestRepo::new();
    let body = format!(
        "objective = \"Escapes\"\n\n{}",
        packet(
            "p1",
            "\"out.txt\"",
            "",
            r#""printf 'clear\\033[2J'; exit 3""#
        )
    );
    let plan = repo.write_plan("plan.toml", &body);
    let root = repo.scratch().join("wt");
    let out = orchestra(
        &repo.path,
        &run_args(
            plan.to_str().unwrap(),
            "echo x > out.txt",
            root.to_str().unwrap(),
        ),
    );
    let all = text(&out);
    assert!(!out.status.success(), "{all}");
    assert!(all.contains(r"clear\033[2J"), "{all}");
    assert!(
        !all.contains('\u{1b}'),
        "a raw escape reached the output: {all:?}"
    );
    let status = orchestra(&repo.path, &["status"]);
    let shown = text(&status);
    assert!(shown.contains(r"clear\033[2J"), "{shown}");
    assert!(
        !shown.contains('\u{1b}'),
        "a raw escape reached status: {shown:?}"
    );
}

/// Starts `run` of a one-packet plan whose worker sleeps, waits until its packet runs, kills the
/// process with SIGKILL and returns the run's id.
fn kill_a_running_one_packet_run(repo: &TestRepo) -> String {
    let plan = p1_plan(repo, "Crash", "\"wip.txt\"");
    let root = repo.scratch().join("wt");
    let worker = "echo w > wip.txt; sleep 60";
    let mut child = run_command(repo, &plan, worker)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Running, and past its worktree's creation: the worker wrote its file.
    let deadline = Instant::now() + Duration::from_secs(30);
    let run = loop {
        assert!(Instant::now() < deadline, "the packet never started");
        let out = orchestra(&repo.path, &["status", "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        if v["packets"][0]["state"] == "running"
            && let Some(id) = v["run"]["id"].as_str()
            && root.join(id).join("p1/wip.txt").exists()
        {
            break id.to_string();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    run
}

#[test]
fn a_killed_run_reads_as_interrupted_while_a_leftover_descriptor_still_holds_its_lock() {
    let repo = TestRepo::new();
    let run = kill_a_running_one_packet_run(&repo);
    // A child the killed process was forking keeps a copy of the lock's descriptor until its
    // exec; holding the lock here stands in for it.
    let dir = git_orchestra::exec::RunDir::new(&repo.path.join(".git"), &run);
    let _held = git_orchestra::exec::RunLock::acquire(dir.path(), &run).unwrap();
    let shown = orchestra(&repo.path, &["status"]);
    let out = String::from_utf8_lossy(&shown.stdout);
    assert!(out.contains("state     interrupted"), "{}", text(&shown));
}

#[test]
fn cancel_drops_a_worktree_registration_a_killed_creation_left_half_written() {
    let repo = TestRepo::new();
    let run = kill_a_running_one_packet_run(&repo);
    // What a kill between gix's first registration files leaves: still locked as initializing,
    // `commondir` created but not yet written; `git worktree list` refuses the repository then.
    let admin = repo.path.join(".git/worktrees/p1");
    std::fs::write(admin.join("locked"), "initializing").unwrap();
    std::fs::write(admin.join("commondir"), "").unwrap();
    let cancelled = orchestra(&repo.path, &["cancel", &run]);
    assert!(cancelled.status.success(), "{}", text(&cancelled));
    assert!(!admin.exists(), "the half-written registration stayed");
    let listed = git(&repo.path, &["worktree", "list", "--porcelain"]);
    assert!(!listed.contains("/p1"), "{listed}");
}

#[test]
fn a_run_whose_process_was_killed_shows_as_interrupted_with_resume_next() {
    let repo = TestRepo::new();
    kill_a_running_one_packet_run(&repo); // SIGKILL: the run is left "running" in the store
    let shown = orchestra(&repo.path, &["status"]);
    let out = String::from_utf8_lossy(&shown.stdout);
    assert!(out.contains("state     interrupted"), "{}", text(&shown));
    let all = orchestra(&repo.path, &["status", "--all"]);
    let out = String::from_utf8_lossy(&all.stdout);
    let line = out.lines().nth(1).unwrap_or_default();
    assert!(
        line.contains("interrupted") && line.contains("git orchestra resume"),
        "{}",
        text(&all)
    );
    let cancelled = orchestra(&repo.path, &["cancel"]);
    assert!(cancelled.status.success(), "{}", text(&cancelled));
}

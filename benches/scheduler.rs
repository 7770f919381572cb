//! Scheduler overhead: a 100-packet plan in 10 dependent waves with a no-op worker (`true`),
//! run by the engine, side by side with the same work scripted by hand with the git CLI
//! (`git worktree add` + commit per packet, sequentially).
//!
//! Also: file-level vs symbol-aware overlap on the demo plan and on a generated plan whose
//! packets share files on distinct functions, by simulating the scheduler (`scheduler::decide`)
//! with fixed durations: makespan and maximum parallelism side by side.
//!
//! Also (`-- many`): how the per-packet cost grows with the number of worktrees — 200 and 1,000
//! independent packets with a no-op worker, each left in its worktree, then `gc` removing them
//! all; per packet and per worktree.
//!
//! Run with `cargo bench --bench scheduler` (`-- symbols` for the simulation only, `-- many`
//! for the many-packet case only). Prints a table; no thresholds are asserted.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use git_orchestra::engine::{self, Control, RunOptions, scheduler};
use git_orchestra::git::RepoInfo;
use git_orchestra::plan::{LineSpan, Plan, SymbolSpans};
use git_orchestra::store::PacketState;

#[path = "support/mod.rs"]
mod support;
use support::{git, init_and_commit};

const PACKETS: usize = 100;
const WAVES: usize = 10;

fn hermetic(home: &Path) {
    for (k, v) in [
        ("HOME", home.to_str().unwrap_or("/tmp")),
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_AUTHOR_NAME", "Bench"),
        ("GIT_AUTHOR_EMAIL", "bench@example.com"),
        ("GIT_COMMITTER_NAME", "Bench"),
        ("GIT_COMMITTER_EMAIL", "bench@example.com"),
    ] {
        // SAFETY: single-threaded at this point; nothing else reads the environment yet.
        unsafe { std::env::set_var(k, v) };
    }
}

fn small_repo(dir: &Path) {
    std::fs::create_dir_all(dir.join("src")).expect("mkdir");
    for i in 0..50 {
        std::fs::write(
            dir.join(format!("src/m{i}.rs")),
            format!("pub fn f{i}() {{}}\n"),
        )
        .expect("write");
    }
    init_and_commit(dir, "init");
}

fn plan_text() -> String {
    let mut s = String::from("objective = \"Scheduler overhead\"\nmax_parallel = 8\n\n");
    let per_wave = PACKETS / WAVES;
    for i in 0..PACKETS {
        let wave = i / per_wave;
        let deps = if wave == 0 {
            String::new()
        } else {
            format!("\"p{}\"", (wave - 1) * per_wave + i % per_wave)
        };
        s.push_str(&format!(
            "[[packet]]\nid = \"p{i}\"\ntitle = \"t{i}\"\ndescription = \"d\"\nfiles = [\"out/p{i}.txt\"]\ndepends_on = [{deps}]\nmay_be_empty = true\n\n"
        ));
    }
    s
}

fn engine_run(repo_dir: &Path, wt_root: &Path) -> Duration {
    engine_run_plan(repo_dir, wt_root, &plan_text(), PACKETS)
}

/// Returns a plan of `n` independent packets, eight at a time.
fn independent_plan(n: usize) -> String {
    let mut s = String::from("objective = \"Many packets\"\nmax_parallel = 8\n\n");
    for i in 0..n {
        s.push_str(&format!(
            "[[packet]]\nid = \"p{i}\"\ntitle = \"t{i}\"\ndescription = \"d\"\nfiles = [\"out/p{i}.txt\"]\nmay_be_empty = true\n\n"
        ));
    }
    s
}

/// Runs `n` independent packets with a no-op worker, then `gc`; prints the time per packet
/// and per removed worktree.
fn many_packets(dir: &Path, n: usize) {
    let repo_dir = dir.join(format!("many-{n}"));
    small_repo(&repo_dir);
    let ran = engine_run_plan(
        &repo_dir,
        &dir.join(format!("wt-many-{n}")),
        &independent_plan(n),
        n,
    );
    let repo = RepoInfo::discover(&repo_dir).expect("repo");
    let started = Instant::now();
    let report = engine::gc::gc(&repo, None, false).expect("gc");
    let gc_time = started.elapsed();
    let removed = report.items.iter().filter(|i| i.worktree.is_some()).count();
    assert_eq!(removed, n, "gc removes every worktree");
    println!(
        "{:<44} {:>9.2}s {:>12.1}ms {:>10.2}s {:>12.1}ms",
        format!("{n} independent packets, no-op worker"),
        ran.as_secs_f64(),
        ran.as_secs_f64() * 1000.0 / n as f64,
        gc_time.as_secs_f64(),
        gc_time.as_secs_f64() * 1000.0 / n as f64
    );
}

fn engine_run_plan(repo_dir: &Path, wt_root: &Path, text: &str, expected: usize) -> Duration {
    let repo = RepoInfo::discover(repo_dir).expect("repo");
    let text = text.to_string();
    let plan = Plan::from_toml_str(&text, "bench.toml").expect("plan parses");
    let opts = RunOptions {
        worker_cmd: Some("true".into()),
        max_parallel: None,
        timeout: Duration::from_secs(60),
        worktree_root: Some(wt_root.to_path_buf()),
        kind: git_orchestra::engine::RunKind::Plan,
    };
    let started = Instant::now();
    let prepared = engine::prepare(&repo, &plan, &text, "bench.toml", &opts).expect("prepare");
    let stop = AtomicBool::new(false);
    let noop = |_: &str, _: &git_orchestra::store::Event| {};
    let ctl = Control {
        stop: &stop,
        on_event: &noop,
        setup: None,
        sparse: None,
        sandboxes: Default::default(),
        crash_after_events: None,
        review: None,
        fix_rounds: 0,
        retries: (0, std::time::Duration::ZERO),
        executor: None,
        integrator: None,
        arms: Vec::new(),
        tests: None,
        tester: None,
        park_early: None,
    };
    let summary = engine::execute(&repo, &prepared.run.id, &ctl).expect("execute");
    assert_eq!(summary.succeeded, expected, "every packet should succeed");
    started.elapsed()
}

fn scripted_run(repo_dir: &Path, wt_root: &Path) -> Duration {
    let started = Instant::now();
    for i in 0..PACKETS {
        let wt = wt_root.join(format!("p{i}"));
        let wt_s = wt.to_str().expect("utf-8 path");
        git(
            repo_dir,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                &format!("manual/p{i}"),
                wt_s,
                "main",
            ],
        );
        let status = Command::new("sh")
            .arg("-c")
            .arg("true")
            .current_dir(&wt)
            .status()
            .expect("sh");
        assert!(status.success());
        git(&wt, &["add", "-A"]);
        // Like the engine, commit only when there is something to commit.
        let diff = Command::new("git")
            .arg("-C")
            .arg(&wt)
            .args(["diff", "--cached", "--quiet"])
            .status()
            .expect("git");
        if !diff.success() {
            git(&wt, &["commit", "-q", "-m", "packet"]);
        }
    }
    started.elapsed()
}

/// Returns (makespan, max packets running at once) of `plan` under `graph`, packet `i` taking
/// `dur[i]` time units, with the scheduler's own decisions at every completion.
fn simulate(graph: &scheduler::Graph, dur: &[u64], cap: usize) -> (u64, usize) {
    let n = dur.len();
    let mut states = vec![PacketState::Pending; n];
    let mut executing = vec![false; n];
    let mut finish = vec![0u64; n];
    let (mut now, mut peak) = (0u64, 0usize);
    loop {
        let decision = scheduler::decide(graph, &states, &executing, cap);
        for i in decision.start {
            states[i] = PacketState::Running;
            executing[i] = true;
            finish[i] = now + dur[i];
        }
        peak = peak.max(executing.iter().filter(|e| **e).count());
        let Some(next) = (0..n).filter(|&i| executing[i]).min_by_key(|&i| finish[i]) else {
            break;
        };
        now = finish[next];
        for i in 0..n {
            if executing[i] && finish[i] == now {
                executing[i] = false;
                states[i] = PacketState::Succeeded;
            }
        }
    }
    assert!(states.iter().all(|s| *s == PacketState::Succeeded));
    (now, peak)
}

/// Returns the demo's plan, as its scripted planner writes it.
fn demo_plan() -> Plan {
    let scripts: serde_json::Value =
        serde_json::from_str(include_str!("../fixtures/demo/model.json")).expect("json");
    let text = scripts
        .as_array()
        .expect("array")
        .iter()
        .find(|s| s["name"] == "planner")
        .and_then(|s| s["replies"][0]["text"].as_str())
        .expect("planner reply");
    let toml = text
        .split("```toml\n")
        .nth(1)
        .and_then(|t| t.split("```").next())
        .expect("fenced plan");
    Plan::from_toml_str(&format!("objective = \"demo\"\n{toml}"), "demo.toml").expect("plan")
}

/// Returns a plan of 20 packets in two layers where every file is shared by four packets, each
/// editing its own two-line function, with the spans the resolver would give those functions.
fn shared_files_plan() -> (Plan, SymbolSpans) {
    let mut text = String::from("objective = \"Shared files\"\n");
    let mut spans = SymbolSpans::default();
    for i in 0..20usize {
        let file = format!("src/m{}.py", i % 5);
        let func = (i / 5) as u32;
        let deps = if i >= 10 {
            format!("\"p{}\"", i - 10)
        } else {
            String::new()
        };
        text.push_str(&format!(
            "[[packet]]\nid = \"p{i}\"\ntitle = \"t\"\ndescription = \"d\"\nfiles = [\"{file}\"]\nsymbols = [\"{file}:f{func}\"]\ndepends_on = [{deps}]\n"
        ));
        // `def fN():` and its body, then two blank lines: functions 4 lines apart.
        spans.insert(
            i,
            &file,
            vec![LineSpan {
                start: func * 4 + 1,
                end: func * 4 + 2,
            }],
        );
    }
    (
        Plan::from_toml_str(&text, "shared.toml").expect("plan"),
        spans,
    )
}

fn symbol_aware() {
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    println!("file-level vs symbol-aware overlap (simulated durations, max_parallel 8)");
    println!(
        "{:<34} {:>10} {:>10} {:>8} {:>9} {:>9}",
        "plan", "makespan", "(symbols)", "ratio", "max par.", "(symbols)"
    );
    let (shared, shared_spans) = shared_files_plan();
    for (name, plan, spans) in [
        ("demo (4 packets)", demo_plan(), SymbolSpans::default()),
        ("20 packets, 4 per file, 2 layers", shared, shared_spans),
    ] {
        let dur: Vec<u64> = plan.packets.iter().map(|_| 1000 + next() % 1000).collect();
        let (file_ms, file_peak) = simulate(&engine::graph_of(&plan), &dur, 8);
        let (sym_ms, sym_peak) = simulate(&engine::graph_with(&plan, &spans), &dur, 8);
        println!(
            "{name:<34} {:>9.2}s {:>9.2}s {:>7.2}x {:>9} {:>9}",
            file_ms as f64 / 1000.0,
            sym_ms as f64 / 1000.0,
            file_ms as f64 / sym_ms as f64,
            file_peak,
            sym_peak
        );
    }
}

fn main() {
    let arg = |name: &str| std::env::args().skip(1).any(|a| a == name);
    if arg("many") {
        let tmp = tempfile::tempdir().expect("tempdir");
        hermetic(tmp.path());
        println!(
            "{:<44} {:>10} {:>14} {:>11} {:>14}",
            "", "run", "per packet", "gc", "per worktree"
        );
        // `MANY_SIZES=50,400` measures other sizes.
        let sizes: Vec<usize> = std::env::var("MANY_SIZES")
            .ok()
            .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
            .filter(|s: &Vec<usize>| !s.is_empty())
            .unwrap_or_else(|| vec![200, 1000]);
        for n in sizes {
            many_packets(tmp.path(), n);
        }
        return;
    }
    symbol_aware();
    if arg("symbols") {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    hermetic(tmp.path());
    let a = tmp.path().join("engine-repo");
    let b = tmp.path().join("script-repo");
    small_repo(&a);
    small_repo(&b);
    let ours = engine_run(&a, &tmp.path().join("wt-engine"));
    let theirs = scripted_run(&b, &tmp.path().join("wt-script"));
    println!(
        "scheduler overhead: {PACKETS} packets in {WAVES} waves, no-op worker, max_parallel 8"
    );
    println!("{:<44} {:>10} {:>14}", "", "total", "per packet");
    println!(
        "{:<44} {:>9.2}s {:>12.1}ms",
        "git-orchestra run (worktree+worker+commit+checks)",
        ours.as_secs_f64(),
        ours.as_secs_f64() * 1000.0 / PACKETS as f64
    );
    println!(
        "{:<44} {:>9.2}s {:>12.1}ms",
        "shell loop: git worktree add + commit",
        theirs.as_secs_f64(),
        theirs.as_secs_f64() * 1000.0 / PACKETS as f64
    );
    println!(
        "ratio (ours / shell loop): {:.2}x",
        ours.as_secs_f64() / theirs.as_secs_f64()
    );
}

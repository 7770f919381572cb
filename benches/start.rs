//! Benchmarks of `start`: orchestration overhead of a 100-packet plan with instant scripted
//! agents (goal ≤ 10 s), and the makespan of a plan with simulated agent durations against
//! its critical-path lower bound (goal ≤ 1.05×).
//!
//! Run with `cargo bench --bench start` (add `--profile dev` to skip the release build).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use git_orchestra::demo::{MockModel, parse_scripts};
use git_orchestra::git::RepoInfo;
use git_orchestra::orchestrator::{self, Approval, Interaction, StartRequest, StartSettings};
use git_orchestra::store::Event;
use serde_json::json;

#[path = "support/mod.rs"]
mod support;
use support::{check_packets, check_tree, init_and_commit};

struct Quiet;

impl Interaction for Quiet {
    fn interactive(&self) -> bool {
        false
    }
    fn ask(&self, _: &str) -> Option<String> {
        None
    }
    fn approve(&self, _: &str, _: &[String]) -> Approval {
        Approval::Approve
    }
    fn progress(&self, _: &str) {}
    fn engine_event(&self, _: &str, _: &Event) {}
}

fn repo(dir: &Path, files: usize) {
    std::fs::create_dir_all(dir).unwrap();
    for i in 0..files {
        std::fs::write(dir.join(format!("f{i:03}.txt")), "x\n").unwrap();
    }
    init_and_commit(dir, "init");
}

/// Returns scripts: a planner answering `plan`, an approving reviewer (of the plan and of each
/// packet) and orchestrator, and one instant coder conversation per packet (write its file,
/// complete).
fn scripts(plan: &str, packets: usize) -> String {
    let mut s = vec![
        json!({"name": "planner", "match": ["# Planner"], "replies": [{"text": format!("```toml\n{plan}```\n")}]}),
        // Packet reviews answer through `complete`, plan reviews in text.
        json!({"name": "packet-review", "match": ["# Reviewer", "# Review this change"], "replies": [
            {"calls": [{"name": "complete", "args": {"summary": "{\"verdict\": \"approve\", \"findings\": []}"}}]}]}),
        json!({"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\", \"findings\": []}"}]}),
        json!({"name": "orchestrator", "match": ["# Orchestrator"], "replies": [{"text": "{\"next_steps\": []}"}]}),
    ];
    for i in 0..packets {
        s.push(json!({"name": format!("p{i:03}"), "match": ["# Coder", format!("# Edit f{i:03}.txt")], "replies": [
            {"calls": [{"name": "write_file", "args": {"path": format!("f{i:03}.txt"), "content": format!("edited {i}\n")}}]},
            {"calls": [{"name": "complete", "args": {"summary": "done"}}]}
        ]}));
    }
    serde_json::to_string(&s).unwrap()
}

fn run(
    dir: &Path,
    model: &MockModel,
    objective: &str,
    worker_cmd: Option<String>,
    merge: bool,
) -> orchestrator::Report {
    let mut config = git_orchestra::demo::config(&model.url);
    config.prices.clear();
    let info = RepoInfo::discover(dir).unwrap();
    let req = StartRequest {
        objective: objective.into(),
        settings: StartSettings {
            yes: true,
            merge,
            clarify: false,
            worker_cmd,
            agent: None,
            max_parallel: Some(16),
            budget: Default::default(),
            docs: false,
            tests: false,
            publish: None,
            executor: None,
        },
        timeout: Duration::from_secs(600),
        worktree_root: Some(dir.with_extension("worktrees")),
        setup: None,
        target: None,
        crash_after_events: None,
        crash_after_steps: None,
        answer_wait: Duration::from_secs(1),
        fix_rounds: git_orchestra::config::DEFAULT_FIX_ROUNDS,
    };
    let stop = AtomicBool::new(false);
    let outcome = orchestrator::start(&info, &config, &req, &Quiet, &stop).unwrap();
    outcome.report.unwrap()
}

fn phase(report: &orchestrator::Report, name: &str) -> f64 {
    report
        .phases
        .iter()
        .find(|(p, _)| p == name)
        .map_or(0.0, |(_, ms)| *ms as f64 / 1000.0)
}

fn overhead() {
    const N: usize = 100;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("repo");
    repo(&dir, N);
    let mut plan = String::from("max_parallel = 16\n");
    for i in 0..N {
        // Ten waves: each packet waits for the one ten before it.
        let deps = if i >= 10 {
            format!("depends_on = [\"p{:03}\"]\n", i - 10)
        } else {
            String::new()
        };
        plan.push_str(&format!(
            "\n[[packet]]\nid = \"p{i:03}\"\ntitle = \"Edit f{i:03}.txt\"\ndescription = \"d\"\nfiles = [\"f{i:03}.txt\"]\n{deps}validation = [\"test -s f{i:03}.txt\"]\n"
        ));
    }
    let model = MockModel::start(parse_scripts(&scripts(&plan, N)).unwrap()).unwrap();
    let began = Instant::now();
    let report = run(&dir, &model, "Edit a hundred files", None, true);
    let total = began.elapsed().as_secs_f64();
    // Each packet `pNNN` changed `fNNN.txt`, and `main` holds every edit.
    let file_of = |id: &str| format!("f{}.txt", id.trim_start_matches('p'));
    check_packets(&report, N, file_of);
    let edited: Vec<_> = (0..N)
        .map(|i| (format!("f{i:03}.txt"), format!("edited {i}\n")))
        .collect();
    check_tree(&dir, "main", &edited);
    // The same plan with a trivial external worker (one line appended to the packet's own
    // file): what the engine and gates cost alone.
    let tmp2 = tempfile::tempdir().unwrap();
    let dir2 = tmp2.path().join("repo");
    repo(&dir2, N);
    let began2 = Instant::now();
    let alone = run(
        &dir2,
        &model,
        "Edit a hundred files",
        Some(r#"echo x >> "f${ORCHESTRA_PACKET#p}.txt""#.into()),
        true,
    );
    let total2 = began2.elapsed().as_secs_f64();
    check_packets(&alone, N, file_of);
    let appended: Vec<_> = (0..N)
        .map(|i| (format!("f{i:03}.txt"), "x\nx\n".to_string()))
        .collect();
    check_tree(&dir2, "main", &appended);
    println!(
        "  same plan, trivial --worker-cmd (engine and gates alone): total {total2:.2} s (executing {:.2} s, integrating {:.2} s)",
        phase(&alone, "executing"),
        phase(&alone, "integrating")
    );
    println!(
        "start, {N} packets, instant scripted agents, 10 waves, max_parallel 16: total {total:.2} s (planning {:.2} s, executing {:.2} s, integrating {:.2} s), {} model requests; goal ≤ 10 s for orchestration",
        phase(&report, "planning") + phase(&report, "plan_review"),
        phase(&report, "executing"),
        phase(&report, "integrating"),
        model.requests()
    );
}

fn makespan() {
    // A deterministic DAG of 24 packets with simulated durations (ms) and the critical path.
    const N: usize = 24;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("repo");
    repo(&dir, N);
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut dur = Vec::new();
    let mut deps: Vec<Vec<usize>> = Vec::new();
    let mut plan = String::from("max_parallel = 24\n");
    for i in 0..N {
        let d = 1000 + next() % 1000;
        let mut ds = Vec::new();
        if i >= 4 {
            ds.push((next() % i as u64) as usize);
            if next() % 2 == 0 {
                let other = (next() % i as u64) as usize;
                if !ds.contains(&other) {
                    ds.push(other);
                }
            }
        }
        let list: Vec<String> = ds
            .iter()
            .map(|d| format!("\"p{d:02}-d{}\"", dur_of(&dur, *d)))
            .collect();
        dur.push(d);
        plan.push_str(&format!(
            "\n[[packet]]\nid = \"p{i:02}-d{d}\"\ntitle = \"Edit f{i:03}.txt\"\ndescription = \"d\"\nfiles = [\"f{i:03}.txt\"]\ndepends_on = [{}]\n",
            list.join(", ")
        ));
        deps.push(ds);
    }
    let mut finish = [0u64; N];
    for i in 0..N {
        finish[i] = dur[i] + deps[i].iter().map(|d| finish[*d]).max().unwrap_or(0);
    }
    let critical = *finish.iter().max().unwrap() as f64 / 1000.0;
    let model = MockModel::start(parse_scripts(&scripts(&plan, 0)).unwrap()).unwrap();
    // The worker appends to its packet's file (`pNN-dD` owns `f0NN.txt`), then sleeps for
    // the duration written in its packet id, computed by the shell itself (no sed/awk
    // processes) so the simulated agent takes its duration and no more.
    let worker = concat!(
        "i=${ORCHESTRA_PACKET%%-d*}; echo done >> \"f0${i#p}.txt\"; ",
        "d=${ORCHESTRA_PACKET##*-d}; f=$((1000 + d % 1000)); exec sleep $((d / 1000)).${f#1}"
    )
    .to_string();
    let report = run(&dir, &model, "Simulated durations", Some(worker), false);
    if std::env::var_os("START_BENCH_KEEP").is_some() {
        println!("kept {}", tmp.keep().display());
    }
    check_packets(&report, N, |id| {
        format!(
            "f0{}.txt",
            id.trim_start_matches('p').split("-d").next().unwrap_or("")
        )
    });
    let executing = phase(&report, "executing");
    println!(
        "start, {N} packets with simulated durations 1-2 s: executing {executing:.2} s vs critical path {critical:.2} s = {:.3}x; goal ≤ 1.05x",
        executing / critical
    );
}

fn dur_of(dur: &[u64], i: usize) -> u64 {
    dur[i]
}

fn main() {
    support::serve_sandbox_launcher();
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    // `cargo bench --bench start -- makespan` runs only the makespan measurement.
    let only = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    if only.as_deref().is_none_or(|o| o == "overhead") {
        overhead();
    }
    if only.as_deref().is_none_or(|o| o == "makespan") {
        makespan();
    }
}

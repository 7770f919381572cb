//! Benchmarks of `start`: orchestration overhead of a 100-packet plan with instant scripted
//! agents (goal ≤ 10 s), and the makespan of a plan with simulated agent durations against
//! its critical-path lower bound (goal ≤ 1.05×).
//!
//! Each run also prints where its packets' time went, from the journal `status --timings`
//! reads (per phase: the sum over packets, the median and the largest), the CPU time it cost,
//! and for the makespan how soon each dependent started and what the critical chain's packets
//! spent beyond their simulated work.
//!
//! `-- scale` measures the per-packet cost of the 100-packet run at 100 and 1,000 packets (or
//! the sizes `START_BENCH_PACKETS` lists), which should stay flat.
//!
//! Run with `cargo bench --bench start` (add `--profile dev` to skip the release build).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use git_orchestra::demo::{MockModel, parse_scripts};
use git_orchestra::engine::timings::packet_timings;
use git_orchestra::git::RepoInfo;
use git_orchestra::orchestrator::{self, Approval, Interaction, StartRequest, StartSettings};
use git_orchestra::store::{Event, Store, TimedPhase};
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

/// Prints where a run's packet time went, from its journal: per phase the sum over packets and
/// the median and largest per packet (what `status --timings` shows, summarised), and the
/// process's CPU time since `cpu_before` — on a loaded machine the steadier figure.
fn breakdown(dir: &Path, report: &orchestrator::Report, cpu_before: Duration) {
    let info = RepoInfo::discover(dir).unwrap();
    let store = Store::open(&info.common_dir).unwrap();
    let entries = store.events(&report.run, 0).unwrap();
    let timings = packet_timings(&entries);
    let mut per_phase: std::collections::BTreeMap<TimedPhase, Vec<u64>> = Default::default();
    for durations in timings.values() {
        for (phase, ms) in durations {
            per_phase.entry(*phase).or_default().push(*ms);
        }
    }
    for (phase, mut ms) in per_phase {
        ms.sort_unstable();
        println!(
            "    {:<12} sum {:>8.2} s  median {:>6} ms  max {:>6} ms  ({} packets)",
            phase.as_str(),
            ms.iter().sum::<u64>() as f64 / 1000.0,
            ms[ms.len() / 2],
            ms[ms.len() - 1],
            ms.len()
        );
    }
    println!(
        "    CPU {:.2} s (this process and its waited-for children), load average {}",
        (cpu_time().saturating_sub(cpu_before)).as_secs_f64(),
        load_average()
    );
}

/// Prints where the makespan went beyond the critical path: how long after its last
/// dependency succeeded each dependent started, the packets' span in the journal, and per
/// phase what the packets of the critical path spent (their worker less its simulated
/// duration: the worker process's own start and end).
fn critical_breakdown(dir: &Path, report: &orchestrator::Report, deps: &[Vec<usize>], dur: &[u64]) {
    let info = RepoInfo::discover(dir).unwrap();
    let store = Store::open(&info.common_dir).unwrap();
    let entries = store.events(&report.run, 0).unwrap();
    let timings = packet_timings(&entries);
    let id = |i: usize| format!("p{i:02}-d{}", dur[i]);
    let (mut started, mut succeeded) = (HashMap::new(), HashMap::new());
    for e in &entries {
        match &e.event {
            Event::PacketStarted { packet, .. } => {
                started.entry(packet.clone()).or_insert(e.ts_ms);
            }
            Event::PacketSucceeded { packet, .. } => {
                succeeded.insert(packet.clone(), e.ts_ms);
            }
            _ => {}
        }
    }
    let mut delays: Vec<i64> = (0..deps.len())
        .filter_map(|i| {
            let last = deps[i].iter().map(|d| succeeded[&id(*d)]).max()?;
            Some(started[&id(i)] - last)
        })
        .collect();
    delays.sort_unstable();
    println!(
        "  a dependent's start after its last dependency succeeded: median {} ms, max {} ms ({} dependents)",
        delays[delays.len() / 2],
        delays[delays.len() - 1],
        delays.len()
    );
    let first = started.values().min().unwrap();
    let last = succeeded.values().max().unwrap();
    println!(
        "  first packet started → last succeeded: {:.2} s",
        (last - first) as f64 / 1000.0
    );
    // The critical chain: from the packet that finishes last in the simulation back through
    // the dependency that finishes last.
    let mut finish = vec![0u64; deps.len()];
    for i in 0..deps.len() {
        finish[i] = dur[i] + deps[i].iter().map(|d| finish[*d]).max().unwrap_or(0);
    }
    let mut chain = vec![(0..deps.len()).max_by_key(|i| finish[*i]).unwrap()];
    while let Some(&d) = deps[*chain.last().unwrap()]
        .iter()
        .max_by_key(|d| finish[**d])
    {
        chain.push(d);
    }
    let mut sums: std::collections::BTreeMap<&str, u64> = Default::default();
    for &i in &chain {
        for (phase, ms) in &timings[&id(i)] {
            let ms = if *phase == TimedPhase::Worker {
                ms.saturating_sub(dur[i])
            } else {
                *ms
            };
            *sums.entry(phase.as_str()).or_default() += ms;
        }
    }
    let gaps: i64 = chain
        .windows(2)
        .map(|w| started[&id(w[0])] - succeeded[&id(w[1])])
        .sum();
    println!(
        "  critical chain of {} packets, beyond its simulated work: {} (ms; worker = less its simulated duration), start delays {gaps} ms",
        chain.len(),
        sums.iter()
            .map(|(p, ms)| format!("{p} {ms}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// Returns the CPU time used so far by this process and its waited-for children.
fn cpu_time() -> Duration {
    let mut total = Duration::ZERO;
    for who in [libc::RUSAGE_SELF, libc::RUSAGE_CHILDREN] {
        // SAFETY: getrusage writes into the zeroed struct we own and reads nothing else.
        let usage = unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            libc::getrusage(who, &mut usage);
            usage
        };
        for tv in [usage.ru_utime, usage.ru_stime] {
            total +=
                Duration::from_secs(tv.tv_sec as u64) + Duration::from_micros(tv.tv_usec as u64);
        }
    }
    total
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// Returns the plan of `n` packets in waves of ten (each packet waits for the one ten before
/// it), each editing its own file and validating it.
fn waves_plan(n: usize) -> String {
    let mut plan = String::from("max_parallel = 16\n");
    for i in 0..n {
        let deps = if i >= 10 {
            format!("depends_on = [\"p{:03}\"]\n", i - 10)
        } else {
            String::new()
        };
        plan.push_str(&format!(
            "\n[[packet]]\nid = \"p{i:03}\"\ntitle = \"Edit f{i:03}.txt\"\ndescription = \"d\"\nfiles = [\"f{i:03}.txt\"]\n{deps}validation = [\"test -s f{i:03}.txt\"]\n"
        ));
    }
    plan
}

/// Per-packet cost of the instant-agent run at each size of `START_BENCH_PACKETS` (a comma
/// list, default `100,1000`; at most 1,000, the files' names having three digits): wall time,
/// executing and integrating phases and CPU time, each divided by the packets, on a repository
/// of 100 files at every size. Flat means the same figures at every size. Each size's
/// repository is kept until the bench ends (see [`overhead`]).
fn scale(keep: &mut Vec<tempfile::TempDir>) {
    let sizes: Vec<usize> = std::env::var("START_BENCH_PACKETS")
        .unwrap_or_else(|_| "100,1000".into())
        .split(',')
        .map(|n| {
            n.trim()
                .parse()
                .expect("START_BENCH_PACKETS: packet counts, comma-separated")
        })
        .collect();
    for n in sizes {
        assert!(
            (1..=1000).contains(&n),
            "START_BENCH_PACKETS: 1 to 1000 packets"
        );
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("repo");
        // The repository stays at 100 files whatever the packets (those past the hundredth
        // create their file): otherwise every worktree's checkout and removal, and so each
        // packet, would cost more at 1,000 packets for the repository's sake alone.
        repo(&dir, n.min(100));
        let model =
            MockModel::start_unrecorded(parse_scripts(&scripts(&waves_plan(n), n)).unwrap())
                .unwrap();
        let load = load_average();
        let (began, cpu) = (Instant::now(), cpu_time());
        let report = run(&dir, &model, "Edit the files", None, true);
        let (total, cpu) = (
            began.elapsed().as_secs_f64(),
            cpu_time().saturating_sub(cpu),
        );
        check_packets(&report, n, |id| {
            format!("f{}.txt", id.trim_start_matches('p'))
        });
        let edited: Vec<_> = (0..n)
            .map(|i| (format!("f{i:03}.txt"), format!("edited {i}\n")))
            .collect();
        check_tree(&dir, "main", &edited);
        let per = |s: f64| s * 1000.0 / n as f64;
        println!(
            "start, {n} packets, instant scripted agents, waves of 10, max_parallel 16: per packet {:.1} ms (executing {:.1} ms, integrating {:.1} ms, CPU {:.1} ms); total {total:.2} s; load average {load} at start, {} at end",
            per(total),
            per(phase(&report, "executing")),
            per(phase(&report, "integrating")),
            per(cpu.as_secs_f64()),
            load_average()
        );
        if std::env::var_os("START_BENCH_KEEP").is_some() {
            println!("kept {}", tmp.keep().display());
        } else {
            keep.push(tmp);
        }
    }
}

/// Measures the 100-packet plan `START_BENCH_RUNS` times (default 1) and prints the median:
/// each run's repositories are kept until the bench ends (in `keep`), so no measured run
/// starts right after the bench deleted a previous run's files, which on a file system that
/// defers reusing just-freed inodes (ext4 without a journal: 60 s, or 360 s while unwritten)
/// makes every file created meanwhile cost more. A run's own removals still count.
fn overhead(keep: &mut Vec<tempfile::TempDir>) {
    let runs: usize = std::env::var("START_BENCH_RUNS")
        .ok()
        .map(|s| s.parse().expect("START_BENCH_RUNS: a number of runs"))
        .unwrap_or(1)
        .max(1);
    let mut totals: Vec<f64> = (0..runs).map(|_| overhead_once(keep)).collect();
    if runs > 1 {
        let each: Vec<String> = totals.iter().map(|t| format!("{t:.2}")).collect();
        totals.sort_by(f64::total_cmp);
        println!(
            "start, 100 packets, instant scripted agents: median of {runs} runs {:.2} s (runs: {} s); goal ≤ 10 s",
            totals[runs / 2],
            each.join(", ")
        );
    }
}

/// One measurement of [`overhead`]; returns the instant-agent run's wall time in seconds.
fn overhead_once(keep: &mut Vec<tempfile::TempDir>) -> f64 {
    const N: usize = 100;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("repo");
    repo(&dir, N);
    let plan = waves_plan(N);
    let model = MockModel::start_unrecorded(parse_scripts(&scripts(&plan, N)).unwrap()).unwrap();
    println!("load average at start: {}", load_average());
    let (began, cpu) = (Instant::now(), cpu_time());
    let report = run(&dir, &model, "Edit a hundred files", None, true);
    let total = began.elapsed().as_secs_f64();
    // Each packet `pNNN` changed `fNNN.txt`, and `main` holds every edit.
    let file_of = |id: &str| format!("f{}.txt", id.trim_start_matches('p'));
    check_packets(&report, N, file_of);
    let edited: Vec<_> = (0..N)
        .map(|i| (format!("f{i:03}.txt"), format!("edited {i}\n")))
        .collect();
    check_tree(&dir, "main", &edited);
    println!("  instant scripted agents, per phase:");
    breakdown(&dir, &report, cpu);
    // The same plan with a trivial external worker (one line appended to the packet's own
    // file): what the engine and gates cost alone.
    let tmp2 = tempfile::tempdir().unwrap();
    let dir2 = tmp2.path().join("repo");
    repo(&dir2, N);
    let (began2, cpu2) = (Instant::now(), cpu_time());
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
    println!("  trivial --worker-cmd, per phase:");
    breakdown(&dir2, &alone, cpu2);
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
    keep.extend([tmp, tmp2]);
    total
}

fn makespan(keep: &mut Vec<tempfile::TempDir>) {
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
    let model = MockModel::start_unrecorded(parse_scripts(&scripts(&plan, 0)).unwrap()).unwrap();
    // The worker appends to its packet's file (`pNN-dD` owns `f0NN.txt`), then sleeps for
    // the duration written in its packet id, computed by the shell itself (no sed/awk
    // processes) so the simulated agent takes its duration and no more.
    let worker = concat!(
        "i=${ORCHESTRA_PACKET%%-d*}; echo done >> \"f0${i#p}.txt\"; ",
        "d=${ORCHESTRA_PACKET##*-d}; f=$((1000 + d % 1000)); exec sleep $((d / 1000)).${f#1}"
    )
    .to_string();
    let cpu = cpu_time();
    let report = run(&dir, &model, "Simulated durations", Some(worker), false);
    if std::env::var_os("START_BENCH_KEEP").is_some() {
        println!("kept {}", tmp.keep().display());
    } else {
        keep.push(tmp);
    }
    check_packets(&report, N, |id| {
        format!(
            "f0{}.txt",
            id.trim_start_matches('p').split("-d").next().unwrap_or("")
        )
    });
    let executing = phase(&report, "executing");
    println!("  per phase:");
    breakdown(&dir, &report, cpu);
    critical_breakdown(&dir, &report, &deps, &dur);
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
    // Every measured run's repositories, deleted only once all are measured.
    let mut keep = Vec::new();
    if only.as_deref().is_none_or(|o| o == "overhead") {
        overhead(&mut keep);
    }
    if only.as_deref().is_none_or(|o| o == "makespan") {
        makespan(&mut keep);
    }
    // `-- scale` only: a thousand packets take minutes.
    if only.as_deref() == Some("scale") {
        scale(&mut keep);
    }
}

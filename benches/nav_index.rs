//! Index benchmarks on the installed Python standard library committed into a temporary
//! repository: cold index vs `ctags -R`, warm index of a second worktree, one-file re-index,
//! query latency and peak memory, and the whole-process first answer of `nav def`/`nav refs` in
//! a fresh clone and in a second worktree — figures side by side in one run.
//!
//! Run with `cargo bench --bench nav_index`. Set `NAV_BENCH_SRC` to index another tree, and
//! `NAV_BENCH_ONLY=first` to time the first answers alone.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use git_orchestra::nav::{Extractor, Index, Lang};

#[path = "support/mod.rs"]
mod support;
use support::{git, init_and_commit};

fn stdlib() -> PathBuf {
    if let Ok(p) = std::env::var("NAV_BENCH_SRC") {
        return PathBuf::from(p);
    }
    let out = Command::new("python3")
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['stdlib'])",
        ])
        .output()
        .unwrap();
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// Copies the .py files of `src` (skipping site-packages) into `dst`; returns (files, bytes).
fn copy_py(src: &Path, dst: &Path) -> (usize, u64) {
    let (mut files, mut bytes) = (0, 0);
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            let ft = e.file_type().unwrap();
            if ft.is_dir() && name != "site-packages" && name != "__pycache__" {
                stack.push(p);
            } else if ft.is_file() && name.ends_with(".py") {
                let rel = p.strip_prefix(src).unwrap();
                let to = dst.join(rel);
                std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                bytes += std::fs::copy(&p, &to).unwrap();
                files += 1;
            }
        }
    }
    (files, bytes)
}

fn peak_rss_mb() -> f64 {
    // SAFETY: getrusage only writes the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    usage.ru_maxrss as f64 / 1024.0
}

fn cpu_s() -> f64 {
    // SAFETY: getrusage only writes the struct we pass.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    t(u.ru_utime) + t(u.ru_stime)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let (files, bytes) = copy_py(&stdlib(), &repo);
    init_and_commit(&repo, "stdlib");
    println!("tree: {files} .py files, {:.1} MB", bytes as f64 / 1e6);
    if std::env::var("NAV_BENCH_ONLY").as_deref() == Ok("first") {
        first_answers(tmp.path(), &repo);
        return;
    }

    let ctags_time = ctags(tmp.path(), &repo);
    let db = tmp.path().join("nav.db");
    // Both indexes stay open to the end, as an agent's would.
    let _index = cold_index(&repo, &db, ctags_time);
    let wt = tmp.path().join("wt2");
    let mut second = warm_index_of_a_second_worktree(&repo, &wt, &db, ctags_time);
    reindex_one_file(&mut second, &wt);
    query_latency(&second);
    println!("peak RSS at end: {:.0} MB", peak_rss_mb());

    first_answers(tmp.path(), &repo);
    matcher_vs_query_cursor(&repo);
}

/// Times `git orchestra nav def|refs NAME` as a user meets it — a whole process — for the
/// first query in a worktree never indexed (cache removed before each), and for a query in a
/// second worktree of a commit already indexed, against `ctags -R` (also a whole process, the
/// median of three) on the same tree. Names are chosen by rule: every tenth of the sorted,
/// distinct names ctags finds. The background build a first query starts is switched off
/// (`ORCHESTRA_NAV_NO_WARM`), so that it does not run into the next measurement.
fn first_answers(tmp: &Path, repo: &Path) {
    let bin = env!("CARGO_BIN_EXE_git-orchestra");
    let tags = tmp.join("tags-first");
    let mut ctags_runs: Vec<Duration> = (0..3)
        .map(|_| {
            let t = Instant::now();
            let ok = Command::new("ctags")
                .args(["-R", "-f", tags.to_str().unwrap(), "."])
                .current_dir(repo)
                .output()
                .is_ok_and(|o| o.status.success());
            if !ok {
                return Duration::ZERO;
            }
            t.elapsed()
        })
        .collect();
    ctags_runs.sort();
    let ctags_time = ctags_runs[1];
    if ctags_time.is_zero() {
        println!("first answers: ctags not available");
        return;
    }
    // Lines quote the source, which need not be UTF-8.
    let text = String::from_utf8_lossy(&std::fs::read(&tags).unwrap_or_default()).into_owned();
    let mut names: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with("!_"))
        .filter_map(|l| l.split('\t').next())
        .filter(|n| n.len() > 2 && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    names.sort();
    names.dedup();
    if names.len() < 10 {
        println!(
            "first answers: ctags listed {} names in {} ({} bytes); skipped",
            names.len(),
            tags.display(),
            text.len()
        );
        return;
    }
    let picked: Vec<&str> = (0..10).map(|i| names[i * names.len() / 10]).collect();
    let common = repo.join(".git");
    let run = |dir: &Path, args: &[&str]| -> Duration {
        let t = Instant::now();
        let out = Command::new(bin)
            .args(args)
            .current_dir(dir)
            .env("ORCHESTRA_NAV_NO_WARM", "1")
            .output()
            .unwrap();
        let took = t.elapsed();
        assert!(
            out.status.success() || out.status.code() == Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        took
    };
    let mut first: Vec<(f64, String)> = Vec::new();
    for name in &picked {
        for query in ["def", "refs"] {
            for f in ["nav.db", "nav.db-wal", "nav.db-shm"] {
                let _ = std::fs::remove_file(common.join("orchestra").join(f));
            }
            let took = run(repo, &["nav", query, name]);
            first.push((
                took.as_secs_f64() / ctags_time.as_secs_f64(),
                format!("{query} {name}"),
            ));
        }
    }
    // The whole index, then a second worktree of the same commit.
    let out = Command::new(bin)
        .args(["nav", "warm"])
        .current_dir(repo)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "nav warm: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let wt = tmp.join("wt-first");
    git(
        repo,
        &["worktree", "add", "-q", "--detach", wt.to_str().unwrap()],
    );
    let mut second: Vec<(f64, String)> = Vec::new();
    for name in &picked {
        for query in ["def", "refs"] {
            let took = run(&wt, &["nav", query, name]);
            second.push((
                took.as_secs_f64() / ctags_time.as_secs_f64(),
                format!("{query} {name}"),
            ));
        }
    }
    let report = |label: &str, mut v: Vec<(f64, String)>| {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        let median = v[v.len() / 2].0;
        let slowest = v.last().unwrap();
        println!(
            "{label}: {} queries, ratio to ctags -R ({:.0} ms): median {median:.2}x, slowest {:.2}x ({})",
            v.len(),
            ms(ctags_time),
            slowest.0,
            slowest.1
        );
    };
    println!("first answers: names {}", picked.join(", "));
    report("first answer in a fresh clone (whole process)", first);
    report(
        "query in a second worktree of an indexed commit (whole process)",
        second,
    );
}

/// Runs `ctags -R` over `repo` (tags file in `tmp`) and returns how long it took.
fn ctags(tmp: &Path, repo: &Path) -> Duration {
    let t = Instant::now();
    let ctags = Command::new("ctags")
        .args(["-R", "-f", tmp.join("tags").to_str().unwrap(), "."])
        .current_dir(repo)
        .output();
    let ctags_time = t.elapsed();
    match ctags {
        Ok(o) if o.status.success() => println!("ctags -R: {:.0} ms", ms(ctags_time)),
        _ => println!("ctags -R: not available"),
    }

    ctags_time
}

/// Indexes `repo` from nothing with its cache at `db`, and returns the index.
fn cold_index(repo: &Path, db: &Path, ctags_time: Duration) -> Index {
    let cpu0 = cpu_s();
    let t = Instant::now();
    let mut index = Index::open_with_cache(repo, db).unwrap();
    let cold = index.refresh().unwrap();
    let cold_time = t.elapsed();
    let rss_cold = peak_rss_mb();
    println!(
        "cold index: {:.0} ms wall, {:.1} s CPU ({:.2}x ctags wall), parsed {} files, peak RSS {:.0} MB, cache {:.1} MB",
        ms(cold_time),
        cpu_s() - cpu0,
        cold_time.as_secs_f64() / ctags_time.as_secs_f64(),
        cold.parsed,
        rss_cold,
        std::fs::metadata(db).map(|m| m.len()).unwrap_or(0) as f64 / 1e6
    );

    index
}

/// Adds a second worktree of `repo` at `wt` and indexes it with the cache at `db` that the
/// cold index filled; returns its index.
fn warm_index_of_a_second_worktree(
    repo: &Path,
    wt: &Path,
    db: &Path,
    ctags_time: Duration,
) -> Index {
    git(
        repo,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "second",
            wt.to_str().unwrap(),
        ],
    );
    let cpu0 = cpu_s();
    let t = Instant::now();
    let mut second = Index::open_with_cache(wt, db).unwrap();
    let warm = second.refresh().unwrap();
    let warm_time = t.elapsed();
    println!(
        "warm index of a second worktree: {:.0} ms wall, {:.2} s CPU ({:.2}x ctags wall), parsed {} files, loaded {} from cache",
        ms(warm_time),
        cpu_s() - cpu0,
        warm_time.as_secs_f64() / ctags_time.as_secs_f64(),
        warm.parsed,
        warm.cached
    );

    second
}

/// Refreshes `second` (the index of worktree `wt`) with nothing changed, then after a
/// one-file edit: in a fresh worktree, and in steady state.
fn reindex_one_file(second: &mut Index, wt: &Path) {
    let t = Instant::now();
    let noop = second.refresh().unwrap();
    println!(
        "no-change refresh: {:.1} ms (parsed {})",
        ms(t.elapsed()),
        noop.parsed
    );
    let target = wt.join("json/decoder.py");
    if target.is_file() {
        let mut text = std::fs::read_to_string(&target).unwrap();
        text.push_str("\ndef added_by_bench():\n    return 1\n");
        std::fs::write(&target, text).unwrap();
        let t = Instant::now();
        let edit = second.refresh().unwrap();
        println!(
            "one-file edit re-index, fresh worktree: {:.1} ms (parsed {})",
            ms(t.elapsed()),
            edit.parsed
        );
        // Files written in the same second as git's index are "racily clean": git re-reads
        // them. Steady state is measured once the worktree is older than its index.
        std::thread::sleep(Duration::from_millis(1100));
        git(wt, &["status", "--porcelain"]);
        second.refresh().unwrap();
        let mut times = Vec::new();
        let cpu0 = cpu_s();
        for i in 0..5 {
            let mut text = std::fs::read_to_string(&target).unwrap();
            text.push_str(&format!("\ndef added_{i}():\n    return {i}\n"));
            std::fs::write(&target, text).unwrap();
            let t = Instant::now();
            let edit = second.refresh().unwrap();
            times.push(ms(t.elapsed()));
            assert_eq!(edit.parsed, 1);
        }
        let cpu_ms = (cpu_s() - cpu0) * 1000.0 / 5.0;
        times.sort_by(f64::total_cmp);
        println!(
            "one-file edit re-index, steady state: median {:.1} ms wall of 5, {cpu_ms:.1} ms CPU each",
            times[2]
        );
    }
}

/// Measures query latency on the warm index: common and rare names.
fn query_latency(second: &Index) {
    let names = [
        "get",
        "run",
        "__init__",
        "Path",
        "loads",
        "JSONDecoder",
        "urlopen",
        "TestCase",
        "join",
        "ArgumentParser",
    ];
    let mut lat: Vec<Duration> = Vec::new();
    let mut sizes = 0usize;
    for round in 0..3 {
        for n in names {
            let t = Instant::now();
            let r = match round {
                0 => second.references(n).map(|v| v.len()),
                1 => second.callers(n).map(|v| v.len()),
                _ => second.definition(n, None).map(|v| v.len()),
            };
            lat.push(t.elapsed());
            sizes += r.unwrap_or(0);
        }
    }
    lat.sort();
    let p = |q: f64| ms(lat[((lat.len() as f64 - 1.0) * q) as usize]);
    println!(
        "query latency (refs/callers/def, {} queries, {sizes} results): p50 {:.1} ms, p99 {:.1} ms",
        lat.len(),
        p(0.5),
        p(0.99)
    );
}

/// Extraction of every file on one thread, patterns run by the walk matcher and by
/// tree-sitter's query cursor, side by side; the facts must be the same.
fn matcher_vs_query_cursor(repo: &Path) {
    let mut files = Vec::new();
    let mut stack = vec![repo.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                if e.file_name() != ".git" {
                    stack.push(p);
                }
            } else if p.extension().is_some_and(|x| x == "py") {
                files.push(std::fs::read(&p).unwrap());
            }
        }
    }
    let run = |mut extractor: Extractor| {
        let t = Instant::now();
        let facts: Vec<_> = files
            .iter()
            .map(|f| extractor.extract(Lang::Python, f).unwrap())
            .collect();
        (t.elapsed(), facts)
    };
    // Alternate, keeping each one's best of three.
    let (mut walk, mut cursor) = (Duration::MAX, Duration::MAX);
    let (mut walk_facts, mut cursor_facts) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let (t, f) = run(Extractor::new());
        walk = walk.min(t);
        walk_facts = f;
        let (t, f) = run(Extractor::with_query_cursor_only());
        cursor = cursor.min(t);
        cursor_facts = f;
    }
    let same = walk_facts
        .iter()
        .zip(&cursor_facts)
        .filter(|(a, b)| a == b)
        .count();
    println!(
        "parse + extract on one thread, best of 3: walk matcher {:.0} ms, tree-sitter query cursor {:.0} ms ({:.2}x); facts identical in {same} of {} files",
        ms(walk),
        ms(cursor),
        walk.as_secs_f64() / cursor.as_secs_f64(),
        files.len()
    );
    parse_and_cursor_costs(&files);
}

/// The costs the extraction is built from, on one thread: parsing alone; a plain cursor walk
/// of every tree; tree-sitter's query cursor running one single-node pattern.
fn parse_and_cursor_costs(files: &[Vec<u8>]) {
    use streaming_iterator::StreamingIterator;
    let language = Lang::Python.grammar();
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&language).unwrap();
    let t = Instant::now();
    let trees: Vec<tree_sitter::Tree> = files
        .iter()
        .map(|f| parser.parse(f, None).unwrap())
        .collect();
    let parse = t.elapsed();
    let t = Instant::now();
    let mut nodes = 0usize;
    for tree in &trees {
        let mut c = tree.walk();
        'tree: loop {
            nodes += 1;
            if c.goto_first_child() {
                continue;
            }
            while !c.goto_next_sibling() {
                if !c.goto_parent() {
                    break 'tree;
                }
            }
        }
    }
    let walk = t.elapsed();
    let query = tree_sitter::Query::new(&language, "(identifier) @name").unwrap();
    let mut cursor = tree_sitter::QueryCursor::new();
    let t = Instant::now();
    let mut matched = 0usize;
    for (tree, f) in trees.iter().zip(files) {
        let mut m = cursor.matches(&query, tree.root_node(), f.as_slice());
        while m.next().is_some() {
            matched += 1;
        }
    }
    let one_pattern = t.elapsed();
    println!(
        "one thread: parsing alone {:.0} ms; plain cursor walk of the trees {:.0} ms ({nodes} nodes); query cursor with one single-node pattern {:.0} ms ({matched} matches, {:.2}x the walk)",
        ms(parse),
        ms(walk),
        ms(one_pattern),
        one_pattern.as_secs_f64() / walk.as_secs_f64()
    );
}

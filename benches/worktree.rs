//! Benchmarks "worktree ready" (our `create`, including validation) against `git worktree add`.
//!
//! Run with `cargo bench --bench worktree`. Fixtures: a generated repository of ~200 files, and
//! the installed Python standard library (without site-packages and `__pycache__`, ≈ 2,450
//! files, ≈ 100 MB) committed once and packed. Fixture repositories are cached under the system
//! temp directory (`git-orchestra-bench/`), so only the first run pays for building them. With
//! `ORCHESTRA_BENCH_HUGE=1` the interpreter's whole `lib` tree is measured too. The last table
//! compares sparse packet worktrees (`[worktree] sparse`) with full ones; `WORKTREE_BENCH=sparse`
//! runs that table alone, `WORKTREE_BENCH=threshold` gix's checkout beside git's parallel one on
//! generated trees of 200 to 10,000 files (the crossover behind `PARALLEL_CHECKOUT_FILES`),
//! `WORKTREE_BENCH=large` every table on the generated 50,000-file tree
//! (the first beside the 200-file one, for gix's and git's checkout on both sides of
//! `PARALLEL_CHECKOUT_FILES`), `WORKTREE_BENCH=run` a whole one-packet `git orchestra run --merge` (fresh, a first
//! run and a later one in the default configuration, which recycles) beside `git worktree
//! add` on the stdlib, and `WORKTREE_BENCH=run-quiet` the same on a disk left without
//! deletions for `QUIET_BENCH_WAIT` seconds first.
//!
//! Every variant creates a worktree on a new branch at the fixture's HEAD; removal is not
//! timed (it runs between iterations with `git worktree remove --force` and `git branch -D`).
//! Variants run interleaved, so disk-cache warmth and background load hit them alike. Besides
//! wall time, the CPU time each variant costs (user + system, this process's threads and the git
//! processes it waits for) is reported: on a machine shared with builds, CPU time is the steadier
//! figure.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use git_orchestra::git::{
    CheckoutMethod, Created, PARALLEL_CHECKOUT_FILES, RepoInfo, Reuse, WorktreeRequest,
    add_checked_out_by, cone, create, create_sparse, enable_worktree_config, park,
};

#[path = "support/mod.rs"]
mod support;
use support::git;

/// Bumped when fixture contents change, so stale caches are rebuilt.
const FIXTURE_VERSION: u32 = 1;

fn main() {
    hermetic();
    let cache = std::env::temp_dir().join("git-orchestra-bench");
    let stdlib = python_path("stdlib");
    let only = std::env::var("WORKTREE_BENCH").unwrap_or_default();
    if only == "sparse" {
        sparse(&cache, stdlib.as_deref());
        return;
    }
    if only == "threshold" {
        threshold(&cache);
        return;
    }
    if only == "run" {
        let stdlib = stdlib.expect("python3's standard library, for the `run` table");
        one_packet_runs(&cache, &copied_fixture(&cache, "stdlib", &stdlib, true));
        return;
    }
    if only == "run-quiet" {
        let stdlib = stdlib.expect("python3's standard library, for the `run-quiet` table");
        quiet_one_packet_runs(&cache, &copied_fixture(&cache, "stdlib", &stdlib, true));
        return;
    }
    let large = only == "large";
    let mut fixtures: Vec<(String, PathBuf, usize)> = if large {
        vec![
            ("generated (200 files)".into(), small_fixture(&cache), 10),
            ("generated (50k files)".into(), large_fixture(&cache), 3),
        ]
    } else {
        vec![("generated (200 files)".into(), small_fixture(&cache), 10)]
    };
    match &stdlib {
        _ if large => {}
        Some(dir) => fixtures.push((
            "python stdlib".into(),
            copied_fixture(&cache, "stdlib", dir, true),
            3,
        )),
        None => eprintln!("python3 not found: skipping the stdlib fixture"),
    }
    if std::env::var_os("ORCHESTRA_BENCH_HUGE").is_some()
        && let Some(lib) = stdlib.as_deref().and_then(Path::parent)
    {
        fixtures.push((
            "python lib (huge)".into(),
            copied_fixture(&cache, "pylib", lib, false),
            3,
        ));
    }

    println!("load average at start: {}", load_average());
    println!(
        "{:<22} {:>5} {:>6} {:<5}| {:>10} {:>10} {:>10} {:>10} {:>10} | {:>8} {:>8} {:>8}",
        "fixture",
        "files",
        "MB",
        "",
        "ours ready",
        "gix co",
        "ours -j co",
        "git add",
        "git add -j",
        "ours/git",
        "ours/-j",
        "gix/-j co"
    );
    for (name, repo, iterations) in &fixtures {
        let (files, bytes) = tree_size(repo);
        let samples = measure(repo, *iterations);
        for (label, pick) in [("wall", 0), ("cpu", 1)] {
            let medians: Vec<Duration> = samples
                .iter()
                .map(|s| median(&s.iter().map(|m| [m.wall, m.cpu][pick]).collect::<Vec<_>>()))
                .collect();
            let ratio = |a: usize, b: usize| medians[a].as_secs_f64() / medians[b].as_secs_f64();
            println!(
                "{:<22} {:>5} {:>6.1} {:<5}| {:>10} {:>10} {:>10} {:>10} {:>10} | {:>8.2} {:>8.2} {:>8.2}",
                if pick == 0 { name.as_str() } else { "" },
                files,
                bytes as f64 / 1e6,
                label,
                ms(medians[0]),
                ms(medians[1]),
                ms(medians[2]),
                ms(medians[3]),
                ms(medians[4]),
                ratio(0, 3),
                ratio(0, 4),
                ratio(1, 2),
            );
        }
    }
    println!(
        "\nmedians of {{10, 3, 3}} runs after one warm-up; wall = elapsed, cpu = user+sys of this \
process and its git children. ours ready = create(): branch, checkout (gix's below {} files, \
git's parallel one from there on), index, validation (git status); gix co = branch + gix \
checkout only; ours -j co = branch + our registration and git's `read-tree -u` with \
`checkout.workers=0`; git add = `git worktree add -b`; git add -j = the same with \
`-c checkout.workers=0`; gix/-j co is the crossover figure. Removal is not timed.",
        PARALLEL_CHECKOUT_FILES
    );
    if large {
        recycling(&cache, &[]);
        sparse(&cache, None);
    } else {
        recycling(&cache, &fixtures);
        sparse(&cache, stdlib.as_deref());
    }
}

/// Prints the sparse table: a packet declaring one directory of the fixture gets a sparse
/// worktree (its directory and the top-level files) or a full one (`create`, and
/// `git worktree add -b`): time to ready and what the checkout puts on disk.
fn sparse(cache: &Path, stdlib: Option<&Path>) {
    let mut all = vec![(
        "generated (50k files)".to_string(),
        large_fixture(cache),
        "d007/**",
    )];
    if let Some(dir) = stdlib {
        all.push((
            "python stdlib".into(),
            copied_fixture(cache, "stdlib", dir, true),
            "json/**",
        ));
    }
    println!(
        "\n{:<22} {:>6} | {:>10} {:>10} {:>10} | {:>9} {:>9} | {:>16} {:>16} {:>8}",
        "fixture",
        "files",
        "sparse",
        "full",
        "git add",
        "sp/git",
        "full/git",
        "sparse disk",
        "full disk",
        "sp/full"
    );
    for (name, repo, declared) in &all {
        let (times, disk) = measure_sparse(repo, declared, 3);
        let medians: Vec<Duration> = times.iter().map(|t| median(t)).collect();
        let ratio = |a: Duration| a.as_secs_f64() / medians[2].as_secs_f64();
        println!(
            "{:<22} {:>6} | {:>10} {:>10} {:>10} | {:>9.2} {:>9.2} | {:>16} {:>16} {:>8.3}",
            name,
            tree_size(repo).0,
            ms(medians[0]),
            ms(medians[1]),
            ms(medians[2]),
            ratio(medians[0]),
            ratio(medians[1]),
            format!("{} f, {:.1} MB", disk[0].0, disk[0].1 as f64 / 1e6),
            format!("{} f, {:.1} MB", disk[1].0, disk[1].1 as f64 / 1e6),
            disk[0].1 as f64 / disk[1].1 as f64,
        );
    }
    println!(
        "\nwall-clock medians of 3 runs after a warm-up; a packet declaring one directory \
(`d007/**`, `json/**`); sparse = create_sparse(): branch, worktree registered without a checkout, \
cone set, checkout of the cone, validation; full = create(); git add = `git worktree add -b`. \
Disk = files and bytes the checkout wrote (allocated blocks), the worktree's .git file aside."
    );
}

/// Times sparse, full and `git worktree add` worktrees of a packet declaring `declared`, and
/// returns the times and the (files, bytes on disk) of a sparse and a full checkout.
fn measure_sparse(
    repo: &Path,
    declared: &str,
    iterations: usize,
) -> ([Vec<Duration>; 3], [(usize, u64); 2]) {
    let info = RepoInfo::discover(repo).unwrap();
    enable_worktree_config(&info.git()).unwrap();
    let root = repo.parent().unwrap().join("sparse");
    let _ = std::fs::remove_dir_all(&root);
    git(repo, &["worktree", "prune"]);
    let cone = cone(&[declared.to_string()], &[], &info.toplevel).unwrap();
    let mut times: [Vec<Duration>; 3] = Default::default();
    let mut disk = [(0, 0); 2];
    for round in 0..=iterations {
        for variant in 0..3 {
            let branch = format!("bench/s{variant}-{round}");
            let path = root.join(format!("s{variant}-{round}"));
            let started = Instant::now();
            let req = WorktreeRequest {
                repo: &info,
                path: &path,
                branch: &branch,
                base: &info.head,
                reuse: Reuse::ReportDirty,
            };
            match variant {
                0 => {
                    create_sparse(&req, &cone).unwrap();
                }
                1 => {
                    create(&req).unwrap();
                }
                _ => {
                    git(
                        repo,
                        &["worktree", "add", "-q", "-b", &branch, path_str(&path)],
                    );
                }
            };
            let wall = started.elapsed();
            check_worktree(&path, &info.head);
            if round > 0 {
                times[variant].push(wall);
            }
            if variant < 2 {
                disk[variant] = disk_use(&path);
            }
            git(
                repo,
                &["worktree", "remove", "--force", "--force", path_str(&path)],
            );
            git(repo, &["branch", "-q", "-D", &branch]);
        }
    }
    (times, disk)
}

/// Returns the files under `dir` (its `.git` file aside) and the bytes allocated to them.
fn disk_use(dir: &Path) -> (usize, u64) {
    use std::os::unix::fs::MetadataExt;
    let (mut files, mut bytes) = (0, 0);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                stack.push(entry.path());
                bytes += meta.blocks() * 512;
            } else if !(d == dir && entry.file_name() == ".git") {
                files += 1;
                bytes += meta.blocks() * 512;
            }
        }
    }
    (files, bytes)
}

/// Prints the recycling table: a packet's worktree at a commit that changes 10 files of the
/// fixture, made fresh, by `git worktree add`, and recycled from a parked worktree of the
/// fixture's HEAD, on the fixtures and on a generated 50,000-file tree.
fn recycling(cache: &Path, fixtures: &[(String, PathBuf, usize)]) {
    let mut all: Vec<(String, PathBuf, usize)> = fixtures.to_vec();
    all.push(("generated (50k files)".into(), large_fixture(cache), 3));
    println!(
        "\n{:<22} {:>6} | {:>10} {:>10} {:>10} | {:>9} {:>9}",
        "fixture", "files", "fresh", "git add", "recycled", "fresh/git", "recy/git"
    );
    for (name, repo, iterations) in &all {
        let next = next_commit(repo);
        let samples = measure_recycled(repo, &next, *iterations);
        let medians: Vec<Duration> = samples
            .iter()
            .map(|s| median(&s.iter().map(|m| m.wall).collect::<Vec<_>>()))
            .collect();
        let ratio = |a: Duration| a.as_secs_f64() / medians[1].as_secs_f64();
        println!(
            "{:<22} {:>6} | {:>10} {:>10} {:>10} | {:>9.2} {:>9.2}",
            name,
            tree_size(repo).0,
            ms(medians[0]),
            ms(medians[1]),
            ms(medians[2]),
            ratio(medians[0]),
            ratio(medians[2]),
        );
    }
    println!(
        "\nwall-clock medians; fresh = create() of a new branch at the next commit; git add = \
`git worktree add -b` there; recycled = create() taking a parked worktree of the previous commit \
(`[worktree] recycle`): move, branch, checkout of the 10 files that differ, validation."
    );
}

/// Returns a commit on top of the fixture's HEAD that changes 10 of its files (made once).
fn next_commit(repo: &Path) -> String {
    let existing = git(
        repo,
        &["for-each-ref", "--format=%(objectname)", "refs/bench/next"],
    );
    if !existing.is_empty() {
        return existing;
    }
    let files = git(repo, &["ls-files"]);
    let scratch = repo.parent().unwrap().join("next-commit");
    let _ = std::fs::remove_dir_all(&scratch);
    git(
        repo,
        &["worktree", "add", "-q", "--detach", path_str(&scratch)],
    );
    for file in files
        .lines()
        .step_by(files.lines().count() / 10 + 1)
        .take(10)
    {
        let path = scratch.join(file);
        if path.is_file() && !path.is_symlink() {
            let mut text = std::fs::read(&path).unwrap();
            text.extend_from_slice(b"\n# changed\n");
            std::fs::write(&path, text).unwrap();
        }
    }
    git(&scratch, &["commit", "-qam", "next"]);
    let next = git(&scratch, &["rev-parse", "HEAD"]);
    git(repo, &["update-ref", "refs/bench/next", &next]);
    git(repo, &["worktree", "remove", "--force", path_str(&scratch)]);
    next
}

/// Times fresh, `git worktree add` and recycled creation at `next`, interleaved.
fn measure_recycled(repo: &Path, next: &str, iterations: usize) -> [Vec<Sample>; 3] {
    let info = RepoInfo::discover(repo).unwrap();
    let root = repo.parent().unwrap().join("recycling");
    let _ = std::fs::remove_dir_all(&root);
    git(repo, &["worktree", "prune"]);
    let mut times: [Vec<Sample>; 3] = Default::default();
    for round in 0..=iterations {
        // A parked worktree of HEAD, as an integrated packet leaves it (not timed).
        let parked = root.join("old").join(format!("p{round}"));
        let old_branch = format!("bench/old-{round}");
        create(&WorktreeRequest {
            repo: &info,
            path: &parked,
            branch: &old_branch,
            base: &info.head,
            reuse: Reuse::ReportDirty,
        })
        .unwrap();
        park(&info, &parked, 1).unwrap().expect("parked");
        // Recycled first: it empties the pool, so the other two find nothing there to take.
        for variant in [2, 0, 1] {
            let branch = format!("bench/r{variant}-{round}");
            let path = root.join(format!("run{variant}")).join(format!("q{round}"));
            let started = Instant::now();
            if variant == 1 {
                git(
                    repo,
                    &[
                        "worktree",
                        "add",
                        "-q",
                        "-b",
                        &branch,
                        path_str(&path),
                        next,
                    ],
                );
            } else {
                let (_, how) = create(&WorktreeRequest {
                    repo: &info,
                    path: &path,
                    branch: &branch,
                    base: next,
                    reuse: Reuse::ReportDirty,
                })
                .unwrap();
                assert_eq!(matches!(how, Created::Recycled { .. }), variant == 2);
            }
            let wall = started.elapsed();
            check_worktree(&path, next);
            if round > 0 {
                times[variant].push(Sample {
                    wall,
                    cpu: Duration::ZERO,
                });
            }
            git(repo, &["worktree", "remove", "--force", path_str(&path)]);
            git(repo, &["branch", "-q", "-D", &branch]);
        }
        git(repo, &["branch", "-q", "-D", &old_branch]);
    }
    times
}

/// Rounds of the whole-process table measured after its warm-up round.
const RUN_ROUNDS: usize = 5;

/// Flushes the machine's dirty pages to disk (`sync`), outside any timed span.
fn settle_disk() {
    let _ = Command::new("sync").status();
}

/// Prints the whole-process table (`WORKTREE_BENCH=run`): `git orchestra run --merge` of one
/// packet whose worker appends a line to one file, as a user meets it (process start,
/// worktree, worker, commit, gates, integration), beside `git worktree add -b` of the same
/// commit; wall and CPU medians. Three ways a run meets its worktree:
/// - fresh: `[worktree] recycle = 0`, so it checks a whole tree out and removes it at its end;
/// - first: the default configuration with an empty pool (a run's first packet), so it checks
///   a whole tree out and parks it at its end; the parked worktree is removed untimed;
/// - default: the default configuration, taking the worktree the previous run parked.
fn one_packet_runs(cache: &Path, fixture: &Path) {
    let (root, repo) = runs_clone(cache, "one-packet-runs", fixture);
    let fresh_config = root.join("fresh-config/git-orchestra");
    std::fs::create_dir_all(&fresh_config).unwrap();
    std::fs::write(
        fresh_config.join("config.toml"),
        "[worktree]\nrecycle = 0\n",
    )
    .unwrap();
    let default_config = root.join("default-config");
    std::fs::create_dir_all(&default_config).unwrap();
    let mut samples: [Vec<Sample>; 4] = Default::default();
    for round in 0..=RUN_ROUNDS {
        for (variant, slot) in samples.iter_mut().enumerate() {
            let before = git(&repo, &["rev-parse", "HEAD"]);
            // What the previous sample wrote and deleted reaches the disk first (untimed), so
            // no variant pays for another's write-back.
            settle_disk();
            let cpu_before = cpu_time();
            let started = Instant::now();
            if RUN_LABELS[variant] == "git add" {
                let path = root.join(format!("plain-{round}"));
                let branch = format!("bench/plain-{round}");
                git(
                    &repo,
                    &["worktree", "add", "-q", "-b", &branch, path_str(&path)],
                );
                let wall = started.elapsed();
                let cpu = cpu_time().saturating_sub(cpu_before);
                check_worktree(&path, &before);
                git(&repo, &["worktree", "remove", "--force", path_str(&path)]);
                if round > 0 {
                    slot.push(Sample { wall, cpu });
                }
                continue;
            }
            // A pool per variant (`<root>/.recycle/`), and for `first` one per round: fresh
            // and first runs find none to take.
            let worktrees = match RUN_LABELS[variant] {
                "first" => root.join(format!("worktrees-first-{round}")),
                _ => root.join(format!("worktrees-{variant}")),
            };
            let config = match RUN_LABELS[variant] {
                "fresh" => fresh_config.parent().unwrap(),
                _ => default_config.as_path(),
            };
            let plan = root.join(format!("plan-{variant}-{round}.toml"));
            one_run(&repo, &plan, &worktrees, config);
            let wall = started.elapsed();
            let cpu = cpu_time().saturating_sub(cpu_before);
            check_run(&repo, &before);
            if RUN_LABELS[variant] == "first" {
                // The worktree it parked is no later run's: removed, untimed.
                let pool = worktrees.join(".recycle");
                let parked: Vec<PathBuf> = std::fs::read_dir(&pool)
                    .map(|d| d.flatten().map(|e| e.path()).collect())
                    .unwrap_or_default();
                assert_eq!(parked.len(), 1, "the first run parked no worktree");
                for wt in parked {
                    git(&repo, &["worktree", "remove", "--force", path_str(&wt)]);
                }
            }
            if round > 0 {
                slot.push(Sample { wall, cpu });
            }
        }
    }
    print_runs(&samples);
    let _ = std::fs::remove_dir_all(&root);
}

/// Makes `<cache>/<name>` anew and a clone of `fixture` in it that shares the fixture's objects
/// (so runs' commits stay out of the cached fixture); returns the directory and the clone.
fn runs_clone(cache: &Path, name: &str, fixture: &Path) -> (PathBuf, PathBuf) {
    let root = cache.join(name);
    let _ = std::fs::remove_dir_all(&root);
    let repo = root.join("repo");
    git(
        cache,
        &[
            "clone",
            "-q",
            "--shared",
            path_str(fixture),
            path_str(&repo),
        ],
    );
    (root, repo)
}

/// The variants of the whole-process table, in the order each round measures them.
const RUN_LABELS: [&str; 4] = ["fresh", "first", "default", "git add"];

/// Runs `git orchestra run --merge` of a one-packet plan written to `plan` in `repo`, its
/// worktrees under `worktrees` and the user configuration of `config`; panics if it fails.
fn one_run(repo: &Path, plan: &Path, worktrees: &Path, config: &Path) {
    let name = plan.file_stem().unwrap().to_string_lossy();
    std::fs::write(
        plan,
        format!(
            "objective = \"one packet {name}\"\n\n[[packet]]\nid = \"p\"\ntitle = \"Append\"\ndescription = \"d\"\nfiles = [\"this.py\"]\n"
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_git-orchestra"))
        .current_dir(repo)
        .args([
            "run",
            path_str(plan),
            "--merge",
            "--quiet",
            "--worktree-root",
        ])
        .arg(worktrees)
        .args(["--worker-cmd", "echo '# appended' >> this.py"])
        .env("XDG_CONFIG_HOME", config)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "one-packet run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Panics unless the run that started at `before` advanced main with the packet's line.
fn check_run(repo: &Path, before: &str) {
    let after = git(repo, &["rev-parse", "main"]);
    assert_ne!(after, before, "the run did not advance main");
    let text = git(repo, &["show", "main:this.py"]);
    assert!(
        text.ends_with("# appended"),
        "main:this.py lacks the packet's line"
    );
}

/// Prints the whole-process table: each variant's wall and CPU medians and their ratios to
/// `git worktree add`'s.
fn print_runs(samples: &[Vec<Sample>; 4]) {
    println!("load average: {}", load_average());
    print!("{:<8} |", "");
    for label in RUN_LABELS {
        print!(" {label:>10}");
    }
    println!(
        " | {:>9} {:>9} {:>9}",
        "fresh/git", "first/git", "deflt/git"
    );
    for (label, pick) in [("wall", 0), ("cpu", 1)] {
        let m: Vec<Duration> = samples
            .iter()
            .map(|s| median(&s.iter().map(|x| [x.wall, x.cpu][pick]).collect::<Vec<_>>()))
            .collect();
        let ratio = |a: Duration| a.as_secs_f64() / m[3].as_secs_f64();
        print!("{label:<8} |");
        for t in &m {
            print!(" {:>10}", ms(*t));
        }
        println!(
            " | {:>9.2} {:>9.2} {:>9.2}",
            ratio(m[0]),
            ratio(m[1]),
            ratio(m[2])
        );
    }
    println!(
        "\nmedians of {RUN_ROUNDS} after a warm-up round, each sample after a `sync`, python stdlib; \
fresh = `git orchestra run --merge` of one packet with `[worktree] recycle = 0` (checks a whole \
tree out, removes it at its end); first = the same with the default configuration and an empty \
pool (checks a whole tree out, parks it at its end); default = the default configuration \
taking the worktree the previous run parked; git add = `git worktree add -b` of the same \
commit. CPU = user+sys of the processes waited for."
    );
}

/// Prints the whole-process table on a quiet disk (`WORKTREE_BENCH=run-quiet`): after
/// `QUIET_BENCH_WAIT` seconds (default 400) in which the bench deletes nothing, three `git
/// worktree add -b`, three first runs in the default configuration (each with its own empty
/// pool) and three later default runs (each taking the worktree the previous one parked), with
/// nothing removed until all are measured. On ext4, creating files costs more for a while
/// after files were deleted (recently freed inodes are skipped), which the `run` table, whose
/// samples each follow another's deletions, cannot avoid; this one shows both sides without it.
fn quiet_one_packet_runs(cache: &Path, fixture: &Path) {
    let (root, repo) = runs_clone(cache, "one-packet-quiet", fixture);
    let config = root.join("default-config");
    std::fs::create_dir_all(&config).unwrap();
    let wait: u64 = std::env::var("QUIET_BENCH_WAIT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    eprintln!("waiting {wait} s with nothing deleted …");
    settle_disk();
    std::thread::sleep(Duration::from_secs(wait));
    let mut samples: [Vec<Duration>; 3] = Default::default();
    for i in 0..3 {
        settle_disk();
        let before = git(&repo, &["rev-parse", "HEAD"]);
        let path = root.join(format!("plain-{i}"));
        let started = Instant::now();
        git(
            &repo,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                &format!("bench/quiet-{i}"),
                path_str(&path),
            ],
        );
        samples[0].push(started.elapsed());
        check_worktree(&path, &before);
    }
    for (slot, kind) in [(1, "first"), (2, "default")] {
        for i in 0..3 {
            settle_disk();
            let before = git(&repo, &["rev-parse", "HEAD"]);
            // First runs each get an empty pool; later runs share one, so each takes the
            // worktree the previous parked (the first of them, the last first run's).
            let worktrees = match kind {
                "first" => root.join(format!("worktrees-first-{i}")),
                _ => root.join("worktrees-first-2"),
            };
            let plan = root.join(format!("plan-{kind}-{i}.toml"));
            let started = Instant::now();
            one_run(&repo, &plan, &worktrees, &config);
            samples[slot].push(started.elapsed());
            check_run(&repo, &before);
        }
    }
    let m: Vec<Duration> = samples.iter().map(|s| median(s)).collect();
    let ratio = |a: Duration| a.as_secs_f64() / m[0].as_secs_f64();
    println!("load average: {}", load_average());
    println!(
        "quiet disk | git add {} | first run {} ({:.2}×) | later default run {} ({:.2}×)",
        ms(m[0]),
        ms(m[1]),
        ratio(m[1]),
        ms(m[2]),
        ratio(m[2])
    );
    println!(
        "\nmedians of 3 wall times, python stdlib, after {wait} s without deletions; nothing is \
removed until every sample is taken; each sample after a `sync`."
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// Panics unless the worktree at `path` is on `commit` with a clean status (every file of
/// the commit checked out as committed, nothing else there): a variant that skipped work
/// cannot pass for a fast one.
fn check_worktree(path: &Path, commit: &str) {
    let head = git(path, &["rev-parse", "HEAD"]);
    let commit = git(path, &["rev-parse", &format!("{commit}^{{commit}}")]);
    assert_eq!(head, commit, "{} is not on {commit}", path.display());
    let status = git(path, &["status", "--porcelain", "--untracked-files=all"]);
    assert!(
        status.is_empty(),
        "{} does not hold its commit as committed:\n{status}",
        path.display()
    );
}

/// Tree sizes the threshold table measures, around [`PARALLEL_CHECKOUT_FILES`].
const THRESHOLD_SIZES: [usize; 8] = [200, 500, 1_000, 2_000, 3_000, 4_000, 5_000, 10_000];

/// Prints gix's checkout beside git's parallel one (both after our registration, as `create`
/// runs them) on generated trees of [`THRESHOLD_SIZES`] files, medians of 5 interleaved runs:
/// the crossover that sets [`PARALLEL_CHECKOUT_FILES`].
fn threshold(cache: &Path) {
    println!("load average at start: {}", load_average());
    println!(
        "{:>6} | {:>10} {:>10} {:>7} | {:>10} {:>10} {:>7}",
        "files", "gix wall", "git wall", "gix/git", "gix cpu", "git cpu", "gix/git"
    );
    for files in THRESHOLD_SIZES {
        let repo = generated_fixture(cache, files);
        println!("{files:>6} | {}", checkouts_side_by_side(&repo));
    }
    println!(
        "load average at end: {}; gix = branch + our registration + gix checkout; git = the same \
with git's `read-tree -u` and `checkout.workers=0`; files of 8 short lines in directories of \
100; `create` picks git's from {PARALLEL_CHECKOUT_FILES} files.",
        load_average()
    );
    println!(
        "\n{:>6} {:>8} | {:>10} {:>10} {:>7} | {:>10} {:>10} {:>7}",
        "files", "bytes", "gix wall", "git wall", "gix/git", "gix cpu", "git cpu", "gix/git"
    );
    for size in THRESHOLD_FILE_BYTES {
        let repo = sized_fixture(cache, THRESHOLD_SIZED_FILES, size);
        println!(
            "{THRESHOLD_SIZED_FILES:>6} {size:>8} | {}",
            checkouts_side_by_side(&repo)
        );
    }
    println!(
        "load average at end: {}; the same on {THRESHOLD_SIZED_FILES} files of text lines drawn \
from a vocabulary (compressed about as much as source code), by file size: how much the \
bytes, not the count, move the crossover.",
        load_average()
    );
}

/// Times gix's checkout and git's parallel one of `repo` (medians of 5 interleaved runs) and
/// returns a row of the threshold tables: wall times and their ratio, CPU times and theirs.
fn checkouts_side_by_side(repo: &Path) -> String {
    let samples = measure_variants(repo, 5, &[1, 2]);
    let med = |v: usize, pick: usize| {
        median(
            &samples[v]
                .iter()
                .map(|m| [m.wall, m.cpu][pick])
                .collect::<Vec<_>>(),
        )
    };
    let ratio = |pick: usize| med(1, pick).as_secs_f64() / med(2, pick).as_secs_f64();
    format!(
        "{:>10} {:>10} {:>7.2} | {:>10} {:>10} {:>7.2}",
        ms(med(1, 0)),
        ms(med(2, 0)),
        ratio(0),
        ms(med(1, 1)),
        ms(med(2, 1)),
        ratio(1)
    )
}

/// File sizes (bytes) of the second threshold table, on [`THRESHOLD_SIZED_FILES`] files.
const THRESHOLD_FILE_BYTES: [usize; 5] = [256, 2_048, 8_192, 16_384, 40_960];
const THRESHOLD_SIZED_FILES: usize = 5_000;

/// Returns a generated repository of `files` files of about `bytes` bytes each, in directories
/// of 100: lines of words drawn from a fixed vocabulary by a seeded generator, so they compress
/// about as source code does (3–4×), not to nothing as repeated lines do.
fn sized_fixture(cache: &Path, files: usize, bytes: usize) -> PathBuf {
    let repo = cache.join(format!("sized-{files}-{bytes}-v{FIXTURE_VERSION}/repo"));
    if repo.join(".git/orchestra-bench-ready").exists() {
        return repo;
    }
    eprintln!("building fixture {} …", repo.display());
    let _ = std::fs::remove_dir_all(&repo);
    let words: Vec<String> = (0..400)
        .map(|i| format!("name{}x{}", i * 37 % 101, i))
        .collect();
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let dirs = files.div_ceil(100);
    for i in 0..files {
        let path = repo.join(format!("d{:03}/f{i:05}.txt", i % dirs));
        if i < dirs {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        }
        let mut text = String::with_capacity(bytes + 80);
        while text.len() < bytes {
            for _ in 0..6 {
                seed = seed
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                text.push_str(&words[(seed >> 33) as usize % words.len()]);
                text.push(' ');
            }
            text.push('\n');
        }
        std::fs::write(&path, text).unwrap();
    }
    commit_fixture(&repo);
    repo
}

/// Returns a generated repository of 50,000 small files in 500 directories.
fn large_fixture(cache: &Path) -> PathBuf {
    generated_fixture(cache, 50_000)
}

/// Returns a generated repository of `files` small files (8 short lines each) in directories
/// of 100 (the 50,000-file one in 500).
fn generated_fixture(cache: &Path, files: usize) -> PathBuf {
    let repo = if files == 50_000 {
        cache.join(format!("large-v{FIXTURE_VERSION}/repo"))
    } else {
        cache.join(format!("generated-{files}-v{FIXTURE_VERSION}/repo"))
    };
    if repo.join(".git/orchestra-bench-ready").exists() {
        return repo;
    }
    eprintln!("building fixture {} …", repo.display());
    let _ = std::fs::remove_dir_all(&repo);
    let dirs = files.div_ceil(100);
    for i in 0..files {
        let path = repo.join(format!("d{:03}/f{i:05}.txt", i % dirs));
        if i < dirs {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        }
        std::fs::write(&path, format!("line {i}\n").repeat(8)).unwrap();
    }
    commit_fixture(&repo);
    repo
}

/// One timed run: elapsed time and CPU time (user + system, self and waited-for children).
#[derive(Debug, Clone, Copy)]
struct Sample {
    wall: Duration,
    cpu: Duration,
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

/// Times every variant `iterations` times (after one warm-up round), interleaved.
fn measure(repo: &Path, iterations: usize) -> [Vec<Sample>; 5] {
    measure_variants(repo, iterations, &[0, 1, 2, 3, 4])
}

/// Times the `variants` (0 `create`, 1 gix checkout, 2 git's parallel one, 3 `git worktree
/// add`, 4 the same with `checkout.workers=0`) `iterations` times each after one warm-up
/// round, interleaved; the other slots stay empty.
fn measure_variants(repo: &Path, iterations: usize, variants: &[usize]) -> [Vec<Sample>; 5] {
    let info = RepoInfo::discover(repo).unwrap();
    let root = repo.parent().unwrap().join("worktrees");
    let _ = std::fs::remove_dir_all(&root);
    let _ = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["worktree", "prune"])
        .status();
    // Branches an interrupted run of the bench left in the cached fixture.
    for left in git(
        repo,
        &["for-each-ref", "--format=%(refname)", "refs/heads/bench/"],
    )
    .lines()
    {
        git(repo, &["update-ref", "-d", left]);
    }
    let mut times: [Vec<Sample>; 5] = Default::default();
    for round in 0..=iterations {
        for (variant, slot) in times.iter_mut().enumerate() {
            if !variants.contains(&variant) {
                continue;
            }
            let branch = format!("bench/v{variant}-{round}");
            let path = root.join(format!("v{variant}-{round}"));
            let cpu_before = cpu_time();
            let started = Instant::now();
            match variant {
                0 => {
                    let req = WorktreeRequest {
                        repo: &info,
                        path: &path,
                        branch: &branch,
                        base: &info.head,
                        reuse: Reuse::ReportDirty,
                    };
                    create(&req).unwrap();
                }
                1 | 2 => {
                    let method = [CheckoutMethod::Gix, CheckoutMethod::GitParallel][variant - 1];
                    git(repo, &["branch", "--no-track", &branch, &info.head]);
                    let stats = add_checked_out_by(&info.toplevel, &path, &branch, method).unwrap();
                    assert_eq!(stats.method, method);
                }
                3 => {
                    git(
                        repo,
                        &["worktree", "add", "-q", "-b", &branch, path_str(&path)],
                    );
                }
                _ => {
                    git(
                        repo,
                        &[
                            "-c",
                            "checkout.workers=0",
                            "worktree",
                            "add",
                            "-q",
                            "-b",
                            &branch,
                            path_str(&path),
                        ],
                    );
                }
            }
            let sample = Sample {
                wall: started.elapsed(),
                cpu: cpu_time().saturating_sub(cpu_before),
            };
            check_worktree(&path, &info.head);
            if round > 0 {
                slot.push(sample);
            }
            git(
                repo,
                &["worktree", "remove", "--force", "--force", path_str(&path)],
            );
            git(repo, &["branch", "-q", "-D", &branch]);
        }
    }
    times
}

/// Returns a generated repository of 200 files in 20 directories (some executable, a symlink).
fn small_fixture(cache: &Path) -> PathBuf {
    let repo = cache.join(format!("small-v{FIXTURE_VERSION}/repo"));
    if repo.join(".git/orchestra-bench-ready").exists() {
        return repo;
    }
    let _ = std::fs::remove_dir_all(&repo);
    for i in 0..200 {
        let path = repo.join(format!("dir{:02}/file{i:03}.rs", i % 20));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let line = format!("pub fn f{i}() -> usize {{ {i} }}\n");
        std::fs::write(&path, line.repeat(40)).unwrap();
        if i % 25 == 0 {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    std::os::unix::fs::symlink("dir00/file000.rs", repo.join("link.rs")).unwrap();
    commit_fixture(&repo);
    repo
}

/// Returns a repository holding a copy of `source` (without `__pycache__`, and without
/// `site-packages` when `skip_site` is set), committed once and packed.
fn copied_fixture(cache: &Path, name: &str, source: &Path, skip_site: bool) -> PathBuf {
    let repo = cache.join(format!("{name}-v{FIXTURE_VERSION}/repo"));
    if repo.join(".git/orchestra-bench-ready").exists() {
        return repo;
    }
    eprintln!(
        "building fixture {} from {} …",
        repo.display(),
        source.display()
    );
    let _ = std::fs::remove_dir_all(&repo);
    std::fs::create_dir_all(&repo).unwrap();
    copy_tree(source, &repo, skip_site);
    commit_fixture(&repo);
    repo
}

fn copy_tree(from: &Path, to: &Path, skip_site: bool) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == "__pycache__" || name == ".git" || (skip_site && name == "site-packages") {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        let kind = entry.file_type().unwrap();
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src).unwrap(), &dst).unwrap();
        } else if kind.is_dir() {
            std::fs::create_dir_all(&dst).unwrap();
            copy_tree(&src, &dst, skip_site);
        } else if kind.is_file() {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

fn commit_fixture(repo: &Path) {
    git(repo, &["init", "-q", "-b", "main"]);
    // Force-add: nested .gitignore files in copied trees must not shrink the fixture.
    git(repo, &["add", "-A", "-f"]);
    git(repo, &["commit", "-q", "-m", "fixture"]);
    git(repo, &["repack", "-adq"]);
    git(repo, &["prune"]);
    std::fs::write(repo.join(".git/orchestra-bench-ready"), "").unwrap();
}

/// Returns the number of files and bytes in HEAD's tree.
fn tree_size(repo: &Path) -> (usize, u64) {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["ls-tree", "-r", "-l", "HEAD"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let sizes: Vec<u64> = text
        .lines()
        .filter_map(|l| l.split_whitespace().nth(3)?.parse().ok())
        .collect();
    (text.lines().count(), sizes.iter().sum())
}

fn python_path(key: &str) -> Option<PathBuf> {
    let script = format!("import sysconfig;print(sysconfig.get_paths()['{key}'])");
    let out = Command::new("python3")
        .args(["-c", &script])
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    (out.status.success() && path.is_dir()).then_some(path)
}

fn path_str(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn median(times: &[Duration]) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    sorted[sorted.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// Makes the process independent of the user's git configuration and identity.
fn hermetic() {
    let vars = [
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_AUTHOR_NAME", "bench"),
        ("GIT_AUTHOR_EMAIL", "bench@example.com"),
        ("GIT_COMMITTER_NAME", "bench"),
        ("GIT_COMMITTER_EMAIL", "bench@example.com"),
        ("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z"),
        ("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z"),
    ];
    for (k, v) in vars {
        // SAFETY: runs first in main, before any other thread exists.
        unsafe { std::env::set_var(k, v) };
    }
}

//! Language server answers against the symbol graph's, side by side in one process run, on the
//! navigation accuracy harness's Python repositories: the standard library slice and, with
//! `NAV_ACC_HELDOUT=1`, the seven held-out PyPI packages (the same pinned source distributions,
//! in the same download cache). Expected answers come from jedi (`nav_accuracy/jedi_oracle.py`);
//! both sides get the same questions — definitions at the oracle's use positions, references
//! of its top-level definitions — and are scored as the accuracy harness scores the graph.
//! Reports precision and recall, latency per answer, the server's warm-up and its memory.
//!
//! Run with `cargo bench --bench nav_lsp` (needs jedi and `pyright-langserver`; skipped with a
//! message without them).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use git_orchestra::config::LspConfig;
use git_orchestra::lsp::{Outcome, Query, Settings, Tier};
use git_orchestra::nav::{At, Index, Location};

#[path = "nav_accuracy/sets.rs"]
mod sets;
use sets::{EVAL, PACKAGES, TREE};

fn sh(dir: &Path, prog: &str, args: &[&str]) -> Vec<u8> {
    let out = Command::new(prog)
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "b")
        .env("GIT_AUTHOR_EMAIL", "b@e")
        .env("GIT_COMMITTER_NAME", "b")
        .env("GIT_COMMITTER_EMAIL", "b@e")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{prog} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn commit_all(repo: &Path) {
    sh(repo, "git", &["init", "-q", "-b", "main"]);
    sh(repo, "git", &["add", "-A"]);
    sh(repo, "git", &["commit", "-q", "-m", "eval"]);
}

/// Counts of one side's answers.
#[derive(Default)]
struct Side {
    def_tp: usize,
    def_n: usize,
    def_q: usize,
    ref_tp: usize,
    ref_n: usize,
    ref_exp: usize,
    fallbacks: usize,
    /// Why the server did not answer, digits left out, with counts.
    reasons: std::collections::BTreeMap<String, usize>,
    latencies: Vec<Duration>,
}

impl Side {
    fn add(&mut self, o: &Side) {
        self.def_tp += o.def_tp;
        self.def_n += o.def_n;
        self.def_q += o.def_q;
        self.ref_tp += o.ref_tp;
        self.ref_n += o.ref_n;
        self.ref_exp += o.ref_exp;
        self.fallbacks += o.fallbacks;
        for (k, v) in &o.reasons {
            *self.reasons.entry(k.clone()).or_default() += v;
        }
        self.latencies.extend(&o.latencies);
    }

    fn print(&self, label: &str) {
        let ratio = |a: usize, b: usize| if b == 0 { 1.0 } else { a as f64 / b as f64 };
        let (dp, dr) = (
            ratio(self.def_tp, self.def_n),
            ratio(self.def_tp, self.def_q),
        );
        let (rp, rr) = (
            ratio(self.ref_tp, self.ref_n),
            ratio(self.ref_tp, self.ref_exp),
        );
        let f1 = 2.0 * rp * rr / (rp + rr).max(1e-9);
        let mut l = self.latencies.clone();
        l.sort();
        let pct = |p: f64| l.get(((l.len() as f64 * p) as usize).min(l.len().saturating_sub(1)));
        let ms = |d: Option<&Duration>| d.map_or(0.0, |d| d.as_secs_f64() * 1000.0);
        println!(
            "  {label:<6} definitions P {dp:.3} / R {dr:.3} (top answer, {} queries); references P {rp:.3} / R {rr:.3} / F1 {f1:.3}; latency p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms; graph fallbacks {}",
            self.def_q,
            ms(pct(0.5)),
            ms(pct(0.95)),
            ms(l.last()),
            self.fallbacks
        );
        for (why, n) in &self.reasons {
            println!("         fallback: {why} ({n}×)");
        }
    }
}

fn pairs(v: &serde_json::Value) -> BTreeSet<(String, u32)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e[0].as_str().unwrap().to_string(),
                e[1].as_u64().unwrap() as u32,
            )
        })
        .collect()
}

fn places(locs: &[Location]) -> Vec<(String, u32)> {
    locs.iter().map(|l| (l.path.clone(), l.line)).collect()
}

/// Asks one side: the graph (`tier` None) or the server; `Err` with the notice when the
/// server did not answer.
fn ask(
    index: &mut Index,
    tier: Option<&Tier>,
    query: Query,
    name: &str,
    at: &At,
) -> Result<Vec<(String, u32)>, String> {
    match tier {
        None => {
            let r = match query {
                Query::Definition => index.definition_at(Some(name), Some(at)),
                _ => index.references_at(Some(name), Some(at)),
            };
            Ok(places(&r.unwrap_or_default()))
        }
        Some(t) => match t.query(index, query, Some(name), Some(at), Duration::from_secs(120)) {
            Outcome::Lsp { locations, .. } => Ok(places(&locations)),
            Outcome::Graph(n) => Err(n
                .unwrap_or_default()
                .replace(|c: char| c.is_ascii_digit(), "")),
        },
    }
}

/// Scores one side on the oracle's questions.
fn score(index: &mut Index, tier: Option<&Tier>, expected: &serde_json::Value) -> Side {
    let mut s = Side::default();
    for q in expected["defs"].as_array().unwrap() {
        let at = At {
            path: q["file"].as_str().unwrap().to_string(),
            line: q["line"].as_u64().unwrap() as u32,
            col: q["col"].as_u64().map(|c| c as u32),
        };
        let exp = pairs(&q["expected"]);
        let started = Instant::now();
        let answer = ask(
            index,
            tier,
            Query::Definition,
            q["name"].as_str().unwrap(),
            &at,
        );
        s.latencies.push(started.elapsed());
        s.def_q += 1;
        let answer = match answer {
            Ok(a) => a,
            Err(why) => {
                s.fallbacks += 1;
                *s.reasons.entry(why).or_default() += 1;
                continue;
            }
        };
        if let Some(top) = answer.first() {
            s.def_n += 1;
            s.def_tp += usize::from(exp.contains(top));
        }
    }
    for q in expected["refs"].as_array().unwrap() {
        let (file, line) = (
            q["file"].as_str().unwrap(),
            q["line"].as_u64().unwrap() as u32,
        );
        let at = At {
            path: file.to_string(),
            line,
            col: None,
        };
        let exp = pairs(&q["expected"]);
        let started = Instant::now();
        let answer = ask(
            index,
            tier,
            Query::References,
            q["name"].as_str().unwrap(),
            &at,
        );
        s.latencies.push(started.elapsed());
        let mut ours: BTreeSet<(String, u32)> = match answer {
            Ok(a) => a.into_iter().collect(),
            Err(why) => {
                s.fallbacks += 1;
                *s.reasons.entry(why).or_default() += 1;
                BTreeSet::new()
            }
        };
        ours.insert((file.to_string(), line)); // the oracle counts the definition itself
        s.ref_tp += ours.intersection(&exp).count();
        s.ref_n += ours.len();
        s.ref_exp += exp.len();
    }
    s
}

/// Runs both sides on one repository; returns (graph, server).
fn compare(label: &str, repo: &Path, eval: &[String], db: &Path) -> (Side, Side) {
    let oracle = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/nav_accuracy/jedi_oracle.py");
    let mut args = vec![oracle.to_str().unwrap(), repo.to_str().unwrap()];
    args.extend(eval.iter().map(String::as_str));
    let expected: serde_json::Value = serde_json::from_slice(&sh(repo, "python3", &args)).unwrap();
    let mut index = Index::open_with_cache(repo, db).unwrap();
    index.refresh().unwrap();
    let graph = score(&mut index, None, &expected);

    let config = LspConfig {
        request_timeout: Some(120),
        startup_timeout: Some(120),
        ..LspConfig::default()
    };
    let tier = Tier::new(Settings::from_config(&config));
    let started = Instant::now();
    // Other languages' servers (JavaScript in a Python package) may be missing; pyright not.
    let notices = tier.start(&index);
    assert!(
        !notices.iter().any(|n| n.contains("pyright")),
        "{notices:?}"
    );
    let warmup = loop {
        let state = tier.servers().first().map(|s| s.1.clone());
        match state {
            Some(git_orchestra::lsp::client::State::Ready { warmup }) => break warmup,
            Some(git_orchestra::lsp::client::State::Failed(why)) => panic!("pyright: {why}"),
            _ if started.elapsed() > Duration::from_secs(120) => panic!("pyright did not start"),
            _ => std::thread::sleep(Duration::from_millis(10)),
        }
    };
    let server = score(&mut index, Some(&tier), &expected);
    let memory = tier.servers().first().and_then(|s| s.2).unwrap_or(0);
    println!(
        "== {label}: {} files; pyright ready after {:.2} s, {memory} MB resident after the queries",
        index.files().len(),
        warmup.as_secs_f64()
    );
    graph.print("graph");
    server.print("[lsp]");
    tier.shutdown();
    (graph, server)
}

fn stdlib_repo(tmp: &Path) -> PathBuf {
    let stdlib = String::from_utf8(sh(
        Path::new("."),
        "python3",
        &[
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['stdlib'])",
        ],
    ))
    .unwrap();
    let stdlib = Path::new(stdlib.trim());
    let repo = tmp.join("stdlib");
    std::fs::create_dir_all(&repo).unwrap();
    for item in TREE {
        sh(
            &repo,
            "cp",
            &["-r", stdlib.join(item).to_str().unwrap(), "."],
        );
    }
    sh(
        &repo,
        "find",
        &[
            ".",
            "-name",
            "__pycache__",
            "-prune",
            "-exec",
            "rm",
            "-rf",
            "{}",
            ";",
        ],
    );
    commit_all(&repo);
    repo
}

/// The held-out package `stem` unpacked into a repository, with its eight largest modules.
fn heldout_repo(
    tmp: &Path,
    cache: &Path,
    stem: &str,
    import: &str,
) -> Option<(PathBuf, Vec<String>)> {
    let archive = std::fs::read_dir(cache)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().to_lowercase().starts_with(stem))
        })?;
    let dest = tmp.join(format!("heldout-{import}"));
    std::fs::create_dir_all(&dest).unwrap();
    sh(
        &dest,
        "tar",
        &["xzf", archive.to_str().unwrap(), "--strip-components=1"],
    );
    commit_all(&dest);
    let package = [dest.join("src").join(import), dest.join(import)]
        .into_iter()
        .find(|d| d.is_dir())?;
    let mut files: Vec<(u64, String)> = Vec::new();
    let mut dirs = vec![package];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "py") {
                let size = e.metadata().map(|m| m.len()).unwrap_or(0);
                files.push((
                    size,
                    p.strip_prefix(&dest)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                ));
            }
        }
    }
    files.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    Some((dest, files.into_iter().take(8).map(|(_, p)| p).collect()))
}

fn main() {
    let has = |prog: &str, arg: &str| {
        Command::new(prog)
            .arg(arg)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !has("pyright", "--version") || !has("python3", "--version") {
        println!("nav_lsp: skipped (needs pyright-langserver and python3)");
        return;
    }
    if !Command::new("python3")
        .args(["-c", "import jedi"])
        .status()
        .is_ok_and(|s| s.success())
    {
        println!("nav_lsp: skipped (needs jedi: python3 -m pip install jedi)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let repo = stdlib_repo(tmp.path());
    let eval: Vec<String> = EVAL.iter().map(|s| s.to_string()).collect();
    compare(
        "python stdlib slice",
        &repo,
        &eval,
        &tmp.path().join("nav.db"),
    );
    if std::env::var_os("NAV_ACC_HELDOUT").is_none() {
        println!(
            "== held-out python: skipped (set NAV_ACC_HELDOUT=1; run `NAV_ACC_HELDOUT=1 cargo bench --bench nav_accuracy` once to download)"
        );
        return;
    }
    let cache = std::env::temp_dir().join("git-orchestra-nav-accuracy-pypi");
    let (mut graph, mut server) = (Side::default(), Side::default());
    for (requirement, import) in PACKAGES {
        // The source distribution's stem: `requests==2.32.3` → `requests-2.32.3`.
        let stem = &requirement.replace("==", "-");
        let Some((dest, eval)) = heldout_repo(tmp.path(), &cache, stem, import) else {
            println!("== held-out {stem}: skipped (not in {})", cache.display());
            continue;
        };
        let (g, s) = compare(
            &format!("held-out {stem}"),
            &dest,
            &eval,
            &tmp.path().join(format!("nav-{import}.db")),
        );
        graph.add(&g);
        server.add(&s);
    }
    println!("== held-out python, all packages");
    graph.print("graph");
    server.print("[lsp]");
}

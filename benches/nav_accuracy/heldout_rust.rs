//! Held-out Rust sets: crates from crates.io navigation was never tuned on, checked against
//! rust-analyzer's LSIF dump (`lsif_oracle.py`). Two repositories are Cargo workspaces put
//! together from crates that use one another by crate name — regex over regex-automata and
//! regex-syntax; the clap facade re-exporting clap_builder, which uses clap_lex — their members
//! joined by `[patch.crates-io]` path dependencies; four are single crates. Queries by the jedi
//! rule in the eight largest sources under each member's `src/`.
//!
//! Needs a `rust-analyzer` binary: `RUST_ANALYZER`, else `~/.cache/rust-analyzer/bin/`
//! (`cargo install ra_ap_rust-analyzer --version 0.0.330 --root ~/.cache/rust-analyzer`,
//! built from the `ra_ap_*` crates), else `PATH`. Run with `NAV_ACC_HELDOUT=1`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use git_orchestra::nav::Index;

/// Repositories: name, then the crates (name, version) of its members; one crate is a repository
/// of its own, more are a workspace.
const REPOS: &[(&str, &[(&str, &str)])] = &[
    (
        "regex",
        &[
            ("regex", "1.13.1"),
            ("regex-automata", "0.4.18"),
            ("regex-syntax", "0.8.11"),
        ],
    ),
    (
        "clap",
        &[
            ("clap", "4.6.7"),
            ("clap_builder", "4.6.7"),
            ("clap_lex", "1.1.1"),
        ],
    ),
    ("serde_json", &[("serde_json", "1.0.149")]),
    ("semver", &[("semver", "1.0.28")]),
    ("itertools", &[("itertools", "0.14.0")]),
    ("bytes", &[("bytes", "1.11.1")]),
];

const FILES_PER_REPO: usize = 8;

/// Returns the rust-analyzer binary to ask, when one answers `--version`.
fn rust_analyzer() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let candidates = [
        std::env::var_os("RUST_ANALYZER").map(PathBuf::from),
        Some(home.join(".cache/rust-analyzer/bin/rust-analyzer")),
        Some(PathBuf::from("rust-analyzer")),
    ];
    candidates.into_iter().flatten().find(|ra| {
        Command::new(ra)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// Returns the unpacked sources of every crate of `REPOS` (cargo's registry sources),
/// fetching them first: crate → its directory.
fn crate_sources() -> Option<Vec<(String, PathBuf)>> {
    let dir = std::env::temp_dir().join("git-orchestra-nav-accuracy-crates");
    std::fs::create_dir_all(dir.join("src")).ok()?;
    let mut manifest = String::from(
        "[package]\nname = \"fetch\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[dependencies]\n",
    );
    let crates: Vec<(&str, &str)> = REPOS.iter().flat_map(|(_, c)| c.iter().copied()).collect();
    for (name, version) in &crates {
        manifest.push_str(&format!("{name} = \"={version}\"\n"));
    }
    std::fs::write(dir.join("Cargo.toml"), manifest).ok()?;
    std::fs::write(dir.join("src/lib.rs"), "").ok()?;
    let ok = Command::new("cargo")
        .arg("fetch")
        .current_dir(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return None;
    }
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    let registries: Vec<PathBuf> = std::fs::read_dir(cargo_home.join("registry/src"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .collect();
    crates
        .iter()
        .map(|(name, version)| {
            let found = registries
                .iter()
                .map(|r| r.join(format!("{name}-{version}")))
                .find(|d| d.join("Cargo.toml").is_file())?;
            Some((name.to_string(), found))
        })
        .collect()
}

/// Lays out the repository `name` at `dest`: one crate's sources, or a workspace of several.
fn lay_out(dest: &Path, members: &[(&str, &str)], sources: &[(String, PathBuf)]) {
    let source = |name: &str| {
        sources
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, d)| d.clone())
            .unwrap()
    };
    std::fs::create_dir_all(dest).unwrap();
    let copy = |from: &Path, to: &Path| {
        std::fs::create_dir_all(to).unwrap();
        let from = format!("{}/.", from.display());
        super::sh(to, "cp", &["-r", &from, "."]);
        let _ = std::fs::remove_file(to.join(".cargo_vcs_info.json"));
    };
    if let [(name, _)] = members {
        copy(&source(name), dest);
        return;
    }
    let mut root = String::from("[workspace]\nresolver = \"2\"\nmembers = [");
    let names: Vec<String> = members.iter().map(|(n, _)| format!("\"{n}\"")).collect();
    root.push_str(&names.join(", "));
    root.push_str("]\n\n[patch.crates-io]\n");
    for (name, _) in members {
        copy(&source(name), &dest.join(name));
        root.push_str(&format!("{name} = {{ path = \"{name}\" }}\n"));
    }
    std::fs::write(dest.join("Cargo.toml"), root).unwrap();
}

/// Returns the `.rs` files under each member's `src/`, largest first (ties by path).
fn largest_sources(repo: &Path, members: &[(&str, &str)], n: usize) -> Vec<String> {
    let roots: Vec<PathBuf> = if members.len() == 1 {
        vec![repo.join("src")]
    } else {
        members
            .iter()
            .map(|(m, _)| repo.join(m).join("src"))
            .collect()
    };
    super::heldout::largest_files(repo, &roots, "rs", n)
}

/// Asks a running rust-analyzer for the implementations of the types and traits the rule of
/// `ra_impls_oracle.py` picks in `eval` (and of every implemented trait of the repository).
/// The answer is kept beside the repository, keyed by the script and the files asked, so a
/// second run asks no server (starting one on a repository takes minutes on a busy machine).
fn implementations(ra: &Path, repo: &Path, eval: &[&str], tmp: &Path) -> serde_json::Value {
    use std::hash::{Hash, Hasher};
    let oracle =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/nav_accuracy/ra_impls_oracle.py");
    let mut key = std::collections::hash_map::DefaultHasher::new();
    std::fs::read(&oracle).unwrap_or_default().hash(&mut key);
    eval.hash(&mut key);
    let kept = repo.with_extension(format!("impls-{:016x}.json", key.finish()));
    if let Ok(v) = std::fs::read(&kept).map(|b| serde_json::from_slice::<serde_json::Value>(&b))
        && let Ok(v) = v
    {
        return v;
    }
    let out = Command::new("python3")
        .arg(&oracle)
        .arg(ra)
        .arg(repo)
        .args(eval)
        .current_dir(repo)
        .env("CARGO_TARGET_DIR", tmp.join("heldout-rs-target"))
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(out.status.success(), "ra_impls_oracle.py failed");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let _ = std::fs::write(&kept, v["impls"].to_string());
    v["impls"].clone()
}

/// Scores every held-out Rust repository and the sum over them.
pub fn run(tmp: &Path) -> super::Tally {
    if std::env::var_os("NAV_ACC_HELDOUT").is_none() {
        println!("== held-out rust: skipped (set NAV_ACC_HELDOUT=1)");
        return super::Tally::default();
    }
    let Some(ra) = rust_analyzer() else {
        println!(
            "== held-out rust: skipped (no rust-analyzer: set RUST_ANALYZER, or build it with `cargo install ra_ap_rust-analyzer --version 0.0.330 --root ~/.cache/rust-analyzer`)"
        );
        return super::Tally::default();
    };
    let Some(sources) = crate_sources() else {
        println!("== held-out rust: skipped (cargo cannot fetch the crates)");
        return super::Tally::default();
    };
    let oracle = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/nav_accuracy/lsif_oracle.py");
    let mut total = super::Tally::default();
    // The repositories and rust-analyzer's dumps of them are kept between runs (a dump takes
    // half a minute or more); a repository is laid out again when its dump is missing.
    let kept = std::env::temp_dir().join("git-orchestra-nav-accuracy-crates/repos");
    for (name, members) in REPOS {
        let dest = kept.join(name);
        let dump = kept.join(format!("{name}.lsif"));
        if !dump.is_file() {
            let _ = std::fs::remove_dir_all(&dest);
            lay_out(&dest, members, &sources);
            super::commit_all(&dest);
            let started = std::time::Instant::now();
            let out = Command::new(&ra)
                .args(["lsif", "."])
                .current_dir(&dest)
                .env("CARGO_TARGET_DIR", tmp.join("heldout-rs-target"))
                .stderr(Stdio::null())
                .output()
                .unwrap();
            if !out.status.success() || out.stdout.is_empty() {
                println!("== held-out rust: {name}: skipped (rust-analyzer lsif failed)");
                continue;
            }
            std::fs::write(&dump, &out.stdout).unwrap();
            println!(
                "   (rust-analyzer's dump of {name} took {:.1} s)",
                started.elapsed().as_secs_f64()
            );
        }
        let eval = largest_sources(&dest, members, FILES_PER_REPO);
        let mut args = vec![
            oracle.to_string_lossy().into_owned(),
            "--imports".to_string(),
            ra.to_string_lossy().into_owned(),
            dest.to_string_lossy().into_owned(),
            dump.to_string_lossy().into_owned(),
        ];
        args.extend(eval);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut expected: serde_json::Value =
            serde_json::from_slice(&super::sh(&dest, "python3", &args)).unwrap();
        expected["impls"] = implementations(&ra, &dest, &args[5..], tmp);
        let crates: Vec<String> = members.iter().map(|(n, v)| format!("{n} {v}")).collect();
        let mut index =
            Index::open_with_cache(&dest, &tmp.join(format!("nav-rs-{name}.db"))).unwrap();
        index.refresh().unwrap();
        let t = super::score(
            &format!(
                "held-out rust: {} (oracle: rust-analyzer)",
                crates.join(" + ")
            ),
            &dest,
            &index,
            &expected,
        );
        total.add(&t);
    }
    total.print("held-out rust, all repositories");
    total
}

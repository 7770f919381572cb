//! Held-out sets: packages navigation was never tuned on, each in a repository of its own.
//! Python: source distributions from PyPI (with their tests and examples), checked against
//! jedi; queries are chosen by rule: the eight largest modules of the package, and in each the
//! oracle's evenly spaced uses (up to 12) and top-level definitions (up to 4). TypeScript: the
//! `src/` trees npm packages ship, checked against the TypeScript language service; queries
//! by the rxjs set's rule in the eight largest sources (8 uses and 3 declarations each, every
//! import/export alias). Downloads go to cache directories at bench time (skipped with a
//! message when pip, npm or the registries are unavailable). Run with `NAV_ACC_HELDOUT=1`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use git_orchestra::nav::Index;

use super::sets::PACKAGES;
/// Modules of each package whose names are sampled as queries.
const FILES_PER_PACKAGE: usize = 8;

/// Returns the directory holding the downloaded source distributions, downloading them first.
fn sdists() -> Option<PathBuf> {
    let dir = std::env::temp_dir().join("git-orchestra-nav-accuracy-pypi");
    std::fs::create_dir_all(&dir).ok()?;
    let have = |d: &Path| {
        std::fs::read_dir(d)
            .map(|r| {
                r.flatten()
                    .filter(|e| e.path().extension().is_some_and(|x| x == "gz"))
                    .count()
            })
            .unwrap_or(0)
            >= PACKAGES.len()
    };
    if !have(&dir) {
        let mut cmd = Command::new("python3");
        cmd.args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-binary",
            ":all:",
            "-d",
        ])
        .arg(&dir);
        for (req, _) in PACKAGES {
            cmd.arg(req);
        }
        let ok = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return None;
        }
    }
    have(&dir).then_some(dir)
}

/// Returns a hash of the Python oracle scripts' text (FNV-1a), the key of their saved answers.
fn oracle_key() -> u64 {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/nav_accuracy");
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for script in ["jedi_oracle.py", "jedi_impls_oracle.py", "import_oracle.py"] {
        for b in std::fs::read(dir.join(script)).unwrap() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// Returns the files ending in `.ext` under the directories `roots` of `repo`, largest first
/// (ties by path), as repository paths; at most `n`.
pub fn largest_files(repo: &Path, roots: &[PathBuf], ext: &str, n: usize) -> Vec<String> {
    let mut files: Vec<(u64, String)> = Vec::new();
    let mut dirs = roots.to_vec();
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == ext) {
                let size = e.metadata().map(|m| m.len()).unwrap_or(0);
                let rel = p.strip_prefix(repo).unwrap().to_string_lossy().into_owned();
                files.push((size, rel));
            }
        }
    }
    files.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    files.into_iter().take(n).map(|(_, p)| p).collect()
}

/// Scores every held-out package and the sum over them.
pub fn run(tmp: &Path) -> super::Tally {
    if std::env::var_os("NAV_ACC_HELDOUT").is_none() {
        println!("== held-out python: skipped (set NAV_ACC_HELDOUT=1)");
        return super::Tally::default();
    }
    let Some(cache) = sdists() else {
        println!("== held-out python: skipped (pip cannot download the packages)");
        return super::Tally::default();
    };
    let oracle = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/nav_accuracy/jedi_oracle.py");
    let mut total = super::Tally::default();
    for (req, import) in PACKAGES {
        let stem = req.replace("==", "-");
        let Some(archive) = std::fs::read_dir(&cache)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().to_lowercase().starts_with(&stem))
            })
        else {
            println!("== held-out {req}: skipped (no source distribution)");
            continue;
        };
        let dest = tmp.join(format!("heldout-{import}"));
        std::fs::create_dir_all(&dest).unwrap();
        super::sh(
            &dest,
            "tar",
            &["xzf", archive.to_str().unwrap(), "--strip-components=1"],
        );
        super::commit_all(&dest);
        let package_dir = [dest.join("src").join(import), dest.join(import)]
            .into_iter()
            .find(|d| d.is_dir())
            .unwrap();
        let eval = largest_files(&dest, &[package_dir], "py", FILES_PER_PACKAGE);
        let mut args = vec![
            oracle.to_str().unwrap().to_string(),
            dest.to_str().unwrap().to_string(),
        ];
        args.extend(eval.iter().cloned());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let eval: Vec<&str> = eval.iter().map(String::as_str).collect();
        // The oracles' answers depend on the sources and the oracle scripts only: kept beside
        // the downloads, keyed by the scripts' text, so a second run asks jedi nothing.
        let saved = cache.join(format!("expected-{stem}-{:016x}.json", oracle_key()));
        let expected: serde_json::Value = match std::fs::read(&saved) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap(),
            Err(_) => {
                let mut expected: serde_json::Value =
                    serde_json::from_slice(&super::sh(&dest, "python3", &args)).unwrap();
                super::add_python_imports_and_impls(&dest, &eval, &mut expected);
                std::fs::write(&saved, expected.to_string()).unwrap();
                expected
            }
        };
        let mut index =
            Index::open_with_cache(&dest, &tmp.join(format!("nav-{import}.db"))).unwrap();
        index.refresh().unwrap();
        let t = super::score(
            &format!("held-out python: {req} (oracle: jedi)"),
            &dest,
            &index,
            &expected,
        );
        total.add(&t);
    }
    total.print("held-out python, all packages");
    total
}

/// The TypeScript packages (as npm names them) whose shipped `src/` is the held-out set.
const TS_PACKAGES: &[&str] = &[
    "immer@10.1.1",
    "mobx@6.13.5",
    "redux@5.0.1",
    "@reduxjs/toolkit@2.3.0",
    "@tanstack/query-core@5.59.0",
    "@trpc/server@10.45.2",
];

/// Returns the npm prefix holding the TypeScript packages, installing them first.
fn npm_packages() -> Option<PathBuf> {
    let dir = std::env::temp_dir().join("git-orchestra-nav-accuracy-npm-heldout");
    let name = |p: &str| p.rsplit_once('@').map_or(p, |(n, _)| n).to_string();
    let ready = |d: &Path| {
        TS_PACKAGES
            .iter()
            .all(|p| d.join("node_modules").join(name(p)).join("src").is_dir())
    };
    if !ready(&dir) {
        std::fs::create_dir_all(&dir).ok()?;
        let ok = Command::new("npm")
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--ignore-scripts",
                "--prefix",
            ])
            .arg(&dir)
            .args(TS_PACKAGES)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return None;
        }
    }
    ready(&dir).then_some(dir)
}

/// Scores every held-out TypeScript package and the sum over them.
pub fn run_typescript(tmp: &Path) -> super::Tally {
    if std::env::var_os("NAV_ACC_HELDOUT").is_none() {
        println!("== held-out typescript: skipped (set NAV_ACC_HELDOUT=1)");
        return super::Tally::default();
    }
    let (Some(typescript), Some(cache)) = (super::typescript::typescript_module(), npm_packages())
    else {
        println!("== held-out typescript: skipped (npm cannot install the packages)");
        return super::Tally::default();
    };
    let mut total = super::Tally::default();
    for (i, pkg) in TS_PACKAGES.iter().enumerate() {
        let name = pkg.rsplit_once('@').map_or(*pkg, |(n, _)| n);
        let repo = tmp.join(format!("heldout-ts-{i}"));
        std::fs::create_dir_all(&repo).unwrap();
        let src = cache.join("node_modules").join(name).join("src");
        super::sh(&repo, "cp", &["-r", src.to_str().unwrap(), "."]);
        super::commit_all(&repo);
        let eval = super::typescript::largest_sources(&repo, &repo.join("src"), FILES_PER_PACKAGE);
        let eval: Vec<&str> = eval.iter().map(String::as_str).collect();
        let (t, _) = super::typescript::score_package(
            &format!("held-out typescript: {pkg} (oracle: TypeScript language service)"),
            &repo,
            &typescript,
            &eval,
            &tmp.join(format!("nav-heldout-ts-{i}.db")),
        );
        total.add(&t);
    }
    total.print("held-out typescript, all packages");
    total
}

//! Rust: crates from the local cargo registry checked against hand-checked answers — no
//! compiler-grade Rust oracle runs offline here (rust-analyzer is not installed; rustdoc JSON
//! needs nightly). `rust_expected.txt` covers `globset`; `rust_alias_expected.txt` covers
//! aliases (`use a::B as C`, `pub use … as …`, module aliases) and generic parameters in
//! `memchr` and `indexmap`, copied side by side into a second repository.

use std::path::{Path, PathBuf};

use git_orchestra::nav::Index;

/// The crate under test, as unpacked by cargo.
const CRATE: &str = "globset-0.4.21";
/// The crates of the alias set and the directory each is copied to.
const ALIAS_CRATES: &[(&str, &str)] =
    &[("memchr-2.8.3", "memchr"), ("indexmap-2.14.2", "indexmap")];

fn registry_crate(name: &str) -> Option<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))?;
    std::fs::read_dir(home.join("registry/src"))
        .ok()?
        .flatten()
        .map(|e| e.path().join(name))
        .find(|p| p.join("src/lib.rs").exists())
}

fn loc(s: &str) -> serde_json::Value {
    let (file, line) = s.rsplit_once(':').unwrap();
    serde_json::json!([file, line.parse::<u32>().unwrap()])
}

/// Parses an expected-answers file of `benches/nav_accuracy/` into the harness's
/// {"defs", "refs"} shape.
fn expected(file: &str) -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("benches/nav_accuracy")
        .join(file);
    let text = std::fs::read_to_string(path).unwrap();
    let (mut defs, mut refs) = (Vec::new(), Vec::new());
    for line in text.lines() {
        let line = line.split(" # ").next().unwrap().trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (query, answers) = line.split_once("=>").unwrap();
        let q: Vec<&str> = query.split_whitespace().collect();
        let site = loc(q[1]);
        let entry = serde_json::json!({
            "file": site[0], "line": site[1], "name": q[2],
            "expected": answers.split_whitespace().map(loc).collect::<Vec<_>>(),
        });
        match q[0] {
            "def" => defs.push(entry),
            "refs" => refs.push(entry),
            other => panic!("{file}: unknown kind {other}"),
        }
    }
    serde_json::json!({"defs": defs, "refs": refs})
}

/// Runs the Rust part of the harness under `tmp`, or says why it is skipped.
pub fn run(tmp: &Path) {
    let Some(src) = registry_crate(CRATE) else {
        println!("== rust: skipped ({CRATE} is not in the cargo registry cache)");
        return;
    };
    let repo = tmp.join("rs-repo");
    std::fs::create_dir_all(&repo).unwrap();
    super::sh(&repo, "cp", &["-r", src.join("src").to_str().unwrap(), "."]);
    super::commit_all(&repo);
    let mut index = Index::open_with_cache(&repo, &tmp.join("nav-rs.db")).unwrap();
    index.refresh().unwrap();
    super::score(
        "rust (globset 0.4.21; hand-checked answers)",
        &repo,
        &index,
        &expected("rust_expected.txt"),
    );

    let repo = tmp.join("rs-alias-repo");
    for (name, dir) in ALIAS_CRATES {
        let Some(src) = registry_crate(name) else {
            println!("== rust aliases: skipped ({name} is not in the cargo registry cache)");
            return;
        };
        let dest = repo.join(dir);
        std::fs::create_dir_all(&dest).unwrap();
        super::sh(&dest, "cp", &["-r", src.join("src").to_str().unwrap(), "."]);
    }
    super::commit_all(&repo);
    let mut index = Index::open_with_cache(&repo, &tmp.join("nav-rs-alias.db")).unwrap();
    index.refresh().unwrap();
    super::score(
        "rust aliases and generics (memchr 2.8.3 + indexmap 2.14.2; hand-checked answers)",
        &repo,
        &index,
        &expected("rust_alias_expected.txt"),
    );
}

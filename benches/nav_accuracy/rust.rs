//! Rust: the `globset` crate from the local cargo registry, checked against the hand-checked
//! answers in `rust_expected.txt` — no compiler-grade Rust oracle runs offline here
//! (rust-analyzer is not installed; rustdoc JSON needs nightly).

use std::path::{Path, PathBuf};

use git_orchestra::nav::Index;

/// The crate under test, as unpacked by cargo.
const CRATE: &str = "globset-0.4.21";

fn registry_crate() -> Option<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))?;
    std::fs::read_dir(home.join("registry/src"))
        .ok()?
        .flatten()
        .map(|e| e.path().join(CRATE))
        .find(|p| p.join("src/lib.rs").exists())
}

fn loc(s: &str) -> serde_json::Value {
    let (file, line) = s.rsplit_once(':').unwrap();
    serde_json::json!([file, line.parse::<u32>().unwrap()])
}

/// Parses `rust_expected.txt` into the harness's {"defs", "refs"} shape.
fn expected() -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/nav_accuracy/rust_expected.txt");
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
            other => panic!("rust_expected.txt: unknown kind {other}"),
        }
    }
    serde_json::json!({"defs": defs, "refs": refs})
}

/// Runs the Rust part of the harness under `tmp`, or says why it is skipped.
pub fn run(tmp: &Path) {
    let Some(src) = registry_crate() else {
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
        "rust (globset 0.4.21; hand-checked answers, no compiler-grade oracle offline)",
        &repo,
        &index,
        &expected(),
    );
}

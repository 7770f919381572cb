//! The walk matcher against tree-sitter's query cursor: the facts of every file must be the
//! same whichever ran the patterns (Python: a spread of the standard library; Rust: this
//! crate's sources).

use std::path::{Path, PathBuf};
use std::process::Command;

use git_orchestra::nav::{Extractor, Lang};

/// The `.py` files under `dir`, sorted, skipping site-packages and caches.
fn python_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name();
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            if name != "site-packages" && name != "__pycache__" {
                python_files(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "py") {
            out.push(p);
        }
    }
}

#[test]
fn python_facts_are_the_same_from_the_walk_matcher_and_the_query_cursor() {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['stdlib'])",
        ])
        .output()
        .expect("python3 runs");
    let stdlib = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    let mut files = Vec::new();
    python_files(&stdlib, &mut files);
    files.sort();
    assert!(files.len() > 500, "{} .py files in {stdlib:?}", files.len());
    // Every eighth file: a spread over the whole library that a debug build checks quickly.
    let mut walk = Extractor::new();
    let mut cursor = Extractor::with_query_cursor_only();
    assert!(walk.uses_matcher(Lang::Python));
    assert!(!cursor.uses_matcher(Lang::Python));
    let mut checked = 0;
    for f in files.iter().step_by(8) {
        let source = std::fs::read(f).unwrap();
        let ours = walk.extract(Lang::Python, &source).unwrap();
        let theirs = cursor.extract(Lang::Python, &source).unwrap();
        assert!(ours == theirs, "facts differ for {}", f.display());
        checked += 1;
    }
    assert!(checked > 60);
}

#[test]
fn rust_facts_are_the_same_from_the_walk_matcher_and_the_query_cursor() {
    // This crate's own sources: macros, generics, impls, `use` trees, token trees.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "tests", "benches"] {
        rust_files(&root.join(dir), &mut files);
    }
    files.sort();
    assert!(files.len() > 100, "{} .rs files", files.len());
    let mut walk = Extractor::new();
    let mut cursor = Extractor::with_query_cursor_only();
    assert!(walk.uses_matcher(Lang::Rust));
    for f in &files {
        let source = std::fs::read(f).unwrap();
        let ours = walk.extract(Lang::Rust, &source).unwrap();
        let theirs = cursor.extract(Lang::Rust, &source).unwrap();
        assert!(ours == theirs, "facts differ for {}", f.display());
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn languages_not_checked_against_the_query_cursor_keep_it() {
    let walk = Extractor::new();
    for lang in [Lang::TypeScript, Lang::JavaScript, Lang::Go] {
        assert!(!walk.uses_matcher(lang), "{lang:?}");
    }
}

//! Checks that keep the packet pipeline and its assembly in one place each: the pipeline is
//! one file per phase under `engine/packet/`, its phases share one step value instead of long
//! parameter lists (the remote coordinator's too), and only the composition root
//! (`orchestra-agents`' `crew`) builds the packet reviewer and the executor.

use std::path::{Path, PathBuf};

use super::{code_only, root, rust_files, source_dirs, word_starts};

/// The files of `crates/core/src/engine/packet/`: the driver and one file per phase.
const PHASE_FILES: &[&str] = &[
    "mod.rs",
    "started.rs",
    "worktree.rs",
    "setup.rs",
    "work.rs",
    "candidates.rs",
    "fan_out.rs",
    "compare.rs",
    "tester.rs",
    "commit.rs",
    "scope.rs",
    "validation.rs",
    "checks.rs",
    "review.rs",
    "fixes.rs",
];

/// Most parameters (`self` included) a function of the pipeline or the remote coordinator
/// takes: what more it needs belongs in the step value.
const MAX_PARAMETERS: usize = 5;

/// What only the composition root may write: a packet review assembled, the reviewer CLI
/// looked up, an executor built.
const ASSEMBLY: &[&str] = &[
    "PacketReview {",
    "CliReviewer::configured(",
    "crate::executor::build(",
    "orchestra_agents::executor::build(",
    "git_orchestra::executor::build(",
];

/// Returns `(name, line, parameters)` for each function declared in `code`, counting the
/// top-level commas of its parameter list.
fn parameter_counts(code: &str) -> Vec<(String, usize, usize)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(p) = code[from..].find("fn ") {
        let at = from + p;
        from = at + 3;
        if !word_starts(b, at) {
            continue;
        }
        let name: String = code[from..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        // The parameter list is the first `(` outside the generic parameters.
        let mut angle = 0i32;
        let Some(open) = (from..b.len()).find(|&i| {
            match b[i] {
                b'<' => angle += 1,
                b'>' if b[i - 1] != b'-' => angle -= 1,
                _ => {}
            }
            b[i] == b'(' && angle == 0
        }) else {
            continue;
        };
        if name.is_empty() || code[from + name.len()..open].contains(['{', ';']) {
            continue;
        }
        // Parameters are the non-empty runs between the list's top-level commas.
        let (mut depth, mut count, mut filled) = (1i32, 0usize, false);
        for (i, &c) in b.iter().enumerate().skip(open + 1) {
            match c {
                b'(' | b'[' | b'<' | b'{' => depth += 1,
                b'>' if b[i - 1] == b'-' || b[i - 1] == b'=' => {}
                b')' | b']' | b'>' | b'}' => depth -= 1,
                b',' if depth == 1 => {
                    count += usize::from(filled);
                    filled = false;
                    continue;
                }
                _ => {}
            }
            if depth == 0 {
                count += usize::from(filled);
                break;
            }
            filled |= !c.is_ascii_whitespace();
        }
        let line = code[..at].matches('\n').count() + 1;
        out.push((name, line, count));
    }
    out
}

/// Returns `file:line: name takes n parameters` for each function of `files` over the limit.
fn long_signatures(files: &[PathBuf]) -> Vec<String> {
    let mut found = Vec::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        let name = file
            .strip_prefix(root())
            .unwrap_or(file)
            .display()
            .to_string();
        if text.contains("too_many_arguments") {
            found.push(format!("{name}: allows clippy::too_many_arguments"));
        }
        for (f, line, n) in parameter_counts(&code_only(&text)) {
            if n > MAX_PARAMETERS {
                found.push(format!("{name}:{line}: `{f}` takes {n} parameters"));
            }
        }
    }
    found
}

fn engine_dir() -> PathBuf {
    root().join("crates/core/src/engine")
}

#[test]
fn the_packet_pipeline_is_one_file_per_phase() {
    let dir = engine_dir().join("packet");
    assert!(
        !engine_dir().join("packet.rs").exists(),
        "the packet pipeline is the folder engine/packet/, not engine/packet.rs"
    );
    let mut files: Vec<String> = rust_files(&dir)
        .iter()
        .filter_map(|f| Some(f.strip_prefix(&dir).ok()?.display().to_string()))
        .collect();
    files.sort();
    let mut expected: Vec<String> = PHASE_FILES.iter().map(|f| f.to_string()).collect();
    expected.sort();
    assert_eq!(
        files, expected,
        "engine/packet/ holds the driver (mod.rs) and one file per phase; a new phase is a new \
         file here, listed in tests/layout/pipeline.rs and crates/core/README.md"
    );
}

#[test]
fn the_pipeline_phases_share_one_step_value_instead_of_long_parameter_lists() {
    let mut files = rust_files(&engine_dir().join("packet"));
    files.extend(rust_files(&engine_dir().join("remote")));
    assert!(
        files.len() > PHASE_FILES.len(),
        "expected the pipeline's files"
    );
    let found = long_signatures(&files);
    assert!(
        found.is_empty(),
        "a function of the packet pipeline takes more than {MAX_PARAMETERS} parameters; carry \
         what it needs in `engine::packet::Step`: {found:#?}"
    );
}

#[test]
fn the_parameter_check_counts_parameters() {
    let code = "fn a(&self, b: u32, c: Option<(u8, u8)>) -> u32 { 0 }\nfn d() {}\n\
                fn e<T: Fn(u8, u8)>(x: T, y: &[u8], z: Vec<(u8, u8)>, w: u8, v: u8, u: u8,) {}\n";
    assert_eq!(
        parameter_counts(code),
        vec![
            ("a".to_string(), 1, 3),
            ("d".to_string(), 2, 0),
            ("e".to_string(), 3, 6)
        ]
    );
}

/// Returns `file:line: what` for each place of `text` (the file `name`) that assembles what
/// only the composition root may.
fn assembly_outside_the_root(name: &str, text: &str) -> Vec<String> {
    let code = code_only(text);
    let mut found = Vec::new();
    for (n, line) in code.lines().enumerate() {
        for what in ASSEMBLY {
            if line.contains(what) {
                found.push(format!("{name}:{}: {what}", n + 1));
            }
        }
    }
    found
}

#[test]
fn only_the_composition_root_assembles_the_packet_reviewer_and_the_executor() {
    let r = root();
    let crew = Path::new("crates/agents/src/crew.rs");
    assert!(r.join(crew).is_file(), "the composition root is {crew:?}");
    let found: Vec<String> = source_dirs()
        .iter()
        .flat_map(|src| rust_files(src))
        .filter(|f| f.strip_prefix(&r).is_ok_and(|p| p != crew))
        .filter_map(|f| Some((f.clone(), std::fs::read_to_string(&f).ok()?)))
        .flat_map(|(f, text)| {
            let name = f.strip_prefix(&r).unwrap_or(&f).display().to_string();
            assembly_outside_the_root(&name, &text)
        })
        .collect();
    assert!(
        found.is_empty(),
        "the worker, reviewer and executor of a run's packets are assembled by \
         `crew::Crew::assemble` alone; call it instead: {found:#?}"
    );
}

#[test]
fn the_assembly_check_finds_a_packet_review_built_by_hand() {
    let text = "// engine::PacketReview { in a comment\nlet r = engine::PacketReview { reviewer, max_rounds };\nlet e = crate::executor::build(c, r, k);\n";
    assert_eq!(
        assembly_outside_the_root("a.rs", text),
        vec![
            "a.rs:2: PacketReview {".to_string(),
            "a.rs:3: crate::executor::build(".to_string()
        ]
    );
}

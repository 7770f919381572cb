//! Checks that `exec::RunDir` alone names the files of a run's directory: no other module
//! calls `exec::run_dir` or joins one of those names onto a directory by hand.

use std::path::PathBuf;

use super::{code_only, root, rust_files, source_dirs};

/// The names `RunDir` owns, as a hand-written `.join(…)` or `format!(…)` would spell them.
const OWNED: &[&str] = &[
    ".join(\"logs\")",
    ".join(\"logs/",
    ".join(\"report.md\")",
    ".join(\"report.json\")",
    ".join(\"driver\")",
    ".join(\"executor\")",
    ".join(\"agent-cli\")",
    ".join(\"plan.sha256\")",
    ".join(\"plan-rejected.toml\")",
    ".join(\"artifacts\")",
    ".join(\"saved\")",
    ".join(\"pr\")",
    ".join(\"merge\")",
    "format!(\"planner-",
    "format!(\"plan-review-",
    "format!(\"ui-",
    "-resolve\")",
];

/// Returns `file:line: what` for each line of `text` that names a run directory's file by hand.
fn hand_joined(name: &str, text: &str) -> Vec<String> {
    let code = code_only(text);
    let mut found = Vec::new();
    for (n, (raw, code)) in text.lines().zip(code.lines()).enumerate() {
        if raw.trim_start().starts_with("//") {
            continue;
        }
        for what in OWNED {
            if raw.contains(what) {
                found.push(format!("{name}:{}: {what}", n + 1));
            }
        }
        if code.contains("run_dir(") && !code.contains("fn run_dir(") {
            found.push(format!("{name}:{}: run_dir(…)", n + 1));
        }
    }
    found
}

#[test]
fn only_run_dir_names_the_files_of_a_run_directory() {
    let r = root();
    let files: Vec<PathBuf> = source_dirs()
        .iter()
        .flat_map(|src| {
            rust_files(src)
                .into_iter()
                .filter(move |f| !f.starts_with(src.join("exec")))
        })
        .collect();
    assert!(files.len() > 100, "expected the workspace's sources");
    let found: Vec<String> = files
        .iter()
        .filter_map(|f| Some((f, std::fs::read_to_string(f).ok()?)))
        .flat_map(|(f, text)| {
            let name = f.strip_prefix(&r).unwrap_or(f).display().to_string();
            hand_joined(&name, &text)
        })
        .collect();
    assert!(
        found.is_empty(),
        "a run directory's files are named by hand; ask `exec::RunDir` instead (add a method \
         there for a new file): {found:#?}"
    );
}

#[test]
fn the_run_dir_check_finds_a_hand_joined_name() {
    let text = "// .join(\"report.md\") in a comment\nlet p = exec::run_dir(c, r).join(\"report.md\");\nlet d = RunDir::new(c, r).report_md();\n";
    assert_eq!(
        hand_joined("a.rs", text),
        ["a.rs:2: .join(\"report.md\")", "a.rs:2: run_dir(…)"]
    );
}

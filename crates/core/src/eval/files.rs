//! Tells test files from source and documentation files by their paths, and narrows a test
//! command to the test files a task changes where the test runner takes paths.
//!
//! Paths are all there is to go on when mining history (a commit's files are not run), so the
//! rules are the conventions test runners themselves use to find tests: a `test`, `tests`,
//! `spec` or `__tests__` directory, or a `test_*` / `*_test.*` / `*.test.*` / `*.spec.*` name.

/// Directory names whose files are tests.
const TEST_DIRS: &[&str] = &["test", "tests", "spec", "specs", "__tests__", "testing"];

/// Extensions of documentation files: changing them changes no behaviour.
const DOC_EXTENSIONS: &[&str] = &["md", "markdown", "rst", "txt", "adoc"];

/// Returns true if and only if `path` is a test file by the conventions test runners follow.
pub fn is_test_file(path: &str) -> bool {
    let mut parts: Vec<&str> = path.split('/').collect();
    let name = parts.pop().unwrap_or_default();
    if parts
        .iter()
        .any(|d| TEST_DIRS.contains(&d.to_ascii_lowercase().as_str()))
    {
        return true;
    }
    let lower = name.to_ascii_lowercase();
    let stem = name.split('.').next().unwrap_or_default();
    lower.starts_with("test_")
        || lower.contains("_test.")
        || lower.contains(".test.")
        || lower.contains(".spec.")
        || lower.contains("_spec.")
        || stem.ends_with("Test")
        || stem.ends_with("Tests")
}

/// Returns true if and only if `path` is documentation: a Markdown, reStructuredText or text
/// file, or anything under a top-level `doc` or `docs` directory.
pub fn is_doc_file(path: &str) -> bool {
    let top = path.split('/').next().unwrap_or_default();
    let ext = path
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    path.contains('/') && matches!(top, "doc" | "docs") || DOC_EXTENSIONS.contains(&ext.as_str())
}

/// Returns true if and only if `path` is a source file: neither a test nor documentation.
pub fn is_source_file(path: &str) -> bool {
    !is_test_file(path) && !is_doc_file(path)
}

/// Returns `command` narrowed to `tests` where its runner takes test paths (`pytest`, `python
/// -m pytest`): those of `tests` it can collect are appended, after `-rA` (unless the command
/// chooses its own `-r`) so that pytest's summary names every test with its result, and
/// `--continue-on-collection-errors` so that a test file failing to import does not hide the
/// results of the others. Other
/// commands (`cargo test`, a script, anything with shell operators) are returned whole; they
/// see the files in `ORCHESTRA_EVAL_TESTS` and may narrow themselves.
pub fn narrowed(command: &str, tests: &[String]) -> String {
    if !takes_paths(command) {
        return command.to_string();
    }
    let words: Vec<&str> = command.split_whitespace().collect();
    let mut out = command.trim_end().to_string();
    if !words.iter().any(|w| w.starts_with("-r")) {
        out.push_str(" -rA");
    }
    // A hidden test file that cannot be imported at the base (it imports what the commit adds)
    // would otherwise stop pytest before any test runs, and every test would look absent there.
    if !words.contains(&"--continue-on-collection-errors") {
        out.push_str(" --continue-on-collection-errors");
    }
    for path in tests.iter().filter(|t| t.ends_with(".py")) {
        out.push(' ');
        out.push_str(&quote(path));
    }
    out
}

/// Returns true if and only if `command` is a plain pytest command line, which [`narrowed`]
/// narrows to the test paths it is given.
pub fn takes_paths(command: &str) -> bool {
    // A program given by its path (`/usr/bin/python3`, `.venv/bin/pytest`) is the same runner.
    let words: Vec<&str> = command
        .split_whitespace()
        .enumerate()
        .map(|(i, w)| {
            if i == 0 {
                w.rsplit('/').next().unwrap_or(w)
            } else {
                w
            }
        })
        .collect();
    let pytest = matches!(words.as_slice(), ["pytest", ..])
        || matches!(words.as_slice(), ["python" | "python3", "-m", "pytest", ..])
        || matches!(words.as_slice(), ["uv", "run", "pytest", ..]);
    pytest && !command.contains(['&', '|', ';', '>', '<', '`', '$', '\n'])
}

/// Returns `word` quoted for `sh`.
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_tests_from_sources_and_docs() {
        for t in [
            "tests/test_calc.py",
            "src/calc_test.go",
            "web/app.test.ts",
            "spec/user_spec.rb",
            "src/test/java/CalcTest.java",
            "check/test_x.sh",
        ] {
            assert!(is_test_file(t), "{t}");
            assert!(!is_source_file(t), "{t}");
        }
        for s in ["src/calc.py", "latest.rs", "contest/main.c", "build.sh"] {
            assert!(!is_test_file(s), "{s}");
            assert!(is_source_file(s), "{s}");
        }
        for d in ["README.md", "docs/guide.html", "notes.txt"] {
            assert!(is_doc_file(d), "{d}");
            assert!(!is_source_file(d), "{d}");
        }
    }

    #[test]
    fn narrows_pytest_to_the_changed_test_files_only() {
        let tests = vec!["tests/test_a.py".to_string(), "tests/data.json".to_string()];
        assert_eq!(
            narrowed("pytest -q", &tests),
            "pytest -q -rA --continue-on-collection-errors 'tests/test_a.py'"
        );
        assert_eq!(
            narrowed("python -m pytest -rfE", &tests),
            "python -m pytest -rfE --continue-on-collection-errors 'tests/test_a.py'"
        );
        assert_eq!(
            narrowed("/usr/bin/python3 -m pytest -q", &tests),
            "/usr/bin/python3 -m pytest -q -rA --continue-on-collection-errors 'tests/test_a.py'"
        );
        assert_eq!(narrowed("cargo test", &tests), "cargo test");
        assert_eq!(narrowed("pytest && echo ok", &tests), "pytest && echo ok");
        assert_eq!(
            narrowed("pytest", &[]),
            "pytest -rA --continue-on-collection-errors"
        );
    }
}

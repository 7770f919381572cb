//! Reads per-test results from a test runner's output: pytest's `-rA` summary lines
//! (`PASSED tests/test_a.py::test_x`) and verbose lines (`tests/test_a.py::test_x PASSED`),
//! and `cargo test`'s `test name ... ok` lines.
//!
//! Any runner that prints one of these forms is read the same way (a shell script printing
//! `PASSED <id>` is read like pytest). Output in none of them yields nothing, and the caller
//! falls back to judging by the command's exit status.

use std::collections::BTreeMap;

/// Each test id the output names, mapped to whether it passed. A test named twice (a verbose
/// line and a summary line) keeps the last verdict; skipped, ignored and expected-failure tests
/// are left out: they neither pass nor fail.
pub type Results = BTreeMap<String, bool>;

/// Returns the per-test results `output` reports; empty when it reports none in a form this
/// module reads.
pub fn parse(output: &str) -> Results {
    let mut results = Results::new();
    for line in output.lines() {
        let line = line.trim_end();
        if let Some((id, passed)) = summary_line(line)
            .or_else(|| verbose_line(line))
            .or_else(|| cargo_line(line))
        {
            results.insert(id.to_string(), passed);
        }
    }
    results
}

/// Reads a pytest `-rA` short summary line: `PASSED id`, `FAILED id - message`, `ERROR id`.
fn summary_line(line: &str) -> Option<(&str, bool)> {
    let (word, rest) = line.split_once(' ')?;
    let passed = match word {
        "PASSED" => true,
        "FAILED" | "ERROR" => false,
        _ => return None,
    };
    let id = rest.split(" - ").next()?.trim();
    // A pytest id names a test in a file (`path::name`) or a file that failed to collect; a
    // word after `ERROR` in some other tool's log is neither.
    (is_test_id(id) && (id.contains("::") || id.ends_with(".py"))).then_some((id, passed))
}

/// Reads a pytest verbose line: `path::name PASSED [ 50%]`.
fn verbose_line(line: &str) -> Option<(&str, bool)> {
    let mut words = line.split_whitespace();
    let id = words.next()?;
    let passed = match words.next()? {
        "PASSED" => true,
        "FAILED" | "ERROR" => false,
        _ => return None,
    };
    (id.contains("::") && is_test_id(id)).then_some((id, passed))
}

/// Reads a `cargo test` line: `test name ... ok` or `test name ... FAILED`.
fn cargo_line(line: &str) -> Option<(&str, bool)> {
    let rest = line.strip_prefix("test ")?;
    let (id, verdict) = rest.rsplit_once(" ... ")?;
    let passed = match verdict.trim() {
        "ok" => true,
        "FAILED" => false,
        _ => return None,
    };
    let id = id.trim();
    is_test_id(id).then_some((id, passed))
}

/// Returns true if and only if `id` can name a test: one word, not empty.
fn is_test_id(id: &str) -> bool {
    !id.is_empty() && !id.contains(char::is_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(results: &Results, passed: bool) -> Vec<&str> {
        results
            .iter()
            .filter(|(_, p)| **p == passed)
            .map(|(id, _)| id.as_str())
            .collect()
    }

    #[test]
    fn reads_pytest_summary_and_verbose_lines() {
        let out = "\
tests/test_a.py::test_one PASSED                                   [ 33%]
tests/test_a.py::test_two FAILED                                   [ 66%]
=========================== short test summary info ============================
PASSED tests/test_a.py::test_one
PASSED tests/test_b.py::test_three[1-2]
FAILED tests/test_a.py::test_two - assert 5 == 6
ERROR tests/test_c.py - ImportError: cannot import name 'mul'
SKIPPED [1] tests/test_d.py:3: no network
XFAIL tests/test_d.py::test_later
========================= 1 failed, 2 passed in 0.03s ==========================
";
        let r = parse(out);
        assert_eq!(
            ids(&r, true),
            [
                "tests/test_a.py::test_one",
                "tests/test_b.py::test_three[1-2]"
            ]
        );
        assert_eq!(
            ids(&r, false),
            ["tests/test_a.py::test_two", "tests/test_c.py"]
        );
    }

    #[test]
    fn reads_cargo_test_lines_and_skips_ignored_ones() {
        let out = "\
running 3 tests
test calc::tests::adds ... ok
test calc::tests::multiplies ... FAILED
test calc::tests::slow ... ignored
test result: FAILED. 1 passed; 1 failed; 1 ignored
";
        let r = parse(out);
        assert_eq!(ids(&r, true), ["calc::tests::adds"]);
        assert_eq!(ids(&r, false), ["calc::tests::multiplies"]);
    }

    #[test]
    fn output_in_no_known_form_yields_nothing() {
        assert!(
            parse("FAIL tests/test_a.sh\nall good\nPASSED\nERROR timeout\nFAILED to connect\n")
                .is_empty()
        );
    }
}

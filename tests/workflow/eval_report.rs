//! `git orchestra eval report` and `eval compare`: per-arm statistics of a seeded eval, the
//! report files, the results kept under `refs/orchestra/eval/<eval>`, and the paired
//! comparison of two evals read from those refs on a fresh clone.

use std::path::Path;

use git_orchestra::eval::stats;

use super::eval_fixtures::history;
use crate::support::{git, orchestra, text};

/// Solves the multiplication task only.
const MUL: &str = "cmd:if grep -q multiplication \"$ORCHESTRA_PACKET_FILE\"; then echo 'mul() { echo $(($1 * $2)); }' >> src/calc.sh; fi";

/// Solves the multiplication and subtraction tasks.
const MUL_SUB: &str = "cmd:if grep -q multiplication \"$ORCHESTRA_PACKET_FILE\"; then echo 'mul() { echo $(($1 * $2)); }' >> src/calc.sh; fi; if grep -q subtraction \"$ORCHESTRA_PACKET_FILE\"; then echo 'sub() { echo $(($1 - $2)); }' >> src/calc.sh; fi";

/// Solves all three tasks.
const ALL: &str = "cmd:if grep -q multiplication \"$ORCHESTRA_PACKET_FILE\"; then echo 'mul() { echo $(($1 * $2)); }' >> src/calc.sh; fi; if grep -q subtraction \"$ORCHESTRA_PACKET_FILE\"; then echo 'sub() { echo $(($1 - $2)); }' >> src/calc.sh; fi; if grep -q negation \"$ORCHESTRA_PACKET_FILE\"; then echo 'neg() { echo $((0 - $1)); }' >> src/calc.sh; fi";

/// Runs `eval run --repeat 2 --json` on the last three commits of `dir` with `arms` and
/// returns its JSON.
fn run_eval(dir: &Path, arms: &[(&str, &str)]) -> serde_json::Value {
    let specs: Vec<String> = arms.iter().map(|(n, s)| format!("{n}={s}")).collect();
    let mut args = vec![
        "eval",
        "run",
        "--from-history",
        "HEAD~3..HEAD",
        "--test",
        "sh run_tests.sh",
        "--repeat",
        "2",
        "--jobs",
        "2",
        "--json",
    ];
    for s in &specs {
        args.extend(["--arm", s.as_str()]);
    }
    let out = orchestra(dir, &args);
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Returns the arm `name` of a report's JSON.
fn arm(json: &serde_json::Value, name: &str) -> serde_json::Value {
    json["arms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == name)
        .unwrap_or_else(|| panic!("no arm {name}: {json}"))
        .clone()
}

/// Returns `x` rounded to 3 decimals.
fn r3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[test]
fn report_shows_each_arms_statistics_and_writes_self_contained_files() {
    let (repo, _) = history();
    let json = run_eval(&repo.path, &[("two", MUL_SUB), ("one", MUL)]);
    let id = json["eval"].as_str().unwrap().to_string();
    assert_eq!(json["finished"], true, "{json}");
    let two = arm(&json, "two");
    let one = arm(&json, "one");
    assert_eq!(
        (two["attempts"].as_u64(), two["resolved"].as_u64()),
        (Some(6), Some(4))
    );
    assert_eq!(
        (one["attempts"].as_u64(), one["resolved"].as_u64()),
        (Some(6), Some(2))
    );
    // 4 of 6 and 2 of 6 with their 95% Wilson intervals, as stats.rs computes them.
    let interval = |a: &serde_json::Value| {
        (
            r3(a["interval"][0].as_f64().unwrap()),
            r3(a["interval"][1].as_f64().unwrap()),
        )
    };
    assert_eq!(r3(two["rate"].as_f64().unwrap()), 0.667);
    assert_eq!(interval(&two), (0.3, 0.903));
    assert_eq!(interval(&one), (0.097, 0.7));
    let wilson = stats::resolved_rate(4, 6).unwrap();
    assert_eq!(interval(&two), (r3(wilson.low), r3(wilson.high)));
    // Deterministic solvers: a task is resolved by both of its attempts or by neither.
    assert_eq!(two["k"], 2);
    assert_eq!(r3(two["pass_at_k"].as_f64().unwrap()), 0.667);
    assert_eq!(r3(two["pass_hat_k"].as_f64().unwrap()), 0.667);
    assert_eq!(r3(one["pass_at_k"].as_f64().unwrap()), 0.333);
    assert!(two["wall_p50"].as_f64().unwrap() > 0.0, "{two}");
    assert!(two["wall_p90"].as_f64().unwrap() >= two["wall_p50"].as_f64().unwrap());
    assert_eq!(two["failures"], serde_json::json!({"no_change": 2}));
    assert_eq!(two["cost_per_resolved"], serde_json::Value::Null);
    assert_eq!(json["attempts"].as_array().unwrap().len(), 12);

    // The report command prints the same numbers and writes the three files.
    let out = orchestra(&repo.path, &["eval", "report", &id, "--out", "rep"]);
    assert!(out.status.success(), "{}", text(&out));
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("finished"), "{table}");
    assert!(table.contains("[0.300, 0.903]"), "{table}");
    assert!(table.contains("[0.097, 0.700]"), "{table}");
    let dir = repo.path.join("rep");
    let kept: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    assert_eq!(kept["arms"], json["arms"]);
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("| two | `cmd:"), "{md}");
    assert!(md.contains("[0.300, 0.903]"), "{md}");
    let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
    for needle in [
        "<svg",
        "[0.300, 0.903]",
        "[0.097, 0.700]",
        "0.667",
        "no change",
    ] {
        assert!(page.contains(needle), "no {needle} in the page:\n{page}");
    }
    // Self-contained: nothing is loaded from anywhere, no script runs.
    let lower = page.to_lowercase();
    for loads in ["src=", "href=", "<script", "<link", "@import", "url("] {
        assert!(
            !lower.contains(loads),
            "the page loads something ({loads}):\n{page}"
        );
    }
    // A default directory when none is given.
    let out = orchestra(&repo.path, &["eval", "report", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let default = repo.path.join(format!(".git/orchestra/evals/{id}/report"));
    for file in ["report.md", "report.json", "report.html"] {
        assert!(
            default.join(file).is_file(),
            "no {file} in {}",
            default.display()
        );
    }

    // The results are kept in git, readable with plain git, and listed.
    let shown = git(
        &repo.path,
        &["show", &format!("refs/orchestra/eval/{id}:results.json")],
    );
    let shown: serde_json::Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(shown["arms"], json["arms"]);
    assert_eq!(shown["attempts"], json["attempts"]);
    let out = orchestra(&repo.path, &["eval", "report", "--list"]);
    assert!(out.status.success(), "{}", text(&out));
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        listed.contains(&id) && listed.contains("kept in git"),
        "{listed}"
    );
    assert!(
        listed.contains("two 4/6") && listed.contains("one 2/6"),
        "{listed}"
    );
}

#[test]
fn compare_reads_kept_evals_on_a_fresh_clone_and_tests_the_discordant_pairs() {
    let (repo, _) = history();
    let a = run_eval(&repo.path, &[("s", MUL), ("t", MUL_SUB)]);
    let b = run_eval(&repo.path, &[("s", ALL)]);
    let (a_id, b_id) = (a["eval"].as_str().unwrap(), b["eval"].as_str().unwrap());
    assert_ne!(a_id, b_id);
    let tmp = tempfile::tempdir().unwrap();
    let clone = tmp.path().join("clone");
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            repo.path.to_str().unwrap(),
            clone.to_str().unwrap(),
        ],
    );
    git(
        &clone,
        &[
            "fetch",
            "-q",
            "origin",
            "refs/orchestra/eval/*:refs/orchestra/eval/*",
        ],
    );
    // Arm s: A resolves multiplication (2 attempts), B all three tasks (6): 4 pairs only B
    // resolved, none only A; exact McNemar p = 2 × ½⁴.
    let out = orchestra(&clone, &["eval", "compare", a_id, b_id, "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cmp = &json["comparisons"];
    assert_eq!(cmp.as_array().unwrap().len(), 1, "{json}");
    let c = &cmp[0];
    assert_eq!(c["a"]["arm"], "s");
    assert_eq!(
        (
            c["pairs"].as_u64(),
            c["both"].as_u64(),
            c["only_a"].as_u64(),
            c["only_b"].as_u64(),
            c["neither"].as_u64()
        ),
        (Some(6), Some(2), Some(0), Some(4), Some(0)),
        "{json}"
    );
    assert_eq!(c["p_value"].as_f64(), Some(stats::mcnemar_exact(0, 4)));
    assert_eq!(c["p_value"].as_f64(), Some(0.125));
    assert_eq!(c["significant"], false);
    assert_eq!(r3(c["difference"].as_f64().unwrap()), -0.667);
    let (low, high) = (
        c["interval"][0].as_f64().unwrap(),
        c["interval"][1].as_f64().unwrap(),
    );
    assert!(low <= -0.667 && (-0.667..=0.0).contains(&high), "{json}");
    // The text says it in words.
    let out = orchestra(&clone, &["eval", "compare", a_id, b_id]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("only A 0, only B 4"), "{said}");
    assert!(
        said.contains("p = 0.1250: not significant at 0.05"),
        "{said}"
    );
    // Two arms of one eval: t resolves subtraction too, s does not.
    let out = orchestra(
        &clone,
        &[
            "eval", "compare", a_id, "--arm", "t", "--arm", "s", "--json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &json["comparisons"][0];
    assert_eq!(
        (c["only_a"].as_u64(), c["only_b"].as_u64()),
        (Some(2), Some(0))
    );
    assert_eq!(c["p_value"].as_f64(), Some(0.5));
}

#[test]
fn compare_refuses_unknown_evals_and_arms_by_name() {
    let (repo, _) = history();
    let a = run_eval(&repo.path, &[("s", MUL)]);
    let a_id = a["eval"].as_str().unwrap();
    let out = orchestra(&repo.path, &["eval", "compare", "nope-1", "nope-2"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nope-1") && err.contains("nope-2"), "{err}");
    let out = orchestra(&repo.path, &["eval", "compare", a_id, "nope-2"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("nope-2"),
        "{}",
        text(&out)
    );
    let out = orchestra(
        &repo.path,
        &["eval", "compare", a_id, "--arm", "s", "--arm", "x"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no arm `x`") && err.contains("s"), "{err}");
}

#[test]
fn results_are_kept_in_git_with_no_identity_configured() {
    let (repo, _) = history();
    let home = tempfile::tempdir().unwrap();
    let mut cmd = std::process::Command::new(crate::support::binary_path());
    cmd.current_dir(&repo.path)
        .args([
            "eval",
            "run",
            "--from-history",
            "HEAD~1..HEAD",
            "--test",
            "sh run_tests.sh",
            "--arm",
            &format!("all={ALL}"),
            "--json",
        ])
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path())
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        // No identity from the host name either, whatever machine this runs on.
        .env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "user.useConfigOnly")
        .env("GIT_CONFIG_VALUE_0", "true");
    for key in [
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "EMAIL",
    ] {
        cmd.env_remove(key);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("cannot keep"),
        "{}",
        text(&out)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = json["eval"].as_str().unwrap();
    let shown = git(
        &repo.path,
        &["show", &format!("refs/orchestra/eval/{id}:results.json")],
    );
    let shown: serde_json::Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(shown["arms"][0]["resolved"], 1, "{shown}");
}

//! `git orchestra plan check` and the plan library: parsing, validation, scopes, overlaps and
//! waves, on real repositories.

// Helpers outside #[test] functions fail loudly on purpose.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use git_orchestra::plan::{self, Packet, Plan, PlanError, Scope};

use crate::support::{TestRepo, orchestra, text};

/// Everything `plan check` must leave untouched: working tree state, refs and HEAD.
fn state(repo: &TestRepo) -> String {
    format!(
        "{}\n--\n{}\n--\n{}",
        repo.git(&["status", "--porcelain", "--untracked-files=all"]),
        repo.git(&["for-each-ref"]),
        repo.git(&["rev-parse", "HEAD"]),
    )
}

const PACKET_A: &str = r#"
[[packet]]
id = "a"
title = "Core"
description = "Validate the core parser."
files = ["src/parser.rs"]
validation = ["true"]
"#;

/// Writes `plan` as `plan.toml` in a fresh repository and runs `plan check` on it, asserting
/// exit 2, that stderr holds every `expected` fragment, and that the repository is unchanged.
fn check_fails(plan: &str, expected: &[&str]) -> String {
    let repo = TestRepo::new();
    repo.write("plan.toml", plan);
    let before = state(&repo);
    let out = orchestra(&repo.path, &["plan", "check", "plan.toml"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(2), "{all}");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    for e in expected {
        assert!(stderr.contains(e), "missing {e:?} in\n{all}");
    }
    assert!(out.stdout.is_empty(), "{all}");
    assert_eq!(state(&repo), before, "the repository changed");
    stderr
}

fn with_objective(rest: &str) -> String {
    format!("objective = \"Add input validation\"\n{rest}")
}

const DIAMOND: &str = r#"objective = "Add input validation"
base = "main"
max_parallel = 4

[[packet]]
id = "core"
title = "Core"
description = "d"
files = ["src/lib.rs"]

[[packet]]
id = "parser"
title = "Parser"
description = "d"
files = ["src/parser.rs", "tests/parser_*.rs"]
depends_on = ["core"]

[[packet]]
id = "all-src"
title = "Everything in src"
description = "d"
files = ["src/*.rs"]
depends_on = ["core"]

[[packet]]
id = "docs"
title = "Docs"
role = "docs"
description = "d"
files = ["docs/"]
depends_on = ["parser", "all-src"]

[[packet]]
id = "readme"
title = "Readme"
role = "docs"
description = "d"
files = ["README.md", "docs/guide.md"]
"#;

#[test]
fn valid_plan_prints_waves_and_serialized_pairs() {
    let repo = TestRepo::new();
    repo.write("plan.toml", DIAMOND);
    let before = state(&repo);
    let head = repo.git(&["rev-parse", "HEAD"]);
    let out = orchestra(&repo.path, &["plan", "check", "plan.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let expected = format!(
        "plan plan.toml is valid\n\
         objective: Add input validation\n\
         packets: 5\n\
         base: main ({head})\n\
         max parallel: 4\n\
         waves:\n  \
         1: core, readme\n  \
         2: parser\n  \
         3: all-src\n  \
         4: docs\n\
         serialized:\n  \
         parser before all-src: src/*.rs overlaps src/parser.rs\n  \
         readme before docs: docs/ contains docs/guide.md\n\
         runs on: this machine (worktrees beside the repository)\n\
         forecast: 100.0k–2.0M tokens, {unknown}, 60 s–2.5 h \
         (no history: defaults; time from all packets in parallel to one after another)\n\
         {packets}",
        unknown = UNPRICED,
        packets = ["core", "parser", "all-src", "docs", "readme"]
            .map(|p| format!(
                "  {p}: 20.0k–400.0k tokens, {UNPRICED}, 60 s–30 min (no history: defaults)\n"
            ))
            .concat()
    );
    assert_eq!(stdout, expected);
    assert_eq!(state(&repo), before);
    // The same plan gives the same output every time.
    let again = orchestra(&repo.path, &["plan", "check", "plan.toml"]);
    assert_eq!(again.stdout, out.stdout);
}

/// The cost of a forecast without a price for the model.
const UNPRICED: &str = "cost unknown (no [prices] entry for the model)";

/// Seeds the run store of `repo` with an earlier run whose coder packet `core` of one file
/// used 10,000 tokens and cost 0.01.
fn seed_history(repo: &TestRepo) {
    use git_orchestra::store::{Event, NewPacket, NewRun, Store};
    let mut store = Store::open(&repo.path.join(".git")).unwrap();
    store
        .create_run(&NewRun {
            id: "earlier".into(),
            objective: "o".into(),
            base: "b".into(),
            plan_toml: DIAMOND.into(),
            plan_path: "plan.toml".into(),
            worker_cmd: None,
            max_parallel: 1,
            timeout_secs: 1,
            worktree_root: "/w".into(),
            packets: vec![NewPacket {
                id: "core".into(),
                title: "Core".into(),
                role: "coder".into(),
                branch: "b".into(),
                worktree: "/w/core".into(),
            }],
        })
        .unwrap();
    for e in [
        Event::AgentModelCall {
            packet: "core".into(),
            role: "coder".into(),
            model: "m".into(),
            turn: 1,
            input_tokens: 9_000,
            output_tokens: 1_000,
            cost_nanos: Some(10_000_000),
            duration_ms: 1,
        },
        Event::PacketSucceeded {
            packet: "core".into(),
            commit: "c".into(),
        },
    ] {
        store.record("earlier", &e).unwrap();
    }
    drop(store);
}

#[test]
fn plan_check_forecasts_from_the_packets_that_succeeded_before() {
    let repo = TestRepo::new();
    repo.write("plan.toml", DIAMOND);
    seed_history(&repo);
    let before = state(&repo);
    let out = orchestra(&repo.path, &["plan", "check", "plan.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Scaled by size: `parser` has two files in scope, so twice the tokens and cost.
    assert!(
        stdout.contains(
            "\n  core: 7.5k–15.0k tokens, cost 0.0075–0.0150, 60 s–30 min (from 1 earlier packet)\n"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("\n  parser: 15.0k–30.0k tokens, cost 0.0150–0.0300, 60 s–30 min (from 1 earlier packet)\n"),
        "{stdout}"
    );
    assert!(stdout.contains("(no history: defaults)\n"), "{stdout}");
    assert!(
        stdout.contains("(3 of 5 packets from history, the rest defaults;"),
        "{stdout}"
    );
    assert_eq!(state(&repo), before, "plan check changed the repository");
    let json = orchestra(&repo.path, &["plan", "check", "plan.toml", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["forecast"]["packets"][0]["basis"]["kind"], "history");
    assert_eq!(v["forecast"]["packets"][0]["tokens"]["high"], 15_000.0);
}

#[test]
fn a_best_of_packet_is_forecast_one_packets_time_per_round_of_candidates_at_once() {
    let repo = TestRepo::new();
    seed_history(&repo);
    let three = |parallel: u32| {
        DIAMOND
            .replace("max_parallel = 4", &format!("max_parallel = {parallel}"))
            .replacen("id = \"core\"\n", "id = \"core\"\nattempts = 3\n", 1)
    };
    // `plan check` of the plan with `parallel` at once: its text and the core's forecast.
    let check = |parallel: u32| {
        repo.write("plan.toml", &three(parallel));
        let out = orchestra(&repo.path, &["plan", "check", "plan.toml"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let json = orchestra(&repo.path, &["plan", "check", "plan.toml", "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            v["forecast"]["packets"][0].clone(),
        )
    };
    // Room for the three candidates at once: one packet's time for all their tokens and cost.
    let (stdout, core) = check(3);
    assert!(
        stdout.contains(
            "\n  core: 22.5k–45.0k tokens, cost 0.0225–0.0450, 60 s–30 min (3 candidates; from 1 earlier packet)\n"
        ),
        "{stdout}"
    );
    assert_eq!(
        (core["secs"]["low"].as_f64(), core["secs"]["high"].as_f64()),
        (Some(60.0), Some(1800.0)),
        "{core}"
    );
    assert_eq!(core["at_once"], 3, "{core}");
    // One at a time: three rounds of one packet's time, for the same tokens and cost.
    let (stdout, core) = check(1);
    assert!(
        stdout.contains(
            "\n  core: 22.5k–45.0k tokens, cost 0.0225–0.0450, 3 min–1.5 h (3 candidates, 1 at a time; from 1 earlier packet)\n"
        ),
        "{stdout}"
    );
    assert_eq!(
        (core["secs"]["low"].as_f64(), core["secs"]["high"].as_f64()),
        (Some(180.0), Some(5400.0)),
        "{core}"
    );
    assert_eq!(
        core["cost"]["high"].as_f64().map(|c| (c * 1e4).round()),
        Some(450.0),
        "{core}"
    );
}

#[test]
fn json_output_has_the_same_summary() {
    let repo = TestRepo::new();
    repo.write("plans/plan.toml", DIAMOND);
    std::fs::create_dir_all(repo.path.join("src/sub")).unwrap();
    let head = repo.git(&["rev-parse", "HEAD"]);
    // The plan path is relative to the current directory, wherever that is in the repository.
    let out = orchestra(
        &repo.path.join("src/sub"),
        &["plan", "check", "../../plans/plan.toml", "--json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["valid"], true);
    assert_eq!(v["objective"], "Add input validation");
    assert_eq!(v["packets"], 5);
    assert_eq!(v["base"]["commit"], head.as_str());
    assert_eq!(v["base"]["name"], "main");
    assert_eq!(
        v["waves"],
        serde_json::json!([["core", "readme"], ["parser"], ["all-src"], ["docs"]])
    );
    assert_eq!(v["serialized"][0]["first"], "parser");
    assert_eq!(v["serialized"][0]["second"], "all-src");
    assert_eq!(
        v["serialized"][0]["reason"],
        "src/*.rs overlaps src/parser.rs"
    );
}

#[test]
fn json_output_lists_issues_with_locations() {
    let repo = TestRepo::new();
    repo.write(
        "plan.toml",
        &format!(
            "objective = \"x\"\nbase = \"nope\"\n{}",
            PACKET_A.replace("[\"src/parser.rs\"]", "[]")
        ),
    );
    let before = state(&repo);
    let out = orchestra(&repo.path, &["plan", "check", "plan.toml", "--json"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["valid"], false);
    let issues = v["issues"].as_array().unwrap();
    assert_eq!(issues.len(), 2, "{v}");
    assert_eq!(issues[0]["location"]["line"], 2);
    assert_eq!(issues[0]["location"]["column"], 8);
    assert_eq!(
        issues[0]["message"],
        "unknown base `nope`: no commit by that name"
    );
    assert_eq!(issues[1]["location"]["file"], "plan.toml");
    assert_eq!(issues[1]["location"]["line"], 8);
    assert!(
        issues[1]["hint"].as_str().unwrap().contains("files = ["),
        "{v}"
    );
    assert_eq!(state(&repo), before);
}

#[test]
fn default_base_is_the_current_branch_commit() {
    let repo = TestRepo::new();
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.git(&["commit", "-q", "--allow-empty", "-m", "second"]);
    repo.write("plan.toml", &with_objective(PACKET_A));
    let head = repo.git(&["rev-parse", "HEAD"]);
    let out = orchestra(&repo.path, &["plan", "check", "plan.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("base: feature ({head})")),
        "{stdout}"
    );
    assert!(stdout.contains("serialized: none"), "{stdout}");
}

#[test]
fn malformed_toml_names_line_and_column() {
    check_fails(
        "objective = \"x\"\n\n[[packet]]\nid = \"a\ntitle = \"t\"\n",
        &["error: plan.toml:4:", "invalid basic string"],
    );
}

#[test]
fn unknown_key_is_named() {
    let plan = with_objective(&PACKET_A.replace("validation =", "validations ="));
    check_fails(
        &plan,
        &[
            "error: plan.toml:8:1: unknown field `validations`",
            "`validation`",
        ],
    );
    check_fails(
        "objective = \"x\"\nparallel = 3\n",
        &[
            "error: plan.toml:2:1: unknown field `parallel`",
            "`max_parallel`",
        ],
    );
}

#[test]
fn missing_field_and_wrong_type_are_named() {
    let plan =
        with_objective(&PACKET_A.replace("description = \"Validate the core parser.\"\n", ""));
    check_fails(&plan, &["plan.toml:3:1: missing field `description`"]);
    check_fails(PACKET_A, &["missing field `objective`"]);
    let plan = with_objective(
        &PACKET_A.replace("files = [\"src/parser.rs\"]", "files = \"src/parser.rs\""),
    );
    check_fails(&plan, &["plan.toml:7:9:", "expected a sequence", "files"]);
}

#[test]
fn duplicate_id_is_reported() {
    let plan = with_objective(&format!("{PACKET_A}{PACKET_A}"));
    check_fails(
        &plan,
        &["plan.toml:11:6: duplicate packet id `a` (first used at line 4)"],
    );
}

#[test]
fn unknown_and_self_dependencies_are_reported_together() {
    let b = r#"
[[packet]]
id = "b"
title = "t"
description = "d"
files = ["docs"]
depends_on = ["b", "ghost"]
"#;
    let stderr = check_fails(
        &with_objective(&format!("{PACKET_A}{b}")),
        &[
            "plan.toml:15:15: packet `b` depends on itself",
            "plan.toml:15:20: packet `b` depends on unknown packet `ghost`; use the id of a packet in this plan: a",
            "2 problems found; nothing was changed",
        ],
    );
    assert_eq!(stderr.lines().count(), 3, "{stderr}");
}

#[test]
fn cycle_is_named() {
    let mut plan = String::from("objective = \"x\"\n");
    for (id, dep) in [("a", "c"), ("b", "a"), ("c", "b"), ("d", "a")] {
        plan.push_str(&format!(
            "[[packet]]\nid = \"{id}\"\ntitle = \"t\"\ndescription = \"d\"\nfiles = [\"{id}\"]\ndepends_on = [\"{dep}\"]\n"
        ));
    }
    check_fails(
        &plan,
        &[
            "plan.toml:7:15: dependency cycle: a -> c -> b -> a",
            "1 problem found",
        ],
    );
}

#[test]
fn bad_id_characters_are_reported() {
    check_fails(
        &with_objective(&PACKET_A.replace("id = \"a\"", "id = \"Fix_Parser\"")),
        &[
            "plan.toml:4:6: packet `Fix_Parser`: id `Fix_Parser` is not a valid packet id",
            "p1-validate-core",
        ],
    );
    let long = "a".repeat(49);
    check_fails(
        &with_objective(&PACKET_A.replace("id = \"a\"", &format!("id = \"{long}\""))),
        &["id is 49 characters long, more than 48"],
    );
}

#[test]
fn invalid_glob_is_reported() {
    check_fails(
        &with_objective(&PACKET_A.replace("\"src/parser.rs\"", "\"src/[parser.rs\"")),
        &["plan.toml:7:10: packet `a`: file pattern `src/[parser.rs` is not a valid glob"],
    );
}

#[test]
fn absolute_path_is_reported_with_the_relative_form() {
    let repo = TestRepo::new();
    let top = repo.git(&["rev-parse", "--show-toplevel"]);
    let abs = format!("{top}/src/parser.rs");
    repo.write(
        "plan.toml",
        &with_objective(
            &PACKET_A.replace("\"src/parser.rs\"", &format!("\"{abs}\", \"/etc/passwd\"")),
        ),
    );
    let before = state(&repo);
    let out = orchestra(&repo.path, &["plan", "check", "plan.toml"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "plan.toml:7:10: packet `a`: file pattern `{abs}` is absolute"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("write it relative to the repository root: `src/parser.rs`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("file pattern `/etc/passwd` is absolute"),
        "{stderr}"
    );
    assert_eq!(state(&repo), before);
}

#[test]
fn dotdot_escape_and_git_dir_are_reported() {
    check_fails(
        &with_objective(&PACKET_A.replace(
            "\"src/parser.rs\"",
            "\"src/../../outside.rs\", \".git/hooks/pre-push\", \"src/../README.md\"",
        )),
        &[
            "plan.toml:7:10: packet `a`: file pattern `src/../../outside.rs` leaves the repository",
            "file pattern `.git/hooks/pre-push` reaches into `.git`",
            "2 problems found",
        ],
    );
}

#[test]
fn empty_files_is_reported() {
    check_fails(
        &with_objective(&PACKET_A.replace("[\"src/parser.rs\"]", "[]")),
        &[
            "plan.toml:7:9: packet `a`: `files` is empty, which would forbid every change",
            "files = [",
        ],
    );
}

#[test]
fn plan_level_problems_are_reported() {
    check_fails(
        "objective = \"\"\nmax_parallel = 0\n",
        &[
            "plan.toml:1:13: the objective is empty",
            "plan.toml:2:16: max_parallel is 0",
            "the plan has no packets",
        ],
    );
}

#[test]
fn not_a_repository_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("plan.toml"), with_objective(PACKET_A)).unwrap();
    let out = orchestra(dir.path(), &["plan", "check", "plan.toml"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("is not inside a git repository"),
        "{stderr}"
    );
    let entries: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(entries.len(), 1, "nothing may be created");
}

#[test]
fn repository_without_commits_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    crate::support::git(dir.path(), &["init", "-q", "-b", "main"]);
    std::fs::write(dir.path().join("plan.toml"), with_objective(PACKET_A)).unwrap();
    let out = orchestra(dir.path(), &["plan", "check", "plan.toml"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("has no commits yet"),
        "{}",
        text(&out)
    );
}

#[test]
fn unknown_base_is_refused() {
    check_fails(
        &format!("objective = \"x\"\nbase = \"no-such-branch\"\n{PACKET_A}"),
        &[
            "plan.toml:2:8: unknown base `no-such-branch`: no commit by that name; use a branch, tag or commit id",
        ],
    );
}

#[test]
fn missing_plan_file_is_refused() {
    let repo = TestRepo::new();
    let out = orchestra(&repo.path, &["plan", "check", "nowhere.toml"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("nowhere.toml"),
        "{}",
        text(&out)
    );
}

// ---- library ----

fn packet(id: &str, files: &[&str], deps: &[&str]) -> Packet {
    Packet {
        id: id.into(),
        title: format!("packet {id}"),
        role: plan::DEFAULT_ROLE.into(),
        description: "d".into(),
        files: files.iter().map(|s| s.to_string()).collect(),
        symbols: vec![],
        depends_on: deps.iter().map(|s| s.to_string()).collect(),
        validation: vec![],
        acceptance: vec![],
        risks: vec![],
        may_be_empty: false,
        risky: false,
        attempts: None,
    }
}

/// Asserts that overlap is symmetric and returns its answer.
fn overlap(a: &[&str], b: &[&str]) -> Option<String> {
    let (pa, pb) = (packet("a", a, &[]), packet("b", b, &[]));
    let ab = plan::overlap(&pa, &pb);
    let ba = plan::overlap(&pb, &pa);
    assert_eq!(
        ab.is_some(),
        ba.is_some(),
        "overlap({a:?}, {b:?}) is not symmetric"
    );
    ab
}

#[test]
fn overlap_literal_and_glob_both_directions() {
    assert_eq!(
        overlap(&["src/parser.rs"], &["src/*.rs"]).as_deref(),
        Some("src/*.rs overlaps src/parser.rs")
    );
    assert_eq!(
        overlap(&["src/parser.rs"], &["src/parser.rs", "docs"]).as_deref(),
        Some("both declare src/parser.rs")
    );
    assert!(overlap(&["tests/parser_basic.rs"], &["tests/parser_*.rs"]).is_some());
    assert_eq!(overlap(&["tests/lexer.rs"], &["tests/parser_*.rs"]), None);
    assert_eq!(overlap(&["src/parser.rs"], &["src/*.txt"]), None);
    assert_eq!(overlap(&["src/parser.rs"], &["tests/*/*.rs"]), None);
    // A literal path also stands for what lies beneath it, should it be a directory.
    assert!(overlap(&["src/parser.rs"], &["src/*/*.rs"]).is_some());
}

#[test]
fn overlap_glob_and_glob() {
    assert_eq!(
        overlap(&["src/**/*.rs"], &["src/*.rs"]).as_deref(),
        Some("src/**/*.rs overlaps src/*.rs")
    );
    assert!(overlap(&["**/*.md"], &["docs/*.md"]).is_some());
    assert_eq!(overlap(&["src/**"], &["tests/**"]), None);
    assert_eq!(overlap(&["tests/parser_*.rs"], &["tests/lexer_*.rs"]), None);
}

#[test]
fn overlap_directory_containment_and_disjoint_directories() {
    assert_eq!(
        overlap(&["src"], &["src/net/http.rs"]).as_deref(),
        Some("src contains src/net/http.rs")
    );
    assert!(overlap(&["src/net/"], &["src/net/*.rs"]).is_some());
    assert!(overlap(&["src/net"], &["src/**/http.rs"]).is_some());
    assert_eq!(overlap(&["src/net"], &["src/io"]), None);
    assert_eq!(overlap(&["src/net/"], &["src/network.rs"]), None);
    assert_eq!(overlap(&["docs/"], &["src/*.rs"]), None);
}

#[test]
fn overlap_never_misses_a_path_both_scopes_contain() {
    let repo = TestRepo::with_files(&[
        ("src/lib.rs", ""),
        ("src/parser.rs", ""),
        ("src/net/http.rs", ""),
        ("src/net/mod.rs", ""),
        ("tests/parser_basic.rs", ""),
        ("docs/guide.md", ""),
        ("README.md", ""),
    ]);
    let files = repo.git(&["ls-files"]);
    let scopes = [
        "src",
        "src/net/",
        "src/*.rs",
        "src/**",
        "src/**/*.rs",
        "src/*/mod.rs",
        "**/*.md",
        "docs",
        "*.md",
        "tests/parser_*.rs",
        "src/{net,io}/*.rs",
        "src/[lp]*.rs",
        "src/parser.rs",
    ];
    for a in scopes {
        for b in scopes {
            let (sa, sb) = (Scope::new(&[a]).unwrap(), Scope::new(&[b]).unwrap());
            if let Some(path) = files.lines().find(|p| sa.matches(p) && sb.matches(p)) {
                assert!(
                    overlap(&[a], &[b]).is_some(),
                    "{a} and {b} both contain {path}, but were called disjoint"
                );
            }
        }
    }
}

#[test]
fn scope_violations_against_a_real_diff() {
    let repo = TestRepo::new();
    repo.write("src/parser.rs", "pub fn parse() -> bool { true }\n");
    repo.write("tests/parser_edge.rs", "#[test] fn e() {}\n");
    repo.write("src/lib.rs", "// touched\n");
    repo.write("docs/notes/a.md", "notes\n");
    repo.git(&["add", "-A"]);
    let changed = repo.git(&["diff", "--cached", "--name-only"]);
    let p = packet("a", &["src/parser.rs", "tests/parser_*.rs", "docs/"], &[]);
    let scope = p.scope().unwrap();
    assert!(scope.matches("src/parser.rs"));
    assert!(scope.matches("docs/notes/a.md"));
    assert!(!scope.matches("tests/sub/parser_x.rs"));
    assert_eq!(
        scope.violations(changed.lines()),
        vec!["src/lib.rs".to_string()]
    );
    let bad = packet("b", &["../x"], &[]);
    assert!(matches!(
        bad.scope(),
        Err(PlanError::Pattern { ref pattern, .. }) if pattern == "../x"
    ));
}

#[test]
fn library_loads_validates_and_schedules_the_same_plan() {
    let repo = TestRepo::new();
    repo.write("plan.toml", DIAMOND);
    let plan = plan::load(&repo.path.join("plan.toml")).unwrap();
    assert_eq!(plan::validate(&plan, &repo.path), Ok(()));
    let schedule = plan::schedule(&plan);
    assert_eq!(
        schedule.waves,
        vec![
            vec!["core".to_string(), "readme".to_string()],
            vec!["parser".to_string()],
            vec!["all-src".to_string()],
            vec!["docs".to_string()],
        ]
    );
    assert_eq!(schedule.serialized.len(), 2);
    // Relations the run-time scheduler uses.
    assert_eq!(plan.packet("docs").map(|p| p.role.as_str()), Some("docs"));
    let dependents: Vec<&str> = plan
        .dependents("core")
        .iter()
        .map(|p| p.id.as_str())
        .collect();
    assert_eq!(dependents, vec!["parser", "all-src"]);
    assert!(plan.depends_on_transitively("docs", "core"));
    assert!(!plan.depends_on_transitively("core", "docs"));
    assert!(plan.has_dependency_path("core", "docs"));
    assert!(!plan.has_dependency_path("parser", "all-src"));
    let pairs: Vec<(usize, usize)> = plan
        .overlaps()
        .iter()
        .map(|o| (o.first, o.second))
        .collect();
    // core/all-src overlap too, but a dependency orders them; parser/all-src and docs/readme
    // must be kept apart by the scheduler.
    assert_eq!(pairs, vec![(0, 2), (1, 2), (3, 4)]);
    // Reordering nothing and scheduling again gives the same answer.
    assert_eq!(plan::schedule(&plan), schedule);
}

#[test]
fn load_names_a_missing_file() {
    let err = plan::load(Path::new("/nonexistent/plan.toml")).unwrap_err();
    assert!(err.to_string().contains("/nonexistent/plan.toml"), "{err}");
}

#[test]
fn plans_built_in_code_validate_without_locations() {
    let plan = Plan::new("x", vec![packet("a", &[], &["a"])]);
    let issues = plan::validate(&plan, Path::new("/repo")).unwrap_err();
    let text: Vec<String> = issues.iter().map(ToString::to_string).collect();
    assert_eq!(issues.len(), 2, "{text:?}");
    assert!(issues.iter().all(|i| i.location.is_none()));
    assert!(
        text[0].starts_with("packet `a`: `files` is empty"),
        "{text:?}"
    );
    assert!(
        text[1].starts_with("packet `a` depends on itself"),
        "{text:?}"
    );
}

#[test]
fn ids_the_engine_uses_for_its_own_names_are_refused() {
    let integration = with_objective(&PACKET_A.replace("id = \"a\"", "id = \"integration\""));
    check_fails(
        &integration,
        &[
            "packet `integration`: id `integration` is reserved",
            "integration branch",
        ],
    );
    let subtask = PACKET_A.replace("id = \"a\"", "id = \"a-s1\"");
    let review = PACKET_A.replace("id = \"a\"", "id = \"a-review\"");
    check_fails(
        &with_objective(&format!("{PACKET_A}{subtask}{review}")),
        &[
            "id `a-s1` is reserved: a subtask of packet `a`",
            "id `a-review` is reserved: the backup of a review of packet `a`",
        ],
    );
}

#[test]
fn a_reader_that_stops_reading_ends_the_output_quietly() {
    let repo = TestRepo::new();
    repo.write("plan.toml", &with_objective(PACKET_A));
    // stdout is a pipe nobody reads: its reading end is closed before the command starts.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out =
        crate::support::orchestra_command(&repo.path, &["plan", "check", "plan.toml", "--json"])
            .stdout(writer)
            .output()
            .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn escape_sequences_in_a_plan_reach_neither_the_report_nor_the_errors_raw() {
    let repo = TestRepo::new();
    // A plan (perhaps a model's) whose objective and file scope would recolour the terminal.
    repo.write(
        "plan.toml",
        &format!(
            "objective = \"Add \\u001b[31mred\\u001b[0m validation\"\n{}",
            PACKET_A.replace("src/parser.rs", "src/pa\\u001b]0;pwned\\u0007rser.rs")
        ),
    );
    let out = orchestra(&repo.path, &["plan", "check", "plan.toml"]);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(
        all.contains(r"objective: Add \033[31mred\033[0m validation"),
        "{all}"
    );
    assert!(
        !all.contains('\u{1b}'),
        "a raw escape reached the report: {all:?}"
    );

    repo.write(
        "plan.toml",
        &format!(
            "objective = \"x\"\n{}",
            PACKET_A.replace("src/parser.rs", "../\\u001b[2Jout.rs")
        ),
    );
    let out = orchestra(&repo.path, &["plan", "check", "plan.toml"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(2), "{all}");
    assert!(
        all.contains(r"\033[2Jout.rs"),
        "the error names the path: {all}"
    );
    assert!(
        !all.contains('\u{1b}'),
        "a raw escape reached the errors: {all:?}"
    );
}

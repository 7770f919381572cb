//! Symbol-aware scheduling: `symbols` in plans, checked at the base commit; packets that share
//! a file but edit symbols apart run together; a plan that lies is caught at merge.

use crate::support::*;

const APP: &str = "def first():\n    return 1\n\n\ndef second():\n    return 2\n\n\nclass Client:\n    def send(self):\n        return 3\n    def recv(self):\n        return 4\n";

fn repo() -> TestRepo {
    TestRepo::with_files(&[
        ("src/app.py", APP),
        ("notes.txt", "notes\n"),
        ("README.md", "readme\n"),
    ])
}

fn packet(id: &str, files: &str, symbols: &str, deps: &str) -> String {
    format!(
        "[[packet]]\nid = \"{id}\"\ntitle = \"Packet {id}\"\ndescription = \"does {id}\"\nfiles = [{files}]\nsymbols = [{symbols}]\ndepends_on = [{deps}]\n\n"
    )
}

#[test]
fn plan_check_points_at_bad_symbols_with_suggestions_and_changes_nothing() {
    let repo = repo();
    let body = format!(
        "objective = \"Symbols\"\n\n{}{}",
        packet(
            "pa",
            "\"src/app.py\", \"notes.txt\"",
            "\"src/app.py:Client.sned\", \"src/app.py\", \"notes.txt:x\"",
            ""
        ),
        packet("pb", "\"src/app.py\"", "\"README.md:first\"", ""),
    );
    let plan = repo.write_plan("plan.toml", &body);
    let before = refs(&repo.path);
    let out = orchestra(&repo.path, &["plan", "check", plan.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
    assert!(
        lines[0].contains(
            ":8:12: packet `pa`: symbol `src/app.py:Client.sned` is not defined in src/app.py"
        ) && lines[0].contains("did you mean Client.send"),
        "{err}"
    );
    assert!(
        lines[1]
            .contains(":8:38: packet `pa`: symbol `src/app.py` is not of the form `path:Symbol`"),
        "{err}"
    );
    assert!(
        lines[2].contains(":8:52:") && lines[2].contains("which the symbol graph does not parse"),
        "{err}"
    );
    assert!(
        lines[3].contains(":16:12: packet `pb`: symbol `README.md:first` is in README.md, which is not in the packet's files"),
        "{err}"
    );
    assert_eq!(lines.len(), 5, "{err}");
    assert!(
        lines[4].contains("4 problems found; nothing was changed"),
        "{err}"
    );
    assert_eq!(refs(&repo.path), before);
}

#[test]
fn plan_check_lets_disjoint_symbols_share_a_file_and_keeps_adjacent_ones_apart() {
    let repo = repo();
    let body = format!(
        "objective = \"Symbols\"\n\n{}{}{}{}",
        packet("pa", "\"src/app.py\"", "\"src/app.py:first\"", ""),
        packet("pb", "\"src/app.py\"", "\"src/app.py:second\"", ""),
        // `Client.send` ends on the line before `Client.recv` starts: no margin, serialised.
        packet(
            "pc",
            "\"src/app.py\"",
            "\"src/app.py:Client::send\"",
            "\"pa\""
        ),
        packet(
            "pd",
            "\"src/app.py\"",
            "\"src/app.py:Client.recv\"",
            "\"pa\""
        ),
    );
    let plan = repo.write_plan("plan.toml", &body);
    let out = orchestra(&repo.path, &["plan", "check", plan.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("  1: pa, pb\n"), "{s}");
    assert!(
        s.contains("pc before pd: both declare src/app.py"),
        "adjacent symbols must stay serialised: {s}"
    );
    assert!(
        s.contains(
            "parallel: pa and pb share src/app.py but edit disjoint symbols: run in parallel"
        ),
        "{s}"
    );
    assert!(s.contains("parallel: pb and pc share src/app.py"), "{s}");
    // A packet without symbols for the shared file keeps the file-level rule.
    let body = format!(
        "objective = \"Symbols\"\n\n{}{}",
        packet("pa", "\"src/app.py\"", "\"src/app.py:first\"", ""),
        packet("pb", "\"src/app.py\"", "", ""),
    );
    let plan = repo.write_plan("plan.toml", &body);
    let out = orchestra(&repo.path, &["plan", "check", plan.to_str().unwrap()]);
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("pa before pb: both declare src/app.py"), "{s}");
}

/// Reads `start end` nanosecond pairs written by the timing worker, keyed by packet.
#[test]
fn packets_editing_disjoint_symbols_of_one_file_run_together_and_both_land() {
    let repo = repo();
    repo.scratch_writable();
    let body = format!(
        "objective = \"Edit two functions\"\nmax_parallel = 4\n\n{}{}",
        packet("pa", "\"src/app.py\"", "\"src/app.py:first\"", ""),
        packet("pb", "\"src/app.py\"", "\"src/app.py:second\"", ""),
    );
    let plan = repo.write_plan("plan.toml", &body);
    let log = repo.scratch().join("times.log");
    let worker = format!(
        r#"s=$(date +%s%N); if [ "$ORCHESTRA_PACKET" = pa ]; then sed -i 's/return 1$/return 10/' src/app.py; else sed -i 's/return 2$/return 20/' src/app.py; fi; sleep 0.6; e=$(date +%s%N); echo "$ORCHESTRA_PACKET $s $e" >> {}"#,
        log.display()
    );
    let out = repo.run_plan(&plan, &worker, &["--merge"]);
    assert!(out.status.success(), "{}", text(&out));
    let all = text(&out);
    assert!(
        all.contains("pa and pb share src/app.py but edit disjoint symbols: run in parallel"),
        "{all}"
    );
    assert!(!all.contains("scope finding"), "{all}");
    let times = intervals(&log);
    let get = |id: &str| times.iter().find(|t| t.0 == id).unwrap().clone();
    let (a, b) = (get("pa"), get("pb"));
    assert!(
        a.1 < b.2 && b.1 < a.2,
        "symbol-disjoint packets did not run in parallel: {times:?}"
    );
    let merged = repo.git(&["show", "main:src/app.py"]);
    assert!(
        merged.contains("return 10") && merged.contains("return 20"),
        "{merged}"
    );
}

#[test]
fn a_plan_that_lies_about_its_symbols_is_reported_and_its_conflict_loses_nothing() {
    let repo = repo();
    let body = format!(
        "objective = \"Edit two functions\"\nmax_parallel = 4\n\n{}{}",
        packet("pa", "\"src/app.py\"", "\"src/app.py:first\"", ""),
        // pb claims `second` but edits `first`, the line pa edits.
        packet("pb", "\"src/app.py\"", "\"src/app.py:second\"", ""),
    );
    let plan = repo.write_plan("plan.toml", &body);
    let worker = r#"if [ -n "$ORCHESTRA_FIXES_FILE" ]; then echo cannot resolve; exit 3; fi; if [ "$ORCHESTRA_PACKET" = pa ]; then sed -i 's/return 1$/return 10/' src/app.py; else sed -i 's/return 1$/return 11/' src/app.py; fi; sleep 0.3"#;
    let out = repo.run_plan(&plan, worker, &["--merge"]);
    let all = text(&out);
    // Both packets ran; the liar is reported, its commit kept.
    assert!(
        all.contains(
            "[pb] scope finding: changed src/app.py lines 2 outside its declared symbols (src/app.py:second); commit kept"
        ),
        "{all}"
    );
    assert!(!all.contains("[pa] scope finding"), "{all}");
    // The merge finds the conflict and sends one packet back; the other lands.
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("CONFLICTS in src/app.py"), "{all}");
    let main = repo.git(&["show", "main:src/app.py"]);
    let landed = if main.contains("return 10") {
        "pa"
    } else {
        "pb"
    };
    let back = if landed == "pa" { "pb" } else { "pa" };
    assert!(all.contains(&format!("sent back: {back}")), "{all}");
    // Nothing is lost: the sent-back packet's work is still on its branch.
    let run = run_id(&repo.path);
    let kept = repo.git(&["show", &format!("orchestra/{run}/{back}:src/app.py")]);
    let expect = if back == "pb" {
        "return 11"
    } else {
        "return 10"
    };
    assert!(kept.contains(expect), "{kept}");
    // `status` keeps both explanations after the run.
    let status = String::from_utf8_lossy(&orchestra(&repo.path, &["status"]).stdout).to_string();
    assert!(
        status.contains("parallel  pa and pb share src/app.py but edit disjoint symbols"),
        "{status}"
    );
    assert!(
        status.contains("finding   pb changed src/app.py lines 2 outside its declared symbols (src/app.py:second)"),
        "{status}"
    );
}

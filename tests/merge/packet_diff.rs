//! `git orchestra diff`: a packet's diff is its own change, also after its conflicts were
//! resolved by merging the integration branch into it.

use crate::support::*;

#[test]
fn diff_after_a_conflict_resolution_shows_only_the_packets_own_change() {
    let repo = TestRepo::new();
    let body = format!(
        "objective = \"Conflict\"\n\n{}{}",
        packet("pa", "\"README.md\", \"only-pa.txt\"", "", "\"true\""),
        packet("pb", "\"README.md\", \"only-pb.txt\"", "", "\"true\""),
    );
    let plan = repo.write_plan("plan.toml", &body);
    // Both packets write README.md; in a conflict round the worker keeps both sides.
    let worker = r#"if [ -n "$ORCHESTRA_FIXES_FILE" ]; then sed -i -e '/^<<<<<<< /d' -e '/^=======$/d' -e '/^>>>>>>> /d' README.md; else echo "$ORCHESTRA_PACKET was here" > README.md; echo "$ORCHESTRA_PACKET" > "only-$ORCHESTRA_PACKET.txt"; fi"#;
    let out = repo.run_plan(&plan, worker, &["--merge"]);
    assert!(out.status.success(), "{}", text(&out));
    let all = text(&out);
    // Which packet conflicted depends on the order they were merged in.
    let (first, second) = if all.contains("[pb] CONFLICTS") {
        ("pa", "pb")
    } else {
        ("pb", "pa")
    };
    assert!(all.contains(&format!("[{second}] CONFLICTS")), "{all}");
    let run = run_id(&repo.path);
    let out = orchestra(&repo.path, &["diff", &run, second]);
    assert!(out.status.success(), "{}", text(&out));
    let diff = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(diff.contains(&format!("only-{second}.txt")), "{diff}");
    assert!(
        !diff.contains(&format!("only-{first}.txt")),
        "the other packet's file counted as this packet's change:\n{diff}"
    );
    assert!(diff.contains(&format!("+{second} was here")), "{diff}");
    assert!(
        !diff.contains(&format!("+{first} was here")),
        "the other packet's line counted as this packet's change:\n{diff}"
    );
    // The packet that merged cleanly keeps its plain diff.
    let out = orchestra(&repo.path, &["diff", &run, first]);
    let diff = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(diff.contains(&format!("only-{first}.txt")), "{diff}");
    assert!(!diff.contains(&format!("only-{second}.txt")), "{diff}");
}

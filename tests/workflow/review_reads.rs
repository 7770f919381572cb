//! A packet's deterministic checks and its model review read the reviewed range once: the
//! diff, sizes, patch and history git reads for the checks serve the reviewer too.

use serde_json::{Value, json};

use git_orchestra::demo;

use crate::support::{git_by_subcommand, hermetic, orchestra_with_env, text};

/// Runs `start` of a plan of `ids` (each packet writes `<id>.txt`) with every packet reviewed
/// by the scripted model (and merged at the end with `merge`), through a `git` on `PATH` that
/// logs its starts; returns the git command lines the run started.
fn git_starts_reviewing(ids: &[&str], merge: bool) -> Vec<String> {
    hermetic();
    let tmp = tempfile::tempdir().unwrap();
    let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
    let mut plan = String::from("```toml\n");
    for id in ids {
        plan.push_str(&format!(
            "[[packet]]\nid = \"{id}\"\ntitle = \"Write {id}\"\ndescription = \"d\"\nfiles = [\"{id}.txt\"]\n\n"
        ));
    }
    plan.push_str("```");
    let mut scripts: Vec<Value> = ids
        .iter()
        .map(|id| {
            json!({"name": id, "match": ["# Coder", format!("# Write {id}")], "replies": [
                {"calls": [{"name": "write_file", "args": {"path": format!("{id}.txt"), "content": format!("{id}\n")}}]},
                {"calls": [{"name": "complete", "args": {"summary": format!("wrote {id}")}}]}]})
        })
        .collect();
    scripts.extend([
        json!({"name": "planner", "match": ["# Planner"], "replies": [{"text": plan}]}),
        json!({"name": "packet-review", "match": ["# Reviewer", "# Review this change"], "replies": [
            {"calls": [{"name": "complete", "args": {"summary": "{\"verdict\": \"approve\", \"findings\": []}"}}]}]}),
        json!({"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]}),
        json!({"name": "orchestrator", "match": ["# Orchestrator"], "replies": [{"text": "{}"}]}),
    ]);
    let model =
        demo::MockModel::start(demo::parse_scripts(&Value::Array(scripts).to_string()).unwrap())
            .unwrap();
    let real = std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .map(|dir| std::path::Path::new(dir).join("git"))
        .find(|p| p.is_file())
        .unwrap();
    let bin = tmp.path().join("counting-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = tmp.path().join("git-starts.log");
    let wrapper = bin.join("git");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
            log.display(),
            real.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let root = tmp.path().join("worktrees");
    let mut args = vec![
        "start",
        "--yes",
        "--no-clarify",
        "--worktree-root",
        root.to_str().unwrap(),
    ];
    if merge {
        args.push("--merge");
    }
    args.push("Write notes");
    let out = orchestra_with_env(
        &repo,
        &args,
        &[
            ("ORCHESTRA_PROVIDER", "openai-compatible"),
            ("ORCHESTRA_BASE_URL", model.url.as_str()),
            ("ORCHESTRA_MODEL", "scripted"),
            ("PATH", &path),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains(&format!("all {} packets succeeded", ids.len())),
        "{report}"
    );
    std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_model_review_reads_the_range_the_deterministic_checks_read() {
    let lines = git_starts_reviewing(&["p1", "p2"], false);
    // Each packet's range is read once by the gates: one raw diff, one batch resolving the
    // tip's tree and the base and sizing the blobs, one history — whose one commit's patch is
    // the range's zero-context patch, so none is read apart (the reviewer's own prompt reads
    // its diff apart).
    let reads = |what: &str| lines.iter().filter(|l| l.contains(what)).count();
    let counts = git_by_subcommand(&lines);
    assert_eq!(reads("diff --raw"), 2, "raw diffs: {counts:?}");
    assert_eq!(reads("cat-file --batch-check"), 2, "batches: {counts:?}");
    assert_eq!(reads("--text -U0 "), 0, "patches: {counts:?}");
    assert_eq!(reads("log --reverse"), 2, "histories: {counts:?}");
}

/// Git processes `start` may start per packet when a model reviewer approves every packet,
/// beyond the run's fixed part. Measured at 18 when the deterministic checks' approval was
/// stored as notes (on the commit and its tree) only to be replaced by the model review's
/// verdict moments later; at 16 before a reviewer that called no tool able to change a file
/// stopped saving the packet's worktree (four processes to find it unchanged); at 12 before
/// the commit of an agent's work, made on the packet's start, listed the change from what it
/// staged instead of a diff from the start; at 11 before the run's report took each packet's
/// patch from the reviewer's reading. A new git call per reviewed packet must be worth its
/// place.
const REVIEWED_GIT_STARTS_PER_PACKET: usize = 10;

/// Git processes `start --merge` may start per packet (reviewed as above, then integrated and
/// its worktree released: parked for reuse or removed), beyond the run's fixed part. Measured
/// at 24 before the removal of an integrated worktree took one snapshot of its files instead
/// of two (one to save them, one to prove them saved) and a backup ref's plain name needed no
/// `git check-ref-format`; at 21 before the approval read the queued packets' trees and
/// verdict notes together (three processes a merge) instead of two processes a packet.
const MERGED_GIT_STARTS_PER_PACKET: usize = 19;

/// Returns the git processes a packet of `start` (with `merge`) started, from runs of one and
/// of four packets, with the four packets' command lines.
fn per_packet_git_starts(merge: bool) -> (usize, Vec<String>) {
    let one = git_starts_reviewing(&["p1"], merge);
    let four = git_starts_reviewing(&["p1", "p2", "p3", "p4"], merge);
    eprintln!(
        "git starts: 1 packet {} {:?}\n4 packets {} {:?}",
        one.len(),
        git_by_subcommand(&one),
        four.len(),
        git_by_subcommand(&four)
    );
    ((four.len() - one.len()).div_ceil(3), four)
}

#[test]
fn a_reviewed_packet_starts_a_bounded_number_of_git_processes() {
    let (per_packet, four) = per_packet_git_starts(false);
    // One verdict per packet, as notes on its commit and on its tree.
    let notes = four
        .iter()
        .filter(|l| l.contains(" notes ") && l.contains(" add "))
        .count();
    assert_eq!(notes, 8, "notes: {:?}", git_by_subcommand(&four));
    // Each packet's patch is read once, by its reviewer; the run's report keeps that reading.
    let patches = four
        .iter()
        .filter(|l| l.contains("diff --no-color"))
        .count();
    assert_eq!(patches, 4, "patches: {:?}", git_by_subcommand(&four));
    assert!(
        per_packet <= REVIEWED_GIT_STARTS_PER_PACKET,
        "a reviewed packet started {per_packet} git processes; the budget is \
         {REVIEWED_GIT_STARTS_PER_PACKET}; 4 packets started {:?}",
        git_by_subcommand(&four)
    );
}

#[test]
fn a_reviewed_and_merged_packet_starts_a_bounded_number_of_git_processes() {
    let (per_packet, four) = per_packet_git_starts(true);
    // A released worktree's files are snapshot once (removed or parked, never twice).
    let mut snapshots = std::collections::BTreeMap::new();
    for line in four.iter().filter(|l| l.ends_with(" write-tree")) {
        let dir = line.split(' ').nth(1).unwrap_or_default();
        *snapshots.entry(dir).or_insert(0) += 1;
    }
    assert!(
        snapshots.values().all(|n| *n == 1),
        "snapshots: {snapshots:?}"
    );
    // A removed worktree's leftovers are found by two listings: its ignored files, then its
    // untracked files and index entries (nested repositories, gitlinks) together.
    let mut listings = std::collections::BTreeMap::new();
    for line in four
        .iter()
        .filter(|l| l.contains(" ls-files --others") || l.contains(" ls-files --stage"))
    {
        let dir = line.split(' ').nth(1).unwrap_or_default();
        *listings.entry(dir).or_insert(0) += 1;
    }
    assert!(listings.values().all(|n| *n <= 2), "listings: {listings:?}");
    // The approval reads the packets' verdicts together, not one `notes show` each.
    let shown = four
        .iter()
        .filter(|l| l.contains(" notes ") && l.contains(" show "))
        .count();
    assert_eq!(shown, 0, "notes: {:?}", git_by_subcommand(&four));
    assert!(
        per_packet <= MERGED_GIT_STARTS_PER_PACKET,
        "a reviewed and merged packet started {per_packet} git processes; the budget is \
         {MERGED_GIT_STARTS_PER_PACKET}; 4 packets started {:?}",
        git_by_subcommand(&four)
    );
}

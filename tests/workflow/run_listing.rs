//! Every run stays listed with what it is doing: a `start` run whose process was killed shows
//! as interrupted in the phase it was in, a cancelled run without packets stays listed, and
//! `status --all` lists engine runs and `start` runs together.

use git_orchestra::demo;

use crate::support::{killed_while_clarifying, orchestra, text};

#[test]
fn a_start_run_killed_while_clarifying_shows_as_interrupted() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
    let (_model, id) = killed_while_clarifying(&repo);
    let shown = orchestra(&repo, &["status"]);
    let out = String::from_utf8_lossy(&shown.stdout);
    assert!(
        out.contains("interrupted while clarifying"),
        "{}",
        text(&shown)
    );
    assert!(out.contains(&id), "{}", text(&shown));
    let all = orchestra(&repo, &["status", "--all", "--json"]);
    assert!(all.status.success(), "{}", text(&all));
    let v: serde_json::Value = serde_json::from_slice(&all.stdout).unwrap();
    let run = &v["runs"][0];
    assert_eq!(run["id"], id.as_str(), "{v}");
    assert_eq!(run["state"], "interrupted while clarifying", "{v}");
    assert_eq!(run["driven"], false, "{v}");
    assert_eq!(run["next"], format!("git orchestra resume {id}"), "{v}");
}

#[test]
fn a_cancelled_start_run_without_packets_stays_listed() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
    let (_model, id) = killed_while_clarifying(&repo);
    let cancelled = orchestra(&repo, &["cancel", &id]);
    assert!(cancelled.status.success(), "{}", text(&cancelled));
    let shown = orchestra(&repo, &["status"]);
    let out = String::from_utf8_lossy(&shown.stdout);
    assert!(
        out.contains(&id) && out.contains("cancelled"),
        "{}",
        text(&shown)
    );
    let all = orchestra(&repo, &["status", "--all"]);
    let out = String::from_utf8_lossy(&all.stdout);
    let line = out.lines().find(|l| l.contains(&id)).unwrap_or_default();
    assert!(line.contains("cancelled"), "{}", text(&all));
}

#[test]
fn status_all_lists_engine_runs_and_start_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
    let plan = tmp.path().join("plan.toml");
    std::fs::write(
        &plan,
        "objective = \"One file\"\n\n[[packet]]\nid = \"p1\"\ntitle = \"One\"\ndescription = \"d\"\nfiles = [\"p1.txt\"]\nvalidation = [\"test -f p1.txt\"]\n",
    )
    .unwrap();
    let ran = orchestra(
        &repo,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            "echo done > \"$ORCHESTRA_PACKET.txt\"",
        ],
    );
    assert!(ran.status.success(), "{}", text(&ran));
    let (_model, id) = killed_while_clarifying(&repo);
    let all = orchestra(&repo, &["status", "--all"]);
    assert!(all.status.success(), "{}", text(&all));
    let out = String::from_utf8_lossy(&all.stdout);
    let start = out.lines().find(|l| l.contains(&id)).unwrap_or_default();
    assert!(
        start.contains("start") && start.contains("interrupted while clarifying"),
        "{}",
        text(&all)
    );
    let engine = out
        .lines()
        .find(|l| l.contains(" run ") && !l.contains(&id))
        .unwrap_or_default();
    assert!(engine.contains("completed"), "{}", text(&all));
    let json = orchestra(&repo, &["status", "--all", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let kinds: Vec<&str> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["start", "run"], "{v}");
}

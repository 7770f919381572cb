//! A packet's own validation commands run in one confined process, each keeping its own
//! outcome, log and `validation_finished` event.

use crate::support::*;

#[test]
fn a_packets_validation_commands_share_one_sandbox_launch_and_keep_their_own_reports() {
    let repo = TestRepo::new();
    let launches = repo.scratch().join("launches.log");
    repo.user_config(&format!(
        "[sandbox]\nwritable = [\"{}\"]\n\n[run]\nfix_rounds = 0\nretries = 0\n",
        repo.scratch().display()
    ));
    // Each command logs the process group it runs in: a sandbox launch starts a group of its
    // own, so one group means one launch.
    let logged = |label: &str, tail: &str| {
        format!(
            "\"echo \\\"$(cut -d' ' -f5 /proc/$$/stat) {label}\\\" >> '{}'; {tail}\"",
            launches.display()
        )
    };
    let validation = [
        logged("first", "echo first says hello"),
        logged("second", "echo second breaks >&2; exit 3"),
        logged("third", "echo never"),
    ]
    .join(", ");
    let plan = repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"Batch\"\n\n{}",
            packet("p1", "\"out-p1.txt\"", "", &validation)
        ),
    );
    let out = repo.run_plan(&plan, r#"echo x > "out-$ORCHESTRA_PACKET.txt""#, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));

    let v = status_json(&repo.path);
    assert_eq!(v["packets"][0]["state"], "failed", "{v:#}");
    let reason = v["packets"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("validation `echo"), "{reason}");
    assert!(reason.contains("exit 3"), "{reason}");
    assert!(reason.contains("second breaks"), "{reason}");
    assert!(reason.contains("validate-2.log"), "{reason}");
    assert!(!reason.contains("first says hello"), "{reason}");

    // One process group for both commands that ran; the third never ran.
    let lines = std::fs::read_to_string(&launches).unwrap();
    let lines: Vec<(&str, &str)> = lines.lines().map(|l| l.split_once(' ').unwrap()).collect();
    let labels: Vec<&str> = lines.iter().map(|(_, l)| *l).collect();
    assert_eq!(labels, ["first", "second"]);
    assert_eq!(lines[0].0, lines[1].0, "two sandbox launches: {lines:?}");

    // Each command's own log holds its own output only.
    let run = run_id(&repo.path);
    let dir = git_orchestra::exec::RunDir::new(&repo.path.join(".git"), &run).packet("p1");
    let first = std::fs::read_to_string(dir.join("validate-1.log")).unwrap();
    let second = std::fs::read_to_string(dir.join("validate-2.log")).unwrap();
    assert_eq!(first.trim(), "first says hello", "{first}");
    assert_eq!(second.trim(), "second breaks", "{second}");
    assert!(!dir.join("validate-3.log").exists());

    // One event per command that ran, with its own exit code and output.
    let store = git_orchestra::store::Store::open(&repo.path.join(".git")).unwrap();
    let events = serde_json::to_value(store.events(&run, 0).unwrap()).unwrap();
    let finished: Vec<&serde_json::Value> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "validation_finished")
        .collect();
    assert_eq!(finished.len(), 2, "{finished:#?}");
    assert_eq!(finished[0]["exit_code"], 0);
    assert!(
        finished[0]["tail"]
            .as_str()
            .unwrap()
            .contains("first says hello")
    );
    assert_eq!(finished[1]["exit_code"], 3);
    assert_eq!(finished[1]["timed_out"], false);
    let tail = finished[1]["tail"].as_str().unwrap();
    assert!(
        tail.contains("second breaks") && !tail.contains("first says"),
        "{tail}"
    );
}

/// A packet with a worker command costs two sandbox launches, whatever its number of
/// validation commands: one for the worker, one for the whole validation list. They stay two:
/// the engine commits and checks the packet's scope between them, outside any sandbox, and a
/// launch shared across that step would keep whatever the worker left running alive while the
/// commit is made and validated.
#[test]
fn a_packet_costs_one_sandbox_launch_for_its_worker_and_one_for_its_validation() {
    let repo = TestRepo::new();
    repo.scratch_writable();
    let launches = repo.scratch().join("launches.log");
    let log = |label: &str| {
        format!(
            "echo \"$(cut -d' ' -f5 /proc/$$/stat) $ORCHESTRA_PACKET {label}\" >> '{}'",
            launches.display()
        )
    };
    let n = 3;
    let mut body = String::from("objective = \"Count launches\"\n\n");
    for i in 0..n {
        let validation = ["first", "second", "third"]
            .map(|l| format!("\"{}\"", log(l).replace('"', "\\\"")))
            .join(", ");
        body.push_str(&packet(
            &format!("p{i}"),
            &format!("\"out-p{i}.txt\""),
            "",
            &validation,
        ));
    }
    let plan = repo.write_plan("plan.toml", &body);
    let worker = format!("{}; echo x > \"out-$ORCHESTRA_PACKET.txt\"", log("worker"));
    let out = repo.run_plan(&plan, &worker, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let text = std::fs::read_to_string(&launches).unwrap();
    let mut groups: std::collections::BTreeMap<&str, std::collections::BTreeSet<&str>> =
        Default::default();
    for line in text.lines() {
        let mut words = line.split(' ');
        let (group, packet) = (words.next().unwrap(), words.next().unwrap());
        groups.entry(packet).or_default().insert(group);
    }
    assert_eq!(groups.len(), n, "{text}");
    for (packet, launched) in &groups {
        assert_eq!(
            launched.len(),
            2,
            "{packet}: {} sandbox launches: {text}",
            launched.len()
        );
    }
    assert_eq!(text.lines().count(), n * 4, "{text}");
}

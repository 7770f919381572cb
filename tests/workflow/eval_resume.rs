//! `git orchestra eval resume` after kill -9 in the middle of an attempt: the ended attempts
//! are kept, the interrupted one is redone from a fresh repository, nothing is counted twice;
//! `eval report` prints what the journal holds.

use std::time::{Duration, Instant};

use super::eval_fixtures::history;
use crate::support::{orchestra, orchestra_command, text};

#[test]
fn an_eval_killed_mid_attempt_resumes_without_losing_or_repeating_an_attempt() {
    let (repo, commits) = history();
    repo.scratch_writable();
    let scratch = repo.scratch();
    let (log, started, go) = (
        scratch.join("log"),
        scratch.join("started"),
        scratch.join("go"),
    );
    // Solves every task; the subtraction task hangs until `go` exists (its first attempt is
    // the one killed). Every invocation is logged with its task.
    let worker = format!(
        "solver=cmd:task=$(grep -o 'Add [a-z]*' \"$ORCHESTRA_PACKET_FILE\" | head -n 1); echo \"$task\" >> {log}; \
         case \"$task\" in \
         *multiplication) echo 'mul() {{ echo $(($1 * $2)); }}' >> src/calc.sh;; \
         *subtraction) if [ ! -e {go} ]; then touch {started}; sleep 60; fi; echo 'sub() {{ echo $(($1 - $2)); }}' >> src/calc.sh;; \
         *negation) echo 'neg() {{ echo $((0 - $1)); }}' >> src/calc.sh;; \
         esac",
        log = log.display(),
        go = go.display(),
        started = started.display()
    );
    let args = [
        "eval",
        "run",
        "--from-history",
        "HEAD~3..HEAD",
        "--test",
        "sh run_tests.sh",
        "--arm",
        &worker,
    ];
    let mut child = orchestra_command(&repo.path, &args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !started.exists() {
        assert!(
            Instant::now() < deadline,
            "the subtraction attempt never started"
        );
        assert!(child.try_wait().unwrap().is_none(), "the eval ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    // While it runs, `eval report` shows its progress with a bar.
    let report = orchestra(&repo.path, &["eval", "report"]);
    assert!(report.status.success(), "{}", text(&report));
    assert!(
        String::from_utf8_lossy(&report.stdout)
            .contains("unfinished: 1 of 3 attempts ended [######--------------]"),
        "{}",
        text(&report)
    );
    child.kill().unwrap();
    child.wait().unwrap();
    std::fs::write(&go, "").unwrap();

    let report = orchestra(&repo.path, &["eval", "report"]);
    assert!(report.status.success(), "{}", text(&report));
    assert!(
        String::from_utf8_lossy(&report.stdout).contains("unfinished: 1 of 3 attempts ended"),
        "{}",
        text(&report)
    );

    let out = orchestra(&repo.path, &["eval", "resume", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["arms"][0]["attempts"], 3, "{json}");
    assert_eq!(json["arms"][0]["resolved"], 3, "{json}");
    let mut tasks: Vec<String> = json["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["task"].as_str().unwrap().to_string())
        .collect();
    tasks.sort();
    let mut expected = commits.clone();
    expected.sort();
    assert_eq!(tasks, expected, "each task once: {json}");
    // The ended attempt ran once, the killed one twice (redone), the last one once.
    let calls = std::fs::read_to_string(&log).unwrap();
    let count = |task: &str| calls.lines().filter(|l| l.ends_with(task)).count();
    assert_eq!(
        (
            count("multiplication"),
            count("subtraction"),
            count("negation")
        ),
        (1, 2, 1),
        "{calls}"
    );

    let report = orchestra(&repo.path, &["eval", "report", "--json"]);
    assert!(report.status.success(), "{}", text(&report));
    let stored: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(stored["finished"], true);
    assert_eq!(stored["arms"][0]["resolved"], 3);
    assert_eq!(stored["attempts"].as_array().unwrap().len(), 3);
    // Resuming a finished eval works nothing again.
    let again = orchestra(&repo.path, &["eval", "resume", "--json"]);
    assert!(again.status.success(), "{}", text(&again));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), calls);
}

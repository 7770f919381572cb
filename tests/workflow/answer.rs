//! `git orchestra answer` without a run named: the newest run with an open question from the
//! packet gets the answer, whatever kind of run it is.

use git_orchestra::demo;
use git_orchestra::orchestrator::{StartJournal, WorkflowEvent};
use git_orchestra::store::{Event, NewPacket, NewRun, Store};

use crate::support::{hermetic, orchestra, text};

/// Regression: `answer` searched the `start` runs' journals first, so an older `start` run
/// whose question from the same packet was answered long ago took the answer meant for the
/// newest run's waiting agent (and could be answered again and again).
#[test]
fn answer_without_a_run_reaches_the_newest_run_with_an_open_question() {
    hermetic();
    let tmp = tempfile::tempdir().unwrap();
    let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
    let common = repo.join(".git");
    // An older `start` run whose agent of p1 asked and was answered.
    let old = StartJournal::open(&common, "run-old").unwrap();
    old.append(&WorkflowEvent::Asked {
        packet: "p1".into(),
        question: "Old question?".into(),
    })
    .unwrap();
    old.append(&WorkflowEvent::Answered {
        packet: "p1".into(),
        text: "long ago".into(),
    })
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    // A newer engine run whose agent of p1 waits on its question.
    let mut store = Store::open(&common).unwrap();
    store
        .create_run(&NewRun {
            id: "run-new".into(),
            objective: "newer".into(),
            base: "HEAD".into(),
            plan_toml: String::new(),
            plan_path: "plan.toml".into(),
            worker_cmd: None,
            max_parallel: 1,
            timeout_secs: 60,
            worktree_root: tmp.path().join("wt").display().to_string(),
            packets: vec![NewPacket {
                id: "p1".into(),
                title: "P1".into(),
                role: "coder".into(),
                branch: "orchestra/run-new/p1".into(),
                worktree: tmp.path().join("wt/p1").display().to_string(),
            }],
        })
        .unwrap();
    store
        .record(
            "run-new",
            &Event::QuestionAsked {
                packet: "p1".into(),
                question: "New question?".into(),
            },
        )
        .unwrap();

    let out = orchestra(&repo, &["answer", "p1", "the new answer"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("New question?"), "{}", text(&out));
    assert!(text(&out).contains("run-new"), "{}", text(&out));
    assert_eq!(store.open_question("run-new", "p1").unwrap(), None);
    let answers = old
        .entries()
        .unwrap()
        .into_iter()
        .filter(|e| matches!(e.event, WorkflowEvent::Answered { .. }))
        .count();
    assert_eq!(answers, 1, "the old run got another answer");

    // Nothing waits any more: a second answer is refused, not sent to an answered question.
    let out = orchestra(&repo, &["answer", "p1", "again"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("no agent of packet `p1`"),
        "{}",
        text(&out)
    );
}

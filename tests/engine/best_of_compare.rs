//! Best-of-N with a reviewer: when two or more candidates pass, the packet's reviewer compares
//! their diffs side by side in one call and its choice wins, with its reason and cost in the
//! journal and `status --json`; an unusable answer leaves the choice to the smaller change.

use crate::support::*;
use git_orchestra::demo::{MockModel, parse_scripts};
use git_orchestra::store::{Event, Store};

/// Candidate 1 writes three lines, candidate 2 one: both pass.
const WORKER: &str = r#"if [ "$ORCHESTRA_CANDIDATE" = 1 ]; then printf 'a\nb\nc\n' > out.txt; else echo a > out.txt; fi"#;

/// Starts a scripted reviewer that answers a comparison with `compared` and approves the
/// packet's review.
fn reviewer(compared: &str) -> MockModel {
    let scripts = serde_json::json!([
        {"name": "compare", "match": ["# Candidate comparison"], "replies": [{"text": compared}]},
        {"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]}
    ]);
    MockModel::start(parse_scripts(&scripts.to_string()).unwrap()).unwrap()
}

/// Runs a two-candidate packet with the reviewer at `model`; returns the run's output.
fn run_best_of_two(repo: &TestRepo, model: &MockModel) -> std::process::Output {
    let body = format!(
        "objective = \"The reviewer compares\"\n\n{}",
        packet("p1", "\"out.txt\"", "", "\"test -s out.txt\"")
    );
    let plan = repo.write_plan("plan.toml", &body);
    let root = repo.scratch().join("wt");
    orchestra_with_env(
        &repo.path,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            WORKER,
            "--worktree-root",
            root.to_str().unwrap(),
            "--best-of",
            "2",
        ],
        &[
            ("ORCHESTRA_PROVIDER", "openai-compatible"),
            ("ORCHESTRA_BASE_URL", model.url.as_str()),
            ("ORCHESTRA_MODEL", "scripted"),
        ],
    )
}

/// Returns the run's `CandidateChosen` event: candidate, reasons, reviewer and tokens.
fn chosen(repo: &TestRepo) -> (u32, String, Option<String>, u64) {
    let run = run_id(&repo.path);
    let store = Store::open(&repo.path.join(".git")).unwrap();
    let found: Vec<_> = store
        .events(&run, 0)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.event {
            Event::CandidateChosen {
                candidate,
                reasons,
                reviewer,
                review_tokens,
                ..
            } => Some((candidate, reasons, reviewer, review_tokens)),
            _ => None,
        })
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found.into_iter().next().unwrap()
}

#[test]
fn the_reviewer_comparing_two_passing_candidates_picks_the_larger_one_and_it_wins() {
    let repo = TestRepo::new();
    let model = reviewer(
        "{\"choice\": \"c1\", \"reason\": \"c1 covers all three letters the task asks for\"}",
    );
    let out = run_best_of_two(&repo, &model);
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    // The larger change won: the reviewer decided, not the size.
    assert_eq!(
        repo.git(&["show", &format!("orchestra/{run}/p1:out.txt")]),
        "a\nb\nc"
    );
    let (candidate, reasons, reviewer, tokens) = chosen(&repo);
    assert_eq!(candidate, 1);
    assert!(reasons.contains("the reviewer chose it"), "{reasons}");
    assert!(
        reasons.contains("c1 covers all three letters the task asks for"),
        "{reasons}"
    );
    assert!(reviewer.is_some_and(|r| r.starts_with("reviewer:")));
    assert!(tokens > 0, "the comparison's tokens are recorded");

    let v = status_json(&repo.path);
    let shown = &v["candidates"][0];
    assert_eq!(shown["winner"], 1, "{v:#}");
    assert!(
        shown["reasons"]
            .as_str()
            .unwrap()
            .contains("c1 covers all three letters"),
        "{v:#}"
    );
    // The comparison is one of the reviewer's model calls on the packet: it counts with the
    // packet's costs.
    let store = Store::open(&repo.path.join(".git")).unwrap();
    let reviewer_calls = store
        .events(&run, 0)
        .unwrap()
        .into_iter()
        .filter(|e| {
            matches!(&e.event, Event::AgentModelCall { packet, role, .. }
                if packet == "p1" && role == "reviewer")
        })
        .count();
    assert_eq!(reviewer_calls, 1);
    // The winner's verdict keeps why it was chosen.
    let note = repo.git(&[
        "notes",
        "--ref=refs/notes/orchestra/review",
        "show",
        &format!("orchestra/{run}/p1"),
    ]);
    assert!(note.contains("c1 covers all three letters"), "{note}");
}

#[test]
fn an_unusable_comparison_leaves_the_choice_to_the_smaller_change_and_says_so() {
    let repo = TestRepo::new();
    let model = reviewer("I would go with the second one, probably.");
    let out = run_best_of_two(&repo, &model);
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    assert_eq!(
        repo.git(&["show", &format!("orchestra/{run}/p1:out.txt")]),
        "a"
    );
    let (candidate, reasons, reviewer, _) = chosen(&repo);
    assert_eq!(candidate, 2);
    assert!(reasons.contains("made no usable choice"), "{reasons}");
    assert!(reasons.contains("the smaller change won"), "{reasons}");
    assert!(reasons.contains("no JSON object"), "{reasons}");
    assert!(reviewer.is_some());
}

#[test]
fn a_choice_of_a_candidate_that_failed_validation_cannot_win() {
    let repo = TestRepo::new();
    // Candidate 3 fails validation (it writes nothing); the reviewer names it all the same.
    let model = reviewer("{\"choice\": \"c3\", \"reason\": \"c3 is best\"}");
    let body = format!(
        "objective = \"Only passing candidates\"\n\n{}",
        packet("p1", "\"out.txt\"", "", "\"test -s out.txt\"")
    );
    let plan = repo.write_plan("plan.toml", &body);
    let worker = format!("if [ \"$ORCHESTRA_CANDIDATE\" = 3 ]; then exit 0; fi; {WORKER}");
    let root = repo.scratch().join("wt");
    let out = orchestra_with_env(
        &repo.path,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            &worker,
            "--worktree-root",
            root.to_str().unwrap(),
            "--best-of",
            "3",
        ],
        &[
            ("ORCHESTRA_PROVIDER", "openai-compatible"),
            ("ORCHESTRA_BASE_URL", model.url.as_str()),
            ("ORCHESTRA_MODEL", "scripted"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let (candidate, reasons, _, _) = chosen(&repo);
    assert_eq!(candidate, 2, "{reasons}");
    assert!(
        reasons.contains("is not one of the candidates shown (c1, c2)"),
        "{reasons}"
    );
}

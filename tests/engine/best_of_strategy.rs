//! `[best_of] arms = ["strategy:<text>", …]`: a candidate keeps the packet's worker and gets
//! the approach `<text>`: a worker command in `ORCHESTRA_STRATEGY`, our agent in its task; an
//! arm without an approach is refused before anything runs.

use crate::support::*;
use git_orchestra::demo::{MockModel, parse_scripts};

/// A plan whose one packet has two candidates that pass when out.txt is not empty.
fn plan(repo: &TestRepo) -> std::path::PathBuf {
    let body = format!(
        "objective = \"Strategies vary the approach\"\n\n{}",
        packet("p1", "\"out.txt\"", "", "\"test -s out.txt\"")
            .replace("[[packet]]\n", "[[packet]]\nattempts = 2\n")
    );
    repo.write_plan("plan.toml", &body)
}

#[test]
fn a_worker_commands_candidates_each_get_their_arms_strategy() {
    let repo = TestRepo::new();
    repo.user_config("[best_of]\narms = [\"strategy:minimal\", \"strategy:rewrite it\"]\n");
    let plan = plan(&repo);
    let worker = r#"echo "$ORCHESTRA_STRATEGY" > out.txt"#;
    let out = repo.run_plan(&plan, worker, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    let kept = |k: u32| {
        repo.git(&[
            "show",
            &format!("refs/orchestra/candidates/{run}/p1/c{k}:out.txt"),
        ])
    };
    assert_eq!(kept(1), "minimal");
    assert_eq!(kept(2), "rewrite it");
    let v = status_json(&repo.path);
    let arms: Vec<&str> = v["candidates"][0]["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["arm"].as_str().unwrap())
        .collect();
    assert_eq!(arms, ["strategy:minimal", "strategy:rewrite it"], "{v:#}");
}

#[test]
fn a_strategy_arm_without_an_approach_is_refused_naming_it() {
    let repo = TestRepo::new();
    repo.user_config("[best_of]\narms = [\"strategy:minimal\", \"strategy:\"]\n");
    let plan = plan(&repo);
    let before = refs(&repo.path);
    let out = repo.run_plan(&plan, r#"echo x > out.txt"#, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("[best_of] arms has `strategy:`, which gives no approach"),
        "{said}"
    );
    assert_eq!(refs(&repo.path), before);
}

#[test]
fn our_agents_candidate_is_told_its_arms_approach() {
    let repo = TestRepo::new();
    let scripts = serde_json::json!([
        {"name": "coder", "match": ["# Coder"], "replies": [
            {"calls": [{"name": "write_file", "args": {"path": "out.txt", "content": "x\n"}}]},
            {"calls": [{"name": "complete", "args": {"summary": "wrote out.txt"}}]}]}
    ]);
    let model = MockModel::start(parse_scripts(&scripts.to_string()).unwrap()).unwrap();
    repo.user_config(&format!(
        "[profiles.fast]\nprovider = \"openai-compatible\"\nmodel = \"fast-model\"\nbase_url = \"{}\"\n\n\
         [roles.coder]\nprofile = \"fast\"\n\n[best_of]\narms = [\"strategy:smallest diff\", \"strategy:rewrite\"]\n",
        model.url
    ));
    let plan = plan(&repo);
    let root = repo.scratch().join("wt");
    let out = orchestra(
        &repo.path,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worktree-root",
            root.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let bodies: Vec<String> = model.received().iter().map(|b| b.to_string()).collect();
    let told = |hint: &str| {
        bodies
            .iter()
            .filter(|b| b.contains(&format!("Approach for this attempt: {hint}")))
            .count()
    };
    // Each candidate's first request carries its own approach (later turns repeat it).
    assert!(told("smallest diff") >= 1, "{bodies:?}");
    assert!(told("rewrite") >= 1, "{bodies:?}");
    assert!(
        bodies
            .iter()
            .all(|b| !(b.contains("smallest diff")
                && b.contains("Approach for this attempt: rewrite"))),
        "each candidate is told only its own approach"
    );
}

//! `[best_of] arms`: a best-of-N packet's candidates cycle through the arms, each a profile
//! its agent uses instead of the role's own; each candidate's arm is in its events, `status`
//! and the notes; an arm that names no profile is refused before anything runs. An arm
//! `model:<name>` keeps the packet's profile and asks its provider for that model.

use crate::support::*;
use git_orchestra::demo::{MockModel, parse_scripts};

/// Starts a scripted coder that writes `content` to out.txt and completes.
fn coder(content: &str) -> MockModel {
    let scripts = serde_json::json!([
        {"name": "coder", "match": ["# Coder"], "replies": [
            {"calls": [{"name": "write_file", "args": {"path": "out.txt", "content": content}}]},
            {"calls": [{"name": "complete", "args": {"summary": "wrote out.txt"}}]}]}
    ]);
    MockModel::start(parse_scripts(&scripts.to_string()).unwrap()).unwrap()
}

/// The user configuration with the profiles `fast` and `strong` at `fast` and `strong`, the
/// coder on `fast`, and `arms`.
fn config(fast: &MockModel, strong: &MockModel, arms: &str) -> String {
    format!(
        "[profiles.fast]\nprovider = \"openai-compatible\"\nmodel = \"fast-model\"\nbase_url = \"{}\"\n\n\
         [profiles.strong]\nprovider = \"openai-compatible\"\nmodel = \"strong-model\"\nbase_url = \"{}\"\n\n\
         [roles.coder]\nprofile = \"fast\"\n\n[best_of]\narms = {arms}\n",
        fast.url, strong.url
    )
}

/// A plan whose one packet has two candidates.
fn plan(repo: &TestRepo) -> std::path::PathBuf {
    let body = format!(
        "objective = \"Arms vary the worker\"\n\n{}",
        packet("p1", "\"out.txt\"", "", "\"test -s out.txt\"")
            .replace("[[packet]]\n", "[[packet]]\nattempts = 2\n")
    );
    repo.write_plan("plan.toml", &body)
}

/// Runs `plan` with our agents, worktrees under the scratch directory.
fn run(repo: &TestRepo, plan: &std::path::Path) -> std::process::Output {
    let root = repo.scratch().join("wt");
    orchestra(
        &repo.path,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worktree-root",
            root.to_str().unwrap(),
        ],
    )
}

/// Returns `out.txt` as candidate `k` of packet `p1` of `run` kept it.
fn kept_out(repo: &TestRepo, run: &str, k: u32) -> String {
    repo.git(&[
        "show",
        &format!("refs/orchestra/candidates/{run}/p1/c{k}:out.txt"),
    ])
}

/// Returns the arm of each candidate of the first best-of packet in `status --json`'s `v`.
fn arms_of(v: &serde_json::Value) -> Vec<String> {
    let each = v["candidates"][0]["candidates"].as_array().unwrap();
    each.iter()
        .map(|c| c["arm"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn each_candidate_works_with_its_arms_profile() {
    let repo = TestRepo::new();
    let fast = coder("from fast\n");
    let strong = coder("from strong\nand more\n");
    repo.user_config(&config(&fast, &strong, "[\"fast\", \"strong\"]"));
    let plan = plan(&repo);
    let out = run(&repo, &plan);
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    // Candidate 1 talked to the fast profile's server, candidate 2 to the strong one's.
    let kept = |k: u32| kept_out(&repo, &run, k);
    assert_eq!(kept(1), "from fast");
    assert_eq!(kept(2), "from strong\nand more");
    assert_eq!(fast.requests(), 2, "the fast arm's two turns");
    assert_eq!(strong.requests(), 2, "the strong arm's two turns");

    // Each candidate's arm is in status --json, status and the reasons.
    let v = status_json(&repo.path);
    let arms = arms_of(&v);
    assert_eq!(arms, ["fast", "strong"], "{v:#}");
    let reasons = v["candidates"][0]["reasons"].as_str().unwrap();
    assert!(
        reasons.contains("candidate 1 of 2 chosen (arm `fast`)"),
        "{reasons}"
    );
    assert!(reasons.contains("candidate 2: [arm strong]"), "{reasons}");
    let status = text(&orchestra(&repo.path, &["status"]));
    assert!(status.contains("c2 [strong]: passed"), "{status}");
}

/// Runs a plan of one best-of packet with two coder profiles and `arms`, which must be refused
/// as bad input before anything runs; `check` looks at what it said. Nothing changed, no
/// model was asked.
fn refused_with_arms(arms: &str, check: impl FnOnce(&std::process::Output)) {
    let repo = TestRepo::new();
    let fast = coder("x\n");
    let strong = coder("y\n");
    repo.user_config(&config(&fast, &strong, arms));
    let plan = plan(&repo);
    let before = refs(&repo.path);
    let out = run(&repo, &plan);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    check(&out);
    assert_eq!(refs(&repo.path), before);
    assert_eq!(fast.requests() + strong.requests(), 0);
}

#[test]
fn an_arm_that_names_no_profile_is_refused_naming_it_and_the_choices() {
    refused_with_arms("[\"fast\", \"strnog\"]", |out| {
        let said = text(out);
        assert!(
            said.contains("[best_of] arms names `strnog`, which is not a profile"),
            "{said}"
        );
        assert!(
            said.contains("the defined profiles are fast, strong"),
            "{said}"
        );
    });
}

/// Writes a fake agent CLI `mine` into the scratch directory that writes `from cli` to
/// out.txt; returns its configuration (`[agents.cli.mine]` and the sandbox reading it).
fn fake_cli(repo: &TestRepo) -> String {
    use std::os::unix::fs::PermissionsExt;
    let bin = repo.scratch().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(
        bin.join("mine"),
        "#!/bin/sh\necho 'from cli' > out.txt\necho done\n",
    )
    .unwrap();
    std::fs::set_permissions(bin.join("mine"), std::fs::Permissions::from_mode(0o755)).unwrap();
    format!(
        "[sandbox]\nif_unavailable = \"warn\"\nread = [\"{bin}\"]\n\n[agents.cli.mine]\ncommand = \"{bin}/mine\"\noutput = \"text\"\nprompt = \"arg\"\n",
        bin = bin.display()
    )
}

#[test]
fn an_arm_can_name_an_agent_cli_beside_a_profile() {
    let repo = TestRepo::new();
    let fast = coder("from fast\n");
    let strong = coder("y\n");
    let body = config(&fast, &strong, "[\"fast\", \"cli:mine\"]");
    repo.user_config(&format!("{}\n{body}", fake_cli(&repo)));
    let plan = plan(&repo);
    let out = run(&repo, &plan);
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    let kept = |k: u32| kept_out(&repo, &run, k);
    // Candidate 1 was worked by the fast profile's agent, candidate 2 by the agent CLI.
    assert_eq!(kept(1), "from fast");
    assert_eq!(kept(2), "from cli");
    assert_eq!(fast.requests(), 2, "the fast arm's two turns");
    let v = status_json(&repo.path);
    let arms = arms_of(&v);
    assert_eq!(arms, ["fast", "cli:mine"], "{v:#}");
}

#[test]
fn an_arm_naming_an_unknown_agent_cli_is_refused_naming_it() {
    refused_with_arms("[\"fast\", \"cli:nosuch\"]", |out| {
        assert!(text(out).contains("nosuch"), "{}", text(out));
        assert!(
            text(out).contains("claude"),
            "names the choices: {}",
            text(out)
        );
    });
}

/// Starts one scripted server that answers the coder by the model asked for: writing
/// `from <model>` to out.txt for `fast-model` and for `big-model`.
fn coder_by_model() -> MockModel {
    let script = |model: &str| {
        serde_json::json!({"name": model, "model": model, "match": ["# Coder"], "replies": [
            {"calls": [{"name": "write_file", "args": {"path": "out.txt", "content": format!("from {model}\n")}}]},
            {"calls": [{"name": "complete", "args": {"summary": "wrote out.txt"}}]}]})
    };
    let scripts = serde_json::json!([script("fast-model"), script("big-model")]);
    MockModel::start(parse_scripts(&scripts.to_string()).unwrap()).unwrap()
}

#[test]
fn a_model_arm_keeps_the_packets_profile_and_asks_it_for_the_arms_model() {
    let repo = TestRepo::new();
    let server = coder_by_model();
    let unused = coder("y\n");
    repo.user_config(&config(&server, &unused, "[\"fast\", \"model:big-model\"]"));
    let plan = plan(&repo);
    let out = run(&repo, &plan);
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    // Candidate 1 asked the fast profile's server for its model, candidate 2 the same server
    // for the arm's model; each did what its model said.
    assert_eq!(kept_out(&repo, &run, 1), "from fast-model");
    assert_eq!(kept_out(&repo, &run, 2), "from big-model");
    let models: Vec<String> = server
        .received()
        .iter()
        .map(|b| b["model"].as_str().unwrap_or("").to_string())
        .collect();
    let count = |m: &str| models.iter().filter(|x| *x == m).count();
    assert_eq!(
        (count("fast-model"), count("big-model"), models.len()),
        (2, 2, 4),
        "{models:?}"
    );
    assert_eq!(unused.requests(), 0);
    let v = status_json(&repo.path);
    assert_eq!(arms_of(&v), ["fast", "model:big-model"], "{v:#}");
    let reasons = v["candidates"][0]["reasons"].as_str().unwrap();
    assert!(
        reasons.contains("[arm model:big-model]") || reasons.contains("(arm `model:big-model`)"),
        "{reasons}"
    );
}

#[test]
fn a_model_arm_without_a_model_is_refused_naming_it() {
    refused_with_arms("[\"fast\", \"model: \"]", |out| {
        let said = text(out);
        assert!(said.contains("`model: ` names no model"), "{said}");
        assert!(said.contains("model:<name>"), "{said}");
    });
}

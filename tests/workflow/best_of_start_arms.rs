//! `[best_of] arms` in `start` runs: a packet the plan gives two attempts fans out to two
//! candidates, each worked by our agent with its arm's profile (a scripted server of its
//! own, so the test sees which server answered) or by the agent CLI its arm names, and each
//! candidate's arm is in `status`. An arm `model:<name>` asks the role's own profile for that
//! model, and an arm `strategy:<text>` keeps the role's profile and tells the candidate the approach.

use git_orchestra::demo::{self, MockModel};

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use crate::support::{git, hermetic, orchestra, text};

/// Starts a scripted coder that writes `content` to `p1.txt` and completes.
fn coder(content: &str) -> MockModel {
    let scripts = serde_json::json!([
        {"name": "coder", "match": ["# Coder"], "replies": [
            {"calls": [{"name": "write_file", "args": {"path": "p1.txt", "content": content}}]},
            {"calls": [{"name": "complete", "args": {"summary": "wrote p1.txt"}}]}]}
    ]);
    MockModel::start(demo::parse_scripts(&scripts.to_string()).unwrap()).unwrap()
}

/// Starts the scripted planner (one packet of two attempts), reviewer and orchestrator.
fn main_model() -> MockModel {
    let plan = "```toml\n[[packet]]\nid = \"p1\"\ntitle = \"One\"\ndescription = \"d\"\nfiles = [\"p1.txt\"]\nvalidation = [\"test -s p1.txt\"]\nattempts = 2\n```";
    let scripts = serde_json::json!([
        {"name": "planner", "match": ["# Planner"], "replies": [{"text": plan}]},
        {"name": "compare", "match": ["# Candidate comparison"], "replies": [
            {"text": "{\"choice\": \"c2\", \"reason\": \"c2 says more\"}"}]},
        {"name": "review", "match": ["# Reviewer"], "replies": [
            {"text": "{\"verdict\": \"approve\", \"findings\": []}"}]},
        {"name": "orchestrator", "match": ["# Orchestrator"], "replies": [{"text": "{}"}]}
    ]);
    MockModel::start(demo::parse_scripts(&scripts.to_string()).unwrap()).unwrap()
}

/// Runs `start --yes` on the sample repository with `config` (the profiles `default`,
/// `fast` and `strong` at `main`, `fast` and `strong` before it, and a fake agent CLI `mine`
/// writing `from cli` to p1.txt) as the user configuration; returns each kept candidate's
/// p1.txt and its arm in `status --json`, and the p1.txt on the packet's branch (its winner's).
fn start_with(
    main: &MockModel,
    fast: &MockModel,
    strong: &MockModel,
    config: &str,
) -> (Vec<String>, Vec<String>, String) {
    hermetic();
    let tmp = tempfile::tempdir().unwrap();
    let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
    let bin: PathBuf = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(
        bin.join("mine"),
        "#!/bin/sh\necho 'from cli' > p1.txt\necho done\n",
    )
    .unwrap();
    std::fs::set_permissions(bin.join("mine"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let profile = |name: &str, url: &str| {
        format!(
            "[profiles.{name}]\nprovider = \"openai-compatible\"\nmodel = \"{name}\"\nbase_url = \"{url}\"\n"
        )
    };
    let body = [
        format!(
            "[sandbox]\nif_unavailable = \"warn\"\nread = [\"{bin}\"]\n[agents.cli.mine]\ncommand = \"{bin}/mine\"\noutput = \"text\"\nprompt = \"arg\"\n",
            bin = bin.display()
        ),
        profile("default", &main.url),
        profile("fast", &fast.url),
        profile("strong", &strong.url),
        config.to_string(),
    ]
    .concat();
    let user_config = tmp.path().join("user-config/git-orchestra/config.toml");
    std::fs::create_dir_all(user_config.parent().unwrap()).unwrap();
    std::fs::write(&user_config, body).unwrap();
    let root = tmp.path().join("worktrees");
    let out = orchestra(
        &repo,
        &[
            "start",
            "--yes",
            "--no-clarify",
            "--worktree-root",
            root.to_str().unwrap(),
            "One file",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let refs = git(
        &repo,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/orchestra/candidates/",
        ],
    );
    let kept: Vec<String> = refs
        .lines()
        .map(|r| git(&repo, &["show", &format!("{r}:p1.txt")]))
        .collect();
    let status = orchestra(&repo, &["status", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let each = v["candidates"][0]["candidates"]
        .as_array()
        .unwrap_or_else(|| panic!("no candidates in {v:#}"));
    let arms = each
        .iter()
        .map(|c| c["arm"].as_str().unwrap_or("").to_string())
        .collect();
    let branch = v["packets"][0]["branch"].as_str().unwrap_or_default();
    let landed = git(&repo, &["show", &format!("{branch}:p1.txt")]);
    (kept, arms, landed)
}

#[test]
fn each_candidate_of_a_start_run_works_with_its_arms_profile() {
    let main = main_model();
    let fast = coder("from fast\n");
    let strong = coder("from strong\nand more\n");
    let (kept, arms, _) = start_with(
        &main,
        &fast,
        &strong,
        "[roles.coder]\nprofile = \"fast\"\n[best_of]\narms = [\"fast\", \"strong\"]\n",
    );
    // Candidate 1 talked to the fast profile's server, candidate 2 to the strong one's.
    assert_eq!(fast.requests(), 2, "the fast arm's two turns");
    assert_eq!(strong.requests(), 2, "the strong arm's two turns");
    assert_eq!(kept, ["from fast", "from strong\nand more"]);
    assert_eq!(arms, ["fast", "strong"]);
}

#[test]
fn a_start_runs_candidate_can_be_worked_by_the_agent_cli_its_arm_names() {
    let main = main_model();
    let fast = coder("from fast\n");
    let strong = coder("unused\n");
    let (kept, arms, _) = start_with(
        &main,
        &fast,
        &strong,
        "[roles.coder]\nprofile = \"strong\"\n[best_of]\narms = [\"fast\", \"cli:mine\"]\n",
    );
    assert_eq!(fast.requests(), 2, "the fast arm's two turns");
    assert_eq!(
        strong.requests(),
        0,
        "the role's own profile works no candidate"
    );
    assert_eq!(kept, ["from fast", "from cli"]);
    assert_eq!(arms, ["fast", "cli:mine"]);
}

#[test]
fn a_start_runs_candidate_asks_its_roles_profile_for_the_model_its_arm_names() {
    let main = main_model();
    // One server for the fast profile, answering by the model asked for.
    let script = |model: &str| {
        serde_json::json!({"name": model, "model": model, "match": ["# Coder"], "replies": [
            {"calls": [{"name": "write_file", "args": {"path": "p1.txt", "content": format!("from {model}\n")}}]},
            {"calls": [{"name": "complete", "args": {"summary": "wrote p1.txt"}}]}]})
    };
    let scripts = serde_json::json!([script("fast"), script("bigger")]);
    let fast = MockModel::start(demo::parse_scripts(&scripts.to_string()).unwrap()).unwrap();
    let strong = coder("unused\n");
    let (kept, arms, _) = start_with(
        &main,
        &fast,
        &strong,
        "[roles.coder]\nprofile = \"fast\"\n[best_of]\narms = [\"fast\", \"model:bigger\"]\n",
    );
    assert_eq!(kept, ["from fast", "from bigger"]);
    assert_eq!(arms, ["fast", "model:bigger"]);
    let mut models: Vec<String> = fast
        .received()
        .iter()
        .map(|b| b["model"].as_str().unwrap_or("").to_string())
        .collect();
    models.sort();
    assert_eq!(models, ["bigger", "bigger", "fast", "fast"]);
    assert_eq!(strong.requests(), 0);
}

#[test]
fn each_candidate_of_a_start_run_is_told_its_strategy_arms_approach() {
    let main = main_model();
    // One server for the coder's profile, answering by the approach the task names.
    let script = |approach: &str, content: &str| {
        serde_json::json!({"name": approach, "match": ["# Coder", format!("Approach for this attempt: {approach}")], "replies": [
            {"calls": [{"name": "write_file", "args": {"path": "p1.txt", "content": content}}]},
            {"calls": [{"name": "complete", "args": {"summary": "wrote p1.txt"}}]}]})
    };
    let scripts = serde_json::json!([
        script("minimal", "minimal\n"),
        script("thorough", "thorough\nand tested\n")
    ]);
    let fast = MockModel::start(demo::parse_scripts(&scripts.to_string()).unwrap()).unwrap();
    let strong = coder("unused\n");
    let (kept, arms, landed) = start_with(
        &main,
        &fast,
        &strong,
        "[roles.coder]\nprofile = \"fast\"\n[best_of]\narms = [\"strategy:minimal\", \"strategy:thorough\"]\n",
    );
    // Each candidate's task named its own approach, and only its own.
    let told = |approach: &str| {
        fast.received()
            .iter()
            .filter(|b| {
                b.to_string()
                    .contains(&format!("Approach for this attempt: {approach}"))
            })
            .count()
    };
    assert_eq!((told("minimal"), told("thorough")), (2, 2));
    assert_eq!(fast.requests(), 4, "two turns per candidate");
    assert_eq!(
        strong.requests(),
        0,
        "a strategy arm keeps the role's profile"
    );
    assert_eq!(kept, ["minimal", "thorough\nand tested"]);
    assert_eq!(arms, ["strategy:minimal", "strategy:thorough"]);
    // The reviewer chose c2: its work is the packet's.
    assert_eq!(landed, "thorough\nand tested");
}

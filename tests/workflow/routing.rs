//! Routing learned from the run store, through the real binary: a seeded history where the
//! cheap profile passed packets like the new ones sends them to it (a scripted model of its
//! own, so the test sees which server answered), too few observations leave them with the
//! role's own worker, and a rejected fix round escalates to the next stronger worker.
//! A worker `model:<name>` is the packet's own profile asking its provider for that model.

use std::path::{Path, PathBuf};

use git_orchestra::demo::{self, MockModel, Script};

use crate::support::{git, hermetic, orchestra, text};

/// The demo's scripts, with the coder's answer to the review's rejection replaced by one that
/// does not fix what the review asked for (`greeter/__init__.py` still lacks `farewell`).
fn scripts_with_a_bad_fix() -> Vec<Script> {
    let mut scripts = demo::parse_scripts(demo::MODEL_SCRIPT).unwrap();
    let fix = scripts.iter_mut().find(|s| s.name == "p3-fix").unwrap();
    let write = &mut fix.replies[0].calls[0];
    assert_eq!(write.name, "write_file");
    write.args["content"] = "from . import core\nfrom .core import greet\n".into();
    scripts
}

fn serve(scripts: Vec<Script>) -> MockModel {
    MockModel::start(scripts).unwrap()
}

/// The sample repository, its worktree root and its user configuration's path.
struct Routed {
    _tmp: tempfile::TempDir,
    repo: PathBuf,
    root: PathBuf,
    user_config: PathBuf,
}

impl Routed {
    fn new() -> Routed {
        hermetic();
        let tmp = tempfile::tempdir().unwrap();
        let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
        let user_config = tmp.path().join("user-config/git-orchestra/config.toml");
        std::fs::create_dir_all(user_config.parent().unwrap()).unwrap();
        Routed {
            root: tmp.path().join("worktrees"),
            _tmp: tmp,
            repo,
            user_config,
        }
    }

    /// Writes the user configuration: every role on `main`, the coder on `coder`'s profile,
    /// the `cheap` and `strong` profiles on their servers, and `routing` as the `[routing]`
    /// table's body (none: routing off).
    fn configure(
        &self,
        main: &MockModel,
        cheap: &MockModel,
        strong: &MockModel,
        coder: &str,
        routing: &str,
    ) {
        let profile = |name: &str, model: &str, url: &str| {
            format!(
                "[profiles.{name}]\nprovider = \"openai-compatible\"\nmodel = \"{model}\"\nbase_url = \"{url}\"\n"
            )
        };
        let mut body = [
            profile("default", "scripted", &main.url),
            profile("cheap", "cheap", &cheap.url),
            profile("strong", "strong", &strong.url),
        ]
        .concat();
        body.push_str(&format!("[roles.coder]\nprofile = \"{coder}\"\n"));
        if !routing.is_empty() {
            body.push_str(&format!("[routing]\n{routing}"));
        }
        std::fs::write(&self.user_config, body).unwrap();
    }

    /// Runs `start --yes` on the demo's objective, on a new commit so that it is a new run;
    /// returns the report it prints.
    fn start(&self, note: &str) -> String {
        std::fs::write(self.repo.join("NOTES.md"), note).unwrap();
        commit(&self.repo, note);
        let root = self.root.to_str().unwrap();
        let out = orchestra(
            &self.repo,
            &["start", "--yes", "--worktree-root", root, demo::OBJECTIVE],
        );
        assert!(out.status.success(), "{}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Returns the routing lines `status --json` shows for the newest run.
    fn routing(&self) -> Vec<String> {
        let out = orchestra(&self.repo, &["status", "--json"]);
        assert!(out.status.success(), "{}", text(&out));
        let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        status["start"]["routing"]
            .as_array()
            .unwrap_or_else(|| panic!("no routing in {status}"))
            .iter()
            .map(|l| l.as_str().unwrap().to_string())
            .collect()
    }
}

fn commit(repo: &Path, message: &str) {
    git(repo, &["add", "-A"]);
    git(
        repo,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "-m",
            message,
        ],
    );
}

fn line<'a>(lines: &'a [String], start: &str) -> &'a str {
    lines
        .iter()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no routing line `{start}…` in {lines:#?}"))
}

#[test]
fn packets_go_to_the_cheap_profile_that_passed_them_and_a_rejected_fix_escalates() {
    let s = Routed::new();
    let main = demo::serve().unwrap();
    let cheap = serve(demo::parse_scripts(demo::MODEL_SCRIPT).unwrap());
    let strong = serve(demo::parse_scripts(demo::MODEL_SCRIPT).unwrap());

    // History: the cheap profile works the three coder packets (small Python ones) and passes.
    s.configure(&main, &cheap, &strong, "cheap", "");
    s.start("seed");
    assert!(cheap.requests() > 0 && strong.requests() == 0);

    // Three observations are fewer than the four asked for: the role's own (strong) worker.
    let routing = "mode = \"history\"\nworkers = [\"cheap\", \"strong\"]\n";
    s.configure(
        &main,
        &cheap,
        &strong,
        "strong",
        &format!("{routing}min_observations = 4\n"),
    );
    let before = cheap.requests();
    s.start("too few");
    assert_eq!(cheap.requests(), before, "the cheap server answered");
    assert!(strong.requests() > 0);
    let lines = s.routing();
    let p1 = line(&lines, "p1-config → the role's own worker");
    assert!(
        p1.contains("coder python small")
            && p1.contains("cheap skipped: 3 of the 4 observations needed"),
        "{p1}"
    );

    // Enough observations: the cheap profile (now a server whose fix misses the point) gets
    // the coder packets; the strong one answers only once p3's fix round was rejected.
    let bad = serve(scripts_with_a_bad_fix());
    s.configure(&main, &bad, &strong, "strong", routing);
    let before = strong.requests();
    let report = s.start("routed");
    assert!(bad.requests() > 0, "the cheap server was not asked");
    let lines = s.routing();
    let p1 = line(&lines, "p1-config → cheap");
    assert!(p1.contains("cheap passed 3/3"), "{p1}");
    line(&lines, "p2-greet-punctuation → cheap");
    line(&lines, "p3-farewell → cheap");
    let escalated = line(&lines, "p3-farewell → strong for fix round 2");
    assert!(escalated.contains("escalated from cheap"), "{escalated}");
    // The strong server answered p3's second fix round (a write and a completion), no more.
    assert_eq!(strong.requests() - before, 2, "{lines:#?}");
    assert!(
        report.contains("completed: all 4 packets succeeded") && report.contains("Routing"),
        "{report}"
    );
    assert!(report.contains(escalated), "{report}");
    let shown = orchestra(&s.repo, &["status"]);
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains(&format!("routing   {p1}"))
            && shown.contains(&format!("routing   {escalated}")),
        "{shown}"
    );
}

#[test]
fn a_routing_worker_that_is_not_configured_is_refused_before_the_run_starts() {
    let s = Routed::new();
    let main = demo::serve().unwrap();
    s.configure(
        &main,
        &main,
        &main,
        "default",
        "mode = \"history\"\nworkers = [\"cheap\", \"huge\"]\n",
    );
    let root = s.root.to_str().unwrap();
    let out = orchestra(
        &s.repo,
        &["start", "--yes", "--worktree-root", root, demo::OBJECTIVE],
    );
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("`[routing] workers` entry `huge` is neither a profile nor the model of one")
            && said.contains("defined profiles: cheap, default, strong"),
        "{said}"
    );
    assert_eq!(main.requests(), 0, "a model was asked: {said}");
}

/// Returns the models the coder's requests to `server` asked for, each once, in order.
fn coder_models(server: &MockModel) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for body in server.received() {
        let system = body["messages"][0]["content"].as_str().unwrap_or_default();
        let model = body["model"].as_str().unwrap_or_default().to_string();
        if system.contains("# Coder") && !out.contains(&model) {
            out.push(model);
        }
    }
    out
}

#[test]
fn a_model_worker_is_the_packets_own_profile_asking_for_that_model() {
    let s = Routed::new();
    let main = demo::serve().unwrap();
    let profile = format!(
        "[profiles.default]\nprovider = \"openai-compatible\"\nmodel = \"scripted\"\nbase_url = \"{}\"\n",
        main.url
    );
    // History: the coder's own profile, asked for the model `tiny` by [roles.coder] model.
    std::fs::write(
        &s.user_config,
        format!("{profile}[roles.coder]\nmodel = \"tiny\"\n"),
    )
    .unwrap();
    s.start("seed");
    assert_eq!(coder_models(&main), ["tiny"]);

    // Routing to `model:tiny`, which passed them: the same server, asked for `tiny` again.
    std::fs::write(
        &s.user_config,
        format!(
            "{profile}[routing]\nmode = \"history\"\nworkers = [\"model:tiny\", \"default\"]\n"
        ),
    )
    .unwrap();
    let before = main.received().len();
    s.start("routed");
    let lines = s.routing();
    let p1 = line(&lines, "p1-config → model:tiny");
    assert!(p1.contains("model:tiny passed 3/3"), "{p1}");
    let asked: Vec<String> = main.received()[before..]
        .iter()
        .filter(|b| {
            b["messages"][0]["content"]
                .as_str()
                .is_some_and(|c| c.contains("# Coder"))
        })
        .map(|b| b["model"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(
        !asked.is_empty() && asked.iter().all(|m| m == "tiny"),
        "{asked:?}"
    );
}

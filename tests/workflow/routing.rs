//! Routing learned from the run store, through the real binary: a seeded history where the
//! cheap profile passed packets like the new ones sends them to it (a scripted model of its
//! own, so the test sees which server answered), too few observations leave them with the
//! role's own worker, and a rejected fix round escalates to the next stronger worker.
//! A worker `model:<name>` is the packet's own profile asking its provider for that model.
//! An agent CLI (`cli:<name>` in `[routing] workers`) that passed packets like the new ones
//! gets them, not the role's own worker; an unknown CLI there is refused before anything
//! starts.

use std::os::unix::fs::PermissionsExt;
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
    tmp: tempfile::TempDir,
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
            tmp,
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
        let out = self.start_with(note, &[], demo::OBJECTIVE);
        assert!(out.status.success(), "{}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs `start --yes` with `extra` on `objective`, on a new commit so that it is a new
    /// run; returns its output.
    fn start_with(&self, note: &str, extra: &[&str], objective: &str) -> std::process::Output {
        std::fs::write(self.repo.join("NOTES.md"), note).unwrap();
        commit(&self.repo, note);
        let root = self.root.to_str().unwrap();
        let mut args = vec!["start", "--yes", "--worktree-root", root];
        args.extend_from_slice(extra);
        args.push(objective);
        orchestra(&self.repo, &args)
    }

    fn status(&self) -> serde_json::Value {
        let out = orchestra(&self.repo, &["status", "--json"]);
        assert!(out.status.success(), "{}", text(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// Returns what packet `packet` of the newest run wrote into its file `<packet>.txt`.
    fn wrote(&self, packet: &str) -> String {
        let status = self.status();
        let branch = status["packets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["id"] == packet)
            .unwrap_or_else(|| panic!("no {packet} in {status}"))["branch"]
            .as_str()
            .unwrap()
            .to_string();
        git(&self.repo, &["show", &format!("{branch}:{packet}.txt")])
    }

    /// Returns the routing lines `status --json` shows for the newest run.
    fn routing(&self) -> Vec<String> {
        let status = self.status();
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

/// The sample repository with a scripted planner of two small text packets, a fake agent CLI
/// `mine` that writes `cli` into the files its prompt names, and the user configuration.
struct CliRouted {
    routed: Routed,
    bin: PathBuf,
    model: MockModel,
}

impl CliRouted {
    fn new() -> CliRouted {
        let routed = Routed::new();
        let bin = routed.tmp.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(
            bin.join("mine"),
            "#!/bin/sh\nfor f in p1.txt p2.txt; do case \"$*\" in *\"$f\"*) echo cli > \"$f\";; esac; done\necho done\n",
        )
        .unwrap();
        std::fs::set_permissions(bin.join("mine"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let plan = "```toml\n[[packet]]\nid = \"p1\"\ntitle = \"One\"\ndescription = \"Write p1.txt\"\nfiles = [\"p1.txt\"]\nvalidation = [\"grep -qx cli p1.txt\"]\n\n[[packet]]\nid = \"p2\"\ntitle = \"Two\"\ndescription = \"Write p2.txt\"\nfiles = [\"p2.txt\"]\nvalidation = [\"grep -qx cli p2.txt\"]\n```";
        let scripts = serde_json::json!([
            {"name": "planner", "match": ["# Planner"], "replies": [{"text": plan}]},
            {"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]},
            {"name": "orchestrator", "match": ["# Orchestrator"], "replies": [{"text": "{}"}]}
        ]);
        let model = serve(demo::parse_scripts(&scripts.to_string()).unwrap());
        CliRouted { routed, bin, model }
    }

    /// Writes the user configuration: the scripted model as every role's profile, the agent
    /// CLI `mine`, and `extra` after them.
    fn configure(&self, extra: &str) {
        let body = format!(
            "[sandbox]\nif_unavailable = \"warn\"\nread = [\"{bin}\"]\n\n[profiles.default]\nprovider = \"openai-compatible\"\nmodel = \"scripted\"\nbase_url = \"{url}\"\n\n[agents.cli.mine]\ncommand = \"{bin}/mine\"\noutput = \"text\"\nprompt = \"arg\"\n\n{extra}",
            bin = self.bin.display(),
            url = self.model.url,
        );
        std::fs::write(&self.routed.user_config, body).unwrap();
    }

    /// Runs `start --yes --no-clarify` on a new commit (a new run); returns its output.
    fn start(&self, note: &str) -> std::process::Output {
        self.routed
            .start_with(note, &["--no-clarify"], "Write two files")
    }
}

#[test]
fn packets_go_to_the_agent_cli_that_passed_packets_like_them() {
    let s = CliRouted::new();
    // History: the CLI works both coder packets (small text ones) as the coder's agent.
    s.configure("[roles.coder]\nagent = \"mine\"\n");
    let out = s.start("seed");
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(s.routed.wrote("p1"), "cli");

    // Now the coder is our own agent (the scripted model has no coder script: it could not
    // do the work), and routing may choose the CLI for packets it passed twice before.
    s.configure(
        "[routing]\nmode = \"history\"\nworkers = [\"cli:mine\", \"default\"]\nmin_observations = 2\n",
    );
    let out = s.start("routed");
    assert!(out.status.success(), "{}", text(&out));
    let lines = s.routed.routing();
    for p in ["p1", "p2"] {
        let line = lines
            .iter()
            .find(|l| l.starts_with(&format!("{p} → cli:mine")))
            .unwrap_or_else(|| panic!("{p} not routed to the CLI: {lines:#?}"));
        assert!(line.contains("cli:mine passed 2/2"), "{line}");
    }
    assert_eq!(s.routed.wrote("p1"), "cli");
    assert_eq!(s.routed.wrote("p2"), "cli");
}

#[test]
fn an_unknown_agent_cli_among_the_routing_workers_is_refused_before_the_run_starts() {
    let s = CliRouted::new();
    s.configure("[routing]\nmode = \"history\"\nworkers = [\"cli:nosuch\", \"default\"]\n");
    let out = s.start("refused");
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("`cli:nosuch`"), "{said}");
    assert_eq!(s.model.requests(), 0, "a model was asked: {said}");
}

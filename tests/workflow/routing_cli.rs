//! Routing to agent CLIs through the real binary: a seeded history where an agent CLI
//! (`cli:<name>` in `[routing] workers`) passed packets like the new ones sends them to it,
//! not to the role's own worker; an unknown CLI there is refused before anything starts.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use git_orchestra::demo;

use crate::support::{git, hermetic, orchestra, text};

/// The sample repository with a scripted planner of two small text packets, a fake agent CLI
/// `mine` that writes `cli` into the files its prompt names, and the user configuration.
struct CliRouted {
    tmp: tempfile::TempDir,
    repo: PathBuf,
    bin: PathBuf,
    model: demo::MockModel,
}

impl CliRouted {
    fn new() -> CliRouted {
        hermetic();
        let tmp = tempfile::tempdir().unwrap();
        let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
        let bin = tmp.path().join("bin");
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
        let model =
            demo::MockModel::start(demo::parse_scripts(&scripts.to_string()).unwrap()).unwrap();
        CliRouted {
            tmp,
            repo,
            bin,
            model,
        }
    }

    /// Writes the user configuration: the scripted model as every role's profile, the agent
    /// CLI `mine`, and `extra` after them.
    fn configure(&self, extra: &str) {
        let path = self
            .tmp
            .path()
            .join("user-config/git-orchestra/config.toml");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let body = format!(
            "[sandbox]\nif_unavailable = \"warn\"\nread = [\"{bin}\"]\n\n[profiles.default]\nprovider = \"openai-compatible\"\nmodel = \"scripted\"\nbase_url = \"{url}\"\n\n[agents.cli.mine]\ncommand = \"{bin}/mine\"\noutput = \"text\"\nprompt = \"arg\"\n\n{extra}",
            bin = self.bin.display(),
            url = self.model.url,
        );
        std::fs::write(path, body).unwrap();
    }

    /// Runs `start --yes` on a new commit (a new run); returns its output.
    fn start(&self, note: &str) -> std::process::Output {
        std::fs::write(self.repo.join("NOTES.md"), note).unwrap();
        commit(&self.repo, note);
        let root = self.tmp.path().join("worktrees");
        orchestra(
            &self.repo,
            &[
                "start",
                "--yes",
                "--no-clarify",
                "--worktree-root",
                root.to_str().unwrap(),
                "Write two files",
            ],
        )
    }

    /// Returns what packet `packet` of the newest run wrote into its file.
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

    fn status(&self) -> serde_json::Value {
        let out = orchestra(&self.repo, &["status", "--json"]);
        assert!(out.status.success(), "{}", text(&out));
        serde_json::from_slice(&out.stdout).unwrap()
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

#[test]
fn packets_go_to_the_agent_cli_that_passed_packets_like_them() {
    let s = CliRouted::new();
    // History: the CLI works both coder packets (small text ones) as the coder's agent.
    s.configure("[roles.coder]\nagent = \"mine\"\n");
    let out = s.start("seed");
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(s.wrote("p1"), "cli");

    // Now the coder is our own agent (the scripted model has no coder script: it could not
    // do the work), and routing may choose the CLI for packets it passed twice before.
    s.configure(
        "[routing]\nmode = \"history\"\nworkers = [\"cli:mine\", \"default\"]\nmin_observations = 2\n",
    );
    let out = s.start("routed");
    assert!(out.status.success(), "{}", text(&out));
    let lines = s.routing();
    for p in ["p1", "p2"] {
        let line = lines
            .iter()
            .find(|l| l.starts_with(&format!("{p} → cli:mine")))
            .unwrap_or_else(|| panic!("{p} not routed to the CLI: {lines:#?}"));
        assert!(line.contains("cli:mine passed 2/2"), "{line}");
    }
    assert_eq!(s.wrote("p1"), "cli");
    assert_eq!(s.wrote("p2"), "cli");
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

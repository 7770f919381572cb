//! The way users meet the product, in the environments they have: a bare one (no git identity,
//! no global configuration, an empty HOME — a fresh container, CI, a new laptop) and the usual
//! one (an identity in the global configuration), each with an upstream and a detached HEAD.
//! The journey: the demo, a plan run with `--merge`, the pre-push hook on real pushes, and
//! `review` without a range; every step asserts on what ends up in git, not on exit codes
//! alone.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::{hermetic, packet, text};

/// The environments of the journey.
#[derive(Debug, Clone, Copy)]
enum Setting {
    /// No identity anywhere, no global or system configuration, an empty HOME.
    Bare,
    /// A user with an identity in their global configuration.
    Configured,
}

/// A user's machine: a private HOME and the environment every command runs with.
struct Machine {
    setting: Setting,
    root: tempfile::TempDir,
}

impl Machine {
    fn new(setting: Setting) -> Machine {
        hermetic();
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("home")).unwrap();
        if let Setting::Configured = setting {
            std::fs::write(
                root.path().join("home/.gitconfig"),
                "[user]\n\tname = Dana User\n\temail = dana@example.com\n[init]\n\tdefaultBranch = main\n",
            )
            .unwrap();
        }
        Machine { setting, root }
    }

    fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }

    /// Returns `program` set up to run in `dir` with only this machine's environment: PATH
    /// (the binary's directory first, as an installed binary would be), HOME, and for the bare
    /// setting nothing that could give git an identity.
    fn command(&self, program: &str, dir: &Path) -> Command {
        let bin = Path::new(env!("CARGO_BIN_EXE_git-orchestra"))
            .parent()
            .unwrap()
            .to_path_buf();
        let mut cmd = Command::new(program);
        cmd.current_dir(dir)
            .env_clear()
            .env(
                "PATH",
                format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
            )
            .env("HOME", self.home())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0");
        if let Ok(tmp) = std::env::var("TMPDIR") {
            cmd.env("TMPDIR", tmp);
        }
        if let Setting::Bare = self.setting {
            // No identity from the host name either, whatever machine this runs on.
            cmd.env("GIT_CONFIG_COUNT", "1")
                .env("GIT_CONFIG_KEY_0", "user.useConfigOnly")
                .env("GIT_CONFIG_VALUE_0", "true");
        }
        cmd
    }

    fn orchestra(&self, dir: &Path, args: &[&str]) -> Output {
        self.command(env!("CARGO_BIN_EXE_git-orchestra"), dir)
            .args(args)
            .output()
            .unwrap()
    }

    fn git_output(&self, dir: &Path, args: &[&str]) -> Output {
        self.command("git", dir).args(args).output().unwrap()
    }

    /// Runs git and returns trimmed stdout, panicking with its output on failure.
    fn git(&self, dir: &Path, args: &[&str]) -> String {
        let out = self.git_output(dir, args);
        assert!(
            out.status.success(),
            "{:?}: git {args:?} failed: {}",
            self.setting,
            text(&out)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Commits everything in `dir` as the user would; in the bare setting the user has no
    /// identity, so they give one for this commit only (as `git -c` does).
    fn commit(&self, dir: &Path, message: &str) {
        self.git(dir, &["add", "-A"]);
        self.git(
            dir,
            &[
                "-c",
                "user.name=Dana User",
                "-c",
                "user.email=dana@example.com",
                "commit",
                "-qm",
                message,
            ],
        );
    }
}

#[test]
fn the_demo_lands_farewell_on_main_in_every_environment() {
    for setting in [Setting::Bare, Setting::Configured] {
        let m = Machine::new(setting);
        let dir = m.root.path().join("demo");
        let out = m.orchestra(m.root.path(), &["demo", "--dir", dir.to_str().unwrap()]);
        assert!(out.status.success(), "{setting:?}: {}", text(&out));
        let core = m.git(&dir.join("greeter"), &["show", "main:greeter/core.py"]);
        assert!(
            core.contains("def farewell"),
            "{setting:?}: main has no farewell():\n{core}"
        );
    }
}

#[test]
fn run_merge_push_and_review_work_with_an_upstream_and_a_detached_head_in_every_environment() {
    for setting in [Setting::Bare, Setting::Configured] {
        journey(&Machine::new(setting));
    }
}

fn journey(m: &Machine) {
    let s = m.setting;
    let repo = m.root.path().join("repo");
    let remote = m.root.path().join("remote.git");
    std::fs::create_dir_all(&repo).unwrap();
    m.git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README.md"), "# sample\n").unwrap();
    m.commit(&repo, "initial");
    m.git(
        m.root.path(),
        &["init", "-q", "--bare", remote.to_str().unwrap()],
    );
    m.git(
        &repo,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    m.git(&repo, &["push", "-q", "-u", "origin", "main"]);
    let out = m.orchestra(&repo, &["hook", "install"]);
    assert!(out.status.success(), "{s:?}: {}", text(&out));

    // A plan run with --merge: the packets' work is on main.
    let plan = m.root.path().join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "objective = \"Two files\"\n\n{}{}",
            packet("p1", "\"one.txt\"", "", "\"test -f one.txt\""),
            packet("p2", "\"two.txt\"", "", "\"test -f two.txt\""),
        ),
    )
    .unwrap();
    let worker = r#"echo "$ORCHESTRA_PACKET" > "$(test "$ORCHESTRA_PACKET" = p1 && echo one || echo two).txt""#;
    let out = m.orchestra(
        &repo,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            worker,
            "--merge",
        ],
    );
    assert!(out.status.success(), "{s:?}: {}", text(&out));
    assert_eq!(m.git(&repo, &["show", "main:one.txt"]), "p1", "{s:?}");
    assert_eq!(m.git(&repo, &["show", "main:two.txt"]), "p2", "{s:?}");

    // The merged result goes out through the hook; the remote has exactly it.
    let out = m.git_output(&repo, &["push", "origin", "main"]);
    assert!(out.status.success(), "{s:?}: {}", text(&out));
    assert_eq!(
        m.git(&remote, &["rev-parse", "main"]),
        m.git(&repo, &["rev-parse", "main"]),
        "{s:?}"
    );

    // A change of the user's on a branch with an upstream: `review` with no range reviews what
    // the upstream lacks, and the push then passes.
    m.git(&repo, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(repo.join("three.txt"), "3\n").unwrap();
    m.commit(&repo, "three");
    let out = m.git_output(&repo, &["push", "-q", "-u", "origin", "feature"]);
    assert!(!out.status.success(), "{s:?}: an unreviewed push passed");
    let out = m.orchestra(&repo, &["review"]);
    assert!(out.status.success(), "{s:?}: {}", text(&out));
    let out = m.git_output(&repo, &["push", "-q", "-u", "origin", "feature"]);
    assert!(out.status.success(), "{s:?}: {}", text(&out));
    std::fs::write(repo.join("four.txt"), "4\n").unwrap();
    m.commit(&repo, "four");
    let out = m.orchestra(&repo, &["review", "--json"]);
    assert!(out.status.success(), "{s:?}: {}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["base"],
        m.git(&repo, &["rev-parse", "origin/feature"]),
        "{s:?}"
    );
    let out = m.git_output(&repo, &["push", "-q"]);
    assert!(out.status.success(), "{s:?}: {}", text(&out));
    assert_eq!(
        m.git(&remote, &["show", "feature:four.txt"]),
        "4",
        "{s:?}: the reviewed work is on the remote"
    );

    // On a detached HEAD, `review` compares with the default branch.
    m.git(&repo, &["checkout", "-q", "--detach"]);
    let out = m.orchestra(&repo, &["review", "--json"]);
    assert!(out.status.success(), "{s:?}: {}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["verdict"], "approve", "{s:?}: {v}");
}

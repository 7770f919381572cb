//! Language servers against a hostile worktree: a server program planted in the repository is
//! not run unless the user trusts it, and whatever server runs, runs in the sandbox.

use std::path::{Path, PathBuf};

use super::fixture;
use crate::support::{TestRepo, make_executable, orchestra_with_env, text};

/// A stand-in for a language server: it records in `marks/<name>` that it ran and whether it
/// could read the planted SSH key, then exits (navigation falls back to the graph).
fn fake_server(path: &Path, marks: &Path, name: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(
        path,
        format!(
            "#!/bin/sh\nif cat \"$HOME/.ssh/id_rsa\" >/dev/null 2>&1; then k=ok; else k=denied; fi\necho \"key=$k\" > {}/{name}\nexit 1\n",
            marks.display()
        ),
    )
    .unwrap();
    make_executable(path);
}

/// Returns a home directory with a planted SSH key, and a marks directory the user's
/// configuration lets sandboxed programs write.
fn setup(repo: &TestRepo, user_config: &str) -> (PathBuf, PathBuf) {
    let home = repo.tmp.path().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(
        home.join(".ssh/id_rsa"),
        "-----BEGIN OPENSSH PRIVATE KEY-----\n",
    )
    .unwrap();
    let marks = repo.scratch().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    repo.user_config(&format!(
        "[sandbox]\nwritable = [\"{}\"]\n{user_config}",
        marks.display()
    ));
    (home, marks)
}

/// Runs `nav refs make --precise` with `path_head` before the test's `PATH` and `home` as the
/// home directory; asserts the graph still answered.
fn precise_refs(repo: &TestRepo, home: &Path, path_head: &str) {
    let path = format!("{path_head}:{}", std::env::var("PATH").unwrap());
    let out = orchestra_with_env(
        &repo.path,
        &["nav", "refs", "make", "--precise"],
        &[("PATH", path.as_str()), ("HOME", home.to_str().unwrap())],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("references to make"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_language_server_planted_in_an_untrusted_worktree_is_not_run() {
    let repo = fixture("lsp");
    let (home, marks) = setup(&repo, "");
    // Found through a relative PATH entry (as `node_modules/.bin` often is on PATH).
    fake_server(
        &repo.path.join("node_modules/.bin/pyright-langserver"),
        &marks,
        "planted-on-path",
    );
    precise_refs(&repo, &home, "node_modules/.bin");
    assert!(
        !marks.join("planted-on-path").exists(),
        "the planted server ran"
    );

    // Named by a relative command.
    let (home, marks) = setup(
        &repo,
        "[nav.lsp.servers.python]\ncommand = \"tools/pyls\"\n",
    );
    fake_server(&repo.path.join("tools/pyls"), &marks, "planted-command");
    precise_refs(&repo, &home, "/nonexistent");
    assert!(
        !marks.join("planted-command").exists(),
        "the planted server ran"
    );
}

#[test]
fn a_language_server_runs_sandboxed_and_reads_no_credentials() {
    if git_orchestra::agent::sandbox::landlock_abi().is_none() {
        eprintln!("skipped: Landlock unavailable");
        return;
    }
    let repo = fixture("lsp");
    let (home, marks) = setup(&repo, "");
    // Installed outside the repository: it runs, confined.
    let bin = repo.scratch().join("bin");
    fake_server(&bin.join("pyright-langserver"), &marks, "installed");
    precise_refs(&repo, &home, bin.to_str().unwrap());
    let mark = std::fs::read_to_string(marks.join("installed"));
    let Ok(mark) = mark else {
        panic!("the installed server did not run (or could not write the granted marks directory)");
    };
    assert_eq!(mark.trim(), "key=denied");
}

#[test]
fn sandboxed_servers_serve_each_worktree_of_a_run_on_their_own() {
    use git_orchestra::lsp::launch::{Confine, Launch};
    use git_orchestra::lsp::{Outcome, Query, Settings, Tier};
    use std::time::{Duration, Instant};
    if !super::nvim::tool_available("pyright", "--version")
        || git_orchestra::agent::sandbox::landlock_abi().is_none()
    {
        return;
    }
    let repo = fixture("lsp");
    let other = repo.scratch().join("other");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "other",
        other.to_str().unwrap(),
    ]);
    std::fs::write(
        other.join("app/extra.py"),
        "from app.models import make\n\n\ndef extra():\n    return make()\n",
    )
    .unwrap();
    // The launcher as the agents' sandbox runs it: each server reads its own worktree only.
    let tmp = repo.scratch().join("lsp-tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let confine: std::sync::Arc<Confine> = std::sync::Arc::new(
        move |root: &Path, _name: &str, program: &Path, args: &[String]| {
            let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_git-orchestra"));
            cmd.arg("__sandbox")
                .arg("--worktree")
                .arg(root)
                .arg("--tmp")
                .arg(&tmp)
                .arg("--read-only")
                .arg("--")
                .arg(program)
                .args(args);
            cmd
        },
    );
    let tier = Tier::new(Settings {
        launch: Launch {
            confine: Some(confine),
            trusted: false,
        },
        ..Settings::from_config(&Default::default())
    });
    let mut first = git_orchestra::nav::Index::open(&repo.path).unwrap();
    let mut second = git_orchestra::nav::Index::open(&other).unwrap();
    let ask = |index: &mut git_orchestra::nav::Index| {
        let started = Instant::now();
        loop {
            match tier.query(
                index,
                Query::References,
                Some("make"),
                None,
                Duration::from_secs(60),
            ) {
                Outcome::Lsp { locations, .. } => {
                    let mut paths: Vec<String> = locations.iter().map(|l| l.path.clone()).collect();
                    paths.sort();
                    paths.dedup();
                    return paths;
                }
                Outcome::Graph(why) => assert!(
                    started.elapsed() < Duration::from_secs(120),
                    "never from the server: {why:?}"
                ),
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    assert_eq!(ask(&mut first), ["app/main.py"]);
    assert_eq!(ask(&mut second), ["app/extra.py", "app/main.py"]);
    let python = git_orchestra::nav::Lang::Python;
    let pids = (
        tier.server_pid(python, first.root()),
        tier.server_pid(python, second.root()),
    );
    assert!(
        pids.0.is_some() && pids.1.is_some() && pids.0 != pids.1,
        "one confined server per worktree: {pids:?}"
    );
}

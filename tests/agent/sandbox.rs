//! The run_command sandbox against an attack list: writes outside the worktree, git metadata,
//! network, symlink tricks — with positive controls so a broken launcher cannot pass.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};

use crate::support::TestRepo;

fn launcher(worktree: &Path, tmp: &Path, network: bool, script: &str) -> Output {
    let common = crate::support::git(
        worktree,
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    );
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_git-orchestra"));
    cmd.arg("__sandbox")
        .arg("--worktree")
        .arg(worktree)
        .arg("--tmp")
        .arg(tmp)
        .arg("--read")
        .arg(common);
    if network {
        cmd.arg("--network");
    }
    cmd.args(["--", "bash", "-c", script]).output().unwrap()
}

/// Returns false (after saying so) where Landlock cannot be enforced.
fn landlock_available(wt: &Path, tmp: &Path) -> bool {
    let out = launcher(wt, tmp, false, "true");
    if out.status.code() == Some(126)
        && String::from_utf8_lossy(&out.stderr).contains("Landlock unavailable")
    {
        eprintln!("skipped: Landlock unavailable");
        return false;
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    true
}

#[test]
fn sandboxed_commands_write_only_their_worktree_and_reach_no_network() {
    let repo = TestRepo::new();
    let scratch = repo.scratch();
    let wt = scratch.join("wt");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "packet",
        wt.to_str().unwrap(),
    ]);
    let tmp = scratch.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let outside = scratch.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    if !landlock_available(&wt, &tmp) {
        return;
    }
    // Positive controls: the worktree and the private temp dir are writable, / is readable.
    let ok = launcher(
        &wt,
        &tmp,
        false,
        "echo hi > inside.txt && echo t > \"$TMPDIR/t\" && cat /etc/passwd > /dev/null && git status --short",
    );
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(wt.join("inside.txt").exists() && tmp.join("t").exists());

    let config = repo.path.join(".git/config");
    let before = std::fs::read_to_string(&config).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let escape = std::env::temp_dir().join(format!("orchestra-escape-{}", std::process::id()));
    let attacks = [
        (
            "write a sibling directory",
            format!("echo x > {}/f", outside.display()),
        ),
        ("write /tmp", format!("echo x > {}", escape.display())),
        (
            "append to .git/config",
            format!("echo '[core]' >> {}", config.display()),
        ),
        (
            "git config through git",
            "git config core.hooksPath /tmp/evil".to_string(),
        ),
        (
            "add a hook",
            format!(
                "echo 'exit 0' > {}/hooks/pre-push",
                repo.path.join(".git").display()
            ),
        ),
        (
            "symlink out then write",
            format!("ln -s {} link && echo x > link/f", outside.display()),
        ),
        (
            "rename out of the tree",
            format!("mv inside.txt {}/moved", outside.display()),
        ),
        ("tcp connect", format!("exec 3<>/dev/tcp/127.0.0.1/{port}")),
    ];
    for (name, script) in &attacks {
        let out = launcher(&wt, &tmp, false, script);
        assert!(!out.status.success(), "attack `{name}` succeeded: {script}");
    }
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert!(!escape.exists());
    assert_eq!(std::fs::read_to_string(&config).unwrap(), before);
    assert!(!repo.path.join(".git/hooks/pre-push").exists());

    // A role that allows the network can connect.
    listener.set_nonblocking(false).unwrap();
    let out = launcher(
        &wt,
        &tmp,
        true,
        &format!("exec 3<>/dev/tcp/127.0.0.1/{port}"),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_program_the_sandbox_denies_is_named_with_the_setting_that_allows_it() {
    use std::os::unix::fs::PermissionsExt;
    let repo = TestRepo::new();
    let scratch = repo.scratch();
    let tmp = scratch.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    if !landlock_available(&repo.path, &tmp) {
        return;
    }
    let tools = scratch.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let program = tools.join("run.sh");
    std::fs::write(&program, "#!/bin/sh\necho ran\n").unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = |extra: &[&Path]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_git-orchestra"));
        cmd.arg("__sandbox")
            .arg("--worktree")
            .arg(&repo.path)
            .arg("--tmp")
            .arg(&tmp);
        for p in extra {
            cmd.arg("--read").arg(p);
        }
        cmd.arg("--").arg(&program).output().unwrap()
    };
    let denied = run(&[]);
    let err = String::from_utf8_lossy(&denied.stderr);
    assert_eq!(
        denied.status.code(),
        Some(git_orchestra::agent::sandbox::DENIED_STATUS as i32),
        "{err}"
    );
    assert!(err.contains("sandbox denied"), "{err}");
    assert!(
        err.contains(&format!("[sandbox] read = [\"{}\"]", tools.display())),
        "{err}"
    );
    assert!(err.contains("config.toml"), "{err}");
    // Granted, the same program runs.
    let granted = run(&[&tools]);
    assert!(
        granted.status.success(),
        "{}",
        String::from_utf8_lossy(&granted.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&granted.stdout), "ran\n");
}

#[test]
fn run_command_tells_the_model_which_path_the_sandbox_denied() {
    use crate::agent::attacks::{attack, complete, run};
    use std::os::unix::fs::PermissionsExt;
    let repo = TestRepo::new();
    let tools = repo.scratch().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let program = tools.join("run.sh");
    std::fs::write(&program, "#!/bin/sh\necho ran\n").unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let ran = attack(
        &repo,
        vec![run("c1", program.to_str().unwrap()), complete("c2")],
        &[],
    );
    let results = ran.tool_results();
    let result = results.first().map(String::as_str).unwrap_or_default();
    assert!(result.starts_with("exit status: 126"), "{result}");
    assert!(result.contains("sandbox denied"), "{result}");
    assert!(
        result.contains(&format!("[sandbox] read = [\"{}\"]", tools.display())),
        "{result}"
    );
}

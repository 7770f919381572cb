//! Help as a user reaches it through git: `git orchestra --help` (which git turns into the
//! manual page `git-orchestra(1)`) and `git orchestra help <command>`, with the binary
//! installed into a `bin` directory the way `cargo install` puts it.

use std::path::Path;
use std::process::{Command, Output};

use crate::support::*;

/// Runs `git <args>` in `dir` with `bin` first on PATH and the pager switched off.
fn git_with(bin: &Path, dir: &Path, args: &[&str]) -> Output {
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("PATH", path)
        .env_remove("MANPATH")
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .env("MANWIDTH", "100")
        .output()
        .unwrap()
}

#[test]
fn git_orchestra_help_shows_the_manual_once_the_binary_has_run_from_its_bin_directory() {
    let repo = TestRepo::new();
    let prefix = tempfile::tempdir().unwrap();
    let bin = prefix.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy(
        env!("CARGO_BIN_EXE_git-orchestra"),
        bin.join("git-orchestra"),
    )
    .unwrap();
    assert!(
        Command::new("man").arg("--version").output().is_ok(),
        "this test needs man-db (`apt-get install man-db`)"
    );
    // Any first run (the README's install line runs the demo) writes the pages.
    let out = git_with(&bin, &repo.path, &["orchestra", "--version"]);
    assert!(out.status.success(), "{}", text(&out));
    let man1 = prefix.path().join("share/man/man1");
    assert!(
        man1.join("git-orchestra.1").is_file(),
        "no page in {}",
        man1.display()
    );
    assert!(man1.join("git-orchestra-merge.1").is_file());

    let out = git_with(&bin, &repo.path, &["orchestra", "--help"]);
    assert!(out.status.success(), "{}", text(&out));
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(
        page.contains("Runs several coding agents"),
        "{}",
        text(&out)
    );
    assert!(page.contains("merge"), "{}", text(&out));

    let out = git_with(&bin, &repo.path, &["orchestra", "help", "merge"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Integrates a run's succeeded packets"),
        "{}",
        text(&out)
    );
}

//! The test harness shared by the integration tests (`tests/`) and the benchmarks:
//! hermetic environment, temporary repositories, running the binary.

// A test harness: a failed setup step panics with the reason, as a test assertion would.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::new_without_default)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Once;

mod http;
#[allow(unused_imports)] // not every binary runs a mock server
pub use http::{HttpRequest, read_request};
mod refusing;
#[allow(unused_imports)] // not every binary runs a failing model
pub use refusing::{REFUSAL, refusing_model};

static HERMETIC: Once = Once::new();

/// Makes the whole test process hermetic: no user or system git config, fixed identity and
/// dates, and a private HOME. Called by every helper below before anything runs git.
pub fn hermetic() {
    HERMETIC.call_once(|| {
        let home = std::env::temp_dir().join(format!("orchestra-test-home-{}", std::process::id()));
        std::fs::create_dir_all(&home).unwrap();
        let vars = [
            ("HOME", home.to_str().unwrap()),
            ("XDG_CONFIG_HOME", home.to_str().unwrap()),
            ("GIT_CONFIG_GLOBAL", "/dev/null"),
            ("GIT_CONFIG_NOSYSTEM", "1"),
            ("GIT_AUTHOR_NAME", "Test Author"),
            ("GIT_AUTHOR_EMAIL", "author@example.com"),
            ("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z"),
            ("GIT_COMMITTER_NAME", "Test Committer"),
            ("GIT_COMMITTER_EMAIL", "committer@example.com"),
            ("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z"),
            ("GIT_TERMINAL_PROMPT", "0"),
        ];
        for (k, v) in vars {
            // SAFETY: runs once, and all environment access in this process goes through
            // Rust's std, which serialises it behind its own lock.
            unsafe { std::env::set_var(k, v) };
        }
    });
}

/// Runs git in `dir` and returns trimmed stdout, panicking with git's stderr on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
    hermetic();
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?} failed in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .trim_end()
        .to_string()
}

/// A temporary repository with one commit on `main`; removed on drop.
pub struct TestRepo {
    pub tmp: tempfile::TempDir,
    pub path: PathBuf,
}

impl TestRepo {
    /// Returns a repository whose first commit holds `files` (path, contents).
    pub fn with_files(files: &[(&str, &str)]) -> TestRepo {
        hermetic();
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("repo");
        std::fs::create_dir_all(&path).unwrap();
        git(&path, &["init", "-q", "-b", "main"]);
        let repo = TestRepo { tmp, path };
        for (name, contents) in files {
            repo.write(name, contents);
        }
        git(&repo.path, &["add", "-A"]);
        git(
            &repo.path,
            &["commit", "-q", "--allow-empty", "-m", "initial"],
        );
        repo
    }

    /// Returns a repository with a small Rust-like tree.
    pub fn new() -> TestRepo {
        TestRepo::with_files(&[
            ("README.md", "# sample\n"),
            (
                "src/lib.rs",
                "pub fn add(a: i32, b: i32) -> i32 { a + b }\n",
            ),
            ("src/parser.rs", "pub fn parse() {}\n"),
            ("tests/parser_basic.rs", "#[test] fn t() {}\n"),
        ])
    }

    /// Writes `contents` to `rel` inside the working tree, creating parent directories.
    pub fn write(&self, rel: &str, contents: &str) {
        let p = self.path.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, contents).unwrap();
    }

    /// Runs git in the repository.
    pub fn git(&self, args: &[&str]) -> String {
        git(&self.path, args)
    }

    /// Returns a directory next to the repository for scratch files (plans, worktree roots).
    pub fn scratch(&self) -> PathBuf {
        let p = self.tmp.path().join("scratch");
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    /// Writes the user configuration (`~/.config/git-orchestra/config.toml`) every command
    /// run in this repository or its worktrees reads.
    pub fn user_config(&self, body: &str) {
        let dir = self.tmp.path().join(USER_CONFIG_DIR).join("git-orchestra");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.toml"), body).unwrap();
    }

    /// Returns the user configuration file [`TestRepo::user_config`] writes.
    pub fn user_config_path(&self) -> PathBuf {
        self.tmp
            .path()
            .join(USER_CONFIG_DIR)
            .join("git-orchestra/config.toml")
    }

    /// Trusts the repository's configuration as it is now, through `git orchestra trust`, with
    /// the pin kept in this repository's own user configuration directory.
    pub fn trust(&self) {
        let dir = self.tmp.path().join(USER_CONFIG_DIR).join("git-orchestra");
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("config.toml");
        if !file.is_file() {
            std::fs::write(&file, "").unwrap();
        }
        trust(&self.path);
    }

    /// Lets worker, setup and validation commands write the scratch directory (where tests
    /// keep their marker files) besides their own trees.
    pub fn scratch_writable(&self) {
        self.user_config(&format!(
            "[sandbox]\nwritable = [\"{}\"]\n",
            self.scratch().display()
        ));
    }

    /// Runs worker, setup and validation commands unconfined, to test what the engine itself
    /// holds against a worker the sandbox does not stop.
    pub fn sandbox_off(&self) {
        self.user_config("[sandbox]\nworkers = \"off\"\n");
    }

    /// Writes the plan file `name` (outside the repository) and returns its path.
    pub fn write_plan(&self, name: &str, body: &str) -> PathBuf {
        let p = self.scratch().join(name);
        std::fs::write(&p, body).unwrap();
        p
    }

    /// Runs `git orchestra run <plan> --worker-cmd <worker>` with worktrees under the scratch
    /// directory, plus `extra` arguments.
    pub fn run_plan(&self, plan: &Path, worker: &str, extra: &[&str]) -> Output {
        self.run_plan_with_env(plan, worker, extra, &[])
    }

    /// Does what [`TestRepo::run_plan`] does with `env` set for the run.
    pub fn run_plan_with_env(
        &self,
        plan: &Path,
        worker: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Output {
        let root = self.scratch().join("wt");
        let mut args = vec![
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            worker,
            "--worktree-root",
            root.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        orchestra_with_env(&self.path, &args, env)
    }
}

/// Returns the binary as a command run in `dir`, reading the user configuration a
/// [`TestRepo::user_config`] above `dir` wrote (the shared test home's otherwise).
fn binary(dir: &Path) -> Command {
    hermetic();
    let mut cmd = Command::new(binary_path());
    cmd.current_dir(dir);
    if let Some(xdg) = dir
        .ancestors()
        .map(|a| a.join(USER_CONFIG_DIR))
        .find(|x| x.join("git-orchestra/config.toml").is_file())
    {
        cmd.env("XDG_CONFIG_HOME", xdg);
    }
    cmd
}

/// Where [`TestRepo::user_config`] puts the user configuration, beside the repository.
const USER_CONFIG_DIR: &str = "user-config";

/// Runs the `git-orchestra` binary in `dir` with `args` and returns its output.
pub fn orchestra(dir: &Path, args: &[&str]) -> Output {
    binary(dir).args(args).output().unwrap()
}

/// Runs `git orchestra trust` in `dir`, panicking when it fails: the repository's commands,
/// servers, URLs and key names apply from then on, until one of its files changes.
pub fn trust(dir: &Path) {
    let out = orchestra(dir, &["trust"]);
    assert!(
        out.status.success(),
        "git orchestra trust failed: {}",
        text(&out)
    );
}

/// Returns stdout and stderr of an output as one string, for assertion messages.
pub fn text(out: &Output) -> String {
    format!(
        "status: {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs the binary with extra environment variables.
pub fn orchestra_with_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = binary(dir);
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// Returns a `Command` for the binary, for tests that need to signal it while it runs.
pub fn orchestra_command(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = binary(dir);
    cmd.args(args);
    cmd
}

/// Returns every ref name and target, for "nothing changed" assertions.
pub fn refs(dir: &Path) -> String {
    git(dir, &["for-each-ref", "--format=%(refname) %(objectname)"])
}

/// Returns one `[[packet]]` table (`files`, `deps` and `validation` are TOML array contents).
pub fn packet(id: &str, files: &str, deps: &str, validation: &str) -> String {
    format!(
        "[[packet]]\nid = \"{id}\"\ntitle = \"Packet {id}\"\ndescription = \"does {id}\"\nfiles = [{files}]\ndepends_on = [{deps}]\nvalidation = [{validation}]\n\n"
    )
}

/// Returns the `[[packet]]` tables of `n` independent packets `p0`, `p1`, …, each owning its
/// own `out-p<i>.txt`, with no validation.
pub fn independent_packets(n: usize) -> String {
    (0..n)
        .map(|i| packet(&format!("p{i}"), &format!("\"out-p{i}.txt\""), "", ""))
        .collect()
}

/// Returns `git orchestra status --json` of the newest run in `repo`.
pub fn status_json(repo: &Path) -> serde_json::Value {
    let out = orchestra(repo, &["status", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Returns the id of the newest run in `repo`.
pub fn run_id(repo: &Path) -> String {
    status_json(repo)["run"]["id"].as_str().unwrap().to_string()
}

/// Reads a log of `<packet> <start-ms> <end-ms>` lines written by timing workers.
pub fn intervals(log: &Path) -> Vec<(String, u128, u128)> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| {
            let p: Vec<&str> = l.split(' ').collect();
            (
                p[0].to_string(),
                p[1].parse().unwrap(),
                p[2].parse().unwrap(),
            )
        })
        .collect()
}

/// A stand-in for `ssh [options] host command` (the ssh executor's transport): drops the
/// options, then runs the command with `sh -c` in `$FAKE_HOSTS/<host>`, the host's "home"; a
/// host without a directory there is down.
const FAKE_SSH: &str = r#"#!/bin/sh
while [ $# -gt 0 ]; do
  case "$1" in
    -o|-F|-i|-p|-l) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
host=$1
shift
[ -n "$host" ] && [ -d "$FAKE_HOSTS/$host" ] || { echo "ssh: connect to host $host: Connection refused" >&2; exit 255; }
cd "$FAKE_HOSTS/$host" || exit 255
exec sh -c "$*"
"#;

/// Writes the stand-in ssh to `dir/fake-ssh` and returns its path; the binary reaches hosts
/// through it with `FAKE_HOSTS` and [`path_with_binary`] in its environment.
pub fn fake_ssh(dir: &Path) -> PathBuf {
    let ssh = dir.join("fake-ssh");
    std::fs::write(&ssh, FAKE_SSH).unwrap();
    make_executable(&ssh);
    ssh
}

/// Returns `PATH` with the directory of the `git-orchestra` under test first.
pub fn path_with_binary() -> String {
    let bin = binary_path();
    format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// A `git` on `PATH` that logs every start to a file before running the real one: git
/// process counts as a deterministic proxy for an operation's cost.
pub struct CountingGit {
    /// The `PATH` to run the command under, the logging `git` first.
    pub path: String,
    /// The log: one line of arguments per git start.
    pub log: PathBuf,
}

impl CountingGit {
    /// Writes the logging `git` into `repo`'s scratch directory.
    pub fn new(repo: &TestRepo) -> CountingGit {
        let real = std::env::var("PATH")
            .unwrap_or_default()
            .split(':')
            .map(|dir| Path::new(dir).join("git"))
            .find(|p| p.is_file())
            .expect("git on PATH");
        let bin = repo.scratch().join("counting-bin");
        std::fs::create_dir_all(&bin).unwrap();
        let log = repo.scratch().join("git-starts.log");
        let wrapper = bin.join("git");
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\necho \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
                log.display(),
                real.display()
            ),
        )
        .unwrap();
        make_executable(&wrapper);
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        CountingGit { path, log }
    }

    /// Returns the git command lines started so far.
    pub fn started(&self) -> Vec<String> {
        let started = std::fs::read_to_string(&self.log).unwrap_or_default();
        started.lines().map(str::to_string).collect()
    }
}

/// Returns how many of the git command `lines` run each subcommand (the first word that is
/// not an option, `-C <dir>` and `-c <key=value>` skipped), most frequent first.
pub fn git_by_subcommand(lines: &[String]) -> Vec<(String, usize)> {
    let mut counts = std::collections::BTreeMap::new();
    for line in lines {
        let mut words = line.split(' ');
        let mut sub = "";
        while let Some(w) = words.next() {
            if w == "-C" || w == "-c" {
                words.next();
            } else if !w.starts_with('-') {
                sub = w;
                break;
            }
        }
        *counts.entry(sub.to_string()).or_insert(0) += 1;
    }
    let mut out: Vec<(String, usize)> = counts.into_iter().collect();
    out.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    out
}

/// Makes `path` executable by everyone.
pub fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Starts a `start` run whose clarifier answers only after a long while, waits until it is
/// clarifying and kills its process with SIGKILL; returns the model (kept alive) and run id.
pub fn killed_while_clarifying(repo: &Path) -> (git_orchestra::demo::MockModel, String) {
    let scripts = serde_json::json!([
        {"name": "clarifier", "match": ["# Clarifier"], "replies": [
            {"text": "{\"outcome\": \"clear\"}", "delay_ms": 20000}]}
    ]);
    let model = git_orchestra::demo::MockModel::start(
        git_orchestra::demo::parse_scripts(&scripts.to_string()).unwrap(),
    )
    .unwrap();
    let mut child = orchestra_command(repo, &["start", "--yes", "Slow to clarify"])
        .env("ORCHESTRA_PROVIDER", "openai-compatible")
        .env("ORCHESTRA_BASE_URL", &model.url)
        .env("ORCHESTRA_MODEL", "scripted")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    let id = loop {
        assert!(
            std::time::Instant::now() < deadline,
            "the run never started clarifying"
        );
        let out = orchestra(repo, &["status", "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        if v["planning"]["phase"] == "clarifying" {
            break v["planning"]["id"].as_str().unwrap().to_string();
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    // SAFETY: signals our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    (model, id)
}

/// Returns the path of the `git-orchestra` binary under test: the one Cargo built beside the
/// test binary (`target/<profile>/git-orchestra`, the test binary being in `deps/`).
pub fn binary_path() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the target directory");
    let bin = dir.join("git-orchestra");
    assert!(
        bin.is_file(),
        "{} is missing: build it with `cargo test` (or `cargo build`) first",
        bin.display()
    );
    bin
}

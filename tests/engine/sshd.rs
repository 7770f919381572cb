//! The ssh executor against a real OpenSSH server: two "hosts" are two `sshd`s this test
//! starts on loopback ports (its own host key, a user key it makes, an ssh config file with a
//! Host entry for each). Packets run there, come back as branches and merge; a model key
//! reaches the worker only through ssh's environment; a host killed mid-packet (its sshd and
//! everything under it) leaves the packet to the other host.
//!
//! Needs `sshd` (Debian's `openssh-server`) and `ssh-keygen`; skipped with a note without them,
//! required under `.ci/run` (`ORCHESTRA_E2E_SSHD=1`).

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::*;

const SSHD: &str = "/usr/sbin/sshd";

/// Returns false (after saying why) when the test cannot run here; panics when it must.
fn available() -> bool {
    let have = Path::new(SSHD).is_file()
        && Command::new("ssh-keygen")
            .arg("-?")
            .stderr(Stdio::null())
            .status()
            .is_ok();
    if !have {
        assert!(
            std::env::var_os("ORCHESTRA_E2E_SSHD").is_none(),
            "ORCHESTRA_E2E_SSHD is set but {SSHD} or ssh-keygen is missing (apt-get install openssh-server)"
        );
        eprintln!(
            "skipped: no {SSHD} (apt-get install openssh-server to run the ssh executor tests)"
        );
    }
    have
}

/// One sshd on a loopback port whose sessions run in their own home directory.
struct Host {
    name: String,
    port: u16,
    home: PathBuf,
    sshd: Child,
}

impl Host {
    /// Kills the sshd and every process under it (the sessions and what they run).
    fn kill(&mut self) {
        let pid = self.sshd.id() as i32;
        for child in descendants(pid) {
            // SAFETY: plain kill(2) of processes this test started (sshd's descendants).
            unsafe { libc::kill(child, libc::SIGKILL) };
        }
        let _ = self.sshd.kill();
        let _ = self.sshd.wait();
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Returns every descendant of `pid`, read from /proc.
fn descendants(pid: i32) -> Vec<i32> {
    let mut parents: Vec<(i32, i32)> = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // The parent is the second field after the command, which is in parentheses.
        let Some(after) = stat.rsplit_once(')').map(|(_, rest)| rest.to_string()) else {
            continue;
        };
        if let Some(ppid) = after.split_whitespace().nth(1).and_then(|p| p.parse().ok()) {
            parents.push((child, ppid));
        }
    }
    let mut found = vec![pid];
    let mut i = 0;
    while i < found.len() {
        let p = found[i];
        found.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    found.remove(0);
    found
}

/// Returns true when the test runs as root: then its sshd uses PAM, which lets the key in even
/// when the account has no password (a locked root, as on many fresh machines); another user's
/// sshd cannot use PAM.
fn root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn keygen(path: &Path) {
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Starts host `name`: an sshd that accepts the test's key and runs each session in the
/// host's home with the binary under test first on `PATH`, accepting the forwarded key.
fn start_host(dir: &Path, name: &str) -> Host {
    let home = dir.join(format!("home-{name}"));
    std::fs::create_dir_all(&home).unwrap();
    let port = free_port();
    // The session's shell: into the host's home, PATH with git-orchestra, then the command.
    let session = dir.join(format!("session-{name}"));
    std::fs::write(
        &session,
        format!(
            "#!/bin/sh\ncd '{}' || exit 1\nPATH='{}'\nexport PATH\nORCHESTRA_TEST_HOST={name}\nexport ORCHESTRA_TEST_HOST\nexec sh -c \"$SSH_ORIGINAL_COMMAND\"\n",
            home.display(),
            path_with_binary()
        ),
    )
    .unwrap();
    make_executable(&session);
    let config = dir.join(format!("sshd-{name}.conf"));
    std::fs::write(
        &config,
        format!(
            "ListenAddress 127.0.0.1\nHostKey {dir}/hostkey\nPidFile {dir}/sshd-{name}.pid\nAuthorizedKeysFile {dir}/authorized_keys\nStrictModes no\nPubkeyAuthentication yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM {pam}\nPermitRootLogin yes\nAcceptEnv ORCHESTRA_TEST_API_KEY\nForceCommand {session}\nLogLevel ERROR\n",
            dir = dir.display(),
            session = session.display(),
            pam = if root() { "yes" } else { "no" },
        ),
    )
    .unwrap();
    let _ = std::fs::create_dir_all("/run/sshd");
    let sshd = Command::new(SSHD)
        .arg("-f")
        .arg(&config)
        .args(["-D", "-e", "-p", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join(format!("sshd-{name}.log"))).unwrap())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < until,
            "sshd {name} did not listen: {}",
            std::fs::read_to_string(dir.join(format!("sshd-{name}.log"))).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Host {
        name: name.to_string(),
        port,
        home,
        sshd,
    }
}

/// Writes the ssh config with a Host entry per host and returns the `ssh_command` using it.
fn ssh_config(dir: &Path, hosts: &[&Host]) -> String {
    let user = String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout)
        .unwrap()
        .trim()
        .to_string();
    let mut text = String::new();
    for h in hosts {
        text.push_str(&format!(
            "Host {}\n  HostName 127.0.0.1\n  Port {}\n  User {user}\n  IdentityFile {}/userkey\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n",
            h.name,
            h.port,
            dir.display()
        ));
    }
    let file = dir.join("ssh_config");
    std::fs::write(&file, text).unwrap();
    format!("ssh -F {}", file.display())
}

/// Sets up the keys and two hosts; returns them with the `ssh_command` reaching them.
fn two_hosts(dir: &Path) -> (Host, Host, String) {
    keygen(&dir.join("hostkey"));
    keygen(&dir.join("userkey"));
    std::fs::copy(dir.join("userkey.pub"), dir.join("authorized_keys")).unwrap();
    let h1 = start_host(dir, "h1");
    let h2 = start_host(dir, "h2");
    let ssh = ssh_config(dir, &[&h1, &h2]);
    (h1, h2, ssh)
}

/// A worker that sleeps on host h1 (after leaving `started` in its worktree) and otherwise
/// writes its packet's file and whether the model key reached it. It tells the host by its
/// worktree's path: the session's own variables do not reach a sandboxed worker.
const WORKER: &str = r#"case "$PWD" in */home-h1/*) touch started; sleep 120;; esac; printf '%s %s\n' "$ORCHESTRA_PACKET" "${ORCHESTRA_TEST_API_KEY:+key-forwarded}" > "out-$ORCHESTRA_PACKET.txt""#;

const SECRET: &str = "sk-test-ssh-forwarded-4471";

#[test]
fn packets_run_over_real_ssh_and_a_host_killed_mid_packet_leaves_it_to_the_other() {
    if !available() {
        return;
    }
    let repo = TestRepo::new();
    let dir = repo.scratch().join("ssh");
    std::fs::create_dir_all(&dir).unwrap();
    let (mut h1, h2, ssh) = two_hosts(&dir);
    repo.write(
        ".orchestra/config.toml",
        &format!("[executor.ssh]\nhosts = [\"h1\", \"h2\"]\nslots = 1\nssh_command = \"{ssh}\"\n"),
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "hosts"]);
    repo.trust();
    let plan = repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"Over ssh\"\n\n{}{}",
            packet("a", "\"out-a.txt\"", "", "\"test -f out-a.txt\""),
            packet("b", "\"out-b.txt\"", "", "\"test -f out-b.txt\""),
        ),
    );
    let mut coordinator = orchestra_command(
        &repo.path,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            WORKER,
            "--executor",
            "ssh",
            "--timeout",
            "300",
            "--merge",
        ],
    );
    coordinator
        .env("ORCHESTRA_TEST_API_KEY", SECRET)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = coordinator.spawn().unwrap();
    // Once a packet is at work on h1, h1 dies: its sshd and everything it started.
    let started = wait_for_started(&h1.home);
    assert!(started.exists());
    h1.kill();
    let out = wait_with_timeout(child, Duration::from_secs(240));
    assert!(out.status.success(), "{}", text(&out));
    let v = status_json(&repo.path);
    let run = v["run"]["id"].as_str().unwrap().to_string();
    assert_eq!(v["run"]["state"], "completed", "{}", text(&out));
    for p in ["a", "b"] {
        let branch = format!("orchestra/{run}/{p}");
        let message = repo.git(&["log", "-1", "--format=%B", &branch]);
        assert!(
            message.contains(&format!("Orchestra-Packet: {p}")),
            "{message}"
        );
        // Worked on h2 (h1's try never finished), with the key forwarded by ssh.
        assert_eq!(
            repo.git(&["show", &format!("main:out-{p}.txt")]),
            format!("{p} key-forwarded")
        );
    }
    let hosts: Vec<&str> = v["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["host"].as_str().unwrap())
        .collect();
    assert_eq!(hosts, ["h2", "h2"], "{v}");
    // The dispatch to h1 is journaled, then the retry on h2.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("runs on ssh host h1"), "{stderr}");
    // The key is in no ref, job, event, log or output.
    let h2_repo = h2.home.join(".cache/git-orchestra/remote");
    for place in [&repo.path, &h2_repo] {
        let all = git(place, &["log", "--all", "-p", "--format=%B"]);
        assert!(!all.contains(SECRET));
        for (_, name) in refs(place)
            .lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(r, o)| (o, r))
        {
            if name.starts_with("refs/orchestra/") {
                let blob = git(place, &["cat-file", "-p", name]);
                assert!(!blob.contains(SECRET), "{name}");
            }
        }
    }
    assert!(!text(&out).contains(SECRET));
    assert!(!grep_tree(&repo.path.join(".git/orchestra"), SECRET));
    assert!(!grep_tree(&h2.home, SECRET));
}

/// Waits until a packet's worker on the host left `started` in its worktree.
fn wait_for_started(home: &Path) -> PathBuf {
    let root = home.join(".cache/git-orchestra/remote.worktrees");
    let until = Instant::now() + Duration::from_secs(120);
    loop {
        if let Ok(runs) = std::fs::read_dir(&root) {
            for run in runs.flatten() {
                for packet in std::fs::read_dir(run.path())
                    .into_iter()
                    .flatten()
                    .flatten()
                {
                    let marker = packet.path().join("started");
                    if marker.exists() {
                        return marker;
                    }
                }
            }
        }
        assert!(Instant::now() < until, "no packet started on the host");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn wait_with_timeout(mut child: Child, limit: Duration) -> std::process::Output {
    let until = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > until {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("the run did not end in time: {}", text(&out));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    child.wait_with_output().unwrap()
}

/// Returns true if any file under `dir` contains `needle`.
fn grep_tree(dir: &Path, needle: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let path = e.path();
        if path.is_symlink() {
            false
        } else if path.is_dir() {
            grep_tree(&path, needle)
        } else {
            std::fs::read(&path)
                .map(|b| String::from_utf8_lossy(&b).contains(needle))
                .unwrap_or(false)
        }
    })
}

//! The `ssh` executor: packets run on `[executor.ssh] hosts` through the user's own `ssh`.
//!
//! For each job the coordinator makes sure a bare repository exists on the host
//! (`git init --bare` in `remote_dir`, relative to the remote home unless absolute), pushes the
//! start commit, the job and (for a fix round) the packet branch to it over ssh, runs
//! `git-orchestra packet exec <run> <packet> --remote <remote_dir>` there, and fetches the
//! branch and the events ref back. The host needs `git` and `git-orchestra` on the `PATH` of a
//! non-interactive ssh command; nothing is installed. Model keys travel only as environment
//! variables forwarded by ssh (`SendEnv`, which the host's sshd must `AcceptEnv`). A host that
//! fails before it answers is not used again in this process, and the job goes to another.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use orchestra_core::config::SshConfig;
use orchestra_core::engine::remote::{
    Dispatch, Dispatched, Executor, base_ref, events_ref, job_ref, parse_lines, result_of,
};
use orchestra_sys::exec::process::{self, Spec};

/// Packets one host runs at once unless `slots` says.
pub const DEFAULT_SLOTS: usize = 2;
/// Where the bare repository lives on a host unless `remote_dir` says.
pub const DEFAULT_REMOTE_DIR: &str = ".cache/git-orchestra/remote";

/// Runs packets on ssh hosts.
pub struct SshExecutor {
    hosts: Vec<String>,
    slots: usize,
    ssh: Vec<String>,
    remote_dir: String,
    state: Mutex<Vec<HostState>>,
    freed: Condvar,
    /// A private directory for ssh's connection sockets, removed with the executor.
    control_dir: Option<PathBuf>,
}

#[derive(Default)]
struct HostState {
    busy: usize,
    /// Why the host stopped being used, once it failed.
    dead: Option<String>,
}

/// The transport failed on a host before it answered.
struct HostFailure(String);

impl SshExecutor {
    /// Returns the executor `[executor.ssh]` describes, or what is wrong with it.
    pub fn new(config: &SshConfig) -> Result<SshExecutor, String> {
        let hosts = config.hosts.clone().unwrap_or_default();
        if hosts.is_empty() {
            return Err(
                "the ssh executor has no hosts; set `[executor.ssh] hosts = [\"host1\", …]` in .orchestra/config.toml"
                    .into(),
            );
        }
        if let Some(bad) = hosts
            .iter()
            .find(|h| h.is_empty() || h.starts_with('-') || h.contains(char::is_whitespace))
        {
            return Err(format!(
                "`[executor.ssh] hosts` has `{bad}`, which is no host name; use names as ssh knows them (`build1`, `user@build1`)"
            ));
        }
        let command = config.ssh_command.as_deref().unwrap_or("ssh");
        let ssh = split_words(command)
            .map_err(|e| format!("`[executor.ssh] ssh_command` = `{command}`: {e}"))?;
        if ssh.is_empty() {
            return Err("`[executor.ssh] ssh_command` is empty; leave it out to use `ssh`".into());
        }
        let slots = config.slots.unwrap_or(DEFAULT_SLOTS);
        if slots == 0 {
            return Err("`[executor.ssh] slots` is 0; a host needs at least 1 slot".into());
        }
        Ok(SshExecutor {
            state: Mutex::new(hosts.iter().map(|_| HostState::default()).collect()),
            hosts,
            slots,
            ssh,
            remote_dir: config
                .remote_dir
                .clone()
                .unwrap_or_else(|| DEFAULT_REMOTE_DIR.to_string()),
            freed: Condvar::new(),
            control_dir: control_dir(),
        })
    }

    /// Returns the ssh command line up to the host: the configured words, then options that
    /// keep it from prompting and notice a dead host, then the keys to forward by name.
    fn ssh_words(&self) -> Vec<String> {
        let mut words = self.ssh.clone();
        for option in [
            "BatchMode=yes",
            "ConnectTimeout=20",
            "ServerAliveInterval=5",
            "ServerAliveCountMax=3",
        ] {
            words.extend(["-o".to_string(), option.to_string()]);
        }
        // One connection per host carries this process's transfers and commands (unless the
        // user's own options say otherwise: ssh takes the first value it is given).
        if let Some(dir) = &self.control_dir {
            words.extend([
                "-o".to_string(),
                "ControlMaster=auto".to_string(),
                "-o".to_string(),
                format!("ControlPath={}/%C", dir.display()),
                "-o".to_string(),
                "ControlPersist=30".to_string(),
            ]);
        }
        for (name, _) in orchestra_sys::exec::secret_env::stashed() {
            words.extend(["-o".to_string(), format!("SendEnv={name}")]);
        }
        words
    }

    /// Takes a slot on the least busy host that is alive and not in `excluded`; waits while
    /// all are busy; `None` when no host is left or the run stops.
    fn acquire(&self, stop: &AtomicBool, excluded: &[usize]) -> Option<usize> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            let alive: Vec<usize> = (0..self.hosts.len())
                .filter(|i| state[*i].dead.is_none() && !excluded.contains(i))
                .collect();
            if alive.is_empty() || stop.load(Ordering::SeqCst) {
                return None;
            }
            if let Some(&i) = alive
                .iter()
                .filter(|i| state[**i].busy < self.slots)
                .min_by_key(|i| state[**i].busy)
            {
                state[i].busy += 1;
                return Some(i);
            }
            state = self
                .freed
                .wait_timeout(state, Duration::from_millis(200))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    fn release(&self, host: usize, failure: Option<&str>) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state[host].busy -= 1;
        if let Some(reason) = failure {
            state[host].dead.get_or_insert_with(|| reason.to_string());
        }
        self.freed.notify_all();
    }

    /// Runs `command` on `host` with the user's ssh, logging to `log`.
    fn ssh_run(
        &self,
        host: &str,
        command: &str,
        d: &Dispatch<'_>,
        log: &Path,
        timeout: Duration,
    ) -> Result<process::Outcome, HostFailure> {
        let mut words = self.ssh_words();
        words.extend([host.to_string(), command.to_string()]);
        let line = words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ");
        // The keys reach ssh's environment only, and ssh forwards them by name (SendEnv).
        // This is the user's own ssh, not a sandboxed command: it gets the whole environment
        // (its agent socket, its options), less the keys the engine withholds.
        let withheld = orchestra_sys::exec::secret_env::withheld();
        let mut env: Vec<(String, String)> = std::env::vars()
            .filter(|(n, _)| !withheld.contains(n))
            .collect();
        env.extend(orchestra_sys::exec::secret_env::stashed().iter().cloned());
        let spec = Spec {
            command: &line,
            dir: &d.repo.toplevel,
            env: &env,
            log,
            timeout,
            confine: None,
        };
        process::run(&spec, d.stop, &mut |_| {}).map_err(|e| HostFailure(e.to_string()))
    }

    /// Does the job on host `i`: repository there, push, `packet exec`, fetch.
    fn on_host(
        &self,
        i: usize,
        d: &Dispatch<'_>,
    ) -> Result<Vec<orchestra_core::engine::remote::Line>, HostFailure> {
        let host = &self.hosts[i];
        let job = d.job;
        let id = &job.packet.id;
        let log = |step: &str| {
            d.log_dir.join(format!(
                "ssh-{host}-{}-{}-{step}.log",
                job.attempt, job.round
            ))
        };
        // The host's worktrees have packet branches checked out; the coordinator's push of a
        // fix round's branch must still land (the worktree is reset to it before any work).
        let dir = quote(&self.remote_dir);
        let init = format!(
            "git init --bare --quiet {dir} && git -C {dir} config receive.denyCurrentBranch ignore"
        );
        let out = self.ssh_run(host, &init, d, &log("init"), Duration::from_secs(120))?;
        if !out.success() {
            return Err(HostFailure(format!(
                "`{init}` failed ({}): {}",
                out.describe(Duration::from_secs(120)),
                out.tail.trim()
            )));
        }
        let git = d.repo.git().over_ssh(
            &self
                .ssh_words()
                .iter()
                .map(|w| quote(w))
                .collect::<Vec<_>>()
                .join(" "),
        );
        let remote = format!("{host}:{}", self.remote_dir);
        let text = serde_json::to_vec(job).map_err(|e| HostFailure(e.to_string()))?;
        let (jobs, base, events) = (
            job_ref(&job.run, id),
            base_ref(&job.run, id),
            events_ref(&job.run, id),
        );
        let branch = format!("refs/heads/{}", job.branch);
        git.write_blob_ref(&jobs, &text)
            .and_then(|_| git.set_ref(&base, &job.start))
            .map_err(|e| HostFailure(format!("cannot write the job: {e}")))?;
        let mut specs = vec![format!("+{jobs}:{jobs}"), format!("+{base}:{base}")];
        if d.with_branch {
            specs.push(format!("+{branch}:{branch}"));
        }
        git.push(&remote, &specs)
            .map_err(|e| HostFailure(format!("cannot push the job: {e}")))?;
        let exec = format!(
            "git-orchestra packet exec {} {} --remote {}",
            quote(&job.run),
            quote(id),
            quote(&self.remote_dir)
        );
        let out = self.ssh_run(host, &exec, d, &log("exec"), d.timeout)?;
        // Whatever the exit, a result in the events ref is the answer; the branch is there
        // whenever a result is (the job points it at its start before any work).
        git.fetch_refs(
            &remote,
            &[format!("+{events}:{events}"), format!("+{branch}:{branch}")],
        )
        .map_err(|e| {
            HostFailure(format!(
                "`packet exec` ended ({}) without sending its branch and events back: {}\n{e}",
                out.describe(d.timeout),
                out.tail.trim()
            ))
        })?;
        let lines = git
            .read_blob_ref(&events)
            .map_err(|e| HostFailure(e.to_string()))?
            .map(|t| parse_lines(&t))
            .unwrap_or_default();
        if result_of(&lines, job.attempt, job.round).is_none() {
            return Err(HostFailure(format!(
                "`packet exec` ended ({}) without a result: {}",
                out.describe(d.timeout),
                out.tail.trim()
            )));
        }
        Ok(lines)
    }
}

impl Drop for SshExecutor {
    fn drop(&mut self) {
        // Masters still persisting stop on their own; no new connection can find them.
        if let Some(dir) = &self.control_dir {
            let _ = fs_err::remove_dir_all(dir);
        }
    }
}

/// Makes a directory only this user can enter for ssh's control sockets, short enough for a
/// socket path; `None` (no sharing of connections) when there is no such place.
fn control_dir() -> Option<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    let dir = Path::new("/tmp").join(format!("orchestra-ssh-{}-{n}", std::process::id()));
    std::fs::DirBuilder::new().mode(0o700).create(&dir).ok()?;
    Some(dir)
}

impl Executor for SshExecutor {
    fn kind(&self) -> &'static str {
        "ssh"
    }

    fn places(&self) -> Vec<String> {
        self.hosts
            .iter()
            .map(|h| {
                format!(
                    "{h} ({} slot{})",
                    self.slots,
                    if self.slots == 1 { "" } else { "s" }
                )
            })
            .collect()
    }

    fn dispatch(&self, d: &Dispatch<'_>) -> Result<Dispatched, String> {
        if let Some(lines) = orchestra_core::engine::remote::earlier_result(d) {
            return Ok(Dispatched {
                host: "an earlier dispatch".into(),
                lines,
            });
        }
        let mut excluded = Vec::new();
        let mut reasons = Vec::new();
        while let Some(i) = self.acquire(d.stop, &excluded) {
            let host = &self.hosts[i];
            if !(d.on_host)(host) {
                self.release(i, None);
                return Err("the journal could not be written".into());
            }
            match self.on_host(i, d) {
                Ok(lines) => {
                    self.release(i, None);
                    return Ok(Dispatched {
                        host: host.clone(),
                        lines,
                    });
                }
                Err(HostFailure(reason)) => {
                    let stopped = d.stop.load(Ordering::SeqCst);
                    // A stop is no fault of the host's.
                    self.release(i, (!stopped).then_some(reason.as_str()));
                    tracing::warn!(%host, %reason, "host failed; trying another");
                    reasons.push(format!("{host}: {}", first_line(&reason)));
                    excluded.push(i);
                    if stopped {
                        break;
                    }
                }
            }
        }
        if reasons.is_empty() {
            let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            reasons = (0..self.hosts.len())
                .filter_map(|i| {
                    state[i]
                        .dead
                        .as_ref()
                        .map(|r| format!("{}: {}", self.hosts[i], first_line(r)))
                })
                .collect();
        }
        Err(format!("every host failed ({})", reasons.join("; ")))
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

/// Returns `word` quoted for a POSIX shell (as is when it needs no quoting).
pub fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@,+%".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Splits `text` into words as a POSIX shell would (quotes and backslashes, no expansions).
pub fn split_words(text: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                words.extend(word.take());
            }
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => return Err("a single quote is not closed".into()),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => w.push(c),
                            Some(c) => {
                                w.push('\\');
                                w.push(c);
                            }
                            None => return Err("a double quote is not closed".into()),
                        },
                        Some(c) => w.push(c),
                        None => return Err("a double quote is not closed".into()),
                    }
                }
            }
            '\\' => match chars.next() {
                Some(c) => word.get_or_insert_with(String::new).push(c),
                None => return Err("it ends with a lone backslash".into()),
            },
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_command_splits_like_a_shell_and_quotes_back() {
        assert_eq!(
            split_words(r#"ssh -F "/tmp/my config" -i '/k ey' -p 2222 a\ b"#).unwrap(),
            [
                "ssh",
                "-F",
                "/tmp/my config",
                "-i",
                "/k ey",
                "-p",
                "2222",
                "a b"
            ]
        );
        assert_eq!(split_words("  ").unwrap(), Vec::<String>::new());
        assert!(split_words("ssh 'open").is_err());
        assert!(split_words("ssh \"open").is_err());
        for w in ["plain", "with space", "it's", "", "$HOME", "a;b"] {
            let back = split_words(&quote(w)).unwrap();
            assert_eq!(back, [w], "{w}");
        }
    }

    #[test]
    fn bad_configurations_are_refused_with_the_key_named() {
        let err = |c: SshConfig| SshExecutor::new(&c).err().unwrap();
        assert!(err(SshConfig::default()).contains("hosts"));
        let hosts = Some(vec!["h1".to_string()]);
        assert!(
            err(SshConfig {
                hosts: hosts.clone(),
                slots: Some(0),
                ..Default::default()
            })
            .contains("slots")
        );
        assert!(
            err(SshConfig {
                hosts: hosts.clone(),
                ssh_command: Some("ssh -F 'x".into()),
                ..Default::default()
            })
            .contains("ssh_command")
        );
        assert!(
            err(SshConfig {
                hosts: Some(vec!["-oProxyCommand=x".into()]),
                ..Default::default()
            })
            .contains("no host name")
        );
        let ok = SshExecutor::new(&SshConfig {
            hosts,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(ok.places(), ["h1 (2 slots)"]);
    }
}

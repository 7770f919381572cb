//! What a sandboxed command may read: its worktree and temporary directory, the repository's
//! git directory, the system and the toolchains — not the secrets people keep under their home
//! directory or in `/etc`.
//!
//! Landlock only allows (a rule grants access beneath a path; nothing can take it back below),
//! so a denied path is carved out by granting its siblings instead: a readable directory that
//! holds a denied path is replaced by its entries, recursively, skipping the denied ones. The
//! home directory thus becomes every entry of `$HOME` but `.ssh`, `.aws`, …, and `.config`
//! every entry but `gh`, `gcloud`, … Entries that are symbolic links get no rule of their own:
//! what they point at is readable only where another rule allows it.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The system's read-only trees: programs, libraries, configuration, devices and the process
/// file systems (reading another process's `environ` or memory is refused by the kernel to a
/// process without capabilities in another Landlock domain).
const SYSTEM: &[&str] = &[
    "/bin", "/sbin", "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix", "/gnu",
    "/snap", "/proc", "/sys", "/dev",
];

/// Where name resolution's configuration lives on systems that link `/etc/resolv.conf` there;
/// readable only with the network.
const RESOLVER: &[&str] = &["/run/systemd/resolve", "/run/resolvconf"];

/// Credentials under the home directory, never readable unless configured.
const HOME_SECRETS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".password-store",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    ".vault-token",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".config/gh",
    ".config/hub",
    ".config/gcloud",
    ".config/git/credentials",
    ".config/git-orchestra",
    ".local/share/keyrings",
    ".terraform.d/credentials.tfrc.json",
    // Agent CLIs' logins (the CLIs we start get a home of their own and their keys by name).
    ".claude.json",
    ".claude/.credentials.json",
    ".codex/auth.json",
    ".gemini/oauth_creds.json",
    ".gemini/google_accounts.json",
    ".gemini/mcp-oauth-tokens.json",
    ".qwen/oauth_creds.json",
    ".local/share/opencode/auth.json",
    ".config/github-copilot",
    // Shell and REPL histories: secrets typed on command lines.
    ".bash_history",
    ".zsh_history",
    ".zhistory",
    ".histfile",
    ".sh_history",
    ".local/share/fish/fish_history",
    ".python_history",
    ".node_repl_history",
    ".lesshst",
    ".psql_history",
    ".mysql_history",
    ".sqlite_history",
    ".rediscli_history",
    ".irb_history",
    ".local/share/atuin",
];

/// Credentials of the system, readable by root even without capabilities (it owns them).
const SYSTEM_SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssl/private",
];

/// Returns every path the command may read, each to be granted with everything beneath it.
///
/// `extra` are paths the engine or the configuration adds (the repository's git directory,
/// an agent CLI's installation prefix, `[sandbox] read`); each is carved like the defaults (a
/// granted `~/.local` keeps `~/.local/share/keyrings` out), but one that is itself a denied
/// path or lies beneath one is granted as it is, so configuring `~/.docker` makes it readable. `home` is `$HOME`; `path` the command's `PATH`, whose
/// absolute entries are granted so the tools it names can run. `user_home` is the engine's
/// `$HOME` when the command was given another (an agent CLI's private home): its credentials
/// are denied too.
pub(super) fn readable(
    extra: &[PathBuf],
    home: Option<&Path>,
    user_home: Option<&Path>,
    path: Option<&str>,
    network: bool,
) -> Vec<PathBuf> {
    let home = home.filter(|h| h.is_absolute() && h.parent().is_some());
    let mut denied: Vec<PathBuf> = SYSTEM_SECRETS.iter().map(PathBuf::from).collect();
    // The user's home by `$HOME`, by the engine's `$HOME` and by the password database: a
    // `PATH` or toolchain entry may lie in the latter when `$HOME` was changed.
    for base in home
        .into_iter()
        .chain(user_home.filter(|h| h.is_absolute() && h.parent().is_some()))
        .map(Path::to_path_buf)
        .chain(account_home())
    {
        denied.extend(HOME_SECRETS.iter().map(|s| base.join(s)));
    }
    denied.retain(|d| std::fs::symlink_metadata(d).is_ok());
    let mut roots: Vec<PathBuf> = SYSTEM.iter().map(PathBuf::from).collect();
    if network {
        roots.extend(RESOLVER.iter().map(PathBuf::from));
    }
    roots.extend(home.map(Path::to_path_buf));
    for var in ["CARGO_HOME", "RUSTUP_HOME"] {
        roots.extend(std::env::var_os(var).map(PathBuf::from));
    }
    if let Some(path) = path {
        roots.extend(
            std::env::split_paths(path).filter(|p| p.is_absolute() && p.parent().is_some()),
        );
    }
    let mut out = Vec::new();
    for root in roots {
        carve(&root, &denied, &mut out, true);
    }
    for path in extra {
        if denied.iter().any(|d| path.starts_with(d)) {
            out.push(path.clone());
        } else {
            carve(path, &denied, &mut out, true);
        }
    }
    out
}

/// Returns the home directory the password database gives this process's user.
fn account_home() -> Option<PathBuf> {
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: getpwuid_r fills `pwd` with pointers into `buf`, which outlives their use below;
    // `found` is null when there is no entry.
    unsafe {
        let mut pwd: libc::passwd = std::mem::zeroed();
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        let rc = libc::getpwuid_r(
            libc::getuid(),
            &mut pwd,
            buf.as_mut_ptr(),
            buf.len(),
            &mut found,
        );
        if rc != 0 || found.is_null() || pwd.pw_dir.is_null() {
            return None;
        }
        let dir = std::ffi::CStr::from_ptr(pwd.pw_dir);
        let dir = PathBuf::from(std::ffi::OsStr::from_bytes(dir.to_bytes()));
        (dir.is_absolute() && dir.parent().is_some()).then_some(dir)
    }
}

/// Adds `path` to `out`, or, when a denied path lies beneath it, its entries (recursively)
/// except the denied ones. `top` is true for the starting paths, whose symbolic links are
/// followed (`/bin` may link to `/usr/bin`); entries met on the way down are not.
fn carve(path: &Path, denied: &[PathBuf], out: &mut Vec<PathBuf>, top: bool) {
    if denied.iter().any(|d| d == path) || is_host_key(path) {
        return;
    }
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if meta.file_type().is_symlink() && !top {
        return;
    }
    let holds_denied = denied.iter().any(|d| d != path && d.starts_with(path))
        || path == Path::new("/etc/ssh")
        || path == Path::new("/etc");
    if !holds_denied || !path.is_dir() {
        out.push(path.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    for entry in entries.flatten() {
        carve(&entry.path(), denied, out, false);
    }
}

/// Returns true if and only if `path` is an SSH host's private key (`/etc/ssh/ssh_host_*_key`).
fn is_host_key(path: &Path) -> bool {
    path.parent() == Some(Path::new("/etc/ssh"))
        && path.file_name().is_some_and(|n| {
            let n = n.to_string_lossy();
            n.starts_with("ssh_host_") && !n.ends_with(".pub")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_home_directory_is_granted_around_its_secrets() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path();
        for dir in [".ssh", ".cargo/bin", ".config/gh", ".config/nvim", "src"] {
            std::fs::create_dir_all(home.join(dir)).unwrap();
        }
        std::fs::write(home.join(".netrc"), "machine x").unwrap();
        std::fs::write(home.join(".cargo/credentials.toml"), "t").unwrap();
        std::fs::write(home.join(".bashrc"), "").unwrap();
        let granted = readable(&[], Some(home), None, None, false);
        let under_home: Vec<String> = granted
            .iter()
            .filter_map(|p| p.strip_prefix(home).ok())
            .map(|p| p.display().to_string())
            .collect();
        for allowed in [".bashrc", "src", ".cargo/bin", ".config/nvim"] {
            assert!(under_home.iter().any(|p| p == allowed), "{under_home:?}");
        }
        for denied in [
            ".ssh",
            ".netrc",
            ".config/gh",
            ".cargo/credentials.toml",
            "",
        ] {
            assert!(!under_home.iter().any(|p| p == denied), "{under_home:?}");
        }
        // Configured paths are granted as given, a denied one included...
        let granted = readable(&[home.join(".ssh")], Some(home), None, None, false);
        assert!(granted.contains(&home.join(".ssh")));
        // ...but one holding a denied path is granted around it.
        let granted = readable(&[home.join(".cargo")], Some(home), None, None, false);
        assert!(granted.contains(&home.join(".cargo/bin")), "{granted:?}");
        assert!(!granted.contains(&home.join(".cargo")), "{granted:?}");
        assert!(
            !granted.contains(&home.join(".cargo/credentials.toml")),
            "{granted:?}"
        );
        // A home of `/` grants nothing by itself.
        assert!(
            !readable(&[], Some(Path::new("/")), None, None, false).contains(&PathBuf::from("/"))
        );
    }

    #[test]
    fn the_accounts_own_home_keeps_its_credentials_when_home_points_elsewhere() {
        let Some(account) = account_home() else {
            eprintln!("skipped: no password database entry for this user");
            return;
        };
        if !account.join(".ssh").exists() {
            eprintln!("skipped: {} has no .ssh", account.display());
            return;
        }
        let elsewhere = tempfile::tempdir().unwrap();
        // A PATH entry naming the account's home, while $HOME points somewhere else.
        let granted = readable(
            &[],
            Some(elsewhere.path()),
            None,
            Some(&account.display().to_string()),
            false,
        );
        assert!(!granted.contains(&account), "{granted:?}");
        assert!(!granted.contains(&account.join(".ssh")), "{granted:?}");
    }

    #[test]
    fn system_secrets_are_carved_out_of_etc() {
        let granted = readable(&[], None, None, None, false);
        assert!(!granted.contains(&PathBuf::from("/etc")));
        assert!(!granted.contains(&PathBuf::from("/etc/shadow")));
        if Path::new("/etc/passwd").exists() {
            assert!(granted.contains(&PathBuf::from("/etc/passwd")));
        }
        assert!(granted.contains(&PathBuf::from("/usr")));
        assert!(is_host_key(Path::new("/etc/ssh/ssh_host_ed25519_key")));
        assert!(!is_host_key(Path::new("/etc/ssh/ssh_host_ed25519_key.pub")));
    }
}

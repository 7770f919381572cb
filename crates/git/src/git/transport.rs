//! Moving a packet between repositories for executors that run it elsewhere: named refs
//! fetched and pushed (over the user's `ssh` when the remote is a host), blobs kept as refs'
//! contents, and the scratch repository a host works in.

use std::path::Path;

use super::{Git, GitError};

impl Git {
    /// Returns this runner reaching ssh remotes with `ssh_command` (git reads it as a shell
    /// word list, like `GIT_SSH_COMMAND`).
    pub fn over_ssh(&self, ssh_command: &str) -> Git {
        self.with_env("GIT_SSH_COMMAND", ssh_command)
    }

    /// Returns this runner sending `token` with its HTTP(S) requests, the way a CI runner's
    /// repository token is used (`Authorization: basic x-access-token:<token>`), through
    /// git's environment configuration: nothing is written to a configuration file, and no
    /// other process gets it.
    pub fn with_http_token(&self, token: &str) -> Git {
        let header = format!(
            "AUTHORIZATION: basic {}",
            base64(format!("x-access-token:{token}").as_bytes())
        );
        self.with_env("GIT_CONFIG_COUNT", "1")
            .with_env("GIT_CONFIG_KEY_0", "http.extraHeader")
            .with_env("GIT_CONFIG_VALUE_0", header)
    }

    /// Deletes every ref under each of `prefixes` (`refs/orchestra/jobs/<run>/`, …) and
    /// returns how many there were.
    pub fn delete_refs_under(&self, prefixes: &[String]) -> Result<usize, GitError> {
        let mut args = vec![
            "for-each-ref".to_string(),
            "--format=%(refname)".to_string(),
        ];
        args.extend(prefixes.iter().cloned());
        let listed = self.run(args)?;
        let names: Vec<&str> = listed.lines().filter(|l| !l.is_empty()).collect();
        if names.is_empty() {
            return Ok(0);
        }
        let script: String = names.iter().map(|n| format!("delete {n}\n")).collect();
        self.writing()
            .run_with_stdin(["update-ref", "--stdin"], Some(script.as_bytes()))?;
        Ok(names.len())
    }

    /// Fetches `refspecs` (`+src:dst`, ref names only) from `remote`, without tags and
    /// without writing `FETCH_HEAD`.
    pub fn fetch_refs(&self, remote: &str, refspecs: &[String]) -> Result<(), GitError> {
        let mut args = vec![
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            remote,
        ];
        args.extend(refspecs.iter().map(String::as_str));
        self.run(args).map(drop)
    }

    /// Returns the refs of `remote` whose names match `pattern` (as `git ls-remote` takes it),
    /// as `(name, id)` pairs.
    pub fn remote_refs(
        &self,
        remote: &str,
        pattern: &str,
    ) -> Result<Vec<(String, String)>, GitError> {
        let listed = self.run(["ls-remote", "--refs", remote, pattern])?;
        Ok(listed
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .map(|(id, name)| (name.to_string(), id.to_string()))
            .collect())
    }

    /// Returns the object ids `remote` (a name or a URL) advertises for its refs, tags peeled
    /// too: what it has, in its own words rather than this repository's remote-tracking refs.
    pub fn advertised_ids(&self, remote: &str) -> Result<Vec<String>, GitError> {
        let listed = self.run(["ls-remote", "--", remote])?;
        let mut ids: Vec<String> = listed
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .map(|(id, _)| id.to_string())
            .collect();
        ids.sort();
        ids.dedup();
        Ok(ids)
    }

    /// Writes `data` as a blob and points `refname` at it, whatever it held before.
    pub fn write_blob_ref(&self, refname: &str, data: &[u8]) -> Result<String, GitError> {
        let id = self.hash_object("blob", data, true)?;
        self.set_ref(refname, &id)?;
        Ok(id)
    }

    /// Returns the contents of the blob `refname` points at, or `None` when there is no such ref.
    pub fn read_blob_ref(&self, refname: &str) -> Result<Option<Vec<u8>>, GitError> {
        if self.resolve(refname)?.is_none() {
            return Ok(None);
        }
        let out = self.finish(["cat-file", "blob", refname], None)?;
        if !out.success() {
            return Err(out.into_error());
        }
        Ok(Some(out.stdout))
    }

    /// Points `refname` at `id`, whatever it held before (refs only the engine writes).
    pub fn set_ref(&self, refname: &str, id: &str) -> Result<(), GitError> {
        self.writing()
            .run(["update-ref", "-m", "git-orchestra", refname, id])
            .map(drop)
    }

    /// Returns true if and only if the object `id` is in this repository.
    pub fn has_object(&self, id: &str) -> Result<bool, GitError> {
        Ok(self
            .finish(["cat-file", "-e", &format!("{id}^{{commit}}")], None)?
            .success())
    }
}

/// Creates a bare repository at `dir` when there is none (`git init --bare`, which leaves an
/// existing repository as it is) that accepts pushes to the branches its worktrees have
/// checked out: a packet's worktree is reset to its branch before any work there.
pub fn init_bare(dir: &Path) -> Result<(), GitError> {
    fs_err::create_dir_all(dir).map_err(|source| GitError::Spawn { source })?;
    let git = Git::new(dir);
    git.run(["init", "--bare", "--quiet"])?;
    git.run(["config", "receive.denyCurrentBranch", "ignore"])
        .map(drop)
}

/// Returns `bytes` in standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod base64_tests {
    #[test]
    fn a_token_reaches_git_as_an_extra_header_of_its_environment_only() {
        let dir = tempfile::tempdir().unwrap();
        let git = super::Git::new(dir.path());
        let header = git
            .with_http_token("abc")
            .run(["config", "--get", "http.extraHeader"])
            .unwrap();
        assert_eq!(header, "AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46YWJj");
        assert!(git.run(["config", "--get", "http.extraHeader"]).is_err());
    }

    #[test]
    fn encodes_like_rfc_4648() {
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("x-access-token:abc", "eC1hY2Nlc3MtdG9rZW46YWJj"),
        ] {
            assert_eq!(super::base64(plain.as_bytes()), coded);
        }
    }
}

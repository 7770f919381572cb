//! Which forge a remote lives on, where its API is, and the token to use: read from the
//! remote's URL and the `orchestra.forge.*` / `orchestra.pr.*` git configuration.
//!
//! github.com is recognised from the URL alone; GitHub Enterprise, Gitea and Forgejo hosts
//! need `orchestra.forge.type` (and `orchestra.forge.apiUrl` when the API is not at the usual
//! place). The token never comes from configuration, only from the environment or `gh`.

use std::process::{Command, Stdio};

use serde::Serialize;

use super::http::Token;
use super::{Forge, ForgeError, GitHub, GitLab, Gitea};
use orchestra_git::git::Git;

/// The forges we speak to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ForgeKind {
    GitHub,
    /// Gitea and its fork Forgejo share one API.
    Gitea,
    GitLab,
}

impl ForgeKind {
    /// Returns the name used in configuration and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            ForgeKind::GitHub => "github",
            ForgeKind::Gitea => "gitea",
            ForgeKind::GitLab => "gitlab",
        }
    }

    /// Returns the kind named `s` (`github`, `gitea`, `forgejo`), or `None`.
    pub fn parse(s: &str) -> Option<ForgeKind> {
        match s.trim().to_ascii_lowercase().as_str() {
            "github" => Some(ForgeKind::GitHub),
            "gitea" | "forgejo" => Some(ForgeKind::Gitea),
            "gitlab" => Some(ForgeKind::GitLab),
            _ => None,
        }
    }
}

/// A remote URL taken apart: the host (none for local paths) and the repository path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteUrl {
    pub host: Option<String>,
    /// The path without leading slash and without `.git`, e.g. `owner/name`.
    pub path: String,
}

/// Parses `https://host/owner/name(.git)`, `ssh://git@host:22/owner/name`,
/// `git@host:owner/name.git`, `file:///srv/x.git` and plain paths.
pub fn parse_remote_url(url: &str) -> Option<RemoteUrl> {
    let url = url.trim();
    if url.is_empty() {
        return None;
    }
    let clean = |p: &str| {
        p.trim_matches('/')
            .trim_end_matches(".git")
            .trim_end_matches('/')
            .to_string()
    };
    if let Some((scheme, rest)) = url.split_once("://") {
        if scheme == "file" {
            return Some(RemoteUrl {
                host: None,
                path: clean(rest),
            });
        }
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let host = authority.rsplit('@').next().unwrap_or(authority);
        let host = host.split(':').next().unwrap_or(host);
        return Some(RemoteUrl {
            host: Some(host.to_ascii_lowercase()),
            path: clean(path),
        });
    }
    // scp-like `user@host:path`; a colon after a slash means a local path.
    if let Some((left, path)) = url.split_once(':')
        && !left.contains('/')
        && !left.is_empty()
    {
        let host = left.rsplit('@').next().unwrap_or(left);
        return Some(RemoteUrl {
            host: Some(host.to_ascii_lowercase()),
            path: clean(path),
        });
    }
    Some(RemoteUrl {
        host: None,
        path: clean(url),
    })
}

/// Forge and pull request settings of one repository.
#[derive(Debug, Clone, Default)]
pub struct ForgeSettings {
    /// The remote branches are pushed to (`orchestra.forge.remote`, default `origin`).
    pub remote: String,
    /// Its URL, when the remote exists.
    pub remote_url: Option<String>,
    /// `orchestra.forge.type`.
    pub kind: Option<ForgeKind>,
    /// `orchestra.forge.apiUrl`.
    pub api_url: Option<String>,
    /// `orchestra.forge.repo` (`owner/name`), overriding the remote URL's path.
    pub repo: Option<String>,
    /// `orchestra.forge.tokenEnv`: the name of a variable holding the token.
    pub token_env: Option<String>,
    /// `orchestra.forge.writesPerMinute`.
    pub writes_per_minute: Option<usize>,
    /// `orchestra.pr.labels` (comma-separated, repeatable), added to new pull requests.
    pub labels: Vec<String>,
    /// `orchestra.pr.reviewers` (comma-separated, repeatable), asked to review new ones.
    pub reviewers: Vec<String>,
    /// `orchestra.pr.deleteMerged` (default true): delete a merged lower branch of a stack
    /// from the remote once the pull requests above it are retargeted.
    pub delete_merged: bool,
}

impl ForgeSettings {
    /// Reads the settings from git configuration; `remote` overrides `orchestra.forge.remote`.
    pub fn load(git: &Git, remote: Option<&str>) -> Result<ForgeSettings, ForgeError> {
        let listing = git.config_matching(r"^orchestra\.(forge|pr)\.")?;
        let mut s = ForgeSettings {
            remote: "origin".into(),
            delete_merged: true,
            ..ForgeSettings::default()
        };
        let list = |v: &str| -> Vec<String> {
            v.split(',')
                .map(str::trim)
                .filter(|x| !x.is_empty())
                .map(str::to_string)
                .collect()
        };
        for (key, value) in &listing {
            let value = value.as_str();
            match key.as_str() {
                "orchestra.forge.remote" => s.remote = value.to_string(),
                "orchestra.forge.type" => {
                    s.kind = Some(ForgeKind::parse(value).ok_or_else(|| {
                        ForgeError::Config(format!(
                            "orchestra.forge.type is `{value}`; use github, gitea, forgejo or gitlab"
                        ))
                    })?)
                }
                "orchestra.forge.apiurl" => s.api_url = Some(value.to_string()),
                "orchestra.forge.repo" => s.repo = Some(value.to_string()),
                "orchestra.forge.tokenenv" => s.token_env = Some(value.to_string()),
                "orchestra.forge.writesperminute" => {
                    s.writes_per_minute = Some(value.parse().map_err(|_| {
                        ForgeError::Config(format!(
                            "orchestra.forge.writesPerMinute is `{value}`; use a whole number"
                        ))
                    })?)
                }
                "orchestra.pr.labels" => s.labels.extend(list(value)),
                "orchestra.pr.reviewers" => s.reviewers.extend(list(value)),
                "orchestra.pr.deletemerged" => {
                    s.delete_merged = !matches!(value, "false" | "no" | "off" | "0")
                }
                _ => {}
            }
        }
        if let Some(r) = remote {
            s.remote = r.to_string();
        }
        s.remote_url = git.remote_url(&s.remote);
        Ok(s)
    }

    /// Returns the forge kind, API base URL, owner and repository name, or why they cannot be
    /// told.
    pub fn resolve(&self) -> Result<(ForgeKind, String, String, String), String> {
        let Some(url) = &self.remote_url else {
            return Err(format!("there is no remote `{}`", self.remote));
        };
        let parsed = parse_remote_url(url);
        let host = parsed.as_ref().and_then(|p| p.host.clone());
        let kind = match (self.kind, host.as_deref()) {
            (Some(k), _) => k,
            (None, Some("github.com")) => ForgeKind::GitHub,
            (None, Some(h)) if h == "gitlab.com" || h.starts_with("gitlab.") => ForgeKind::GitLab,
            (None, Some(h))
                if h.contains("gitea") || h.contains("forgejo") || h == "codeberg.org" =>
            {
                ForgeKind::Gitea
            }
            _ => {
                return Err(format!(
                    "cannot tell which forge hosts `{url}`; set orchestra.forge.type (github, gitea, gitlab) and orchestra.forge.apiUrl"
                ));
            }
        };
        let api = match (&self.api_url, kind, host.as_deref()) {
            (Some(a), _, _) => a.clone(),
            (None, ForgeKind::GitHub, Some("github.com")) => super::github::GITHUB_API.into(),
            (None, ForgeKind::GitHub, Some(h)) => format!("https://{h}/api/v3"),
            (None, ForgeKind::Gitea, Some(h)) => format!("https://{h}/api/v1"),
            (None, ForgeKind::GitLab, Some(h)) => format!("https://{h}/api/v4"),
            (None, _, None) => {
                return Err(format!(
                    "the remote `{url}` has no host; set orchestra.forge.apiUrl"
                ));
            }
        };
        let path = match &self.repo {
            Some(r) => r.clone(),
            None => parsed.map(|p| p.path).unwrap_or_default(),
        };
        let mut parts = path.rsplitn(2, '/');
        let name = parts.next().unwrap_or_default().to_string();
        let namespace = parts.next().unwrap_or_default();
        // GitLab projects sit in nested groups; GitHub and Gitea have one owner.
        let owner = if kind == ForgeKind::GitLab {
            namespace.to_string()
        } else {
            namespace.rsplit('/').next().unwrap_or_default().to_string()
        };
        if owner.is_empty() || name.is_empty() {
            return Err(format!(
                "cannot read owner/name from `{url}`; set orchestra.forge.repo = <owner>/<name>"
            ));
        }
        Ok((kind, api, owner, name))
    }
}

/// Returns the token for `kind`: the variable named by `orchestra.forge.tokenEnv`, else
/// `GH_TOKEN`, `GITHUB_TOKEN` (GitHub), `GITEA_TOKEN`, `FORGEJO_TOKEN` (Gitea) or
/// `GITLAB_TOKEN` (GitLab), else for
/// GitHub `gh auth token` when gh is installed and logged in.
pub fn find_token(kind: ForgeKind, settings: &ForgeSettings) -> Option<Token> {
    let from_env = |name: &str| {
        orchestra_sys::exec::secret_env::var(name)
            .filter(|v| !v.trim().is_empty())
            .map(Token::new)
    };
    if let Some(name) = &settings.token_env {
        return from_env(name);
    }
    let names: &[&str] = match kind {
        ForgeKind::GitHub => &["GH_TOKEN", "GITHUB_TOKEN"],
        ForgeKind::Gitea => &["GITEA_TOKEN", "FORGEJO_TOKEN"],
        ForgeKind::GitLab => &["GITLAB_TOKEN"],
    };
    if let Some(t) = names.iter().find_map(|n| from_env(n)) {
        return Some(t);
    }
    if kind != ForgeKind::GitHub {
        return None;
    }
    let host = settings
        .remote_url
        .as_deref()
        .and_then(parse_remote_url)
        .and_then(|u| u.host)
        .unwrap_or_else(|| "github.com".into());
    let out = Command::new("gh")
        .args(["auth", "token", "--hostname", &host])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| Token::new(text))
}

/// Returns the forge the settings describe with its token, or why there is none (no remote,
/// unknown host, no token) so the caller can fall back to local pull request files.
pub fn open_forge(settings: &ForgeSettings) -> Result<Box<dyn Forge>, String> {
    let (kind, api, owner, name) = settings.resolve()?;
    let Some(token) = find_token(kind, settings) else {
        return Err(match kind {
            ForgeKind::GitHub => {
                "no GitHub token: set GH_TOKEN or GITHUB_TOKEN, or log in with `gh auth login`"
                    .to_string()
            }
            ForgeKind::Gitea => "no Gitea token: set GITEA_TOKEN".to_string(),
            ForgeKind::GitLab => "no GitLab token: set GITLAB_TOKEN".to_string(),
        });
    };
    let w = settings.writes_per_minute;
    Ok(match kind {
        ForgeKind::GitHub => Box::new(GitHub::new(&api, &owner, &name, Some(token), w)),
        ForgeKind::Gitea => Box::new(Gitea::new(&api, &owner, &name, Some(token), w)),
        ForgeKind::GitLab => Box::new(GitLab::new(
            &api,
            &format!("{owner}/{name}"),
            Some(token),
            w,
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(url: &str) -> (Option<String>, String) {
        let u = parse_remote_url(url).unwrap();
        (u.host, u.path)
    }

    #[test]
    fn parses_the_usual_remote_urls() {
        let gh = (Some("github.com".to_string()), "acme/widgets".to_string());
        assert_eq!(parsed("https://github.com/acme/widgets.git"), gh);
        assert_eq!(parsed("https://user:pw@GitHub.com/acme/widgets/"), gh);
        assert_eq!(parsed("git@github.com:acme/widgets.git"), gh);
        assert_eq!(parsed("ssh://git@github.com:22/acme/widgets"), gh);
        assert_eq!(parsed("file:///srv/git/x.git"), (None, "srv/git/x".into()));
        assert_eq!(parsed("/srv/git/x.git"), (None, "srv/git/x".into()));
        assert_eq!(parsed("./a:b/x"), (None, "./a:b/x".into()));
    }

    #[test]
    fn resolves_github_from_the_url_and_others_from_configuration() {
        let mut s = ForgeSettings {
            remote: "origin".into(),
            remote_url: Some("git@github.com:acme/widgets.git".into()),
            ..Default::default()
        };
        assert_eq!(
            s.resolve().unwrap(),
            (
                ForgeKind::GitHub,
                "https://api.github.com".into(),
                "acme".into(),
                "widgets".into()
            )
        );
        s.remote_url = Some("https://git.corp.example/team/app.git".into());
        assert!(s.resolve().unwrap_err().contains("orchestra.forge.type"));
        s.kind = Some(ForgeKind::GitHub);
        assert_eq!(s.resolve().unwrap().1, "https://git.corp.example/api/v3");
        s.kind = Some(ForgeKind::Gitea);
        assert_eq!(s.resolve().unwrap().1, "https://git.corp.example/api/v1");
        s.kind = None;
        s.remote_url = Some("git@gitlab.com:group/sub/app.git".into());
        let (kind, api, owner, name) = s.resolve().unwrap();
        assert_eq!(
            (kind, api.as_str(), owner.as_str(), name.as_str()),
            (
                ForgeKind::GitLab,
                "https://gitlab.com/api/v4",
                "group/sub",
                "app"
            )
        );
        s.kind = Some(ForgeKind::Gitea);
        s.remote_url = Some("file:///tmp/bare.git".into());
        assert!(s.resolve().unwrap_err().contains("apiUrl"));
        s.api_url = Some("http://127.0.0.1:9/api/v1".into());
        s.repo = Some("acme/widgets".into());
        assert_eq!(s.resolve().unwrap().2, "acme");
    }
}

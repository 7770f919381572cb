//! Resolves which provider profile a role's agent uses, from the repository configuration and
//! the environment.
//!
//! Order for role `r`: `[roles.r] profile`, then the role file's `profile`, then a profile
//! named `default`, then the quick profile given entirely by environment variables
//! (`ORCHESTRA_PROVIDER`, `ORCHESTRA_BASE_URL`, `ORCHESTRA_MODEL`, `ORCHESTRA_API_KEY_ENV`).
//! That quick profile also wins over a profile only the repository's configuration defines.
//! A role file's `profile` that names no configured profile (e.g. Claude's `sonnet`) is read
//! as a model name for the default profile rather than an error.

use std::time::Duration;

use orchestra_core::config::{ProfileConfig, RepoConfig};
use orchestra_core::llm::{LlmError, Profile, Provider};

use super::role::{Role, RoleError};

/// The name under which the environment-only profile appears.
pub const ENV_PROFILE: &str = "env";

/// Why no usable profile could be resolved.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProfileError {
    #[error(
        "no model profile for role `{role}`: add [profiles.default] (provider, model, …) to .orchestra/config.toml, or set ORCHESTRA_PROVIDER and ORCHESTRA_MODEL (and ORCHESTRA_BASE_URL for openai-compatible)"
    )]
    None { role: String },
    #[error(
        "profile `{name}` (asked for by {by}) is not defined in .orchestra/config.toml; defined: {defined}"
    )]
    Undefined {
        name: String,
        by: String,
        defined: String,
    },
    #[error("profile `{name}`: {message}")]
    Invalid { name: String, message: String },
}

/// Why a role's models cannot be set up: the role, its profile or its model client.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Role(#[from] RoleError),
    #[error(transparent)]
    Profile(#[from] ProfileError),
    #[error(transparent)]
    Model(#[from] LlmError),
    /// A role asked to read and then answer stopped without an answer.
    #[error("the {role} did not answer: {reason}")]
    Unanswered { role: String, reason: String },
}

/// Returns the process environment's value of `key`, treating an empty value as unset.
pub fn env(key: &str) -> Option<String> {
    std::env::var(key).ok().filter(|v| !v.is_empty())
}

/// Checks that `role` resolves to a profile chain whose primary profile's key variable is
/// set, so a misconfiguration is one clear error before anything starts.
pub fn check(config: &RepoConfig, role: &Role) -> Result<(), SetupError> {
    let chain = resolve(config, role, &env)?;
    if let Some(primary) = chain.first() {
        primary.api_key()?;
    }
    Ok(())
}

/// Returns the profile role `role` uses and its fallback chain (first is primary), the
/// primary asking for `[roles.<role>] model` when that is set.
///
/// `env` looks up environment variables, so tests can pass their own. This is the one place
/// a role's profile and model are decided: `[best_of] arms`, `[routing] workers` and eval
/// arms change them through the configuration (`RepoConfig::with_worker`).
pub fn resolve(
    config: &RepoConfig,
    role: &Role,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<Profile>, ProfileError> {
    let mut chain = resolve_profiles(config, role, env)?;
    let Some(model) = config
        .roles
        .get(&role.name)
        .and_then(|r| r.model.as_deref())
    else {
        return Ok(chain);
    };
    if let Some(primary) = chain.first_mut() {
        if model.trim().is_empty() {
            return Err(ProfileError::Invalid {
                name: primary.name.clone(),
                message: format!(
                    "the model asked for by [roles.{}] (or a `model:` arm or worker) is empty: name a model, e.g. `model = \"gpt-4.1-mini\"`, or leave it out",
                    role.name
                ),
            });
        }
        primary.model = model.trim().to_string();
    }
    Ok(chain)
}

/// Returns the profile chain role `role` uses, each profile with its own model.
fn resolve_profiles(
    config: &RepoConfig,
    role: &Role,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<Profile>, ProfileError> {
    let role_cfg = config.roles.get(&role.name);
    let mut model_override = None;
    let start = if let Some(name) = role_cfg.and_then(|r| r.profile.clone()) {
        Some((name, format!("[roles.{}]", role.name)))
    } else if let Some(p) = &role.profile {
        if config.profiles.contains_key(p) {
            Some((p.clone(), format!("role `{}`", role.name)))
        } else {
            model_override = Some(p.clone());
            None
        }
    } else {
        None
    };
    let (first, by) = match start {
        Some(s) => s,
        None if config.profiles.contains_key("default") => ("default".into(), "default".into()),
        None => {
            let mut p = from_env(env)?.ok_or_else(|| ProfileError::None {
                role: role.name.clone(),
            })?;
            if let Some(m) = model_override.filter(|_| env("ORCHESTRA_MODEL").is_none()) {
                p.model = m;
            }
            return Ok(vec![p]);
        }
    };
    // The environment's quick profile is the user's word on where keys go: it wins over a
    // profile only the repository's configuration defines.
    if config
        .profiles
        .get(&first)
        .is_some_and(|p| p.from_repository)
        && let Some(p) = from_env(env)?
    {
        return Ok(vec![p]);
    }
    let mut chain = Vec::new();
    let mut next = Some((first, by));
    while let Some((name, by)) = next.take() {
        if chain.iter().any(|p: &Profile| p.name == name) || chain.len() > 8 {
            break;
        }
        let cfg = config
            .profiles
            .get(&name)
            .ok_or_else(|| ProfileError::Undefined {
                name: name.clone(),
                by: by.clone(),
                defined: config
                    .profiles
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        let mut profile = build(&name, cfg)?;
        if chain.is_empty()
            && let Some(f) = role_cfg.and_then(|r| r.fallback.clone())
        {
            profile.fallback = Some(f);
        }
        next = profile
            .fallback
            .clone()
            .map(|f| (f, format!("the fallback of profile `{name}`")));
        chain.push(profile);
    }
    Ok(chain)
}

/// Builds a profile from its configuration table.
pub fn build(name: &str, cfg: &ProfileConfig) -> Result<Profile, ProfileError> {
    let invalid = |message: String| ProfileError::Invalid {
        name: name.to_string(),
        message,
    };
    let provider = Provider::parse(&cfg.provider).map_err(invalid)?;
    let base_url = match (&cfg.base_url, provider.default_base_url()) {
        (Some(u), _) => u.clone(),
        (None, Some(d)) => d.to_string(),
        (None, None) => {
            return Err(invalid(
                "provider `openai-compatible` needs `base_url` (e.g. http://127.0.0.1:8080/v1)"
                    .into(),
            ));
        }
    };
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(invalid(format!(
            "`base_url` must start with http:// or https://, got `{base_url}`"
        )));
    }
    if cfg.model.trim().is_empty() {
        return Err(invalid("`model` is empty".into()));
    }
    let mut p = Profile::new(name, provider, &cfg.model, &base_url);
    if let Some(k) = &cfg.api_key_env {
        p.api_key_env = Some(k.clone()).filter(|k| !k.is_empty());
    }
    p.temperature = cfg.temperature;
    if let Some(m) = cfg.max_tokens {
        p.max_tokens = m;
    }
    if let Some(t) = cfg.timeout_secs {
        p.timeout = Duration::from_secs(t.max(1));
    }
    if let Some(t) = cfg.first_token_timeout_secs {
        p.first_token_timeout = Duration::from_secs(t.max(1));
    }
    if let Some(t) = cfg.first_token_secs_per_1k_tokens {
        p.first_token_per_1k = Duration::from_secs(t);
    }
    if let Some(t) = cfg.outage_retry_secs {
        p.outage_retry = Duration::from_secs(t);
    }
    if let Some(c) = cfg.concurrency {
        p.concurrency = c.max(1);
    }
    if let Some(c) = cfg.context_tokens {
        p.context_tokens = c;
    }
    p.fallback = cfg.fallback.clone();
    Ok(p)
}

/// Returns the quick profile given by `ORCHESTRA_*` variables, `None` when they are not set.
pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Profile>, ProfileError> {
    let Some(provider) = env("ORCHESTRA_PROVIDER") else {
        return Ok(None);
    };
    let cfg = ProfileConfig {
        provider,
        model: env("ORCHESTRA_MODEL").unwrap_or_default(),
        base_url: env("ORCHESTRA_BASE_URL"),
        api_key_env: env("ORCHESTRA_API_KEY_ENV"),
        concurrency: match env("ORCHESTRA_CONCURRENCY") {
            Some(v) => Some(v.trim().parse().map_err(|_| ProfileError::Invalid {
                name: ENV_PROFILE.to_string(),
                message: format!("ORCHESTRA_CONCURRENCY must be a whole number, got `{v}`"),
            })?),
            None => None,
        },
        max_tokens: match env("ORCHESTRA_MAX_TOKENS") {
            Some(v) => Some(v.trim().parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                ProfileError::Invalid {
                    name: ENV_PROFILE.to_string(),
                    message: format!(
                        "ORCHESTRA_MAX_TOKENS must be a whole number above 0, got `{v}`"
                    ),
                }
            })?),
            None => None,
        },
        ..Default::default()
    };
    let mut cfg = cfg;
    if cfg.model.is_empty() {
        // A local server serves whatever it loaded; the name is informative only.
        cfg.model = "default".into();
    }
    build(ENV_PROFILE, &cfg).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::role::Roles;

    fn config(text: &str) -> RepoConfig {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn roles_map_to_profiles_with_fallback_chains() {
        let cfg = config(
            "[profiles.default]\nprovider = \"openai\"\nmodel = \"gpt-4o-mini\"\nfallback = \"local\"\n\
             [profiles.local]\nprovider = \"openai-compatible\"\nmodel = \"qwen\"\nbase_url = \"http://127.0.0.1:18080/v1\"\n\
             [profiles.claude]\nprovider = \"anthropic\"\nmodel = \"claude-x\"\ntimeout_secs = 9\n\
             [roles.reviewer]\nprofile = \"claude\"\nfallback = \"local\"\n",
        );
        let roles = Roles::builtin().unwrap();
        let none = |_: &str| None;
        let chain = resolve(&cfg, roles.get("coder").unwrap(), &none).unwrap();
        let names: Vec<_> = chain.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["default", "local"]);
        assert_eq!(chain[0].api_key_env.as_deref(), Some("OPENAI_API_KEY"));
        assert_eq!(chain[1].api_key_env, None);
        let chain = resolve(&cfg, roles.get("reviewer").unwrap(), &none).unwrap();
        assert_eq!(chain[0].timeout, Duration::from_secs(9));
        assert_eq!(chain[1].name, "local");
    }

    #[test]
    fn a_roles_model_changes_its_primary_profiles_model_only() {
        let cfg = config(
            "[profiles.default]\nprovider = \"openai\"\nmodel = \"gpt-4o-mini\"\nfallback = \"local\"\n\
             [profiles.local]\nprovider = \"openai-compatible\"\nmodel = \"qwen\"\nbase_url = \"http://127.0.0.1:18080/v1\"\n",
        );
        let roles = Roles::builtin().unwrap();
        let coder = roles.get("coder").unwrap();
        let none = |_: &str| None;
        let chain = resolve(&cfg.with_worker("coder", "model:big"), coder, &none).unwrap();
        let models: Vec<_> = chain
            .iter()
            .map(|p| (p.name.as_str(), p.model.as_str()))
            .collect();
        assert_eq!(models, [("default", "big"), ("local", "qwen")]);
        assert_eq!(chain[0].label(), "openai:big");
        // Another role keeps the profile's model; a profile entry changes the profile.
        let reviewer = resolve(
            &cfg.with_worker("coder", "model:big"),
            roles.get("reviewer").unwrap(),
            &none,
        )
        .unwrap();
        assert_eq!(reviewer[0].model, "gpt-4o-mini");
        let chain = resolve(&cfg.with_worker("coder", "local"), coder, &none).unwrap();
        assert_eq!(
            (chain[0].name.as_str(), chain[0].model.as_str()),
            ("local", "qwen")
        );
        let err = resolve(&cfg.with_worker("coder", "model: "), coder, &none).unwrap_err();
        assert!(err.to_string().contains("[roles.coder]"), "{err}");
    }

    #[test]
    fn the_environment_gives_a_quick_profile_and_errors_say_what_to_set() {
        let roles = Roles::builtin().unwrap();
        let coder = roles.get("coder").unwrap();
        let err = resolve(&RepoConfig::default(), coder, &|_| None).unwrap_err();
        assert!(err.to_string().contains("ORCHESTRA_PROVIDER"), "{err}");
        let env = |k: &str| match k {
            "ORCHESTRA_PROVIDER" => Some("openai-compatible".to_string()),
            "ORCHESTRA_BASE_URL" => Some("http://127.0.0.1:9/v1".to_string()),
            _ => None,
        };
        let chain = resolve(&RepoConfig::default(), coder, &env).unwrap();
        assert_eq!(
            (chain[0].name.as_str(), chain[0].base_url.as_str()),
            ("env", "http://127.0.0.1:9/v1")
        );
        // A cap on each answer's length, as a profile's `max_tokens`.
        let capped = |k: &str| match k {
            "ORCHESTRA_MAX_TOKENS" => Some(" 512 ".to_string()),
            _ => env(k),
        };
        let chain = resolve(&RepoConfig::default(), coder, &capped).unwrap();
        assert_eq!(chain[0].max_tokens, 512);
        let zero = |k: &str| match k {
            "ORCHESTRA_MAX_TOKENS" => Some("0".to_string()),
            _ => env(k),
        };
        let err = resolve(&RepoConfig::default(), coder, &zero).unwrap_err();
        assert!(err.to_string().contains("ORCHESTRA_MAX_TOKENS"), "{err}");
        let no_url = |k: &str| (k == "ORCHESTRA_PROVIDER").then(|| "openai-compatible".to_string());
        let err = resolve(&RepoConfig::default(), coder, &no_url).unwrap_err();
        assert!(err.to_string().contains("base_url"), "{err}");
        let cfg = config("[roles.coder]\nprofile = \"nope\"\n");
        let err = resolve(&cfg, coder, &env).unwrap_err();
        assert!(
            err.to_string().contains("nope") && err.to_string().contains("[roles.coder]"),
            "{err}"
        );
    }
}

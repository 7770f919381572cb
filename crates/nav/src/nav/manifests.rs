//! The project files module resolution needs besides the sources: the crate name each Cargo
//! manifest gives its library (`use wire::frame` names the crate `wire` of the workspace) and
//! the path mappings of `tsconfig.json` / `jsconfig.json` (`baseUrl`, `paths`).
//!
//! They are read from the worktree when the module tables are rebuilt; a manifest that is
//! missing or does not parse is skipped (a Rust library then goes by its directory's name).

use std::path::Path;

use super::index::FileEntry;
use super::modules::dir_of;

/// The manifests of one worktree.
#[derive(Debug, Default, Clone)]
pub struct Manifests {
    /// (crate name as `use` writes it, the crate's source directory).
    pub crates: Vec<(String, String)>,
    pub ts_configs: Vec<TsConfig>,
}

/// The module resolution settings of one `tsconfig.json` or `jsconfig.json`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TsConfig {
    /// The directory holding the file (empty at the root); it applies to files beneath.
    pub dir: String,
    /// `compilerOptions.baseUrl`, relative to the repository root.
    pub base_url: Option<String>,
    /// `compilerOptions.paths`: pattern (`@core/*`) → targets (`src/core/*`), relative to
    /// `base_url` (or to `paths_dir` without one).
    pub paths: Vec<(String, Vec<String>)>,
    /// The directory of the file that sets `paths` (this one's or one it `extends`).
    pub paths_dir: String,
}

/// Deepest chain of `extends` followed from one tsconfig file.
const MAX_EXTENDS: usize = 8;

fn join(dir: &str, rest: &str) -> String {
    let rest = rest.trim_start_matches("./");
    if dir.is_empty() {
        rest.to_string()
    } else if rest.is_empty() || rest == "." {
        dir.to_string()
    } else {
        format!("{dir}/{rest}")
    }
}

impl Manifests {
    /// Reads the manifests next to the sources of `files` in the worktree at `root`.
    pub fn read(root: &Path, files: &[FileEntry]) -> Manifests {
        let read = |rel: &str| std::fs::read_to_string(root.join(rel)).ok();
        let mut out = Manifests::default();
        for f in files {
            if f.path == "src/lib.rs" || f.path.ends_with("/src/lib.rs") {
                let src = dir_of(&f.path);
                let package = dir_of(src);
                let manifest = read(&join(package, "Cargo.toml"));
                let fallback = package.rsplit('/').next().unwrap_or(package);
                let name = manifest
                    .as_deref()
                    .and_then(crate_name)
                    .unwrap_or_else(|| fallback.to_string());
                if !name.is_empty() {
                    out.crates.push((name.replace('-', "_"), src.to_string()));
                }
            }
        }
        let mut dirs: Vec<&str> = files.iter().map(|f| dir_of(&f.path)).collect();
        dirs.sort_unstable();
        dirs.dedup();
        // A tsconfig sits at the root or at a package's root, above its sources.
        let mut seen: Vec<String> = Vec::new();
        for d in dirs {
            let mut cur = Some(d);
            while let Some(c) = cur {
                if seen.iter().any(|s| s == c) {
                    break;
                }
                seen.push(c.to_string());
                for name in ["tsconfig.json", "jsconfig.json"] {
                    if let Some(text) = read(&join(c, name))
                        && let Some(cfg) = ts_config_extended(c, &text, &read)
                    {
                        out.ts_configs.push(cfg);
                        break;
                    }
                }
                cur = (!c.is_empty()).then(|| dir_of(c));
            }
        }
        // Nearest configuration first when several apply.
        out.ts_configs
            .sort_by_key(|c| std::cmp::Reverse(c.dir.len()));
        out
    }
}

/// Returns the library's crate name a Cargo manifest declares (`[lib] name`, else
/// `[package] name`), as written; `None` for a workspace-only manifest.
pub fn crate_name(manifest: &str) -> Option<String> {
    let v: toml::Table = toml::from_str(manifest).ok()?;
    let get = |table: &str| {
        v.get(table)
            .and_then(|t| t.get("name"))
            .and_then(toml::Value::as_str)
            .map(str::to_string)
    };
    get("lib").or_else(|| get("package"))
}

/// Returns the module settings of the tsconfig file in directory `dir`, completed by the
/// files it `extends` (relative paths, read through `read`): a setting it leaves out is the
/// nearest base's, as TypeScript reads them. `None` when none of them has any.
pub fn ts_config_extended(
    dir: &str,
    text: &str,
    read: &dyn Fn(&str) -> Option<String>,
) -> Option<TsConfig> {
    let mut cfg = TsConfig {
        dir: dir.to_string(),
        ..TsConfig::default()
    };
    let mut here = (dir.to_string(), text.to_string());
    for _ in 0..MAX_EXTENDS {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&strip_jsonc(&here.1)) else {
            break;
        };
        if let Some(own) = ts_config_value(&here.0, &v) {
            if cfg.base_url.is_none() {
                cfg.base_url = own.base_url;
            }
            if cfg.paths.is_empty() && !own.paths.is_empty() {
                cfg.paths = own.paths;
                cfg.paths_dir = own.paths_dir;
            }
        }
        // A package's configuration (`@tsconfig/node18`) lies outside the repository.
        let Some(ext) = v.get("extends").and_then(serde_json::Value::as_str) else {
            break;
        };
        if !ext.starts_with('.') {
            break;
        }
        let Some(mut path) = super::modules::normalise(&join(&here.0, ext)) else {
            break;
        };
        if !path.ends_with(".json") {
            path.push_str(".json");
        }
        let Some(text) = read(&path) else { break };
        here = (dir_of(&path).to_string(), text);
    }
    (cfg.base_url.is_some() || !cfg.paths.is_empty()).then_some(cfg)
}

/// Returns the module settings of the parsed tsconfig file `v` in directory `dir`.
fn ts_config_value(dir: &str, v: &serde_json::Value) -> Option<TsConfig> {
    let opts = v.get("compilerOptions")?;
    let base_url = opts
        .get("baseUrl")
        .and_then(serde_json::Value::as_str)
        .map(|b| join(dir, b));
    let paths: Vec<(String, Vec<String>)> = opts
        .get("paths")
        .and_then(serde_json::Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, t)| {
                    let targets = t
                        .as_array()
                        .map(|a| {
                            a.iter()
                                .filter_map(|x| x.as_str().map(str::to_string))
                                .collect()
                        })
                        .unwrap_or_default();
                    (k.clone(), targets)
                })
                .collect()
        })
        .unwrap_or_default();
    (base_url.is_some() || !paths.is_empty()).then(|| TsConfig {
        dir: dir.to_string(),
        base_url,
        paths,
        paths_dir: dir.to_string(),
    })
}

/// Removes the comments and trailing commas JSON-with-comments allows (tsconfig files use
/// them), leaving strings alone.
fn strip_jsonc(text: &str) -> String {
    let b = text.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut i = 0;
    let mut in_str = false;
    while i < b.len() {
        let c = b[i];
        if in_str {
            out.push(c);
            if c == b'\\' && i + 1 < b.len() {
                out.push(b[i + 1]);
                i += 1;
            } else if c == b'"' {
                in_str = false;
            }
        } else if c == b'"' {
            in_str = true;
            out.push(c);
        } else if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
            continue;
        } else if c == b',' {
            let next = b[i + 1..].iter().find(|x| !x.is_ascii_whitespace());
            if !matches!(next, Some(b'}') | Some(b']')) {
                out.push(c);
            }
        } else {
            out.push(c);
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl TsConfig {
    /// Returns the paths (relative to the repository root, without extension probing) a
    /// non-relative specifier may name under this configuration, best first.
    pub fn candidates(&self, spec: &str) -> Vec<String> {
        let base = self.base_url.as_deref().unwrap_or(&self.paths_dir);
        let mut out = Vec::new();
        for (pattern, targets) in &self.paths {
            let star = match pattern.split_once('*') {
                Some((pre, post)) => spec
                    .strip_prefix(pre)
                    .and_then(|r| r.strip_suffix(post))
                    .map(str::to_string),
                None => (pattern == spec).then(String::new),
            };
            if let Some(star) = star {
                out.extend(targets.iter().map(|t| join(base, &t.replace('*', &star))));
            }
        }
        if let Some(b) = &self.base_url {
            out.push(join(b, spec));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crate_names_come_from_the_lib_or_package_table() {
        assert_eq!(
            crate_name("[package]\nname = \"net-kit\"\n").as_deref(),
            Some("net-kit")
        );
        assert_eq!(
            crate_name("[package]\nname = \"a\"\n[lib]\nname = \"b\"\n").as_deref(),
            Some("b")
        );
        assert_eq!(crate_name("[workspace]\nmembers = []\n"), None);
    }

    #[test]
    fn tsconfig_paths_map_specifiers_with_comments_and_trailing_commas() {
        let text = r#"{
          // paths of the app
          "compilerOptions": {
            "baseUrl": "./", /* the root */
            "paths": { "@core/*": ["src/core/*"], "@app": ["src/app/index.ts"], },
          },
          "$schema": "https://json.schemastore.org/tsconfig",
        }"#;
        let cfg = ts_config_extended("web", text, &|_| None).unwrap();
        assert_eq!(cfg.base_url.as_deref(), Some("web"));
        assert_eq!(
            cfg.candidates("@core/stream"),
            vec!["web/src/core/stream", "web/@core/stream"]
        );
        assert_eq!(cfg.candidates("@app")[0], "web/src/app/index.ts");
        assert_eq!(cfg.candidates("src/x"), vec!["web/src/x"]);
    }
}

//! What a Python project's configuration declares: its task runners (tox, nox, hatch, pdm and
//! poe scripts) and the test, lint and format commands its tool configuration implies
//! (pytest, ruff, black, mypy), each as a fresh clone can run it.
//!
//! Tool configuration is honoured rather than overridden: mypy with `files` configured is run
//! bare, ruff with `fix = true` is run with `--no-fix`, and pytest in a `src/` layout is
//! marked as needing the package installed (a fresh clone cannot import it otherwise).

use super::detect::{Found, Purpose, Tier};

/// The project's Python configuration files, as read.
pub struct Config {
    pyproject: toml::Table,
    pyproject_text: String,
    setup_cfg: String,
    ruff_toml: Option<toml::Table>,
}

impl Config {
    /// Reads the configuration files through `read` (a file name at the top of the worktree
    /// to its text).
    pub fn read(read: &dyn Fn(&str) -> Option<String>) -> Config {
        let pyproject_text = read("pyproject.toml").unwrap_or_default();
        Config {
            pyproject: pyproject_text.parse().unwrap_or_default(),
            pyproject_text,
            setup_cfg: read("setup.cfg").unwrap_or_default(),
            ruff_toml: read("ruff.toml")
                .or_else(|| read(".ruff.toml"))
                .map(|t| t.parse().unwrap_or_default()),
        }
    }

    /// Returns the value at the dotted `path` of `pyproject.toml`.
    fn get(&self, path: &str) -> Option<&toml::Value> {
        let mut parts = path.split('.');
        let mut value = self.pyproject.get(parts.next()?)?;
        for p in parts {
            value = value.get(p)?;
        }
        Some(value)
    }

    /// Returns true if and only if the project's ruff configuration sets `fix = true`, which
    /// makes a plain `ruff check` rewrite files.
    pub fn ruff_fixes(&self) -> bool {
        let on = |v: Option<&toml::Value>| v.and_then(toml::Value::as_bool) == Some(true);
        on(self.get("tool.ruff.fix")) || on(self.ruff_toml.as_ref().and_then(|t| t.get("fix")))
    }
}

/// Adds what the Python configuration declares to `found`; `files` are the tracked files.
pub fn python(
    cfg: &Config,
    read: &dyn Fn(&str) -> Option<String>,
    files: &[String],
    found: &mut Found,
) {
    runners(cfg, read, found);
    pytest(cfg, read, files, found);
    if cfg.get("tool.ruff").is_some() || cfg.ruff_toml.is_some() {
        let source = if cfg.get("tool.ruff").is_some() {
            "pyproject.toml ([tool.ruff])"
        } else {
            "ruff.toml"
        };
        found.add(Tier::Inferred, Purpose::Lint, "ruff check .", source);
        found.add(
            Tier::Inferred,
            Purpose::Format,
            "ruff format --check .",
            source,
        );
    }
    if cfg.get("tool.black").is_some() {
        found.add(
            Tier::Inferred,
            Purpose::Format,
            "black --check .",
            "pyproject.toml ([tool.black])",
        );
    }
    mypy(cfg, read, found);
}

/// Adds the project's own runners: tox (any of its configuration places), nox, and the
/// test/lint scripts of hatch, pdm and poe.
fn runners(cfg: &Config, read: &dyn Fn(&str) -> Option<String>, found: &mut Found) {
    let tox = if read("tox.ini").is_some() {
        Some("tox.ini")
    } else if read("tox.toml").is_some() {
        Some("tox.toml")
    } else if cfg.get("tool.tox").is_some() {
        Some("pyproject.toml ([tool.tox])")
    } else if cfg.setup_cfg.contains("[tox:tox]") {
        Some("setup.cfg ([tox:tox])")
    } else {
        None
    };
    if let Some(source) = tox {
        found.add(Tier::Runner, Purpose::Test, "tox", source);
    }
    if read("noxfile.py").is_some() {
        found.add(Tier::Runner, Purpose::Test, "nox", "noxfile.py");
    }
    for (table, run) in [
        ("tool.hatch.envs.default.scripts", "hatch run"),
        ("tool.pdm.scripts", "pdm run"),
        ("tool.poe.tasks", "poe"),
    ] {
        let Some(scripts) = cfg.get(table).and_then(toml::Value::as_table) else {
            continue;
        };
        for (name, body) in scripts {
            let Some(purpose) = super::shell::target_purpose(name) else {
                continue;
            };
            let script = match body {
                toml::Value::String(s) => s.clone(),
                toml::Value::Array(a) => a
                    .iter()
                    .filter_map(toml::Value::as_str)
                    .collect::<Vec<_>>()
                    .join("\n"),
                other => other
                    .get("cmd")
                    .and_then(toml::Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            };
            found.add_script(
                Tier::Runner,
                purpose,
                &format!("{run} {name}"),
                &format!("pyproject.toml ([{table}] {name})"),
                &script,
            );
        }
    }
}

/// Adds `python -m pytest` when pytest is configured, marked as needing the package installed
/// in a `src/` layout that does not put `src` on pytest's `pythonpath`.
fn pytest(
    cfg: &Config,
    read: &dyn Fn(&str) -> Option<String>,
    files: &[String],
    found: &mut Found,
) {
    let pytest_ini = read("pytest.ini");
    let source = if pytest_ini.is_some() {
        "pytest.ini"
    } else if cfg.get("tool.pytest").is_some() {
        "pyproject.toml ([tool.pytest])"
    } else if cfg.setup_cfg.contains("[tool:pytest]") {
        "setup.cfg ([tool:pytest])"
    } else if cfg.pyproject_text.contains("pytest") {
        "pyproject.toml (pytest)"
    } else {
        return;
    };
    let src_layout = files.iter().any(|f| {
        f.strip_prefix("src/")
            .and_then(|rest| rest.strip_suffix("/__init__.py"))
            .is_some_and(|pkg| !pkg.contains('/'))
    });
    let on_path = |text: &str| {
        text.lines()
            .any(|l| l.trim_start().starts_with("pythonpath") && l.contains("src"))
    };
    let configured = cfg
        .get("tool.pytest.ini_options.pythonpath")
        .is_some_and(|v| v.to_string().contains("src"))
        || pytest_ini.as_deref().is_some_and(on_path)
        || on_path(&cfg.setup_cfg);
    let note = (src_layout && !configured).then(|| {
        "src layout: install the package first (`pip install -e .`), or the tests cannot import it"
            .to_string()
    });
    found.add_noted(
        Tier::Inferred,
        Purpose::Test,
        "python -m pytest",
        source,
        note,
    );
}

/// Adds mypy when configured: bare when the configuration names the `files` to check (mypy
/// then checks those), else over the whole tree.
fn mypy(cfg: &Config, read: &dyn Fn(&str) -> Option<String>, found: &mut Found) {
    let ini_files = |text: &str| {
        let mut in_mypy = false;
        text.lines().any(|l| {
            let l = l.trim();
            if l.starts_with('[') {
                in_mypy = l == "[mypy]";
                return false;
            }
            in_mypy && l.split_once('=').is_some_and(|(k, _)| k.trim() == "files")
        })
    };
    let mypy_ini = read("mypy.ini").or_else(|| read(".mypy.ini"));
    let (command, source) = if cfg.get("tool.mypy.files").is_some() {
        ("mypy", "pyproject.toml ([tool.mypy] files)")
    } else if mypy_ini.as_deref().is_some_and(ini_files) {
        ("mypy", "mypy.ini ([mypy] files)")
    } else if ini_files(&cfg.setup_cfg) {
        ("mypy", "setup.cfg ([mypy] files)")
    } else if cfg.get("tool.mypy").is_some() {
        ("mypy .", "pyproject.toml ([tool.mypy])")
    } else if mypy_ini.is_some() {
        ("mypy .", "mypy.ini")
    } else {
        return;
    };
    found.add(Tier::Inferred, Purpose::Lint, command, source);
}

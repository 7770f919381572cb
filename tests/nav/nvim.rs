//! A real editor as the client of `git orchestra lsp`: Neovim's built-in LSP client, headless,
//! asks for a definition and references in a fixture repository. Skipped with a reason when
//! `nvim` is missing, unless `ORCHESTRA_REQUIRE_LSP_TOOLS=1` (set by `.ci/run`) requires it.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::fixture;
use crate::support::hermetic;

/// Returns true if `tool` runs; panics when it is missing but required.
pub fn tool_available(tool: &str, version_arg: &str) -> bool {
    let ok = Command::new(tool)
        .arg(version_arg)
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("ORCHESTRA_REQUIRE_LSP_TOOLS").as_deref() != Ok("1"),
            "`{tool}` is required here (ORCHESTRA_REQUIRE_LSP_TOOLS=1) but does not run; .ci/run installs it"
        );
        eprintln!("skipped: `{tool}` is not installed (Debian: see .ci/run)");
    }
    ok
}

#[test]
fn neovim_finds_a_definition_and_references_through_git_orchestra_lsp() {
    hermetic();
    if !tool_available("nvim", "--version") {
        return;
    }
    let repo = fixture("lsp");
    let scratch = tempfile::tempdir().unwrap();
    let out = scratch.path().join("answers.json");
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/nvim/lsp_client.lua");
    // `Greeter` on the line `label = "héllo"; print(Greeter()…` of app/main.py, in UTF-16.
    let at = super::at(&repo, "app/main.py", "print(", "Greeter");
    let text = std::fs::read_to_string(repo.path.join("app/main.py")).unwrap();
    let line = text.lines().nth(at.line as usize - 1).unwrap();
    let character = line[..at.col.unwrap() as usize - 1].encode_utf16().count();
    let mut child = Command::new("nvim")
        .args(["--headless", "--clean", "-n", "-c"])
        .arg(format!("luafile {}", script.display()))
        .current_dir(&repo.path)
        .env("XDG_CACHE_HOME", scratch.path())
        .env("XDG_STATE_HOME", scratch.path())
        .env("XDG_DATA_HOME", scratch.path())
        .env("LSP_BIN", env!("CARGO_BIN_EXE_git-orchestra"))
        .env("LSP_ROOT", &repo.path)
        .env("LSP_FILE", "app/main.py")
        .env("LSP_LINE", (at.line - 1).to_string())
        .env("LSP_CHAR", character.to_string())
        .env("LSP_OUT", &out)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(120) {
            child.kill().unwrap();
            panic!("nvim did not finish in 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let answers: Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("nvim wrote its answers"))
            .unwrap();
    assert!(answers.get("error").is_none(), "{answers}");
    let def = &answers["definition"];
    let def = if def.is_array() { &def[0] } else { def };
    assert!(
        def["uri"].as_str().unwrap().ends_with("/app/models.py"),
        "{answers}"
    );
    assert_eq!(def["range"]["start"]["line"], 0, "{answers}");
    assert_eq!(def["range"]["start"]["character"], 6, "{answers}");
    let mut refs: Vec<String> = answers["references"]
        .as_array()
        .unwrap_or_else(|| panic!("{answers}"))
        .iter()
        .map(|l| {
            let u = l["uri"].as_str().unwrap();
            format!(
                "{}:{}",
                &u[u.rfind('/').unwrap() + 1..],
                l["range"]["start"]["line"]
            )
        })
        .collect();
    refs.sort();
    refs.dedup();
    assert_eq!(
        refs,
        [
            "main.py:0",
            "main.py:5",
            "main.py:9",
            "models.py:0",
            "models.py:9"
        ],
        "{answers}"
    );
}

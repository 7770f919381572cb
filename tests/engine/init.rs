//! `git orchestra init`: the project context file from the project's own files, for Rust,
//! Python, Node and Go repositories; a second run keeps what people wrote.

use crate::support::*;

/// Returns a repository holding `files` (path, content), committed.
fn project(files: &[(&str, &str)]) -> TestRepo {
    let repo = TestRepo::new();
    for (path, content) in files {
        repo.write(path, content);
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "project"]);
    repo
}

/// A project's files (path, content) and what its context must say.
type Case<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str]);

fn init(repo: &TestRepo) -> String {
    let out = orchestra(&repo.path, &["init"]);
    assert!(out.status.success(), "{}", text(&out));
    std::fs::read_to_string(repo.path.join("ORCHESTRA.md")).unwrap()
}

#[test]
fn init_finds_the_build_and_test_commands_of_rust_python_node_and_go_projects() {
    let cases: [Case<'_>; 4] = [
        (
            &[(
                "Cargo.toml",
                "[package]\nname = \"x\"\nversion = \"0.1.0\"\n",
            )],
            &["test: `cargo test` (from Cargo.toml)", "- Rust: "],
        ),
        (
            &[
                (
                    "pyproject.toml",
                    "[project]\nname = \"p\"\n\n[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n\n[tool.ruff]\nline-length = 100\n",
                ),
                ("pkg/__init__.py", "def f():\n    return 1\n"),
                (
                    "tests/test_f.py",
                    "from pkg import f\n\ndef test_f():\n    assert f() == 1\n",
                ),
            ],
            &[
                "test: `python -m pytest`",
                "lint: `ruff check .`",
                "- Python: 2 files",
                "- `pkg/`: 1 file",
            ],
        ),
        (
            &[
                (
                    "package.json",
                    "{\"name\": \"n\", \"scripts\": {\"test\": \"vitest run\", \"build\": \"tsc -p .\", \"lint\": \"eslint .\"}}",
                ),
                ("yarn.lock", ""),
                ("src/index.ts", "export function g(): number { return 2 }\n"),
            ],
            &[
                "test: `yarn test` (from package.json (scripts.test))",
                "build: `yarn build`",
                "lint: `yarn lint`",
                "- TypeScript: 1 file",
            ],
        ),
        (
            &[
                ("go.mod", "module example.com/m\n\ngo 1.22\n"),
                ("main.go", "package main\n\nfunc main() {}\n"),
                (
                    "Makefile",
                    "build:\n\tgo build ./...\n\ntest: build\n\tgo test ./...\n",
                ),
                (
                    ".github/workflows/ci.yml",
                    "jobs:\n  t:\n    steps:\n      - run: go test -race ./...\n",
                ),
            ],
            &[
                // What CI runs comes first; go.mod's default is not offered beside it.
                "test: `go test -race ./...` (from .github/workflows/ci.yml)",
                "lint: `go vet ./...` (from go.mod)",
                "test: `make test` (from Makefile)",
                "- `go test -race ./...`",
                "- Go: 1 file",
            ],
        ),
    ];
    for (files, expected) in cases {
        let repo = project(files);
        let context = init(&repo);
        for needle in expected {
            assert!(context.contains(needle), "missing {needle:?} in\n{context}");
        }
        assert!(context.contains("## Key definitions") || context.contains("## Layout"));
    }
}

#[test]
fn init_again_keeps_hand_written_text_byte_for_byte_and_changes_nothing_else() {
    let repo = project(&[(
        "Cargo.toml",
        "[package]\nname = \"x\"\nversion = \"0.1.0\"\n",
    )]);
    let first = init(&repo);
    let mine = "\n## House rules\n\nNever touch `vendor/`.  Two spaces kept.\n";
    std::fs::write(repo.path.join("ORCHESTRA.md"), format!("{first}{mine}")).unwrap();
    // A new fact: the generated part changes, the rest does not.
    repo.write("Makefile", "lint:\n\tcargo clippy\n");
    let second = init(&repo);
    assert!(second.ends_with(mine), "{second}");
    assert!(
        second.contains("lint: `make lint` (from Makefile)"),
        "{second}"
    );
    // Nothing new: the file stays as it is and init says so.
    let out = orchestra(&repo.path, &["init"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("is up to date"),
        "{}",
        text(&out)
    );
    assert_eq!(
        std::fs::read_to_string(repo.path.join("ORCHESTRA.md")).unwrap(),
        second
    );
    // --dry-run writes nothing.
    std::fs::remove_file(repo.path.join("ORCHESTRA.md")).unwrap();
    let out = orchestra(&repo.path, &["init", "--dry-run"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("would be created"),
        "{}",
        text(&out)
    );
    assert!(!repo.path.join("ORCHESTRA.md").exists());
}

#[test]
fn with_a_model_the_init_role_reads_the_code_and_adds_the_conventions() {
    let repo = project(&[
        (
            "Cargo.toml",
            "[package]\nname = \"x\"\nversion = \"0.1.0\"\n",
        ),
        ("src/errors.rs", "pub enum Error { Parse }\n"),
    ]);
    let notes = "- **Conventions**: errors are `Error` variants (src/errors.rs).";
    let scripts = serde_json::json!([
        {"name": "init", "match": ["# Init", "Detection already found this", "cargo test"], "replies": [
            {"calls": [{"name": "read_file", "args": {"path": "src/errors.rs"}}]},
            {"text": notes}]}
    ]);
    let model = git_orchestra::demo::MockModel::start(
        git_orchestra::demo::parse_scripts(&scripts.to_string()).unwrap(),
    )
    .unwrap();
    let env = [
        ("ORCHESTRA_PROVIDER", "openai-compatible"),
        ("ORCHESTRA_BASE_URL", model.url.as_str()),
        ("ORCHESTRA_MODEL", "scripted"),
    ];
    let out = orchestra_with_env(&repo.path, &["init"], &env);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("the init role's model added the architecture and conventions"),
        "{}",
        text(&out)
    );
    let written = std::fs::read_to_string(repo.path.join("ORCHESTRA.md")).unwrap();
    let generated = written
        .split(git_orchestra::project::BEGIN)
        .nth(1)
        .and_then(|rest| rest.split(git_orchestra::project::END).next())
        .unwrap();
    assert!(generated.contains("test: `cargo test`"), "{written}");
    assert!(
        generated.contains("## Architecture and conventions") && generated.contains(notes),
        "the notes are inside the generated part: {written}"
    );
    let transcript = std::fs::read_to_string(repo.path.join(".git/orchestra/init.log")).unwrap();
    assert!(transcript.contains("\"read_file\""), "{transcript}");
    // No run is left behind by init.
    assert!(
        git_orchestra::orchestrator::StartJournal::runs(&repo.path.join(".git"))
            .unwrap()
            .is_empty()
    );

    // --no-model writes what detection finds alone.
    let out = orchestra_with_env(&repo.path, &["init", "--no-model"], &env);
    assert!(out.status.success(), "{}", text(&out));
    let written = std::fs::read_to_string(repo.path.join("ORCHESTRA.md")).unwrap();
    assert!(
        !written.contains("## Architecture and conventions"),
        "{written}"
    );
}

/// Returns the lines of the `## Commands` section of `context`.
fn commands(context: &str) -> Vec<&str> {
    context
        .split("## Commands\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("- "))
        .collect()
}

#[test]
fn init_on_a_src_layout_python_project_prefers_its_ci_runner_and_its_tool_config() {
    let repo = project(&[
        (
            "pyproject.toml",
            "[project]\nname = \"pkg\"\n\n[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n\n\
             [tool.mypy]\nfiles = [\"src/pkg\", \"tests\"]\nstrict = true\n\n\
             [tool.ruff]\nfix = true\nline-length = 100\n",
        ),
        (
            "tox.ini",
            "[tox]\nenv_list = py312\n\n[testenv]\ncommands = pytest {posargs}\n",
        ),
        ("src/pkg/__init__.py", "def f():\n    return 1\n"),
        (
            "tests/test_f.py",
            "from pkg import f\n\ndef test_f():\n    assert f() == 1\n",
        ),
        (
            ".github/workflows/ci.yml",
            "jobs:\n  test:\n    steps:\n      - uses: actions/checkout@v4\n      - run: python -m pip install tox\n      - name: tests\n        run: |\n          tox -e py\n          echo done\n",
        ),
    ]);
    let out = orchestra(&repo.path, &["init"]);
    assert!(out.status.success(), "{}", text(&out));
    let context = std::fs::read_to_string(repo.path.join("ORCHESTRA.md")).unwrap();
    let listed = commands(&context);
    let tests: Vec<&&str> = listed.iter().filter(|l| l.starts_with("- test:")).collect();
    // The runner CI uses comes first; a bare pytest, which cannot import the package of a
    // src layout from a fresh clone, is not offered beside it.
    assert!(
        tests
            .first()
            .is_some_and(|l| l.starts_with("- test: `tox -e py` (from .github/workflows/ci.yml")),
        "{context}"
    );
    assert!(!context.contains("`python -m pytest`"), "{context}");
    // mypy reads the files its configuration names; ruff's `fix = true` is overridden so that
    // linting never rewrites a file.
    assert!(
        listed.contains(&"- lint: `mypy` (from pyproject.toml ([tool.mypy] files))"),
        "{context}"
    );
    assert!(!context.contains("`mypy .`"), "{context}");
    assert!(
        listed
            .iter()
            .any(|l| l.starts_with("- lint: `ruff check --no-fix")),
        "{context}"
    );
    assert!(
        !listed
            .iter()
            .any(|l| l.starts_with("- lint: `ruff check") && !l.contains("--no-fix")),
        "{context}"
    );
    // No profile resolves for the init role here: init says the model part was skipped.
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("the init role's model was skipped") && said.contains("--no-model"),
        "{}",
        text(&out)
    );
}

#[test]
fn init_never_writes_a_lint_command_that_rewrites_files() {
    let repo = project(&[
        (
            "Makefile",
            "lint:\n\truff check --fix .\n\ntest:\n\tpytest\n",
        ),
        (
            "package.json",
            "{\"name\": \"n\", \"scripts\": {\"lint\": \"eslint --fix .\", \"test\": \"vitest run\"}}",
        ),
        (
            ".github/workflows/ci.yml",
            "jobs:\n  t:\n    steps:\n      - run: pre-commit run --all-files\n",
        ),
        ("app.py", "x = 1\n"),
    ]);
    let out = orchestra(&repo.path, &["init", "--no-model"]);
    assert!(out.status.success(), "{}", text(&out));
    let context = std::fs::read_to_string(repo.path.join("ORCHESTRA.md")).unwrap();
    let listed = commands(&context);
    assert!(
        !listed.iter().any(|l| l.starts_with("- lint:")),
        "{context}"
    );
    assert!(
        listed.contains(&"- test: `make test` (from Makefile)"),
        "{context}"
    );
    // Each one left out is named with why, in the file and on the terminal.
    for why in [
        "`make lint`",
        "`npm run lint`",
        "`pre-commit run --all-files`",
    ] {
        assert!(
            context.contains(&format!("- not listed: {why}")) && context.contains("rewrites files"),
            "{why} in {context}"
        );
        assert!(text(&out).contains(why), "{why}: {}", text(&out));
    }
    // --no-model is not reported as a missing profile.
    assert!(!text(&out).contains("was skipped"), "{}", text(&out));
}

#[test]
fn init_reads_justfile_recipes_and_hatch_scripts_as_the_projects_runners() {
    let repo = project(&[
        (
            "pyproject.toml",
            "[project]\nname = \"p\"\n\n[tool.pytest.ini_options]\n\n\
             [tool.hatch.envs.default.scripts]\ntest = \"pytest {args}\"\nlint = [\"ruff check --fix .\"]\n",
        ),
        (
            "justfile",
            "# tasks\ntest *args:\n    hatch run test {{args}}\n\nfmt:\n    ruff format .\n",
        ),
        ("p/__init__.py", "x = 1\n"),
    ]);
    let context = init(&repo);
    let listed = commands(&context);
    assert!(
        listed.contains(&"- test: `hatch run test` (from pyproject.toml ([tool.hatch.envs.default.scripts] test))"),
        "{context}"
    );
    assert!(
        listed.contains(&"- test: `just test` (from justfile)"),
        "{context}"
    );
    assert!(
        listed.contains(&"- format: `just fmt` (from justfile)"),
        "{context}"
    );
    assert!(!context.contains("`python -m pytest`"), "{context}");
    assert!(
        context.contains("- not listed: `hatch run lint`")
            && !listed.iter().any(|l| l.starts_with("- lint:")),
        "{context}"
    );
}

//! The `git orchestra nav` command line: text and JSON answers, bounds, and bad input.

use crate::support::{TestRepo, orchestra, text};

fn repo() -> TestRepo {
    TestRepo::with_files(&[
        (
            "src/app.py",
            "from .config import Config\n\ndef main():\n    return Config()\n",
        ),
        (
            "src/config.py",
            "class Config:\n    def send(self):\n        pass\n",
        ),
        ("src/__init__.py", ""),
    ])
}

#[test]
fn def_refs_outline_search_and_map_answer_in_text_and_json() {
    let repo = repo();
    let out = orchestra(
        &repo.path,
        &["nav", "def", "Config", "--from", "src/app.py:4"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("src/config.py:1:7 class Config [resolved]"),
        "{stdout}"
    );

    // Paths are relative to the current directory, like git's.
    let out = orchestra(
        &repo.path.join("src"),
        &["nav", "outline", "config.py", "--json"],
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["results"][1]["name"], "send", "{}", text(&out));

    let out = orchestra(
        &repo.path,
        &["nav", "refs", "Config", "--json", "--max-chars", "300"],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(out.stdout.len() <= 301, "{}", text(&out));

    let out = orchestra(&repo.path, &["nav", "search", "se*", "--kind", "method"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("method send"),
        "{}",
        text(&out)
    );

    let out = orchestra(&repo.path, &["nav", "map", "--tokens", "40"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).chars().count() <= 161);

    // A module-qualified name, and a file with a name.
    for symbol in [
        "config.Config.send",
        "src.config.Config.send",
        "src/config.py:Config.send",
    ] {
        let out = orchestra(&repo.path, &["nav", "refs", symbol]);
        assert!(out.status.success(), "{symbol}: {}", text(&out));
    }
    let out = orchestra(&repo.path, &["nav", "def", "src.config.Config.send"]);
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("src/config.py:2:9 method send in Config [resolved]"),
        "{}",
        text(&out)
    );

    let out = orchestra(&repo.path, &["nav", "show", "Config.send"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("    def send(self):\n        pass"),
        "{}",
        text(&out)
    );
}

#[test]
fn unknown_symbols_and_files_are_user_errors_with_advice() {
    let repo = repo();
    let out = orchestra(&repo.path, &["nav", "refs", "Nope"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("nav search"),
        "{}",
        text(&out)
    );
    let out = orchestra(&repo.path, &["nav", "imports", "README.md"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let out = orchestra(
        &repo.path,
        &["nav", "def", "Config", "--from", "src/app.py"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("path:line"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_bare_name_several_definitions_share_is_said_and_a_position_picks_one() {
    let repo = TestRepo::with_files(&[
        (
            "src/client.py",
            "class Client:\n    def send(self):\n        pass\n\ndef run(c: Client):\n    c.send()\n",
        ),
        (
            "src/session.py",
            "class Session:\n    def send(self):\n        pass\n",
        ),
    ]);
    let out = orchestra(&repo.path, &["nav", "refs", "send"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("note: `send` names 2 definitions: Client.send (src/client.py:2), Session.send (src/session.py:2);"),
        "{stdout}"
    );
    let out = orchestra(
        &repo.path,
        &["nav", "refs", "send", "--from", "src/client.py:2"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("note:"), "{stdout}");
    assert!(stdout.contains("src/client.py: 6\n"), "{stdout}");
}

#[test]
fn file_names_and_lines_with_escape_sequences_are_escaped_in_text_answers() {
    let repo = TestRepo::with_files(&[
        (
            "src/r\u{1b}[31med.py",
            "def paint():\n    return '\u{1b}[2J'\n\n\ndef main():\n    paint()\n",
        ),
        ("src/use.py", "x = 1\n"),
    ]);
    for args in [
        &["nav", "def", "paint"][..],
        &["nav", "refs", "paint"],
        &["nav", "search", "paint"],
        &["nav", "map"],
    ] {
        let out = orchestra(&repo.path, args);
        let all = text(&out);
        assert!(out.status.success(), "{args:?}: {all}");
        assert!(
            all.contains(r"r\033[31med.py"),
            "{args:?} names the file: {all}"
        );
        assert!(!all.contains('\u{1b}'), "{args:?}: a raw escape: {all:?}");
    }
}

/// A repository of 300 Python modules, of which three mention `render_page`: its definition,
/// a module importing it, and one calling it through an alias.
fn many_modules() -> TestRepo {
    let mut files: Vec<(String, String)> = (0..300)
        .map(|i| {
            (
                format!("pkg/m{i:03}.py"),
                format!("def helper_{i}(x):\n    return x + {i}\n"),
            )
        })
        .collect();
    files.push(("pkg/__init__.py".into(), String::new()));
    files.push((
        "pkg/pages.py".into(),
        "def render_page(title):\n    return f\"<h1>{title}</h1>\"\n".into(),
    ));
    files.push((
        "pkg/site.py".into(),
        "from .pages import render_page\n\n\ndef build():\n    return render_page(\"home\")\n"
            .into(),
    ));
    files.push((
        "pkg/blog.py".into(),
        "from .pages import render_page as page\n\n\ndef post():\n    return page(\"post\")\n"
            .into(),
    ));
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    TestRepo::with_files(&refs)
}

#[test]
fn a_first_query_in_a_fresh_clone_reads_only_the_files_that_mention_its_name() {
    let repo = many_modules();
    let quiet = [("ORCHESTRA_NAV_NO_WARM", "1")];
    let first =
        crate::support::orchestra_with_env(&repo.path, &["nav", "refs", "render_page"], &quiet);
    assert!(first.status.success(), "{}", text(&first));
    let note = String::from_utf8_lossy(&first.stderr);
    assert!(
        note.contains("answered from the 3 files that mention `render_page`")
            && note.contains("301 files not read yet"),
        "{note}"
    );
    // Nothing of the partial index is stored as the worktree's view: a full build follows.
    let warm = orchestra(&repo.path, &["nav", "warm"]);
    assert!(warm.status.success(), "{}", text(&warm));
    let full = orchestra(&repo.path, &["nav", "refs", "render_page"]);
    assert!(full.status.success(), "{}", text(&full));
    assert!(
        !String::from_utf8_lossy(&full.stderr).contains("answered from"),
        "{}",
        text(&full)
    );
    // The quick answer is the full one here: the definition, the import, the alias's call.
    assert_eq!(
        String::from_utf8_lossy(&first.stdout),
        String::from_utf8_lossy(&full.stdout)
    );
    let shown = String::from_utf8_lossy(&full.stdout);
    assert!(
        shown.contains("pkg/site.py") && shown.contains("pkg/blog.py"),
        "{shown}"
    );
    // A definition asked for first, in another fresh clone, the same way; the background
    // build it starts leaves the whole index for the next query.
    let clone = repo.scratch().join("clone");
    crate::support::git(
        &repo.scratch(),
        &[
            "clone",
            "-q",
            repo.path.to_str().unwrap(),
            clone.to_str().unwrap(),
        ],
    );
    let def = orchestra(&clone, &["nav", "def", "render_page"]);
    assert!(def.status.success(), "{}", text(&def));
    assert!(
        String::from_utf8_lossy(&def.stdout).contains("pkg/pages.py:1:5 function render_page"),
        "{}",
        text(&def)
    );
    let since = std::time::Instant::now();
    loop {
        let again = orchestra(&clone, &["nav", "def", "helper_7"]);
        assert!(again.status.success(), "{}", text(&again));
        if !String::from_utf8_lossy(&again.stderr).contains("answered from") {
            break;
        }
        assert!(
            since.elapsed() < std::time::Duration::from_secs(120),
            "the background build never finished"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

#[test]
fn a_name_with_many_real_references_answers_in_a_tenth_of_grep_s_bytes() {
    // Where almost every line `git grep -w` prints is a real reference, a row per place made
    // the answer nearly as long as grep's; one line per file with line numbers stays short.
    let mut files = vec![(
        "gen/emit.py".to_string(),
        "def emit(node, frame, text):\n    pass\n".to_string(),
    )];
    for i in 0..10 {
        let body: String = (0..20)
            .map(|j| format!("        emit(node, frame, \"visit {j} of the generator\")\n"))
            .collect();
        files.push((
            format!("gen/visit{i}.py"),
            format!(
                "from gen.emit import emit\n\nclass Visitor{i}:\n    def visit(self, node, frame):\n{body}"
            ),
        ));
    }
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    let repo = TestRepo::with_files(&files);
    let out = orchestra(&repo.path, &["nav", "refs", "emit"]);
    assert!(out.status.success(), "{}", text(&out));
    let answer = String::from_utf8_lossy(&out.stdout).to_string();
    let grep = repo.git(&["grep", "-n", "-w", "emit"]);
    assert!(
        answer.len() * 10 <= grep.len(),
        "{} bytes against grep's {}:\n{answer}",
        answer.len(),
        grep.len()
    );
    // Every place is still there, file by file, with the total.
    assert!(
        answer.starts_with("references to emit: 210 resolved"),
        "{answer}"
    );
    assert!(
        answer.contains(
            "gen/visit3.py: 1 import, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, \
             23, 24\n"
        ),
        "{answer}"
    );
}

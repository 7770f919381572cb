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
    assert!(
        stdout.contains("src/client.py\n  in run: 6:7 call\n"),
        "{stdout}"
    );
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

//! Credentials that try to get past the review gate: in forms the scanner must recognise
//! (unquoted assignments, YAML, AWS secret keys, files git treats as binary, file names), and
//! — once added and removed again — in a range's history and commit messages. Each is
//! committed to a real repository and reviewed with `git orchestra review`.

use crate::support::*;

/// A value that looks generated (mixed case and digits, high entropy) and is no placeholder.
const VALUE: &str = "q8Zr2LmX9vT4bN7cW1sK5dF3";
const AWS_SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8rT2mX9v";
const GHP: &str = "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A";

/// Commits `files` on a new branch `feature` and reviews `main..feature`; returns the
/// review's output and its JSON verdict.
fn review_feature(repo: &TestRepo, files: &[(&str, Vec<u8>)]) -> (String, serde_json::Value) {
    repo.git(&["checkout", "-q", "-b", "feature"]);
    for (path, body) in files {
        let p = repo.path.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "configuration"]);
    let out = orchestra(&repo.path, &["review", "main..feature", "--json"]);
    let v = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (text(&out), v)
}

/// Returns the files named by the verdict's secret findings.
fn secret_files(v: &serde_json::Value) -> Vec<String> {
    v["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["category"] == "secret")
        .filter_map(|f| f["file"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn unquoted_yaml_aws_and_binary_credentials_are_found_and_never_echoed() {
    let repo = TestRepo::new();
    let files = vec![
        (".env", format!("DB_PASSWORD={VALUE}\n").into_bytes()),
        (
            "deploy.yml",
            format!("service:\n  client_secret: {VALUE}\n").into_bytes(),
        ),
        (
            "aws.ini",
            format!("[default]\naws_secret_access_key = {AWS_SECRET}\n").into_bytes(),
        ),
        (".gitattributes", b"*.dat -diff\n".to_vec()),
        ("blob.dat", format!("token={GHP}\n").into_bytes()),
        (
            "image.bin",
            [
                b"\x89PNG\0\0".as_slice(),
                format!("\nkey: {GHP}\n").as_bytes(),
            ]
            .concat(),
        ),
    ];
    let (all, v) = review_feature(&repo, &files);
    assert_eq!(v["verdict"], "reject", "{all}");
    let found = secret_files(&v);
    for file in [".env", "deploy.yml", "aws.ini", "blob.dat", "image.bin"] {
        assert!(found.iter().any(|f| f == file), "{file} not flagged: {all}");
    }
    for secret in [VALUE, AWS_SECRET, GHP] {
        assert!(!all.contains(secret), "a secret was echoed: {all}");
    }
}

#[test]
fn a_credential_in_a_file_name_is_found_and_never_echoed() {
    let repo = TestRepo::new();
    let name = format!("keys/{GHP}.txt");
    let (all, v) = review_feature(&repo, &[(name.as_str(), b"nothing\n".to_vec())]);
    assert_eq!(v["verdict"], "reject", "{all}");
    assert!(all.contains("file's name"), "{all}");
    assert!(!all.contains(GHP), "{all}");
}

/// Commits `files` (path, contents; `None` removes the file) on the current branch.
fn commit(repo: &TestRepo, files: &[(&str, Option<&str>)], message: &str) {
    for (path, body) in files {
        match body {
            Some(body) => repo.write(path, body),
            None => {
                repo.git(&["rm", "-q", path]);
            }
        }
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", message]);
}

#[test]
fn a_credential_added_and_removed_again_is_caught_in_the_history() {
    let repo = TestRepo::new();
    repo.git(&["checkout", "-q", "-b", "feature"]);
    let env = format!("DB_PASSWORD={VALUE}\n");
    commit(&repo, &[(".env", Some(&env))], "configure");
    commit(&repo, &[(".env", None)], "oops");
    commit(&repo, &[("src/a.rs", Some("pub fn a() {}\n"))], "work");
    let out = orchestra(&repo.path, &["review", "main..feature", "--json"]);
    let all = text(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["verdict"], "reject", "{all}");
    assert!(all.contains("the history does"), "{all}");
    assert!(secret_files(&v).contains(&".env".to_string()), "{all}");
    assert!(!all.contains(VALUE), "{all}");
}

#[test]
fn a_credential_in_a_commit_message_is_caught() {
    let repo = TestRepo::new();
    repo.git(&["checkout", "-q", "-b", "feature"]);
    commit(
        &repo,
        &[("src/a.rs", Some("pub fn a() {}\n"))],
        &format!("deploy\n\nused {GHP} for the upload"),
    );
    let out = orchestra(&repo.path, &["review", "main..feature", "--json"]);
    let all = text(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["verdict"], "reject", "{all}");
    assert!(all.contains("message of commit"), "{all}");
    assert!(!all.contains(GHP), "{all}");
}

#[test]
fn the_pre_push_gate_reads_the_history_behind_a_tree_it_approved() {
    let (repo, remote) = crate::gates::hook::with_remote();
    crate::gates::hook::install(&repo);
    // A clean commit is reviewed and approved: its tree carries the approval.
    repo.git(&["checkout", "-q", "-b", "clean"]);
    commit(&repo, &[("src/a.rs", Some("pub fn a() {}\n"))], "work");
    let out = orchestra(&repo.path, &["review", "main..clean"]);
    assert!(out.status.success(), "{}", text(&out));
    // Another branch reaches the same tree through a credential committed and removed.
    repo.git(&["checkout", "-q", "-b", "sneaky", "main"]);
    let env = format!("DB_PASSWORD={VALUE}\n");
    commit(&repo, &[(".env", Some(&env))], "configure");
    commit(&repo, &[(".env", None)], "oops");
    commit(&repo, &[("src/a.rs", Some("pub fn a() {}\n"))], "work");
    assert_eq!(
        repo.git(&["rev-parse", "sneaky^{tree}"]),
        repo.git(&["rev-parse", "clean^{tree}"])
    );
    let out = crate::gates::hook::git_out(&repo.path, &["push", "origin", "sneaky"], true);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(!crate::gates::hook::remote_has(&remote, "sneaky"));
    assert!(!text(&out).contains(VALUE), "{}", text(&out));
    // Nor does `review` carry the tree's approval over to it.
    let out = orchestra(&repo.path, &["review", "main..sneaky"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(!text(&out).contains(VALUE), "{}", text(&out));
    // The clean branch itself still goes out.
    let out = crate::gates::hook::git_out(&repo.path, &["push", "origin", "clean"], true);
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn a_conflict_marker_line_carrying_a_credential_is_shown_redacted() {
    let repo = TestRepo::new();
    let (all, v) = review_feature(
        &repo,
        &[(
            "src/merged.rs",
            format!("<<<<<<< HEAD\nfn a() {{}}\n=======\nfn b() {{}}\n>>>>>>> {GHP} \x1b[31mred\n")
                .into_bytes(),
        )],
    );
    assert_eq!(v["verdict"], "reject", "{all}");
    assert!(all.contains("conflict-marker"), "{all}");
    assert!(!all.contains(GHP), "a marker line was echoed raw: {all}");
    assert!(
        !all.contains('\x1b'),
        "a terminal escape reached the output: {all}"
    );
    let note = repo.git(&[
        "notes",
        "--ref",
        "refs/notes/orchestra/review",
        "show",
        "feature",
    ]);
    assert!(!note.contains(GHP), "{note}");
}

/// Encodes `text` as UTF-16, little or big endian, with or without a byte order mark.
fn utf16(text: &str, little: bool, bom: bool) -> Vec<u8> {
    let mut out = Vec::new();
    if bom {
        out.extend(if little { [0xff, 0xfe] } else { [0xfe, 0xff] });
    }
    for unit in text.encode_utf16() {
        out.extend(if little {
            unit.to_le_bytes()
        } else {
            unit.to_be_bytes()
        });
    }
    out
}

#[test]
fn gitlab_google_slack_npm_url_and_utf16_credentials_are_found_and_never_echoed() {
    let repo = TestRepo::new();
    let secrets = [
        ("gitlab.env", "glpat-Zx9Yw8Vu7Ts6Rq5Po4Nm"),
        ("google.json", "AIzaSyD3x9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe"),
        ("oauth.json", "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"),
        (
            "slack.txt",
            "xoxb-17653672481-19874698323-pdFZKVeTuE8sk7oOcBrzbqgy",
        ),
        ("hook.txt", "T01ABCD2E/B03FGHI4J/q8Zr2LmX9vT4bN7cW1sK5dF3"),
        (".npmrc", "npm_q8Zr2LmX9vT4bN7cW1sK5dF3aB3dE5fG7hJ9"),
        ("db.yml", "s3cr3t-Pw"),
        ("App.config", "Tr0ub4dor&3"),
        ("le.txt", GHP),
        ("be.txt", VALUE),
    ];
    let body = |file: &str, s: &str| match file {
        "hook.txt" => format!("webhook https://hooks.slack.com/services/{s}\n"),
        "db.yml" => format!("url: postgres://app:{s}@db.internal:5432/app\n"),
        "App.config" => format!(
            "<add connectionString=\"Server=db1;Database=app;User Id=sa;Password={s};\" />\n"
        ),
        "be.txt" => format!("first line\nAPI_TOKEN={s}\n"),
        _ => format!("value = {s}\n"),
    };
    let mut files: Vec<(&str, Vec<u8>)> = secrets
        .iter()
        .map(|(f, s)| {
            let text = body(f, s);
            let bytes = match *f {
                "le.txt" => utf16(&text, true, true),
                "be.txt" => utf16(&text, false, false),
                _ => text.into_bytes(),
            };
            (*f, bytes)
        })
        .collect();
    // Ordinary code and placeholders stay quiet.
    let quiet = "let url = \"http://localhost:8080/api\";\nssh user@host\nhttps://user:${PASSWORD}@host/x\nhttps://user:<password>@host/x\nconst password = req.body.password;\n";
    files.push(("src/quiet.rs", quiet.as_bytes().to_vec()));
    let (all, v) = review_feature(&repo, &files);
    assert_eq!(v["verdict"], "reject", "{all}");
    let found = secret_files(&v);
    for (file, secret) in secrets {
        assert!(found.iter().any(|f| f == file), "{file} not flagged: {all}");
        assert!(!all.contains(secret), "a secret was echoed: {all}");
    }
    assert!(!found.iter().any(|f| f == "src/quiet.rs"), "{all}");
}

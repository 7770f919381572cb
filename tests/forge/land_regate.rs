//! The gate of landing rounds, through `git orchestra land` against the fake GitHub following a
//! real bare remote: a fix that passes on the pull request's head alone but breaks the
//! packet's validation once merged into a base that moved (the base renamed a function the
//! fix calls) is not pushed, and the next round gets the failure; a fix that works on the
//! merged tree is pushed and lands; with no round left the pull request waits for a person.
//! A restack conflict our agent resolves is reviewed like a fix: a resolution the scripted
//! reviewer rejects is not pushed, the next round gets the reviewer's reasons, and the
//! approved one lands; with no round left it waits for a person with the reasons.

use std::path::{Path, PathBuf};
use std::process::Output;

use git_orchestra::demo::{self, MockModel};
use serde_json::{Value, json};

use crate::forge::forge_mock::{FakeForge, Flavour};
use crate::forge::land_fixtures::{configure, run_pr};
use crate::forge::pull_requests::{TOKEN, run_env, setup, write_plan};
use crate::support::*;

const LOG: &str = "running 1 test\ntest greets ... FAILED";

/// The packet's validation: the base's `api.sh` sourced, then the packet's file.
const VALIDATION: &str = ". ./api.sh && . ./out-p1.txt";

/// A worker that writes `true` as its packet's file; in a fix round it keeps what it was told
/// (as `fixes-<packet>-<round>.md` in `seen`) and appends a call of `greet` — or, once told
/// what failed on the merged tree and unless `seen/stubborn` exists, a call of `welcome`
/// where the base has it.
fn worker(seen: &Path) -> String {
    format!(
        r#"if [ -n "$ORCHESTRA_FIXES_FILE" ]; then cp "$ORCHESTRA_FIXES_FILE" "{s}/fixes-$ORCHESTRA_PACKET-$ORCHESTRA_ROUND.md"; if grep -qi "merged into" "$ORCHESTRA_FIXES_FILE" && [ ! -f "{s}/stubborn" ]; then echo 'if command -v welcome >/dev/null; then welcome; else greet; fi' >> out-p1.txt; else echo greet >> out-p1.txt; fi; else echo true > out-p1.txt; fi"#,
        s = seen.display()
    )
}

/// A run of p1 (validated by [`VALIDATION`] over `api.sh` defining `greet`) published as pull
/// request #1, its CI failing (also when re-run) and green on every later head; then someone
/// renames `greet` to `welcome` on main. Returns the repository, the bare remote and where the
/// worker keeps its fixes files.
fn renamed_under_it(forge: &FakeForge, land: &str) -> (TestRepo, PathBuf, PathBuf) {
    let (repo, bare) = setup(Some(forge), Flavour::GitHub);
    repo.write("api.sh", "greet() { :; }\n");
    repo.git(&["add", "api.sh"]);
    repo.git(&["commit", "-qm", "Add greet"]);
    repo.git(&["push", "-q", "origin", "main"]);
    repo.scratch_writable();
    let seen = repo.scratch().join("seen");
    std::fs::create_dir_all(&seen).unwrap();
    let plan = write_plan(
        &repo,
        &format!(
            "[[packet]]\nid = \"p1\"\ntitle = \"Packet p1\"\ndescription = \"Does p1.\"\nfiles = \
             [\"out-p1.txt\"]\nvalidation = [\"{VALIDATION}\"]\nacceptance = [\"it greets\"]\n"
        ),
    );
    let out = run_pr(&repo, &plan, &worker(&seen), &[("GH_TOKEN", TOKEN)]);
    assert!(out.status.success(), "{}", text(&out));
    forge.follow_git(&bare);
    configure(&repo, &format!("[land]\npoll_secs = 1\n{land}"));
    let h1 = head(&bare, &branch(forge));
    let failed = forge.add_check_run(&h1, "test", Some("failure"), LOG);
    forge.on_rerun(failed, "failure", LOG);
    forge.on_new_heads("test", "success", "");
    // Someone renames the function on main; the pull request still merges without conflict.
    let other = repo.scratch().join("other");
    git(
        repo.tmp.path(),
        &[
            "clone",
            "-q",
            bare.to_str().unwrap(),
            other.to_str().unwrap(),
        ],
    );
    std::fs::write(other.join("api.sh"), "welcome() { :; }\n").unwrap();
    git(&other, &["commit", "-qam", "Rename greet to welcome"]);
    git(&other, &["push", "-q", "origin", "HEAD:main"]);
    std::fs::remove_dir_all(&other).unwrap();
    (repo, bare, seen)
}

/// Returns the commit branch `branch` points at in the bare repository `bare`.
fn head(bare: &Path, branch: &str) -> String {
    git(bare, &["rev-parse", &format!("refs/heads/{branch}")])
        .trim()
        .to_string()
}

/// Returns pull request #1's head branch.
fn branch(forge: &FakeForge) -> String {
    forge.pulls()[0]["head"]["ref"]
        .as_str()
        .unwrap()
        .to_string()
}

fn land(repo: &TestRepo, env: &[(&str, &str)]) -> Output {
    run_env(repo, &["land"], env)
}

#[test]
fn a_fix_that_breaks_once_merged_into_its_moved_base_is_not_pushed_and_the_next_round_fixes_it() {
    let forge = FakeForge::start(Flavour::GitHub);
    let (repo, bare, seen) = renamed_under_it(&forge, "");
    let b1 = branch(&forge);
    let h1 = head(&bare, &b1);

    let out = land(&repo, &[("GH_TOKEN", TOKEN)]);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(
        all.contains("p1 #1: fix round 1 ended:") && all.contains("fails once merged into `main`"),
        "{all}"
    );
    assert!(all.contains("p1 #1: fix round 2 ended: pushed"), "{all}");
    assert!(all.contains("p1 #1: merged"), "{all}");

    // The second round was told what failed on the merged tree.
    let second = std::fs::read_to_string(seen.join("fixes-p1-2.md")).unwrap();
    assert!(
        second.contains("Merged into the current tip of `main`"),
        "{second}"
    );
    assert!(second.contains(VALIDATION), "{second}");
    assert!(second.contains("greet"), "{second}");

    // Only the fix that works merged was pushed: one commit over the failed head.
    let pushed = head(&bare, &b1);
    assert_eq!(git(&bare, &["rev-parse", &format!("{pushed}^")]).trim(), h1);
    let landed = git(&bare, &["show", "main:out-p1.txt"]);
    assert!(landed.contains("welcome"), "{landed}");
    assert_eq!(git(&bare, &["show", "main:api.sh"]), "welcome() { :; }");
}

#[test]
fn a_fix_failing_on_the_merged_tree_with_no_round_left_waits_for_a_person_unpushed() {
    let forge = FakeForge::start(Flavour::GitHub);
    let (repo, bare, seen) = renamed_under_it(&forge, "max_rounds = 1\n");
    std::fs::write(seen.join("stubborn"), "").unwrap();
    let b1 = branch(&forge);
    let h1 = head(&bare, &b1);

    let out = land(&repo, &[("GH_TOKEN", TOKEN)]);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(
        all.contains("p1 #1: waits for a person: check `test` failed (failure)")
            && all.contains("fix round 1 did not fix it: the fix"),
        "{all}"
    );
    assert!(all.contains("fails once merged into `main`"), "{all}");
    assert_eq!(head(&bare, &b1), h1, "nothing pushed");
    assert_eq!(forge.pulls()[0]["merged"], false);
}

/// The replies of p1's agent writing `out-p1.txt` with each of `contents` in turn, one write
/// and one `complete` per turn of work.
fn coder(contents: &[&str]) -> Value {
    let mut replies = Vec::new();
    for c in contents {
        replies.push(json!({"calls": [{"name": "write_file",
            "args": {"path": "out-p1.txt", "content": c}}]}));
        replies.push(json!({"calls": [{"name": "complete", "args": {"summary": "wrote it"}}]}));
    }
    json!({"name": "coder-p1", "match": ["Does p1."], "replies": replies})
}

/// The reviewer rejecting a diff holding `DISCARDS-MAIN`, approving any other.
fn reviewer() -> Vec<Value> {
    let reject = json!({"verdict": "reject", "findings": [{"severity": "blocker",
        "category": "correctness", "file": "out-p1.txt", "line": 1,
        "evidence": "the resolution drops main's line", "suggestion": "keep both sides"}]});
    vec![
        json!({"name": "reject", "match": ["# Reviewer", "DISCARDS-MAIN"],
            "replies": [{"text": reject.to_string()}]}),
        json!({"name": "review", "match": ["# Reviewer"],
            "replies": [{"text": "{\"verdict\": \"approve\"}"}]}),
    ]
}

/// A run of p1 by our agent (writing each of `contents` in turn, one per turn of work),
/// reviewed by [`reviewer`], published as pull request #1, with `land` in `[land]`; then
/// someone else writes `out-p1.txt` on main, so #1 conflicts with its base. Returns the
/// model, the environment pointing every role at it, the forge's repository, the bare remote
/// and #1's head.
fn conflicting(
    forge: &FakeForge,
    contents: &[&str],
    land: &str,
) -> (
    MockModel,
    Vec<(&'static str, String)>,
    TestRepo,
    PathBuf,
    String,
) {
    let mut scripts = reviewer();
    scripts.push(coder(contents));
    let model =
        MockModel::start(demo::parse_scripts(&json!(scripts).to_string()).unwrap()).unwrap();
    let env = vec![
        ("ORCHESTRA_PROVIDER", "openai-compatible".to_string()),
        ("ORCHESTRA_BASE_URL", model.url.clone()),
        ("ORCHESTRA_MODEL", "scripted".to_string()),
        ("GH_TOKEN", TOKEN.to_string()),
    ];
    let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (repo, bare) = setup(Some(forge), Flavour::GitHub);
    let plan = write_plan(&repo, &crate::forge::pull_requests::packet("p1", "", ""));
    let root = repo.scratch().join("wt");
    let out = run_env(
        &repo,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worktree-root",
            root.to_str().unwrap(),
            "--pr",
        ],
        &pairs,
    );
    assert!(out.status.success(), "{}", text(&out));
    forge.follow_git(&bare);
    configure(&repo, &format!("[land]\npoll_secs = 1\n{land}"));
    let old1 = head(&bare, &branch(forge));
    crate::forge::land_conflict::someone_writes(&repo, &bare, "out-p1.txt");
    (model, env, repo, bare, old1)
}

#[test]
fn a_conflict_resolution_the_reviewer_rejects_is_not_pushed_and_the_next_round_gets_its_reasons() {
    let forge = FakeForge::start(Flavour::GitHub);
    let (model, env, repo, bare, old1) = conflicting(
        &forge,
        &[
            "p1's work\n",
            "p1's work DISCARDS-MAIN\n",
            "someone else's\np1's work\n",
        ],
        "",
    );
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let asked = model.received().len();

    let out = land(&repo, &env);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(
        all.contains("p1 #1: fix round 1 ended:") && all.contains("the resolution drops main's"),
        "{all}"
    );
    assert!(
        all.contains("p1 #1: fix round 2 ended: resolved and pushed"),
        "{all}"
    );
    assert!(all.contains("p1 #1: merged"), "{all}");

    let sent: Vec<Value> = model.received()[asked..].to_vec();
    // The reviewer saw the resolution with both sides' intent.
    let review = sent
        .iter()
        .map(Value::to_string)
        .find(|b| b.contains("# Reviewer") && b.contains("DISCARDS-MAIN"))
        .expect("the first resolution was reviewed");
    assert!(
        review.contains("Someone else writes out-p1.txt"),
        "{review}"
    );
    // The agent's second conflict turn carried the reviewer's reasons.
    assert!(
        sent.iter().any(|b| {
            let b = b.to_string();
            !b.contains("# Reviewer")
                && b.contains("kind: conflict")
                && b.contains("the resolution drops main's line")
        }),
        "{sent:?}"
    );

    // Only the approved resolution reached the remote; the old head is saved.
    assert_eq!(
        git(&bare, &["show", "main:out-p1.txt"]),
        "someone else's\np1's work"
    );
    let history = git(&bare, &["log", "-p", "--all"]);
    assert!(!history.contains("DISCARDS-MAIN"), "{history}");
    let saved = repo.git(&[
        "for-each-ref",
        "--format=%(objectname)",
        "refs/orchestra/saved/",
    ]);
    assert!(saved.contains(&old1), "{saved}");
}

#[test]
fn a_conflict_resolution_rejected_with_no_round_left_waits_for_a_person_with_the_reasons() {
    let forge = FakeForge::start(Flavour::GitHub);
    let (_model, env, repo, bare, old1) = conflicting(
        &forge,
        &["p1's work\n", "p1's work DISCARDS-MAIN\n"],
        "max_rounds = 1\n",
    );
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();

    let out = land(&repo, &env);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(
        all.contains(
            "p1 #1: waits for a person: restacking it onto `main` conflicts in `out-p1.txt`; \
             fix round 1 did not resolve it: the gate rejected the resolution"
        ) && all.contains("the resolution drops main's line"),
        "{all}"
    );
    assert_eq!(head(&bare, &branch(&forge)), old1, "nothing pushed");
    assert_eq!(forge.pulls()[0]["merged"], false);
    assert_eq!(git(&bare, &["show", "main:out-p1.txt"]), "someone else's");
}

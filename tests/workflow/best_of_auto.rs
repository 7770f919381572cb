//! `[start] best_of`: with `"auto"` the packets the planner or the plan reviewer marks risky
//! fan out to `[best_of] n` candidates and the others do not; the approval shows which and
//! forecasts them for all their candidates (their time one packet's per round of candidates
//! at once, alike at the terminal and in the web view); bad settings are refused before
//! anything starts.

use std::path::{Path, PathBuf};

use git_orchestra::demo;

use crate::support::{git, hermetic, orchestra_with_env, text};

/// A sample repository with `config` as its committed `.orchestra/config.toml`, and a scripted
/// planner of two packets (`p1` marked risky) whose reviewer approves naming `reviewer_risky`.
struct Risky {
    tmp: tempfile::TempDir,
    repo: PathBuf,
    model: demo::MockModel,
}

impl Risky {
    fn new(config: &str, reviewer_risky: &[&str]) -> Risky {
        let plan = "```toml\n[[packet]]\nid = \"p1\"\ntitle = \"One\"\ndescription = \"d\"\nfiles = [\"p1.txt\"]\nvalidation = [\"test -f p1.txt\"]\nrisky = true\n\n[[packet]]\nid = \"p2\"\ntitle = \"Two\"\ndescription = \"d\"\nfiles = [\"p2.txt\"]\nvalidation = [\"test -f p2.txt\"]\n```";
        Risky::planned(config, plan, reviewer_risky)
    }

    /// Like [`Risky::new`], with the planner answering `plan`.
    fn planned(config: &str, plan: &str, reviewer_risky: &[&str]) -> Risky {
        hermetic();
        let tmp = tempfile::tempdir().unwrap();
        let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
        std::fs::create_dir_all(repo.join(".orchestra")).unwrap();
        std::fs::write(repo.join(".orchestra/config.toml"), config).unwrap();
        git(&repo, &["add", "-A"]);
        git(
            &repo,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-q",
                "-m",
                "config",
            ],
        );
        let verdict =
            serde_json::json!({"verdict": "approve", "findings": [], "risky": reviewer_risky});
        let scripts = serde_json::json!([
            {"name": "planner", "match": ["# Planner"], "replies": [{"text": plan}]},
            {"name": "review", "match": ["# Reviewer"], "replies": [{"text": verdict.to_string()}]},
            {"name": "orchestrator", "match": ["# Orchestrator"], "replies": [{"text": "{}"}]}
        ]);
        let model =
            demo::MockModel::start(demo::parse_scripts(&scripts.to_string()).unwrap()).unwrap();
        Risky { tmp, repo, model }
    }

    /// Starts the run with a worker command writing its candidate's number (`-` without one)
    /// into `<packet>.txt`.
    fn start(&self, extra: &[&str]) -> std::process::Output {
        let root = self.tmp.path().join("worktrees");
        let mut args = vec![
            "start",
            "--no-clarify",
            "--worktree-root",
            root.to_str().unwrap(),
            "--worker-cmd",
            "echo \"${ORCHESTRA_CANDIDATE:--}\" > \"$ORCHESTRA_PACKET.txt\"",
        ];
        args.extend_from_slice(extra);
        args.push("Two files");
        let env = [
            ("ORCHESTRA_PROVIDER", "openai-compatible"),
            ("ORCHESTRA_BASE_URL", self.model.url.as_str()),
            ("ORCHESTRA_MODEL", "scripted"),
        ];
        orchestra_with_env(&self.repo, &args, &env)
    }
}

/// Returns the kept candidate refs of the repository, as `<packet>/c<k>` sorted.
fn candidates(repo: &Path) -> Vec<String> {
    let mut out: Vec<String> = git(
        repo,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/orchestra/candidates/",
        ],
    )
    .lines()
    .map(|r| {
        let parts: Vec<&str> = r.rsplitn(3, '/').collect();
        format!("{}/{}", parts[1], parts[0])
    })
    .collect();
    out.sort();
    out
}

#[test]
fn under_best_of_auto_only_the_packet_the_planner_marked_risky_has_candidates() {
    let s = Risky::new("[start]\nbest_of = \"auto\"\n[best_of]\nn = 3\n", &[]);
    // Waiting for approval, the plan says which packet fans out and forecasts all three.
    let out = s.start(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let shown = text(&out);
    let p1 = shown.split("p1 — One").nth(1).unwrap_or_default();
    let p1 = p1.split("p2 — Two").next().unwrap_or_default();
    assert!(p1.contains("candidates: best of 3 (risky)"), "{shown}");
    assert!(
        p1.contains("(3 candidates; no history: defaults)"),
        "{shown}"
    );
    let p2 = shown.split("p2 — Two").nth(1).unwrap_or_default();
    assert!(!p2.contains("candidates"), "{shown}");
    assert!(p2.contains("(no history: defaults)"), "{shown}");

    let out = s.start(&["--yes"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(candidates(&s.repo), ["p1/c1", "p1/c2", "p1/c3"]);
    let refs = git(
        &s.repo,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/orchestra/candidates/",
        ],
    );
    for (k, name) in refs.lines().enumerate() {
        assert_eq!(
            git(&s.repo, &["show", &format!("{name}:p1.txt")]),
            (k + 1).to_string()
        );
    }
    // The risky packet's branch holds its winner; the other packet worked once, as no candidate.
    let status = orchestra_with_env(&s.repo, &["status", "--json"], &[]);
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let wrote = |packet: &str| {
        let branch = status["packets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["id"] == packet)
            .unwrap_or_else(|| panic!("no {packet} in {status}"))["branch"]
            .as_str()
            .unwrap()
            .to_string();
        git(&s.repo, &["show", &format!("{branch}:{packet}.txt")])
    };
    assert_eq!(wrote("p1"), "1");
    assert_eq!(wrote("p2"), "-");
}

#[test]
fn the_plan_reviewer_can_mark_a_packet_risky_too() {
    let s = Risky::new("[start]\nbest_of = \"auto\"\n[best_of]\nn = 2\n", &["p2"]);
    let out = s.start(&["--yes"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(candidates(&s.repo), ["p1/c1", "p1/c2", "p2/c1", "p2/c2"]);
}

#[test]
fn without_best_of_a_risky_mark_is_only_shown() {
    let s = Risky::new("", &[]);
    let out = s.start(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("risky (one candidate)"),
        "{}",
        text(&out)
    );
    let out = s.start(&["--yes"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(candidates(&s.repo).is_empty());
}

#[test]
fn bad_best_of_settings_are_refused_naming_the_key() {
    for (config, says) in [
        (
            "[start]\nbest_of = \"sometimes\"\n",
            "best_of = \"sometimes\" is not a mode",
        ),
        ("[start]\nbest_of = 9\n", "best_of = 9 is outside 1 to 8"),
        (
            "[start]\nbest_of = \"auto\"\n[best_of]\nn = 12\n",
            "[best_of] n = 12 is outside 1 to 8",
        ),
    ] {
        let s = Risky::new(config, &[]);
        let out = s.start(&["--yes"]);
        assert_eq!(out.status.code(), Some(2), "{config}: {}", text(&out));
        assert!(text(&out).contains(says), "{config}: {}", text(&out));
        assert!(candidates(&s.repo).is_empty());
    }
}

/// Returns the forecast line of packet `id` in the approval overview `shown`.
fn forecast_line<'a>(shown: &'a str, id: &str) -> &'a str {
    shown
        .lines()
        .skip_while(|l| !l.contains(&format!("{id} — ")))
        .find_map(|l| l.trim().strip_prefix("forecast: "))
        .unwrap_or_else(|| panic!("no forecast for {id} in\n{shown}"))
}

/// Returns the time range of a forecast line (`…, 1 min–30 min (…)`).
fn time_range(line: &str) -> &str {
    let before = line.rsplit_once(" (").map_or(line, |(b, _)| b);
    before.rsplit(", ").next().unwrap_or_default()
}

#[test]
fn candidates_running_at_once_take_one_packets_time_in_the_forecast() {
    // Room for all three candidates at once: the risky packet takes as long as the other,
    // for three times the tokens.
    let s = Risky::new("[start]\nbest_of = \"auto\"\n[best_of]\nn = 3\n", &[]);
    let out = s.start(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let shown = text(&out);
    let (p1, p2) = (forecast_line(&shown, "p1"), forecast_line(&shown, "p2"));
    assert!(p1.starts_with("60.0k–1.2M tokens"), "{p1}");
    assert!(p2.starts_with("20.0k–400.0k tokens"), "{p2}");
    assert_eq!(time_range(p1), "60 s–30 min", "{shown}");
    assert_eq!(time_range(p1), time_range(p2), "{shown}");
    assert!(p1.ends_with("(3 candidates; no history: defaults)"), "{p1}");

    // One at a time: three rounds of one packet's time, for the same tokens.
    let s = Risky::new(
        "[run]\nmax_parallel = 1\n[start]\nbest_of = \"auto\"\n[best_of]\nn = 3\n",
        &[],
    );
    let out = s.start(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let shown = text(&out);
    let (p1, p2) = (forecast_line(&shown, "p1"), forecast_line(&shown, "p2"));
    assert!(p1.starts_with("60.0k–1.2M tokens"), "{p1}");
    assert_eq!(time_range(p1), "3 min–1.5 h", "{shown}");
    assert_eq!(time_range(p2), "60 s–30 min", "{shown}");
    assert!(
        p1.ends_with("(3 candidates, 1 at a time; no history: defaults)"),
        "{p1}"
    );
    // The web view's approval panel shows the same forecast, from the same computation.
    let forecast = web_forecast(&s);
    assert_eq!(forecast["packets"]["p1"], p1, "{forecast}");
    let detail = &forecast["detail"]["packets"][0];
    assert_eq!(
        (
            &detail["at_once"],
            &detail["secs"]["low"],
            &detail["secs"]["high"]
        ),
        (
            &serde_json::json!(1),
            &serde_json::json!(180.0),
            &serde_json::json!(5400.0)
        ),
        "{forecast}"
    );
}

/// Returns the forecast the web view's approval panel shows for the run waiting in `s`.
fn web_forecast(s: &Risky) -> serde_json::Value {
    let ui = crate::web::view::ui_with(&s.repo, &[]);
    let run =
        git_orchestra::orchestrator::StartJournal::runs(&s.repo.join(".git")).unwrap()[0].clone();
    let session = crate::web::view::session(&ui.url);
    let addr = &session.addr;
    let (status, answer) = crate::web::view::send(
        addr,
        &format!(
            "GET /api/run/{run} HTTP/1.1\r\nHost: {addr}\r\nCookie: {}\r\nX-Orchestra-Token: {}\r\nConnection: close\r\n\r\n",
            session.cookie, session.key
        ),
    );
    assert_eq!(status, 200, "{answer}");
    let body = answer
        .split_once("\r\n\r\n")
        .map_or(answer.as_str(), |(_, b)| b);
    let page: serde_json::Value = serde_json::from_str(body).unwrap();
    page["approval"]["forecast"].clone()
}

#[test]
fn best_of_with_the_ssh_executor_is_refused_before_planning_naming_the_way_on() {
    let s = Risky::new(
        "[start]\nbest_of = \"auto\"\n\n[executor.ssh]\nhosts = [\"h1\"]\n",
        &[],
    );
    crate::support::trust(&s.repo);
    let refs = || git(&s.repo, &["for-each-ref", "--format=%(refname)"]);
    let before = refs();
    let out = s.start(&["--yes", "--executor", "ssh"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("`[start] best_of` gives packets candidates, but candidates run only on the local executor, not ssh"),
        "{said}"
    );
    assert!(said.contains("--executor local"), "{said}");
    assert!(said.contains("best_of"), "{said}");
    assert_eq!(s.model.requests(), 0, "nothing was planned");
    assert_eq!(refs(), before);
}

#[test]
fn a_plan_whose_packet_asks_for_candidates_is_refused_on_the_ssh_executor_before_any_worktree() {
    // The planner writes `attempts` itself: the run stops before any packet's work starts.
    let plan = "```toml\n[[packet]]\nid = \"p1\"\ntitle = \"One\"\ndescription = \"d\"\nfiles = [\"p1.txt\"]\nvalidation = [\"test -f p1.txt\"]\nattempts = 3\n```";
    let s = Risky::planned("[executor.ssh]\nhosts = [\"h1\"]\n", plan, &[]);
    crate::support::trust(&s.repo);
    let branches = || {
        git(
            &s.repo,
            &["for-each-ref", "--format=%(refname)", "refs/heads/"],
        )
    };
    let before = branches();
    let out = s.start(&["--yes", "--executor", "ssh"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("packet `p1` asks for 3 candidates, but candidates run only on the local executor, not ssh"),
        "{said}"
    );
    assert!(said.contains("--executor local"), "{said}");
    assert_eq!(branches(), before, "no packet branch was made");
    assert!(candidates(&s.repo).is_empty());
}

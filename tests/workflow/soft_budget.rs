//! The soft thresholds of `[budget]` through the real binary: reaching one pauses a `start`
//! run with a question (shown by `status`), `answer` and `resume` go on to the end, the hard
//! limits still fail the run, and a threshold no run can reach is refused.

use std::path::PathBuf;

use git_orchestra::demo;

use crate::support::{git, hermetic, orchestra_with_env, text};

/// A sample repository configured with `config`, and the scripted model served for it.
struct Scripted {
    _tmp: tempfile::TempDir,
    repo: PathBuf,
    root: PathBuf,
    model: demo::MockModel,
}

impl Scripted {
    fn new(config: &str) -> Scripted {
        hermetic();
        let tmp = tempfile::tempdir().unwrap();
        let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
        std::fs::create_dir_all(repo.join(".orchestra")).unwrap();
        std::fs::write(repo.join(".orchestra/config.toml"), config).unwrap();
        git(&repo, &["add", ".orchestra/config.toml"]);
        git(
            &repo,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-qm",
                "config",
            ],
        );
        Scripted {
            root: tmp.path().join("worktrees"),
            _tmp: tmp,
            repo,
            model: demo::serve().unwrap(),
        }
    }

    /// Runs the binary with `args` against the scripted model.
    fn run(&self, args: &[&str]) -> std::process::Output {
        let env = [
            ("ORCHESTRA_PROVIDER", "openai-compatible"),
            ("ORCHESTRA_BASE_URL", self.model.url.as_str()),
            ("ORCHESTRA_MODEL", "scripted"),
        ];
        orchestra_with_env(&self.repo, args, &env)
    }

    fn start(&self, extra: &[&str]) -> std::process::Output {
        let mut args = vec![
            "start",
            "--yes",
            "--merge",
            "--worktree-root",
            self.root.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        args.push(demo::OBJECTIVE);
        self.run(&args)
    }
}

const PRICED: &str = "[prices.scripted]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\n";

#[test]
fn a_soft_cost_threshold_pauses_with_a_question_and_answer_and_resume_finish_the_run() {
    let s = Scripted::new(&format!("{PRICED}[budget]\nask_at_cost = 0.02\n"));
    let out = s.start(&[]);
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    let all = text(&out);
    assert!(
        all.contains("reached the soft threshold of 0.0200 (`[budget] ask_at_cost`)"),
        "{all}"
    );
    assert!(all.contains("→ paused: The run paused: cost 0.0"), "{all}");
    // The question waits where every front end looks: `status` shows it.
    let status = text(&s.run(&["status"]));
    assert!(
        status.contains("budget") && status.contains("soft threshold of 0.0200"),
        "{status}"
    );
    let out = s.run(&["answer", "budget", "yes, go on"]);
    assert!(out.status.success(), "{}", text(&out));
    // Going on asks again at a higher multiple; every pause is answered until the end.
    let (mut pauses, mut threshold) = (1, 0.02);
    let out = loop {
        let out = s.run(&["resume"]);
        if out.status.code() != Some(130) {
            break out;
        }
        pauses += 1;
        assert!(pauses < 20, "{}", text(&out));
        let all = text(&out);
        let at: f64 = all
            .split("soft threshold of ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .unwrap_or_else(|| panic!("pause {pauses}: {all}"))
            .parse()
            .unwrap();
        let multiple = (at / 0.02).round();
        assert!(
            at > threshold && (at - multiple * 0.02).abs() < 1e-9,
            "pause {pauses} at {at} after {threshold}: {all}"
        );
        threshold = at;
        let answered = s.run(&["answer", "budget", "go on"]);
        assert!(answered.status.success(), "{}", text(&answered));
    };
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("completed: all 4 packets succeeded"),
        "{}",
        text(&out)
    );
    let status = text(&s.run(&["status"]));
    assert!(!status.contains("soft threshold"), "{status}");
}

#[test]
fn the_hard_cost_limit_still_fails_a_run_that_went_on_past_a_soft_threshold() {
    let s = Scripted::new(&format!("{PRICED}[budget]\nask_at_cost = 0.01\n"));
    let out = s.start(&["--budget-cost", "0.025"]);
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    assert!(
        text(&out).contains("soft threshold of 0.0100"),
        "{}",
        text(&out)
    );
    // `resume` alone goes on too; the hard limit then stops the run as failed.
    let mut out = s.run(&["resume"]);
    for _ in 0..5 {
        if out.status.code() != Some(130) {
            break;
        }
        out = s.run(&["resume"]);
    }
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("cost budget exhausted"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_soft_threshold_of_zero_is_refused_with_what_to_do() {
    let s = Scripted::new("[budget]\nask_at_tokens = 0\n");
    let out = s.start(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let all = text(&out);
    assert!(
        all.contains("`[budget] ask_at_tokens` is 0: a soft threshold must be above 0"),
        "{all}"
    );
    assert!(all.contains(".orchestra/config.toml"), "{all}");
}

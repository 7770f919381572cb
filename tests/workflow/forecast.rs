//! Forecasts at plan approval through the real binary: with no history the wide defaults, and
//! after a scripted run a forecast from its packets whose range holds what the next run spends.

use std::path::{Path, PathBuf};

use git_orchestra::demo;

use crate::support::{git, hermetic, orchestra_with_env, text};

/// A sample repository whose packets are priced, with the scripted model served for it.
struct Priced {
    _tmp: tempfile::TempDir,
    repo: PathBuf,
    root: PathBuf,
    model: demo::MockModel,
}

impl Priced {
    fn new() -> Priced {
        hermetic();
        let tmp = tempfile::tempdir().unwrap();
        let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
        std::fs::create_dir_all(repo.join(".orchestra")).unwrap();
        std::fs::write(
            repo.join(".orchestra/config.toml"),
            "[prices.scripted]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\n",
        )
        .unwrap();
        commit(&repo, "config");
        Priced {
            root: tmp.path().join("worktrees"),
            _tmp: tmp,
            repo,
            model: demo::serve().unwrap(),
        }
    }

    fn start(&self, extra: &[&str]) -> std::process::Output {
        let mut args = vec!["start", "--worktree-root", self.root.to_str().unwrap()];
        args.extend_from_slice(extra);
        args.push(demo::OBJECTIVE);
        let env = [
            ("ORCHESTRA_PROVIDER", "openai-compatible"),
            ("ORCHESTRA_BASE_URL", self.model.url.as_str()),
            ("ORCHESTRA_MODEL", "scripted"),
        ];
        orchestra_with_env(&self.repo, &args, &env)
    }
}

fn commit(repo: &Path, message: &str) {
    git(repo, &["add", "-A"]);
    git(
        repo,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            message,
        ],
    );
}

/// Returns a number as the forecast writes it (`950`, `12.3k`, `1.2M`).
fn number(text: &str) -> f64 {
    let t = text.trim();
    let (digits, factor) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1e3),
        Some('M') => (&t[..t.len() - 1], 1e6),
        _ => (t, 1.0),
    };
    digits.parse::<f64>().unwrap() * factor
}

/// Returns the token and cost ranges of the forecast line of `packet` in `overview`.
fn packet_forecast(overview: &str, packet: &str) -> ((f64, f64), (f64, f64), String) {
    let mut lines = overview
        .lines()
        .skip_while(|l| !l.contains(&format!("{packet} — ")));
    let line = lines
        .find_map(|l| l.trim().strip_prefix("forecast: "))
        .unwrap_or_else(|| panic!("no forecast for {packet} in\n{overview}"));
    let (tokens, rest) = line.split_once(" tokens, cost ").unwrap();
    let (low, high) = tokens.split_once('–').unwrap();
    let (cost, _) = rest.split_once(", ").unwrap();
    let (clow, chigh) = cost.split_once('–').unwrap();
    (
        (number(low), number(high)),
        (number(clow), number(chigh)),
        line.to_string(),
    )
}

#[test]
fn the_approval_forecast_comes_from_earlier_packets_and_holds_the_next_run() {
    let s = Priced::new();
    // No history: every packet gets the wide defaults, and says so.
    let out = s.start(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let first = text(&out);
    let packets = [
        "p1-config",
        "p2-greet-punctuation",
        "p3-farewell",
        "p4-docs",
    ];
    for p in packets {
        let ((low, high), _, line) = packet_forecast(&first, p);
        assert!(line.ends_with("(no history: defaults)"), "{line}");
        assert_eq!((low, high), (20_000.0, 400_000.0), "{line}");
    }
    assert!(
        first.contains("Forecast: ") && first.contains("(no history: defaults;"),
        "{first}"
    );
    let out = s.start(&["--yes"]);
    assert!(out.status.success(), "{}", text(&out));

    // A new commit makes the same objective a new run, forecast from the first one's packets.
    std::fs::write(s.repo.join("NOTES.md"), "notes\n").unwrap();
    commit(&s.repo, "notes");
    let out = s.start(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let second = text(&out);
    let mut forecasts = Vec::new();
    for p in packets {
        let (tokens, cost, line) = packet_forecast(&second, p);
        // The first run had three coder packets and one docs packet.
        let earlier = if p == "p4-docs" {
            "(from 1 earlier packet)"
        } else {
            "(from 3 earlier packets)"
        };
        assert!(line.ends_with(earlier), "{line}");
        assert!(tokens.0 < tokens.1 && cost.0 < cost.1, "{line}");
        forecasts.push((p, tokens, cost, line));
    }
    assert!(second.contains("every packet from history"), "{second}");
    let out = s.start(&["--yes"]);
    assert!(out.status.success(), "{}", text(&out));

    // What the run then spent on each packet lies inside its forecast.
    let env = [("NO_COLOR", "1")];
    let status = orchestra_with_env(&s.repo, &["status", "--json"], &env);
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    for (p, tokens, cost, line) in forecasts {
        let agents: Vec<&serde_json::Value> = status["agents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["packet"] == p)
            .collect();
        let used: f64 = agents
            .iter()
            .map(|a| {
                (a["input_tokens"].as_u64().unwrap() + a["output_tokens"].as_u64().unwrap()) as f64
            })
            .sum();
        let spent: f64 = agents
            .iter()
            .map(|a| a["cost_nanos"].as_u64().unwrap_or(0) as f64 / 1e9)
            .sum();
        assert!(used > 0.0 && spent > 0.0, "{p}: {status}");
        // The forecast's text rounds to a tenth of a thousand tokens and a ten-thousandth.
        assert!(
            tokens.0 - 50.0 <= used && used <= tokens.1 + 50.0,
            "{p} used {used} tokens outside `{line}`"
        );
        assert!(
            cost.0 - 5e-5 <= spent && spent <= cost.1 + 5e-5,
            "{p} cost {spent} outside `{line}`"
        );
    }
}

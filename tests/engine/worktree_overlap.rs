//! Packets that start together do not queue behind each other's worktree validation: a process
//! registers one worktree at a time, but the `git status` that validates a fresh checkout runs
//! outside that lock.

use crate::support::*;

const WORKER: &str = r#"echo "$ORCHESTRA_PACKET" > "out-$ORCHESTRA_PACKET.txt""#;

/// Returns the `(start, end)` times in nanoseconds of every fresh-checkout validation (`git
/// status --porcelain=v2 --branch`) of a run of `n` independent packets, each slowed by a
/// `git` on `PATH` that sleeps half a second in them.
fn validations_running(n: usize) -> Vec<(u128, u128)> {
    let repo = TestRepo::new();
    let mut body = format!("objective = \"Start together\"\nmax_parallel = {n}\n\n");
    for i in 0..n {
        body.push_str(&packet(
            &format!("p{i}"),
            &format!("\"out-p{i}.txt\""),
            "",
            "",
        ));
    }
    let plan = repo.write_plan("plan.toml", &body);
    let real = std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .map(|dir| std::path::Path::new(dir).join("git"))
        .find(|p| p.is_file())
        .unwrap();
    let bin = repo.scratch().join("slow-status-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = repo.scratch().join("validations.log");
    let wrapper = bin.join("git");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\ncase \"$*\" in *'status --porcelain=v2 --branch'*)\n  s=$(date +%s%N); sleep 0.5; '{real}' \"$@\"; rc=$?\n  echo \"$s $(date +%s%N)\" >> '{log}'; exit $rc;;\nesac\nexec '{real}' \"$@\"\n",
            real = real.display(),
            log = log.display()
        ),
    )
    .unwrap();
    make_executable(&wrapper);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let root = repo.scratch().join("wt");
    let out = orchestra_with_env(
        &repo.path,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            WORKER,
            "--worktree-root",
            root.to_str().unwrap(),
        ],
        &[("PATH", &path)],
    );
    assert!(out.status.success(), "{}", text(&out));
    std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| {
            let (s, e) = l.split_once(' ').unwrap();
            (s.parse().unwrap(), e.parse().unwrap())
        })
        .collect()
}

#[test]
fn fresh_worktrees_of_packets_starting_together_are_validated_at_the_same_time() {
    let spans = validations_running(3);
    assert!(
        spans.len() >= 3,
        "one validation per fresh worktree: {spans:?}"
    );
    let overlapping = spans
        .iter()
        .enumerate()
        .any(|(i, a)| spans[i + 1..].iter().any(|b| a.0 < b.1 && b.0 < a.1));
    assert!(
        overlapping,
        "the validations ran one after another, as if under the registration lock: {spans:?}"
    );
}

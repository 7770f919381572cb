//! A packet's fixed cost, counted in the git processes a run starts for it (a deterministic
//! proxy for its time): each packet starts no more than a budget, however many packets run.

use crate::support::*;

const WORKER: &str = r#"echo "$ORCHESTRA_PACKET" > "out-$ORCHESTRA_PACKET.txt""#;

/// Git processes `git orchestra run` may start per packet, beyond the run's fixed part: the
/// fresh worktree's status; the main checkout's status, its ignored files listed by the same
/// process, around the worker (before and after); the commit (add, staged list, commit); the checks' reads (raw diff, the
/// tip's tree, the base and the blob sizes in one batch, history — whose one commit's patch is
/// the range's patch when the range is that commit); the verdict's two notes. Measured at 24
/// before the notes stopped asking for the common directory, the checks resolved tip and base
/// in one process, and the commit's staged list stood in for a diff from the start; at 20
/// before HEAD (of the main checkout and of the packet's worktree, four reads) came from the
/// ref files and the file size limit from one `git config` for the run; at 15 before the
/// checks sized the blobs in the batch that resolves tip and base, and took the patch of a
/// one-commit range from its history; at 13 before the main checkout's status listed its
/// ignored files (an `ls-files` of their own before). A new git call per packet must be worth
/// its place.
const GIT_STARTS_PER_PACKET: usize = 11;

/// The same where the kernel keeps the confined worker from writing the main checkout (a
/// Landlock of ABI 5 or later): its status is not read around the worker, two reads fewer.
const GIT_STARTS_PER_CONTAINED_PACKET: usize = 9;

fn git_starts_budget() -> usize {
    match git_orchestra::agent::sandbox::landlock_abi() {
        Some(abi) if abi >= 5 => GIT_STARTS_PER_CONTAINED_PACKET,
        _ => GIT_STARTS_PER_PACKET,
    }
}

/// Runs `n` independent packets through a `git` on `PATH` that logs its starts, with `extra`
/// arguments to `run`; returns the git command lines the run started.
fn git_starts_running_with(n: usize, extra: &[&str]) -> Vec<String> {
    let repo = TestRepo::new();
    let body = format!(
        "objective = \"Count git starts\"\n\n{}",
        independent_packets(n)
    );
    let plan = repo.write_plan("plan.toml", &body);
    let git = CountingGit::new(&repo);
    let out = repo.run_plan_with_env(&plan, WORKER, extra, &[("PATH", &git.path)]);
    assert!(out.status.success(), "{}", text(&out));
    let status = status_json(&repo.path);
    let done = status["packets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["state"] == "succeeded")
        .count();
    assert_eq!(done, n, "every packet succeeds: {status:#}");
    git.started()
}

/// Runs `n` independent packets as [`git_starts_running_with`] does, without merging them.
fn git_starts_running(n: usize) -> Vec<String> {
    git_starts_running_with(n, &[])
}

/// The merge of a one-packet run asks git nothing the run already knows: the target's tip
/// (named at discovery), the integration branch it has not made yet (absent from the ref
/// files), the packet's tree (named by the checks' batch), which packets a branch still at
/// the base holds; and its fast-forward of the main checkout starts no maintenance.
#[test]
fn a_one_packet_merge_asks_git_nothing_the_run_already_knows() {
    let merged = git_starts_running_with(1, &["--merge"]);
    let kept = git_starts_running(1);
    let count = |lines: &[String], sub: &str| {
        git_by_subcommand(lines)
            .iter()
            .find(|(s, _)| s == sub)
            .map_or(0, |(_, n)| *n)
    };
    assert_eq!(
        count(&merged, "rev-parse"),
        count(&kept, "rev-parse"),
        "the merge resolved names: {merged:#?}"
    );
    assert_eq!(count(&merged, "rev-list"), 0, "{merged:#?}");
    let fast_forward: Vec<&String> = merged.iter().filter(|l| l.contains(" merge ")).collect();
    assert_eq!(fast_forward.len(), 1, "{merged:#?}");
    assert!(
        fast_forward[0].contains("maintenance.auto=false"),
        "{fast_forward:?}"
    );
}

#[test]
fn a_packet_starts_a_bounded_number_of_git_processes_however_many_run() {
    let (one_lines, ten_lines) = (git_starts_running(1), git_starts_running(10));
    let (one, ten) = (one_lines.len(), ten_lines.len());
    let per_packet = (ten - one).div_ceil(9);
    eprintln!(
        "git starts: 1 packet {one} {:?}\n10 packets {ten} {:?}",
        git_by_subcommand(&one_lines),
        git_by_subcommand(&ten_lines)
    );
    let budget = git_starts_budget();
    assert!(
        per_packet <= budget,
        "a packet started {per_packet} git processes (1 packet: {one}, 10 packets: {ten}); \
         the budget is {budget}; 10 packets started {:?}",
        git_by_subcommand(&ten_lines)
    );
    // The run's fixed part does not grow with the packets either.
    let fixed = one.saturating_sub(per_packet);
    assert!(
        ten <= fixed + 10 * per_packet + 2,
        "10 packets started {ten} git processes, more than 10 × {per_packet} + {fixed}"
    );
}

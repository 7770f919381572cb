//! Deterministic names: run ids, packet branches, worktree paths and port ranges.
//!
//! Every name here is a pure function of its inputs (objective, base commit, packet id, plan
//! position, repository location), so the same plan on the same base yields the same names on
//! every machine, and running it again finds the existing run instead of creating another.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The longest slug a run id or a path component may carry, in bytes.
pub const MAX_SLUG_LEN: usize = 40;

/// Number of ports reserved for each packet, starting at its `ORCHESTRA_PORT_BASE`.
pub const PORTS_PER_PACKET: u16 = 10;

/// Returns `text` lower-cased, with every run of characters outside `[a-z0-9]` turned into one
/// dash, no leading or trailing dash, and at most `max` bytes (cut at a dash where possible).
pub fn sanitize(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max + 1));
    let mut pending_dash = false;
    for ch in text.chars().flat_map(char::to_lowercase) {
        if ch.is_ascii_lowercase() || ch.is_ascii_digit() {
            if pending_dash && !out.is_empty() {
                out.push('-');
            }
            pending_dash = false;
            out.push(ch);
        } else {
            pending_dash = true;
        }
    }
    if out.len() > max {
        out.truncate(max);
        // Prefer ending on a word boundary, unless that would leave almost nothing.
        if let Some(cut) = out.rfind('-').filter(|&i| i >= max / 2) {
            out.truncate(cut);
        }
        while out.ends_with('-') {
            out.pop();
        }
    }
    out
}

/// Returns the run id for an objective on a base commit: a readable slug plus a short hash of
/// both, e.g. `add-input-validation-3f2a9c1e`.
pub fn run_id(objective: &str, base_commit: &str) -> String {
    run_id_in("", objective, base_commit)
}

/// Returns the run id of a `git orchestra agent` task on a base commit: the same shape as
/// [`run_id`], hashed apart from it so a task never shares a run with an objective of the
/// same words.
pub fn agent_run_id(task: &str, base_commit: &str) -> String {
    run_id_in("agent\0", task, base_commit)
}

fn run_id_in(domain: &str, objective: &str, base_commit: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(domain.as_bytes());
    hasher.update(objective.trim().as_bytes());
    hasher.update([0u8]);
    hasher.update(base_commit.as_bytes());
    let digest = hasher.finalize();
    let hash: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    let slug = sanitize(objective, MAX_SLUG_LEN);
    if slug.is_empty() {
        format!("run-{hash}")
    } else {
        format!("{slug}-{hash}")
    }
}

/// Returns the branch a packet's work lives on: `orchestra/<run>/<packet>`.
pub fn packet_branch(run: &str, packet: &str) -> String {
    format!(
        "orchestra/{}/{}",
        sanitize(run, MAX_SLUG_LEN + 9),
        sanitize(packet, 64)
    )
}

/// Returns the ref a packet's unsaved work is backed up to before its worktree is removed.
pub fn backup_ref(run: &str, packet: &str) -> String {
    format!(
        "refs/orchestra/backup/{}/{}",
        sanitize(run, MAX_SLUG_LEN + 9),
        sanitize(packet, 64)
    )
}

/// Returns the ref a pull request branch's head `head` is saved under before landing rewrites
/// the branch (a restack after its parent was squash-merged): one ref per old head, so no
/// earlier head becomes unreachable.
pub fn saved_head_ref(run: &str, packet: &str, head: &str) -> String {
    format!(
        "refs/orchestra/saved/{}/{}/{}",
        sanitize(run, MAX_SLUG_LEN + 9),
        sanitize(packet, 64),
        sanitize(head, 64)
    )
}

/// Returns the ref landing fetches `branch` of the remote into for run `run`, apart from the
/// user's remote-tracking branches.
pub fn landing_fetch_ref(run: &str, branch: &str) -> String {
    format!(
        "refs/orchestra/land/{}/{}",
        sanitize(run, MAX_SLUG_LEN + 9),
        branch
    )
}

/// Returns the ref a landing fix round `round` of `packet` in run `run` that pushed nothing
/// keeps its work under, before its worktree is removed.
pub fn landing_round_ref(run: &str, packet: &str, round: u32) -> String {
    format!(
        "refs/orchestra/land-rounds/{}/{}/{round}",
        sanitize(run, MAX_SLUG_LEN + 9),
        sanitize(packet, 64)
    )
}

/// Returns the default root under which a repository's packet worktrees live:
/// `<repo-parent>/.orchestra/<repo-name>`, outside the main working tree.
pub fn default_worktree_root(repo_toplevel: &Path) -> PathBuf {
    let name = repo_toplevel
        .file_name()
        .map(|n| sanitize(&n.to_string_lossy(), 64))
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "repo".to_string());
    let parent = repo_toplevel.parent().unwrap_or(repo_toplevel);
    parent.join(".orchestra").join(name)
}

/// Returns the worktree directory of one packet under `root`: `<root>/<run>/<packet>`.
pub fn packet_worktree(root: &Path, run: &str, packet: &str) -> PathBuf {
    root.join(sanitize(run, MAX_SLUG_LEN + 9))
        .join(sanitize(packet, 64))
}

/// Returns the first of the `PORTS_PER_PACKET` ports reserved for the packet at `index` in its
/// plan. Each run gets a block of 1,000 ports chosen by its id; packets take consecutive slices,
/// so packets of one run never collide (up to 100 of them) and the result never changes.
pub fn port_base(run: &str, index: usize) -> u16 {
    let digest = Sha256::digest(run.as_bytes());
    let block = u16::from(digest[0]) % 40; // 40 blocks of 1,000 ports: 20000..=59999
    20_000 + block * 1_000 + (index % 100) as u16 * PORTS_PER_PACKET
}

/// Returns the first of the `PORTS_PER_PACKET` ports reserved for candidate `k` (1…) of the
/// packet at `index` in a plan whose packets have `candidates[i]` candidates each (1: none
/// of their own). Candidates take the slots of the run's block after every packet's own, in
/// plan order, so candidates working at once never share a port with each other or with any
/// packet of the run (while packets and candidates number 100 or fewer), and the result
/// never changes for the same plan.
pub fn candidate_port_base(run: &str, candidates: &[u32], index: usize, k: u32) -> u16 {
    let before: usize = candidates
        .iter()
        .take(index)
        .filter(|&&n| n > 1)
        .map(|&n| n as usize)
        .sum();
    port_base(
        run,
        candidates.len() + before + (k as usize).saturating_sub(1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_collapses_and_bounds() {
        assert_eq!(
            sanitize("  Add   Rate-Limiting!! to HTTP ", 40),
            "add-rate-limiting-to-http"
        );
        assert_eq!(sanitize("ÄÖ weird__name--x", 40), "weird-name-x");
        assert_eq!(sanitize("---", 10), "");
        let long = sanitize("alpha beta gamma delta epsilon zeta eta theta iota", 20);
        assert!(long.len() <= 20, "{long}");
        assert_eq!(long, "alpha-beta-gamma");
        assert!(!long.ends_with('-'));
    }

    #[test]
    fn run_id_is_deterministic_and_input_sensitive() {
        let a = run_id("Add input validation", "abc123");
        assert_eq!(a, run_id("Add input validation", "abc123"));
        assert!(a.starts_with("add-input-validation-"), "{a}");
        assert_eq!(a.len(), "add-input-validation-".len() + 8);
        assert_ne!(a, run_id("Add input validation", "abc124"));
        assert_ne!(a, run_id("Add input checks", "abc123"));
        assert!(run_id("!!!", "x").starts_with("run-"));
    }

    #[test]
    fn an_agent_task_never_shares_a_run_id_with_an_objective_of_the_same_words() {
        let task = agent_run_id("Add input validation", "abc123");
        assert_eq!(task, agent_run_id("Add input validation", "abc123"));
        assert_ne!(task, run_id("Add input validation", "abc123"));
        assert!(task.starts_with("add-input-validation-"), "{task}");
        assert_eq!(task.len(), run_id("Add input validation", "abc123").len());
    }

    #[test]
    fn branch_and_paths_are_sanitized() {
        assert_eq!(packet_branch("r-1", "p1-core"), "orchestra/r-1/p1-core");
        assert_eq!(packet_branch("r", "P1 Core!"), "orchestra/r/p1-core");
        assert_eq!(backup_ref("r", "p"), "refs/orchestra/backup/r/p");
        let root = default_worktree_root(Path::new("/home/u/My Repo"));
        assert_eq!(root, PathBuf::from("/home/u/.orchestra/my-repo"));
        assert_eq!(
            packet_worktree(&root, "r", "p"),
            PathBuf::from("/home/u/.orchestra/my-repo/r/p")
        );
    }

    #[test]
    fn port_ranges_do_not_collide_within_a_run() {
        let bases: Vec<u16> = (0..100).map(|i| port_base("some-run-1234", i)).collect();
        for (i, a) in bases.iter().enumerate() {
            assert!(*a >= 20_000 && *a + PORTS_PER_PACKET <= 60_000);
            for b in &bases[i + 1..] {
                assert!(a.abs_diff(*b) >= PORTS_PER_PACKET);
            }
        }
        assert_eq!(port_base("x", 3), port_base("x", 3));
    }

    #[test]
    fn candidates_ports_are_apart_from_each_other_and_from_every_packets() {
        // Packets 0 and 2 have candidates (3 and 2), packet 1 none.
        let plan = [3, 1, 2];
        let mut bases: Vec<u16> = (0..plan.len()).map(|i| port_base("r", i)).collect();
        for (i, &n) in plan.iter().enumerate().filter(|(_, n)| **n > 1) {
            bases.extend((1..=n).map(|k| candidate_port_base("r", &plan, i, k)));
        }
        assert_eq!(bases.len(), 8);
        for (i, a) in bases.iter().enumerate() {
            for b in &bases[i + 1..] {
                assert!(a.abs_diff(*b) >= PORTS_PER_PACKET, "{bases:?}");
            }
        }
        assert_eq!(
            candidate_port_base("r", &plan, 2, 2),
            candidate_port_base("r", &plan, 2, 2)
        );
    }
}

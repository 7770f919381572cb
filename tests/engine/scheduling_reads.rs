//! The scheduling loop's cost per packet stays flat as a run grows: the packet records it
//! reads, reported by the engine's debug log, grow linearly with the number of packets.

use crate::support::*;

const WORKER: &str = r#"echo "$ORCHESTRA_PACKET" > "out-$ORCHESTRA_PACKET.txt""#;

/// Runs `n` independent packets and returns the packet records scheduling read.
fn records_read_for(n: usize) -> u64 {
    let repo = TestRepo::new();
    let packets = independent_packets(n);
    let plan = repo.write_plan("plan.toml", &format!("objective = \"Many\"\n\n{packets}"));
    let out = repo.run_plan_with_env(
        &plan,
        WORKER,
        &[],
        &[("ORCHESTRA_LOG", "orchestra_core::engine=debug")],
    );
    let shown = without_colours(&text(&out));
    assert!(out.status.success(), "{shown}");
    let line = shown
        .lines()
        .find(|l| l.contains("packet records read while scheduling"))
        .unwrap_or_else(|| panic!("no scheduling count in:\n{shown}"));
    let count = line
        .split("records_read=")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|d| d.parse().ok())
        .unwrap_or_else(|| panic!("no count in {line}"));
    assert!(line.contains(&format!("packets={n}")), "{line}");
    count
}

/// Returns `s` without terminal colour sequences (`ESC [ … m`).
fn without_colours(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            chars.by_ref().find(|&c| c == 'm');
        } else {
            out.push(c);
        }
    }
    out
}

/// The loop used to read every packet's record on every wake-up (every 100 ms and per
/// finished packet): records read per packet grew with the number of packets.
#[test]
fn scheduling_reads_a_flat_number_of_records_per_packet() {
    let (small, large) = (3, 12);
    let (read_small, read_large) = (records_read_for(small), records_read_for(large));
    let per_packet = |read: u64, n: usize| read as f64 / n as f64;
    let (a, b) = (per_packet(read_small, small), per_packet(read_large, large));
    assert!(
        b <= 4.0 && b <= a * 1.5 + 1.0,
        "records read per packet: {a:.1} at {small} packets, {b:.1} at {large}"
    );
}

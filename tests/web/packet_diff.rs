//! The packet page's diff is the packet's own change, as `git orchestra diff` shows it — also
//! for a packet whose conflicts its agent resolved by merging the integration branch.

use crate::support::orchestra;
use crate::web::spend::{api, finished_start};

#[test]
fn a_resolved_packets_page_and_diff_show_only_its_own_change() {
    let (_tmp, repo, id) = finished_start("");
    // The scripted run's p3-farewell conflicts with p2 in greeter/core.py and its agent
    // resolves it; p1-config alone adds greeter/config.py.
    let packet = api(&repo, &format!("/api/packet/{id}/p3-farewell"));
    let patch = packet["diff"]["patch"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(patch.contains("greeter/core.py"), "{}", packet["diff"]);
    assert!(
        !patch.contains("b/greeter/config.py"),
        "another packet's file on the page: {patch}"
    );
    let out = orchestra(&repo, &["diff", &id, "p3-farewell"]);
    let diff = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(diff.contains("greeter/core.py"), "{diff}");
    assert!(!diff.contains("b/greeter/config.py"), "{diff}");
}

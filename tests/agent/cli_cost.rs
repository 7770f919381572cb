//! An agent CLI's model call is priced as every model call is — by `[prices]` — never by the
//! CLI's own price list: a model without a price shows no cost in any view.

use crate::agent::agent_cli::{fixture, run_with, stand_in};
use crate::support::{TestRepo, orchestra, status_json, text};

#[test]
fn an_agent_clis_own_price_list_is_not_the_runs_cost() {
    let repo = TestRepo::new();
    // The recording reports `total_cost_usd` from the CLI's own price list.
    let recording = fixture("claude");
    assert!(recording.contains("total_cost_usd"), "{recording}");
    let bin = stand_in(&repo, "claude", &recording, None);
    let out = run_with(&repo, "claude", &bin, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let said = text(&out);
    assert!(
        !said.contains("$0.0110"),
        "the CLI's own cost shown: {said}"
    );
    let status = status_json(&repo.path);
    let agent = status["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["role"] == "coder/claude")
        .unwrap_or_else(|| panic!("no coder/claude in {status}"));
    assert!(agent["cost_nanos"].is_null(), "{agent}");
    assert!(status["spend"]["cost"].is_null(), "{status}");
    assert!(status["spend"]["calls"].as_u64().unwrap() >= 1, "{status}");
    let text_status =
        String::from_utf8_lossy(&orchestra(&repo.path, &["status"]).stdout).to_string();
    assert!(!text_status.contains("cost      $"), "{text_status}");
    assert!(!text_status.contains("0.011"), "{text_status}");
}

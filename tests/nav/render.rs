//! Bounded rendering: full → locations → per-file counts, always within the limit, always
//! with a notice when degraded.

use git_orchestra::nav::{Detail, render_locations};

use crate::index;
use crate::support::TestRepo;

fn many_refs() -> TestRepo {
    let mut files = vec![(
        "lib.py".to_string(),
        "def target():\n    pass\n".to_string(),
    )];
    for i in 0..30 {
        let body: String = (0..10)
            .map(|_| "    target()  # a fairly long comment to pad the line\n")
            .collect();
        files.push((
            format!("m{i:02}.py"),
            format!("from lib import target\n\ndef f{i}():\n{body}"),
        ));
    }
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    TestRepo::with_files(&refs)
}

#[test]
fn answers_degrade_in_order_and_never_exceed_the_limit() {
    let repo = many_refs();
    let idx = index(&repo);
    let locs = idx.callers("target").unwrap();
    assert_eq!(locs.len(), 300);
    let full = render_locations("callers of target", &locs, 1_000_000, false);
    assert_eq!(full.detail, Detail::Full);
    assert!(!full.text.contains("note:"));
    let full_len = full.text.chars().count();
    let mid = render_locations("callers of target", &locs, full_len - 1, false);
    assert_eq!(mid.detail, Detail::Locations);
    assert!(
        mid.text.starts_with("note: 300 results"),
        "{}",
        &mid.text[..80]
    );
    assert!(mid.text.chars().count() < full_len);
    for limit in [2_000, 600, 200, 40] {
        for json in [false, true] {
            let r = render_locations("callers of target", &locs, limit, json);
            assert!(
                r.text.chars().count() <= limit,
                "limit {limit} json {json}: {}",
                r.text.len()
            );
            assert_eq!(r.detail, Detail::Counts);
            if limit >= 600 {
                assert!(r.text.contains("counts per file"), "{}", r.text);
            }
        }
    }
    let r = render_locations("callers of target", &locs, 400, false);
    assert!(r.text.contains("more files with"), "{}", r.text);
    let j: serde_json::Value =
        serde_json::from_str(&render_locations("x", &locs, 2_000, true).text).unwrap();
    assert_eq!(j["detail"], "counts");
    assert_eq!(j["total"], 300);
}

//! Bounded rendering: full → locations → per-file counts, always within the limit, always
//! with a notice when degraded.

use git_orchestra::nav::{
    Detail, Location, PlaceOptions, Resolution, render_locations, render_locations_at,
    render_places, render_places_with,
};

use crate::nav::index;
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
            // The compact text of 300 places in 30 files fits in 2,000 characters; their JSON
            // does not.
            let expected = if limit == 2_000 && !json {
                Detail::Locations
            } else {
                Detail::Counts
            };
            assert_eq!(r.detail, expected, "limit {limit} json {json}: {}", r.text);
            if limit >= 600 && expected == Detail::Counts {
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

fn loc(path: &str, line: u32, name: &str, resolution: Resolution) -> Location {
    Location {
        path: path.into(),
        line,
        col: 5,
        end_line: line,
        kind: "call".into(),
        name: name.into(),
        container: None,
        signature: format!("    {name}()"),
        resolution,
    }
}

#[test]
fn locations_are_grouped_by_file_with_shared_names_and_resolved_labels_said_once() {
    let locs = vec![
        loc("src/app.py", 3, "send", Resolution::Resolved),
        loc("src/app.py", 9, "send", Resolution::Candidate),
        loc("src/cli.py", 4, "send", Resolution::Resolved),
    ];
    let text = render_locations_at("callers of send", &locs, Detail::Locations, false);
    assert_eq!(
        text,
        "callers of send: 3 results, 2 resolved, 1 marked [candidate] (matched by name only); \
         each call unless marked\n\
         src/app.py: 3, 9 [candidate]\nsrc/cli.py: 4\n"
    );
    // Different names (an alias, say) are printed on every row.
    let mut mixed = locs.clone();
    mixed[2].name = "post".into();
    let text = render_locations_at("callers of send", &mixed, Detail::Locations, false);
    assert!(
        text.contains(
            "callers of send: 3 results, 2 resolved, 1 marked [candidate] (matched by name only); \
             each call unless marked\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("src/app.py: 3 send, 9 send [candidate]\n"),
        "{text}"
    );
    assert!(text.contains("src/cli.py: 4 post\n"), "{text}");
    // A shared name the title does not give is said once.
    let text = render_locations_at("references", &locs, Detail::Locations, false);
    assert!(
        text.starts_with(
            "references: 3 results, 2 resolved, 1 marked [candidate] (matched by name only), all named send; each call unless marked\n"
        ),
        "{text}"
    );
    // A kind other than the common one is said at its place; two places on one line are told
    // apart by their columns; the enclosing definition of a reference stays in the JSON and
    // the full detail.
    let mut within = locs.clone();
    within[0].container = Some("App.run".into());
    within[1].kind = "read".into();
    within[1].line = 3;
    within[1].col = 12;
    let text = render_locations_at("references to send", &within, Detail::Locations, false);
    assert!(
        text.contains("src/app.py: 3:5, 3:12 read [candidate]\nsrc/cli.py: 4\n"),
        "{text}"
    );
    // The full detail keeps every label and source line.
    let full = render_locations_at("callers of send", &locs, Detail::Full, false);
    assert!(
        full.contains("src/app.py:9:5 call send [candidate]\n        send()"),
        "{full}"
    );
    assert!(
        full.contains("src/cli.py:4:5 call send [resolved]"),
        "{full}"
    );
}

#[test]
fn places_list_resolved_first_and_candidates_apart() {
    let mut locs = vec![
        loc("src/app.py", 9, "send", Resolution::Candidate),
        loc("src/app.py", 3, "send", Resolution::Resolved),
        loc("src/cli.py", 4, "send", Resolution::Resolved),
    ];
    locs[1].container = Some("App.run".into());
    let text = render_places("callers of send", &locs, 8_000, false, false).text;
    assert_eq!(
        text,
        "callers of send: 2 resolved, then 1 candidate matched by name only; \
         each call unless marked\n\
         src/app.py (in App.run): 3\nsrc/cli.py: 4\n\
         candidates, matched by name only (1):\nsrc/app.py: 9\n"
    );
    // JSON: the resolved places grouped by file and definition as the text groups them; the
    // candidates counted, or listed apart when asked for.
    let v: serde_json::Value =
        serde_json::from_str(&render_places("callers of send", &locs, 8_000, true, false).text)
            .unwrap();
    assert_eq!(
        v["results"],
        serde_json::json!([
            {"path": "src/app.py", "in": "App.run", "places": ["3:5 call"]},
            {"path": "src/cli.py", "places": ["4:5 call"]}
        ])
    );
    assert_eq!(v["total"], 3);
    assert_eq!(v["candidates_not_shown"], 1);
    assert_eq!(v["name"], "send");
    let opts = PlaceOptions {
        max_chars: 8_000,
        json: true,
        context: false,
        candidates: true,
    };
    let v: serde_json::Value =
        serde_json::from_str(&render_places_with("callers of send", &locs, opts).text).unwrap();
    assert_eq!(
        v["candidates"],
        serde_json::json!([{"path": "src/app.py", "places": ["9:5 call"]}])
    );
    assert_eq!(v["resolved"], 2);
    // One result is one result.
    let one = render_places("callers of send", &locs[1..2], 8_000, false, true).text;
    assert!(one.starts_with("callers of send: 1 resolved\n"), "{one}");
    let one = render_locations("definition of send", &locs[1..2], 8_000, false).text;
    assert!(one.starts_with("definition of send: 1 result\n"), "{one}");
}

#[test]
fn many_places_in_json_stay_listed_as_long_as_the_text_does() {
    // 108 implementations in 12 files: the grouped JSON is about as long as the text.
    let locs: Vec<Location> = (0..108)
        .map(|i| {
            let mut l = loc(
                &format!("src/shapes/s{:02}.rs", i % 12),
                10 + i as u32,
                "Shape",
                Resolution::Resolved,
            );
            l.kind = "impl (implements)".into();
            l
        })
        .collect();
    let text = render_places("implementations of Shape", &locs, 8_000, false, false);
    let json = render_places("implementations of Shape", &locs, 8_000, true, false);
    assert_eq!(text.detail, Detail::Locations);
    assert_eq!(json.detail, Detail::Locations, "{}", json.text);
    let v: serde_json::Value = serde_json::from_str(&json.text).unwrap();
    let listed: usize = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["places"].as_array().unwrap().len())
        .sum();
    assert_eq!(listed, 108);
}

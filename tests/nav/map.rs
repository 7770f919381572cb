//! The repository map: ranked by references, personalised by focus, never over budget.

use git_orchestra::nav::{MapOptions, estimate_tokens};

use crate::nav::index;
use crate::support::TestRepo;

fn repo() -> TestRepo {
    let mut files: Vec<(String, String)> = vec![
        (
            "core.py".into(),
            "class Engine:\n    def run(self):\n        pass\n\ndef _private():\n    pass\n".into(),
        ),
        (
            "lonely.py".into(),
            "def unused_function():\n    pass\n".into(),
        ),
    ];
    for i in 0..12 {
        files.push((
            format!("user{i}.py"),
            format!("from core import Engine\n\ndef use{i}():\n    Engine().run()\n"),
        ));
    }
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    TestRepo::with_files(&refs)
}

#[test]
fn most_referenced_definitions_come_first_and_budget_holds() {
    let repo = repo();
    let idx = index(&repo);
    let map = idx.repo_map(&MapOptions {
        tokens: 60,
        ..MapOptions::default()
    });
    assert!(map.starts_with("core.py:\n"), "{map}");
    assert!(map.contains("class Engine"), "{map}");
    for tokens in [0, 5, 20, 60, 200, 1000, 100_000] {
        let m = idx.repo_map(&MapOptions {
            tokens,
            ..MapOptions::default()
        });
        assert!(
            estimate_tokens(&m) <= tokens,
            "{tokens}: {}",
            estimate_tokens(&m)
        );
    }
    let big = idx.repo_map(&MapOptions {
        tokens: 100_000,
        ..MapOptions::default()
    });
    assert!(
        big.contains("unused_function"),
        "everything fits in a large budget"
    );
}

#[test]
fn focus_files_and_mentioned_identifiers_lead() {
    let repo = repo();
    let idx = index(&repo);
    let map = idx.repo_map(&MapOptions {
        focus: vec!["lonely.py".into()],
        tokens: 30,
        ..MapOptions::default()
    });
    assert!(map.contains("unused_function"), "{map}");
    let map = idx.repo_map(&MapOptions {
        mentioned: vec!["use7".into()],
        tokens: 30,
        ..MapOptions::default()
    });
    assert!(map.contains("use7"), "{map}");
}

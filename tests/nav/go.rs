//! Go: packages by directory, import aliases, methods by receiver.

use crate::nav::{index, resolved};
use crate::support::TestRepo;

#[test]
fn package_imports_aliases_and_receivers_resolve() {
    let repo = TestRepo::with_files(&[
        ("go.mod", "module example.com/demo\n"),
        (
            "store/store.go",
            "package store\n\ntype Store struct{}\n\nfunc New() *Store { return &Store{} }\n\nfunc (s *Store) Get(k string) string { return s.get(k) }\n\nfunc (s *Store) get(k string) string { return k }\n",
        ),
        (
            "store/extra.go",
            "package store\n\nfunc Helper() *Store { return New() }\n",
        ),
        (
            "main.go",
            "package main\n\nimport st \"example.com/demo/store\"\n\nfunc main() {\n\ts := st.New()\n\ts.Get(\"a\")\n}\n",
        ),
    ]);
    let idx = index(&repo);
    assert_eq!(
        resolved(&idx.definition("New", Some(("main.go", 6))).unwrap()),
        vec!["store/store.go:5"]
    );
    assert_eq!(
        resolved(&idx.callers("New").unwrap()),
        vec!["main.go:6", "store/extra.go:3"]
    );
    let get = idx.outline("store/store.go").unwrap();
    assert!(get.iter().any(|i| i.name == "Get" && i.kind == "method"));
    let show = idx.show("Store.Get").unwrap();
    assert_eq!(show.len(), 1);
    assert!(
        show[0].source.starts_with("func (s *Store) Get"),
        "{}",
        show[0].source
    );
    // `s.get(k)` inside a method on *Store: the receiver binds `s` to Store.
    let callees = idx.callees("Store.Get").unwrap();
    assert_eq!(
        crate::nav::resolved(&callees),
        vec!["store/store.go:9"],
        "{callees:?}"
    );
}

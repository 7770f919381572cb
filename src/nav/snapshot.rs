//! View snapshots: the facts of every file of a view and its definition-name table, stored
//! as one cache row keyed by the view, so that another worktree of the same commit (or the
//! next process on the same worktree) is ready after reading one row, without parsing or
//! decoding anything.
//!
//! Opening an index from per-blob rows meant one SQLite lookup and one full decode per file,
//! and then rebuilding the name table from every definition. A snapshot holds the files'
//! encoded facts back to back, and each file's facts are decoded on first use instead
//! ([`Facts`]), so a query pays only for the files it reads.

use std::fmt;
use std::ops::{Deref, Range};
use std::sync::{Arc, OnceLock};

use super::NavError;
use super::facts::FileFacts;
use super::index::{DefId, NameTable};
use super::lang::{Lang, fnv1a};

/// Views smaller than this are opened from per-blob rows: a snapshot would not pay for its
/// write.
pub const MIN_FILES: usize = 256;

/// The facts of one file (references apart), decoded on first use when they come from a
/// snapshot.
#[derive(Clone)]
pub struct Facts(Arc<Lazy>);

struct Lazy {
    decoded: OnceLock<FileFacts>,
    /// The snapshot buffer and this file's range in it; `None` once decoded at creation.
    encoded: Option<(Arc<[u8]>, Range<usize>)>,
}

impl Facts {
    /// Returns facts already decoded.
    pub fn new(facts: FileFacts) -> Facts {
        Facts(Arc::new(Lazy {
            decoded: OnceLock::from(facts),
            encoded: None,
        }))
    }

    /// Returns facts that decode `buffer[range]` on first use.
    fn encoded(buffer: Arc<[u8]>, range: Range<usize>) -> Facts {
        Facts(Arc::new(Lazy {
            decoded: OnceLock::new(),
            encoded: Some((buffer, range)),
        }))
    }
}

impl Deref for Facts {
    type Target = FileFacts;

    fn deref(&self) -> &FileFacts {
        self.0.decoded.get_or_init(|| {
            let Some((buffer, range)) = &self.0.encoded else {
                return FileFacts::default();
            };
            match buffer
                .get(range.clone())
                .map(postcard::from_bytes::<FileFacts>)
            {
                Some(Ok(facts)) => facts,
                // The snapshot was written from decoded facts, so this is a damaged cache:
                // the file answers nothing rather than failing every query.
                _ => {
                    tracing::warn!(
                        "a navigation view snapshot is damaged; delete nav.db to rebuild it"
                    );
                    FileFacts::default()
                }
            }
        })
    }
}

impl fmt::Debug for Facts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        FileFacts::fmt(self, f)
    }
}

/// Returns the snapshot key of a view: a hash of every file's path, blob id and facts
/// version, in view order (file numbers in the name table depend on that order).
pub fn view_key<'a>(
    files: impl Iterator<Item = (&'a str, &'a str, Lang)>,
) -> Result<i64, NavError> {
    let mut versions: Vec<[u8; 8]> = Vec::new();
    let mut names: Vec<(&str, &str)> = Vec::new();
    for (path, oid, lang) in files {
        versions.push(lang.version().to_le_bytes());
        names.push((path, oid));
    }
    let mut parts: Vec<&[u8]> = Vec::with_capacity(names.len() * 3);
    for ((path, oid), version) in names.iter().zip(&versions) {
        parts.push(path.as_bytes());
        parts.push(oid.as_bytes());
        parts.push(version);
    }
    Ok(fnv1a(&parts) as i64)
}

/// A snapshot as stored: the files' encoded facts back to back, where each file's ends,
/// and the name table.
pub struct Stored {
    pub data: Vec<u8>,
    pub ends: Vec<u8>,
    pub names: Vec<u8>,
}

/// Encodes the facts of `files` (in view order; with their encoding when already known)
/// and the name table `names`.
pub fn encode<'a>(
    files: impl Iterator<Item = (&'a FileFacts, Option<&'a [u8]>)>,
    names: &NameTable<DefId>,
) -> Result<Stored, NavError> {
    let fail = |e: postcard::Error| NavError::Encode {
        oid: "view snapshot".into(),
        message: e.to_string(),
    };
    let mut data = Vec::new();
    let mut ends: Vec<u32> = Vec::new();
    for (facts, known) in files {
        match known {
            Some(bytes) => data.extend_from_slice(bytes),
            None => data = postcard::to_extend(facts, data).map_err(fail)?,
        }
        ends.push(data.len() as u32);
    }
    let names: Vec<(&str, Vec<(u32, u32)>)> = names
        .iter()
        .map(|(n, ids)| (n.as_str(), ids.iter().map(|d| (d.file, d.def)).collect()))
        .collect();
    Ok(Stored {
        data,
        ends: postcard::to_stdvec(&ends).map_err(fail)?,
        names: postcard::to_stdvec(&names).map_err(fail)?,
    })
}

/// A decoded snapshot: one lazily decoded [`Facts`] per file, and the name table.
pub struct Loaded {
    pub facts: Vec<Facts>,
    pub names: NameTable<DefId>,
}

/// Decodes a stored snapshot of a view of `files` files; `None` when it does not fit.
pub fn decode(stored: Stored, files: usize) -> Option<Loaded> {
    let ends: Vec<u32> = postcard::from_bytes(&stored.ends).ok()?;
    if ends.len() != files
        || ends
            .last()
            .is_some_and(|e| *e as usize != stored.data.len())
    {
        return None;
    }
    let names: Vec<(String, Vec<(u32, u32)>)> = postcard::from_bytes(&stored.names).ok()?;
    let buffer: Arc<[u8]> = Arc::from(stored.data);
    let mut start = 0usize;
    let mut facts = Vec::with_capacity(files);
    for end in ends {
        let end = end as usize;
        if end < start {
            return None;
        }
        facts.push(Facts::encoded(buffer.clone(), start..end));
        start = end;
    }
    let names = names
        .into_iter()
        .map(|(n, ids)| {
            let ids = ids
                .into_iter()
                .map(|(file, def)| DefId { file, def })
                .collect();
            (n, ids)
        })
        .collect();
    Some(Loaded { facts, names })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nav::facts::{Def, Span};

    fn def(name: &str) -> Def {
        Def {
            name: name.into(),
            kind: "function".into(),
            parent: None,
            span: Span::default(),
            name_span: Span::default(),
            body_start: 0,
            signature: format!("def {name}():"),
            owner: String::new(),
            receiver_var: String::new(),
            exported: true,
        }
    }

    fn git(dir: &std::path::Path, args: &[&str]) {
        crate::git::testing::git(dir, args);
    }

    #[test]
    fn a_second_worktree_opens_from_the_snapshot_with_the_same_answers() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        std::fs::create_dir_all(repo.join("pkg")).unwrap();
        for i in 0..MIN_FILES + 4 {
            let text = format!(
                "from pkg.m{} import f{}\n\nclass C{i}:\n    def run(self):\n        return f{}()\n\ndef f{i}():\n    return C{i}().run()\n",
                (i + 1) % 7,
                (i + 1) % 7,
                (i + 1) % 7
            );
            std::fs::write(repo.join(format!("pkg/m{i}.py")), text).unwrap();
        }
        git(&repo, &["init", "-q", "-b", "main"]);
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", "files"]);
        let db = tmp.path().join("nav.db");
        let mut first = crate::nav::Index::open_with_cache(&repo, &db).unwrap();
        let cold = first.refresh().unwrap();
        assert_eq!(cold.parsed, MIN_FILES + 4);

        let wt = tmp.path().join("wt");
        git(
            &repo,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                "second",
                wt.to_str().unwrap(),
            ],
        );
        let mut second = crate::nav::Index::open_with_cache(&wt, &db).unwrap();
        let warm = second.refresh().unwrap();
        assert_eq!((warm.parsed, warm.cached), (0, MIN_FILES + 4));
        // Files were not decoded while opening.
        assert!(
            second
                .files
                .iter()
                .all(|f| f.facts.0.decoded.get().is_none())
        );
        assert_eq!(second.names, first.names);
        for (a, b) in first.files.iter().zip(&second.files) {
            assert_eq!((&a.path, &a.oid, &*a.facts), (&b.path, &b.oid, &*b.facts));
        }
        for name in ["run", "f3", "C5"] {
            let refs = |ix: &crate::nav::Index| {
                ix.references(name)
                    .unwrap()
                    .into_iter()
                    .map(|l| format!("{l:?}"))
                    .collect::<Vec<_>>()
            };
            let expected = refs(&first);
            assert!(!expected.is_empty(), "{name}");
            assert_eq!(refs(&second), expected, "{name}");
        }

        // An edit after opening from the snapshot patches the tables like any refresh.
        std::fs::write(wt.join("pkg/m3.py"), "def g3():\n    return 1\n").unwrap();
        let edit = second.refresh().unwrap();
        assert_eq!(edit.parsed, 1);
        assert_eq!(second.definition("g3", None).map_or(0, |v| v.len()), 1);
        assert_eq!(second.definition("f3", None).map_or(0, |v| v.len()), 0);
    }

    #[test]
    fn a_snapshot_round_trips_facts_and_names() {
        let a = FileFacts {
            defs: vec![def("run"), def("stop")],
            ..FileFacts::default()
        };
        let b = FileFacts::default();
        let c = FileFacts {
            defs: vec![def("run")],
            ..FileFacts::default()
        };
        let mut names: NameTable<DefId> = NameTable::default();
        names.insert(
            "run".into(),
            vec![DefId { file: 0, def: 0 }, DefId { file: 2, def: 0 }],
        );
        names.insert("stop".into(), vec![DefId { file: 0, def: 1 }]);
        let known = postcard::to_stdvec(&b).unwrap();
        let parts = [(&a, None), (&b, Some(known.as_slice())), (&c, None)];
        let stored = encode(parts.into_iter(), &names).unwrap();
        let loaded = decode(stored, 3).unwrap();
        assert_eq!(loaded.names, names);
        assert_eq!(*loaded.facts[0], a);
        assert_eq!(*loaded.facts[1], b);
        assert_eq!(*loaded.facts[2], c);
    }

    #[test]
    fn a_snapshot_of_another_view_size_is_refused() {
        let empty = FileFacts::default();
        let stored = encode([(&empty, None)].into_iter(), &NameTable::default()).unwrap();
        assert!(decode(stored, 2).is_none());
    }

    #[test]
    fn the_key_depends_on_paths_blobs_and_order() {
        let k = |files: &[(&'static str, &'static str)]| {
            view_key(files.iter().map(|(p, o)| (*p, *o, Lang::Python))).unwrap()
        };
        let base = k(&[("a.py", "1"), ("b.py", "2")]);
        assert_eq!(base, k(&[("a.py", "1"), ("b.py", "2")]));
        assert_ne!(base, k(&[("a.py", "1"), ("b.py", "3")]));
        assert_ne!(base, k(&[("a.py", "1"), ("c.py", "2")]));
        assert_ne!(base, k(&[("b.py", "2"), ("a.py", "1")]));
    }
}

//! View snapshots: the definition-name table of a view, stored as one cache row keyed by the
//! view, so that another worktree of the same commit (or the next process on the same
//! worktree) is ready after reading one row, without parsing or decoding anything.
//!
//! Opening an index from per-blob rows meant one SQLite lookup and one full decode per file,
//! and then rebuilding the name table from every definition. A snapshot holds the name table
//! sorted, so that a name is found by a binary search in the stored bytes ([`Names`]), and
//! each file's facts are read from its blob row and decoded on first use ([`Facts`]): a query
//! pays only for the names and files it reads.

use std::borrow::Cow;
use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use super::NavError;
use super::cache::{FactsReader, Stored};
use super::facts::FileFacts;
use super::index::{DefId, NameTable};
use super::lang::{Lang, fnv1a};

/// Views smaller than this are opened from per-blob rows: a snapshot would not pay for its
/// write.
pub const MIN_FILES: usize = 256;

/// The facts of one file (references apart), read and decoded on first use when they come
/// from a snapshot.
#[derive(Clone)]
pub struct Facts(Arc<Lazy>);

struct Lazy {
    decoded: OnceLock<FileFacts>,
    /// Where the blob's row is read from, its blob id and facts version; `None` once decoded
    /// at creation.
    stored: Option<(Arc<FactsReader>, String, u64)>,
}

impl Facts {
    /// Returns facts already decoded.
    pub fn new(facts: FileFacts) -> Facts {
        Facts(Arc::new(Lazy {
            decoded: OnceLock::from(facts),
            stored: None,
        }))
    }

    /// Returns facts that are read from the blob row of `oid` on first use.
    pub fn stored(reader: Arc<FactsReader>, oid: &str, lang: Lang) -> Facts {
        Facts(Arc::new(Lazy {
            decoded: OnceLock::new(),
            stored: Some((reader, oid.to_string(), lang.version())),
        }))
    }
}

impl Deref for Facts {
    type Target = FileFacts;

    fn deref(&self) -> &FileFacts {
        self.0.decoded.get_or_init(|| {
            let Some((reader, oid, version)) = &self.0.stored else {
                return FileFacts::default();
            };
            match reader.get(oid, *version) {
                Ok(Some(facts)) => facts,
                // The snapshot was written after every blob's row: this is a damaged cache,
                // and the file answers nothing rather than failing every query.
                Ok(None) => {
                    tracing::warn!(
                        oid = %oid,
                        "a blob of a navigation view snapshot has no facts; delete nav.db to rebuild it"
                    );
                    FileFacts::default()
                }
                Err(e) => {
                    tracing::warn!(oid = %oid, error = %e, "cannot read a blob's facts");
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

/// What tells a snapshot's format apart; part of the key, so that a row another format wrote
/// is never read as this one.
const FORMAT: &[u8; 4] = b"NMS1";

/// Returns the snapshot key of a view: a hash of the format and of every file's path, blob id
/// and facts version, in view order (file numbers in the name table depend on that order).
pub fn view_key<'a>(
    files: impl Iterator<Item = (&'a str, &'a str, Lang)>,
) -> Result<i64, NavError> {
    let mut versions: Vec<[u8; 8]> = Vec::new();
    let mut names: Vec<(&str, &str)> = Vec::new();
    for (path, oid, lang) in files {
        versions.push(lang.version().to_le_bytes());
        names.push((path, oid));
    }
    let mut parts: Vec<&[u8]> = Vec::with_capacity(names.len() * 3 + 1);
    parts.push(FORMAT);
    for ((path, oid), version) in names.iter().zip(&versions) {
        parts.push(path.as_bytes());
        parts.push(oid.as_bytes());
        parts.push(version);
    }
    Ok(fnv1a(&parts) as i64)
}

/// Encodes the name table `names` for a snapshot (see [`StoredNames`]).
pub fn encode(names: &NameTable<DefId>) -> Stored {
    Stored {
        names: StoredNames::encode(names),
    }
}

/// Returns the name table of a stored snapshot; `None` when it is not one.
pub fn decode(stored: Stored) -> Option<Names> {
    StoredNames::new(stored.names).map(Names::stored)
}

/// The definition-name table: built in memory, or read from a view snapshot, where a name is
/// looked up in the stored bytes until the whole table is needed (to iterate over or to
/// change it), and only then decoded.
#[derive(Default)]
pub struct Names {
    table: OnceLock<NameTable<DefId>>,
    stored: Option<StoredNames>,
}

impl Names {
    /// Returns the names of a table built in memory.
    pub fn new(table: NameTable<DefId>) -> Names {
        Names {
            table: OnceLock::from(table),
            stored: None,
        }
    }

    fn stored(stored: StoredNames) -> Names {
        Names {
            table: OnceLock::new(),
            stored: Some(stored),
        }
    }

    /// Returns the definitions named `name`, in (file, definition) order.
    pub fn ids(&self, name: &str) -> Cow<'_, [DefId]> {
        if let Some(table) = self.table.get() {
            return Cow::Borrowed(table.get(name).map_or(&[][..], Vec::as_slice));
        }
        match &self.stored {
            Some(stored) => Cow::Owned(stored.get(name)),
            None => Cow::Borrowed(&[]),
        }
    }

    /// Returns the whole table, decoding a stored one on first use.
    pub fn table(&self) -> &NameTable<DefId> {
        self.table.get_or_init(|| {
            self.stored
                .as_ref()
                .map(StoredNames::decode_all)
                .unwrap_or_default()
        })
    }

    /// Takes the whole table out (to change it), leaving an empty one.
    pub fn take(&mut self) -> NameTable<DefId> {
        self.table();
        self.stored = None;
        std::mem::take(&mut self.table)
            .into_inner()
            .unwrap_or_default()
    }
}

impl PartialEq for Names {
    fn eq(&self, other: &Names) -> bool {
        self.table() == other.table()
    }
}

impl fmt::Debug for Names {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.table().fmt(f)
    }
}

/// A name table as a snapshot stores it, sorted by name: [`FORMAT`], the number of names,
/// the offset of each name's entry, then the entries — the name's length and bytes, the
/// number of its definitions and each as (file, definition) — every number a little-endian
/// `u32`.
struct StoredNames {
    bytes: Vec<u8>,
    count: usize,
}

/// Returns the little-endian `u32` at `at` in `bytes`, if there is one.
fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

impl StoredNames {
    fn new(bytes: Vec<u8>) -> Option<StoredNames> {
        if bytes.get(..4) != Some(&FORMAT[..]) {
            return None;
        }
        let count = u32_at(&bytes, 4)? as usize;
        let entries = count.checked_mul(4)?.checked_add(8)?;
        (entries <= bytes.len()).then_some(StoredNames { bytes, count })
    }

    fn encode(table: &NameTable<DefId>) -> Vec<u8> {
        let mut names: Vec<(&String, &Vec<DefId>)> = table.iter().collect();
        names.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let mut out = Vec::with_capacity(8 + names.len() * 24);
        out.extend_from_slice(FORMAT);
        out.extend_from_slice(&(names.len() as u32).to_le_bytes());
        let offsets = out.len();
        out.resize(offsets + names.len() * 4, 0);
        for (i, (name, ids)) in names.iter().enumerate() {
            let at = (out.len() as u32).to_le_bytes();
            out[offsets + i * 4..offsets + i * 4 + 4].copy_from_slice(&at);
            out.extend_from_slice(&(name.len() as u32).to_le_bytes());
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(&(ids.len() as u32).to_le_bytes());
            for id in *ids {
                out.extend_from_slice(&id.file.to_le_bytes());
                out.extend_from_slice(&id.def.to_le_bytes());
            }
        }
        out
    }

    /// Returns the name of entry `i` and where its definitions start.
    fn entry(&self, i: usize) -> Option<(&[u8], usize)> {
        let at = u32_at(&self.bytes, 8 + i * 4)? as usize;
        let len = u32_at(&self.bytes, at)? as usize;
        let start = at.checked_add(4)?;
        let name = self.bytes.get(start..start.checked_add(len)?)?;
        Some((name, start + len))
    }

    /// Returns the definitions whose count is at `at`; empty when the bytes are damaged.
    fn ids_at(&self, at: usize) -> Vec<DefId> {
        let n = u32_at(&self.bytes, at).unwrap_or(0) as usize;
        let mut out = Vec::with_capacity(n.min(1024));
        for k in 0..n {
            let base = at + 4 + k * 8;
            match (u32_at(&self.bytes, base), u32_at(&self.bytes, base + 4)) {
                (Some(file), Some(def)) => out.push(DefId { file, def }),
                _ => return Vec::new(),
            }
        }
        out
    }

    fn get(&self, name: &str) -> Vec<DefId> {
        let (mut lo, mut hi) = (0, self.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let Some((found, ids)) = self.entry(mid) else {
                return Vec::new();
            };
            match found.cmp(name.as_bytes()) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return self.ids_at(ids),
            }
        }
        Vec::new()
    }

    fn decode_all(&self) -> NameTable<DefId> {
        let mut table = NameTable::default();
        table.reserve(self.count);
        for i in 0..self.count {
            let Some((name, ids)) = self.entry(i) else {
                break;
            };
            if let Ok(name) = std::str::from_utf8(name) {
                table.insert(name.to_string(), self.ids_at(ids));
            }
        }
        table
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &std::path::Path, args: &[&str]) {
        orchestra_git::git::testing::git(dir, args);
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
        // Nor was the name table.
        assert!(second.names.table.get().is_none());
        assert_eq!(
            second.names.ids("f3").as_ref(),
            first.names.ids("f3").as_ref()
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
    fn a_snapshot_round_trips_the_name_table() {
        let mut names: NameTable<DefId> = NameTable::default();
        names.insert(
            "run".into(),
            vec![DefId { file: 0, def: 0 }, DefId { file: 2, def: 0 }],
        );
        names.insert("stop".into(), vec![DefId { file: 0, def: 1 }]);
        names.insert("é".into(), vec![DefId { file: 1, def: 7 }]);
        for i in 0..100 {
            names.insert(
                format!("n{i}"),
                vec![DefId {
                    file: i,
                    def: i * 2,
                }],
            );
        }
        let loaded = decode(encode(&names)).unwrap();
        // Looked up in the stored bytes, before the table is decoded.
        assert_eq!(loaded.ids("run").as_ref(), names["run"].as_slice());
        assert_eq!(loaded.ids("é").as_ref(), names["é"].as_slice());
        for i in 0..100 {
            let n = format!("n{i}");
            assert_eq!(loaded.ids(&n).as_ref(), names[&n].as_slice());
        }
        assert!(loaded.ids("walk").is_empty());
        assert!(loaded.ids("").is_empty());
        assert!(loaded.table.get().is_none());
        assert_eq!(loaded.table(), &names);
        assert_eq!(loaded.ids("stop").as_ref(), names["stop"].as_slice());
        let empty = decode(encode(&NameTable::default())).unwrap();
        assert!(empty.ids("run").is_empty());
        assert!(empty.table().is_empty());
    }

    #[test]
    fn a_damaged_name_table_is_refused_or_answers_nothing() {
        let mut names: NameTable<DefId> = NameTable::default();
        names.insert("run".into(), vec![DefId { file: 0, def: 0 }]);
        let stored = encode(&names);
        let mut other = stored.names.clone();
        other[0] = b'X';
        assert!(decode(Stored { names: other }).is_none());
        let mut short = stored.names.clone();
        short.truncate(6);
        assert!(decode(Stored { names: short }).is_none());
        let mut cut = stored.names;
        cut.truncate(cut.len() - 3);
        let loaded = decode(Stored { names: cut }).unwrap();
        assert!(loaded.ids("run").is_empty());
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

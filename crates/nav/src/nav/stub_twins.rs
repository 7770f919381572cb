//! A Python module's stub (`m.pyi` beside `m.py`) declares the module's classes again for type
//! checkers, and classes in the stub name the stub's own classes as their bases
//! (`class OrderedMultiDict(MultiDict[K, V])`). jedi, like the interpreter, takes a stub's class
//! and its implementation for one class: the implementations of either are those of both.

use std::collections::HashSet;

use super::index::{DefId, Index};
use super::lang::Lang;

impl Index {
    /// Returns `targets` with the twin of each top-level Python class among them: the class of
    /// the same name at the top level of the module's stub (`m.pyi`), or for a stub's class,
    /// of its implementation (`m.py`).
    pub(super) fn with_stub_twins(&self, targets: HashSet<DefId>) -> HashSet<DefId> {
        let mut out = targets.clone();
        for t in &targets {
            let f = &self.files[t.file as usize];
            let d = self.def(*t);
            if f.lang != Lang::Python || d.kind != "class" || d.parent.is_some() {
                continue;
            }
            let twin = match f.path.strip_suffix(".pyi") {
                Some(stem) => format!("{stem}.py"),
                None => format!("{}i", f.path),
            };
            let Some(tf) = self.file_id(&twin) else {
                continue;
            };
            for (i, td) in self.files[tf as usize].facts.defs.iter().enumerate() {
                if td.parent.is_none() && td.kind == "class" && td.name == d.name {
                    out.insert(DefId {
                        file: tf,
                        def: i as u32,
                    });
                }
            }
        }
        out
    }
}

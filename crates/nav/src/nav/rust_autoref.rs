//! Rust method calls on `self` that autoref reaches through a blanket `impl Trait for &mut T`.
//!
//! In a trait's default method taking `&mut self`, `self` is a `&mut Self`. Method lookup
//! tries that type first, then `&&mut Self`: a method of the trait taking `&self` is found at
//! the second step on `&mut Self` itself when the trait is implemented for `&mut T` (bytes'
//! `impl<T: Buf + ?Sized> Buf for &mut T`), so `self.remaining()` in `Buf::get_u8(&mut self)`
//! calls that impl's `remaining`, not `Buf::remaining` on `Self` — as rustc and rust-analyzer
//! resolve it.

use super::extract::is_function;
use super::index::{DefId, Index};

impl Index {
    /// Returns what the call `self.name()` at `scope` of the Rust file `file` reaches through a
    /// blanket `impl Trait for &mut T` (see the module documentation), given the trait members
    /// `members` the call was bound to: that impl's method of the name, or the impl block when
    /// a macro writes its methods. `None` when the rule does not apply.
    pub(crate) fn autoref_mut_impl(
        &self,
        file: u32,
        scope: Option<u32>,
        members: &[DefId],
    ) -> Option<DefId> {
        let facts = &self.files[file as usize].facts;
        let mut cur = scope;
        let func = loop {
            let c = cur?;
            if is_function(&facts.defs[c as usize].kind) {
                break c;
            }
            cur = facts.defs[c as usize].parent;
        };
        let f = &facts.defs[func as usize];
        let tr = f.parent?;
        let trait_def = &facts.defs[tr as usize];
        if trait_def.kind != "trait" || !f.signature.contains("&mut self") {
            return None;
        }
        let [member] = members else { return None };
        let m = self.def(*member);
        let takes_ref = m.signature.contains("&self") || m.signature.contains("& self");
        if member.file != file || m.parent != Some(tr) || !takes_ref {
            return None;
        }
        let name = &trait_def.name;
        for fi in self.files_mentioning(name) {
            let ff = &self.files[fi as usize].facts;
            for rel in &ff.relations {
                let for_mut_ref = rel.subject.starts_with("&mut ") || rel.subject.starts_with("&'");
                if rel.kind != "implements"
                    || &rel.target != name
                    || !for_mut_ref
                    || !rel.subject.contains("mut ")
                {
                    continue;
                }
                let Some(imp) = ff.defs.iter().position(|d| {
                    d.kind == "impl"
                        && d.span.start_byte <= rel.span.start_byte
                        && rel.span.start_byte < d.body_start
                }) else {
                    continue;
                };
                let own = ff.defs.iter().position(|d| {
                    d.parent == Some(imp as u32) && d.name == m.name && is_function(&d.kind)
                });
                let def = own.unwrap_or(imp) as u32;
                return Some(DefId { file: fi, def });
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::super::at_uses::repo;

    #[test]
    fn self_in_a_mut_self_default_method_reaches_the_impl_for_mut_references() {
        let r = repo(&[(
            "src/lib.rs",
            concat!(
                "pub trait Buf {\n",                                           // 1
                "    fn remaining(&self) -> usize;\n",                         // 2
                "    fn has(&self) -> bool { self.remaining() > 0 }\n",        // 3
                "    fn get(&mut self) -> u8 { self.remaining() as u8 }\n",    // 4
                "    fn skip(&mut self) { self.get(); }\n",                    // 5
                "}\n",                                                         // 6
                "impl<T: Buf + ?Sized> Buf for &mut T {\n",                    // 7
                "    fn remaining(&self) -> usize { (**self).remaining() }\n", // 8
                "    fn get(&mut self) -> u8 { 0 }\n",                         // 9
                "}\n",                                                         // 10
            ),
        )]);
        // `self` is a `&mut Self`: `remaining(&self)` is found on it through the impl for
        // `&mut T`; `get(&mut self)` on `Self` first.
        assert_eq!(r.def("src/lib.rs", 4, "remaining"), ["src/lib.rs:8"]);
        assert_eq!(r.def("src/lib.rs", 3, "remaining"), ["src/lib.rs:2"]);
        assert_eq!(r.def("src/lib.rs", 5, "get"), ["src/lib.rs:4"]);
    }
}

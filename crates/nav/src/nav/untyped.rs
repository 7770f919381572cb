//! References asked at a TypeScript or JavaScript member use whose receiver no rule types
//! (`api.endpoints[name].initiate()`, a parameter typed `any`, a value of a mapped or
//! conditional type) while several definitions carry the name.
//!
//! Which definition such a use reaches is a guess, so listing the guess's uses (every use of
//! the name ranked to the same candidate) answers mostly other symbols. What is certain is
//! that the uses through the same receiver, written the same way in the same function, reach
//! the same member: those are the answer, each labelled a candidate, so the resolved list that
//! `--json` gives stays precise. For the same reason such a use is no reference of any of the
//! candidates when references are asked at a definition.

use std::collections::HashMap;

use super::facts::Ref;
use super::index::Index;
use super::lang::Lang;
use super::query::Location;
use super::resolve::Resolution;
use super::target::{At, Token};

/// Returns `qualifier` without whitespace and non-null assertions, so `endpoint\n  .x` and
/// `endpoint!.x` read as `endpoint.x` does.
fn receiver_key(qualifier: &str) -> String {
    qualifier
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '!')
        .collect()
}

impl Index {
    /// Returns true if and only if `r` of `file` is a member use in an ECMAScript file whose
    /// receiver no rule types while `candidates` definitions carry its name: which of them it
    /// reaches is unknown, so it is no reference of any of them.
    pub(crate) fn is_untyped_member_use(&self, file: u32, r: &Ref, candidates: usize) -> bool {
        let lang = self.files[file as usize].lang;
        matches!(lang, Lang::TypeScript | Lang::Tsx | Lang::JavaScript)
            && candidates >= 2
            && !r.qualifier.is_empty()
            && !matches!(r.qualifier.as_str(), "this" | "super")
    }

    /// Returns the references to answer at `from` when it is a member use of an ECMAScript file
    /// whose receiver the rules cannot type and whose name names several definitions: the uses
    /// of the name through the same receiver in the same function, as candidates. `None` when
    /// the use is not such (the usual answer then applies).
    pub(crate) fn untyped_member_references(
        &self,
        symbol: Option<&str>,
        from: &At,
    ) -> Option<Vec<Location>> {
        let file = self.file_id(&from.path)?;
        let Ok(Token::Ref(asked)) = self.token_at(file, symbol, from) else {
            return None;
        };
        let o = self.resolve_ref(file, asked);
        if o.bound || !self.is_untyped_member_use(file, asked, o.defs.len()) {
            return None;
        }
        let key = receiver_key(&asked.qualifier);
        let same = |r: &Ref| {
            r.name == asked.name
                && r.scope == asked.scope
                && receiver_key(&r.qualifier) == key
                && !self.resolve_ref(file, r).bound
        };
        let mut lines = HashMap::new();
        let out = self
            .refs_of(file)
            .iter()
            .filter(|r| same(r))
            .map(|r| {
                self.ref_location(
                    file,
                    r.span,
                    &r.kind,
                    &r.name,
                    r.scope,
                    Resolution::Candidate,
                    &mut lines,
                )
            })
            .collect();
        Some(out)
    }
}

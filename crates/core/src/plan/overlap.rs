//! Whether two declared scopes can touch the same path.
//!
//! The answer decides which packets may run side by side, so it errs one way only: saying
//! "overlap" for scopes that are in fact disjoint merely serializes two packets, while saying
//! "disjoint" for scopes that share a path would let two workers edit the same file at once.
//!
//! - literal vs literal: equal, or one is a directory containing the other;
//! - literal vs glob: the glob matches the literal path, or could match something beneath it
//!   (checked component by component for plain globs, by literal prefixes otherwise);
//! - glob vs glob: their literal prefixes, compared component by component up to the first
//!   metacharacter, are compatible (every path that matched both would have to satisfy both).

use super::model::Packet;
use super::scope::{Constraint, Part, Pattern, Scope, is_within};
use super::symbols::{SymbolSpans, apart};

/// Returns why packets `a` and `b` may touch the same path, or `None` when their scopes are
/// disjoint.
///
/// A packet whose scope does not compile is treated as overlapping everything: refusing to run
/// it in parallel is the safe reading of a scope nobody can interpret.
pub fn overlap(a: &Packet, b: &Packet) -> Option<String> {
    match (a.scope(), b.scope()) {
        (Ok(sa), Ok(sb)) => sa.overlap(&sb),
        (Err(e), _) | (_, Err(e)) => Some(format!("{e}; treated as overlapping")),
    }
}

impl Scope {
    /// Returns why this scope and `other` may contain a common path, or `None` if they cannot.
    pub fn overlap(&self, other: &Scope) -> Option<String> {
        self.patterns
            .iter()
            .find_map(|a| other.patterns.iter().find_map(|b| pattern_overlap(a, b)))
    }
}

/// How two packets' scopes relate once declared symbols are taken into account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Relation {
    /// No path can be in both scopes.
    Disjoint,
    /// Some path may be changed by both; the reason names it.
    Conflict(String),
    /// The scopes share only these literal files, and in each both packets declared symbols
    /// whose spans keep the margin apart: the packets may run side by side.
    SharedSymbols(Vec<String>),
}

/// Returns how the scopes `sa` of packet `a` and `sb` of packet `b` relate.
///
/// A shared literal file stops being a conflict only when both packets declared symbols in it
/// and those symbols' spans are apart; every other overlap (globs, directories, a file one of
/// them declared no symbols for) stays a conflict.
pub(crate) fn relate(a: usize, sa: &Scope, b: usize, sb: &Scope, spans: &SymbolSpans) -> Relation {
    let mut shared = Vec::new();
    for pa in &sa.patterns {
        for pb in &sb.patterns {
            let Some(reason) = pattern_overlap(pa, pb) else {
                continue;
            };
            if let (Pattern::Literal { path: x, .. }, Pattern::Literal { path: y, .. }) = (pa, pb)
                && x == y
                && let (Some(ka), Some(kb)) = (spans.get(a, x), spans.get(b, y))
                && apart(ka, kb)
            {
                if !shared.contains(x) {
                    shared.push(x.clone());
                }
                continue;
            }
            return Relation::Conflict(reason);
        }
    }
    if shared.is_empty() {
        Relation::Disjoint
    } else {
        Relation::SharedSymbols(shared)
    }
}

/// Returns a reason when some path could match both patterns.
fn pattern_overlap(a: &Pattern, b: &Pattern) -> Option<String> {
    match (a, b) {
        (Pattern::Literal { path: x, .. }, Pattern::Literal { path: y, .. }) => {
            if x == y {
                Some(format!("both declare {}", a.written()))
            } else if is_within(y, x) {
                Some(format!("{} contains {}", a.written(), b.written()))
            } else if is_within(x, y) {
                Some(format!("{} contains {}", b.written(), a.written()))
            } else {
                None
            }
        }
        (Pattern::Glob { .. }, Pattern::Literal { path, .. }) => {
            literal_glob(path, a).then(|| format!("{} overlaps {}", a.written(), b.written()))
        }
        (Pattern::Literal { path, .. }, Pattern::Glob { .. }) => {
            literal_glob(path, b).then(|| format!("{} overlaps {}", b.written(), a.written()))
        }
        (Pattern::Glob { prefix: x, .. }, Pattern::Glob { prefix: y, .. }) => {
            prefixes_compatible(x, y).then(|| format!("{} overlaps {}", a.written(), b.written()))
        }
    }
}

/// Returns true unless no path equal to or beneath `literal` can match `glob`.
fn literal_glob(literal: &str, glob: &Pattern) -> bool {
    let Pattern::Glob {
        matcher,
        parts,
        prefix,
        ..
    } = glob
    else {
        return true;
    };
    // Any path equal to or beneath the literal that the glob matches starts with the literal's
    // components, so they must meet the glob's leading constraints: a cheap first filter.
    if !literal_compatible(literal, prefix) {
        return false;
    }
    if matcher.is_match(literal) {
        return true;
    }
    let Some(parts) = parts else {
        return true;
    };
    let dir: Vec<&str> = literal.split('/').collect();
    for (i, name) in dir.iter().enumerate() {
        // A glob without `**` matches paths of exactly `parts.len()` components; every path
        // beneath the directory has more.
        let Some(part) = parts.get(i) else {
            return false;
        };
        let fits = match part {
            Part::AnyDepth => return true,
            Part::Exact(exact) => exact == name,
            Part::Wildcard(m) => m.is_match(name),
        };
        if !fits {
            return false;
        }
    }
    parts.len() > dir.len()
}

/// Returns true unless a literal path's components rule out the glob's leading constraints,
/// for the components both have.
fn literal_compatible(literal: &str, prefix: &[Constraint]) -> bool {
    literal.split('/').zip(prefix).all(|(name, c)| match c {
        Constraint::Exact(x) => x == name,
        Constraint::StartsWith(p) => name.starts_with(p.as_str()),
    })
}

/// Returns true unless the two constraint lists rule each other out at some component.
fn prefixes_compatible(a: &[Constraint], b: &[Constraint]) -> bool {
    a.iter().zip(b).all(|pair| match pair {
        (Constraint::Exact(x), Constraint::Exact(y)) => x == y,
        (Constraint::Exact(x), Constraint::StartsWith(p))
        | (Constraint::StartsWith(p), Constraint::Exact(x)) => x.starts_with(p.as_str()),
        (Constraint::StartsWith(p), Constraint::StartsWith(q)) => {
            p.starts_with(q.as_str()) || q.starts_with(p.as_str())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ov(a: &[&str], b: &[&str]) -> Option<String> {
        let sa = Scope::new(a).unwrap();
        let sb = Scope::new(b).unwrap();
        let ab = sa.overlap(&sb);
        let ba = sb.overlap(&sa);
        assert_eq!(
            ab.is_some(),
            ba.is_some(),
            "overlap must be symmetric: {a:?} {b:?}"
        );
        ab
    }

    #[test]
    fn literals() {
        assert_eq!(
            ov(&["src/parser.rs"], &["src/parser.rs"]).as_deref(),
            Some("both declare src/parser.rs")
        );
        assert_eq!(
            ov(&["src"], &["src/parser.rs"]).as_deref(),
            Some("src contains src/parser.rs")
        );
        assert_eq!(
            ov(&["src/parser.rs"], &["src/"]).as_deref(),
            Some("src/ contains src/parser.rs")
        );
        assert_eq!(ov(&["src/parser.rs"], &["src/lexer.rs"]), None);
        assert_eq!(ov(&["src/net"], &["src/network"]), None);
        assert_eq!(ov(&["docs"], &["src"]), None);
    }

    #[test]
    fn literal_and_glob() {
        assert_eq!(
            ov(&["src/*.rs"], &["src/parser.rs"]).as_deref(),
            Some("src/*.rs overlaps src/parser.rs")
        );
        assert_eq!(
            ov(&["src/parser.rs"], &["src/*.rs"]).as_deref(),
            Some("src/*.rs overlaps src/parser.rs")
        );
        // A directory literal contains whatever the glob matches beneath it.
        assert!(ov(&["src"], &["src/*.rs"]).is_some());
        assert!(ov(&["src/net"], &["src/*/http.rs"]).is_some());
        assert!(ov(&["src/net"], &["**/http.rs"]).is_some());
        assert!(ov(&["src/net"], &["src/**"]).is_some());
        assert!(ov(&["src/net"], &["src/n?t/"]).is_some());
        assert!(ov(&["src/net"], &["src/{net,io}/*.rs"]).is_some());
        // Disjoint: `*` cannot reach below `src/`, other directories, other names.
        assert_eq!(ov(&["src/parser.txt"], &["src/*.rs"]), None);
        assert_eq!(ov(&["src/net"], &["src/*.rs"]), None);
        assert_eq!(ov(&["docs"], &["src/**/*.rs"]), None);
        assert_eq!(ov(&["src/net"], &["src/io/*.rs"]), None);
        assert_eq!(ov(&["tests/lexer.rs"], &["tests/parser_*.rs"]), None);
    }

    #[test]
    fn glob_and_glob() {
        assert!(ov(&["src/**/*.rs"], &["src/*.rs"]).is_some());
        assert!(ov(&["**/*.md"], &["docs/*.md"]).is_some());
        assert!(ov(&["src/par*"], &["src/parser_*.rs"]).is_some());
        assert!(ov(&["src/*/mod.rs"], &["src/net/*.rs"]).is_some());
        assert_eq!(ov(&["src/*.rs"], &["tests/*.rs"]), None);
        assert_eq!(ov(&["tests/parser_*.rs"], &["tests/lexer_*.rs"]), None);
        assert_eq!(ov(&["src/foo*/x"], &["src/bar/baz*"]), None);
    }

    /// Every pair the analysis calls disjoint must share no path from a sample tree.
    #[test]
    fn disjoint_answers_are_never_wrong_on_a_sample_tree() {
        let tree = [
            "src/lib.rs",
            "src/parser.rs",
            "src/parser.txt",
            "src/net/http.rs",
            "src/net/mod.rs",
            "src/io/file.rs",
            "tests/parser_basic.rs",
            "tests/lexer.rs",
            "docs/a.md",
            "docs/deep/b.md",
            "README.md",
        ];
        let patterns = [
            "src",
            "src/",
            "src/net",
            "src/parser.rs",
            "src/*.rs",
            "src/**",
            "src/**/*.rs",
            "src/*/mod.rs",
            "src/n?t/",
            "src/{net,io}/*.rs",
            "**/*.md",
            "docs/*.md",
            "docs",
            "tests/parser_*.rs",
            "tests/lexer*",
            "**/http.rs",
            "*.md",
            "src/[np]*.rs",
        ];
        for a in patterns {
            for b in patterns {
                let sa = Scope::new(&[a]).unwrap();
                let sb = Scope::new(&[b]).unwrap();
                let shared = tree.iter().find(|p| sa.matches(p) && sb.matches(p));
                if let Some(p) = shared {
                    assert!(
                        sa.overlap(&sb).is_some(),
                        "{a} and {b} both match {p} but were called disjoint"
                    );
                }
            }
        }
    }
}

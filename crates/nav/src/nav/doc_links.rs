//! References written in documentation comments: JSDoc/TSDoc `{@link Name}`,
//! `{@linkcode Name.member}` and `@see Name`, which the TypeScript language service counts as
//! references (so renames and "find references" include them).
//!
//! Comments are single tree-sitter nodes, so a query can select the comments that hold a link
//! (`@doc`) but not the names inside them; this file reads those names from the comment text.

use tree_sitter::Node;

use super::extract::enclosing_def;
use super::facts::{FileFacts, Ref, Span};

/// Appends a `doc` reference for every name linked from the comments `docs` of `source`.
pub(crate) fn doc_link_refs(facts: &mut FileFacts, docs: &[Node], source: &[u8]) {
    for node in docs {
        let start = node.start_byte();
        let Some(text) = source.get(start..node.end_byte()) else {
            continue;
        };
        for (offset, qualifier, name) in links(text) {
            let at = start + offset;
            let before = &text[..offset];
            let row = node.start_position().row + before.iter().filter(|b| **b == b'\n').count();
            let col = match before.iter().rposition(|b| *b == b'\n') {
                Some(nl) => offset - nl - 1,
                None => node.start_position().column + offset,
            };
            facts.refs.push(Ref {
                name: name.to_string(),
                kind: "doc".into(),
                qualifier: qualifier.to_string(),
                span: Span {
                    start_byte: at as u32,
                    end_byte: (at + name.len()) as u32,
                    line: row as u32 + 1,
                    col: col as u32 + 1,
                    end_line: row as u32 + 1,
                },
                scope: enclosing_def(facts, at),
            });
        }
    }
}

/// Returns (byte offset of the name, qualifier, name) of each link in a comment's text:
/// `{@link a.b.C}` gives qualifier `a.b` and name `C`; a `|label` or ` label` after the target
/// is ignored, and so are URLs.
fn links(text: &[u8]) -> Vec<(usize, &str, &str)> {
    let Ok(text) = std::str::from_utf8(text) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for tag in ["{@link ", "{@linkcode ", "{@linkplain ", "@see "] {
        let mut from = 0;
        while let Some(i) = text[from..].find(tag) {
            let begin = from + i + tag.len();
            from = begin;
            let rest = &text[begin..];
            let skip = rest.len() - rest.trim_start().len();
            let target_start = begin + skip;
            let target: &str = text[target_start..]
                .split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '$' | '.' | '#')))
                .next()
                .unwrap_or_default();
            if target.is_empty() || text[target_start + target.len()..].starts_with(':') {
                continue; // empty, or a URL (`https://…`)
            }
            let target = target.trim_end_matches('.');
            let (qualifier, name) = match target.rfind(['.', '#']) {
                Some(d) => (&target[..d], &target[d + 1..]),
                None => ("", target),
            };
            let starts_ok = name
                .chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$');
            if starts_ok {
                out.push((target_start + target.len() - name.len(), qualifier, name));
            }
        }
    }
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::links;

    #[test]
    fn links_are_read_with_their_qualifier_and_offset() {
        let text = b"/** Use {@link mergeMap} or {@linkcode Foo.bar | label}.\n * @see Observable\n * {@link https://rxjs.dev} */";
        let got: Vec<(usize, String, String)> = links(text)
            .into_iter()
            .map(|(o, q, n)| (o, q.to_string(), n.to_string()))
            .collect();
        let s = std::str::from_utf8(text).unwrap();
        assert_eq!(
            got,
            vec![
                (
                    s.find("mergeMap").unwrap(),
                    String::new(),
                    "mergeMap".into()
                ),
                (s.find("bar").unwrap(), "Foo".into(), "bar".into()),
                (
                    s.find("Observable").unwrap(),
                    String::new(),
                    "Observable".into()
                ),
            ]
        );
    }
}

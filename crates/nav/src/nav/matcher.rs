//! A matcher for the structural subset of the tree-sitter query language, run in one plain
//! walk of the tree.
//!
//! tree-sitter's query cursor pays a fixed cost at every node of the tree, whatever the
//! patterns: over the Python standard library a query of one single-node pattern costs about
//! 1.8× a plain cursor walk, and the cursor takes about a third of a cold index's CPU. This
//! matcher looks up the patterns rooted at each node's kind and tries only those.
//!
//! It reads the same query files and numbers patterns and captures as tree-sitter does, so the
//! extractor handles its matches unchanged. It takes patterns made of node types (`(kind …)`,
//! `(_)`, anonymous `"::"`), fields (`field: …`), nested children, alternations (`[…]`), the
//! optional quantifier (`?`), anchors (`.`), negated fields (`!field`), the text predicates
//! `#eq?`, `#not-eq?` and `#match?`, and captures (`@name`). A query file with anything else
//! (other predicates, `*` and `+`, supertypes) is declined as a whole ([`Matcher::compile`]
//! returns `None`) and that language keeps tree-sitter's cursor. Matches come in document
//! order of their root nodes, which is not always tree-sitter's order: `lang` enables the
//! matcher only for languages whose facts were checked to come out the same.
//!
//! Semantics follow tree-sitter's: a pattern's children must be children of the matched node in
//! the order written (not necessarily adjacent unless anchored; anchors look at named nodes
//! only); `(_)` is any named node; an optional child is taken whenever it can match; every
//! distinct way of matching yields one match.

use tree_sitter::{Language, Node, Query, TreeCursor};

/// The compiled patterns of one query.
pub struct Matcher {
    patterns: Vec<Step>,
    /// Text predicates by pattern; a match counts only when all of its pattern's hold.
    predicates: Vec<Vec<Predicate>>,
    /// Pattern indexes by the node kind their root requires.
    by_kind: Vec<Vec<u32>>,
    /// Patterns whose root is `(_)`.
    any_named: Vec<u32>,
}

/// One node of a pattern.
#[derive(Debug, Clone)]
enum Step {
    Node {
        /// `None` for `(_)`; an anonymous node (`"::"`) has its own kind.
        kind: Option<u16>,
        field: Option<u16>,
        captures: Vec<u32>,
        children: Vec<ChildStep>,
        /// `.` before the closing parenthesis: no named child may follow the last one matched.
        anchored_end: bool,
        /// `!field`: the node must have no child in these fields.
        absent: Vec<u16>,
    },
    Alternation {
        field: Option<u16>,
        captures: Vec<u32>,
        alternatives: Vec<Step>,
    },
}

/// A text predicate: `#eq?`, `#not-eq?` (with a string or another capture) or `#match?`.
#[derive(Debug, Clone)]
enum Predicate {
    EqString {
        capture: u32,
        text: String,
        positive: bool,
    },
    EqCapture {
        a: u32,
        b: u32,
        positive: bool,
    },
    Match {
        capture: u32,
        regex: regex_automata::meta::Regex,
    },
}

impl Predicate {
    /// Whether the captures of a match satisfy it, as tree-sitter decides: every node of the
    /// capture must pass, and an absent capture passes.
    fn holds(&self, captures: &[(u32, Node<'_>)], source: &[u8]) -> bool {
        let text = |n: &Node<'_>| source.get(n.start_byte()..n.end_byte()).unwrap_or(&[]);
        let nodes = |c: u32| {
            captures
                .iter()
                .filter(move |(i, _)| *i == c)
                .map(|(_, n)| n)
        };
        match self {
            Predicate::EqString {
                capture,
                text: want,
                positive,
            } => nodes(*capture).all(|n| (text(n) == want.as_bytes()) == *positive),
            Predicate::EqCapture { a, b, positive } => {
                let (xs, ys): (Vec<_>, Vec<_>) = (nodes(*a).collect(), nodes(*b).collect());
                xs.len() == ys.len()
                    && xs
                        .iter()
                        .zip(&ys)
                        .all(|(x, y)| (text(x) == text(y)) == *positive)
            }
            Predicate::Match { capture, regex } => nodes(*capture).all(|n| regex.is_match(text(n))),
        }
    }
}

/// A step among a node's children.
#[derive(Debug, Clone)]
struct ChildStep {
    step: Step,
    /// `?`: taken when some child matches it; the pattern matches without it only otherwise.
    optional: bool,
    /// `.` before it: no named child may lie between it and the previous child matched (or the
    /// start of the children, for the first step).
    immediate: bool,
}

impl Step {
    fn field(&self) -> Option<u16> {
        match self {
            Step::Node { field, .. } | Step::Alternation { field, .. } => *field,
        }
    }
}

/// A match: the pattern's index and its captures, as (capture index, node).
pub struct Hit<'a, 't> {
    pub pattern: usize,
    pub captures: &'a [(u32, Node<'t>)],
}

impl Matcher {
    /// Compiles `source` (the text `query` was compiled from) for `language`; `None` when the
    /// source uses anything outside the supported subset, or numbers patterns or captures
    /// differently from `query`.
    pub fn compile(language: &Language, source: &str, query: &Query) -> Option<Matcher> {
        let mut parser = Parser {
            text: source.as_bytes(),
            at: 0,
            language,
            query,
            predicates: Vec::new(),
        };
        let mut patterns = Vec::new();
        let mut predicates = Vec::new();
        loop {
            parser.skip_space();
            if parser.at >= parser.text.len() {
                break;
            }
            // `((node) @capture (#predicate …))`: a pattern grouped with its predicates.
            let grouped = parser.text.get(parser.at + 1..).is_some_and(|rest| {
                rest.iter()
                    .find(|b| !b.is_ascii_whitespace())
                    .is_some_and(|b| *b == b'(')
            });
            if grouped {
                parser.at += 1;
            }
            let step = parser.node(None)?;
            let captures = parser.captures()?;
            if grouped {
                while parser.peek()? != b')' {
                    parser.predicate()?;
                }
                parser.at += 1;
            }
            patterns.push(with_captures(step, captures));
            predicates.push(std::mem::take(&mut parser.predicates));
        }
        if patterns.len() != query.pattern_count() {
            return None;
        }
        let mut by_kind: Vec<Vec<u32>> = vec![Vec::new(); language.node_kind_count()];
        let mut any_named = Vec::new();
        for (i, p) in patterns.iter().enumerate() {
            match p {
                Step::Node {
                    kind: Some(k),
                    field: None,
                    ..
                } => by_kind.get_mut(usize::from(*k))?.push(i as u32),
                Step::Node {
                    kind: None,
                    field: None,
                    ..
                } => any_named.push(i as u32),
                _ => return None,
            }
        }
        Some(Matcher {
            patterns,
            predicates,
            by_kind,
            any_named,
        })
    }

    /// Calls `each` with every match in the tree under `root`, in document order of the
    /// matched root nodes (pattern order at the same node).
    ///
    /// The walk lists each node's children once, with their field ids, and uses that list both
    /// to match the patterns rooted at the node and to go on to the children.
    pub fn for_each_match<'t>(
        &self,
        root: Node<'t>,
        source: &[u8],
        mut each: impl FnMut(Hit<'_, 't>),
    ) {
        let mut ctx = Ctx {
            listed: Vec::new(),
            lister: root.walk(),
        };
        let mut caps: Vec<(u32, Node<'t>)> = Vec::new();
        let mut both: Vec<u32> = Vec::new();
        // Children lists by depth (kept for their capacity) and the next child to visit.
        let mut levels: Vec<(Vec<Child<'t>>, usize)> = Vec::new();
        let mut depth = 0;
        let mut node = root;
        loop {
            // List the node's children into this depth's buffer.
            if levels.len() == depth {
                levels.push((Vec::new(), 0));
            }
            let mut list = std::mem::take(&mut levels[depth].0);
            list.clear();
            // Match the patterns rooted here.
            // ERROR nodes have a kind beyond the grammar's; no pattern is rooted there.
            let roots = self
                .by_kind
                .get(usize::from(node.kind_id()))
                .map_or(&[][..], Vec::as_slice);
            let candidates: &[u32] = if self.any_named.is_empty() || !node.is_named() {
                roots
            } else {
                both.clear();
                both.extend(roots.iter().chain(&self.any_named));
                both.sort_unstable();
                &both
            };
            // Field ids are looked up only where patterns may ask for them.
            if node.child_count() > 0 {
                ctx.list_into(node, &mut list, !candidates.is_empty());
            }
            if !candidates.is_empty() {
                ctx.listed.clear();
                for &p in candidates {
                    caps.clear();
                    matches(
                        &self.patterns[p as usize],
                        node,
                        Some(&list),
                        &mut caps,
                        &mut ctx,
                        &mut |found, _| {
                            let holds = self.predicates[p as usize]
                                .iter()
                                .all(|pr| pr.holds(found, source));
                            if holds {
                                each(Hit {
                                    pattern: p as usize,
                                    captures: found,
                                })
                            }
                        },
                    );
                }
            }
            levels[depth] = (list, 0);
            // Next: this node's first child, else the next unvisited sibling up the levels.
            loop {
                let (list, next) = &mut levels[depth];
                if let Some(&(child, _)) = list.get(*next) {
                    *next += 1;
                    node = child;
                    depth += 1;
                    break;
                }
                if depth == 0 {
                    return;
                }
                depth -= 1;
            }
        }
    }
}

/// A child node with the id of the field it is in, if any.
type Child<'t> = (Node<'t>, Option<u16>);

/// A node's children.
type Children<'t> = std::rc::Rc<Vec<Child<'t>>>;

/// State kept while matching at one root node: the children lists made so far (by node id)
/// and the cursor that makes them.
struct Ctx<'t> {
    listed: Vec<(usize, Children<'t>)>,
    lister: TreeCursor<'t>,
}

impl<'t> Ctx<'t> {
    /// Appends the children of `node` to `list`, with their field ids when `fields`.
    fn list_into(&mut self, node: Node<'t>, list: &mut Vec<Child<'t>>, fields: bool) {
        self.lister.reset(node);
        if self.lister.goto_first_child() {
            loop {
                let field = if fields {
                    self.lister.field_id().map(|f| f.get())
                } else {
                    None
                };
                list.push((self.lister.node(), field));
                if !self.lister.goto_next_sibling() {
                    break;
                }
            }
        }
    }

    /// The children of `node` with their field ids.
    fn children(&mut self, node: Node<'t>) -> Children<'t> {
        if let Some((_, list)) = self.listed.iter().find(|(id, _)| *id == node.id()) {
            return list.clone();
        }
        let mut list = Vec::new();
        self.list_into(node, &mut list, true);
        let list = std::rc::Rc::new(list);
        self.listed.push((node.id(), list.clone()));
        list
    }
}

/// What to do with a complete set of captures; gets the matching context back to go on.
type Done<'c, 't> = dyn FnMut(&mut Vec<(u32, Node<'t>)>, &mut Ctx<'t>) + 'c;

/// Tries `step` at `node` (whose children are `known` when already listed); for every way it
/// matches, calls `done` with the captures so far plus the step's own. `caps` is as it was on
/// return.
fn matches<'t>(
    step: &Step,
    node: Node<'t>,
    known: Option<&[Child<'t>]>,
    caps: &mut Vec<(u32, Node<'t>)>,
    ctx: &mut Ctx<'t>,
    done: &mut Done<'_, 't>,
) {
    match step {
        Step::Alternation {
            captures,
            alternatives,
            ..
        } => {
            for alt in alternatives {
                let mark = caps.len();
                caps.extend(captures.iter().map(|&c| (c, node)));
                matches(alt, node, known, caps, ctx, done);
                caps.truncate(mark);
            }
        }
        Step::Node {
            kind,
            captures,
            children,
            anchored_end,
            absent,
            ..
        } => {
            let fits = match kind {
                Some(k) => node.kind_id() == *k,
                None => node.is_named(),
            };
            if !fits || absent.iter().any(|f| node.child_by_field_id(*f).is_some()) {
                return;
            }
            let mark = caps.len();
            caps.extend(captures.iter().map(|&c| (c, node)));
            if children.is_empty() {
                done(caps, ctx);
            } else {
                let end = *anchored_end;
                match known {
                    Some(list) => match_children(children, end, list, 0, caps, ctx, done),
                    None => {
                        let list = ctx.children(node);
                        match_children(children, end, &list, 0, caps, ctx, done);
                    }
                }
            }
            caps.truncate(mark);
        }
    }
}

/// Matches `steps` in order against children `list[from..]`.
fn match_children<'t>(
    steps: &[ChildStep],
    anchored_end: bool,
    list: &[Child<'t>],
    from: usize,
    caps: &mut Vec<(u32, Node<'t>)>,
    ctx: &mut Ctx<'t>,
    done: &mut Done<'_, 't>,
) {
    let Some((first, rest)) = steps.split_first() else {
        if !anchored_end || list[from..].iter().all(|(n, _)| !n.is_named()) {
            done(caps, ctx);
        }
        return;
    };
    // An optional step that can match is taken (as tree-sitter does); only when it cannot is
    // the pattern matched without it.
    let mut found = 0;
    for (i, &(child, field)) in list.iter().enumerate().skip(from) {
        // Anchors look at named nodes only: anonymous ones may lie between.
        if first.immediate && i > from && list[i - 1].0.is_named() {
            break;
        }
        let step = &first.step;
        if step.field().is_some() && step.field() != field {
            continue;
        }
        matches(step, child, None, caps, ctx, &mut |caps, ctx| {
            let mut counted = |caps: &mut Vec<(u32, Node<'t>)>, ctx: &mut Ctx<'t>| {
                found += 1;
                done(caps, ctx);
            };
            match_children(rest, anchored_end, list, i + 1, caps, ctx, &mut counted)
        });
    }
    if first.optional && found == 0 {
        match_children(rest, anchored_end, list, from, caps, ctx, done);
    }
}

fn with_captures(step: Step, extra: Vec<u32>) -> Step {
    if extra.is_empty() {
        return step;
    }
    match step {
        Step::Node {
            kind,
            field,
            mut captures,
            children,
            anchored_end,
            absent,
        } => {
            captures.extend(extra);
            Step::Node {
                kind,
                field,
                captures,
                children,
                anchored_end,
                absent,
            }
        }
        Step::Alternation {
            field,
            mut captures,
            alternatives,
        } => {
            captures.extend(extra);
            Step::Alternation {
                field,
                captures,
                alternatives,
            }
        }
    }
}

/// Reads query text; every method returns `None` on anything outside the subset.
struct Parser<'a> {
    text: &'a [u8],
    at: usize,
    language: &'a Language,
    query: &'a Query,
    /// The predicates of the pattern being read.
    predicates: Vec<Predicate>,
}

impl Parser<'_> {
    fn skip_space(&mut self) {
        while self.at < self.text.len() {
            match self.text[self.at] {
                b' ' | b'\t' | b'\n' | b'\r' => self.at += 1,
                b';' => {
                    while self.at < self.text.len() && self.text[self.at] != b'\n' {
                        self.at += 1;
                    }
                }
                _ => break,
            }
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_space();
        self.text.get(self.at).copied()
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.peek()? == b).then(|| self.at += 1)
    }

    fn ident(&mut self) -> Option<&str> {
        self.skip_space();
        let start = self.at;
        while self.at < self.text.len()
            && (self.text[self.at].is_ascii_alphanumeric()
                || matches!(self.text[self.at], b'_' | b'.' | b'-'))
        {
            self.at += 1;
        }
        (self.at > start)
            .then(|| std::str::from_utf8(&self.text[start..self.at]).ok())
            .flatten()
    }

    /// `@a @b …` after a node or alternation.
    fn captures(&mut self) -> Option<Vec<u32>> {
        let mut out = Vec::new();
        while self.peek() == Some(b'@') {
            self.at += 1;
            out.push(self.capture_index()?);
        }
        Some(out)
    }

    /// `(#eq? @a "text")`, `(#eq? @a @b)`, `(#not-eq? …)` or `(#match? @a "regex")`, added to
    /// the current pattern's predicates.
    fn predicate(&mut self) -> Option<()> {
        self.eat(b'(')?;
        self.eat(b'#')?;
        let name = self.ident()?.to_string();
        if !name.ends_with('?') && self.text.get(self.at) == Some(&b'?') {
            self.at += 1;
        }
        let name = name.trim_end_matches('?').to_string();
        self.eat(b'@')?;
        let capture = self.capture_index()?;
        let positive = match name.as_str() {
            "eq" | "match" => true,
            "not-eq" => false,
            _ => return None,
        };
        let predicate = match self.peek()? {
            b'@' => {
                self.at += 1;
                let b = self.capture_index()?;
                if name == "match" {
                    return None;
                }
                Predicate::EqCapture {
                    a: capture,
                    b,
                    positive,
                }
            }
            b'"' => {
                let text = self.string()?;
                if name == "match" {
                    Predicate::Match {
                        capture,
                        regex: regex_automata::meta::Regex::new(&text).ok()?,
                    }
                } else {
                    Predicate::EqString {
                        capture,
                        text,
                        positive,
                    }
                }
            }
            _ => return None,
        };
        self.eat(b')')?;
        self.predicates.push(predicate);
        Some(())
    }

    /// A capture name after its `@`, as the query's capture index.
    fn capture_index(&mut self) -> Option<u32> {
        let name = self.ident()?.to_string();
        self.query.capture_index_for_name(&name)
    }

    /// A double-quoted string with tree-sitter's escapes.
    fn string(&mut self) -> Option<String> {
        self.eat(b'"')?;
        let mut out = Vec::new();
        loop {
            let b = *self.text.get(self.at)?;
            self.at += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    let e = *self.text.get(self.at)?;
                    self.at += 1;
                    out.push(match e {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'0' => 0,
                        other => other,
                    });
                }
                other => out.push(other),
            }
        }
        String::from_utf8(out).ok()
    }

    /// One alternative of `[…]`: a node or an anonymous node.
    fn alternative(&mut self) -> Option<Step> {
        match self.peek()? {
            b'(' => self.node(None),
            _ => None,
        }
    }

    /// `(kind child…)` or `(_ …)`.
    fn node(&mut self, field: Option<u16>) -> Option<Step> {
        self.eat(b'(')?;
        let kind_name = self.ident()?.to_string();
        let kind = if kind_name == "_" {
            None
        } else {
            let id = self.language.id_for_node_kind(&kind_name, true);
            // A supertype (`(expression)`) matches any of its subtypes in tree-sitter; this
            // matcher compares kinds exactly, so it declines them.
            if id == 0 || self.language.node_kind_is_supertype(id) {
                return None;
            }
            Some(id)
        };
        let mut children = Vec::new();
        let mut immediate = false;
        let mut anchored_end = false;
        let mut absent = Vec::new();
        loop {
            match self.peek()? {
                b')' => break,
                b'!' => {
                    self.at += 1;
                    let name = self.ident()?.to_string();
                    absent.push(self.language.field_id_for_name(&name)?.get());
                }
                b'(' if self.text.get(self.at + 1) == Some(&b'#') => self.predicate()?,
                b'.' => {
                    self.at += 1;
                    if self.peek()? == b')' {
                        anchored_end = true;
                    } else {
                        immediate = true;
                    }
                }
                _ => {
                    let (step, optional) = self.child()?;
                    children.push(ChildStep {
                        step,
                        optional,
                        immediate,
                    });
                    immediate = false;
                }
            }
        }
        self.at += 1;
        Some(Step::Node {
            kind,
            field,
            captures: Vec::new(),
            children,
            anchored_end,
            absent,
        })
    }

    /// `[field:] (node…)[?] @captures`, `[field:] [alternatives][?] @captures` or
    /// `"anonymous" @captures`; returns the step and whether it is optional.
    fn child(&mut self) -> Option<(Step, bool)> {
        let save = self.at;
        let mut field = None;
        if self.peek()?.is_ascii_alphabetic() {
            let name = self.ident()?.to_string();
            self.eat(b':')?;
            field = Some(self.language.field_id_for_name(&name)?.get());
        } else {
            self.at = save;
        }
        let step = match self.peek()? {
            b'(' => self.node(field)?,
            b'[' => {
                self.at += 1;
                let mut alternatives = Vec::new();
                while self.peek()? != b']' {
                    let alt = self.alternative()?;
                    let caps = self.captures()?;
                    alternatives.push(with_captures(alt, caps));
                }
                self.at += 1;
                Step::Alternation {
                    field,
                    captures: Vec::new(),
                    alternatives,
                }
            }
            b'"' => {
                let name = self.string()?;
                let id = self.language.id_for_node_kind(&name, false);
                if id == 0 {
                    return None;
                }
                Step::Node {
                    kind: Some(id),
                    field,
                    captures: Vec::new(),
                    children: Vec::new(),
                    anchored_end: false,
                    absent: Vec::new(),
                }
            }
            _ => return None,
        };
        // `?` right after the step (before its captures); `*` and `+` are declined below.
        let optional = self.text.get(self.at) == Some(&b'?');
        if optional {
            self.at += 1;
        }
        let caps = self.captures()?;
        Some((with_captures(step, caps), optional))
    }
}

#[cfg(test)]
mod tests {
    use streaming_iterator::StreamingIterator;
    use tree_sitter::{Parser as TsParser, QueryCursor};

    use super::*;

    /// Every match as (pattern, [(capture, start byte)]), sorted.
    type Found = Vec<(usize, Vec<(u32, usize)>)>;

    fn both(query_text: &str, code: &str) -> (Option<Found>, Found) {
        both_in(tree_sitter_python::LANGUAGE.into(), query_text, code)
    }

    fn both_in(language: Language, query_text: &str, code: &str) -> (Option<Found>, Found) {
        let query = Query::new(&language, query_text).unwrap();
        let mut parser = TsParser::new();
        parser.set_language(&language).unwrap();
        let tree = parser.parse(code, None).unwrap();
        let ours = Matcher::compile(&language, query_text, &query).map(|m| {
            let mut found = Vec::new();
            m.for_each_match(tree.root_node(), code.as_bytes(), |hit| {
                let caps: Vec<(u32, usize)> = hit
                    .captures
                    .iter()
                    .map(|(c, n)| (*c, n.start_byte()))
                    .collect();
                found.push((hit.pattern, caps));
            });
            found.sort();
            found
        });
        let mut cursor = QueryCursor::new();
        let mut theirs = Vec::new();
        let mut matches = cursor.matches(&query, tree.root_node(), code.as_bytes());
        while let Some(m) = matches.next() {
            let mut caps: Vec<(u32, usize)> = m
                .captures()
                .iter()
                .map(|c| (c.index, c.node.start_byte()))
                .collect();
            caps.sort();
            theirs.push((m.pattern_index, caps));
        }
        theirs.sort();
        let ours = ours.map(|mut o| {
            for (_, caps) in &mut o {
                caps.sort();
            }
            o.sort();
            o
        });
        (ours, theirs)
    }

    const CODE: &str = "\
import os.path as p, sys
VALUE = compute(a, b)
from .a import b as c, d
class K(Base, mod.Mixin):
    x = 1
    def f(self, a, b=2, *args):
        g(a).h(b)
        return [i for i in a]
def top(q):
    @deco
    def inner(): pass
    return q.attr
";

    #[test]
    fn matches_what_the_query_cursor_matches() {
        for query in [
            // Plain kinds, several captures on one node, one match per identifier.
            "(identifier) @name @ref",
            // Fields, nesting, wildcards.
            "(call function: (attribute object: (_) @q attribute: (identifier) @name)) @call",
            "(class_definition name: (identifier) @name body: (_) @body) @def",
            // One match per child that fits, in order.
            "(parameters (identifier) @local)",
            "(module (expression_statement (assignment left: (identifier) @name) @def))",
            // Alternations with captures inside, under a field.
            "(class_definition superclasses: (argument_list [(identifier) @t (attribute object: (_) @q attribute: (identifier) @t)])) @rel",
            // Several patterns, including one rooted at a wildcard.
            "(import_from_statement module_name: (_) @m name: (aliased_import name: (dotted_name) @n alias: (identifier) @a)) @imp\n(_ (decorator) @d)\n(function_definition name: (identifier) @f)",
            // Two ordered children without fields.
            "(argument_list (identifier) @a (identifier) @b)",
        ] {
            let (ours, theirs) = both(query, CODE);
            let ours = ours.unwrap_or_else(|| panic!("declined: {query}"));
            assert!(!theirs.is_empty(), "{query}");
            assert_eq!(ours, theirs, "{query}");
        }
    }

    const RUST: &str = "\
struct A { x: u8 }
struct B;
struct C(u8);
fn f<T: Clone>(t: T) -> T {
    let v = vec![T::default(), make(1), a.b(2)];
    println!(\"{}\", Type::new(3));
    macro_rules! m { ($t:ty) => { $t::new() }; }
    let w = make(1, /* two */ 2, g(3));
    t.clone()
}
";

    #[test]
    fn quantifiers_anchors_and_anonymous_nodes_match_as_in_tree_sitter() {
        for query in [
            // An optional child, present or not.
            "(struct_item name: (type_identifier) @name body: (_)? @body) @def",
            // Anchors around an anonymous node, and an anchored first child.
            "(token_tree [(identifier) (metavariable)] @q . \"::\" . (identifier) @name . (token_tree)) @call",
            "(token_tree (identifier) @name . (token_tree)) @call",
            "(arguments . (_) @first)",
            "(arguments (_) @last .)",
            "(parameters . (parameter pattern: (identifier) @p))",
        ] {
            let (ours, theirs) = both_in(tree_sitter_rust::LANGUAGE.into(), query, RUST);
            let ours = ours.unwrap_or_else(|| panic!("declined: {query}"));
            assert!(!theirs.is_empty(), "{query}");
            assert_eq!(ours, theirs, "{query}");
        }
    }

    const TS: &str = "\
import { a as b, c } from './x';
export { d, e as f };
export * from './y';
const g = require('z');
const h = notrequire('w');
/** See {@link Foo} */
function k() {}
";

    #[test]
    fn negated_fields_and_text_predicates_match_as_in_tree_sitter() {
        for query in [
            "(import_specifier !alias name: (_) @name)",
            "(export_statement (export_clause (export_specifier name: (identifier) @name)) !source) @local",
            "(call_expression function: (identifier) @f (#eq? @f \"require\")) @call",
            "(call_expression function: (identifier) @f (#not-eq? @f \"require\")) @call",
            "((comment) @doc (#match? @doc \"\\\\{@link|@see \"))",
            "((identifier) @a (#eq? @a @a))",
        ] {
            let (ours, theirs) = both_in(
                tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
                query,
                TS,
            );
            let ours = ours.unwrap_or_else(|| panic!("declined: {query}"));
            assert!(!theirs.is_empty(), "{query}");
            assert_eq!(ours, theirs, "{query}");
        }
    }

    #[test]
    fn anything_beyond_the_subset_is_declined() {
        for query in [
            "((identifier) @a (#any-of? @a \"x\" \"y\"))",
            "((identifier) @a (#not-match? @a \"x\"))",
            "(argument_list (_)+ @a)",
            "((identifier) @a (#set! kind \"x\"))",
            "(identifier)* @a",
            "(expression) @e",
        ] {
            let language: Language = tree_sitter_python::LANGUAGE.into();
            // Each is a valid query, so the refusal is the matcher's.
            let q = Query::new(&language, query).unwrap_or_else(|e| panic!("{query}: {e}"));
            assert!(
                Matcher::compile(&language, query, &q).is_none(),
                "accepted: {query}"
            );
        }
    }
}

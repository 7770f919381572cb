//! TypeScript and JavaScript narrowing: inside `if (x instanceof C) { … }`, after
//! `if (!(x instanceof C)) return`, and where a user type guard holds (`if (isC(x)) { … }`
//! with `function isC(v): v is C`), `x` is a `C`, whatever it was declared as.
//!
//! A check becomes a [`TypeFact`] of kind `narrow` (the class checked) or `guard` (the guard
//! called) whose span is the region where it holds; receiver typing prefers the innermost such
//! region around a use to the name's other bindings when the check proves a type of the
//! repository (a call that is no guard, `x instanceof Error`, change nothing). Only checks of a
//! plain name at the top of an `if` condition (or one side of its `&&`) narrow; anything else
//! leaves typing as it was.

use tree_sitter::Node;

use super::facts::{Span, TypeFact};
use super::index::{DefId, Index};
use super::types::{MAX_DEPTH, type_path};

/// Kinds of the type facts that narrow a name within their span.
pub(crate) const NARROWING: &[&str] = &["narrow", "guard"];

fn text<'s>(node: Node, source: &'s [u8]) -> &'s str {
    std::str::from_utf8(&source[node.byte_range()]).unwrap_or_default()
}

/// Returns `node` without the parentheses around it.
fn unparenthesized(mut node: Node) -> Option<Node> {
    while node.kind() == "parenthesized_expression" {
        node = node.named_child(0)?;
    }
    Some(node)
}

/// Returns the name a check narrows, what to (the class, or the guard called) and the kind of
/// fact: `x instanceof C` → (`x`, `C`, `narrow`), `isC(x)` → (`x`, `isC`, `guard`).
fn check<'s>(expr: Node, source: &'s [u8]) -> Option<(&'s str, &'s str, &'static str)> {
    match expr.kind() {
        "binary_expression" => {
            let op = text(expr.child_by_field_name("operator")?, source);
            let left = unparenthesized(expr.child_by_field_name("left")?)?;
            let right = unparenthesized(expr.child_by_field_name("right")?)?;
            if op == "&&" {
                return check(left, source).or_else(|| check(right, source));
            }
            let class = matches!(right.kind(), "identifier" | "member_expression");
            (op == "instanceof" && left.kind() == "identifier" && class)
                .then(|| (text(left, source), text(right, source), "narrow"))
        }
        "call_expression" => {
            let callee = expr.child_by_field_name("function")?;
            let args = expr.child_by_field_name("arguments")?;
            let first = args.named_child(0)?;
            (callee.kind() == "identifier" && first.kind() == "identifier")
                .then(|| (text(first, source), text(callee, source), "guard"))
        }
        _ => None,
    }
}

/// Returns true if and only if control never falls out of `stmt` (`return`, `throw`, or a
/// block ending in one).
fn exits(stmt: Node) -> bool {
    match stmt.kind() {
        "return_statement" | "throw_statement" | "continue_statement" | "break_statement" => true,
        "statement_block" => {
            let mut cursor = stmt.walk();
            let last = stmt
                .named_children(&mut cursor)
                .filter(|c| c.kind() != "comment")
                .last();
            last.is_some_and(exits)
        }
        _ => false,
    }
}

/// Returns the span from the end of `from` to the end of `to`.
fn span_between(from: Node, to: Node) -> Span {
    let s = from.end_position();
    let e = to.end_position();
    Span {
        start_byte: from.end_byte() as u32,
        end_byte: to.end_byte() as u32,
        line: s.row as u32 + 1,
        col: s.column as u32 + 1,
        end_line: e.row as u32 + 1,
    }
}

/// Returns the narrowing fact of the `if` statement whose condition is `condition`, if it
/// checks a name: spanning the consequence, or, for a negated check whose consequence leaves
/// the block, the rest of the block after the statement. `scope` is the binding's scope.
pub(crate) fn narrowing_fact(
    condition: Node,
    source: &[u8],
    scope: Option<u32>,
) -> Option<TypeFact> {
    let stmt = condition.parent().filter(|p| p.kind() == "if_statement")?;
    let mut expr = unparenthesized(condition)?;
    let negated = expr.kind() == "unary_expression"
        && expr
            .child_by_field_name("operator")
            .is_some_and(|o| text(o, source) == "!");
    if negated {
        expr = unparenthesized(expr.child_by_field_name("argument")?)?;
        // `!(a && b)` tells nothing about either.
        if expr.kind() == "binary_expression"
            && expr
                .child_by_field_name("operator")
                .is_some_and(|o| text(o, source) != "instanceof")
        {
            return None;
        }
    }
    let (var, ty, kind) = check(expr, source)?;
    let consequence = stmt.child_by_field_name("consequence")?;
    let span = if negated {
        if stmt.child_by_field_name("alternative").is_some() || !exits(consequence) {
            return None;
        }
        span_between(stmt, stmt.parent()?)
    } else {
        super::extract::span_of(consequence)
    };
    Some(TypeFact {
        var: var.to_string(),
        ty: ty.to_string(),
        kind: kind.to_string(),
        span,
        scope,
    })
}

impl Index {
    /// Returns the innermost narrowing of `var` around byte `at` of `file` that no
    /// re-assignment of `var` inside it, before `at`, undoes.
    pub(crate) fn narrowing_at(&self, file: u32, var: &str, at: u32) -> Option<&TypeFact> {
        let types = &self.files[file as usize].facts.types;
        let n = types
            .iter()
            .filter(|t| {
                NARROWING.contains(&t.kind.as_str())
                    && t.var == var
                    && t.span.start_byte <= at
                    && at < t.span.end_byte
            })
            .max_by_key(|t| t.span.start_byte)?;
        let reassigned = types.iter().any(|t| {
            t.var == var
                && !NARROWING.contains(&t.kind.as_str())
                && n.span.start_byte <= t.span.start_byte
                && t.span.start_byte < at
        });
        (!reassigned).then_some(n)
    }

    /// Returns the type a narrowing fact of `file` gives its name: the class checked, or what
    /// the guard called declares (`v is C`).
    pub(crate) fn narrowed_type(&self, file: u32, fact: &TypeFact, depth: usize) -> Option<DefId> {
        if depth > MAX_DEPTH {
            return None;
        }
        let lang = self.files[file as usize].lang;
        let at = fact.span.start_byte;
        if fact.kind == "narrow" {
            let path = type_path(lang, &fact.ty, false)?;
            return self.single_type(file, &path, at, fact.scope, depth + 1);
        }
        let o = self.resolve_unqualified(file, &fact.ty, at, fact.scope, depth + 1)?;
        let ([guard], true) = (o.defs.as_slice(), o.bound) else {
            return None;
        };
        let ret = self.declared_return(*guard)?;
        let (_, guarded) = ret.ty.split_once(" is ")?;
        let path = type_path(self.files[guard.file as usize].lang, guarded, false)?;
        self.single_type(
            guard.file,
            &path,
            ret.span.start_byte,
            Some(guard.def),
            depth + 1,
        )
    }
}

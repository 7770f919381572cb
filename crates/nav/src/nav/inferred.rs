//! What TypeScript and JavaScript infer where the code declares no type: the object literal a
//! factory returns (`function createX() { return { batch() {…} } }`) stands for the type of
//! what a call makes, and a generic function's return type is bound by its arguments
//! (`difference<T>(a: Array<T>, b: Array<T>): Array<T>` called with `Observer[]` gives
//! observers), and an array built by `xs.map((x) => x.field)` holds what the callback returns.
//!
//! Both stay shallow like the rest of receiver typing: a factory is followed only when it
//! declares no return type and returns a literal, and a type parameter is bound only by a
//! parameter declared as that parameter or as a collection of it, to an argument whose own type
//! the rules can tell.

use super::elements::{element_text, type_arguments};
use super::extract::is_function;
use super::facts::TypeFact;
use super::index::{DefId, Index};
use super::lang::Lang;
use super::typefacts::LITERAL;
use super::types::{MAX_DEPTH, type_path};

/// Returns true if and only if `lang` is TypeScript, TSX or JavaScript.
fn is_ecma(lang: Lang) -> bool {
    matches!(lang, Lang::TypeScript | Lang::Tsx | Lang::JavaScript)
}

/// Returns `text` without the `null` and `undefined` of a union (`T | undefined` → `T`), or
/// `None` when more than one type is left.
fn without_nullish(text: &str) -> Option<&str> {
    let mut parts = text
        .split('|')
        .map(str::trim)
        .filter(|p| !p.is_empty() && !matches!(*p, "null" | "undefined"));
    let one = parts.next()?;
    parts.next().is_none().then_some(one)
}

/// Splits a call written with its arguments (`difference(prev, next)`) into the callee and
/// the text between the parentheses; `None` for anything else.
pub(crate) fn split_arguments(call: &str) -> Option<(&str, &str)> {
    let call = call.trim();
    let inner = call.strip_suffix(')')?;
    let mut depth = 0usize;
    for (i, c) in inner.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' if depth == 0 => {
                let callee = inner[..i].trim_end();
                return (!callee.is_empty() && !callee.ends_with(['(', ')', '?']))
                    .then(|| (callee, &inner[i + 1..]));
            }
            '(' => depth -= 1,
            _ => {}
        }
    }
    None
}

impl Index {
    /// Returns `func` itself when it is a TypeScript or JavaScript function that declares no
    /// return type and returns an object literal: the literal's methods are the members of
    /// what a call of it makes.
    pub(crate) fn literal_type(&self, func: DefId) -> Option<DefId> {
        (self.is_factory(func) && self.declared_return(func).is_none()).then_some(func)
    }

    /// Returns true if and only if `func` is a TypeScript or JavaScript function (or a
    /// constant holding one) that returns an object literal.
    pub(crate) fn is_factory(&self, func: DefId) -> bool {
        let f = &self.files[func.file as usize];
        let kind = self.def(func).kind.as_str();
        is_ecma(f.lang)
            && (is_function(kind) || matches!(kind, "constant" | "variable"))
            && f.facts
                .types
                .iter()
                .any(|t| t.var == LITERAL && t.scope == Some(func.def))
    }

    /// Returns the fact of the return type `func` declares in its own signature — not one of
    /// a function nested in its body (`const flush = (): void => …`), which shares its scope
    /// when it is no definition of its own.
    pub(crate) fn declared_return(&self, func: DefId) -> Option<&TypeFact> {
        let f = &self.files[func.file as usize];
        let d = &f.facts.defs[func.def as usize];
        let bodiless = d.body_start == d.name_span.end_byte;
        f.facts.types.iter().find(|t| {
            t.var.is_empty()
                && t.scope == Some(func.def)
                && (bodiless || t.span.start_byte < d.body_start)
        })
    }

    /// Returns true if and only if definition `member` stands inside an object literal the
    /// function `func` returns.
    pub(crate) fn in_returned_literal(&self, func: DefId, member: DefId) -> bool {
        let span = &self.def(member).span;
        member.file == func.file
            && self.files[func.file as usize]
                .facts
                .types
                .iter()
                .any(|t| t.var == LITERAL && t.scope == Some(func.def) && t.span.contains(span))
    }

    /// Returns the one function `callee` names at byte `at` of `file`.
    fn called_function(
        &self,
        file: u32,
        callee: &str,
        at: u32,
        scope: Option<u32>,
        depth: usize,
    ) -> Option<DefId> {
        let path = type_path(self.files[file as usize].lang, callee, false)?;
        let o = match path.rsplit_once('.') {
            Some((q, name)) => self.resolve_qualified(file, q, name, at, scope, depth + 1),
            None => self.resolve_unqualified(file, &path, at, scope, depth + 1),
        }?;
        match o.defs.as_slice() {
            [one] if o.bound && is_function(&self.def(*one).kind) => Some(*one),
            _ => None,
        }
    }

    /// Returns the type a call of `callee` with the arguments `args` gives — an element of
    /// the collection it returns when `element` — when the function's declared return type is
    /// one of its type parameters (or a collection of one) that a parameter binds to an
    /// argument the rules can type; with `element`, also a collection of a type declared here.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn generic_call_type(
        &self,
        file: u32,
        callee: &str,
        args: &str,
        element: bool,
        at: u32,
        scope: Option<u32>,
        depth: usize,
    ) -> Option<DefId> {
        if !is_ecma(self.files[file as usize].lang) || depth > MAX_DEPTH {
            return None;
        }
        let func = self.called_function(file, callee, at, scope, depth + 1)?;
        let f = &self.files[func.file as usize];
        let ret = self.declared_return(func)?;
        let ret_text = without_nullish(&ret.ty)?;
        let want = if element {
            element_text(f.lang, ret_text)?
        } else {
            ret_text
        };
        let is_parameter =
            f.facts.defs.iter().any(|d| {
                d.kind == "type_parameter" && d.name == want && d.parent == Some(func.def)
            });
        if !is_parameter {
            // `function active(): Observer[]`: its elements are observers.
            let path = type_path(f.lang, want, false).filter(|_| element)?;
            return self.single_type(
                func.file,
                &path,
                ret.span.start_byte,
                Some(func.def),
                depth + 1,
            );
        }
        let params = self.parameters(func);
        let args: Vec<&str> = type_arguments(args).collect();
        for (param, arg) in params.iter().zip(&args) {
            if param.kind != "annotation" {
                continue;
            }
            let Some(declared) = without_nullish(&param.ty) else {
                continue;
            };
            let bound = if declared == want {
                self.receiver_type(file, arg, at, scope, depth + 1)
            } else if element_text(f.lang, declared) == Some(want) {
                self.element_type(file, arg, at, scope, depth + 1)
            } else {
                None
            };
            if bound.is_some() {
                return bound;
            }
        }
        None
    }

    /// Returns the type of a callback's parameter at `site` (`callee#argument#parameter`, see
    /// the type facts): the type the called function declares for that parameter of the
    /// callback (`builder` of `createReducer(init, (builder) => …)` where `createReducer`
    /// takes `cb: (builder: ActionReducerMapBuilder<S>) => void`).
    pub(crate) fn callback_type(
        &self,
        file: u32,
        site: &str,
        at: u32,
        scope: Option<u32>,
        depth: usize,
    ) -> Option<DefId> {
        let mut parts = site.rsplitn(3, '#');
        let param: usize = parts.next()?.parse().ok()?;
        let arg: usize = parts.next()?.parse().ok()?;
        let callee = parts.next()?;
        let func = self.called_function(file, callee, at, scope, depth + 1)?;
        let f = &self.files[func.file as usize];
        let declared = self.parameters(func).into_iter().nth(arg)?;
        let fn_type = without_nullish(&declared.ty).filter(|_| declared.kind == "annotation")?;
        let inner = fn_type.strip_prefix('(')?;
        let close = inner.find(')')?;
        let p = type_arguments(&inner[..close]).nth(param)?;
        let (_, ty) = p.split_once(':')?;
        let path = type_path(f.lang, without_nullish(ty.trim())?, false)?;
        self.single_type(
            func.file,
            &path,
            declared.span.start_byte,
            Some(func.def),
            depth + 1,
        )
    }

    /// Returns the type facts of `func`'s parameters, in order.
    fn parameters(&self, func: DefId) -> Vec<&TypeFact> {
        let f = &self.files[func.file as usize];
        let body = f.facts.defs[func.def as usize].body_start;
        f.facts
            .types
            .iter()
            .filter(|t| {
                t.scope == Some(func.def)
                    && t.span.start_byte < body
                    && !t.var.is_empty()
                    && t.var != LITERAL
            })
            .collect()
    }

    /// Returns the type of the elements of `expr` when it is a call of a generic function or
    /// of one returning a declared collection (`difference(prev, next)`), or a local bound to
    /// such a call (`const gone = difference(prev, next)`).
    pub(crate) fn inferred_element_type(
        &self,
        file: u32,
        expr: &str,
        at: u32,
        scope: Option<u32>,
        depth: usize,
    ) -> Option<DefId> {
        if let Some((callee, args)) = split_arguments(expr) {
            return self
                .generic_call_type(file, callee, args, true, at, scope, depth + 1)
                .or_else(|| self.mapped_element_type(file, callee, args, at, scope, depth + 1));
        }
        let fact = self.binding_fact(file, scope, expr, at)?;
        let (callee, args) = split_arguments(&fact.ty).filter(|_| fact.kind == "call")?;
        self.generic_call_type(
            file,
            callee,
            args,
            true,
            fact.span.start_byte,
            fact.scope,
            depth + 1,
        )
        .or_else(|| self.mapped_element_type(file, callee, args, at, scope, depth + 1))
    }

    /// Returns the type of the elements of an array built by `xs.map((x) => x.field)`: what the
    /// callback returns, when it returns a receiver the rules type (its parameter bound to an
    /// element of `xs` where the callback is read at byte `at`).
    fn mapped_element_type(
        &self,
        file: u32,
        callee: &str,
        args: &str,
        at: u32,
        scope: Option<u32>,
        depth: usize,
    ) -> Option<DefId> {
        if !callee.ends_with(".map") || depth > MAX_DEPTH {
            return None;
        }
        let (param, body) = args.split_once("=>")?;
        let param = param
            .trim()
            .trim_start_matches('(')
            .trim_end_matches(')')
            .trim();
        let body = body.trim().trim_end_matches(',').trim();
        let chain = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_alphanumeric() || matches!(c, '_' | '$' | '.' | '#' | '!'))
        };
        let simple = chain(param) && !param.contains('.');
        let from_param = body.split(['.', '!']).next() == Some(param);
        if !simple || !chain(body) || !from_param {
            return None;
        }
        self.receiver_type(file, body, at, scope, depth + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_split_into_the_callee_and_its_arguments() {
        assert_eq!(
            split_arguments("difference(prev, next)"),
            Some(("difference", "prev, next"))
        );
        assert_eq!(
            split_arguments("a.b(f(x), [y])"),
            Some(("a.b", "f(x), [y]"))
        );
        assert_eq!(split_arguments("make()"), Some(("make", "")));
        assert_eq!(split_arguments("make()()"), None);
        assert_eq!(split_arguments("(a + b)"), None);
        assert_eq!(split_arguments("name"), None);
        assert_eq!(without_nullish("T | undefined"), Some("T"));
        assert_eq!(without_nullish("A | B"), None);
    }
}

//! Light, local typing of receivers: what type `client` in `client.send()` or `self.session`
//! in `self.session.send()` holds, from the file's [`TypeFact`]s — annotations of parameters,
//! variables, fields and returns, constructor calls, `self.x = …` — and the members of that
//! type along its bases (Python's method resolution order, TypeScript's `extends` then
//! `implements`, Rust's inherent and trait impls).
//!
//! Typing is deliberately shallow: a name typed by one fact that resolves to exactly one type
//! is typed; anything else (no fact, a fact naming a generic or external type, a call whose
//! return is not annotated) leaves the receiver untyped, so its members stay candidates and
//! nothing is labelled resolved on a guess.

use std::borrow::Cow;

use super::extract::{is_function, is_type_container};
use super::facts::TypeFact;
use super::index::{DefId, Index};
use super::inferred::split_arguments;
use super::lang::Lang;
use super::resolve::is_type_parameter;

/// Deepest chain of facts followed (a call's return type naming another call's …).
pub(crate) const MAX_DEPTH: usize = 24;

/// What a name is bound to in a scope.
enum Binding {
    /// No binding of the name in the scopes searched: it is not a local.
    Absent,
    /// Bound, to a value no rule types.
    Unknown,
    /// Bound to an instance of this type.
    Typed(DefId),
}

/// TypeScript's primitive types, left out of a union with one named type (`Annotation |
/// boolean`): they have no methods the repository declares.
pub(crate) const PRIMITIVES: &[&str] = &[
    "boolean", "string", "number", "bigint", "symbol", "true", "false",
];

/// Kinds of type facts that bind no value to their name: what a type alias stands for.
const NOT_BINDINGS: &[&str] = &["type_alias", "narrow", "guard"];

/// Returns true if and only if definitions of `kind` can be the type of a value.
fn is_type_like(kind: &str) -> bool {
    is_type_container(kind) && kind != "impl"
}

/// Returns the type a type expression names, as a path (`Client`, `http.Client`,
/// `crate::net::Client`), or `None` when it names no single type (a union of two, a list, a
/// tuple, a function type). `unwrap` takes the success type of `Result<T, E>`, `Option<T>`
/// or `Promise<T>`.
pub(crate) fn type_path(lang: Lang, text: &str, unwrap: bool) -> Option<String> {
    let mut t = text.trim().trim_matches(['"', '\'']).trim().to_string();
    // References, `mut`, `dyn` / `impl` trait objects, lifetimes.
    loop {
        let before = t.len();
        for p in ["&", "mut ", "dyn ", "impl ", "readonly "] {
            if let Some(rest) = t.strip_prefix(p) {
                t = rest.trim_start().to_string();
            }
        }
        if t.starts_with('\'')
            && let Some((_, rest)) = t.split_once(' ')
        {
            t = rest.to_string();
        }
        if t.len() == before {
            break;
        }
    }
    // `X | None`, `X | undefined | null`, `Optional[X]`; in TypeScript also `X | boolean`:
    // a method called on it is `X`'s.
    let ecma = matches!(lang, Lang::TypeScript | Lang::Tsx | Lang::JavaScript);
    let mut parts: Vec<&str> = t
        .split('|')
        .map(str::trim)
        .filter(|p| !matches!(*p, "None" | "null" | "undefined"))
        .collect();
    if ecma && parts.len() > 1 {
        parts.retain(|p| !PRIMITIVES.contains(p));
    }
    if parts.len() != 1 {
        return None;
    }
    let mut t = parts[0].to_string();
    let (open, close) = if lang == Lang::Python {
        ('[', ']')
    } else {
        ('<', '>')
    };
    while let Some((head, args)) = t.split_once(open) {
        let head = head.trim();
        let last = head.rsplit(['.', ':']).next().unwrap_or(head);
        let inner = args.strip_suffix(close)?.trim();
        let first_arg = inner.split(',').next().unwrap_or(inner).trim();
        let wraps = matches!(last, "Box" | "Arc" | "Rc" | "Optional" | "Type")
            || (unwrap && matches!(last, "Result" | "Option" | "Promise"));
        if wraps {
            t = first_arg.to_string();
        } else {
            t = head.to_string();
            break;
        }
    }
    // A TypeScript class's private member (`this.#client.cache`) starts with `#`.
    let ok = !t.is_empty()
        && t.split(['.', ':']).filter(|s| !s.is_empty()).all(|s| {
            let s = if ecma {
                s.strip_prefix('#').unwrap_or(s)
            } else {
                s
            };
            s.chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
        });
    ok.then_some(t)
}

/// Returns `expr` without the whitespace around its dots: a chain written over several lines
/// (`client\n  .getQueryCache()\n  .build`) is the same chain on one.
pub(crate) fn without_line_breaks(expr: &str) -> Cow<'_, str> {
    if !expr.contains(char::is_whitespace) {
        return Cow::Borrowed(expr);
    }
    let mut out = String::with_capacity(expr.len());
    let mut chars = expr.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_whitespace() {
            let mut rest = chars.clone();
            let next = loop {
                match rest.next() {
                    Some(n) if n.is_whitespace() => {}
                    n => break n,
                }
            };
            let joins = out.ends_with('.') || matches!(next, Some('.' | '?'));
            if joins {
                continue;
            }
        }
        out.push(c);
    }
    Cow::Owned(out)
}

/// Splits `recv(…).method` (a method of a call's value, `?` allowed after the call) into the
/// receiver call and the method; `None` for a plain path.
fn split_call_chain(callee: &str) -> Option<(&str, &str)> {
    let (receiver, method) = callee.rsplit_once('.')?;
    let receiver = receiver.trim_end();
    (receiver.ends_with(')') || receiver.ends_with(")?"))
        .then_some((receiver, method.trim()))
        .filter(|(_, m)| m.chars().all(|c| c.is_alphanumeric() || c == '_'))
}

/// Splits a receiver expression that is a call's value (`Greeter()`, `new Greeter(a)`,
/// `open(p)?`, `make().session`) into the call (without `new `) and the attribute names read
/// from its value; `None` when the receiver is not a call or reads anything but attributes.
fn split_call_receiver(qualifier: &str) -> Option<(&str, Vec<&str>)> {
    let q = qualifier.trim();
    let q = q.strip_prefix("new ").map_or(q, str::trim_start);
    let close = q.rfind(')')?;
    let end = if q[close + 1..].starts_with('?') {
        close + 2
    } else {
        close + 1
    };
    let (call, rest) = q.split_at(end);
    let attrs: Vec<&str> = if rest.is_empty() {
        Vec::new()
    } else {
        rest.strip_prefix('.')?.split('.').map(str::trim).collect()
    };
    let ident = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
    };
    (attrs.iter().all(|a| ident(a)) && matching_open(call).is_some_and(|o| o > 0))
        .then_some((call, attrs))
}

/// Returns the byte where the parenthesised arguments ending `call` (its last `)`) open.
/// Brackets inside string and character literals do not count (`parser(r"a|b)")`).
fn matching_open(call: &str) -> Option<usize> {
    let b = call.as_bytes();
    let mut opens: Vec<usize> = Vec::new();
    let mut last = None;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => i = string_end(b, i)?,
            // A quote then a name and no closing quote is a Rust lifetime (`'a`), not a literal.
            b'\'' => {
                let name = b[i + 1..]
                    .iter()
                    .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
                    .count();
                let after = b.get(i + 1 + name).copied();
                let lifetime = name > 0
                    && after.is_none_or(|c| matches!(c, b',' | b'>' | b':' | b'+' | b' ' | b')'));
                if !lifetime {
                    i = quoted_end(b, i, b'\'')?;
                }
            }
            b'(' => opens.push(i),
            b')' => last = Some(opens.pop()?),
            _ => {}
        }
        i += 1;
    }
    last
}

/// Returns the byte of the `"` closing the string that opens at `start`: a Rust raw string
/// (`r"…"`, `r#"…"#`) ends at the quote followed by its hashes, any other at the first
/// quote no backslash escapes.
fn string_end(b: &[u8], start: usize) -> Option<usize> {
    let hashes = b[..start].iter().rev().take_while(|c| **c == b'#').count();
    let raw = start > hashes && b[start - hashes - 1] == b'r';
    if !raw {
        return quoted_end(b, start, b'"');
    }
    let closing: Vec<u8> = std::iter::once(b'"')
        .chain(std::iter::repeat_n(b'#', hashes))
        .collect();
    b[start + 1..]
        .windows(closing.len())
        .position(|w| w == closing.as_slice())
        .map(|p| start + 1 + p + hashes)
}

/// Returns the byte of the unescaped `quote` closing the literal opening at `start`.
fn quoted_end(b: &[u8], start: usize, quote: u8) -> Option<usize> {
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            c if c == quote => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

/// Returns true if and only if `s` is written like a type's name (`Config`, not `config`).
fn is_type_name(s: &str) -> bool {
    s.chars().next().is_some_and(char::is_uppercase)
}

/// Splits a path into (qualifier, last name) at its last `.` or `::`.
pub(crate) fn split_path(path: &str) -> (&str, &str) {
    if let Some((q, n)) = path.rsplit_once("::") {
        return (q, n);
    }
    path.rsplit_once('.').unwrap_or(("", path))
}

impl Index {
    /// Returns the type (class, struct, trait, interface) whose body encloses `scope`: a class
    /// or trait itself, the type an `impl` block is for, or a Go method's receiver type.
    pub(crate) fn enclosing_class(
        &self,
        file: u32,
        scope: Option<u32>,
        depth: usize,
    ) -> Option<DefId> {
        let facts = &self.files[file as usize].facts;
        let mut cur = scope;
        while let Some(c) = cur {
            let d = &facts.defs[c as usize];
            if !d.owner.is_empty() {
                return self.single_type(file, &d.owner, d.span.start_byte, None, depth);
            }
            if d.kind == "impl" {
                return self.single_type(file, &d.name, d.name_span.start_byte, d.parent, depth);
            }
            if is_type_like(&d.kind) {
                return Some(DefId { file, def: c });
            }
            cur = d.parent;
        }
        None
    }

    /// Resolves the type path `path` used at byte `at` of `file` to exactly one type.
    pub(crate) fn single_type(
        &self,
        file: u32,
        path: &str,
        at: u32,
        scope: Option<u32>,
        depth: usize,
    ) -> Option<DefId> {
        if depth > MAX_DEPTH {
            return None;
        }
        // `Self`, TypeScript's `this` type, `typing.Self`: the enclosing class.
        if matches!(
            path,
            "Self" | "this" | "typing.Self" | "typing_extensions.Self"
        ) {
            return self.enclosing_class(file, scope, depth + 1);
        }
        let (q, name) = split_path(path);
        let o = if q.is_empty() {
            self.resolve_unqualified(file, name, at, scope, depth + 1)
        } else {
            self.resolve_qualified(file, q, name, at, scope, depth + 1)
        }?;
        let types: Vec<DefId> = o
            .defs
            .iter()
            .copied()
            .filter(|d| is_type_like(&self.def(*d).kind) || self.is_object_type(*d))
            .collect();
        match (types.as_slice(), o.defs.as_slice()) {
            ([one], _) if o.bound => Some(*one),
            ([], [param]) if o.bound && is_type_parameter(&self.def(*param).kind) => {
                self.parameter_bound(*param, depth + 1)
            }
            _ => None,
        }
    }

    /// Returns the type a generic parameter's first bound names (`M` in `fn f<M: Matcher>` or
    /// `where M: Matcher` is a `Matcher`): its members are the trait's.
    fn parameter_bound(&self, param: DefId, depth: usize) -> Option<DefId> {
        let f = &self.files[param.file as usize];
        let d = &f.facts.defs[param.def as usize];
        let fact = f.facts.types.iter().find(|t| {
            t.var == d.name
                && t.kind == "annotation"
                && (t.scope == Some(param.def) || (t.scope.is_some() && t.scope == d.parent))
        })?;
        let path = type_path(f.lang, &fact.ty, false)?;
        self.single_type(
            param.file,
            &path,
            fact.span.start_byte,
            fact.scope,
            depth + 1,
        )
    }

    /// Returns the type a fact of `file` gives its name, if the rules can tell.
    fn fact_type(&self, file: u32, fact: &TypeFact, depth: usize) -> Option<DefId> {
        if depth > MAX_DEPTH || fact.ty.is_empty() {
            return None;
        }
        let lang = self.files[file as usize].lang;
        let at = fact.span.start_byte;
        match fact.kind.as_str() {
            "annotation" => {
                let path = type_path(lang, &fact.ty, false)?;
                self.single_type(file, &path, at, fact.scope, depth + 1)
            }
            // `self.session = session`, `t = s`, `let c = &mut self.cache`: what the other name
            // holds there.
            "alias" => {
                let other = fact.ty.trim_start_matches('&').trim_start();
                let other = other.strip_prefix("mut ").unwrap_or(other).trim_start();
                self.receiver_type(file, other, at, fact.scope, depth + 1)
            }
            // `createReducer(init, (builder) => …)`: what the callee declares the callback takes.
            "callback" => self.callback_type(file, &fact.ty, at, fact.scope, depth + 1),
            // `for item in items`, `items.forEach((item) => …)`: an element of the collection.
            "element" => self.element_type(file, &fact.ty, at, fact.scope, depth + 1),
            // `Entry::Vacant(e)`, `let (a, b) = f()?`: a field or element at a position.
            "variant" | "tuple" | "tuple_unwrap" => {
                self.pattern_type(file, &fact.kind, &fact.ty, at, fact.scope, depth + 1)
            }
            // `make(a)`, or `difference(prev, next)` with its arguments.
            "call" | "unwrap" => {
                let unwrap = fact.kind == "unwrap";
                let (callee, args) = split_arguments(&fact.ty).unwrap_or((&fact.ty, ""));
                let generic =
                    || self.generic_call_type(file, callee, args, false, at, fact.scope, depth + 1);
                (if unwrap { None } else { generic() })
                    .or_else(|| self.call_type(file, callee, unwrap, at, fact.scope, depth + 1))
            }
            _ => None,
        }
    }

    /// Returns the type a call of `callee` gives (its success value when `unwrap`): an
    /// instance of the type called, or what the function called returns. The callee may be a
    /// path (`Client`, `Client::new`, `app.test_client`) or a method of another call's value
    /// (`Index::open(p).unwrap`, `Client::builder().build`).
    fn call_type(
        &self,
        file: u32,
        callee: &str,
        unwrap: bool,
        at: u32,
        scope: Option<u32>,
        depth: usize,
    ) -> Option<DefId> {
        if depth > MAX_DEPTH {
            return None;
        }
        let callee = &*without_line_breaks(callee);
        // TypeScript's non-null assertions (`this.pending_!.get`) leave the type as it is.
        let lang = self.files[file as usize].lang;
        let plain;
        let callee = if lang != Lang::Rust && lang != Lang::Python && callee.contains("!.") {
            plain = callee.replace("!.", ".");
            plain.as_str()
        } else {
            callee
        };
        if let Some((receiver, method)) = split_call_chain(callee) {
            let (receiver, try_op) = match receiver.strip_suffix('?') {
                Some(r) => (r, true),
                None => (receiver, false),
            };
            let inner = &receiver[..matching_open(receiver)?];
            if matches!(method, "unwrap" | "expect") {
                // `f(…).unwrap()`: the success value of what `f` returns.
                return self.call_type(file, inner, true, at, scope, depth + 1);
            }
            let ty = self.call_type(file, inner, try_op, at, scope, depth + 1)?;
            let members = self.class_members(ty, method, depth + 1);
            let [m] = members.as_slice() else {
                return None;
            };
            return is_function(&self.def(*m).kind)
                .then(|| self.return_type(*m, unwrap, depth + 1))
                .flatten();
        }
        let path = type_path(lang, callee, false)?;
        let (q, name) = split_path(&path);
        // `cls(…)` in a Python class method makes an instance of the class.
        if lang == Lang::Python && path == "cls" {
            return self.enclosing_class(file, scope, depth + 1);
        }
        let o = if q.is_empty() {
            self.resolve_unqualified(file, name, at, scope, depth + 1)
        } else {
            self.resolve_qualified(file, q, name, at, scope, depth + 1)
        };
        let Some([callee]) = o.as_ref().filter(|o| o.bound).map(|o| o.defs.as_slice()) else {
            return self
                .conventional_call_type(file, q, name, at, scope, depth + 1)
                .or_else(|| self.map_value_type(file, &path, unwrap, at, scope, depth + 1));
        };
        let kind = self.def(*callee).kind.clone();
        if is_type_like(&kind) && !unwrap {
            Some(*callee)
        } else if is_function(&kind) || matches!(kind.as_str(), "constant" | "variable") {
            // A constant holding an arrow function (`const make = (): Schema => …`) returns
            // what its function is annotated to return; a factory declaring nothing, the
            // object literal it returns.
            self.return_type(*callee, unwrap, depth + 1)
                .or_else(|| self.literal_type(*callee).filter(|_| !unwrap))
        } else {
            None
        }
    }

    /// Returns the type a Rust call gives by convention when the repository declares no such
    /// function: `T::default()`, `T::from(…)`, `T::try_from(…)`, `T::from_str(…)` (derived or
    /// from a trait outside) make a `T`; `x.clone()` and `x.to_owned()` what `x` holds.
    fn conventional_call_type(
        &self,
        file: u32,
        q: &str,
        name: &str,
        at: u32,
        scope: Option<u32>,
        depth: usize,
    ) -> Option<DefId> {
        if self.files[file as usize].lang != Lang::Rust || q.is_empty() || depth > MAX_DEPTH {
            return None;
        }
        match name {
            "default" | "from" | "try_from" | "from_str" if q.contains("::") || is_type_name(q) => {
                self.single_type(file, q, at, scope, depth + 1)
            }
            "clone" | "to_owned" => self.receiver_type(file, q, at, scope, depth + 1),
            _ => None,
        }
    }

    /// Returns the type function `func` is annotated to return (its success type when
    /// `unwrap`).
    pub(crate) fn return_type(&self, func: DefId, unwrap: bool, depth: usize) -> Option<DefId> {
        let f = &self.files[func.file as usize];
        let fact = self.declared_return(func)?;
        let path = type_path(f.lang, &fact.ty, unwrap)?;
        self.single_type(
            func.file,
            &path,
            fact.span.start_byte,
            Some(func.def),
            depth + 1,
        )
    }

    /// Returns what `var` is bound to at byte `at` inside `scope` of `file`: the binding in
    /// the innermost function that binds it (the last one before `at`, else the first after),
    /// then at module level.
    fn binding(&self, file: u32, scope: Option<u32>, var: &str, at: u32, depth: usize) -> Binding {
        // Inside `if (x instanceof C) { … }`: a `C`, whatever `x` was declared as; a check that
        // proves no type here (`if (ready(x))`, `x instanceof Error`) changes nothing.
        if let Some(ty) = self
            .narrowing_at(file, var, at)
            .and_then(|n| self.narrowed_type(file, n, depth + 1))
        {
            return Binding::Typed(ty);
        }
        match self.binding_fact(file, scope, var, at) {
            None => Binding::Absent,
            Some(t) => match self.fact_type(file, t, depth + 1) {
                Some(ty) => Binding::Typed(ty),
                None => Binding::Unknown,
            },
        }
    }

    /// Returns the type fact that binds `var` at byte `at` inside `scope` of `file` (see
    /// [`Index::binding`]), if any.
    pub(crate) fn binding_fact(
        &self,
        file: u32,
        scope: Option<u32>,
        var: &str,
        at: u32,
    ) -> Option<&TypeFact> {
        let facts = &self.files[file as usize].facts;
        let mut cur = scope;
        loop {
            let here: Vec<&TypeFact> = facts
                .types
                .iter()
                .filter(|t| {
                    t.scope == cur && t.var == var && !NOT_BINDINGS.contains(&t.kind.as_str())
                })
                .collect();
            let pick = if cur.is_none() {
                here.last().copied()
            } else {
                here.iter()
                    .rev()
                    .find(|t| t.span.start_byte <= at)
                    .or(here.first())
                    .copied()
            };
            // TypeScript: `let cache: QueryCache` declares what every later assignment
            // (`cache = client.getQueryCache()`) holds.
            let ecma = matches!(
                self.files[file as usize].lang,
                Lang::TypeScript | Lang::Tsx | Lang::JavaScript
            );
            let declared = pick.filter(|p| ecma && p.kind != "annotation" && p.kind != "element");
            if let Some(p) = declared
                && let Some(d) = here
                    .iter()
                    .rev()
                    .find(|t| t.kind == "annotation" && t.span.start_byte < p.span.start_byte)
            {
                return Some(d);
            }
            if let Some(t) = pick {
                return Some(t);
            }
            let c = cur?;
            // Names of a class body are not visible in its methods.
            let mut next = facts.defs[c as usize].parent;
            while let Some(n) = next {
                let d = &facts.defs[n as usize];
                if is_function(&d.kind) || d.kind == "module" {
                    break;
                }
                next = d.parent;
            }
            cur = next;
        }
    }

    /// Returns the type of attribute `attr` of instances of `class`: assigned as
    /// `self.attr = …` / `this.attr = …` in its methods, or declared as a field, in the class
    /// or one of its bases.
    fn attribute_type(&self, class: DefId, attr: &str, depth: usize) -> Option<DefId> {
        // A factory's locals are no attributes of what it makes.
        if depth > MAX_DEPTH || self.is_factory(class) {
            return None;
        }
        let facts = &self.files[class.file as usize].facts;
        let dotted = [format!("self.{attr}"), format!("this.{attr}")];
        let hits: Vec<&TypeFact> = facts
            .types
            .iter()
            .filter(|t| {
                if t.var == attr && t.scope == Some(class.def) {
                    return true;
                }
                let owner = t.scope.and_then(|s| {
                    if s == class.def {
                        return Some(class);
                    }
                    self.enclosing_class(class.file, Some(s), depth + 1)
                });
                owner == Some(class) && dotted.contains(&t.var)
            })
            .collect();
        // A declared type (`#cache: Cache`, `self.x: Client = …`) is what every assignment
        // must hold, whatever they are written as.
        let declared: Vec<&TypeFact> = hits
            .iter()
            .copied()
            .filter(|t| t.kind == "annotation")
            .collect();
        let agreeing = if declared.is_empty() {
            &hits
        } else {
            &declared
        };
        let mut found: Option<DefId> = None;
        for t in agreeing {
            match self.fact_type(class.file, t, depth + 1) {
                Some(ty) if found.is_none_or(|f| f == ty) => found = Some(ty),
                // Two different types, or a value no rule types: unknown.
                _ => return None,
            }
        }
        if !hits.is_empty() {
            return found;
        }
        // A property or getter (`@property def schema(self) -> Schema`, `get schema(): Schema`):
        // the type its method returns.
        if self.files[class.file as usize].lang != Lang::Rust
            && let [m] = self.class_members(class, attr, depth + 1).as_slice()
            && is_function(&self.def(*m).kind)
        {
            return self.return_type(*m, false, depth + 1);
        }
        self.class_bases(class, depth + 1)
            .into_iter()
            .find_map(|b| self.attribute_type(b, attr, depth + 1))
    }

    /// Returns the type the receiver expression `qualifier` (`client`, `self.session`,
    /// `this.http.client`) holds at byte `at` of `file`, or `None` when it is not a typed
    /// receiver (a module, a type, an untyped name).
    pub(crate) fn receiver_type(
        &self,
        file: u32,
        qualifier: &str,
        at: u32,
        scope: Option<u32>,
        depth: usize,
    ) -> Option<DefId> {
        if depth > MAX_DEPTH {
            return None;
        }
        let qualifier = &*without_line_breaks(qualifier);
        // TypeScript's non-null assertions (`this.session!.send()`) leave the type as it is.
        let lang = self.files[file as usize].lang;
        if lang != Lang::Rust && lang != Lang::Python && qualifier.contains('!') {
            let plain = qualifier.replace("!.", ".");
            let plain = plain.strip_suffix('!').unwrap_or(&plain);
            if plain != qualifier {
                return self.receiver_type(file, plain, at, scope, depth + 1);
            }
        }
        if let Some((call, attrs)) = split_call_receiver(qualifier) {
            // `Greeter().greet()`, `new Greeter().greet()`, `open(p)?.refresh()`,
            // `make().session.send()`: the value of the call, then its attributes.
            let (call, try_op) = match call.strip_suffix('?') {
                Some(c) => (c, true),
                None => (call, false),
            };
            let open = matching_open(call)?;
            let callee = call[..open].trim_end();
            let args = call[open + 1..].trim_end_matches('?');
            let args = args.strip_suffix(')').unwrap_or(args);
            let mut ty = self
                .generic_call_type(file, callee, args, false, at, scope, depth + 1)
                .filter(|_| !try_op)
                .or_else(|| self.call_type(file, callee, try_op, at, scope, depth + 1))?;
            for seg in attrs {
                ty = self.attribute_type(ty, seg, depth + 1)?;
            }
            return Some(ty);
        }
        if qualifier.contains("::") {
            return None;
        }
        let segs: Vec<&str> = qualifier.split('.').map(str::trim).collect();
        // `#name` is a private field of a TypeScript or JavaScript class.
        if segs.iter().any(|s| {
            s.is_empty()
                || !s
                    .trim_start_matches('#')
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_')
        }) {
            return None;
        }
        let mut ty = match segs[0] {
            "self" | "this" => self.enclosing_class(file, scope, depth + 1)?,
            first => match self.binding(file, scope, first, at, depth + 1) {
                Binding::Typed(t) => t,
                Binding::Unknown => return None,
                Binding::Absent => self.global_instance(file, first, at, scope, depth + 1)?,
            },
        };
        for seg in &segs[1..] {
            ty = self.attribute_type(ty, seg, depth + 1)?;
        }
        Some(ty)
    }

    /// Returns what a receiver variable is annotated with when that is a type from outside the
    /// repository (`name: str`, `parts: string[]`, `resp: httpx.Response`): its members are
    /// that type's, never a namesake's here. `None` when it is not so annotated.
    pub(crate) fn foreign_receiver(
        &self,
        file: u32,
        qualifier: &str,
        at: u32,
        scope: Option<u32>,
    ) -> Option<String> {
        let is_name = !qualifier.is_empty()
            && qualifier
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '$');
        if !is_name || matches!(qualifier, "self" | "this" | "cls") {
            return None;
        }
        let fact = self.binding_fact(file, scope, qualifier, at)?;
        // Inside the binding itself (`nodes: t.Iterable[nodes.Node]`) the name is still the
        // enclosing scope's.
        let facts = &self.files[file as usize].facts;
        let in_header = fact
            .scope
            .is_some_and(|f| at < facts.defs[f as usize].body_start);
        if fact.kind != "annotation" || in_header || at < fact.span.end_byte {
            return None;
        }
        let lang = self.files[file as usize].lang;
        let text = fact.ty.trim();
        let builtin: &[&str] = match lang {
            Lang::Python => &[
                "str",
                "bytes",
                "bytearray",
                "int",
                "float",
                "complex",
                "bool",
                "list",
                "dict",
                "set",
                "frozenset",
                "tuple",
            ],
            Lang::TypeScript | Lang::Tsx | Lang::JavaScript => &[
                "string",
                "number",
                "boolean",
                "bigint",
                "symbol",
                "Array",
                "ReadonlyArray",
                "Map",
                "Set",
                "WeakMap",
                "WeakSet",
                "Date",
                "RegExp",
                "Promise",
            ],
            _ => return None,
        };
        // `string[]`: an array.
        let path = if lang != Lang::Python && text.ends_with("[]") && !text.contains('|') {
            "Array".to_string()
        } else {
            type_path(lang, text, false)?
        };
        // `Any`, `t.Any`, `object`: anything, so no type at all.
        let last = path.rsplit('.').next().unwrap_or(&path);
        if matches!(last, "Any" | "object" | "Self") {
            return None;
        }
        let head = path.split('.').next().unwrap_or(&path);
        let o = self.resolve_unqualified(file, head, at, fact.scope, 0);
        match o {
            // A name nothing here binds: foreign only when it is the language's own type.
            None => builtin.contains(&head).then(|| head.to_string()),
            Some(o) if o.defs.is_empty() && o.modules.is_empty() => o.external,
            Some(_) => None,
        }
    }

    /// Returns the type of a module-level variable `name` as seen from `file` (`app` after
    /// `from app import app`, where `app = Flask(…)`).
    fn global_instance(
        &self,
        file: u32,
        name: &str,
        at: u32,
        scope: Option<u32>,
        depth: usize,
    ) -> Option<DefId> {
        let o = self.resolve_unqualified(file, name, at, scope, depth + 1)?;
        let [var] = o.defs.as_slice() else {
            return None;
        };
        let d = self.def(*var);
        if !o.bound || !matches!(d.kind.as_str(), "constant" | "variable") {
            return None;
        }
        match self.binding(var.file, d.parent, &d.name, d.span.start_byte, depth + 1) {
            Binding::Typed(t) => Some(t),
            _ => None,
        }
    }

    /// Returns the members named `name` of type `class`: its own, else those of the first
    /// base along the language's lookup order that has one.
    pub(crate) fn class_members(&self, class: DefId, name: &str, depth: usize) -> Vec<DefId> {
        let own = self.last_binding(self.own_members(class, name, depth));
        if !own.is_empty() || depth > MAX_DEPTH {
            return own;
        }
        for base in self.class_bases(class, depth + 1) {
            let m = self.class_members(base, name, depth + 1);
            if !m.is_empty() {
                return m;
            }
        }
        Vec::new()
    }

    /// Returns the members named `name` declared in `class`'s body or, for a Rust or Go type,
    /// in its `impl` blocks and methods (of the same file, or elsewhere when their type
    /// resolves to it: another crate's `Iter` is another type).
    fn own_members(&self, class: DefId, name: &str, depth: usize) -> Vec<DefId> {
        let cd = self.def(class);
        let lang = self.files[class.file as usize].lang;
        let nested = matches!(lang, Lang::Rust | Lang::Go) && cd.kind != "trait";
        let candidates: Vec<DefId> = self
            .names
            .ids(name)
            .iter()
            .copied()
            .filter(|id| {
                let f = &self.files[id.file as usize];
                let d = &f.facts.defs[id.def as usize];
                if d.kind == "impl" {
                    return false;
                }
                if id.file == class.file && d.parent == Some(class.def) {
                    return true;
                }
                // Methods of `impl Type` blocks (Rust) and receivers (Go), matched by the
                // type's name within the language.
                nested
                    && f.lang == lang
                    && match d.parent {
                        Some(p) => {
                            let pd = &f.facts.defs[p as usize];
                            pd.kind == "impl" && pd.name == cd.name
                        }
                        None => d.owner == cd.name,
                    }
            })
            .collect();
        // A factory's members are the methods of the object literal it returns.
        if self.is_factory(class) {
            return candidates
                .into_iter()
                .filter(|id| self.in_returned_literal(class, *id))
                .collect();
        }
        candidates
            .into_iter()
            .filter(|id| {
                let d = self.def(*id);
                let own =
                    id.file == class.file && (d.parent == Some(class.def) || lang == Lang::Rust);
                own || !nested
                    || self.enclosing_class(id.file, d.parent.or(Some(id.def)), depth + 1)
                        == Some(class)
            })
            .collect()
    }

    /// Returns the bases of `class` in lookup order: Python's and TypeScript's as written
    /// (`extends` before `implements`), a Rust type's implemented traits.
    pub(crate) fn class_bases(&self, class: DefId, depth: usize) -> Vec<DefId> {
        let cd = self.def(class);
        let lang = self.files[class.file as usize].lang;
        let mut out: Vec<DefId> = Vec::new();
        let mut files: Vec<u32> = vec![class.file];
        if lang == Lang::Rust && cd.kind != "trait" {
            // `impl Trait for Type` may stand in any file of the crate.
            files = (0..self.files.len() as u32)
                .filter(|f| {
                    self.files[*f as usize].lang == Lang::Rust
                        && self.files[*f as usize]
                            .facts
                            .relations
                            .iter()
                            .any(|r| r.subject == cd.name)
                })
                .collect();
        }
        let mut rels: Vec<(u32, &super::facts::Relation)> = Vec::new();
        for f in files {
            let facts = &self.files[f as usize].facts;
            for r in facts.relations.iter().filter(|r| r.subject == cd.name) {
                // In one file the relation must be this class's own (not a namesake's).
                if f == class.file
                    && lang != Lang::Rust
                    && !cd.span.contains(&r.span)
                    && !(cd.span.start_byte <= r.span.start_byte
                        && r.span.start_byte <= cd.body_start)
                {
                    continue;
                }
                // Elsewhere the impl block's type must resolve to this type.
                if f != class.file && lang == Lang::Rust {
                    let block = super::extract::enclosing_def(facts, r.span.start_byte as usize);
                    if self.enclosing_class(f, block, depth + 1) != Some(class) {
                        continue;
                    }
                }
                rels.push((f, r));
            }
        }
        rels.sort_by_key(|(f, r)| (*f != class.file, r.kind != "inherits", r.span.start_byte));
        for (f, r) in rels {
            let scope = super::extract::enclosing_def(
                &self.files[f as usize].facts,
                r.span.start_byte as usize,
            );
            let path = if r.qualifier.is_empty() {
                r.target.clone()
            } else {
                let sep = if lang == Lang::Rust { "::" } else { "." };
                format!("{}{sep}{}", r.qualifier, r.target)
            };
            if let Some(b) = self.single_type(f, &path, r.span.start_byte, scope, depth + 1)
                && b != class
                && !out.contains(&b)
            {
                out.push(b);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_chains_split_into_the_receiver_call_and_its_method() {
        assert_eq!(
            split_call_chain("Index::open(p).unwrap"),
            Some(("Index::open(p)", "unwrap"))
        );
        assert_eq!(
            split_call_chain("Client::builder(a.b()).build"),
            Some(("Client::builder(a.b())", "build"))
        );
        assert_eq!(
            split_call_chain("open(p)?.refresh"),
            Some(("open(p)?", "refresh"))
        );
        assert_eq!(split_call_chain("app.test_client"), None);
        assert_eq!(matching_open("f(a(b), c)"), Some(1));
        // Brackets in literals do not count; lifetimes are no literals.
        assert_eq!(matching_open("parser(\"(?P<~\")"), Some(6));
        assert_eq!(matching_open("parser(r\"a|b)\")"), Some(6));
        assert_eq!(matching_open("p(r#\"a\")\"#)"), Some(1));
        assert_eq!(matching_open("p(\"\\\"(\")"), Some(1));
        assert_eq!(matching_open("p(')', x)"), Some(1));
        assert_eq!(matching_open("f::<'a>(x)"), Some(7));
        assert_eq!(matching_open("f('abc(')"), Some(1));
        assert_eq!(
            split_call_receiver("Greeter()"),
            Some(("Greeter()", vec![]))
        );
        assert_eq!(
            split_call_receiver("new Greeter(a, b(c))"),
            Some(("Greeter(a, b(c))", vec![]))
        );
        assert_eq!(
            split_call_receiver("make(x).session.http"),
            Some(("make(x)", vec!["session", "http"]))
        );
        assert_eq!(split_call_receiver("open(p)?"), Some(("open(p)?", vec![])));
        assert_eq!(split_call_receiver("client"), None);
        assert_eq!(split_call_receiver("items[0]"), None);
        assert_eq!(split_call_receiver("f()[0]"), None);
        assert_eq!(split_call_receiver("(a + b)"), None);
    }

    #[test]
    fn type_paths_are_read_through_wrappers_and_optionals() {
        let py = |t| type_path(Lang::Python, t, false);
        assert_eq!(py("Flask").as_deref(), Some("Flask"));
        assert_eq!(py("\"Session\"").as_deref(), Some("Session"));
        assert_eq!(py("Optional[Session]").as_deref(), Some("Session"));
        assert_eq!(py("Session | None").as_deref(), Some("Session"));
        assert_eq!(py("requests.Session").as_deref(), Some("requests.Session"));
        assert_eq!(py("list[Session]").as_deref(), Some("list"));
        assert_eq!(py("int | str"), None);
        let rs = |t, u| type_path(Lang::Rust, t, u);
        assert_eq!(rs("&mut Client", false).as_deref(), Some("Client"));
        assert_eq!(rs("&'a Client<'a>", false).as_deref(), Some("Client"));
        assert_eq!(rs("Arc<Mutex<State>>", false).as_deref(), Some("Mutex"));
        assert_eq!(rs("Result<Self, Error>", false).as_deref(), Some("Result"));
        assert_eq!(rs("Result<Self, Error>", true).as_deref(), Some("Self"));
        assert_eq!(
            rs("io::Result<crate::a::B>", true).as_deref(),
            Some("crate::a::B")
        );
        assert_eq!(
            rs("impl Iterator<Item = u8>", false).as_deref(),
            Some("Iterator")
        );
        assert_eq!(rs("(A, B)", false), None);
        let ts = |t, u| type_path(Lang::TypeScript, t, u);
        assert_eq!(ts("Client | undefined", false).as_deref(), Some("Client"));
        assert_eq!(ts("Promise<Client>", true).as_deref(), Some("Client"));
        assert_eq!(ts("Map<string, Client>", false).as_deref(), Some("Map"));
        assert_eq!(
            ts("Annotation | boolean", false).as_deref(),
            Some("Annotation")
        );
        assert_eq!(ts("Client | Other", false), None);
        assert_eq!(ts("string", false).as_deref(), Some("string"));
        assert_eq!(
            ts("this.#client.getQueryCache", false).as_deref(),
            Some("this.#client.getQueryCache")
        );
        assert_eq!(py("self.#x"), None);
    }

    #[test]
    fn chains_over_several_lines_read_as_one() {
        assert_eq!(
            without_line_breaks("client\n    .getQueryCache()\n    .build"),
            "client.getQueryCache().build"
        );
        assert_eq!(without_line_breaks("a\n  ?.b"), "a?.b");
        assert_eq!(
            without_line_breaks("new Greeter(a, b)"),
            "new Greeter(a, b)"
        );
        assert_eq!(without_line_breaks("plain.path"), "plain.path");
    }
}

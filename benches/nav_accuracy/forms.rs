//! The syntactic form of a use, read from its line: where an agent reading unfamiliar code
//! stands when it asks for a definition. Definitions sampled at uses are scored per form, so
//! a family that misses (a method on a typed local, a chained call) shows by itself instead of
//! hiding in the average.

/// The forms, in the order they are reported.
pub const FORMS: [&str; 9] = [
    "bare call",
    "bare name",
    "qualified/module path",
    "method on self/this",
    "method on a typed local",
    "method on a parameter",
    "method on a field",
    "chained call",
    "import path",
];

/// Definitions' top answers per form: queries, right answers, answers given.
#[derive(Debug, Default, Clone, Copy)]
pub struct Forms {
    queries: [usize; FORMS.len()],
    tp: [usize; FORMS.len()],
    n: [usize; FORMS.len()],
}

impl Forms {
    /// Counts one query of form `form`: whether the top answer was right, and how many top
    /// answers were given (0 or 1).
    pub fn count(&mut self, form: usize, hit: usize, given: usize) {
        self.queries[form] += 1;
        self.tp[form] += hit;
        self.n[form] += given;
    }

    /// Adds another set's counts.
    pub fn add(&mut self, o: &Forms) {
        for i in 0..FORMS.len() {
            self.queries[i] += o.queries[i];
            self.tp[i] += o.tp[i];
            self.n[i] += o.n[i];
        }
    }

    /// Returns the queries counted.
    pub fn queries(&self) -> usize {
        self.queries.iter().sum()
    }

    /// Prints the totals (when `total`) and the figures of each form with queries.
    pub fn print(&self, total: bool) {
        if total {
            let (tp, n, q) = (self.tp.iter().sum(), self.n.iter().sum(), self.queries());
            let (p, r) = super::prf(tp, n, q);
            println!(
                "use-sampled definitions: {q} queries, precision {p:.3}, recall {r:.3}, F1 {:.3}",
                super::f1(p, r)
            );
        }
        for (i, form) in FORMS.iter().enumerate() {
            if self.queries[i] == 0 {
                continue;
            }
            let (p, r) = super::prf(self.tp[i], self.n[i], self.queries[i]);
            println!(
                "  definitions at a {form}: {} queries, precision {p:.3}, recall {r:.3}, F1 {:.3}",
                self.queries[i],
                super::f1(p, r)
            );
        }
    }
}

/// Returns the index in [`FORMS`] of the use of `name` at one-based byte column `col` of
/// `line`, in a file whose whole text is `text` (to tell a module from a local receiver and a
/// parameter from a local).
pub fn form_of(text: &str, line_no: u32, line: &str, col: Option<u32>, name: &str) -> usize {
    let trimmed = line.trim_start();
    let is_import = [
        "import ",
        "from ",
        "use ",
        "pub use ",
        "extern crate ",
        "pub(crate) use ",
    ]
    .iter()
    .any(|p| trimmed.starts_with(p))
        || (trimmed.starts_with("export ") && trimmed.contains(" from "));
    if is_import {
        return 8;
    }
    let start = match col {
        Some(c) => (c as usize).saturating_sub(1).min(line.len()),
        None => line.find(name).unwrap_or(0),
    };
    let before = &line[..start];
    let after = line.get(start + name.len()..).unwrap_or("").trim_start();
    if before.ends_with("::") {
        return 2;
    }
    let Some(recv_end) = before
        .strip_suffix("?.")
        .or_else(|| before.strip_suffix('.'))
        .map(str::len)
    else {
        return if after.starts_with('(') { 0 } else { 1 };
    };
    let receiver = receiver_before(&line[..recv_end]);
    if receiver.ends_with(')') || receiver.ends_with(")?") || receiver.ends_with(']') {
        return 7;
    }
    let segs: Vec<&str> = receiver.split('.').collect();
    match segs.as_slice() {
        ["self" | "this" | "cls" | "Self"] => 3,
        ["self" | "this", ..] => 6,
        [one] if is_module(text, one) => 2,
        [one] if one.chars().next().is_some_and(char::is_uppercase) => 2,
        [one] if is_parameter(text, line_no, one) => 5,
        [_] => 4,
        _ if is_module(text, segs[0]) => 2,
        _ => 6,
    }
}

/// Returns the receiver expression ending `s`: identifiers, dots and balanced brackets.
fn receiver_before(s: &str) -> &str {
    let bytes = s.as_bytes();
    let mut i = bytes.len();
    let mut depth = 0i32;
    while i > 0 {
        let c = bytes[i - 1];
        match c {
            b')' | b']' => depth += 1,
            b'(' | b'[' if depth > 0 => depth -= 1,
            _ if depth > 0 => {}
            b'.' | b'_' | b'$' | b'?' | b':' | b'#' => {}
            _ if c.is_ascii_alphanumeric() => {}
            _ => break,
        }
        i -= 1;
    }
    s[i..].trim_start_matches(['.', ':', '?'])
}

/// Returns true if and only if the file imports `name` as a module or namespace.
fn is_module(text: &str, name: &str) -> bool {
    text.lines().any(|l| {
        let l = l.trim();
        l == format!("import {name}")
            || l.starts_with(&format!("import {name}."))
            || l.ends_with(&format!(" as {name}"))
            || l.contains(&format!("* as {name} "))
            || (l.starts_with("from ") && l.ends_with(&format!("import {name}")))
    })
}

/// Returns true if and only if `name` is a parameter of the nearest function header above
/// line `line_no` (one-based).
fn is_parameter(text: &str, line_no: u32, name: &str) -> bool {
    let lines: Vec<&str> = text.lines().take(line_no as usize).collect();
    for l in lines.iter().rev() {
        let t = l.trim_start();
        let header = [
            "def ",
            "async def ",
            "fn ",
            "pub fn ",
            "pub(crate) fn ",
            "function ",
        ]
        .iter()
        .any(|p| t.starts_with(p))
            || t.contains(" fn ")
            || t.contains("function ");
        if header {
            let params = t.split_once('(').map_or("", |(_, p)| p);
            return params
                .split([',', ')', ':', '='])
                .map(|p| p.trim().trim_start_matches("mut ").trim_start_matches('&'))
                .any(|p| p == name);
        }
    }
    false
}

/// References asked at uses, per form of the use: right places, places given and places
/// expected (every place given, candidates included), and the resolved places only.
#[derive(Debug, Default, Clone, Copy)]
pub struct RefForms {
    queries: [usize; FORMS.len()],
    tp: [usize; FORMS.len()],
    ours: [usize; FORMS.len()],
    exp: [usize; FORMS.len()],
    resolved_tp: [usize; FORMS.len()],
    resolved: [usize; FORMS.len()],
    /// Bytes of the answers as the agent tools give them by default, and of `git grep -n -w
    /// NAME` for the same names.
    default_bytes: usize,
    grep_bytes: usize,
}

impl RefForms {
    /// Counts one query of form `form`: right places, places given, places expected, and the
    /// right and given places among the resolved ones.
    pub fn count(
        &mut self,
        form: usize,
        tp: usize,
        ours: usize,
        exp: usize,
        resolved: (usize, usize),
    ) {
        self.queries[form] += 1;
        self.tp[form] += tp;
        self.ours[form] += ours;
        self.exp[form] += exp;
        self.resolved_tp[form] += resolved.0;
        self.resolved[form] += resolved.1;
    }

    /// Counts the bytes of one query's answer as the agent tools give it by default, and of
    /// `git grep -n -w`'s for its name.
    pub fn count_bytes(&mut self, default: usize, grep: usize) {
        self.default_bytes += default;
        self.grep_bytes += grep;
    }

    /// Adds another set's counts.
    pub fn add(&mut self, o: &RefForms) {
        self.default_bytes += o.default_bytes;
        self.grep_bytes += o.grep_bytes;
        for i in 0..FORMS.len() {
            self.queries[i] += o.queries[i];
            self.tp[i] += o.tp[i];
            self.ours[i] += o.ours[i];
            self.exp[i] += o.exp[i];
            self.resolved_tp[i] += o.resolved_tp[i];
            self.resolved[i] += o.resolved[i];
        }
    }

    /// Returns the queries counted.
    pub fn queries(&self) -> usize {
        self.queries.iter().sum()
    }

    /// Prints the totals and the figures of each form with queries.
    pub fn print(&self) {
        let sum = |a: &[usize; FORMS.len()]| a.iter().sum::<usize>();
        let (p, r) = super::prf(sum(&self.tp), sum(&self.ours), sum(&self.exp));
        let (jp, jr) = super::prf(sum(&self.resolved_tp), sum(&self.resolved), sum(&self.exp));
        println!(
            "use-sampled references: {} queries, precision {p:.3}, recall {r:.3}, F1 {:.3}; resolved only: precision {jp:.3}, recall {jr:.3}, F1 {:.3}",
            self.queries(),
            super::f1(p, r),
            super::f1(jp, jr)
        );
        println!(
            "use-sampled references' bytes as the agent tools answer by default: {:.1}% of grep -w's ({} of {} bytes)",
            100.0 * self.default_bytes as f64 / self.grep_bytes.max(1) as f64,
            self.default_bytes,
            self.grep_bytes
        );
        for (i, form) in FORMS.iter().enumerate() {
            if self.queries[i] == 0 {
                continue;
            }
            let (p, r) = super::prf(self.tp[i], self.ours[i], self.exp[i]);
            println!(
                "  references at a {form}: {} queries, precision {p:.3}, recall {r:.3}, F1 {:.3}",
                self.queries[i],
                super::f1(p, r)
            );
        }
    }
}

//! Declared file scopes: which repository paths a packet may change.
//!
//! Patterns are repository-relative and use `/` as the separator on every platform.
//!
//! - A pattern without glob metacharacters (`* ? [ ] { } \`) is a *literal path*. It matches
//!   that path exactly and everything beneath it, so `src/net` (or `src/net/`) declares the whole
//!   directory and `src/parser.rs` declares one file. Whether the path is a directory is not
//!   looked up on disk: a file has nothing beneath it, so both readings agree, and the scope means
//!   the same at every commit.
//! - Any other pattern is a *glob* (globset syntax): `*` and `?` never cross `/`, `**` as a whole
//!   component crosses any number of directories, `[ab]` and `{a,b}` work as usual. A glob that
//!   ends with `/` also matches everything beneath the directories it matches.
//! - `.` and empty components are dropped and `..` is resolved lexically; a pattern that is
//!   absolute, leaves the repository, or reaches into `.git` is refused.

use std::fmt;

use globset::{GlobBuilder, GlobMatcher};

/// The characters that make a pattern a glob instead of a literal path.
pub(crate) const GLOB_META: &[char] = &['*', '?', '[', ']', '{', '}', '\\'];

/// Why a declared file pattern cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatternProblem {
    /// The pattern is empty, or nothing is left after resolving `.` and `..`.
    Empty,
    /// The pattern starts at the filesystem root (or a drive letter).
    Absolute,
    /// A `..` climbs above the repository root.
    Escapes,
    /// A component is `.git`, which no packet may change.
    GitDir,
    /// A `..` follows a wildcard component, so it cannot be resolved lexically.
    ParentAfterWildcard,
    /// A `\` escapes an ordinary character, which almost always means a Windows separator.
    Backslash,
    /// globset refused the pattern; the text is its reason.
    InvalidGlob(String),
}

impl fmt::Display for PatternProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PatternProblem::Empty => write!(f, "names no path"),
            PatternProblem::Absolute => {
                write!(f, "is absolute; scopes are relative to the repository root")
            }
            PatternProblem::Escapes => write!(f, "leaves the repository through `..`"),
            PatternProblem::GitDir => {
                write!(f, "reaches into `.git`, which no packet may change")
            }
            PatternProblem::ParentAfterWildcard => {
                write!(f, "uses `..` after a wildcard, which cannot be resolved")
            }
            PatternProblem::Backslash => {
                write!(f, "uses `\\` as a path separator; scopes use `/`")
            }
            PatternProblem::InvalidGlob(reason) => write!(f, "is not a valid glob: {reason}"),
        }
    }
}

/// A file pattern that could not be compiled, with the pattern as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("file pattern `{pattern}` {problem}")]
pub struct PatternError {
    pub pattern: String,
    pub problem: PatternProblem,
}

/// One compiled pattern of a scope.
#[derive(Debug, Clone)]
pub(crate) enum Pattern {
    /// A path that matches itself and everything beneath it; normalized, no trailing `/`.
    Literal { written: String, path: String },
    /// A glob, compiled from the normalized text (plus `/**` for a trailing `/`).
    Glob {
        written: String,
        matcher: GlobMatcher,
        /// The glob split into components, for plain globs (no braces, classes or escapes,
        /// which could hide a `/` or a metacharacter inside one component); a trailing `/`
        /// adds a final `**`.
        parts: Option<Vec<Part>>,
        /// What leading components must look like, up to the first wildcard.
        prefix: Vec<Constraint>,
    },
}

/// What a path component must look like for a glob to match, up to its first wildcard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Constraint {
    /// The component equals this text.
    Exact(String),
    /// The component starts with this text (the part before the first metacharacter).
    StartsWith(String),
}

/// Returns the constraints a glob puts on leading components, ending at the first wildcard.
fn constraints(glob: &str) -> Vec<Constraint> {
    let mut out = Vec::new();
    for part in glob.split('/') {
        match part.find(GLOB_META) {
            Some(i) => {
                out.push(Constraint::StartsWith(part[..i].to_string()));
                break;
            }
            None => out.push(Constraint::Exact(part.to_string())),
        }
    }
    out
}

/// One component of a plain glob.
#[derive(Debug, Clone)]
pub(crate) enum Part {
    /// A component without metacharacters: matches exactly this name.
    Exact(String),
    /// `**`: any number of components, including none.
    AnyDepth,
    /// A component with `*` or `?`.
    Wildcard(GlobMatcher),
}

/// Returns the components of a plain glob, or `None` when it is not plain.
fn split_parts(text: &str, trailing_slash: bool) -> Result<Option<Vec<Part>>, PatternProblem> {
    if text.contains(['{', '}', '[', ']', '\\']) {
        return Ok(None);
    }
    let mut parts = Vec::new();
    for part in text.split('/') {
        parts.push(if part == "**" {
            Part::AnyDepth
        } else if is_glob(part) {
            Part::Wildcard(compile(part)?)
        } else {
            Part::Exact(part.to_string())
        });
    }
    if trailing_slash {
        parts.push(Part::AnyDepth);
    }
    Ok(Some(parts))
}

impl Pattern {
    /// Returns the compiled form of one pattern as written in a plan.
    pub(crate) fn parse(written: &str) -> Result<Pattern, PatternProblem> {
        let (path, trailing_slash) = normalize(written)?;
        if !is_glob(&path) {
            return Ok(Pattern::Literal {
                written: written.to_string(),
                path,
            });
        }
        let full = if trailing_slash {
            format!("{path}/**")
        } else {
            path.clone()
        };
        let matcher = compile(&full)?;
        let parts = split_parts(&path, trailing_slash)?;
        let prefix = constraints(&path);
        Ok(Pattern::Glob {
            written: written.to_string(),
            matcher,
            parts,
            prefix,
        })
    }

    /// Returns the pattern as the plan wrote it, for messages.
    pub(crate) fn written(&self) -> &str {
        match self {
            Pattern::Literal { written, .. } | Pattern::Glob { written, .. } => written,
        }
    }

    /// Returns true if and only if the repository-relative `path` is inside this pattern.
    pub(crate) fn matches(&self, path: &str) -> bool {
        match self {
            Pattern::Literal { path: lit, .. } => is_within(path, lit),
            Pattern::Glob { matcher, .. } => matcher.is_match(path),
        }
    }
}

/// Returns a glob matcher with the scope semantics: `*` stops at `/`, `\` escapes.
pub(crate) fn compile(glob: &str) -> Result<GlobMatcher, PatternProblem> {
    GlobBuilder::new(glob)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| PatternProblem::InvalidGlob(e.kind().to_string()))
}

/// Returns true if and only if `text` contains a glob metacharacter.
pub(crate) fn is_glob(text: &str) -> bool {
    text.contains(GLOB_META)
}

/// Returns true if and only if `path` equals `dir` or lies beneath it, component-wise.
pub(crate) fn is_within(path: &str, dir: &str) -> bool {
    path == dir
        || (path.len() > dir.len() && path.starts_with(dir) && path.as_bytes()[dir.len()] == b'/')
}

/// Returns the pattern with `.`, empty components and `..` resolved, and whether it ended in `/`.
fn normalize(written: &str) -> Result<(String, bool), PatternProblem> {
    if written.trim().is_empty() {
        return Err(PatternProblem::Empty);
    }
    let bytes = written.as_bytes();
    let drive = bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':';
    if written.starts_with('/') || written.starts_with('\\') || drive {
        return Err(PatternProblem::Absolute);
    }
    // In globs `\` escapes the next character; escaping an ordinary one does nothing, so a
    // `\` before a letter is a Windows path that would silently match something else.
    let mut chars = written.chars();
    while let Some(c) = chars.next() {
        if c == '\\' && chars.next().is_some_and(|n| !GLOB_META.contains(&n)) {
            return Err(PatternProblem::Backslash);
        }
    }
    let trailing_slash = written.ends_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in written.split('/') {
        match part {
            "" | "." => {}
            ".." => match parts.last() {
                None => return Err(PatternProblem::Escapes),
                Some(prev) if is_glob(prev) => return Err(PatternProblem::ParentAfterWildcard),
                Some(_) => {
                    parts.pop();
                }
            },
            other if other.eq_ignore_ascii_case(".git") => return Err(PatternProblem::GitDir),
            other => parts.push(other),
        }
    }
    if parts.is_empty() {
        return Err(PatternProblem::Empty);
    }
    Ok((parts.join("/"), trailing_slash))
}

/// A packet's compiled declared scope: the set of repository paths it may change.
#[derive(Debug, Clone)]
pub struct Scope {
    pub(crate) patterns: Vec<Pattern>,
}

impl Scope {
    /// Returns the scope declared by `patterns`, or the first pattern that cannot be used.
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<Scope, PatternError> {
        let patterns = patterns
            .iter()
            .map(|p| {
                Pattern::parse(p.as_ref()).map_err(|problem| PatternError {
                    pattern: p.as_ref().to_string(),
                    problem,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Scope { patterns })
    }

    /// Returns the patterns as written in the plan.
    pub fn patterns(&self) -> impl Iterator<Item = &str> {
        self.patterns.iter().map(Pattern::written)
    }

    /// Returns true if and only if the repository-relative `path` is inside the scope.
    ///
    /// `path` is what git reports (`git diff --name-only`): `/`-separated, no leading `./`.
    /// A leading `./` or a trailing `/` is tolerated.
    pub fn matches(&self, path: &str) -> bool {
        let path = path.strip_prefix("./").unwrap_or(path);
        let path = path.strip_suffix('/').unwrap_or(path);
        self.patterns.iter().any(|p| p.matches(path))
    }

    /// Returns the changed paths outside the scope, in the order given, without duplicates.
    ///
    /// The paths are as the tree has them: a caller that shows them (a failure reason, an
    /// event, a prompt) redacts them first with `gate::mask_secrets`, since a worker may have
    /// named a file after a token it found.
    pub fn violations<'a>(&self, changed: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for path in changed {
            if !self.matches(path) && !out.iter().any(|p| p == path) {
                out.push(path.to_string());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(p: &[&str]) -> Scope {
        Scope::new(p).unwrap()
    }

    #[test]
    fn literal_matches_itself_and_beneath() {
        let s = scope(&["src/parser.rs", "docs/"]);
        assert!(s.matches("src/parser.rs"));
        assert!(!s.matches("src/parser.rs.bak"));
        assert!(!s.matches("src/parser"));
        assert!(s.matches("docs/a.md"));
        assert!(s.matches("docs/deep/b.md"));
        assert!(s.matches("docs"));
        assert!(!s.matches("docsx/a.md"));
        let d = scope(&["src/net"]);
        assert!(d.matches("src/net/http.rs"));
        assert!(!d.matches("src/network.rs"));
    }

    #[test]
    fn star_does_not_cross_separator_but_double_star_does() {
        let s = scope(&["src/*.rs"]);
        assert!(s.matches("src/lib.rs"));
        assert!(!s.matches("src/net/http.rs"));
        let d = scope(&["src/**/*.rs"]);
        assert!(d.matches("src/lib.rs"));
        assert!(d.matches("src/net/http.rs"));
        assert!(!d.matches("tests/a.rs"));
        let t = scope(&["tests/parser_*.rs"]);
        assert!(t.matches("tests/parser_basic.rs"));
        assert!(!t.matches("tests/lexer_basic.rs"));
    }

    #[test]
    fn glob_with_trailing_slash_covers_directories() {
        let s = scope(&["crates/*/"]);
        assert!(s.matches("crates/a/src/lib.rs"));
        assert!(!s.matches("crates.toml"));
    }

    #[test]
    fn normalization_resolves_dots() {
        let s = scope(&["./src//../lib/./x.rs"]);
        assert!(s.matches("lib/x.rs"));
        assert!(s.matches("./lib/x.rs"));
    }

    #[test]
    fn bad_patterns_are_refused() {
        let problem = |p: &str| Pattern::parse(p).err();
        assert_eq!(problem("/etc/passwd"), Some(PatternProblem::Absolute));
        assert_eq!(problem("C:/x"), Some(PatternProblem::Absolute));
        assert_eq!(problem("../x"), Some(PatternProblem::Escapes));
        assert_eq!(problem("src/../../x"), Some(PatternProblem::Escapes));
        assert_eq!(problem(".git/config"), Some(PatternProblem::GitDir));
        assert_eq!(problem("sub/.GIT/hooks"), Some(PatternProblem::GitDir));
        assert_eq!(
            problem("src/*/../x"),
            Some(PatternProblem::ParentAfterWildcard)
        );
        assert_eq!(problem(""), Some(PatternProblem::Empty));
        assert_eq!(problem("src/.."), Some(PatternProblem::Empty));
        assert!(matches!(
            problem("src/[a.rs"),
            Some(PatternProblem::InvalidGlob(_))
        ));
        assert!(matches!(
            problem("src/{a,b"),
            Some(PatternProblem::InvalidGlob(_))
        ));
        assert_eq!(problem("src\\parser.rs"), Some(PatternProblem::Backslash));
        assert_eq!(problem("src/\\*literal-star"), None);
        assert_eq!(problem("src/ok/../x.rs"), None);
    }

    #[test]
    fn violations_lists_outside_paths_once() {
        let s = scope(&["src/parser.rs", "tests/parser_*.rs"]);
        let v = s.violations([
            "src/parser.rs",
            "src/lib.rs",
            "tests/parser_x.rs",
            "src/lib.rs",
            "README.md",
        ]);
        assert_eq!(v, vec!["src/lib.rs".to_string(), "README.md".to_string()]);
        assert!(s.violations(Vec::<&str>::new()).is_empty());
    }
}

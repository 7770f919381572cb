//! `git orchestra nav …`: the symbol graph's queries for people and scripts.

use std::io::Write;
use std::path::Path;

use clap::{Args, Subcommand};
use git_orchestra::nav::{
    At, Index, Location, MapOptions, NavError, PlaceOptions, estimate_tokens, render_imports,
    render_locations, render_outline, render_places_with, tools::title_of,
};

use git_orchestra::lsp::Query;
use git_orchestra::lsp::tier::{source_len, with_source};

use super::CommandError;
use super::lsp::Precise;

/// Navigates code through the symbol graph (definitions, references, callers, imports, a
/// ranked map) instead of grep. Every answer is bounded by --max-chars and, when it would be
/// longer, degrades (full → locations → per-file counts) and says so.
#[derive(Debug, Args)]
pub struct NavArgs {
    #[command(subcommand)]
    query: NavQuery,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
    /// Bound every answer to this many characters.
    #[arg(long, global = true, default_value_t = 8000, value_name = "N")]
    max_chars: usize,
    /// Show the source line of every place found by refs, callers, callees and impls (by
    /// default they list locations grouped by file).
    #[arg(long, global = true)]
    context: bool,
    /// List the candidates (matched by name only) of refs, callers, callees and impls in
    /// --json answers too; by default JSON counts them and lists the resolved places only
    /// (text lists them after the resolved ones).
    #[arg(long, global = true)]
    candidates: bool,
    /// Ask the language server of the file's language (`nav status` lists them) for def, refs,
    /// callers, callees and impls, waiting for it to start (up to [nav.lsp] startup_timeout);
    /// when it cannot answer, the symbol graph does, with a notice.
    #[arg(long, global = true)]
    precise: bool,
}

/// What a query is about: a symbol, narrowed by a position.
#[derive(Debug, Clone, Args)]
pub(super) struct TargetArgs {
    /// The symbol: `send`, `Client.send`, `Client::send`; may be left out when --from has a
    /// column.
    pub(super) symbol: Option<String>,
    /// Answer about the definition the token at this position denotes (the use of the symbol
    /// on that line, or the token at the column), resolved through its qualifier, receiver,
    /// imports and scopes, instead of every definition of the name.
    #[arg(long, value_name = "PATH:LINE[:COL]")]
    pub(super) from: Option<String>,
}

#[derive(Debug, Subcommand)]
enum NavQuery {
    /// Where a symbol is defined; with --from, as used at that position.
    Def(TargetArgs),
    /// Every reference to a symbol (with --from, to the definition used there), grouped by
    /// file.
    Refs(TargetArgs),
    /// Call sites of a function or method.
    Callers(TargetArgs),
    /// What a function or method calls.
    Callees(TargetArgs),
    /// Implementations, subclasses and impl blocks of a type or trait.
    Impls(TargetArgs),
    /// What a file imports.
    Imports { path: String },
    /// Which files import a file.
    Importers { path: String },
    /// A file's definitions with kinds and lines.
    Outline { path: String },
    /// The exact source of a symbol.
    Show { symbol: String },
    /// Find definitions by name pattern (`send*`, or a substring).
    Search {
        pattern: String,
        /// Only definitions of this kind (function, method, class, struct, trait, …).
        #[arg(long)]
        kind: Option<String>,
    },
    /// A ranked repository map within a token budget.
    Map {
        /// Files the work is about (repeatable).
        #[arg(long)]
        focus: Vec<String>,
        /// Identifiers the work mentions (repeatable).
        #[arg(long)]
        mention: Vec<String>,
        /// The budget in estimated tokens (four characters each).
        #[arg(long, default_value_t = 1024)]
        tokens: usize,
    },
    /// The language servers behind --precise and `git orchestra mcp`: which are configured
    /// ([nav.lsp]) and which are installed.
    Status,
    /// Builds the whole index of this worktree (what a first query starts in the background).
    #[command(hide = true)]
    Warm,
}

impl From<NavError> for CommandError {
    fn from(e: NavError) -> Self {
        match e {
            NavError::UnknownFile { .. } => CommandError::user(e)
                .hint("`git orchestra nav search <name>` finds files' definitions by name"),
            NavError::UnknownSymbol { .. } | NavError::BadArgument { .. } => CommandError::user(e),
            NavError::Repo(r) => r.into(),
            other => CommandError::internal(other),
        }
    }
}

/// Returns `path` relative to the worktree root when it names a file under it.
fn repo_path(root: &Path, cwd: &Path, path: &str) -> String {
    let abs = cwd.join(path);
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let abs_c = abs.canonicalize().unwrap_or(abs);
    match abs_c.strip_prefix(&root) {
        Ok(rel) => rel.to_string_lossy().replace('\\', "/"),
        Err(_) => path.to_string(),
    }
}

/// Runs one navigation query on the refreshed index of the worktree containing `cwd`.
pub fn cmd_nav(cwd: &Path, args: NavArgs) -> Result<(), CommandError> {
    if matches!(args.query, NavQuery::Status) {
        return print(&super::lsp::nav_status(cwd, args.json)?);
    }
    if matches!(args.query, NavQuery::Warm) {
        return warm(cwd);
    }
    let (mut index, partial) = open_for(cwd, &args)?;
    // Why the graph answers a --precise query (a server was meant to).
    let mut notice: Option<String> = partial.clone();
    if args.precise {
        match try_precise(cwd, &mut index, &args)? {
            Some(Precise::Answered(text)) => return print(&text),
            Some(Precise::Graph(why)) => notice = why,
            None => {}
        }
    }
    let root = index.root().to_path_buf();
    // JSON answers about a symbol say where they came from, within --max-chars.
    let sourced = args.json
        && matches!(
            args.query,
            NavQuery::Def(_)
                | NavQuery::Refs(_)
                | NavQuery::Callers(_)
                | NavQuery::Callees(_)
                | NavQuery::Impls(_)
        );
    let said = if sourced {
        source_len("graph", notice.as_deref())
    } else {
        0
    };
    let limit = args.max_chars.saturating_sub(said);
    let (json, context) = (args.json, args.context);
    let opts = PlaceOptions {
        max_chars: limit,
        json,
        context,
        candidates: args.candidates,
    };
    let text = answer(&index, &root, cwd, args.query, opts)?;
    if sourced {
        return print(&with_source(text, "graph", notice.as_deref()));
    }
    if let Some(p) = &partial {
        eprintln!("note: {p}");
    }
    print(&text)
}

/// Answers `query` from the graph as text (or JSON, per `opts`).
fn answer(
    index: &Index,
    root: &Path,
    cwd: &Path,
    query: NavQuery,
    opts: PlaceOptions,
) -> Result<String, CommandError> {
    let (limit, json) = (opts.max_chars, opts.json);
    Ok(match query {
        NavQuery::Def(t) => {
            let (symbol, from) = target(root, cwd, t)?;
            let what = title_of(symbol.as_deref(), from.as_ref());
            let locs = index.definition_at(symbol.as_deref(), from.as_ref())?;
            render_locations(&format!("definition of {what}"), &locs, limit, json).text
        }
        NavQuery::Refs(t) => places(index, root, cwd, "references to", t, |s, f| {
            index.references_at(s, f)
        })?
        .render(opts),
        NavQuery::Callers(t) => places(index, root, cwd, "callers of", t, |s, f| {
            index.callers_at(s, f)
        })?
        .render(opts),
        NavQuery::Callees(t) => places(index, root, cwd, "callees of", t, |s, f| {
            index.callees_at(s, f)
        })?
        .render(opts),
        NavQuery::Impls(t) => places(index, root, cwd, "implementations of", t, |s, f| {
            index.implementations_at(s, f)
        })?
        .render(opts),
        NavQuery::Imports { path } => {
            let p = repo_path(root, cwd, &path);
            render_imports(
                &format!("imports of {p}"),
                &index.imports_of(&p)?,
                limit,
                json,
            )
            .text
        }
        NavQuery::Importers { path } => {
            let p = repo_path(root, cwd, &path);
            render_imports(
                &format!("importers of {p}"),
                &index.importers_of(&p)?,
                limit,
                json,
            )
            .text
        }
        NavQuery::Outline { path } => {
            let p = repo_path(root, cwd, &path);
            render_outline(&p, &index.outline(&p)?, limit, json).text
        }
        NavQuery::Show { symbol } => show(index, &symbol, limit, json)?,
        NavQuery::Status | NavQuery::Warm => String::new(),
        NavQuery::Search { pattern, kind } => {
            render_locations(
                &format!("definitions matching {pattern}"),
                &index.search(&pattern, kind.as_deref())?,
                limit,
                json,
            )
            .text
        }
        NavQuery::Map {
            focus,
            mention,
            tokens,
        } => {
            let focus = focus.iter().map(|f| repo_path(root, cwd, f)).collect();
            // The map's own budget is in tokens; --max-chars still caps it.
            let tokens = tokens.min(limit / 4);
            let map = index.repo_map(&MapOptions {
                focus,
                mentioned: mention,
                tokens,
            });
            if json {
                serde_json::json!({"tokens": estimate_tokens(&map), "budget": tokens, "map": map})
                    .to_string()
            } else {
                map
            }
        }
    })
}

/// Opens and refreshes the index of the worktree containing `cwd` for the query of `args`: a
/// query by name in a worktree never indexed parses only the files it needs (and starts the
/// whole index in the background); returns the index and, then, what the answer must say.
fn open_for(cwd: &Path, args: &NavArgs) -> Result<(Index, Option<String>), CommandError> {
    let mut index = Index::open(cwd)?;
    let quick = match &args.query {
        _ if args.precise => None,
        NavQuery::Def(t) | NavQuery::Refs(t) | NavQuery::Callers(t) | NavQuery::Impls(t) => {
            quick_words(index.root(), cwd, t)
        }
        _ => None,
    };
    match &quick {
        Some((words, needed)) => index.refresh_for(words, needed)?,
        None => index.refresh()?,
    };
    let partial = (index.unparsed() > 0).then(|| {
        let words = quick.as_ref().map(|q| q.0.join("`, `")).unwrap_or_default();
        format!(
            "answered from the {} files that mention `{words}` ({} files not read yet, a first query in this worktree); the whole index is being built in the background: ask again for answers that follow types and imports through every file",
            index.files().len() - index.unparsed(),
            index.unparsed()
        )
    });
    if partial.is_some() {
        warm_in_background(index.root());
    }
    // One question: references are read from the files that mention the names it asks about.
    if quick.is_some() {
        index.scope_refs_to_mentions();
    }
    Ok((index, partial))
}

/// Asks the language server for a `--precise` query about a symbol; `None` for the queries
/// a server does not answer.
fn try_precise(
    cwd: &Path,
    index: &mut Index,
    args: &NavArgs,
) -> Result<Option<Precise>, CommandError> {
    let query = match &args.query {
        NavQuery::Def(t) => (Query::Definition, t.clone()),
        NavQuery::Refs(t) => (Query::References, t.clone()),
        NavQuery::Callers(t) => (Query::Callers, t.clone()),
        NavQuery::Callees(t) => (Query::Callees, t.clone()),
        NavQuery::Impls(t) => (Query::Implementations, t.clone()),
        _ => return Ok(None),
    };
    let root = index.root().to_path_buf();
    let (symbol, from) = target(&root, cwd, query.1)?;
    let opts = PlaceOptions {
        max_chars: args.max_chars,
        json: args.json,
        context: args.context,
        candidates: args.candidates,
    };
    let at = (symbol.as_deref(), from.as_ref());
    Ok(Some(super::lsp::precise(cwd, index, query.0, at, opts)?))
}

/// Returns the words a query by name needs the files of, and the files it needs whole (the
/// position's), or `None` when the query names nothing to look for.
fn quick_words(root: &Path, cwd: &Path, t: &TargetArgs) -> Option<(Vec<String>, Vec<String>)> {
    let from = t
        .from
        .as_deref()
        .and_then(|f| At::parse(f).ok())
        .map(|mut at| {
            at.path = repo_path(root, cwd, &at.path);
            at
        });
    let word = match (&t.symbol, &from) {
        (Some(symbol), _) => symbol
            .rsplit(['.', ':', '/'])
            .find(|w| !w.is_empty())?
            .to_string(),
        (None, Some(at)) => {
            let text = std::fs::read_to_string(root.join(&at.path)).ok()?;
            let line = text.lines().nth(at.line.checked_sub(1)? as usize)?;
            git_orchestra::nav::word_at(line, at.col?)?
        }
        (None, None) => return None,
    };
    Some((vec![word], from.map(|at| at.path).into_iter().collect()))
}

/// Starts `git orchestra nav warm` for the worktree at `root`, detached from this process and
/// its terminal (its own process group), so the next query finds the whole index; quietly
/// nothing when it cannot start.
fn warm_in_background(root: &Path) {
    use std::os::unix::process::CommandExt;
    if std::env::var_os("ORCHESTRA_NAV_NO_WARM").is_some() {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let _ = std::process::Command::new(exe)
        .args(["nav", "warm"])
        .current_dir(root)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn();
}

/// `nav warm`: builds the whole index of the worktree containing `cwd` (its blob cache and
/// view snapshot), unless another process is doing it.
fn warm(cwd: &Path) -> Result<(), CommandError> {
    let repo = git_orchestra::git::RepoInfo::discover(cwd)?;
    let lock_path = repo.common_dir.join("orchestra").join("nav-warm.lock");
    if let Some(dir) = lock_path.parent() {
        fs_err::create_dir_all(dir).map_err(CommandError::internal)?;
    }
    let file = std::fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(CommandError::internal)?;
    // Held until this process ends; another warm of the repository meanwhile does nothing.
    if file.try_lock().is_err() {
        return Ok(());
    }
    let mut index = Index::open(cwd)?;
    index.refresh()?;
    drop(file);
    Ok(())
}

/// Prints an answer; a reader that stopped reading is not an error.
fn print(text: &str) -> Result<(), CommandError> {
    let mut out = std::io::stdout().lock();
    let end = if text.ends_with('\n') { "" } else { "\n" };
    // Names and lines come from the repository: a file name or a line holding an escape
    // sequence must not drive the terminal (JSON answers escape them already).
    let text = git_orchestra::redact::terminal_safe(text);
    match write!(out, "{text}{end}") {
        // A closed pipe (`| head`) is not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(CommandError::internal(format!(
            "cannot write the answer: {e}"
        ))),
        Ok(()) => Ok(()),
    }
}

/// Returns the symbol and position of a query, the position's path made relative to the
/// worktree root.
fn target(
    root: &Path,
    cwd: &Path,
    t: TargetArgs,
) -> Result<(Option<String>, Option<At>), CommandError> {
    let from = match t.from {
        Some(f) => {
            let mut at = At::parse(&f)?;
            at.path = repo_path(root, cwd, &at.path);
            Some(at)
        }
        None => None,
    };
    if t.symbol.is_none() && from.as_ref().is_none_or(|f| f.col.is_none()) {
        return Err(CommandError::user(
            "give a symbol, or a position with a column: --from path:line:col",
        ));
    }
    Ok((t.symbol, from))
}

/// A list of places answered, with its title.
struct Places {
    title: String,
    locs: Vec<Location>,
    /// Said first when a bare name names several definitions.
    note: Option<String>,
}

impl Places {
    fn render(&self, opts: PlaceOptions) -> String {
        let Some(note) = self.note.as_ref().filter(|_| !opts.json) else {
            return render_places_with(&self.title, &self.locs, opts).text;
        };
        let budget = opts.max_chars.saturating_sub(note.chars().count() + 1);
        let opts = PlaceOptions {
            max_chars: budget.max(200),
            ..opts
        };
        format!(
            "{note}\n{}",
            render_places_with(&self.title, &self.locs, opts).text
        )
    }
}

/// Runs a query listing places (`refs`, `callers`, `callees`, `impls`).
fn places(
    index: &Index,
    root: &Path,
    cwd: &Path,
    title: &str,
    t: TargetArgs,
    query: impl Fn(Option<&str>, Option<&At>) -> Result<Vec<Location>, NavError>,
) -> Result<Places, CommandError> {
    let (symbol, from) = target(root, cwd, t)?;
    let what = title_of(symbol.as_deref(), from.as_ref());
    Ok(Places {
        title: format!("{title} {what}"),
        locs: query(symbol.as_deref(), from.as_ref())?,
        note: index.ambiguity_note(symbol.as_deref(), from.as_ref()),
    })
}

fn show(index: &Index, symbol: &str, limit: usize, json: bool) -> Result<String, CommandError> {
    let sources = index.show(symbol)?;
    let total: usize = sources.iter().map(|s| s.source.len() + 80).sum();
    if json {
        let text = serde_json::to_string(&sources).map_err(CommandError::internal)?;
        if text.chars().count() <= limit {
            return Ok(text);
        }
        let locs: Vec<_> = sources.into_iter().map(|s| s.location).collect();
        return Ok(render_locations(&format!("definitions of {symbol}"), &locs, limit, true).text);
    }
    if total <= limit {
        let mut t = String::new();
        for s in &sources {
            t.push_str(&format!(
                "{}:{}-{}\n{}\n",
                s.location.path, s.location.line, s.location.end_line, s.source
            ));
        }
        return Ok(t);
    }
    let locs: Vec<_> = sources.into_iter().map(|s| s.location).collect();
    let r = render_locations(
        &format!("definitions of {symbol}"),
        &locs,
        limit.saturating_sub(100),
        false,
    );
    Ok(format!(
        "note: the source is longer than --max-chars {limit}; showing where it is instead.\n{}",
        r.text
    ))
}

//! The client tier: language servers behind navigation. A long-lived process starts the
//! servers a worktree's languages need in the background, forwards what changed in the
//! worktree (`didOpen`/`didChange`/`didSave`) before each question, and asks them about a
//! position once they are ready; until then, and whenever one is slow, exits or grows past its
//! memory limit, the graph answers and the answer says why; a server that failed is started
//! again, at most [`RESTARTS`] times. Memory is not left to the questions: a watchdog thread
//! looks at every running server each [`WATCH_EVERY`], so a server that grows while nobody
//! asks (or while it is still starting) is stopped all the same. Servers are shared by the worktrees of the process's
//! repository through workspace folders where the server supports them, at most
//! `max_servers` at once, and shut down with the tier.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lsp_types::notification::{DidChangeTextDocument, DidOpenTextDocument, DidSaveTextDocument};
use lsp_types::{
    DidChangeTextDocumentParams, DidOpenTextDocumentParams, DidSaveTextDocumentParams,
    TextDocumentContentChangeEvent, TextDocumentIdentifier, TextDocumentItem,
    VersionedTextDocumentIdentifier,
};
use serde_json::Value;

use super::ask::ask;
use super::client::{Connection, State};
use super::convert::{Root, line_of};
use super::settings::{ServerCommand, Settings, language_id};
use crate::nav::tools::{self, Precise, PreciseAnswer};
use crate::nav::{At, Index, Lang, Location};

/// What a query asks a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Query {
    Definition,
    References,
    Implementations,
    Callers,
    Callees,
}

impl Query {
    /// The query of a navigation tool (`nav_def`, …), if a server can answer it.
    pub fn of_tool(name: &str) -> Option<Query> {
        Some(match name {
            "nav_def" => Query::Definition,
            "nav_refs" => Query::References,
            "nav_impls" => Query::Implementations,
            "nav_callers" => Query::Callers,
            "nav_callees" => Query::Callees,
            _ => return None,
        })
    }
}

/// Where an answer came from.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// The server named answered.
    Lsp {
        server: String,
        locations: Vec<Location>,
    },
    /// The graph answers; with a notice when a server was meant to.
    Graph(Option<String>),
}

/// One server and what it has been told.
struct Slot {
    conn: Arc<Connection>,
    /// Worktree roots it serves.
    roots: Vec<PathBuf>,
    /// (root, path) → (blob id the server knows, document version; 0 when never opened).
    known: HashMap<(PathBuf, String), (String, i32)>,
}

/// How many times a tier starts a failed server again (a crash, a failed start, memory over
/// the limit); after that the graph answers for its language.
pub const RESTARTS: u32 = 2;

/// How often the watchdog looks at the memory of every running server.
pub const WATCH_EVERY: Duration = Duration::from_secs(1);

/// The language servers of one process, watched by a thread of their own (every
/// [`WATCH_EVERY`], a server over `memory_mb`, starting or ready, is shut down and started
/// again, without waiting for a question) that ends with the tier.
pub struct Tier {
    inner: Arc<Inner>,
    /// Dropped with the tier, which ends the watchdog.
    _watchdog: Option<Sender<()>>,
}

/// What the tier's callers and its watchdog share.
struct Inner {
    settings: Settings,
    slots: Mutex<HashMap<ServerCommand, Slot>>,
    /// How many times each server was started again.
    restarts: Mutex<HashMap<ServerCommand, u32>>,
    /// Why the watchdog stopped a server, for the next question its language is asked.
    notices: Mutex<HashMap<ServerCommand, String>>,
    /// Set by [`Inner::shutdown`]: no server starts after it.
    closed: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Tier {
    /// Returns a tier with no server started yet, and starts its watchdog.
    pub fn new(settings: Settings) -> Tier {
        let inner = Arc::new(Inner {
            settings,
            slots: Mutex::new(HashMap::new()),
            restarts: Mutex::new(HashMap::new()),
            notices: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
        });
        let (stop, stopped) = channel::<()>();
        let watched = Arc::downgrade(&inner);
        let watchdog = std::thread::Builder::new()
            .name("lsp-watchdog".into())
            .spawn(move || {
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(WATCH_EVERY) {
                    let Some(inner) = watched.upgrade() else {
                        return;
                    };
                    inner.watch();
                }
            });
        if let Err(e) = &watchdog {
            tracing::warn!(error = %e, "no language server watchdog: memory is checked per question only");
        }
        Tier {
            inner,
            _watchdog: watchdog.ok().map(|_| stop),
        }
    }

    pub fn settings(&self) -> &Settings {
        &self.inner.settings
    }

    /// Starts, in the background, the servers the languages of `index`'s files need; returns
    /// a notice for each one that cannot start.
    pub fn start(&self, index: &Index) -> Vec<String> {
        self.inner.start(index)
    }

    /// Answers `query` about the token at `from` (or the one definition `symbol` names) from
    /// a language server, waiting up to `wait` for it to be ready; or says why the graph
    /// answers instead. The index is refreshed first.
    pub fn query(
        &self,
        index: &mut Index,
        query: Query,
        symbol: Option<&str>,
        from: Option<&At>,
        wait: Duration,
    ) -> Outcome {
        self.inner.query(index, query, symbol, from, wait)
    }

    /// Returns each running server's name, state and memory, for reports.
    pub fn servers(&self) -> Vec<(String, State, Option<u64>)> {
        lock(&self.inner.slots)
            .values()
            .map(|s| (s.conn.name.clone(), s.conn.state(), s.conn.memory_mb()))
            .collect()
    }

    /// Returns the process id of the server for `lang` of the worktree at `root`, if one runs.
    pub fn server_pid(&self, lang: Lang, root: &Path) -> Option<u32> {
        let cmd = self.inner.settings.server_for(lang, root)?;
        lock(&self.inner.slots).get(&cmd).map(|s| s.conn.pid())
    }

    /// Shuts every server down; none starts after that.
    pub fn shutdown(&self) {
        self.inner.shutdown();
    }
}

impl Drop for Tier {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl Inner {
    fn start(&self, index: &Index) -> Vec<String> {
        let mut langs: Vec<Lang> = index.files().iter().map(|f| f.lang).collect();
        langs.sort_by_key(|l| l.name());
        langs.dedup();
        langs
            .into_iter()
            .filter_map(|l| self.ensure(index, l).err())
            .collect()
    }

    /// Makes sure the server for `lang` runs for `index`'s worktree.
    fn ensure(&self, index: &Index, lang: Lang) -> Result<(), String> {
        match self.settings.server_for(lang, index.root()) {
            Some(cmd) => self.ensure_cmd(index, cmd),
            None => Ok(()),
        }
    }

    /// Makes sure the server `cmd` runs for `index`'s worktree.
    fn ensure_cmd(&self, index: &Index, cmd: ServerCommand) -> Result<(), String> {
        let root = index.root().to_path_buf();
        let mut slots = lock(&self.slots);
        if let Some(slot) = slots.get_mut(&cmd) {
            if slot.roots.contains(&root) {
                return Ok(());
            }
            if !matches!(slot.conn.state(), State::Ready { .. }) {
                return Err(format!("{} is still starting", slot.conn.name));
            }
            if !slot.conn.serves_folders() {
                return Err(format!(
                    "{} serves one workspace folder and already serves {}",
                    slot.conn.name,
                    slot.roots[0].display()
                ));
            }
            slot.conn.add_folder(&root);
            slot.roots.push(root.clone());
            baseline(slot, index, &cmd, &self.settings);
            return Ok(());
        }
        let mut slot = self.spawn(&slots, &cmd, root)?;
        baseline(&mut slot, index, &cmd, &self.settings);
        slots.insert(cmd, slot);
        Ok(())
    }

    /// Starts the server `cmd` for the worktree at `root` and initializes it in the
    /// background; `slots` are the tier's, locked.
    fn spawn(
        &self,
        slots: &HashMap<ServerCommand, Slot>,
        cmd: &ServerCommand,
        root: PathBuf,
    ) -> Result<Slot, String> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(format!(
                "{} not started: the language servers were shut down",
                cmd.command
            ));
        }
        if slots.len() >= self.settings.max_servers {
            return Err(format!(
                "{} not started: already at [nav.lsp] max_servers = {}",
                cmd.command, self.settings.max_servers
            ));
        }
        let launch = &self.settings.launch;
        let program = launch.program(&cmd.command, &root)?;
        let init = super::client::Init {
            options: launch.initialization_options(&program, &root)?,
            process_id: launch.confine.is_none(),
        };
        let process = launch.command(&cmd.command, &program, &cmd.args, &root);
        let write_timeout = self.settings.request_timeout;
        let conn = Connection::spawn(&cmd.command, process, init, &root, write_timeout)
            .map_err(|e| format!("{} did not start: {e}", cmd.command))?;
        let (c, r, timeout) = (conn.clone(), root.clone(), self.settings.startup_timeout);
        std::thread::spawn(move || c.initialize(&r, timeout));
        Ok(Slot {
            conn,
            roots: vec![root],
            known: HashMap::new(),
        })
    }

    /// Starts `cmd` again in place of `old`, for `old`'s first worktree, knowing what the old
    /// server was told of it: the new one reads those files from disk.
    fn relaunch(&self, cmd: &ServerCommand, old: Slot) -> Result<(), String> {
        let root = old.roots[0].clone();
        let mut slots = lock(&self.slots);
        if slots.contains_key(cmd) {
            return Ok(());
        }
        let mut slot = self.spawn(&slots, cmd, root.clone())?;
        slot.known = old
            .known
            .into_iter()
            .filter(|((r, _), _)| *r == root)
            .map(|(key, (oid, _))| (key, (oid, 0)))
            .collect();
        slots.insert(cmd.clone(), slot);
        Ok(())
    }

    /// Returns the connection for `lang`, waiting up to `wait` for it to be ready.
    fn ready(
        &self,
        index: &Index,
        lang: Lang,
        wait: Duration,
    ) -> Result<(ServerCommand, Arc<Connection>), String> {
        self.ensure(index, lang)?;
        let cmd = self
            .settings
            .server_for(lang, index.root())
            .ok_or_else(|| "no server".to_string())?;
        let conn = lock(&self.slots)
            .get(&cmd)
            .map(|s| s.conn.clone())
            .ok_or_else(|| format!("{} was shut down", cmd.command))?;
        let deadline = Instant::now() + wait;
        loop {
            match conn.state() {
                State::Ready { .. } => {
                    lock(&self.notices).remove(&cmd);
                    break;
                }
                State::Failed(why) => {
                    lock(&self.notices).remove(&cmd);
                    let why = format!("{} {why}", conn.name);
                    return Err(self.restart(&cmd, &conn, why, Some(index)));
                }
                State::Starting { since } if Instant::now() >= deadline => {
                    // Started again by the watchdog: why says more than "still starting".
                    if let Some(notice) = lock(&self.notices).remove(&cmd) {
                        return Err(notice);
                    }
                    return Err(format!(
                        "{} is still starting ({:.1} s so far)",
                        conn.name,
                        since.elapsed().as_secs_f64()
                    ));
                }
                State::Starting { .. } => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        if let Some(mb) = conn.memory_mb()
            && mb > self.settings.memory_mb
        {
            let why = format!(
                "{} used {mb} MB, over [nav.lsp] memory_mb = {}",
                conn.name, self.settings.memory_mb
            );
            return Err(self.restart(&cmd, &conn, why, Some(index)));
        }
        Ok((cmd, conn))
    }

    /// Shuts down `conn`, the failed server of `cmd`, and starts it again (in the background)
    /// for `index`'s worktree, or without one (the watchdog) for the first worktree it
    /// served, unless it was restarted [`RESTARTS`] times already, in which case its failed
    /// slot stays and the graph answers for its language from now on. Returns the notice for
    /// the answer.
    fn restart(
        &self,
        cmd: &ServerCommand,
        conn: &Arc<Connection>,
        why: String,
        index: Option<&Index>,
    ) -> String {
        let mut restarts = lock(&self.restarts);
        let count = restarts.entry(cmd.clone()).or_default();
        let old = {
            let mut slots = lock(&self.slots);
            // Another question, or the watchdog, may have restarted it already.
            if !slots.get(cmd).is_some_and(|s| Arc::ptr_eq(&s.conn, conn)) {
                return format!("{why}; started again");
            }
            if *count >= RESTARTS {
                drop(slots);
                conn.shutdown();
                return format!("{why}; not started again (restarted {count} times already)");
            }
            slots.remove(cmd)
        };
        conn.shutdown();
        *count += 1;
        drop(restarts);
        let started = match (index, old) {
            (Some(index), _) => self.ensure_cmd(index, cmd.clone()),
            (None, Some(old)) => self.relaunch(cmd, old),
            (None, None) => Ok(()),
        };
        match started {
            Ok(()) => format!("{why}; starting it again"),
            Err(e) => format!("{why}; {e}"),
        }
    }

    fn query(
        &self,
        index: &mut Index,
        query: Query,
        symbol: Option<&str>,
        from: Option<&At>,
        wait: Duration,
    ) -> Outcome {
        if !self.settings.enabled {
            return Outcome::Graph(None);
        }
        if let Err(e) = index.refresh() {
            return Outcome::Graph(Some(format!("cannot refresh the index: {e}")));
        }
        let Some(at) = position(index, query, symbol, from) else {
            return Outcome::Graph(None);
        };
        let Some(lang) = Lang::from_path(&at.path) else {
            return Outcome::Graph(None);
        };
        if self.settings.command_for(lang).is_none() {
            return Outcome::Graph(None);
        }
        let (cmd, conn) = match self.ready(index, lang, wait) {
            Ok(c) => c,
            Err(why) => return Outcome::Graph(Some(why)),
        };
        self.sync(index, &cmd, &conn, &at.path);
        if query == Query::Implementations && !conn.offers_implementations() {
            return Outcome::Graph(Some(format!(
                "{} does not answer implementations",
                conn.name
            )));
        }
        if matches!(query, Query::Callers | Query::Callees) && !conn.offers_call_hierarchy() {
            return Outcome::Graph(Some(format!("{} has no call hierarchy", conn.name)));
        }
        let timeout = self.settings.request_timeout.max(wait);
        // The document asked about is analysed first; a server that publishes no diagnostics
        // costs one request timeout once.
        let uri = Root::new(index.root()).uri(&at.path);
        conn.await_analysis(uri.as_str(), timeout);
        match ask(index, &conn, query, &at, timeout) {
            Ok(locations) if locations.is_empty() => {
                Outcome::Graph(Some(format!("{} found nothing", conn.name)))
            }
            Ok(locations) => Outcome::Lsp {
                server: conn.name.clone(),
                locations,
            },
            Err(why) => {
                let why = format!("{} {why}", conn.name);
                if matches!(conn.state(), State::Failed(_)) {
                    Outcome::Graph(Some(self.restart(&cmd, &conn, why, Some(index))))
                } else {
                    Outcome::Graph(Some(why))
                }
            }
        }
    }

    /// Tells the server about every file of its language that changed since it last heard,
    /// and opens `asked` (the file a question is about) if it is not open yet.
    fn sync(&self, index: &Index, cmd: &ServerCommand, conn: &Connection, asked: &str) {
        let mut slots = lock(&self.slots);
        let Some(slot) = slots.get_mut(cmd) else {
            return;
        };
        let root = index.root().to_path_buf();
        let uris = Root::new(&root);
        for (i, f) in index.files().iter().enumerate() {
            if self.settings.server_for(f.lang, &root).as_ref() != Some(cmd) {
                continue;
            }
            let key = (root.clone(), f.path.clone());
            let (oid, version) = slot.known.get(&key).cloned().unwrap_or_default();
            if oid == f.oid && (version > 0 || f.path != asked) {
                continue;
            }
            let text = index
                .read_source(i as u32)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            let uri = uris.uri(&f.path);
            conn.changed(uri.as_str());
            if version == 0 {
                conn.send::<DidOpenTextDocument>(DidOpenTextDocumentParams {
                    text_document: TextDocumentItem {
                        uri: uri.clone(),
                        language_id: language_id(&f.path).to_string(),
                        version: 1,
                        text,
                    },
                });
            } else {
                conn.send::<DidChangeTextDocument>(DidChangeTextDocumentParams {
                    text_document: VersionedTextDocumentIdentifier {
                        uri: uri.clone(),
                        version: version + 1,
                    },
                    content_changes: vec![TextDocumentContentChangeEvent {
                        range: None,
                        range_length: None,
                        text,
                    }],
                });
            }
            if oid != f.oid {
                conn.send::<DidSaveTextDocument>(DidSaveTextDocumentParams {
                    text_document: TextDocumentIdentifier { uri },
                    text: None,
                });
            }
            slot.known.insert(key, (f.oid.clone(), version + 1));
        }
    }

    /// Shuts every server down; none starts after that.
    fn shutdown(&self) {
        let slots: Vec<Slot> = {
            let mut slots = lock(&self.slots);
            self.closed.store(true, Ordering::SeqCst);
            slots.drain().map(|(_, s)| s).collect()
        };
        for s in slots {
            s.conn.shutdown();
        }
    }

    /// Shuts down every server, starting or ready, whose memory is over `memory_mb`, and
    /// starts it again within the restart budget; the next question about its language is
    /// told why.
    fn watch(&self) {
        let running: Vec<(ServerCommand, Arc<Connection>)> = lock(&self.slots)
            .iter()
            .filter(|(_, s)| !matches!(s.conn.state(), State::Failed(_)))
            .map(|(cmd, s)| (cmd.clone(), s.conn.clone()))
            .collect();
        for (cmd, conn) in running {
            let Some(mb) = conn.memory_mb() else { continue };
            if mb <= self.settings.memory_mb || self.closed.load(Ordering::SeqCst) {
                continue;
            }
            let why = format!(
                "used {mb} MB, over [nav.lsp] memory_mb = {}",
                self.settings.memory_mb
            );
            tracing::info!(server = %conn.name, why, "language server over its memory limit");
            conn.shutdown();
            // The failed slot, if it stays (no restart left), says why.
            conn.fail(why.clone());
            let notice = self.restart(&cmd, &conn, format!("{} {why}", conn.name), None);
            lock(&self.notices).insert(cmd, notice);
        }
    }
}

/// Records what the server reads from disk when it starts: the worktree's files as they are.
fn baseline(slot: &mut Slot, index: &Index, cmd: &ServerCommand, settings: &Settings) {
    let root = index.root().to_path_buf();
    for f in index.files() {
        if settings.command_for(f.lang) == Some(cmd) {
            slot.known
                .insert((root.clone(), f.path.clone()), (f.oid.clone(), 0));
        }
    }
}

/// Returns the position a query asks a server about: the `--from` token, the named symbol on
/// the `--from` line, or the one definition `symbol` names (except for `def`, which the graph
/// answers by name).
fn position(index: &Index, query: Query, symbol: Option<&str>, from: Option<&At>) -> Option<At> {
    match (from, symbol) {
        (Some(at), _) if at.col.is_some() => Some(at.clone()),
        (Some(at), Some(symbol)) => {
            let name = symbol.rsplit(['.', ':']).next().unwrap_or(symbol);
            let file = index.file_id(&at.path)?;
            let text = String::from_utf8_lossy(&index.read_source(file).ok()?).into_owned();
            let line = line_of(&text, at.line.checked_sub(1)?);
            let col = word_at(line, name)?;
            Some(At {
                path: at.path.clone(),
                line: at.line,
                col: Some(col as u32 + 1),
            })
        }
        (None, Some(symbol)) if query != Query::Definition => {
            let defs = index.definition_at(Some(symbol), None).ok()?;
            let [d] = defs.as_slice() else { return None };
            (d.kind != "module").then(|| At {
                path: d.path.clone(),
                line: d.line,
                col: Some(d.col),
            })
        }
        _ => None,
    }
}

/// Returns the byte column of `name` as a whole word on `line`.
fn word_at(line: &str, name: &str) -> Option<usize> {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    line.match_indices(name).map(|(i, _)| i).find(|&i| {
        !word(line[..i].chars().next_back()) && !word(line[i + name.len()..].chars().next())
    })
}

/// Renders a server's answer as the graph's answers are rendered, under a first line saying
/// which server gave it.
pub fn render(
    query: Query,
    server: &str,
    what: &str,
    locations: &[Location],
    opts: crate::nav::PlaceOptions,
) -> String {
    let title = match query {
        Query::Definition => format!("definition of {what}"),
        Query::References => format!("references to {what}"),
        Query::Implementations => format!("implementations of {what}"),
        Query::Callers => format!("callers of {what}"),
        Query::Callees => format!("callees of {what}"),
    };
    let head = format!("[lsp] answered by {server}");
    let source = format!("lsp:{server}");
    let said = if opts.json {
        source_len(&source, None)
    } else {
        head.len() + 1
    };
    let budget = opts.max_chars.saturating_sub(said).max(200);
    let text = if query == Query::Definition {
        crate::nav::render_locations(&title, locations, budget, opts.json).text
    } else {
        let opts = crate::nav::PlaceOptions {
            max_chars: budget,
            ..opts
        };
        crate::nav::render_places_with(&title, locations, opts).text
    };
    if opts.json {
        return with_source(text, &source, None);
    }
    format!("{head}\n{text}")
}

/// The fields saying where a JSON answer came from: `source` (`lsp:<server>` or `graph`) and,
/// when the graph answered because a server could not, `source_notice` saying why.
fn source_fields(source: &str, notice: Option<&str>) -> serde_json::Map<String, Value> {
    let mut fields = serde_json::Map::new();
    fields.insert("source".into(), Value::from(source));
    if let Some(n) = notice {
        fields.insert("source_notice".into(), Value::from(n));
    }
    fields
}

/// Returns the JSON answer `text` saying where it came from (see [`source_fields`]); an
/// answer that is not a JSON object (cut to a line by `max_chars`) is returned as it is.
pub fn with_source(text: String, source: &str, notice: Option<&str>) -> String {
    let Ok(Value::Object(mut answer)) = serde_json::from_str::<Value>(&text) else {
        return text;
    };
    answer.extend(source_fields(source, notice));
    Value::Object(answer).to_string()
}

/// Returns how many characters [`with_source`] adds to a JSON answer, at most.
pub fn source_len(source: &str, notice: Option<&str>) -> usize {
    Value::Object(source_fields(source, notice))
        .to_string()
        .chars()
        .count()
}

impl Precise for Tier {
    fn answer(&self, index: &mut Index, name: &str, args: &Value) -> PreciseAnswer {
        let Some(query) = Query::of_tool(name) else {
            return PreciseAnswer::Graph(None);
        };
        // Bad arguments are the graph's to report.
        let Ok((symbol, from)) = tools::target_of(args) else {
            return PreciseAnswer::Graph(None);
        };
        match self.query(index, query, symbol, from.as_ref(), Duration::ZERO) {
            Outcome::Lsp { server, locations } => {
                let opts = crate::nav::PlaceOptions {
                    max_chars: tools::max_chars_of(args),
                    json: false,
                    context: args
                        .get("context")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                    candidates: false,
                };
                let what = tools::title_of(symbol, from.as_ref());
                PreciseAnswer::Answered(render(query, &server, &what, &locations, opts))
            }
            Outcome::Graph(notice) => PreciseAnswer::Graph(notice),
        }
    }
}

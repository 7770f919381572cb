//! The client tier: language servers behind navigation. A long-lived process starts the
//! servers a worktree's languages need in the background, forwards what changed in the
//! worktree (`didOpen`/`didChange`/`didSave`) before each question, and asks them about a
//! position once they are ready; until then, and whenever one is slow, exits or grows past its
//! memory limit, the graph answers and the answer says why; a server that failed is started
//! again, at most [`RESTARTS`] times. Servers are shared by the worktrees of the process's
//! repository through workspace folders where the server supports them, at most
//! `max_servers` at once, and shut down with the tier.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lsp_types::{CallHierarchyIncomingCall, CallHierarchyItem, CallHierarchyOutgoingCall};
use serde_json::{Value, json};

use super::client::{Connection, State};
use super::convert::{Encoding, Root, line_of};
use super::settings::{ServerCommand, Settings, language_id, which};
use crate::nav::tools::{self, Precise, PreciseAnswer};
use crate::nav::{At, Index, Lang, Location, Resolution};

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

/// The language servers of one process.
pub struct Tier {
    settings: Settings,
    slots: Mutex<HashMap<ServerCommand, Slot>>,
    /// How many times each server was started again.
    restarts: Mutex<HashMap<ServerCommand, u32>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Tier {
    pub fn new(settings: Settings) -> Tier {
        Tier {
            settings,
            slots: Mutex::new(HashMap::new()),
            restarts: Mutex::new(HashMap::new()),
        }
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Starts, in the background, the servers the languages of `index`'s files need; returns
    /// a notice for each one that cannot start.
    pub fn start(&self, index: &Index) -> Vec<String> {
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
        let Some(cmd) = self.settings.command_for(lang).cloned() else {
            return Ok(());
        };
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
        if slots.len() >= self.settings.max_servers {
            return Err(format!(
                "{} not started: already at [nav.lsp] max_servers = {}",
                cmd.command, self.settings.max_servers
            ));
        }
        if which(&cmd.command).is_none() {
            return Err(format!(
                "{} is not installed (not on PATH); see `git orchestra nav status`",
                cmd.command
            ));
        }
        let conn = Connection::spawn(&cmd.command, &cmd.args, &root)
            .map_err(|e| format!("{} did not start: {e}", cmd.command))?;
        let (c, r, timeout) = (conn.clone(), root.clone(), self.settings.startup_timeout);
        std::thread::spawn(move || c.initialize(&r, timeout));
        let mut slot = Slot {
            conn,
            roots: vec![root],
            known: HashMap::new(),
        };
        baseline(&mut slot, index, &cmd, &self.settings);
        slots.insert(cmd, slot);
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
            .command_for(lang)
            .cloned()
            .ok_or_else(|| "no server".to_string())?;
        let conn = lock(&self.slots)
            .get(&cmd)
            .map(|s| s.conn.clone())
            .ok_or_else(|| format!("{} was shut down", cmd.command))?;
        let deadline = Instant::now() + wait;
        loop {
            match conn.state() {
                State::Ready { .. } => break,
                State::Failed(why) => {
                    let why = format!("{} {why}", conn.name);
                    return Err(self.restart(index, lang, &cmd, &conn, why));
                }
                State::Starting { since } if Instant::now() >= deadline => {
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
            return Err(self.restart(index, lang, &cmd, &conn, why));
        }
        Ok((cmd, conn))
    }

    /// Shuts down `conn`, the failed server of `cmd`, and starts it again for `index`'s
    /// worktree (in the background) unless it was restarted [`RESTARTS`] times already, in
    /// which case its failed slot stays and the graph answers for its language from now on.
    /// Returns the notice for the answer.
    fn restart(
        &self,
        index: &Index,
        lang: Lang,
        cmd: &ServerCommand,
        conn: &Arc<Connection>,
        why: String,
    ) -> String {
        let mut restarts = lock(&self.restarts);
        let count = restarts.entry(cmd.clone()).or_default();
        if *count >= RESTARTS {
            conn.shutdown();
            return format!("{why}; not started again (restarted {count} times already)");
        }
        {
            let mut slots = lock(&self.slots);
            // Another question may have restarted it already.
            if !slots.get(cmd).is_some_and(|s| Arc::ptr_eq(&s.conn, conn)) {
                return format!("{why}; started again");
            }
            slots.remove(cmd);
        }
        conn.shutdown();
        *count += 1;
        drop(restarts);
        match self.ensure(index, lang) {
            Ok(()) => format!("{why}; starting it again"),
            Err(e) => format!("{why}; {e}"),
        }
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
        if query == Query::Implementations && !conn.offers("implementationProvider") {
            return Outcome::Graph(Some(format!(
                "{} does not answer implementations",
                conn.name
            )));
        }
        if matches!(query, Query::Callers | Query::Callees) && !conn.offers("callHierarchyProvider")
        {
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
                    Outcome::Graph(Some(self.restart(index, lang, &cmd, &conn, why)))
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
            if self.settings.command_for(f.lang) != Some(cmd) {
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
                conn.notify(
                    "textDocument/didOpen",
                    json!({"textDocument": {"uri": uri.as_str(), "languageId": language_id(&f.path), "version": 1, "text": text}}),
                );
            } else {
                conn.notify(
                    "textDocument/didChange",
                    json!({"textDocument": {"uri": uri.as_str(), "version": version + 1}, "contentChanges": [{"text": text}]}),
                );
            }
            if oid != f.oid {
                conn.notify(
                    "textDocument/didSave",
                    json!({"textDocument": {"uri": uri.as_str()}}),
                );
            }
            slot.known.insert(key, (f.oid.clone(), version + 1));
        }
    }

    /// Returns each running server's name, state and memory, for reports.
    pub fn servers(&self) -> Vec<(String, State, Option<u64>)> {
        lock(&self.slots)
            .values()
            .map(|s| (s.conn.name.clone(), s.conn.state(), s.conn.memory_mb()))
            .collect()
    }

    /// Returns the process id of the server for `lang`, if one runs.
    pub fn server_pid(&self, lang: Lang) -> Option<u32> {
        let cmd = self.settings.command_for(lang)?;
        lock(&self.slots).get(cmd).map(|s| s.conn.pid())
    }

    /// Shuts every server down.
    pub fn shutdown(&self) {
        let slots: Vec<Slot> = lock(&self.slots).drain().map(|(_, s)| s).collect();
        for s in slots {
            s.conn.shutdown();
        }
    }
}

impl Drop for Tier {
    fn drop(&mut self) {
        self.shutdown();
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

/// Asks the server and turns its answer into places.
fn ask(
    index: &Index,
    conn: &Connection,
    query: Query,
    at: &At,
    timeout: Duration,
) -> Result<Vec<Location>, String> {
    let mut places = Places::new(index);
    let position = places.position(at);
    let doc = json!({"uri": Root::new(index.root()).uri(&at.path).as_str()});
    let tdp = json!({"textDocument": doc, "position": position});
    let mut out = Vec::new();
    match query {
        Query::Definition | Query::Implementations => {
            let method = if query == Query::Definition {
                "textDocument/definition"
            } else {
                "textDocument/implementation"
            };
            let r = conn.request(method, tdp, timeout)?;
            for l in locations_of(&r) {
                out.extend(places.location(&l.0, &l.1, "definition"));
            }
        }
        Query::References => {
            let mut p = tdp;
            p["context"] = json!({"includeDeclaration": false});
            let r = conn.request("textDocument/references", p, timeout)?;
            for l in locations_of(&r) {
                out.extend(places.location(&l.0, &l.1, "reference"));
            }
        }
        Query::Callers | Query::Callees => {
            let items = conn.request("textDocument/prepareCallHierarchy", tdp, timeout)?;
            let items: Vec<CallHierarchyItem> = serde_json::from_value(items).unwrap_or_default();
            for item in items {
                out.extend(calls(conn, &mut places, query, item, timeout)?);
            }
        }
    }
    out.sort_by(|a, b| (&a.path, a.line, a.col).cmp(&(&b.path, b.line, b.col)));
    out.dedup_by(|a, b| a.path == b.path && a.line == b.line && a.col == b.col);
    Ok(out)
}

/// The incoming call sites or the outgoing callees of one call hierarchy item.
fn calls(
    conn: &Connection,
    places: &mut Places,
    query: Query,
    item: CallHierarchyItem,
    timeout: Duration,
) -> Result<Vec<Location>, String> {
    let mut out = Vec::new();
    if query == Query::Callers {
        let r = conn.request(
            "callHierarchy/incomingCalls",
            json!({"item": item}),
            timeout,
        )?;
        let calls: Vec<CallHierarchyIncomingCall> = serde_json::from_value(r).unwrap_or_default();
        for c in calls {
            for range in &c.from_ranges {
                let r = serde_json::to_value(range).unwrap_or_default();
                out.extend(places.location(c.from.uri.as_str(), &r, "call"));
            }
        }
    } else {
        let r = conn.request(
            "callHierarchy/outgoingCalls",
            json!({"item": item}),
            timeout,
        )?;
        let calls: Vec<CallHierarchyOutgoingCall> = serde_json::from_value(r).unwrap_or_default();
        for c in calls {
            let r = serde_json::to_value(c.to.selection_range).unwrap_or_default();
            out.extend(places.location(c.to.uri.as_str(), &r, "definition"));
        }
    }
    Ok(out)
}

/// The (uri, range) of a definition/references answer: a location, a list of locations or of
/// location links.
fn locations_of(v: &Value) -> Vec<(String, Value)> {
    let one = |l: &Value| -> Option<(String, Value)> {
        let uri = l.get("uri").or_else(|| l.get("targetUri"))?.as_str()?;
        let range = l.get("range").or_else(|| l.get("targetSelectionRange"))?;
        Some((uri.to_string(), range.clone()))
    };
    match v {
        Value::Array(a) => a.iter().filter_map(one).collect(),
        Value::Null => Vec::new(),
        other => one(other).into_iter().collect(),
    }
}

/// Turns protocol ranges into the graph's places, reading files once.
struct Places<'a> {
    index: &'a Index,
    root: Root,
    texts: HashMap<String, String>,
}

impl<'a> Places<'a> {
    fn new(index: &'a Index) -> Places<'a> {
        Places {
            index,
            root: Root::new(index.root()),
            texts: HashMap::new(),
        }
    }

    fn text(&mut self, path: &str) -> &str {
        if !self.texts.contains_key(path) {
            let data = match self.index.file_id(path) {
                Some(f) => self.index.read_source(f).ok(),
                None => std::fs::read(self.index.root().join(path)).ok(),
            };
            let text = String::from_utf8_lossy(&data.unwrap_or_default()).into_owned();
            self.texts.insert(path.to_string(), text);
        }
        self.texts.get(path).map_or("", String::as_str)
    }

    /// The protocol position (UTF-16) of a graph position.
    fn position(&mut self, at: &At) -> Value {
        let line = at.line.saturating_sub(1);
        let text = line_of(self.text(&at.path), line);
        let byte = at.col.unwrap_or(1).saturating_sub(1) as usize;
        json!({"line": line, "character": Encoding::Utf16.column(text, byte)})
    }

    /// The place a (uri, range) names; files outside the worktree keep their absolute path.
    fn location(&mut self, uri: &str, range: &Value, kind: &str) -> Option<Location> {
        let path = match self.root.relative(uri) {
            Some(p) => p,
            None => super::convert::uri_path(uri)?
                .to_string_lossy()
                .into_owned(),
        };
        let line0 = range["start"]["line"].as_u64()? as u32;
        let ch = range["start"]["character"].as_u64()? as u32;
        let end_ch = range["end"]["character"].as_u64().unwrap_or(ch as u64) as u32;
        let text = if path.starts_with('/') {
            std::fs::read_to_string(&path).unwrap_or_default()
        } else {
            self.text(&path).to_string()
        };
        let line = line_of(&text, line0);
        let start = Encoding::Utf16.byte(line, ch);
        let end = Encoding::Utf16.byte(line, end_ch).max(start);
        let container = self.container(&path, line0 + 1, start as u32 + 1);
        Some(Location {
            path,
            line: line0 + 1,
            col: start as u32 + 1,
            end_line: line0 + 1,
            kind: kind.to_string(),
            name: line[start..end].to_string(),
            container,
            signature: line.trim().to_string(),
            resolution: Resolution::Resolved,
        })
    }

    /// The qualified name of the innermost definition around a place, from the graph.
    fn container(&self, path: &str, line: u32, col: u32) -> Option<String> {
        let file = self.index.file_id(path)?;
        let facts = &self.index.file(file).facts;
        let mut best: Option<usize> = None;
        for (i, d) in facts.defs.iter().enumerate() {
            let inside = (d.span.line, d.span.col) <= (line, col)
                && line <= d.span.end_line
                && !(d.name_span.line == line && d.name_span.col == col);
            if inside && d.kind != "type_parameter" {
                best = Some(i);
            }
        }
        best.map(|i| facts.qualified_name(i as u32))
    }
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
    let budget = opts.max_chars.saturating_sub(head.len() + 1).max(200);
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
        return text;
    }
    format!("{head}\n{text}")
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

//! The index of one worktree: its files' facts (from the blob cache or parsed in parallel) and
//! the lookup tables queries need, refreshed incrementally.
//!
//! A refresh asks git which blob every source file holds, keeps facts already in memory for
//! unchanged blobs, loads the rest from the cache, and parses only blobs never seen before.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use orchestra_git::git::RepoInfo;

use super::NavError;
use super::cache::{Cache, Encoded};
use super::extract::Extractor;
use super::facts::{FileFacts, Ref};
use super::lang::Lang;
use super::manifests::Manifests;
use super::modules::ModuleTable;
use super::snapshot::{self, Facts};
use super::worktree;

/// One file of the view with its facts.
#[derive(Debug, Clone)]
pub struct FileEntry {
    pub path: String,
    pub oid: String,
    pub lang: Lang,
    /// Definitions, imports and relations; `facts.refs` is always empty (see `refs`). Read
    /// through `Deref`; files opened from a view snapshot decode on first read.
    pub facts: Facts,
    /// References, loaded from the cache on first use: they are most of the facts' bulk and
    /// most queries never need them, so opening an index does not pay for them.
    refs: Arc<OnceLock<Vec<Ref>>>,
}

/// Name → entries, hashed with a fast hash: names come from the repository, not from an
/// adversary, and these tables are rebuilt on every refresh that changes paths.
pub(crate) type NameTable<T> = HashMap<String, Vec<T>, foldhash::fast::RandomState>;

/// Facts of one blob held in memory: everything but references, and the references slot.
type Loaded = (Facts, Arc<OnceLock<Vec<Ref>>>);

/// A definition: file number in the view and definition number in that file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DefId {
    pub file: u32,
    pub def: u32,
}

/// What a refresh did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RefreshStats {
    /// Files in the view.
    pub files: usize,
    /// Blobs parsed because no cache held them.
    pub parsed: usize,
    /// Blobs loaded from the blob cache.
    pub cached: usize,
    /// Files whose facts were already in memory.
    pub reused: usize,
    /// Files that left the view.
    pub removed: usize,
}

/// The symbol index of one worktree.
pub struct Index {
    root: PathBuf,
    cache: Cache,
    pub(crate) files: Vec<FileEntry>,
    pub(crate) by_path: HashMap<String, u32>,
    /// Definition name → definitions.
    pub(crate) names: snapshot::Names,
    /// Module lookup tables, built on first use after each refresh that changes paths.
    module_table: OnceLock<ModuleTable>,
    /// Reference name → (file, reference number), built on first use after each refresh.
    ref_names: OnceLock<NameTable<(u32, u32)>>,
    /// Reads the worktree's state, reusing what it learnt in earlier refreshes.
    scanner: worktree::Scanner,
    /// The repository's common git directory when known: git then runs in the worktree
    /// pinned to its registration (`Git::pinned`).
    common_dir: Option<PathBuf>,
    /// Contents that stand for a file's working-tree copy (an editor's unsaved buffer).
    unsaved: HashMap<String, Vec<u8>>,
    /// Files of the view left unparsed by a [`Index::refresh_for`] that answered from the
    /// files a query needs (0 when every file is indexed).
    unparsed: usize,
    /// Set for one-shot queries ([`Index::scope_refs_to_mentions`]): references of a name are
    /// read from the files whose contents mention it only, per name asked.
    refs_by_mention: Option<std::sync::Mutex<Mentions>>,
}

/// What one-shot queries found per name: the files whose contents mention it, and its
/// references there as (file, reference number).
#[derive(Default)]
struct Mentions {
    files: HashMap<String, Vec<u32>>,
    refs: HashMap<String, Vec<(u32, u32)>>,
}

/// Fewer blobs to parse than this, and a query-driven refresh parses them all.
const QUICK_MIN_JOBS: usize = 200;

impl Index {
    /// Opens the index of the worktree containing `dir`, with its cache in the common git
    /// directory so every worktree of the repository shares it. Call [`Index::refresh`] next.
    pub fn open(dir: &Path) -> Result<Index, NavError> {
        let (toplevel, common_dir) = RepoInfo::dirs(dir)?;
        Index::open_in(&toplevel, &common_dir)
    }

    /// Opens the index of the worktree at `root` of the repository whose common git directory
    /// is `common_dir`, reading the git directory registered for it there — never the one its
    /// `.git` file names now, which whoever works in the worktree may have changed (a changed
    /// link is refused and left for the engine's commit to find, see
    /// `git::registered_git_dir_unrepaired`).
    pub fn open_in(root: &Path, common_dir: &Path) -> Result<Index, NavError> {
        let (top, git_dir) = orchestra_git::git::registered_git_dir_unrepaired(common_dir, root)
            .map_err(|e| NavError::GitIndex {
                path: root.to_path_buf(),
                message: e.to_string(),
            })?;
        let db = common_dir.join("orchestra").join("nav.db");
        let mut index = match Index::open_with_cache(&top, &db) {
            // In a sandbox (`git orchestra mcp` as an agent's MCP server) the shared cache is
            // read-only, and must stay so: what a sandboxed process writes there would be
            // every agent's answer. A private cache in its temporary directory serves it.
            Err(e) if e.cache_unwritable() => {
                let private =
                    std::env::temp_dir().join(format!("orchestra-nav-{}.db", std::process::id()));
                tracing::info!(shared = %db.display(), private = %private.display(), "navigation cache not writable; using a private one");
                Index::open_with_cache(&top, &private)?
            }
            other => other?,
        };
        index.scanner = worktree::Scanner::pinned(&top, &git_dir);
        index.common_dir = Some(common_dir.to_path_buf());
        Ok(index)
    }

    /// Opens the index of the worktree at `root` with the cache database at `db`.
    pub fn open_with_cache(root: &Path, db: &Path) -> Result<Index, NavError> {
        Ok(Index {
            root: root.to_path_buf(),
            cache: Cache::open(db)?,
            files: Vec::new(),
            by_path: HashMap::new(),
            names: snapshot::Names::default(),
            module_table: OnceLock::new(),
            ref_names: OnceLock::new(),
            scanner: worktree::Scanner::new(root),
            common_dir: None,
            unsaved: HashMap::new(),
            unparsed: 0,
            refs_by_mention: None,
        })
    }

    /// Opens and refreshes the index of the worktree containing `dir`.
    pub fn load(dir: &Path) -> Result<Index, NavError> {
        let mut index = Index::open(dir)?;
        index.refresh()?;
        Ok(index)
    }

    /// Returns the worktree root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Returns a git runner for the worktree: pinned to its registration when the common git
    /// directory is known (a changed `.git` is refused, not repaired: the engine's commit finds
    /// it), otherwise discovered from the root.
    pub fn git(&self) -> Result<orchestra_git::git::Git, NavError> {
        match &self.common_dir {
            Some(common) => {
                orchestra_git::git::Git::pinned_unrepaired(common, &self.root).map_err(|e| {
                    NavError::GitIndex {
                        path: self.root.clone(),
                        message: e.to_string(),
                    }
                })
            }
            None => Ok(orchestra_git::git::Git::new(&self.root)),
        }
    }

    /// Returns the blob cache.
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// Returns the files of the view, sorted by path.
    pub fn files(&self) -> &[FileEntry] {
        &self.files
    }

    /// Returns the file number of `path` (repository-relative, `/`-separated).
    pub fn file_id(&self, path: &str) -> Option<u32> {
        let clean = path.trim_start_matches("./");
        self.by_path.get(clean).copied()
    }

    /// Brings the index up to date with the worktree, parsing only blobs never seen before.
    pub fn refresh(&mut self) -> Result<RefreshStats, NavError> {
        self.refs_by_mention = None;
        if self.unparsed > 0 {
            // What a query-driven refresh left out is parsed now; the rest comes from the cache.
            self.files.clear();
            self.unparsed = 0;
        }
        let mut view = self.scanner.scan()?;
        for (path, data) in &self.unsaved {
            if let Some(lang) = Lang::from_path(path) {
                let oid = self.scanner.blob_id(data);
                view.insert(path.clone(), worktree::ViewFile { oid, lang });
            }
        }
        self.apply_view(view)
    }

    /// Brings the index up to date for one query about `words` (identifiers) and the files
    /// `needed` (repository-relative): like [`Index::refresh`], except that in a worktree whose
    /// blobs were never indexed (a fresh clone) only the files that mention one of the words,
    /// and those named, are parsed — what a query by name needs to find its definitions and
    /// uses. [`Index::unparsed`] then says how many files were left out; no view snapshot is
    /// stored for such an index (the blobs parsed are cached as usual).
    pub fn refresh_for(
        &mut self,
        words: &[String],
        needed: &[String],
    ) -> Result<RefreshStats, NavError> {
        if !self.files.is_empty() || words.is_empty() {
            return self.refresh();
        }
        let mut view = self.scanner.scan()?;
        for (path, data) in &self.unsaved {
            if let Some(lang) = Lang::from_path(path) {
                let oid = self.scanner.blob_id(data);
                view.insert(path.clone(), worktree::ViewFile { oid, lang });
            }
        }
        if view.len() >= snapshot::MIN_FILES
            && let Some(names) = self.stored_snapshot(&view)?
        {
            let mut stats = RefreshStats {
                files: view.len(),
                ..RefreshStats::default()
            };
            self.open_snapshot(view, names, &mut stats);
            return Ok(stats);
        }
        let pattern = words
            .iter()
            .filter(|w| !w.is_empty())
            .map(|w| regex_escape(w))
            .collect::<Vec<_>>()
            .join("|");
        let matcher = regex_automata::meta::Regex::new(&format!(r"(?-u:\b)(?:{pattern})(?-u:\b)"))
            .map_err(|e| NavError::BadArgument {
                message: format!("cannot search for {words:?}: {e}"),
            })?;
        let select = Selection {
            root: self.root.clone(),
            unsaved: self.unsaved.clone(),
            matcher: &matcher,
            needed,
        };
        self.apply_changes_selected(view, RefreshStats::default(), Some(&select))
    }

    /// Returns how many files of the view the last refresh left unparsed (see
    /// [`Index::refresh_for`]); 0 when the index holds every file.
    pub fn unparsed(&self) -> usize {
        self.unparsed
    }

    /// Makes `contents` the text of `path` (repository-relative) for the next refresh, in
    /// place of the working-tree file — an editor's unsaved buffer; `None` goes back to the
    /// file. The contents are indexed through the same blob cache as the worktree's files.
    pub fn set_unsaved(&mut self, path: &str, contents: Option<Vec<u8>>) {
        match contents {
            Some(data) => self.unsaved.insert(path.to_string(), data),
            None => self.unsaved.remove(path),
        };
    }

    /// Makes `view` (path → blob of every source file) the indexed state and says how.
    fn apply_view(
        &mut self,
        view: BTreeMap<String, worktree::ViewFile>,
    ) -> Result<RefreshStats, NavError> {
        let mut stats = RefreshStats {
            files: view.len(),
            ..RefreshStats::default()
        };
        // Nothing changed: keep every table as it is.
        if view.len() == self.files.len()
            && self
                .files
                .iter()
                .zip(&view)
                .all(|(f, (p, v))| f.path == *p && f.oid == v.oid && f.lang == v.lang)
        {
            stats.reused = view.len();
            return Ok(stats);
        }
        // A fresh index of a view seen before opens from that view's snapshot.
        if self.files.is_empty()
            && view.len() >= snapshot::MIN_FILES
            && let Some(names) = self.stored_snapshot(&view)?
        {
            self.open_snapshot(view, names, &mut stats);
            return Ok(stats);
        }
        self.apply_changes(view, stats)
    }

    /// Returns the name table of the snapshot of `view`, if one is stored and readable.
    fn stored_snapshot(
        &self,
        view: &BTreeMap<String, worktree::ViewFile>,
    ) -> Result<Option<snapshot::Names>, NavError> {
        let key = snapshot::view_key(
            view.iter()
                .map(|(p, v)| (p.as_str(), v.oid.as_str(), v.lang)),
        )?;
        Ok(self
            .cache
            .get_snapshot(key, view.len())?
            .and_then(snapshot::decode))
    }

    /// Opens the (empty) index on `view` from its snapshot's name table `names`; each file's
    /// facts are read from its blob row on first use.
    fn open_snapshot(
        &mut self,
        view: BTreeMap<String, worktree::ViewFile>,
        names: snapshot::Names,
        stats: &mut RefreshStats,
    ) {
        // Later paths holding an earlier path's blob count as reused, as when the
        // facts come from blob rows.
        let mut distinct = std::collections::HashSet::new();
        for vf in view.values() {
            if distinct.insert((vf.oid.as_str(), vf.lang)) {
                stats.cached += 1;
            } else {
                stats.reused += 1;
            }
        }
        let reader = Arc::new(self.cache.facts_reader());
        self.files = view
            .into_iter()
            .map(|(path, vf)| FileEntry {
                facts: Facts::stored(reader.clone(), &vf.oid, vf.lang),
                path,
                oid: vf.oid,
                lang: vf.lang,
                refs: Arc::new(OnceLock::new()),
            })
            .collect();
        self.by_path = self.path_table();
        self.names = names;
        self.module_table = OnceLock::new();
        self.ref_names = OnceLock::new();
    }

    /// Brings the index to `view` incrementally: facts in memory are kept, the rest loaded
    /// from the blob cache or parsed, and the tables patched or rebuilt.
    fn apply_changes(
        &mut self,
        view: BTreeMap<String, worktree::ViewFile>,
        stats: RefreshStats,
    ) -> Result<RefreshStats, NavError> {
        self.apply_changes_selected(view, stats, None)
    }

    /// [`Index::apply_changes`], parsing only the blobs `select` keeps when there are many
    /// to parse (see [`Index::refresh_for`]).
    fn apply_changes_selected(
        &mut self,
        view: BTreeMap<String, worktree::ViewFile>,
        mut stats: RefreshStats,
        select: Option<&Selection<'_>>,
    ) -> Result<RefreshStats, NavError> {
        stats.files = view.len();
        // With the same paths, file numbers stay valid and the tables are patched in place.
        let same_paths = view.len() == self.files.len()
            && self
                .files
                .iter()
                .zip(&view)
                .all(|(f, (p, v))| f.path == *p && f.lang == v.lang);
        let previous: Vec<(String, Loaded)> = if same_paths {
            self.files
                .iter()
                .map(|f| (f.oid.clone(), (f.facts.clone(), f.refs.clone())))
                .collect()
        } else {
            Vec::new()
        };
        let mut in_memory: HashMap<(String, Lang), Loaded> = HashMap::new();
        for f in self.files.drain(..) {
            if !view.contains_key(&f.path) {
                stats.removed += 1;
            }
            in_memory.insert((f.oid, f.lang), (f.facts, f.refs));
        }
        let mut loaded = self.cache.get_many(&missing_blobs(&view, &in_memory)?)?;

        // Parse blobs neither in memory nor cached; one job per distinct blob.
        let mut jobs = parse_jobs(&view, &in_memory, &loaded);
        let all_jobs = jobs.len();
        if let Some(select) = select.filter(|_| jobs.len() >= QUICK_MIN_JOBS) {
            jobs.retain(|(path, _, _)| select.keeps(path));
        }
        let left_out = all_jobs - jobs.len();
        let parsed = parse_parallel(&self.root, &self.unsaved, &jobs, &mut self.cache)?;
        let mut fresh: HashMap<String, Loaded> = HashMap::new();
        for ((_, oid, _), (facts, refs)) in jobs.iter().zip(parsed) {
            fresh.insert(
                oid.clone(),
                (Facts::new(facts), Arc::new(OnceLock::from(refs))),
            );
        }

        let parsed_blobs: std::collections::HashSet<&str> =
            jobs.iter().map(|(_, oid, _)| oid.as_str()).collect();
        let unparsed_paths: Vec<String> = if left_out > 0 {
            view.iter()
                .filter(|(_, vf)| {
                    !parsed_blobs.contains(vf.oid.as_str())
                        && !loaded.contains_key(&vf.oid)
                        && !in_memory.contains_key(&(vf.oid.clone(), vf.lang))
                })
                .map(|(p, _)| p.clone())
                .collect()
        } else {
            Vec::new()
        };
        self.files = view_files(view, &mut in_memory, &fresh, &mut loaded, &mut stats);
        // Same-blob duplicates parsed once count as parsed once.
        stats.parsed = stats.parsed.min(jobs.len());
        self.unparsed = unparsed_paths.len();
        if self.unparsed > 0 {
            stats.cached = stats.cached.saturating_sub(self.unparsed);
            // Files left out have no references either: none is looked for in the cache.
            for f in &mut self.files {
                if unparsed_paths.binary_search(&f.path).is_ok() {
                    f.refs = Arc::new(OnceLock::from(Vec::new()));
                }
            }
            self.rebuild_tables();
            return Ok(stats);
        }
        if same_paths {
            let changed: Vec<usize> = (0..self.files.len())
                .filter(|&i| self.files[i].oid != previous[i].0)
                .collect();
            self.update_tables(&changed, &previous);
        } else {
            self.rebuild_tables();
            // Only later opens depend on the snapshot; this refresh succeeded without it.
            if let Err(e) = self.save_snapshot() {
                tracing::warn!(error = %e, "cannot store the navigation view snapshot");
            }
        }
        Ok(stats)
    }

    /// Patches the name tables for the files numbered `changed`, whose previous contents are
    /// in `previous` (indexed by file number); paths and file numbers are unchanged.
    fn update_tables(&mut self, changed: &[usize], previous: &[(String, Loaded)]) {
        fn remove<T>(table: &mut NameTable<T>, name: &str, keep: impl Fn(&T) -> bool) {
            if let Some(v) = table.get_mut(name) {
                v.retain(keep);
                if v.is_empty() {
                    table.remove(name);
                }
            }
        }
        let mut names = self.names.take();
        for &i in changed {
            let file = i as u32;
            for d in &previous[i].1.0.defs {
                remove(&mut names, &d.name, |id| id.file != file);
            }
            for (di, d) in self.files[i].facts.defs.iter().enumerate() {
                let v = names.entry(d.name.clone()).or_default();
                let key = (file, di as u32);
                let at = v.partition_point(|id| (id.file, id.def) < key);
                v.insert(
                    at,
                    DefId {
                        file,
                        def: di as u32,
                    },
                );
            }
        }
        self.names = snapshot::Names::new(names);
        let Some(mut refs) = self.ref_names.take() else {
            return;
        };
        for &i in changed {
            let file = i as u32;
            let Some(old) = previous[i].1.1.get() else {
                // The old references were never loaded, so the table cannot be patched.
                return;
            };
            for r in old {
                remove(&mut refs, &r.name, |(f, _)| *f != file);
            }
            for (ri, r) in self.refs_of(file).iter().enumerate() {
                let v = refs.entry(r.name.clone()).or_default();
                let key = (file, ri as u32);
                let at = v.partition_point(|x| *x < key);
                v.insert(at, key);
            }
        }
        self.ref_names = OnceLock::from(refs);
    }

    /// Stores a snapshot of a large view unless one is stored already, so that the next
    /// index of the same view opens from it.
    fn save_snapshot(&mut self) -> Result<(), NavError> {
        if self.files.len() < snapshot::MIN_FILES {
            return Ok(());
        }
        let key = snapshot::view_key(
            self.files
                .iter()
                .map(|f| (f.path.as_str(), f.oid.as_str(), f.lang)),
        )?;
        if self.cache.has_snapshot(key)? {
            return Ok(());
        }
        let stored = snapshot::encode(self.names.table());
        self.cache.put_snapshot(key, self.files.len(), &stored)
    }

    fn path_table(&self) -> HashMap<String, u32> {
        self.files
            .iter()
            .enumerate()
            .map(|(i, f)| (f.path.clone(), i as u32))
            .collect()
    }

    fn rebuild_tables(&mut self) {
        self.by_path = self.path_table();
        let mut names: NameTable<DefId> = NameTable::default();
        for (fi, f) in self.files.iter().enumerate() {
            for (di, d) in f.facts.defs.iter().enumerate() {
                names.entry(d.name.clone()).or_default().push(DefId {
                    file: fi as u32,
                    def: di as u32,
                });
            }
        }
        self.names = snapshot::Names::new(names);
        self.module_table = OnceLock::new();

        self.ref_names = OnceLock::new();
    }

    /// Makes references be read, per name asked, from the files whose contents mention the
    /// name only, instead of from every file at the first question: what a one-shot query
    /// needs (a reference to a name is a mention of it; an alias's use mentions the alias,
    /// which `alias_names` asks for too). Dropped by the next refresh.
    pub fn scope_refs_to_mentions(&mut self) {
        self.refs_by_mention = Some(std::sync::Mutex::default());
    }

    /// Returns every reference named `name` as (file, reference number).
    pub(crate) fn refs_named(&self, name: &str) -> Vec<(u32, u32)> {
        if let Some(scoped) = &self.refs_by_mention {
            let lock = || scoped.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(found) = lock().refs.get(name) {
                return found.clone();
            }
            let found = self.mentioned_refs(name);
            lock().refs.insert(name.to_string(), found.clone());
            return found;
        }
        let table = self.ref_names.get_or_init(|| {
            let mut t: NameTable<(u32, u32)> = NameTable::default();
            for fi in 0..self.files.len() {
                for (ri, r) in self.refs_of(fi as u32).iter().enumerate() {
                    t.entry(r.name.clone())
                        .or_default()
                        .push((fi as u32, ri as u32));
                }
            }
            t
        });
        table.get(name).cloned().unwrap_or_default()
    }

    /// Returns the files whose contents mention the word `name` (every file when the index
    /// is not scoped to mentions, see [`Index::scope_refs_to_mentions`]), remembered per name.
    pub(crate) fn files_mentioning(&self, name: &str) -> Vec<u32> {
        let Some(scoped) = &self.refs_by_mention else {
            return (0..self.files.len() as u32).collect();
        };
        let lock = || scoped.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(found) = lock().files.get(name) {
            return found.clone();
        }
        let Ok(matcher) =
            regex_automata::meta::Regex::new(&format!(r"(?-u:\b){}(?-u:\b)", regex_escape(name)))
        else {
            return Vec::new();
        };
        let found = self.files_matching(&matcher);
        lock().files.insert(name.to_string(), found.clone());
        found
    }

    /// Returns the files whose current contents `matcher` matches (and those that cannot be
    /// read), reading them on all cores, each thread into one buffer.
    fn files_matching(&self, matcher: &regex_automata::meta::Regex) -> Vec<u32> {
        let (root, files, unsaved) = (&self.root, &self.files, &self.unsaved);
        let matches = |fi: u32, buf: &mut Vec<u8>| -> bool {
            let path = &files[fi as usize].path;
            if let Some(data) = unsaved.get(path) {
                return matcher.is_match(data.as_slice());
            }
            buf.clear();
            let read = std::fs::File::open(root.join(path))
                .and_then(|mut f| std::io::Read::read_to_end(&mut f, buf));
            read.is_err() || matcher.is_match(buf.as_slice())
        };
        let all: Vec<u32> = (0..files.len() as u32).collect();
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        if all.len() < 64 || threads < 2 {
            let mut buf = Vec::new();
            return all
                .into_iter()
                .filter(|fi| matches(*fi, &mut buf))
                .collect();
        }
        let chunk = all.len().div_ceil(threads);
        std::thread::scope(|s| {
            let handles: Vec<_> = all
                .chunks(chunk)
                .map(|part| {
                    s.spawn(move || {
                        let mut buf = Vec::new();
                        part.iter()
                            .copied()
                            .filter(|fi| matches(*fi, &mut buf))
                            .collect::<Vec<u32>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_default())
                .collect()
        })
    }

    /// Returns the references named `name` in the files whose contents mention it.
    fn mentioned_refs(&self, name: &str) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        for fi in self.files_mentioning(name) {
            for (ri, r) in self.refs_of(fi).iter().enumerate() {
                if r.name == name {
                    out.push((fi, ri as u32));
                }
            }
        }
        out
    }

    /// Returns the references of file `file`, loading them from the cache on first use.
    pub fn refs_of(&self, file: u32) -> &[Ref] {
        let f = &self.files[file as usize];
        f.refs.get_or_init(|| {
            let version = f.lang.version();
            match self.cache.get_refs(&f.oid, version) {
                Ok(Some(refs)) => refs,
                Ok(None) => Vec::new(),
                Err(e) => {
                    tracing::warn!(path = %f.path, error = %e, "cannot load references");
                    Vec::new()
                }
            }
        })
    }

    /// Returns the module lookup tables of the view (its manifests read on first use).
    pub(crate) fn modules(&self) -> &ModuleTable {
        self.module_table.get_or_init(|| {
            ModuleTable::build(&self.files, &Manifests::read(&self.root, &self.files))
        })
    }

    /// Returns the file entry of a definition.
    pub fn file(&self, id: u32) -> &FileEntry {
        &self.files[id as usize]
    }

    /// Returns the definition behind `id`.
    pub fn def(&self, id: DefId) -> &super::facts::Def {
        &self.files[id.file as usize].facts.defs[id.def as usize]
    }

    /// Returns the current contents of a file in the view (from the working tree).
    pub fn read_source(&self, file: u32) -> Result<Vec<u8>, NavError> {
        if let Some(data) = self.unsaved.get(&self.files[file as usize].path) {
            return Ok(data.clone());
        }
        let path = self.root.join(&self.files[file as usize].path);
        fs_err::read(&path).map_err(|source| NavError::Io { path, source })
    }
}

/// Which files a query-driven refresh parses: those named, and those whose contents mention
/// one of the query's words.
struct Selection<'a> {
    root: PathBuf,
    unsaved: HashMap<String, Vec<u8>>,
    matcher: &'a regex_automata::meta::Regex,
    needed: &'a [String],
}

impl Selection<'_> {
    fn keeps(&self, path: &str) -> bool {
        if self.needed.iter().any(|n| n == path) {
            return true;
        }
        let data = match self.unsaved.get(path) {
            Some(d) => d.clone(),
            None => match std::fs::read(self.root.join(path)) {
                Ok(d) => d,
                // Unreadable now: parsing reports it as it would.
                Err(_) => return true,
            },
        };
        self.matcher.is_match(data.as_slice())
    }
}

/// Returns `word` with the regular expression's special characters escaped.
fn regex_escape(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    for c in word.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Returns the cache keys (blob, facts version) of the view's blobs not in memory, sorted and
/// without duplicates.
fn missing_blobs(
    view: &BTreeMap<String, worktree::ViewFile>,
    in_memory: &HashMap<(String, Lang), Loaded>,
) -> Result<Vec<(String, u64)>, NavError> {
    let mut missing: Vec<(String, u64)> = Vec::new();
    for vf in view.values() {
        if !in_memory.contains_key(&(vf.oid.clone(), vf.lang)) {
            missing.push((vf.oid.clone(), vf.lang.version()));
        }
    }
    missing.sort();
    missing.dedup();
    Ok(missing)
}

/// Returns the (path, blob, language) to parse: one per distinct blob of the view that is
/// neither in memory nor loaded from the cache.
fn parse_jobs(
    view: &BTreeMap<String, worktree::ViewFile>,
    in_memory: &HashMap<(String, Lang), Loaded>,
    loaded: &HashMap<String, FileFacts>,
) -> Vec<(String, String, Lang)> {
    let mut jobs: Vec<(String, String, Lang)> = Vec::new();
    let mut queued: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for (path, vf) in view {
        if in_memory.contains_key(&(vf.oid.clone(), vf.lang)) || loaded.contains_key(&vf.oid) {
            continue;
        }
        if queued.insert(vf.oid.as_str()) {
            jobs.push((path.clone(), vf.oid.clone(), vf.lang));
        }
    }
    jobs
}

/// Returns the entries of the view, taking each file's facts from memory, then from the
/// freshly parsed, then from those loaded from the cache, and counting where they came from.
fn view_files(
    view: BTreeMap<String, worktree::ViewFile>,
    in_memory: &mut HashMap<(String, Lang), Loaded>,
    fresh: &HashMap<String, Loaded>,
    loaded: &mut HashMap<String, FileFacts>,
    stats: &mut RefreshStats,
) -> Vec<FileEntry> {
    let mut files = Vec::with_capacity(view.len());
    for (path, vf) in view {
        let (facts, refs) = if let Some(f) = in_memory.get(&(vf.oid.clone(), vf.lang)) {
            stats.reused += 1;
            f.clone()
        } else if let Some(f) = fresh.get(&vf.oid) {
            stats.parsed += 1;
            f.clone()
        } else if let Some(f) = loaded.remove(&vf.oid) {
            stats.cached += 1;
            let f: Loaded = (Facts::new(f), Arc::new(OnceLock::new()));
            // Later paths holding the same blob share these facts.
            in_memory.insert((vf.oid.clone(), vf.lang), f.clone());
            f
        } else {
            stats.cached += 1;
            (Facts::new(FileFacts::default()), Arc::new(OnceLock::new()))
        };
        files.push(FileEntry {
            path,
            oid: vf.oid,
            lang: vf.lang,
            facts,
            refs,
        });
    }
    files
}

/// One parsed blob: its facts (references apart) and its references.
type Parsed = (FileFacts, Vec<Ref>);

/// What one parser thread parsed, by job number.
type Numbered = Vec<(usize, Parsed)>;

/// Parses `jobs` (path, blob id, language) on all cores, stores the facts in `cache`, and
/// returns them in job order, references apart.
///
/// Workers also encode what they parsed, and one more thread writes the encoded rows while
/// parsing goes on (in one transaction), so neither encoding nor SQLite is left to run alone
/// after the last file is parsed.
fn parse_parallel(
    root: &Path,
    unsaved: &HashMap<String, Vec<u8>>,
    jobs: &[(String, String, Lang)],
    cache: &mut Cache,
) -> Result<Vec<Parsed>, NavError> {
    if jobs.is_empty() {
        return Ok(Vec::new());
    }
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(jobs.len());
    let next = AtomicUsize::new(0);
    let (results, written): (Vec<Result<Numbered, NavError>>, Result<(), NavError>) =
        std::thread::scope(|s| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Encoded>(256);
            let writer = s.spawn(move || cache.put_stream(rx.into_iter()));
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    let tx = tx.clone();
                    let next = &next;
                    s.spawn(move || -> Result<Numbered, NavError> {
                        let mut extractor = Extractor::new();
                        let mut out = Vec::new();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some((path, oid, lang)) = jobs.get(i) else {
                                break;
                            };
                            let full = root.join(path);
                            let read = match unsaved.get(path) {
                                Some(data) => Ok(data.clone()),
                                None => fs_err::read(&full),
                            };
                            let source = match read {
                                Ok(s) => s,
                                // A file deleted since the scan is indexed as empty.
                                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
                                Err(source) => return Err(NavError::Io { path: full, source }),
                            };
                            let mut facts = extractor.extract(*lang, &source)?;
                            let refs = std::mem::take(&mut facts.refs);
                            let row = Encoded::new(oid, *lang, &facts, &refs)?;
                            // A closed channel means the writer failed; its error is reported.
                            let _ = tx.send(row);
                            out.push((i, (facts, refs)));
                        }
                        Ok(out)
                    })
                })
                .collect();
            drop(tx);
            let results = handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err(panicked())))
                .collect();
            let written = writer.join().unwrap_or_else(|_| Err(panicked()));
            (results, written)
        });
    let mut all: Vec<Option<Parsed>> = (0..jobs.len()).map(|_| None).collect();
    for r in results {
        for (i, parsed) in r? {
            all[i] = Some(parsed);
        }
    }
    written?;
    Ok(all.into_iter().map(Option::unwrap_or_default).collect())
}

fn panicked() -> NavError {
    NavError::BadArgument {
        message: "a navigation index thread panicked".into(),
    }
}

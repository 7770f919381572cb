//! Module resolution: which file an import names, per language.
//!
//! Python dotted modules (absolute, relative, packages), TS/JS relative specifiers with
//! extension and `index` probing and the `baseUrl`/`paths` of tsconfig files, Rust module paths
//! (`crate`, `self`, `super`, other crates of the workspace by name, file-per-module layout;
//! `tests/`, `examples/`, `benches/` and `src/bin/` files as crate roots of their own), and Go
//! import paths matched to package directories.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::facts::ModPath;
use super::index::FileEntry;
use super::lang::Lang;
use super::manifests::{Manifests, TsConfig};
use super::snapshot::Facts;

/// Rust file → (crate source directory, module path segments).
type RustModules = HashMap<u32, (String, Vec<String>)>;

/// Lookup tables from module names to files, rebuilt on every refresh.
#[derive(Debug, Default)]
pub struct ModuleTable {
    /// Every dotted suffix of every Python module path → files.
    python: HashMap<String, Vec<u32>>,
    /// Every `/`-suffix of every Go package directory → directory.
    go_dirs: HashMap<String, Vec<String>>,
    /// Directory → files of that directory (Go packages, Rust crate roots).
    dir_files: HashMap<String, Vec<u32>>,
    paths: HashMap<String, u32>,
    /// Directory depth of every file, for preferring modules near the root.
    depths: Vec<usize>,
    /// Rust file → (crate source directory, module path segments).
    rust_modules: HashMap<u32, (String, Vec<String>)>,
    /// (crate source directory, `a::b`) → file.
    rust_paths: HashMap<(String, String), u32>,
    /// Crate name (as `use` writes it) → the crate's source directory.
    crates: HashMap<String, String>,
    /// Rust file → its path and facts (decoded only when a `#[path]` module is looked up).
    rust_facts: HashMap<u32, (String, Facts)>,
    /// Per crate source directory holding a crate root: the module paths of the files its
    /// `#[path]` declarations load, found on first need.
    path_loaded: HashMap<String, OnceLock<RustModules>>,
    ts_configs: Vec<TsConfig>,
}

/// Returns the directories holding an `__init__.py` (or `.pyi`): the regular packages.
fn python_packages(files: &[FileEntry]) -> std::collections::HashSet<&str> {
    files
        .iter()
        .filter(|f| f.lang == Lang::Python)
        .filter(|f| f.path.ends_with("__init__.py") || f.path.ends_with("__init__.pyi"))
        .map(|f| dir_of(&f.path))
        .filter(|d| !d.is_empty())
        .collect()
}

/// Returns the directory part of a path (empty at the root).
pub fn dir_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

/// Returns true if and only if the Rust file at `path` is a `mod.rs`, which owns its
/// directory (a crate root does too, told by its module path).
fn is_mod_rs(path: &str) -> bool {
    path == "mod.rs" || path.ends_with("/mod.rs")
}

/// Returns the directory the path of `decl`, declared in the Rust file at `path`, is relative
/// to. At a file's top level that is the file's directory; inside inline modules (`mod a {
/// #[path = "x.rs"] mod b; }`) it is their directories under it, and under the file's own
/// name first when the file is not a `mod.rs` or crate root (`mod_rs`), as the Rust
/// reference has it: `src/a/b.rs` with `mod c { #[path = "x.rs"] mod d; }` loads
/// `src/a/b/c/x.rs`.
fn path_base(path: &str, mod_rs: bool, decl: &ModPath) -> String {
    let mut dir = dir_of(path).to_string();
    if decl.inline.is_empty() {
        return dir;
    }
    if !mod_rs {
        let file = path.rsplit('/').next().unwrap_or(path);
        dir = join(&dir, file.strip_suffix(".rs").unwrap_or(file));
    }
    for m in &decl.inline {
        dir = join(&dir, m);
    }
    dir
}

fn join(dir: &str, rest: &str) -> String {
    if dir.is_empty() {
        rest.to_string()
    } else {
        format!("{dir}/{rest}")
    }
}

/// Returns true if and only if every Rust file directly in `dir` (whose last component is
/// `last`) is a crate root: a package's `tests/`, `examples/` or `benches/`, or `src/bin/`.
fn is_target_dir(dir: &str, last: &str) -> bool {
    let parent = dir_of(dir);
    let in_src = dir.starts_with("src/") || dir.contains("/src/");
    match last {
        "tests" | "examples" | "benches" => !in_src,
        "bin" => parent == "src" || parent.ends_with("/src"),
        _ => false,
    }
}

/// Normalises `a/./b/../c` to `a/c`; returns `None` when it climbs above the root.
pub(super) fn normalise(path: &str) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                out.pop()?;
            }
            s => out.push(s),
        }
    }
    Some(out.join("/"))
}

impl ModuleTable {
    /// Builds the tables for the files of a view and the project's manifests.
    pub fn build(files: &[FileEntry], manifests: &Manifests) -> ModuleTable {
        let mut t = ModuleTable {
            crates: manifests.crates.iter().cloned().collect(),
            ts_configs: manifests.ts_configs.clone(),
            ..ModuleTable::default()
        };
        let packages = python_packages(files);
        for (i, f) in files.iter().enumerate() {
            let i = i as u32;
            t.paths.insert(f.path.clone(), i);
            t.depths.push(f.path.matches('/').count());
            t.dir_files
                .entry(dir_of(&f.path).to_string())
                .or_default()
                .push(i);
            match f.lang {
                Lang::Python => {
                    let stem = f
                        .path
                        .trim_end_matches(".pyi")
                        .trim_end_matches(".py")
                        .trim_end_matches("/__init__");
                    // `a/b/c.py` is `a.b.c` from the root, `b.c` when `a/` is on the search
                    // path, `c` when `a/b/` is: each dotted suffix whose first part is not
                    // inside a regular package (`flask/typing.py` is never `typing`, which is
                    // the standard library's).
                    let parts: Vec<&str> = stem.split('/').collect();
                    for k in 0..parts.len() {
                        if k > 0 && packages.contains(parts[..k].join("/").as_str()) {
                            continue;
                        }
                        t.python.entry(parts[k..].join(".")).or_default().push(i);
                    }
                }
                Lang::Go => {
                    let dir = dir_of(&f.path);
                    let parts: Vec<&str> = dir.split('/').filter(|s| !s.is_empty()).collect();
                    for k in 0..parts.len() {
                        let key = parts[k..].join("/");
                        let dirs = t.go_dirs.entry(key).or_default();
                        if !dirs.iter().any(|d| d == dir) {
                            dirs.push(dir.to_string());
                        }
                    }
                }
                _ => {}
            }
        }
        // Rust: a crate's source directory holds lib.rs or main.rs; every file directly in
        // `tests/`, `examples/`, `benches/` or `src/bin/` is a crate root of its own, whose
        // `mod x;` are its neighbours.
        let mut roots: Vec<String> = files
            .iter()
            .filter(|f| f.lang == Lang::Rust)
            .filter_map(|f| {
                let dir = dir_of(&f.path);
                let last = dir.rsplit('/').next().unwrap_or(dir);
                let root = f.path.ends_with("/lib.rs")
                    || f.path.ends_with("/main.rs")
                    || f.path == "lib.rs"
                    || f.path == "main.rs"
                    || is_target_dir(dir, last);
                root.then(|| dir.to_string())
            })
            .collect();
        roots.sort();
        roots.dedup();
        for (i, f) in files.iter().enumerate() {
            if f.lang != Lang::Rust {
                continue;
            }
            let Some(root) = roots
                .iter()
                .filter(|r| r.is_empty() || f.path.starts_with(&format!("{r}/")))
                .max_by_key(|r| r.len())
            else {
                continue;
            };
            let rel = if root.is_empty() {
                f.path.as_str()
            } else {
                &f.path[root.len() + 1..]
            };
            let rel = rel.trim_end_matches(".rs");
            let mut segs: Vec<String> = rel.split('/').map(str::to_string).collect();
            if matches!(segs.last().map(String::as_str), Some("mod"))
                || segs.len() == 1 && matches!(segs[0].as_str(), "lib" | "main")
            {
                segs.pop();
            }
            t.rust_paths
                .entry((root.clone(), segs.join("::")))
                .or_insert(i as u32);
            t.rust_modules.insert(i as u32, (root.clone(), segs));
            t.rust_facts
                .insert(i as u32, (f.path.clone(), f.facts.clone()));
        }
        for root in roots {
            if t.rust_paths.contains_key(&(root.clone(), String::new())) {
                t.path_loaded.insert(root, OnceLock::new());
            }
        }
        t
    }

    /// Returns the files of the directory holding `file` (a Go package).
    pub fn package_files(&self, files: &[FileEntry], file: u32) -> &[u32] {
        self.dir_files
            .get(dir_of(&files[file as usize].path))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// Returns the files `module` names when imported from `from`, empty when it is external.
    pub fn resolve(&self, files: &[FileEntry], from: u32, module: &str) -> Vec<u32> {
        let f = &files[from as usize];
        match f.lang {
            _ if module.is_empty() => vec![from],
            Lang::Python => self.python_module(&f.path, module).into_iter().collect(),
            Lang::JavaScript | Lang::TypeScript | Lang::Tsx => {
                self.ecma_module(&f.path, module).into_iter().collect()
            }
            Lang::Go => self.go_package(module),
            Lang::Rust => self.rust_module(from, module).into_iter().collect(),
        }
    }

    fn python_module(&self, from: &str, module: &str) -> Option<u32> {
        let dots = module.chars().take_while(|c| *c == '.').count();
        let rest = &module[dots..];
        if dots > 0 {
            let mut dir = dir_of(from).to_string();
            for _ in 1..dots {
                dir = dir_of(&dir).to_string();
            }
            let base = if rest.is_empty() {
                dir
            } else {
                join(&dir, &rest.replace('.', "/"))
            };
            for cand in [
                format!("{base}.py"),
                format!("{base}.pyi"),
                join(&base, "__init__.py"),
                join(&base, "__init__.pyi"),
            ] {
                if let Some(&i) = self.paths.get(&cand) {
                    return Some(i);
                }
            }
            return None;
        }
        // Absolute: the file whose dotted path ends with the module, closest to the root.
        let files = self.python.get(rest)?;
        files.iter().copied().min_by_key(|&i| {
            (
                self.depths.get(i as usize).copied().unwrap_or(usize::MAX),
                i,
            )
        })
    }

    /// Returns the Python submodule `name` of package file `package` (`pkg/__init__.py`).
    pub fn python_submodule(&self, files: &[FileEntry], package: u32, name: &str) -> Option<u32> {
        let p = &files[package as usize].path;
        if !p.ends_with("__init__.py") && !p.ends_with("__init__.pyi") {
            return None;
        }
        let dir = dir_of(p);
        [
            join(dir, &format!("{name}.py")),
            join(dir, &format!("{name}.pyi")),
            join(dir, &format!("{name}/__init__.py")),
        ]
        .iter()
        .find_map(|c| self.paths.get(c).copied())
    }

    fn ecma_module(&self, from: &str, spec: &str) -> Option<u32> {
        if !spec.starts_with('.') {
            // `baseUrl` and `paths` of the nearest tsconfig; else a package from node_modules:
            // external.
            let dir = dir_of(from);
            return self
                .ts_configs
                .iter()
                .filter(|c| {
                    c.dir.is_empty() || dir == c.dir || dir.starts_with(&format!("{}/", c.dir))
                })
                .flat_map(|c| c.candidates(spec))
                .find_map(|base| self.ecma_file(&normalise(&base)?));
        }
        let base = normalise(&join(dir_of(from), spec))?;
        self.ecma_file(&base)
    }

    /// Returns the file a module path without extension names: itself, with an extension,
    /// or its directory's `index`.
    fn ecma_file(&self, base: &str) -> Option<u32> {
        let base = base.to_string();
        let stripped = ["js", "jsx", "mjs", "cjs"]
            .iter()
            .find_map(|e| base.strip_suffix(&format!(".{e}")))
            .map(str::to_string);
        let mut cands = vec![base.clone()];
        for b in std::iter::once(&base).chain(stripped.as_ref()) {
            for ext in ["ts", "tsx", "d.ts", "js", "jsx", "mjs", "cjs"] {
                cands.push(format!("{b}.{ext}"));
            }
            for ext in ["ts", "tsx", "js", "jsx"] {
                cands.push(format!("{b}/index.{ext}"));
            }
        }
        cands.iter().find_map(|c| self.paths.get(c).copied())
    }

    fn go_package(&self, import: &str) -> Vec<u32> {
        let parts: Vec<&str> = import.split('/').collect();
        for k in 0..parts.len() {
            if let Some(dirs) = self.go_dirs.get(&parts[k..].join("/"))
                && let Some(dir) = dirs.iter().min_by_key(|d| d.len())
            {
                return self.dir_files.get(dir).cloned().unwrap_or_default();
            }
        }
        Vec::new()
    }

    /// Returns the Rust module path of a file: (crate source directory, segments).
    /// A file no parent module reaches by layout (`src/impls/unix.rs` without
    /// `src/impls.rs`) takes the path of the `#[path]` declaration that loads it, if any.
    pub fn rust_module_of(&self, file: u32) -> Option<&(String, Vec<String>)> {
        let layout = self.rust_modules.get(&file)?;
        let (root, segs) = layout;
        let orphan = segs.split_last().is_some_and(|(_, parent)| {
            !self
                .rust_paths
                .contains_key(&(root.clone(), parent.join("::")))
        });
        let Some(loaded) = self.path_loaded.get(root).filter(|_| orphan) else {
            return Some(layout);
        };
        loaded
            .get_or_init(|| self.path_loaded_modules(root))
            .get(&file)
            .or(Some(layout))
    }

    /// Returns the module path of every file a `#[path]` declaration of the crate at `root`
    /// loads: the declaring file's module path and the declared name (declarations inside
    /// loaded files included).
    fn path_loaded_modules(&self, root: &str) -> RustModules {
        let mut out = RustModules::new();
        // Two rounds: a file loaded through `#[path]` may declare more of them.
        for _ in 0..2 {
            for (file, (path, facts)) in &self.rust_facts {
                let in_crate = self.rust_modules.get(file).is_some_and(|(r, _)| r == root);
                if !in_crate || facts.mod_paths.is_empty() {
                    continue;
                }
                let Some((root, segs)) = out.get(file).or_else(|| self.rust_modules.get(file))
                else {
                    continue;
                };
                // A file loaded through `#[path]` owns its directory as a `mod.rs` does.
                let mod_rs = out.contains_key(file) || segs.is_empty() || is_mod_rs(path);
                let (root, segs) = (root.clone(), segs.clone());
                for decl in &facts.mod_paths {
                    let Some(target) = normalise(&join(&path_base(path, mod_rs, decl), &decl.path))
                        .and_then(|t| self.paths.get(&t).copied())
                    else {
                        continue;
                    };
                    let mut module = segs.clone();
                    module.extend(decl.inline.iter().cloned());
                    module.push(decl.name.clone());
                    out.insert(target, (root.clone(), module));
                }
            }
        }
        out
    }

    /// Returns the file of Rust module `segments` in the crate at `root`: the file its layout
    /// gives, else the file a `#[path]` attribute on its declaration names.
    pub fn rust_file(&self, root: &str, segments: &[String]) -> Option<u32> {
        self.rust_paths
            .get(&(root.to_string(), segments.join("::")))
            .copied()
            .or_else(|| self.rust_path_module(root, segments))
    }

    /// Returns the file a `#[path = "…"] mod` declaration of module `segments` names: the
    /// declaration is looked up in the parent module's file, and its path taken relative to
    /// that file's directory. A file loaded that way owns its directory as a `mod.rs` does: its
    /// plain `mod x;` is `x.rs` or `x/mod.rs` beside it.
    fn rust_path_module(&self, root: &str, segments: &[String]) -> Option<u32> {
        let (name, parent) = segments.split_last()?;
        if let Some(f) = self.inline_path_module(root, segments) {
            return Some(f);
        }
        let (parent, loaded) = match self.rust_paths.get(&(root.to_string(), parent.join("::"))) {
            Some(&f) => (f, false),
            None => (self.rust_path_module(root, parent)?, true),
        };
        let (path, facts) = self.rust_facts.get(&parent)?;
        let dir = dir_of(path);
        let top_level = |m: &&ModPath| &m.name == name && m.inline.is_empty();
        if let Some(decl) = facts.mod_paths.iter().find(top_level) {
            let target = normalise(&join(dir, &decl.path))?;
            return self.paths.get(&target).copied();
        }
        if !loaded {
            return None;
        }
        [format!("{name}.rs"), format!("{name}/mod.rs")]
            .iter()
            .find_map(|c| self.paths.get(&join(dir, c)).copied())
    }

    /// Returns the file a `#[path = "…"] mod` declaration inside inline modules names for
    /// module `segments` (`crate::a::b` declared as `mod a { #[path = "x.rs"] mod b; }` in the
    /// crate root): the declaring file is the module before the inline ones, found by layout.
    fn inline_path_module(&self, root: &str, segments: &[String]) -> Option<u32> {
        let (name, parent) = segments.split_last()?;
        (0..parent.len()).rev().find_map(|outer| {
            let (module, inline) = parent.split_at(outer);
            let file = *self
                .rust_paths
                .get(&(root.to_string(), module.join("::")))?;
            let (path, facts) = self.rust_facts.get(&file)?;
            let decl = facts
                .mod_paths
                .iter()
                .find(|m| &m.name == name && m.inline == inline)?;
            let mod_rs = module.is_empty() || is_mod_rs(path);
            let target = normalise(&join(&path_base(path, mod_rs, decl), &decl.path))?;
            self.paths.get(&target).copied()
        })
    }

    /// Returns the name of the crate whose source directory is `root`, if known.
    pub fn crate_name(&self, root: &str) -> Option<String> {
        self.crates
            .iter()
            .find(|(_, r)| r.as_str() == root)
            .map(|(n, _)| n.clone())
    }

    /// Returns the file of module `segs[1..]` in the crate named `segs[0]`, if that is a
    /// crate of the view.
    fn extern_crate(&self, segs: &[String]) -> Option<u32> {
        let (name, rest) = segs.split_first()?;
        let root = self.crates.get(name)?;
        self.rust_file(root, rest)
    }

    /// Resolves a Rust module path (`crate::a::b`, `super::x`, `self::y`, `a::b`, `other_crate::c`)
    /// from `from`.
    pub fn rust_module(&self, from: u32, module: &str) -> Option<u32> {
        let segs: Vec<String> = module
            .split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        let Some((root, here)) = self.rust_module_of(from) else {
            return self.extern_crate(&segs);
        };
        let (mut base, rest): (Vec<String>, &[String]) = match segs.first().map(String::as_str) {
            Some("crate") => (Vec::new(), &segs[1..]),
            Some("self") => (here.clone(), &segs[1..]),
            Some("super") => {
                let mut b = here.clone();
                let mut i = 0;
                while segs.get(i).map(String::as_str) == Some("super") {
                    b.pop();
                    i += 1;
                }
                (b, &segs[i..])
            }
            // 2018 paths: a child of the current module, another crate by name, else a module
            // of the crate root.
            _ => {
                let mut child = here.clone();
                child.extend(segs.iter().cloned());
                if let Some(f) = self.rust_file(root, &child) {
                    return Some(f);
                }
                if let Some(f) = self.extern_crate(&segs) {
                    return Some(f);
                }
                (Vec::new(), &segs[..])
            }
        };
        base.extend(rest.iter().cloned());
        self.rust_file(root, &base)
    }
}

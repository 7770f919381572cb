//! The repository map: files and their key definitions ranked by personalised PageRank over
//! the reference graph, rendered as signature lines within a token budget.
//!
//! The design follows aider's repo map: an edge from each referencing file to each defining
//! file per shared identifier, weighted up for focus files and mentioned identifiers and down
//! for private names and names defined in many files; each file's rank is then shared out
//! among the definitions it points at.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::extract::is_function;
use super::index::{DefId, Index};

/// What the map should favour and how large it may be.
#[derive(Debug, Clone, Default)]
pub struct MapOptions {
    /// Files the work is about (boosted, personalisation vector).
    pub focus: Vec<String>,
    /// Identifiers mentioned in the task (boosted).
    pub mentioned: Vec<String>,
    /// The budget in estimated tokens; the map never exceeds it.
    pub tokens: usize,
}

/// Returns the deterministic token estimate of `text`: one token per four characters,
/// rounded up (a stable stand-in for a model's tokenizer).
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// Returns PageRank scores of `n` nodes over weighted `edges`, personalised by `personal`.
fn pagerank(n: usize, edges: &[(usize, usize, f64)], personal: &[f64]) -> Vec<f64> {
    const DAMPING: f64 = 0.85;
    let mut out_weight = vec![0.0; n];
    for (s, _, w) in edges {
        out_weight[*s] += w;
    }
    let mut rank = personal.to_vec();
    for _ in 0..100 {
        let mut next: Vec<f64> = personal.iter().map(|p| (1.0 - DAMPING) * p).collect();
        let dangling: f64 = (0..n)
            .filter(|i| out_weight[*i] == 0.0)
            .map(|i| rank[i])
            .sum();
        for (i, p) in personal.iter().enumerate() {
            next[i] += DAMPING * dangling * p;
        }
        for (s, d, w) in edges {
            next[*d] += DAMPING * rank[*s] * w / out_weight[*s];
        }
        let delta: f64 = next.iter().zip(&rank).map(|(a, b)| (a - b).abs()).sum();
        rank = next;
        if delta < 1e-9 {
            break;
        }
    }
    rank
}

/// Returns the personalisation vector of `n` files: uniform, or shared among the `focus`
/// files only.
fn personalisation(n: usize, focus: &HashSet<u32>) -> Vec<f64> {
    if focus.is_empty() {
        vec![1.0 / n as f64; n]
    } else {
        (0..n)
            .map(|i| {
                if focus.contains(&(i as u32)) {
                    1.0 / focus.len() as f64
                } else {
                    0.0
                }
            })
            .collect()
    }
}

impl Index {
    /// Returns the ranked repository map within `opts.tokens` estimated tokens.
    pub fn repo_map(&self, opts: &MapOptions) -> String {
        let ranked = self.ranked_definitions(opts);
        // The largest prefix of the ranking that fits the budget (binary search).
        let (mut lo, mut hi) = (0usize, ranked.len());
        let mut best = String::new();
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            let text = self.render_map(&ranked[..mid]);
            if estimate_tokens(&text) <= opts.tokens {
                best = text;
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        if lo == 0 {
            best = String::new();
        }
        best
    }

    /// Returns definitions ordered by rank, best first.
    pub fn ranked_definitions(&self, opts: &MapOptions) -> Vec<DefId> {
        let n = self.files.len();
        if n == 0 {
            return Vec::new();
        }
        let mentioned: HashSet<&str> = opts.mentioned.iter().map(String::as_str).collect();
        let focus: HashSet<u32> = opts.focus.iter().filter_map(|p| self.file_id(p)).collect();
        let defines = self.definers();
        let (edges, edge_idents) = self.reference_edges(&defines, &mentioned, &focus);
        let rank = pagerank(n, &edges, &personalisation(n, &focus));
        let def_rank = self.definition_ranks(&edges, &edge_idents, &rank, &mentioned, &focus);
        self.by_rank(&def_rank, &rank)
    }

    /// Returns identifier → files defining it (top-level and members, not locals).
    fn definers(&self) -> HashMap<&str, Vec<u32>> {
        let mut defines: HashMap<&str, Vec<u32>> = HashMap::new();
        for (fi, f) in self.files.iter().enumerate() {
            for d in &f.facts.defs {
                if d.kind == "impl"
                    || d.kind == "type_parameter"
                    || d.parent
                        .is_some_and(|p| is_function(&f.facts.defs[p as usize].kind))
                {
                    continue;
                }
                let v = defines.entry(d.name.as_str()).or_default();
                if v.last() != Some(&(fi as u32)) {
                    v.push(fi as u32);
                }
            }
        }
        defines
    }

    /// Returns the weighted edges (referencing file, defining file, weight) of the reference
    /// graph, and the identifier each edge is for.
    fn reference_edges<'a>(
        &'a self,
        defines: &HashMap<&'a str, Vec<u32>>,
        mentioned: &HashSet<&str>,
        focus: &HashSet<u32>,
    ) -> (Vec<(usize, usize, f64)>, Vec<&'a str>) {
        // (referencing file, identifier) → count.
        let mut uses: BTreeMap<(u32, &str), usize> = BTreeMap::new();
        for fi in 0..self.files.len() {
            for r in self.refs_of(fi as u32) {
                if defines.contains_key(r.name.as_str()) {
                    *uses.entry((fi as u32, r.name.as_str())).or_default() += 1;
                }
            }
        }
        let mut edges: Vec<(usize, usize, f64)> = Vec::new();
        let mut edge_idents: Vec<&str> = Vec::new();
        for ((src, ident), count) in &uses {
            let definers = &defines[ident];
            let mut mul = 1.0;
            if mentioned.contains(ident) {
                mul *= 10.0;
            }
            let long =
                ident.len() >= 8 && (ident.contains('_') || ident.chars().any(char::is_uppercase));
            if long {
                mul *= 10.0;
            }
            if ident.starts_with('_') {
                mul *= 0.1;
            }
            if definers.len() > 5 {
                mul *= 0.1;
            }
            if focus.contains(src) {
                mul *= 50.0;
            }
            for d in definers {
                edges.push((*src as usize, *d as usize, mul * (*count as f64).sqrt()));
                edge_idents.push(ident);
            }
        }
        (edges, edge_idents)
    }

    /// Returns the rank of each (file, identifier) definition: the share of each file's `rank`
    /// that its edges point at it, plus the boosts of focus files and mentioned identifiers.
    fn definition_ranks<'a>(
        &'a self,
        edges: &[(usize, usize, f64)],
        edge_idents: &[&'a str],
        rank: &[f64],
        mentioned: &HashSet<&str>,
        focus: &HashSet<u32>,
    ) -> HashMap<(u32, &'a str), f64> {
        let mut out_weight = vec![0.0; self.files.len()];
        for (s, _, w) in edges {
            out_weight[*s] += w;
        }
        // Share each file's rank among the (file, identifier) definitions it points at.
        let mut def_rank: HashMap<(u32, &str), f64> = HashMap::new();
        for ((s, d, w), ident) in edges.iter().zip(edge_idents) {
            *def_rank.entry((*d as u32, ident)).or_default() += rank[*s] * w / out_weight[*s];
        }
        for (fi, f) in self.files.iter().enumerate() {
            let boost = if focus.contains(&(fi as u32)) {
                1.0
            } else {
                0.0
            };
            for d in &f.facts.defs {
                if mentioned.contains(d.name.as_str()) || boost > 0.0 {
                    *def_rank.entry((fi as u32, d.name.as_str())).or_default() +=
                        boost + 0.5 * mentioned.contains(d.name.as_str()) as u8 as f64;
                }
            }
        }
        def_rank
    }

    /// Returns the definitions (not locals, not type parameters) best first by `def_rank`,
    /// with a tiny share of their file's `rank`.
    fn by_rank(&self, def_rank: &HashMap<(u32, &str), f64>, rank: &[f64]) -> Vec<DefId> {
        let mut scored: Vec<(f64, DefId)> = Vec::new();
        for (fi, f) in self.files.iter().enumerate() {
            for (di, d) in f.facts.defs.iter().enumerate() {
                if d.kind == "type_parameter"
                    || d.parent
                        .is_some_and(|p| is_function(&f.facts.defs[p as usize].kind))
                {
                    continue;
                }
                // A tiny file-rank share keeps unreferenced definitions ordered too.
                let r = def_rank
                    .get(&(fi as u32, d.name.as_str()))
                    .copied()
                    .unwrap_or(0.0)
                    + rank[fi] * 1e-3;
                scored.push((
                    r,
                    DefId {
                        file: fi as u32,
                        def: di as u32,
                    },
                ));
            }
        }
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.into_iter().map(|(_, d)| d).collect()
    }

    /// Renders chosen definitions grouped by file (files in rank order), with `⋮` elisions.
    fn render_map(&self, chosen: &[DefId]) -> String {
        let mut order: Vec<u32> = Vec::new();
        let mut by_file: HashMap<u32, Vec<u32>> = HashMap::new();
        for d in chosen {
            if !by_file.contains_key(&d.file) {
                order.push(d.file);
            }
            by_file.entry(d.file).or_default().push(d.def);
        }
        let mut out = String::new();
        for f in order {
            let entry = &self.files[f as usize];
            let mut defs = by_file.remove(&f).unwrap_or_default();
            defs.sort_unstable();
            defs.dedup();
            out.push_str(&entry.path);
            out.push_str(":\n");
            let mut last_line = 0;
            for di in defs {
                let d = &entry.facts.defs[di as usize];
                if last_line != 0 && d.span.line > last_line + 1 {
                    out.push_str("⋮\n");
                }
                let depth = entry.facts.container_chain(di).len();
                out.push_str(&format!(
                    "{:>5}│{}{}\n",
                    d.span.line,
                    "    ".repeat(depth),
                    d.signature
                ));
                last_line = d.span.line;
            }
            out.push('\n');
        }
        out
    }
}

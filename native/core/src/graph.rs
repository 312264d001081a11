//! The call graph of a view: definitions as nodes, calls and inheritance as edges, each edge
//! resolved with a stated confidence.
//!
//! A call is resolved in this order, stopping at the first step that answers:
//! 1. **Same scope and file**: a definition of that name visible from the call site (nested
//!    in an enclosing definition, or at the top of the file); `self.f()` / `this.f()` goes to
//!    the enclosing class, then its bases.
//! 2. **Imports**: a name imported into the file (`from m import f`, `import { f } from`,
//!    `use m::f`), a module alias (`m.f()`, Go's `pkg.F()`), or a wildcard import or include
//!    that brings the name in. Imports that point outside the repository make the edge
//!    unresolved, naming the module.
//! 3. **Same package** (Go: the same directory).
//! 4. **A unique global name** among the definitions of the same language family: inferred.
//!    More than one is ambiguous: unresolved, with the candidates listed. None: unresolved.
//!
//! The graph is built from the store in one pass (references are stored per file version),
//! and kept per view generation by the engine.

use std::collections::{HashMap, HashSet, VecDeque};

use rayon::prelude::*;

use crate::chunk::{ChunkKind, Symbol};
use crate::lang::{Language, module_path};
use crate::rank::{PathClass, classify_path, is_test_scope};
use crate::refs::{FIELD, Ref, RefKind};

/// Candidates listed for an ambiguous edge, at most.
const MAX_CANDIDATES: usize = 12;
/// How far up the base classes `self.f()` is looked for.
const MAX_BASE_DEPTH: usize = 6;

/// One file of the view, as the store has it.
pub struct GraphFile {
    pub path: String,
    pub language: Language,
    pub symbols: Vec<Symbol>,
    /// References as stored ([`crate::refs::encode`]).
    pub refs: Vec<u8>,
    /// Lines of the file: where its module node ends.
    pub lines: u32,
}

impl GraphFile {
    /// Parses a source file directly (tests and tools; the engine reads the store).
    #[must_use]
    pub fn parse(path: &str, source: &str) -> Option<GraphFile> {
        let language = Language::detect(path, source.as_bytes())?;
        let parsed = crate::chunk::chunk_file(source, language);
        Some(GraphFile {
            path: path.to_owned(),
            language,
            symbols: parsed.symbols,
            refs: crate::refs::encode(&parsed.refs),
            lines: u32::try_from(crate::chunk::line_starts(source).len()).unwrap_or(u32::MAX),
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Confidence {
    /// Traced through scope, imports or the receiver's stated type.
    Resolved,
    /// The only definition of that name (and owner) in the repository.
    Inferred,
    /// Ambiguous, external or unknown: the target is not known.
    Unresolved,
}

impl Confidence {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Confidence::Resolved => "resolved",
            Confidence::Inferred => "inferred",
            Confidence::Unresolved => "unresolved",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EdgeKind {
    Call,
    Inherit,
}

impl EdgeKind {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            EdgeKind::Call => "call",
            EdgeKind::Inherit => "inherit",
        }
    }
}

/// What an edge points to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Node(u32),
    /// Several definitions fit and nothing tells them apart.
    Ambiguous(Vec<u32>),
    /// Imported from outside the repository (the module as written).
    External(String),
    /// No definition of that name is indexed (a builtin, a dynamic call, generated code).
    Unknown,
}

/// A definition, or a file's top level (kind [`ChunkKind::Module`], empty local path).
#[derive(Clone, Debug)]
pub struct Node {
    pub file: u32,
    pub name: String,
    pub local_path: String,
    pub kind: ChunkKind,
    pub start_line: u32,
    pub end_line: u32,
    /// The innermost definition this one is nested in.
    parent: Option<u32>,
    /// The type a method belongs to, by name (`Server` for Go's `func (s *Server) Run()`).
    owner: String,
}

#[derive(Clone, Debug)]
pub struct Edge {
    pub kind: EdgeKind,
    /// The innermost definition holding the call (or the file's top level).
    pub from: u32,
    pub line: u32,
    /// The callee as written: `send`, `self.send`, `http.Get`.
    pub callee: String,
    pub target: Target,
    pub confidence: Confidence,
}

pub struct FileInfo {
    pub path: String,
    pub language: Language,
    /// Module path segments (`pkg.mod.util` -> `[pkg, mod, util]`).
    module: Vec<String>,
    dir: String,
    /// The node of the file's top level; its definitions follow it.
    top: u32,
    test: bool,
}

/// How far a file stands from a project's implementation, for ordering definitions of one
/// name: 0 for its code, 1 for a type stub that only declares (`.pyi`, `.d.ts`), 2 for
/// benchmarks and examples, which use the code more than they define it.
fn beside_implementation(path: &str) -> u8 {
    let lower = path.to_ascii_lowercase();
    let (dirs, file) = lower.rsplit_once('/').unwrap_or(("", &lower));
    let aside = [
        "bench",
        "benches",
        "benchmark",
        "benchmarks",
        "example",
        "examples",
    ];
    if dirs.split('/').any(|d| aside.contains(&d)) {
        2
    } else if [".pyi", ".d.ts", ".d.mts", ".d.cts"]
        .iter()
        .any(|ext| file.ends_with(ext))
    {
        1
    } else {
        0
    }
}

/// Import of one file, its module resolved to files of the view.
struct Import {
    name: String,
    alias: String,
    module: String,
    /// Empty: the module is not in the repository.
    files: Vec<u32>,
}

/// Counts of a built graph.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GraphStats {
    pub files: u64,
    pub nodes: u64,
    pub edges: u64,
    pub resolved: u64,
    pub inferred: u64,
    pub unresolved: u64,
    /// Unresolved edges by reason: several candidates, a module outside the repository,
    /// nothing of that name indexed (builtins, the standard library, dynamic calls).
    pub ambiguous: u64,
    pub external: u64,
    pub unknown: u64,
    pub inherits: u64,
}

pub struct Graph {
    pub files: Vec<FileInfo>,
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
    by_name: HashMap<String, Vec<u32>>,
    /// Edges leaving each node, and edges that reach it (ambiguous ones included).
    out: Vec<Vec<u32>>,
    into: Vec<Vec<u32>>,
    /// Called name -> calls that resolved to nothing (external or unknown).
    unresolved: HashMap<String, usize>,
    /// How long [`Graph::build`] took.
    pub build_time: std::time::Duration,
}

/// Read-only indexes used while resolving.
struct Lookup<'g> {
    files: &'g [FileInfo],
    nodes: &'g [Node],
    /// Name -> definitions a call may land on: every one but fields (a struct's `len` field
    /// is not what `s.len()` calls, and a field named as a method would make the method's
    /// name ambiguous).
    by_name: HashMap<&'g str, Vec<u32>>,
    /// (owner, name) -> methods.
    by_owner: HashMap<(&'g str, &'g str), Vec<u32>>,
    by_path: HashMap<&'g str, u32>,
    /// Last module segment -> files.
    by_module_tail: HashMap<&'g str, Vec<u32>>,
    /// File name -> files.
    by_file_name: HashMap<&'g str, Vec<u32>>,
    by_dir: HashMap<&'g str, Vec<u32>>,
    /// Last directory name -> directories.
    by_dir_tail: HashMap<&'g str, Vec<&'g str>>,
    /// Class name -> (base name, base qualifier, file) from every inheritance reference.
    bases: HashMap<&'g str, Vec<(&'g str, u32)>>,
    /// File -> the names it imports (alias, name, module; `*` for a wildcard), which it may
    /// pass on: a package's `__init__.py`, an `index.js`.
    imports_of: HashMap<u32, Vec<&'g Ref>>,
}

impl Graph {
    /// Builds the graph of `files`, resolving every reference.
    #[must_use]
    pub fn build(input: Vec<GraphFile>) -> Graph {
        crate::helpers::in_own_pool(|| Self::build_here(input))
    }

    fn build_here(mut input: Vec<GraphFile>) -> Graph {
        let started = std::time::Instant::now();
        input.sort_by(|a, b| a.path.cmp(&b.path));
        let refs: Vec<Vec<Ref>> = input
            .par_iter()
            .map(|f| crate::refs::decode(&f.refs))
            .collect();
        let mut files = Vec::with_capacity(input.len());
        let mut nodes = Vec::new();
        for (i, f) in input.iter().enumerate() {
            let file = u32::try_from(i).unwrap_or(u32::MAX);
            let top = u32::try_from(nodes.len()).unwrap_or(u32::MAX);
            nodes.push(Node {
                file,
                name: file_stem(&f.path).to_owned(),
                local_path: String::new(),
                kind: ChunkKind::Module,
                start_line: 1,
                end_line: f.lines.max(1),
                parent: None,
                owner: String::new(),
            });
            let sep = f.language.path_separator();
            // Symbols come parents first; a stack of open ranges gives each its parent.
            let mut stack: Vec<u32> = Vec::new();
            for s in &f.symbols {
                while let Some(&open) = stack.last() {
                    let o = &nodes[open as usize];
                    if o.start_line <= s.start_line && s.end_line <= o.end_line {
                        break;
                    }
                    stack.pop();
                }
                let mut owner = s
                    .local_path
                    .rsplit_once(sep)
                    .map(|(head, _)| head.rsplit(sep).next().unwrap_or(head).to_owned())
                    .unwrap_or_default();
                let mut name = s.name.clone();
                let mut kind = s.kind;
                if let Some((table, member, method)) = lua_table_member(&s.name, f.language) {
                    owner = table.to_owned();
                    name = member.to_owned();
                    if method {
                        kind = ChunkKind::Method;
                    }
                }
                // C++ names an out-of-class definition in full (`Greeter::speak`); calls
                // name it by its last segment, owned by the segment before.
                if f.language == Language::Cpp
                    && let Some((_, last)) = s.name.rsplit_once("::")
                {
                    name = last.to_owned();
                }
                let id = u32::try_from(nodes.len()).unwrap_or(u32::MAX);
                nodes.push(Node {
                    file,
                    name,
                    local_path: s.local_path.clone(),
                    kind,
                    start_line: s.start_line,
                    end_line: s.end_line,
                    parent: stack.last().copied(),
                    owner,
                });
                stack.push(id);
            }
            let module = module_path(&f.path, f.language);
            files.push(FileInfo {
                path: f.path.clone(),
                language: f.language,
                module: split_segments(&module)
                    .into_iter()
                    .map(str::to_owned)
                    .collect(),
                dir: f
                    .path
                    .rsplit_once('/')
                    .map(|(d, _)| d)
                    .unwrap_or("")
                    .to_owned(),
                top,
                test: classify_path(&f.path) == PathClass::Test,
            });
        }
        let mut by_name: HashMap<String, Vec<u32>> = HashMap::new();
        for (id, n) in (0_u32..).zip(&nodes) {
            if n.kind != ChunkKind::Module || !n.local_path.is_empty() {
                by_name.entry(n.name.clone()).or_default().push(id);
            }
        }
        let edges: Vec<Edge> = {
            let lookup = Lookup::new(&files, &nodes, &by_name, &refs);
            (0..files.len())
                .into_par_iter()
                .flat_map_iter(|i| lookup.file_edges(u32::try_from(i).unwrap_or(0), &refs[i]))
                .collect()
        };
        let mut out = vec![Vec::new(); nodes.len()];
        let mut into = vec![Vec::new(); nodes.len()];
        let mut unresolved: HashMap<String, usize> = HashMap::new();
        for (id, e) in (0_u32..).zip(&edges) {
            out[e.from as usize].push(id);
            match &e.target {
                Target::Node(t) => into[*t as usize].push(id),
                Target::Ambiguous(c) => c.iter().for_each(|t| into[*t as usize].push(id)),
                Target::External(_) | Target::Unknown => {
                    let name = e.callee.rsplit(['.', ':', '>']).next().unwrap_or_default();
                    *unresolved.entry(name.to_owned()).or_default() += 1;
                }
            }
        }
        Graph {
            files,
            nodes,
            edges,
            by_name,
            out,
            into,
            unresolved,
            build_time: started.elapsed(),
        }
    }

    #[must_use]
    pub fn stats(&self) -> GraphStats {
        let mut s = GraphStats {
            files: self.files.len() as u64,
            nodes: (self.nodes.len() - self.files.len()) as u64,
            edges: self.edges.len() as u64,
            ..GraphStats::default()
        };
        for e in &self.edges {
            match e.confidence {
                Confidence::Resolved => s.resolved += 1,
                Confidence::Inferred => s.inferred += 1,
                Confidence::Unresolved => s.unresolved += 1,
            }
            match e.target {
                Target::Ambiguous(_) => s.ambiguous += 1,
                Target::External(_) => s.external += 1,
                Target::Unknown => s.unknown += 1,
                Target::Node(_) => {}
            }
            if e.kind == EdgeKind::Inherit {
                s.inherits += 1;
            }
        }
        s
    }

    /// Calls per language of the calling file: (resolved, inferred, unresolved).
    #[must_use]
    pub fn language_stats(&self) -> Vec<(Language, [u64; 3])> {
        let mut counts: HashMap<Language, [u64; 3]> = HashMap::new();
        for e in self.edges.iter().filter(|e| e.kind == EdgeKind::Call) {
            let lang = self.files[self.nodes[e.from as usize].file as usize].language;
            counts.entry(lang).or_default()[e.confidence as usize] += 1;
        }
        let mut out: Vec<_> = counts.into_iter().collect();
        out.sort_by_key(|(l, _)| *l);
        out
    }

    /// The symbol path of a node: module path and local path (`pkg.mod.Client.send`).
    #[must_use]
    pub fn symbol_path(&self, node: u32) -> String {
        let n = &self.nodes[node as usize];
        let f = &self.files[n.file as usize];
        crate::chunk::shown_symbol_path(
            &module_path(&f.path, f.language),
            &n.local_path,
            f.language,
        )
    }

    #[must_use]
    pub fn path_of(&self, node: u32) -> &str {
        &self.files[self.nodes[node as usize].file as usize].path
    }

    /// Definitions matching `symbol`: a name (`send`), a qualified name (`Client.send`,
    /// `client::Client::send`, `pkg.client.Client.send`), or `path:line` (the innermost
    /// definition there). Implementation first: code before documents' sections, source
    /// before tests, a definition before an `impl` block, a class before its constructors,
    /// code before stubs, benchmarks and examples, what is wrapped before its wrappers,
    /// shorter paths first.
    #[must_use]
    pub fn find(&self, symbol: &str) -> Vec<u32> {
        if let Some(found) = self.find_at(symbol) {
            return vec![found];
        }
        let segments: Vec<&str> = split_segments(symbol);
        let Some(last) = segments.last() else {
            return Vec::new();
        };
        let candidates = self
            .by_name
            .get(*last)
            .cloned()
            .or_else(|| {
                // Case-insensitive fallback: agents often type `parseargs` for `parse_args`.
                let lower = last.to_lowercase();
                let found: Vec<u32> = self
                    .by_name
                    .iter()
                    .filter(|(k, _)| k.to_lowercase() == lower)
                    .flat_map(|(_, v)| v.iter().copied())
                    .collect();
                (!found.is_empty()).then_some(found)
            })
            .unwrap_or_default();
        let mut found: Vec<u32> = candidates
            .into_iter()
            .filter(|&id| {
                segments.len() == 1 || {
                    let path = self.symbol_path(id);
                    let full = split_segments(&path);
                    full.len() >= segments.len()
                        && full[full.len() - segments.len()..]
                            .iter()
                            .zip(&segments)
                            .all(|(a, b)| a.eq_ignore_ascii_case(b))
                }
            })
            .collect();
        // Cached: the key clones a path and classifies it.
        found.sort_by_cached_key(|&id| {
            let n = &self.nodes[id as usize];
            let f = &self.files[n.file as usize];
            (
                // A document's section of that title names no code.
                n.kind == ChunkKind::Section,
                f.test || is_test_scope(&n.local_path),
                n.kind == ChunkKind::Impl,
                n.name != *last,
                // A builder's field after the setter of its name: the method has callers.
                n.kind == ChunkKind::Field,
                // `Status::Status`, a constructor, after the class `Status` it builds.
                split_segments(&n.local_path)
                    .iter()
                    .rev()
                    .nth(1)
                    .is_some_and(|outer| *outer == n.name),
                beside_implementation(&f.path),
                self.delegates(id),
                f.path.len(),
                f.path.clone(),
                n.start_line,
            )
        });
        found
    }

    /// Defined names spelled like `symbol`'s last part (`GetValue` for `GetVaule`,
    /// `jv_dump` for `jv_dupm`), nearest first: what to suggest when nothing is defined under
    /// it. A name qualifies within about one edit per four letters, transpositions counted
    /// once, case ignored.
    #[must_use]
    pub fn similar_names(&self, symbol: &str, limit: usize) -> Vec<String> {
        let Some(last) = split_segments(symbol).last().map(|s| s.to_lowercase()) else {
            return Vec::new();
        };
        let most = (last.chars().count() / 4).clamp(1, 3);
        let mut near: Vec<(usize, &str)> = self
            .by_name
            .keys()
            .filter_map(|name| {
                let lower = name.to_lowercase();
                let apart = lower.chars().count().abs_diff(last.chars().count());
                if apart > most || lower == last {
                    return None;
                }
                let distance = strsim::damerau_levenshtein(&lower, &last);
                (distance <= most).then_some((distance, name.as_str()))
            })
            .collect();
        near.sort_unstable();
        near.into_iter()
            .take(limit)
            .map(|(_, name)| name.to_owned())
            .collect()
    }

    /// Whether a definition hands its work to another of its name through some other
    /// object (`engine.search(..)` in a binding's `search`, `self.inner.read(..)`): a wrapper,
    /// listed after what it wraps. A call on itself (`search(..)`, `self.search(..)`,
    /// `Self::search(..)`) is recursion, not delegation.
    fn delegates(&self, id: u32) -> bool {
        let name = self.nodes[id as usize].name.as_str();
        self.out[id as usize].iter().any(|&e| {
            let e = &self.edges[e as usize];
            if e.kind != EdgeKind::Call || e.target == Target::Node(id) {
                return false;
            }
            let receiver = e
                .callee
                .strip_suffix(name)
                .and_then(|r| r.strip_suffix("::").or_else(|| r.strip_suffix('.')));
            receiver.is_some_and(|r| !matches!(r, "self" | "this" | "Self" | "cls"))
        })
    }

    /// `path:line` -> the innermost definition of that file holding the line. The path may
    /// be the end of one file's path (`HtmlTreeBuilder.java:265`, as a stack trace gives it).
    fn find_at(&self, symbol: &str) -> Option<u32> {
        let (path, line) = symbol.rsplit_once(':')?;
        let line: u32 = line.parse().ok()?;
        let path = path.trim_start_matches("./");
        let file = self.files.iter().position(|f| f.path == path).or_else(|| {
            let mut ending = self.files.iter().enumerate().filter(|(_, f)| {
                f.path
                    .strip_suffix(path)
                    .is_some_and(|head| head.ends_with('/'))
            });
            match (ending.next(), ending.next()) {
                (Some((only, _)), None) => Some(only),
                _ => None, // none, or several: not a place
            }
        })?;
        let top = self.files[file].top;
        let end = self
            .files
            .get(file + 1)
            .map_or(self.nodes.len(), |f| f.top as usize);
        (top..u32::try_from(end).unwrap_or(u32::MAX))
            .filter(|&id| {
                let n = &self.nodes[id as usize];
                n.start_line <= line && line <= n.end_line
            })
            .max_by_key(|&id| self.nodes[id as usize].start_line)
    }

    /// Edges leaving `node` (ids), in source order.
    #[must_use]
    pub fn callees(&self, node: u32) -> Vec<u32> {
        let mut edges = self.out[node as usize].clone();
        edges.sort_by_key(|&e| self.edges[e as usize].line);
        edges
    }

    /// Edges reaching `node` (ids): resolved, inferred, then ambiguous ones that may; at
    /// each, callers in source code before tests.
    #[must_use]
    pub fn callers(&self, node: u32) -> Vec<u32> {
        let mut edges = self.into[node as usize].clone();
        edges.sort_by_cached_key(|&e| {
            let e = &self.edges[e as usize];
            let from = &self.nodes[e.from as usize];
            let test = self.files[from.file as usize].test || is_test_scope(&from.local_path);
            (e.confidence, test, self.path_of(e.from), e.line)
        });
        edges
    }

    /// Calls of `node`'s name that could not be resolved to anything: "unknown" callers.
    #[must_use]
    pub fn unresolved_named(&self, node: u32) -> usize {
        let name = &self.nodes[node as usize].name;
        self.unresolved.get(name).copied().unwrap_or(0)
    }

    /// Edges around `node` up to `depth` calls away, breadth first: callers (edges into it,
    /// then into those callers) or callees. Each edge comes with its distance (1 = direct).
    /// Only resolved and inferred edges are followed past the first level: an ambiguous
    /// edge is reported, never walked.
    #[must_use]
    pub fn walk(&self, node: u32, callers: bool, depth: usize, limit: usize) -> Vec<(u32, usize)> {
        let mut out = Vec::new();
        let mut seen_nodes = HashSet::from([node]);
        let mut seen_edges = HashSet::new();
        let mut frontier = vec![node];
        for level in 1..=depth.max(1) {
            let mut next = Vec::new();
            for &n in &frontier {
                let edges = if callers {
                    self.callers(n)
                } else {
                    self.callees(n)
                };
                for id in edges {
                    let e = &self.edges[id as usize];
                    if e.kind != EdgeKind::Call || !seen_edges.insert(id) {
                        continue;
                    }
                    if out.len() >= limit {
                        return out;
                    }
                    out.push((id, level));
                    let step = if callers {
                        matches!(e.target, Target::Node(_)).then_some(e.from)
                    } else if let Target::Node(t) = e.target {
                        Some(t)
                    } else {
                        None
                    };
                    if let Some(step) = step
                        && seen_nodes.insert(step)
                    {
                        next.push(step);
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            frontier = next;
        }
        out
    }

    /// The definitions of a file in source order (its outline), without its top level.
    #[must_use]
    pub fn outline(&self, path: &str) -> Vec<u32> {
        let Some(file) = self.files.iter().position(|f| f.path == path) else {
            return Vec::new();
        };
        let top = self.files[file].top;
        let end = self
            .files
            .get(file + 1)
            .map_or(self.nodes.len(), |f| f.top as usize);
        (top + 1..u32::try_from(end).unwrap_or(u32::MAX)).collect()
    }

    /// Edges leaving and reaching `node` (calls only): how connected a definition is.
    #[must_use]
    pub fn degree(&self, node: u32) -> (usize, usize) {
        let calls = |edges: &[u32]| {
            edges
                .iter()
                .filter(|&&e| self.edges[e as usize].kind == EdgeKind::Call)
                .count()
        };
        (
            calls(&self.into[node as usize]),
            calls(&self.out[node as usize]),
        )
    }

    /// The shortest chain of calls from `from` to `to` (breadth first over resolved and
    /// inferred edges, then also over ambiguous ones if that finds nothing), as edge ids.
    #[must_use]
    pub fn path(&self, from: u32, to: u32, max_depth: usize) -> Option<Vec<u32>> {
        self.bfs(from, to, max_depth, false)
            .or_else(|| self.bfs(from, to, max_depth, true))
    }

    fn bfs(&self, from: u32, to: u32, max_depth: usize, ambiguous: bool) -> Option<Vec<u32>> {
        if from == to {
            return Some(Vec::new());
        }
        let mut came: HashMap<u32, (u32, u32)> = HashMap::new();
        let mut queue = VecDeque::from([(from, 0_usize)]);
        let mut seen = HashSet::from([from]);
        while let Some((node, depth)) = queue.pop_front() {
            if depth >= max_depth {
                continue;
            }
            for &e in &self.out[node as usize] {
                let edge = &self.edges[e as usize];
                if edge.kind != EdgeKind::Call {
                    continue;
                }
                let targets: &[u32] = match &edge.target {
                    Target::Node(t) => std::slice::from_ref(t),
                    Target::Ambiguous(c) if ambiguous => c,
                    _ => &[],
                };
                for &t in targets {
                    if !seen.insert(t) {
                        continue;
                    }
                    came.insert(t, (node, e));
                    if t == to {
                        let mut chain = vec![e];
                        let mut at = node;
                        while at != from {
                            let (prev, e) = came[&at];
                            chain.push(e);
                            at = prev;
                        }
                        chain.reverse();
                        return Some(chain);
                    }
                    queue.push_back((t, depth + 1));
                }
            }
        }
        None
    }
}

impl<'g> Lookup<'g> {
    fn new(
        files: &'g [FileInfo],
        nodes: &'g [Node],
        by_name: &'g HashMap<String, Vec<u32>>,
        refs: &'g [Vec<Ref>],
    ) -> Self {
        let callable = |&id: &u32| nodes[id as usize].kind != ChunkKind::Field;
        let by_name = by_name
            .iter()
            .filter(|(_, ids)| ids.iter().any(callable))
            .map(|(name, ids)| {
                (
                    name.as_str(),
                    ids.iter().copied().filter(callable).collect(),
                )
            })
            .collect();
        let mut by_owner: HashMap<(&str, &str), Vec<u32>> = HashMap::new();
        for (id, n) in (0_u32..).zip(nodes) {
            if !n.owner.is_empty() && n.kind != ChunkKind::Field {
                by_owner
                    .entry((n.owner.as_str(), n.name.as_str()))
                    .or_default()
                    .push(id);
            }
        }
        let mut by_module_tail: HashMap<&str, Vec<u32>> = HashMap::new();
        let mut by_file_name: HashMap<&str, Vec<u32>> = HashMap::new();
        let mut by_dir: HashMap<&str, Vec<u32>> = HashMap::new();
        let mut by_path = HashMap::new();
        for (id, f) in (0_u32..).zip(files) {
            if let Some(tail) = f.module.last() {
                by_module_tail.entry(tail.as_str()).or_default().push(id);
            }
            let name = f.path.rsplit('/').next().unwrap_or(&f.path);
            by_file_name.entry(name).or_default().push(id);
            by_dir.entry(f.dir.as_str()).or_default().push(id);
            by_path.insert(f.path.as_str(), id);
        }
        let mut by_dir_tail: HashMap<&str, Vec<&str>> = HashMap::new();
        for dir in by_dir.keys() {
            let tail = dir.rsplit('/').next().unwrap_or(dir);
            by_dir_tail.entry(tail).or_default().push(dir);
        }
        let mut bases: HashMap<&str, Vec<(&str, u32)>> = HashMap::new();
        let mut imports_of: HashMap<u32, Vec<&Ref>> = HashMap::new();
        for (file, rs) in (0_u32..).zip(refs) {
            for r in rs {
                match r.kind {
                    RefKind::Inherit => bases
                        .entry(r.alias.as_str())
                        .or_default()
                        .push((r.name.as_str(), file)),
                    RefKind::Import if !r.name.is_empty() => {
                        imports_of.entry(file).or_default().push(r);
                    }
                    _ => {}
                }
            }
        }
        Lookup {
            files,
            nodes,
            by_name,
            by_owner,
            by_path,
            by_module_tail,
            by_file_name,
            by_dir,
            by_dir_tail,
            bases,
            imports_of,
        }
    }

    fn node(&self, id: u32) -> &'g Node {
        &self.nodes[id as usize]
    }

    fn file_edges(&self, file: u32, refs: &[Ref]) -> Vec<Edge> {
        let f = &self.files[file as usize];
        let imports: Vec<Import> = refs
            .iter()
            .filter(|r| r.kind == RefKind::Import)
            .map(|r| Import {
                files: self.module_files(file, &self.inline_relative(file, r)),
                name: r.name.clone(),
                alias: r.alias.clone(),
                module: r.qualifier.clone(),
            })
            .collect();
        let end = self
            .files
            .get(file as usize + 1)
            .map_or(self.nodes.len(), |n| n.top as usize);
        let defs: Vec<u32> = (f.top + 1..u32::try_from(end).unwrap_or(u32::MAX)).collect();
        let sorted = defs
            .windows(2)
            .all(|w| self.node(w[0]).start_line <= self.node(w[1]).start_line);
        let unbound = Scope {
            file,
            imports: &imports,
            defs: &defs,
            sorted,
            binds: &HashMap::new(),
        };
        let mut binds: HashMap<u32, Vec<(String, String)>> = HashMap::new();
        for r in refs.iter().filter(|r| r.kind == RefKind::Bind) {
            let mut at = self.enclosing(&unbound, r.line);
            // A field belongs to its type, whichever method assigns it.
            if r.alias.starts_with(FIELD) {
                let Some(ty) = self.type_holding(at) else {
                    continue;
                };
                at = ty;
            }
            binds
                .entry(at)
                .or_default()
                .push((r.alias.clone(), r.written()));
        }
        let scope = Scope {
            binds: &binds,
            ..unbound
        };
        let mut edges = Vec::new();
        for r in refs {
            let from = self.enclosing(&scope, r.line);
            match r.kind {
                RefKind::Call => {
                    let (target, confidence) = self.resolve_call(&scope, from, r);
                    let callee = r.written();
                    edges.push(Edge {
                        kind: EdgeKind::Call,
                        from,
                        line: r.line,
                        callee,
                        target,
                        confidence,
                    });
                }
                RefKind::Inherit => {
                    let class = defs
                        .iter()
                        .copied()
                        .filter(|&d| {
                            let n = self.node(d);
                            n.name == r.alias && n.start_line <= r.line && r.line <= n.end_line
                        })
                        .max_by_key(|&d| self.node(d).start_line)
                        .unwrap_or(from);
                    let (target, confidence) = self.resolve_type(&scope, r);
                    let callee = r.written();
                    edges.push(Edge {
                        kind: EdgeKind::Inherit,
                        from: class,
                        line: r.line,
                        callee,
                        target,
                        confidence,
                    });
                }
                RefKind::Import | RefKind::Bind => {}
            }
        }
        edges
    }

    /// Rust: `super::` in an inline `mod` block (`mod tests { use super::*; }`) counts from
    /// that inline module, which lives in this file; each enclosing inline module takes up
    /// one leading `super`.
    fn inline_relative<'r>(&self, file: u32, r: &'r Ref) -> std::borrow::Cow<'r, str> {
        let module = r.qualifier.as_str();
        if self.files[file as usize].language != Language::Rust || !module.starts_with("super") {
            return module.into();
        }
        let depth = self
            .defs_of(file)
            .filter(|&d| {
                let n = self.node(d);
                n.kind == ChunkKind::Module && n.start_line <= r.line && r.line <= n.end_line
            })
            .count();
        let mut rest = module;
        let mut taken = 0;
        while taken < depth {
            match rest.strip_prefix("super") {
                Some(tail) if tail.is_empty() || tail.starts_with("::") => {
                    rest = tail.trim_start_matches("::");
                    taken += 1;
                }
                _ => break,
            }
        }
        match (taken, rest.is_empty()) {
            (0, _) => module.into(),
            (_, true) => "self".into(),
            (_, false) => format!("self::{rest}").into(),
        }
    }

    /// The innermost definition holding `line` (definitions nest, so the latest start wins).
    fn enclosing(&self, scope: &Scope<'_>, line: u32) -> u32 {
        // Definitions come in source order, parents first, and nest: the innermost one
        // holding the line is the last one starting at or before it, or one of its parents.
        if !scope.sorted {
            return scope
                .defs
                .iter()
                .copied()
                .filter(|&d| {
                    let n = self.node(d);
                    n.start_line <= line && line <= n.end_line
                })
                .max_by_key(|&d| {
                    (
                        self.node(d).start_line,
                        std::cmp::Reverse(self.node(d).end_line),
                    )
                })
                .unwrap_or(self.files[scope.file as usize].top);
        }
        let starts = scope
            .defs
            .partition_point(|&d| self.node(d).start_line <= line);
        let mut at = starts.checked_sub(1).map(|i| scope.defs[i]);
        while let Some(d) = at {
            let n = self.node(d);
            if n.start_line <= line && line <= n.end_line {
                return d;
            }
            at = n.parent;
        }
        self.files[scope.file as usize].top
    }

    fn resolve_call(&self, scope: &Scope<'_>, from: u32, r: &Ref) -> (Target, Confidence) {
        let lang = self.files[scope.file as usize].language;
        let name = r.name.as_str();
        let q = r.qualifier.as_str();
        let is_super = q.starts_with("super") || q == "base" || is_php_parent(lang, q);
        // Whether the receiver's type is known (this object, a stated type; or no receiver),
        // though the steps below could not place the method on it.
        let mut typed = true;
        if q.is_empty() {
            if let Some(found) = self.bare(scope, from, name, lang) {
                return found;
            }
        } else if is_self(q) || is_super || self.is_go_receiver(scope, from, q, lang) {
            if let Some(found) = self.on_self(scope, from, name, is_super) {
                return found;
            }
        } else if let Some(ty) = self.declared_type(scope, from, q) {
            // A receiver of a stated type: a call on that type. A type the graph cannot
            // place (a builtin, a method of a base class, a default export) leaves the
            // usual steps.
            if let Some(found) = self.qualified(scope, ty, name)
                && !matches!(found.0, Target::Unknown)
            {
                return found;
            }
            if let Some(found) = self.standard(scope, ty) {
                return found;
            }
        } else {
            typed = false;
            // A receiver that is itself a call's result (`a.b().c()`) has an unknown type:
            // only the method name is left to go by.
            if !q.contains('(')
                && let Some(found) = self
                    .qualified(scope, q, name)
                    .or_else(|| self.standard(scope, q))
            {
                return found;
            }
        }
        // A unique name in the repository: functions for bare calls, methods for calls on
        // an object (its type is not known). A `super` call its bases do not answer never
        // lands on the class's own method.
        let method_call = !q.is_empty();
        let own = if is_super {
            self.enclosing_type(from)
        } else {
            None
        };
        let candidates = self.global(scope.file, name, |n| {
            if own.as_deref().is_some_and(|o| n.owner == o) {
                return false;
            }
            let is_method = !n.owner.is_empty();
            if method_call {
                is_method || n.kind.is_type_like()
            } else {
                !is_method || implicit_self(lang)
            }
        });
        // `headers.get()` is a dictionary's `get` far more often than one of the repository's:
        // on a receiver of unknown type, a name the standard types answer reaches a method
        // of the repository only where the receiver is named after its type (`store.get()`
        // or `ms.get()` for `MemoryStore.get`, where that is the one `get`;
        // `memory_store.get()` among several, which stays ambiguous), so `TermTable::len` is
        // not among the callers of every `v.len()`, nor `SortedMap.set` of every
        // `map.set()`. A receiver of a known type (an interface's value) may still reach any
        // of several.
        if method_call && !is_super && crate::common_methods::is_common_method(lang, name) {
            let single = candidates.len() == 1;
            let named = |&c: &u32| receiver_names(q, &self.node(c).owner, single);
            if (!typed || single) && !candidates.iter().any(named) {
                return (Target::Unknown, Confidence::Unresolved);
            }
        }
        global_answer(candidates)
    }

    /// A call on a standard type or namespace that the repository does not define
    /// (`Math.max`, `Thread.sleep`, `Vec::with_capacity`, `std::mem::swap`): it leaves the
    /// repository, so the repository's one method of that name is not its target.
    fn standard(&self, scope: &Scope<'_>, q: &str) -> Option<(Target, Confidence)> {
        let segments = split_segments(q);
        let lang = self.files[scope.file as usize].language;
        if !crate::common_methods::is_standard_qualifier(lang, &segments) {
            return None;
        }
        // A project may define its own `String` or `Error`, and call what it inherits.
        let own = matches!(segments.as_slice(), [one] if !self
            .global(scope.file, one, |n| n.kind.is_type_like())
            .is_empty());
        (!own).then(|| (Target::External(q.to_owned()), Confidence::Unresolved))
    }

    /// The type `q` is declared with or constructed from: a parameter or variable of `from`
    /// or of a definition holding it, or of the file's top level (`store` in
    /// `def f(store: Store)`, `store = Store()`), or a field of the enclosing type
    /// (`self.store`, `this.store`, `$this->store`, Ruby's `@store`, Go's `s.store` on a
    /// receiver `s`, and a bare `store` where a type's fields are in scope).
    fn declared_type<'s>(&self, scope: &Scope<'s>, from: u32, q: &str) -> Option<&'s str> {
        if scope.binds.is_empty() {
            return None;
        }
        let lang = self.files[scope.file as usize].language;
        let bound = |d: u32, var: &str| {
            scope
                .binds
                .get(&d)
                .and_then(|v| v.iter().find(|(v, _)| v == var))
                .map(|(_, ty)| ty.as_str())
        };
        let field = match q
            .strip_prefix("$this->")
            .map(|f| ("$this", f))
            .or_else(|| q.strip_prefix('@').map(|f| ("@", f)))
            .or_else(|| q.split_once('.'))
        {
            Some((head, field))
                if is_identifier(field)
                    && (matches!(head, "self" | "this" | "$this" | "@")
                        || self.is_go_receiver(scope, from, head, lang)) =>
            {
                format!("{FIELD}{field}")
            }
            Some(_) => return None,
            None if q.contains(['(', ':', '>', '[']) => return None,
            None => {
                let mut at = Some(from);
                while let Some(d) = at {
                    let n = self.node(d);
                    let found = if n.kind.is_type_like() {
                        // Python's and TypeScript's fields are reached through `self`.
                        implicit_self(lang)
                            .then(|| bound(d, &format!("{FIELD}{q}")))
                            .flatten()
                    } else {
                        bound(d, q)
                    };
                    if found.is_some() {
                        return found;
                    }
                    at = n.parent;
                }
                return bound(self.files[scope.file as usize].top, q);
            }
        };
        let mut at = Some(from);
        while let Some(d) = at {
            if self.node(d).kind.is_type_like()
                && let Some(ty) = bound(d, &field)
            {
                return Some(ty);
            }
            at = self.node(d).parent;
        }
        // A method declared outside its type's body (Go, Rust's `impl`): the type's fields
        // are where the type is defined in this file.
        let owner = self.enclosing_type(from)?;
        scope.defs.iter().copied().find_map(|d| {
            let n = self.node(d);
            (n.kind.is_type_like() && n.name == owner)
                .then(|| bound(d, &field))
                .flatten()
        })
    }

    /// The innermost type-like definition holding `at` (`at` itself if it is one).
    fn type_holding(&self, at: u32) -> Option<u32> {
        let mut at = Some(at);
        while let Some(d) = at {
            if self.node(d).kind.is_type_like() {
                return Some(d);
            }
            at = self.node(d).parent;
        }
        None
    }

    /// Go names a method's receiver after its type (`func (s *Store) Put()`): `s.f()` in a
    /// method of `Store`, `s` not an import, abbreviating `Store` (same first letter, its
    /// other letters in order), is a call on the receiver. A heuristic: the receiver's name
    /// is not recorded.
    fn is_go_receiver(&self, scope: &Scope<'_>, from: u32, q: &str, lang: Language) -> bool {
        if lang != Language::Go
            || q.is_empty()
            || !q.chars().all(|c| c.is_alphanumeric() || c == '_')
            || scope.imports.iter().any(|i| i.alias == q)
        {
            return false;
        }
        let Some(owner) = self.enclosing_type(from) else {
            return false;
        };
        abbreviates(q, &owner)
    }

    /// `f()`: nested or file-level definitions, the enclosing class where bare calls reach
    /// methods, then imports, then the package.
    fn bare(
        &self,
        scope: &Scope<'_>,
        from: u32,
        name: &str,
        lang: Language,
    ) -> Option<(Target, Confidence)> {
        let ancestors = self.ancestors(from);
        let visible = scope
            .defs
            .iter()
            .copied()
            .filter(|&d| {
                let n = self.node(d);
                n.name == name
                    && n.kind != ChunkKind::Field
                    && match n.parent {
                        // A file-level name, not a method declared outside its type (Go,
                        // C++) nor a function stored in a table (Lua's `M.f`).
                        None => n.owner.is_empty(),
                        Some(p) => {
                            ancestors.contains(&p)
                                && (implicit_self(lang) || !self.node(p).kind.is_type_like())
                        }
                    }
            })
            .max_by_key(|&d| self.depth(d));
        if let Some(d) = visible {
            return Some((Target::Node(d), Confidence::Resolved));
        }
        if implicit_self(lang)
            && let Some(found) = self.on_self(scope, from, name, false)
        {
            return Some(found);
        }
        if let Some(found) = self.imported(scope, name) {
            return Some(found);
        }
        match self.package_scope(scope.file, name, |_| true).as_slice() {
            [] => {}
            [one] => return Some((Target::Node(*one), Confidence::Resolved)),
            many => return Some((ambiguous(many), Confidence::Unresolved)),
        }
        if lang == Language::Go {
            let f = &self.files[scope.file as usize];
            let package = self.by_dir.get(f.dir.as_str())?;
            let found: Vec<u32> = package
                .iter()
                .filter(|&&other| self.files[other as usize].language == lang)
                .flat_map(|&other| self.top_level(other, name))
                .collect();
            if found.len() == 1 {
                return Some((Target::Node(found[0]), Confidence::Resolved));
            }
        }
        None
    }

    /// Java, Kotlin, Scala, C#: the top-level names of the file's package (its module path
    /// without the file name, so `src/main` and `src/test` of one package meet) are in scope
    /// without an import.
    fn package_scope(&self, file: u32, name: &str, keep: impl Fn(&Node) -> bool) -> Vec<u32> {
        let f = &self.files[file as usize];
        if !matches!(
            f.language,
            Language::Java | Language::Kotlin | Language::Scala | Language::CSharp
        ) || f.module.is_empty()
        {
            return Vec::new();
        }
        let package = &f.module[..f.module.len() - 1];
        self.by_name
            .get(name)
            .into_iter()
            .flatten()
            .copied()
            .filter(|&d| {
                let n = self.node(d);
                let other = &self.files[n.file as usize];
                same_family(other.language, f.language)
                    && !other.module.is_empty()
                    && other.module[..other.module.len() - 1] == *package
                    && self.is_top_level(d)
                    && keep(n)
            })
            .collect()
    }

    /// A name bound by an import of the file.
    fn imported(&self, scope: &Scope<'_>, name: &str) -> Option<(Target, Confidence)> {
        if let Some(import) = scope.imports.iter().rev().find(|i| i.alias == name) {
            if import.files.is_empty() {
                return Some((external(import), Confidence::Unresolved));
            }
            let wanted = if import.name.is_empty() {
                // A whole module bound to a name and called: a class module (Java's
                // `import a.b.Client`), found by the module's own name.
                split_segments(&import.module)
                    .last()
                    .copied()
                    .unwrap_or(name)
            } else {
                import.name.as_str()
            };
            let mut found: Vec<u32> = import
                .files
                .iter()
                .flat_map(|&f| self.top_level(f, wanted))
                .collect();
            if found.is_empty() {
                found = self.exported(import, wanted);
            }
            if found.is_empty() {
                found = self.passed_on(&import.files, wanted, |f, name| self.top_level(f, name));
            }
            return Some(match found.as_slice() {
                [one] => (Target::Node(*one), Confidence::Resolved),
                // In the repository but not found by name (a default export, a name
                // passed on through more than three files).
                [] => (Target::Unknown, Confidence::Unresolved),
                many => (ambiguous(many), Confidence::Unresolved),
            });
        }
        // Wildcards and includes: every name of the module is in scope.
        let found: Vec<u32> = scope
            .imports
            .iter()
            .filter(|i| i.alias.is_empty())
            .flat_map(|i| {
                let top: Vec<u32> = i
                    .files
                    .iter()
                    .flat_map(|&f| self.top_level(f, name))
                    .collect();
                if top.is_empty() {
                    self.exported(i, name)
                } else {
                    top
                }
            })
            .collect::<HashSet<u32>>()
            .into_iter()
            .collect();
        match found.as_slice() {
            [] => None,
            [one] => Some((Target::Node(*one), Confidence::Resolved)),
            many => Some((ambiguous(many), Confidence::Unresolved)),
        }
    }

    /// What `files` import as `wanted` and pass on to whoever imports it from them
    /// (`from .console import Console` in a package's `__init__.py`, `export { X } from './x'`,
    /// a wildcard import), followed for a few files: `pick(file, name)` finds it where it
    /// is defined (under its own name: `import A as B` passes on `B` defined as `A`).
    fn passed_on(
        &self,
        files: &[u32],
        wanted: &str,
        pick: impl Fn(u32, &str) -> Vec<u32>,
    ) -> Vec<u32> {
        const MAX_HOPS: usize = 3;
        let mut seen: HashSet<u32> = files.iter().copied().collect();
        let mut frontier: Vec<(u32, String)> =
            files.iter().map(|&f| (f, wanted.to_owned())).collect();
        for _ in 0..MAX_HOPS {
            let mut next = Vec::new();
            for (file, wanted) in &frontier {
                for r in self.imports_of.get(file).into_iter().flatten() {
                    let name = if r.name == "*" {
                        wanted.as_str()
                    } else if r.alias == *wanted {
                        r.name.as_str()
                    } else {
                        continue;
                    };
                    // Resolved as the file's own imports are (`super::` in an inline `mod`).
                    for f in self.module_files(*file, &self.inline_relative(*file, r)) {
                        let found = pick(f, name);
                        if !found.is_empty() {
                            return found;
                        }
                        if seen.insert(f) {
                            next.push((f, name.to_owned()));
                        }
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            frontier = next;
        }
        Vec::new()
    }

    /// Members an import names through their owner: Java's `import static a.b.C.f`,
    /// Kotlin's `import a.b.Obj.f`, C#'s `using static`: `f` owned by the module's last
    /// segment, in the module's files.
    fn exported(&self, import: &Import, name: &str) -> Vec<u32> {
        let Some(owner) = split_segments(&import.module).last().copied() else {
            return Vec::new();
        };
        import
            .files
            .iter()
            .flat_map(|&f| {
                self.defs_of(f).filter(move |&d| {
                    let n = self.node(d);
                    n.name == name && n.owner == owner
                })
            })
            .collect()
    }

    /// `self.f()`, `this.f()`, `super().f()`: the enclosing class, then its bases.
    fn on_self(
        &self,
        scope: &Scope<'_>,
        from: u32,
        name: &str,
        skip_own: bool,
    ) -> Option<(Target, Confidence)> {
        let class = self.enclosing_type(from)?;
        let mut queue: VecDeque<(String, usize)> = VecDeque::new();
        if skip_own {
            for (base, _) in self.bases.get(class.as_str()).into_iter().flatten() {
                queue.push_back(((*base).to_owned(), 1));
            }
        } else {
            queue.push_back((class, 0));
        }
        let lang = self.files[scope.file as usize].language;
        let mut seen = HashSet::new();
        while let Some((owner, depth)) = queue.pop_front() {
            if !seen.insert(owner.clone()) || depth > MAX_BASE_DEPTH {
                continue;
            }
            if let Some(methods) = self.by_owner.get(&(owner.as_str(), name)) {
                let same_file: Vec<u32> = methods
                    .iter()
                    .copied()
                    .filter(|&m| self.node(m).file == scope.file)
                    .collect();
                let family: Vec<u32> = methods
                    .iter()
                    .copied()
                    .filter(|&m| same_family(self.files[self.node(m).file as usize].language, lang))
                    .collect();
                match (same_file.as_slice(), family.as_slice()) {
                    ([one], _) | ([], [one]) => {
                        return Some((Target::Node(*one), Confidence::Resolved));
                    }
                    ([], []) => {}
                    (_, many) => return Some((ambiguous(many), Confidence::Unresolved)),
                }
            }
            for (base, _) in self.bases.get(owner.as_str()).into_iter().flatten() {
                queue.push_back(((*base).to_owned(), depth + 1));
            }
        }
        None
    }

    /// `m.f()`, `Client.f()`, `crate::util::f()`: a module alias, a class, or a module path.
    fn qualified(&self, scope: &Scope<'_>, q: &str, name: &str) -> Option<(Target, Confidence)> {
        let segments = split_segments(q);
        let head = *segments.first()?;
        let last = *segments.last()?;
        let lang = self.files[scope.file as usize].language;
        if let Some(import) = scope.imports.iter().rev().find(|i| i.alias == head) {
            return Some(self.through_import(scope, import, &segments, name));
        }
        if lang == Language::Ruby
            && let Some(library) = scope
                .imports
                .iter()
                .find(|i| i.files.is_empty() && ruby_library_constant(&i.module, head))
        {
            // `require 'net/http'` then `Net::HTTP.get`: a library's constant.
            return Some((external(library), Confidence::Unresolved));
        }
        // A type of this file, of a file an import brings in whole, then of the repository.
        if let Some(methods) = self.by_owner.get(&(last, name)) {
            let local: Vec<u32> = methods
                .iter()
                .copied()
                .filter(|&m| self.node(m).file == scope.file)
                .collect();
            if let [one] = local.as_slice() {
                return Some((Target::Node(*one), Confidence::Resolved));
            }
            // Go's package is its folder, and so is Java's as laid out: a type of another
            // file of the package is in scope without an import.
            if matches!(lang, Language::Go | Language::Java) {
                let dir = &self.files[scope.file as usize].dir;
                let package: Vec<u32> = methods
                    .iter()
                    .copied()
                    .filter(|&m| {
                        let file = &self.files[self.node(m).file as usize];
                        file.language == lang && &file.dir == dir
                    })
                    .collect();
                if let [one] = package.as_slice() {
                    return Some((Target::Node(*one), Confidence::Resolved));
                }
            }
            if matches!(
                lang,
                Language::Ruby
                    | Language::Swift
                    | Language::CSharp
                    | Language::Java
                    | Language::Kotlin
                    | Language::Scala
            ) {
                let brought: HashSet<u32> = scope
                    .imports
                    .iter()
                    .filter(|i| i.alias.is_empty())
                    .flat_map(|i| i.files.iter().copied())
                    .collect();
                let imported: Vec<u32> = methods
                    .iter()
                    .copied()
                    .filter(|&m| brought.contains(&self.node(m).file))
                    .collect();
                if let [one] = imported.as_slice() {
                    return Some((Target::Node(*one), Confidence::Resolved));
                }
            }
            let family: Vec<u32> = methods
                .iter()
                .copied()
                .filter(|&m| same_family(self.files[self.node(m).file as usize].language, lang))
                .collect();
            // The whole path as written (`shapes::detail::clamp01`) ending a definition's own
            // path says more than a unique owner and name: it names where the call goes.
            if segments.len() > 1 {
                let written: Vec<&str> = segments.iter().copied().chain([name]).collect();
                let spelled: Vec<u32> = family
                    .iter()
                    .copied()
                    .filter(|&m| split_segments(&self.node(m).local_path).ends_with(&written))
                    .collect();
                if let [one] = spelled.as_slice() {
                    return Some((Target::Node(*one), Confidence::Resolved));
                }
            }
            if !family.is_empty() {
                return Some(global_answer(family));
            }
        }
        if lang == Language::Zig {
            // Zig reaches another file only through the name an `@import` binds.
            return None;
        }
        // A module path written out (`util::parse()`, `pkg.sub.f()`).
        let files = self.module_files(scope.file, q);
        let found: Vec<u32> = files
            .iter()
            .flat_map(|&f| self.top_level(f, name))
            .collect();
        match found.as_slice() {
            [] => None,
            [one] => Some((Target::Node(*one), Confidence::Inferred)),
            many => Some((ambiguous(many), Confidence::Unresolved)),
        }
    }

    /// `m.f()`, `m.sub.f()`, `Client.create()` where `m` or `Client` is bound by `import`.
    fn through_import(
        &self,
        scope: &Scope<'_>,
        import: &Import,
        segments: &[&str],
        name: &str,
    ) -> (Target, Confidence) {
        let lang = self.files[scope.file as usize].language;
        let rest = &segments[1..];
        // The module the qualifier names, when it is a module.
        let module = if import.name.is_empty() {
            let first = split_segments(&import.module).first().copied();
            if lang == Language::Python && first == Some(segments[0]) {
                // `import a.b` then `a.b.f()`: the qualifier is the module path.
                Some(segments.join("."))
            } else if rest.is_empty() {
                None
            } else {
                Some(format!("{}.{}", import.module, rest.join(".")))
            }
        } else if import.name != "*" {
            // `from pkg import mod` then `mod.f()`: the name may be a submodule.
            let mut sub = format!("{}.{}", import.module, import.name);
            for part in rest {
                sub.push('.');
                sub.push_str(part);
            }
            Some(sub)
        } else {
            None
        };
        let owner = if import.name.is_empty() {
            split_segments(&import.module)
                .last()
                .copied()
                .unwrap_or(segments[0])
        } else {
            import.name.as_str()
        };
        // A class bound by the import: its methods (and module-level names beside it).
        let mut found: Vec<u32> = Vec::new();
        if rest.is_empty() {
            found = import
                .files
                .iter()
                .flat_map(|&f| {
                    self.defs_of(f).filter(|&d| {
                        let n = self.node(d);
                        n.name == name
                            && ((n.parent.is_none() && !self.outside_owner(n)) || n.owner == owner)
                    })
                })
                .collect();
        }
        if found.is_empty()
            && let Some(module) = module
        {
            for f in self.module_files(scope.file, &module) {
                found.extend(self.top_level(f, name));
            }
        }
        if found.is_empty() && rest.is_empty() && !import.name.is_empty() && import.name != "*" {
            // `from rich import Console`, where `rich/__init__.py` imports it from
            // `.console`: the class's methods are where it is defined.
            found = self.passed_on(&import.files, owner, |f, class| {
                self.defs_of(f)
                    .filter(|&d| {
                        let n = self.node(d);
                        n.name == name && n.owner == class
                    })
                    .collect()
            });
        }
        match found.as_slice() {
            [one] => (Target::Node(*one), Confidence::Resolved),
            [] if import.files.is_empty() => (external(import), Confidence::Unresolved),
            [] => (Target::Unknown, Confidence::Unresolved),
            many => (ambiguous(many), Confidence::Unresolved),
        }
    }

    /// A base class or interface name: in scope, imported, in the package, or a unique type.
    fn resolve_type(&self, scope: &Scope<'_>, r: &Ref) -> (Target, Confidence) {
        let name = r.name.as_str();
        let local: Vec<u32> = scope
            .defs
            .iter()
            .copied()
            .filter(|&d| self.node(d).name == name && self.can_be_base(self.node(d)))
            .collect();
        if let Some(&d) = local.first() {
            return (Target::Node(d), Confidence::Resolved);
        }
        if !r.qualifier.is_empty()
            && let Some(found) = self.qualified(scope, &r.qualifier, name)
        {
            return found;
        }
        if let Some(found) = self.imported(scope, name) {
            return found;
        }
        match self
            .package_scope(scope.file, name, |n| self.can_be_base(n))
            .as_slice()
        {
            [] => {}
            [one] => return (Target::Node(*one), Confidence::Resolved),
            many => return (ambiguous(many), Confidence::Unresolved),
        }
        global_answer(self.global(scope.file, name, |n| self.can_be_base(n)))
    }

    /// Whether a definition can be what a class inherits from: a type, or a Ruby module,
    /// which classes and modules mix in (`include Loggable`).
    fn can_be_base(&self, n: &Node) -> bool {
        n.kind.is_type_like()
            || (n.kind == ChunkKind::Module
                && self.files[n.file as usize].language == Language::Ruby)
    }

    /// Definitions named `name` in the language family of `file`, outside function bodies,
    /// that `keep` accepts; a call from source code never reaches into test files.
    fn global(&self, file: u32, name: &str, keep: impl Fn(&Node) -> bool) -> Vec<u32> {
        let f = &self.files[file as usize];
        let Some(all) = self.by_name.get(name) else {
            return Vec::new();
        };
        let found: Vec<u32> = all
            .iter()
            .copied()
            .filter(|&d| {
                let n = self.node(d);
                let other = &self.files[n.file as usize];
                same_family(other.language, f.language)
                    && n.parent.is_none_or(|p| {
                        !matches!(self.node(p).kind, ChunkKind::Function | ChunkKind::Method)
                    })
                    && keep(n)
            })
            .collect();
        if f.test {
            return found;
        }
        let source: Vec<u32> = found
            .iter()
            .copied()
            .filter(|&d| !self.files[self.node(d).file as usize].test)
            .collect();
        if source.is_empty() { found } else { source }
    }

    fn defs_of(&self, file: u32) -> impl Iterator<Item = u32> + '_ {
        let top = self.files[file as usize].top;
        let end = self
            .files
            .get(file as usize + 1)
            .map_or(self.nodes.len(), |f| f.top as usize);
        top + 1..u32::try_from(end).unwrap_or(u32::MAX)
    }

    /// Top-level definitions named `name` in `file` (what an import can bind): not nested
    /// in anything but namespaces (C++, C#), not a method declared outside its type.
    fn top_level(&self, file: u32, name: &str) -> Vec<u32> {
        self.defs_of(file)
            .filter(|&d| self.node(d).name == name && self.is_top_level(d))
            .collect()
    }

    fn is_top_level(&self, d: u32) -> bool {
        let n = self.node(d);
        if self.outside_owner(n) {
            return false;
        }
        match n.parent {
            None => true,
            Some(_) => {
                matches!(
                    self.files[n.file as usize].language,
                    Language::Cpp | Language::CSharp
                ) && self.in_namespaces(d)
            }
        }
    }

    /// Whether every definition `d` is nested in is a namespace (a module).
    fn in_namespaces(&self, d: u32) -> bool {
        let mut at = self.node(d).parent;
        while let Some(p) = at {
            if self.node(p).kind != ChunkKind::Module {
                return false;
            }
            at = self.node(p).parent;
        }
        true
    }

    /// A method declared outside its type's body (Go receivers, C++ `Type::method`): it
    /// has an owner but sits at the file level or in a namespace other than its owner.
    fn outside_owner(&self, n: &Node) -> bool {
        !n.owner.is_empty()
            && declared_outside(self.files[n.file as usize].language)
            && n.parent.is_none_or(|p| {
                let p = self.node(p);
                p.kind == ChunkKind::Module && p.name != n.owner
            })
    }

    /// C++: the files that define the namespace `module` (`shapes`, `shapes::detail`).
    fn namespace_files(&self, module: &str) -> Vec<u32> {
        let segments: Vec<&str> = module.split("::").filter(|s| !s.is_empty()).collect();
        let Some(last) = segments.last() else {
            return Vec::new();
        };
        let written = segments.join("::");
        let mut files: Vec<u32> = self
            .by_name
            .get(*last)
            .into_iter()
            .flatten()
            .copied()
            .filter(|&d| {
                let n = self.node(d);
                n.kind == ChunkKind::Module
                    && self.files[n.file as usize].language == Language::Cpp
                    && (n.local_path == written || n.local_path.ends_with(&format!("::{written}")))
            })
            .map(|d| self.node(d).file)
            .collect();
        files.sort_unstable();
        files.dedup();
        files
    }

    fn ancestors(&self, node: u32) -> Vec<u32> {
        let mut out = vec![node];
        let mut at = self.node(node).parent;
        while let Some(p) = at {
            out.push(p);
            at = self.node(p).parent;
        }
        out
    }

    fn depth(&self, node: u32) -> usize {
        self.ancestors(node).len()
    }

    /// The name of the class (struct, impl, trait) a definition is in, or that a method is
    /// declared on (Go receivers, C++ `Type::method`).
    fn enclosing_type(&self, from: u32) -> Option<String> {
        let mut at = Some(from);
        while let Some(id) = at {
            let n = self.node(id);
            if n.kind.is_type_like() {
                return Some(n.name.clone());
            }
            if !n.owner.is_empty() && (n.kind == ChunkKind::Method || self.outside_owner(n)) {
                return Some(n.owner.clone());
            }
            at = n.parent;
        }
        None
    }

    /// Files of the view a module reference names, by the language's import rules: paths
    /// (relative ones against the importing file), dotted or `::` module paths (relative
    /// Python and Rust forms resolved), matched against module paths or directories.
    fn module_files(&self, file: u32, module: &str) -> Vec<u32> {
        let f = &self.files[file as usize];
        let lang = f.language;
        if lang == Language::Cpp && !module.contains(['/', '.']) {
            // A namespace (`using namespace shapes;`, `shapes::detail`): the files that
            // define it. A bare word may also be an extensionless header (`<vector>`).
            let found = self.namespace_files(module);
            if !found.is_empty() || module.contains("::") {
                return found;
            }
        }
        if is_path_like(module, lang) {
            return self.path_files(f, module);
        }
        if lang == Language::Rust
            && !matches!(
                split_segments(module).first(),
                Some(&("crate" | "self" | "super"))
            )
        {
            // A path's first segment may be a module declared here (`mod util;` then
            // `util::f()`), before an external crate or a module of another directory.
            let local = self.module_files(file, &format!("self::{module}"));
            if !local.is_empty() {
                return local;
            }
        }
        let segments = self.absolute_segments(f, module);
        if segments.is_empty() {
            return Vec::new();
        }
        let tail = segments[segments.len() - 1];
        // Files whose module path ends with the whole reference come first. Otherwise the
        // longest shared tail of at least two segments (PSR-4 `App\\Models\\User` for
        // `src/Models/User.php`), or for Go a whole directory ending the import path.
        let mut best: (usize, Vec<u32>) = (0, Vec::new());
        for &o in self.by_module_tail.get(tail).into_iter().flatten() {
            let other = &self.files[o as usize];
            if !same_family(other.language, lang) {
                continue;
            }
            let shared = common_tail(&other.module, &segments);
            let accept = shared == segments.len()
                || (lang == Language::Go && shared == other.module.len())
                || shared >= 2
                || psr4_root(lang, &other.module, &segments);
            if accept && shared >= best.0 {
                if shared > best.0 {
                    best = (shared, Vec::new());
                }
                best.1.push(o);
            }
        }
        let mut found = best.1;
        if lang == Language::Python && best.0 == segments.len() && found.len() > 1 {
            // Python finds an absolute import on sys.path: the project's top (or its src/)
            // and the running script's folder; a same-named module deeper down (a vendored
            // copy, a fixture) is another package's.
            let beside = &f.module[..f.module.len().saturating_sub(1)];
            let on_path: Vec<u32> = found
                .iter()
                .copied()
                .filter(|&o| {
                    let m = &self.files[o as usize].module;
                    m.len() == segments.len()
                        || (m.len() == beside.len() + segments.len() && m.starts_with(beside))
                })
                .collect();
            if on_path.len() == 1 {
                found = on_path;
            }
        }
        if found.is_empty() {
            // A package or namespace: the files of the directory whose path ends with it.
            for dir in self.by_dir_tail.get(tail).into_iter().flatten() {
                // C# project folders are often dotted (`src/Shop.Core/Models` holds
                // `Shop.Core.Models`).
                let parts: Vec<String> = if lang == Language::CSharp {
                    split_segments(dir).into_iter().map(str::to_owned).collect()
                } else {
                    dir.split('/').map(str::to_owned).collect()
                };
                if common_tail(&parts, &segments) == segments.len()
                    || psr4_root(lang, &parts, &segments)
                {
                    found.extend(
                        self.by_dir[dir]
                            .iter()
                            .copied()
                            .filter(|&o| same_family(self.files[o as usize].language, lang)),
                    );
                }
            }
        }
        found.sort_unstable();
        found
    }

    /// Module segments with relative forms resolved (`..util` in Python, `super::x` and
    /// `crate::x` in Rust).
    fn absolute_segments<'m>(&self, f: &'m FileInfo, module: &'m str) -> Vec<&'m str> {
        let lang = f.language;
        if lang == Language::Python && module.starts_with('.') {
            let dots = module.len() - module.trim_start_matches('.').len();
            let is_package = f.path.ends_with("__init__.py");
            let keep = f
                .module
                .len()
                .saturating_sub(dots - usize::from(is_package));
            let mut out: Vec<&str> = f.module[..keep].iter().map(String::as_str).collect();
            out.extend(split_segments(&module[dots..]));
            return out;
        }
        let mut segments = split_segments(module);
        if lang == Language::Rust {
            match segments.first().copied() {
                Some("crate") => {
                    segments.remove(0);
                }
                Some("self" | "super") => {
                    // A file's module path is its module (`a/b.rs` and `a/b/mod.rs` are
                    // both `a::b`): `self` is that, each `super` one level up.
                    let mut base: Vec<&str> = f.module.iter().map(String::as_str).collect();
                    let mut rest = segments.as_slice();
                    while let Some((&"super", tail)) = rest.split_first() {
                        base.pop();
                        rest = tail;
                    }
                    if let Some((&"self", tail)) = rest.split_first() {
                        rest = tail;
                    }
                    base.extend_from_slice(rest);
                    return base;
                }
                _ => {}
            }
        }
        segments
    }

    /// Files named by a path import (`./util`, `"net/http.h"`, `require_relative 'x'`).
    fn path_files(&self, f: &FileInfo, module: &str) -> Vec<u32> {
        // Bash's `source "$(dirname "$0")/lib/x.sh"` and PHP's `require __DIR__ . '/x.php'`:
        // the queries keep the literal after the directory expression, a path from the
        // file's own directory.
        let from_dir =
            matches!(f.language, Language::Bash | Language::Php) && module.starts_with('/');
        let relative = from_dir
            || module.starts_with("./")
            || module.starts_with("../")
            || matches!(module, "." | "..");
        // C includes and Zig's `@import("util.zig")` are relative to the file first.
        let joined =
            if relative || matches!(f.language, Language::C | Language::Cpp | Language::Zig) {
                normalize(&format!("{}/{module}", f.dir))
            } else {
                normalize(module)
            };
        let stems = [joined.as_str(), module.trim_start_matches("./")];
        for base in stems {
            for candidate in with_extensions(base, f.language) {
                if let Some(&id) = self.by_path.get(candidate.as_str()) {
                    return self.with_implementation(id);
                }
            }
            if relative {
                break;
            }
        }
        if relative {
            return Vec::new();
        }
        // Anywhere in the tree, by path suffix (include directories, `lib/` load paths).
        let mut found = Vec::new();
        for candidate in with_extensions(module, f.language) {
            let name = candidate.rsplit('/').next().unwrap_or(&candidate);
            for &id in self.by_file_name.get(name).into_iter().flatten() {
                let path = &self.files[id as usize].path;
                if path == &candidate || path.ends_with(&format!("/{candidate}")) {
                    found.extend(self.with_implementation(id));
                }
            }
            if !found.is_empty() {
                break;
            }
        }
        found.sort_unstable();
        found.dedup();
        found
    }

    /// A C or C++ header together with the source file of the same name beside it, else
    /// the only source file of that name in the tree (`include/util.h`, `src/util.c`).
    fn with_implementation(&self, id: u32) -> Vec<u32> {
        let f = &self.files[id as usize];
        let mut out = vec![id];
        if matches!(f.language, Language::C | Language::Cpp)
            && let Some((stem, ext)) = f.path.rsplit_once('.')
            && matches!(ext, "h" | "hh" | "hpp" | "hxx")
        {
            for other in ["c", "cc", "cpp", "cxx"] {
                if let Some(&o) = self.by_path.get(format!("{stem}.{other}").as_str()) {
                    out.push(o);
                }
            }
            if out.len() == 1 {
                let name = stem.rsplit('/').next().unwrap_or(stem);
                let elsewhere: Vec<u32> = ["c", "cc", "cpp", "cxx"]
                    .iter()
                    .flat_map(|other| {
                        self.by_file_name
                            .get(format!("{name}.{other}").as_str())
                            .into_iter()
                            .flatten()
                            .copied()
                    })
                    .collect();
                if let [one] = elsewhere.as_slice() {
                    out.push(*one);
                }
            }
        }
        out
    }
}

struct Scope<'a> {
    file: u32,
    imports: &'a [Import],
    /// The file's definitions (node ids).
    defs: &'a [u32],
    /// Whether `defs` are in source order (they are, from every chunker; checked anyway).
    sorted: bool,
    /// Parameters, variables and fields declared with a type or constructed from one, by the
    /// definition they belong to (a field's type for a field): (name, `self.<field>` for a
    /// field, type as written: `httpx.Headers`).
    binds: &'a HashMap<u32, Vec<(String, String)>>,
}

fn global_answer(candidates: Vec<u32>) -> (Target, Confidence) {
    match candidates.as_slice() {
        [] => (Target::Unknown, Confidence::Unresolved),
        [one] => (Target::Node(*one), Confidence::Inferred),
        many => (ambiguous(many), Confidence::Unresolved),
    }
}

fn ambiguous(candidates: &[u32]) -> Target {
    let mut c = candidates.to_vec();
    c.sort_unstable();
    c.dedup();
    c.truncate(MAX_CANDIDATES);
    Target::Ambiguous(c)
}

fn external(import: &Import) -> Target {
    // A relative module the repository does not hold (a `.json`, a skipped file) belongs to
    // the repository, not to a library: where the call goes is unknown.
    let module = import.module.as_str();
    let rust_local = ["crate", "self", "super"].iter().any(|root| {
        module
            .strip_prefix(root)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
    });
    if module.starts_with('.') || rust_local {
        return Target::Unknown;
    }
    Target::External(if import.name.is_empty() || import.name == "*" {
        import.module.clone()
    } else {
        format!("{}.{}", import.module, import.name)
    })
}

/// Whether the receiver `q` is named after the type `owner`: its last segment, letters and
/// digits only and lowercased, is the type's name (`memory_store`, `self.memoryStore` for
/// `MemoryStore`) or, when `loosely`, ends it (`store`; three letters at least) or
/// abbreviates it (`s`, `ms`).
fn receiver_names(q: &str, owner: &str, loosely: bool) -> bool {
    fn plain(s: &str) -> String {
        s.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect()
    }
    let last = q.rsplit(['.', ':', '>', '$', '@']).next().unwrap_or(q);
    let owner = owner.rsplit(['.', ':']).next().unwrap_or(owner);
    let (r, o) = (plain(last), plain(owner));
    if !loosely {
        return !r.is_empty() && r == o;
    }
    (r.len() >= 3 && o.ends_with(&r)) || (!r.is_empty() && abbreviates(&r, owner))
}

/// Whether `short` abbreviates `name` as Go receivers do: same first letter, the rest of
/// its letters in order (`s` and `st` for `Store`, `ts` for `TokenStore`).
fn abbreviates(short: &str, name: &str) -> bool {
    let mut wanted = short.chars().map(|c| c.to_ascii_lowercase());
    let mut have = name.chars().map(|c| c.to_ascii_lowercase());
    if wanted.next() != have.next() {
        return false;
    }
    wanted.all(|w| have.any(|h| h == w))
}

/// Receivers that mean "this object".
fn is_identifier(text: &str) -> bool {
    !text.is_empty() && text.chars().all(|c| c.is_alphanumeric() || c == '_')
}

fn is_self(q: &str) -> bool {
    matches!(
        q,
        "self" | "this" | "cls" | "Self" | "@" | "$this" | "static" | "super" | "super()" | "base"
    ) || q.starts_with("super(")
}

/// Languages whose methods may be declared outside their type's body, named by their
/// owner (Go's `func (s *Store) Put()`, C++'s `void Store::put() {}`): such a definition
/// is a method of that type, never a file-level name.
fn declared_outside(lang: Language) -> bool {
    matches!(lang, Language::Go | Language::Cpp)
}

/// Lua names a function by the table it is stored in (`M.helper`, `Greeter:greet`,
/// `a.b.c`): the graph knows it by its last segment, owned by the table before it, and a
/// `:` function (which takes `self`) is a method. (table, name, is a method).
fn lua_table_member(name: &str, lang: Language) -> Option<(&str, &str, bool)> {
    if lang != Language::Lua {
        return None;
    }
    let (head, member) = name.rsplit_once(['.', ':'])?;
    let method = name[head.len()..].starts_with(':');
    let table = head.rsplit(['.', ':']).next().unwrap_or(head);
    (!table.is_empty() && !member.is_empty()).then_some((table, member, method))
}

/// Whether Ruby's `require 'net/http'` (or `'active_support/all'`) names the library whose
/// top-level constant is `constant` (`Net`, `ActiveSupport`): the first path segment is the
/// constant in snake case.
fn ruby_library_constant(module: &str, constant: &str) -> bool {
    let squash = |s: &str| -> String {
        s.chars()
            .filter(|c| !matches!(c, '_' | '-'))
            .map(|c| c.to_ascii_lowercase())
            .collect()
    };
    let library = module
        .trim_start_matches("./")
        .split('/')
        .next()
        .unwrap_or(module);
    constant.starts_with(|c: char| c.is_ascii_uppercase())
        && !library.is_empty()
        && squash(library) == squash(constant)
}

/// PHP (PSR-4): a namespace's root segment names a base directory (`App\\` is `src/` or
/// `app/`), the rest the path below it: `App\\Kernel` is `src/Kernel.php` and
/// `App\\Support` is `src/Support/`. `path` is a file's module path or a directory's parts.
fn psr4_root(lang: Language, path: &[String], segments: &[&str]) -> bool {
    lang == Language::Php
        && segments.len() >= 2
        && path.len() == segments.len()
        && common_tail(path, segments) == segments.len() - 1
}

/// PHP's `parent::f()`: the method of the base class (Python's `super().f()`).
fn is_php_parent(lang: Language, q: &str) -> bool {
    lang == Language::Php && q == "parent"
}

/// Languages where a bare call inside a class may call one of its methods.
fn implicit_self(lang: Language) -> bool {
    matches!(
        lang,
        Language::Java
            | Language::CSharp
            | Language::Cpp
            | Language::Kotlin
            | Language::Swift
            | Language::Scala
            | Language::Ruby
            // A container's declarations are in scope in its functions.
            | Language::Zig
    )
}

/// Languages that call each other's definitions directly.
fn same_family(a: Language, b: Language) -> bool {
    fn family(l: Language) -> u8 {
        match l {
            Language::JavaScript | Language::TypeScript | Language::Tsx => 0,
            Language::C | Language::Cpp => 1,
            Language::Java | Language::Kotlin | Language::Scala => 2,
            other => 3 + other as u8,
        }
    }
    family(a) == family(b)
}

fn is_path_like(module: &str, lang: Language) -> bool {
    module.starts_with("./")
        || module.starts_with("../")
        || module.contains('/') && !matches!(lang, Language::Go)
        || matches!(
            lang,
            Language::JavaScript
                | Language::TypeScript
                | Language::Tsx
                | Language::C
                | Language::Cpp
                | Language::Bash
                | Language::Zig
        )
        || (lang == Language::Ruby && !module.contains("::"))
        || module.rsplit_once('.').is_some_and(|(_, ext)| {
            matches!(
                ext,
                "h" | "hpp" | "rb" | "php" | "sh" | "lua" | "zig" | "js" | "ts"
            )
        })
}

/// `a.b`, `a::b`, `a\b`, `a/b`, `a->b`, `a#b` -> segments.
fn split_segments(text: &str) -> Vec<&str> {
    text.split(['.', ':', '\\', '/', '>', '#', '(', ')'])
        .map(|s| s.strip_suffix('-').unwrap_or(s))
        .filter(|s| !s.is_empty())
        .collect()
}

/// How many trailing segments two module paths share.
fn common_tail(a: &[String], b: &[&str]) -> usize {
    a.iter()
        .rev()
        .zip(b.iter().rev())
        .take_while(|(x, y)| x == *y)
        .count()
}

fn file_stem(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.split('.').next().unwrap_or(name)
}

/// `a/./b/../c` -> `a/c`, without touching the file system.
fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

/// A path import as files may spell it: as written, with the language's extensions, or as
/// a folder's index file.
fn with_extensions(base: &str, lang: Language) -> Vec<String> {
    let exts: &[&str] = match lang {
        Language::JavaScript | Language::TypeScript | Language::Tsx => {
            &[".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".d.ts"]
        }
        Language::Python => &[".py"],
        Language::Ruby => &[".rb"],
        Language::Lua => &[".lua"],
        Language::Php => &[".php"],
        Language::Bash => &[".sh", ".bash"],
        Language::Zig => &[".zig"],
        _ => &[],
    };
    let mut out = vec![base.to_owned()];
    // `./util.js` written for a TypeScript source `util.ts`.
    let stripped = base
        .rsplit_once('.')
        .filter(|(stem, ext)| !stem.is_empty() && !ext.contains('/'))
        .map(|(stem, _)| stem);
    for stem in std::iter::once(base).chain(stripped) {
        for ext in exts {
            out.push(format!("{stem}{ext}"));
        }
    }
    // `require('../')` names the root folder: its index file is `index.js`, not `/index.js`.
    let dir = if base.is_empty() {
        String::new()
    } else {
        format!("{base}/")
    };
    for ext in exts {
        out.push(format!("{dir}index{ext}"));
    }
    if lang == Language::Python {
        out.push(format!("{dir}__init__.py"));
    }
    if lang == Language::Lua {
        out.push(format!("{dir}init.lua"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stubs_benchmarks_and_examples_stand_beside_the_implementation() {
        assert_eq!(beside_implementation("pkg/core.py"), 0);
        assert_eq!(beside_implementation("benchmarks.py"), 0);
        assert_eq!(beside_implementation("pkg/_native.pyi"), 1);
        assert_eq!(beside_implementation("types/index.d.ts"), 1);
        assert_eq!(beside_implementation("benches/speed/run.py"), 2);
        assert_eq!(beside_implementation("Examples/demo.pyi"), 2);
    }

    #[test]
    fn paths_normalise_and_take_extensions() {
        assert_eq!(normalize("a/./b/../c"), "a/c");
        assert_eq!(normalize("./x"), "x");
        let c = with_extensions("src/util.js", Language::TypeScript);
        assert!(c.contains(&"src/util.ts".to_owned()));
        assert!(c.contains(&"src/util.js/index.ts".to_owned()));
        // `require('../')` from a folder of the root.
        let root = with_extensions(&normalize("examples/../"), Language::JavaScript);
        assert!(root.contains(&"index.js".to_owned()), "{root:?}");
    }

    #[test]
    fn only_a_module_outside_the_repository_is_external() {
        let target = |module: &str| {
            external(&Import {
                name: "Thing".to_owned(),
                alias: "Thing".to_owned(),
                module: module.to_owned(),
                files: Vec::new(),
            })
        };
        for local in [
            "./data.json",
            "../gone",
            "crate::gone",
            "super::x",
            "self",
            "crate",
        ] {
            assert_eq!(target(local), Target::Unknown, "{local}");
        }
        for library in ["left-pad", "selfish", "crates_io::x", "superagent"] {
            assert_eq!(
                target(library),
                Target::External(format!("{library}.Thing")),
                "{library}"
            );
        }
    }
}

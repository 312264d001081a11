//! Indexing and search over one index directory.
//!
//! `index.db` (the [`Store`]) is the source of truth; `lexical.bin` is the derived BM25F
//! index, stamped with the generation it reflects. Whenever the two disagree (another process
//! published, a crash happened between the commit and the snapshot, the file is missing or
//! corrupt) the lexical index is reconciled against the view: documents of changed paths are
//! dropped and rebuilt from stored chunks. Nothing derived is ever trusted over SQLite.

use std::borrow::Cow;
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use rayon::prelude::*;

use crate::bm25::{AnalyzedDoc, Bm25Index, Bm25Params, DocFields, analyze_doc};
use crate::chunk::{
    Chunk, ChunkKind, FileChunks, Symbol, chunk_file, join_symbol_path, shown_symbol_path,
};
use crate::decode::Encoding;
use crate::error::{Error, Result};
use crate::graph::Graph;
use crate::hash::{IntMap, file_hash};
use crate::lang::{Language, module_path};
use crate::outline::Outline;
use crate::rank::{
    Candidate, HitUnit, PHRASE_RUN, PathClass, Query, QueryClass, Weights, base_name,
    classify_path, diversify, fingerprints, inherit_from_neighbours, is_generated_head,
    is_test_scope, merged_unit, other_names, phrase_factor, quoted_sketch, score, sketch_admits,
    unit_names, unit_names_joined,
};
use crate::store::{
    Changes, ChunksAndSymbols, FileVersion, GcStats, SkippedFile, Store, ViewCounts, ViewEntry,
    ViewUpdate,
};

pub const DB_FILE: &str = "index.db";

/// The lexical snapshot of a view: each view has its own documents.
#[must_use]
pub fn lexical_file(view: i64) -> String {
    format!("lexical-{view}.bin")
}

/// The single snapshot of indexes from before views were named; removed on open.
const LEGACY_LEXICAL_FILE: &str = "lexical.bin";
/// Bytes inspected for NUL when deciding whether a file is binary (the same rule as git).
const BINARY_SNIFF_BYTES: usize = 8000;
/// A temporary file this old was left by a killed write (a snapshot or graph is written in
/// well under a minute); younger ones may still be in use by another process.
const LEFTOVER_AGE: std::time::Duration = std::time::Duration::from_secs(600);
/// Meta key bumped whenever the stored vectors change and the graph file was saved after.
#[cfg(feature = "embed")]
const VECTORS_META: &str = "vectors";
/// The lexical snapshot is rewritten once this share (1/n) of the paths changed, or at least
/// this many (see `Lexical::snapshot_due`), and when the engine is dropped.
const SNAPSHOT_SHARE: usize = 16;
const SNAPSHOT_MIN_PATHS: usize = 64;

/// Files of an update that only adds paths are published in batches of about this many
/// bytes (see [`Engine::batches`]); at least [`DICTIONARY_MIN_BATCH`], so a first batch can
/// train the text dictionary. On a cold index of the 198 MB benchmark tree, peak memory went
/// from 1.00 to 0.71 GB (medians of six alternating runs) in the same time (11.7 s); 32 MiB
/// took it to 0.55 GB but cost 3-5% more time (a publication and a reconcile per batch).
const UPDATE_BATCH_BYTES: i64 = if cfg!(test) { 128 << 10 } else { 64 << 20 };
const _: () = assert!(UPDATE_BATCH_BYTES >= DICTIONARY_MIN_BATCH as i64);
/// Candidates taken from BM25F before the ranking layer re-scores them, whatever the limit (up
/// to this many): a chunk past the pool can climb into the first results through its
/// neighbours, so a pool that grew with the limit would reorder them, and `limit = 3` would
/// not be the first three of `limit = 20`.
const MIN_CANDIDATES: usize = 200;
/// The lexical snapshot's sidecar format: the analyzer's version, and a generation of the
/// fields each document carries (the high byte), so a snapshot of another is rebuilt.
const META_FORMAT: u32 = crate::analyzer::VERSION | (3 << 24);
const _: () = assert!(crate::analyzer::VERSION < 1 << 24);
/// Plain-language candidates the phrase rule considers: a message's writer stood at 12 to 170
/// before the rule in large projects, and only those whose sketch admits the query are read.
const PHRASE_CANDIDATES: usize = 50;
/// The phrase rule reads no chunk that could not pass the one at this rank.
const PHRASE_FLOOR_RANK: usize = 10;
/// Fewer for identifier queries: the chunks defining the name compete whatever their rank,
/// and past the first hundred nothing reaches the top ten (1,740 symbol queries of the
/// quality benchmark rank identically with 100 and 200; sentences lose at 100).
const IDENTIFIER_CANDIDATES: usize = 100;

/// Why a file was not indexed. The strings are part of the public reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SkipReason {
    Binary,
    TooLarge,
    Unreadable,
    NoParser,
    Deleted,
    Symlink,
}

impl SkipReason {
    const STICKY: [SkipReason; 2] = [SkipReason::Binary, SkipReason::NoParser];

    /// Reasons that depend only on a file's content: remembered by stat so an unchanged file
    /// is neither read again nor forgotten in reports.
    #[must_use]
    pub fn is_sticky(self) -> bool {
        Self::STICKY.contains(&self)
    }

    /// The sticky reason `name` names, if this release still skips for it: a file remembered
    /// under a retired reason ("not valid UTF-8" before such files were decoded) is read again.
    #[must_use]
    pub fn sticky_named(name: &str) -> Option<SkipReason> {
        Self::STICKY
            .into_iter()
            .find(|reason| reason.name() == name)
    }

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            SkipReason::Binary => "binary",
            SkipReason::TooLarge => "too large",
            SkipReason::Unreadable => "unreadable",
            SkipReason::NoParser => "no parser",
            SkipReason::Deleted => "deleted",
            SkipReason::Symlink => "symlink",
        }
    }
}

/// A file to index: root-relative path with `/` separators, and the stat seen by the caller.
#[derive(Clone, Debug)]
pub struct FileInput {
    pub path: String,
    pub mtime_ns: i64,
    pub size: i64,
}

#[derive(Clone, Debug, Default)]
pub struct UpdateStats {
    pub files_parsed: u64,
    pub files_reused: u64,
    pub files_removed: u64,
    pub chunks_added: u64,
    pub symbols_added: u64,
    pub bytes_parsed: u64,
    pub generation: u64,
    pub skipped: Vec<(String, SkipReason)>,
    /// Paths parsed in this update whose text was not UTF-8, and how it was decoded.
    pub decoded: Vec<(String, Encoding)>,
}

impl UpdateStats {
    /// Adds the counts of a later update of the same run; its generation is the run's.
    fn absorb(&mut self, later: UpdateStats) {
        self.files_parsed += later.files_parsed;
        self.files_reused += later.files_reused;
        self.files_removed += later.files_removed;
        self.chunks_added += later.chunks_added;
        self.symbols_added += later.symbols_added;
        self.bytes_parsed += later.bytes_parsed;
        self.generation = later.generation;
        self.skipped.extend(later.skipped);
        self.decoded.extend(later.decoded);
    }
}

#[derive(Clone, Debug, Default)]
pub struct SearchRequest {
    pub query: String,
    pub limit: usize,
    pub languages: Vec<Language>,
    /// Root-relative directory prefixes, without trailing `/`.
    pub directories: Vec<String>,
    pub kinds: Vec<ChunkKind>,
    /// At most this many hits per file; 0 means no cap.
    pub per_file: usize,
    pub with_content: bool,
    /// Skip the semantic channel (its engine is unavailable, or the caller wants exact terms).
    pub lexical_only: bool,
}

/// What [`Engine::similar`] compares against.
#[derive(Clone, Copy, Debug)]
pub enum SimilarTo<'a> {
    /// A piece of code or text, embedded as a document is.
    Text(&'a str),
    /// The innermost chunk of the view at `path` that holds `line` (1-based; the nearest
    /// chunk for a line outside every chunk); that chunk is left out of the results.
    Location { path: &'a str, line: u32 },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub language: Language,
    pub kind: ChunkKind,
    pub symbol: String,
    pub symbol_path: String,
    pub score: f32,
    pub content: Option<String>,
    pub channels: Channels,
}

/// Which retrieval channels found a hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Channels {
    pub lexical: bool,
    pub semantic: bool,
}

impl Channels {
    pub const LEXICAL: Channels = Channels {
        lexical: true,
        semantic: false,
    };
}

#[derive(Clone, Debug, Default)]
pub struct Status {
    pub schema_version: i64,
    pub generation: u64,
    pub files: u64,
    pub chunks: u64,
    pub symbols: u64,
    pub file_versions: u64,
    pub languages: Vec<(String, u64)>,
    pub db_bytes: u64,
    pub lexical_bytes: u64,
}

pub use crate::store::FileStat;

/// A path's documents, ready to insert: ordinal, ranking facts, analyzed fields.
type PathDocs = Vec<(u32, DocMeta, AnalyzedDoc)>;

/// Documents analysed ahead of reconciliation, by (path, content hash).
type Prepared = HashMap<(String, i64), PathDocs>;

/// Per-document facts the ranking layer needs without touching SQLite.
#[derive(Clone, Debug)]
struct DocMeta {
    kind: ChunkKind,
    symbol: Box<str>,
    local_path: Box<str>,
    names: Box<str>,
    start_line: u32,
    end_line: u32,
    /// What the ranking rules need of the chunk, derived once here rather than per query.
    symbol_prints: Box<[u32]>,
    /// Fingerprints of the other names the chunk defines (small units merged into it).
    name_prints: Box<[Box<[u32]>]>,
    /// Bit `i`: `name_prints[i]` names only values (fields, constants, enum members) in the
    /// file ([`value_names`]).
    value_names: u64,
    test_scope: bool,
    /// [`quoted_sketch`] of the chunk's text: the phrase rule reads a chunk only when its
    /// sketch admits the query.
    quoted: u64,
    /// The chunk opens its file with a generator's banner ([`is_generated_head`]); known only
    /// while the chunk is added (its path keeps it).
    generated_head: bool,
}

impl DocMeta {
    /// The chunk as the ranking rules read it, with its lexical score `bm25`.
    fn candidate<'a>(&'a self, bm25: f32, path: &'a PathMeta) -> Candidate<'a> {
        Candidate {
            bm25,
            path: &path.path,
            path_class: path.class,
            path_prints: &path.prints,
            symbol: &self.symbol,
            symbol_prints: &self.symbol_prints,
            name_prints: &self.name_prints,
            value_names: self.value_names,
            test_scope: self.test_scope,
            local_path: &self.local_path,
            names: &self.names,
            kind: self.kind,
        }
    }

    fn new(
        kind: ChunkKind,
        symbol: &str,
        local_path: &str,
        names: &str,
        lines: (u32, u32),
        quoted: u64,
        value_names: u64,
    ) -> Self {
        DocMeta {
            kind,
            quoted,
            value_names,
            generated_head: false,
            symbol_prints: fingerprints(&symbol.to_lowercase()),
            name_prints: other_names(names, symbol)
                .map(|n| fingerprints(&base_name(n).to_lowercase()))
                .collect(),
            test_scope: is_test_scope(local_path),
            symbol: symbol.into(),
            local_path: local_path.into(),
            names: names.into(),
            start_line: lines.0,
            end_line: lines.1,
        }
    }
}

#[derive(Clone, Debug)]
struct PathMeta {
    path: String,
    file_hash: i64,
    language: Language,
    chunks: u32,
    /// The file's text says a tool wrote it, whatever its path says.
    generated: bool,
    /// Classified and analysed once here rather than for every candidate of every query.
    class: PathClass,
    prints: Box<[u32]>,
}

/// [`classify_path`], and a source file whose text says it was generated is generated.
fn path_class(path: &str, generated: bool) -> PathClass {
    match classify_path(path) {
        PathClass::Source if generated => PathClass::Generated,
        class => class,
    }
}

/// The in-memory lexical state: BM25F plus what it was built from.
struct Lexical {
    bm25: Bm25Index,
    generation: u64,
    paths: IntMap<u32, PathMeta>,
    docs: IntMap<u64, DocMeta>,
    /// Lower-cased definition name -> documents defining it, for identifier queries.
    names: HashMap<String, Vec<u64>>,
    /// Paths rebuilt since the snapshot on disk was written.
    unsaved: usize,
}

impl Lexical {
    /// Whether the chunk `key` passes the request's language, folder and kind filters.
    fn allows(&self, req: &SearchRequest, key: u64) -> bool {
        let Some(p) = self.paths.get(&path_id_of(key)) else {
            return false;
        };
        (req.languages.is_empty() || req.languages.contains(&p.language))
            && (req.directories.is_empty()
                || req.directories.iter().any(|d| {
                    d.is_empty()
                        || p.path
                            .strip_prefix(d.as_str())
                            .is_some_and(|rest| rest.starts_with('/'))
                }))
            && (req.kinds.is_empty()
                || self
                    .docs
                    .get(&key)
                    .is_some_and(|d| req.kinds.contains(&d.kind)))
    }

    fn restricted(req: &SearchRequest) -> bool {
        !(req.languages.is_empty() && req.directories.is_empty() && req.kinds.is_empty())
    }
}

fn only_lexical(candidates: Vec<(u64, f32)>) -> Vec<(u64, f32, Channels)> {
    candidates
        .into_iter()
        .map(|(key, score)| (key, score, Channels::LEXICAL))
        .collect()
}

fn doc_key(path_id: u32, ordinal: u32) -> u64 {
    (u64::from(path_id) << 32) | u64::from(ordinal)
}

fn path_id_of(key: u64) -> u32 {
    u32::try_from(key >> 32).unwrap_or(u32::MAX)
}

/// A path asks for a file: the chunks of each file it names get that file's scores in their
/// order in the file, so the file's opening comes first (not whichever chunk BM25F's length
/// normalisation favours, such as a one-line `#endif`).
fn in_file_order(scored: &mut [(f32, (u64, Channels))], lx: &Lexical, query: &Query) {
    let mut files: HashMap<u32, Vec<usize>> = HashMap::new();
    for (i, (_, (key, _))) in scored.iter().enumerate() {
        let id = path_id_of(*key);
        if lx.paths.get(&id).is_some_and(|p| query.names_path(&p.path)) {
            files.entry(id).or_default().push(i);
        }
    }
    for at in files.values() {
        let mut scores: Vec<f32> = at.iter().map(|&i| scored[i].0).collect();
        scores.sort_by(|a, b| b.total_cmp(a));
        let mut by_line = at.clone();
        by_line.sort_by_key(|&i| lx.docs.get(&scored[i].1.0).map(|d| d.start_line));
        for (i, score) in by_line.into_iter().zip(scores) {
            scored[i].0 = score;
        }
    }
}

/// The first window of the unit whose window `key` is. Windows of one unit (a function too
/// long for one chunk) are consecutive chunks of its file with its path and kind (two
/// overloads with other code between them stay apart, and so do a Rust struct and the
/// `impl` block after it); any other chunk is its own.
fn unit_head(lx: &Lexical, key: u64) -> u64 {
    run_start(key, |a, b| continues_unit(lx, a, b).is_some())
}

/// The first chunk of the run of `key`'s file that holds `key` and whose neighbours are each
/// `joined(before, after)`.
fn run_start(mut key: u64, joined: impl Fn(u64, u64) -> bool) -> u64 {
    while let [Some(before), _] = adjacent_keys(key)
        && joined(before, key)
    {
        key = before;
    }
    key
}

/// Lowers all but the first (best) window of a unit split into several (a long function):
/// a name asks for the definition once, and its other windows, scored alike, would fill the
/// page. `scored` must be in rank order; it is left in rank order.
fn one_hit_per_unit(scored: &mut [(f32, (u64, Channels))], lx: &Lexical) {
    let mut seen = std::collections::HashSet::new();
    for (score, (key, _)) in scored.iter_mut() {
        if !seen.insert(unit_head(lx, *key)) {
            *score *= UNIT_REPEAT;
        }
    }
}

/// The first and last window of each hit that stands for several windows of one unit, by
/// the key of its best window.
type Spans = HashMap<u64, (u64, u64)>;

/// Scored chunk keys with the channels that found them.
type Ranked = Vec<(f32, (u64, Channels))>;

/// The chunks `key` and `next` when `next` comes right after `key` in its file with the same
/// (non-empty) path and kind: two windows of one unit, or two definitions of one name.
fn continues_unit(lx: &Lexical, key: u64, next: u64) -> Option<(&DocMeta, &DocMeta)> {
    let (a, b) = (lx.docs.get(&key)?, lx.docs.get(&next)?);
    (adjacent_keys(key)[1] == Some(next)
        && !a.local_path.is_empty()
        && a.local_path == b.local_path
        && a.kind == b.kind)
        .then_some((a, b))
}

/// Whether chunk `next` is the window after chunk `key` in one unit split for length: the
/// unit's windows overlap by a few lines, which tells them from overloads of one name
/// written one after the other.
fn next_window(lx: &Lexical, key: u64, next: u64) -> bool {
    continues_unit(lx, key, next).is_some_and(|(a, b)| b.start_line <= a.end_line)
}

/// The windows of the unit chunk `key` belongs to, `key` among them, in order (`key` alone
/// for a chunk that is not a window).
fn unit_windows(lx: &Lexical, key: u64) -> Vec<u64> {
    let mut windows = vec![run_start(key, |a, b| next_window(lx, a, b))];
    while let Some(&last) = windows.last()
        && let [_, Some(after)] = adjacent_keys(last)
        && next_window(lx, last, after)
    {
        windows.push(after);
    }
    windows
}

/// The first `limit` of `ranked` (in rank order), with each window among the first
/// `horizon` that meets a better-ranked hit of its unit (the window just before or after
/// what that hit spans) folded into that hit instead of taking a place of its own. A
/// sentence lifts each window by its neighbours' scores, so a long function's windows took
/// two or three of the first ten places with one piece of code; folded, the function shows
/// once, as far as its ranked windows reach, and the places go to other code. The horizon
/// bounds how far a hit grows, and being fixed, it keeps the first results of a smaller
/// limit those of a larger one.
fn fold_windows(ranked: Ranked, lx: &Lexical, horizon: usize, limit: usize) -> (Ranked, Spans) {
    let mut kept: Ranked = Vec::with_capacity(limit.min(ranked.len()));
    let mut spans = Spans::new();
    // The hit whose span starts or ends at a key, by that key.
    let mut edge: HashMap<u64, usize> = HashMap::new();
    for (rank, (score, (key, channels))) in ranked.into_iter().enumerate() {
        if rank >= horizon && kept.len() >= limit {
            break;
        }
        let [before, after] = adjacent_keys(key);
        let joined = if rank < horizon {
            before
                .filter(|&b| next_window(lx, b, key))
                .and_then(|b| edge.get(&b).map(|&i| (i, b, true)))
                .or_else(|| {
                    after
                        .filter(|&a| next_window(lx, key, a))
                        .and_then(|a| edge.get(&a).map(|&i| (i, a, false)))
                })
        } else {
            None
        };
        if let Some((i, neighbour, extends_end)) = joined {
            let best = kept[i].1.0;
            let (first, last) = spans.get(&best).copied().unwrap_or((best, best));
            // Only the span's own ends grow: a neighbour inside it is not an end.
            if (extends_end && neighbour == last) || (!extends_end && neighbour == first) {
                if first != last {
                    edge.remove(&neighbour);
                }
                edge.insert(key, i);
                spans.insert(
                    best,
                    if extends_end {
                        (first, key)
                    } else {
                        (key, last)
                    },
                );
                let hit = &mut kept[i].1.1;
                hit.lexical |= channels.lexical;
                hit.semantic |= channels.semantic;
                continue;
            }
        }
        if rank < horizon {
            edge.insert(key, kept.len());
        }
        kept.push((score, (key, channels)));
    }
    kept.truncate(limit);
    spans.retain(|best, _| kept.iter().any(|(_, (key, _))| key == best));
    (kept, spans)
}

/// What a unit's further windows keep of their score (see [`one_hit_per_unit`]): they stay
/// in the results, mostly after whatever else matched.
const UNIT_REPEAT: f32 = 0.01;

/// How a search treats the windows of a unit split for length.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Windows {
    /// Each window is a hit of its own.
    Apart,
    /// All but the best lowered ([`one_hit_per_unit`]): a name asks for its definition once.
    Demoted,
    /// Neighbouring windows among the first candidates shown as one hit ([`fold_windows`]).
    Folded,
}

/// The request's results: its per-file cap applied to scored chunk keys, best first, with
/// the spans of the hits that fold several windows.
fn per_file_cap(
    mut scored: Ranked,
    req: &SearchRequest,
    weights: &Weights,
    lx: &Lexical,
    windows: Windows,
) -> (Ranked, Spans) {
    // Equal scores go in path and line order: document keys differ between two builds of
    // one tree, and the same index must rank alike however it was built. (`diversify` sorts
    // stably by score.)
    let position = |key: u64| {
        let path = lx.paths.get(&path_id_of(key)).map(|p| p.path.as_str());
        (path, lx.docs.get(&key).map(|d| d.start_line))
    };
    let order = |a: &(f32, (u64, Channels)), b: &(f32, (u64, Channels))| {
        b.0.total_cmp(&a.0)
            .then_with(|| position(a.1.0).cmp(&position(b.1.0)))
    };
    scored.sort_by(order);
    if windows == Windows::Demoted {
        one_hit_per_unit(&mut scored, lx);
        scored.sort_by(order);
    }
    // A weight is finite and not negative (`Weights::set`): the cast only rounds.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let horizon = match windows {
        Windows::Folded => weights.fold_windows.round() as usize,
        _ => 0,
    };
    let ranked = diversify(
        scored,
        |(key, _)| path_id_of(*key),
        req.per_file,
        weights.per_file_overflow,
        if horizon > 0 { usize::MAX } else { req.limit },
    );
    if horizon > 0 {
        fold_windows(ranked, lx, horizon, req.limit)
    } else {
        (ranked, Spans::new())
    }
}

fn ordinal_of(key: u64) -> u32 {
    u32::try_from(key & 0xffff_ffff).unwrap_or(u32::MAX)
}

/// The keys of the chunks just before and after `key` in the same file.
fn adjacent_keys(key: u64) -> [Option<u64>; 2] {
    let (path, ordinal) = (path_id_of(key), ordinal_of(key));
    [
        ordinal.checked_sub(1).map(|o| doc_key(path, o)),
        ordinal.checked_add(1).map(|o| doc_key(path, o)),
    ]
}

impl Lexical {
    fn empty() -> Self {
        Lexical {
            bm25: Bm25Index::new(Bm25Params::default()),
            generation: 0,
            paths: IntMap::default(),
            docs: IntMap::default(),
            names: HashMap::new(),
            unsaved: 0,
        }
    }

    /// Whether the snapshot on disk lags enough to be rewritten. Writing it costs time in
    /// proportion to the whole index; a lagging one costs its next reader a rebuild of the
    /// changed paths only. So a save waits until a sixteenth of the paths changed: one saved
    /// file in a large tree (what a watcher mostly sees) never rewrites the snapshot.
    fn snapshot_due(&self) -> bool {
        self.unsaved >= (self.paths.len() / SNAPSHOT_SHARE).max(SNAPSHOT_MIN_PATHS)
    }

    /// Writes the snapshot stamped with the generation.
    fn save(&mut self, path: &Path) -> std::result::Result<(), crate::bm25::Bm25Error> {
        let meta = self.encode_meta();
        self.bm25.save(path, &meta)?;
        self.unsaved = 0;
        Ok(())
    }

    fn remove_path(&mut self, path_id: u32) {
        let Some(meta) = self.paths.remove(&path_id) else {
            return;
        };
        for ordinal in 0..meta.chunks {
            let key = doc_key(path_id, ordinal);
            self.bm25.remove(key);
            if let Some(doc) = self.docs.remove(&key) {
                for name in unit_names(&doc.names) {
                    let lower = name.to_lowercase();
                    if let Some(keys) = self.names.get_mut(&lower) {
                        keys.retain(|k| *k != key);
                        if keys.is_empty() {
                            self.names.remove(&lower);
                        }
                    }
                }
            }
        }
    }

    /// Adds the documents of paths the index does not hold (their old documents are gone).
    fn insert_paths(&mut self, paths: Vec<(&ViewEntry, PathDocs)>) {
        let mut batch = Vec::with_capacity(paths.iter().map(|(_, docs)| docs.len()).sum());
        for (entry, chunks) in paths {
            let count = chunks.iter().map(|(o, ..)| o + 1).max().unwrap_or(0);
            let mut generated = false;
            for (ordinal, meta, analyzed) in chunks {
                let key = doc_key(entry.path_id, ordinal);
                for name in unit_names(&meta.names) {
                    self.names.entry(name.to_lowercase()).or_default().push(key);
                }
                generated |= meta.generated_head;
                batch.push((key, analyzed));
                self.docs.insert(key, meta);
            }
            self.paths.insert(
                entry.path_id,
                PathMeta {
                    path: entry.path.clone(),
                    file_hash: entry.file_hash,
                    language: entry.language,
                    chunks: count,
                    generated,
                    class: path_class(&entry.path, generated),
                    prints: fingerprints(&entry.path),
                },
            );
        }
        self.bm25.extend(batch);
    }

    /// What the view holds, as [`Store::view_counts`] counts it.
    fn view_counts(&self) -> ViewCounts {
        let mut languages: HashMap<&'static str, u64> = HashMap::new();
        for p in self.paths.values() {
            *languages.entry(p.language.name()).or_default() += 1;
        }
        let mut languages: Vec<(String, u64)> = languages
            .into_iter()
            .map(|(name, n)| (name.to_owned(), n))
            .collect();
        languages.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        ViewCounts {
            files: self.paths.len() as u64,
            chunks: self.paths.values().map(|p| u64::from(p.chunks)).sum(),
            languages,
        }
    }

    /// The snapshot's sidecar: what the index was built from, so a reader can reconcile it.
    fn encode_meta(&self) -> Vec<u8> {
        let mut w = codec::Writer::default();
        w.u32(META_FORMAT);
        w.u64(self.generation);
        // In key order, ids and keys as deltas: a path's chunks sit together, and zstd finds
        // their shared scopes (hash-map order took 60% more room once compressed).
        let mut paths: Vec<_> = self.paths.iter().collect();
        paths.sort_unstable_by_key(|(id, _)| **id);
        w.var(paths.len() as u64);
        let mut prev = 0;
        for (&id, p) in paths {
            w.var(u64::from(id - prev));
            prev = id;
            w.str(&p.path);
            w.i64(p.file_hash);
            w.str(p.language.name());
            w.var(u64::from(p.chunks));
            w.var(u64::from(p.generated));
        }
        let mut docs: Vec<_> = self.docs.iter().collect();
        docs.sort_unstable_by_key(|(key, _)| **key);
        w.var(docs.len() as u64);
        let mut prev = 0;
        for (&key, d) in docs {
            w.var(key - prev);
            prev = key;
            w.str(d.kind.name());
            w.str(&d.symbol);
            w.str(&d.local_path);
            w.str(&d.names);
            w.var(u64::from(d.start_line));
            w.var(u64::from(d.end_line.saturating_sub(d.start_line)));
            w.var(d.quoted);
            w.var(d.value_names);
        }
        w.into_inner()
    }

    fn decode(bm25: Bm25Index, meta: &[u8]) -> Option<Lexical> {
        crate::helpers::in_own_pool(|| Self::decode_here(bm25, meta))
    }

    fn decode_here(bm25: Bm25Index, meta: &[u8]) -> Option<Lexical> {
        let mut r = codec::Reader::new(meta);
        if r.u32()? != META_FORMAT {
            return None; // built with other tokens or fields: rebuild from the store
        }
        let generation = r.u64()?;
        // Records are read in order; what the ranking derives from them (analyzer tokens of
        // every path and symbol: most of the time of opening a large index) in parallel.
        let mut records = Vec::new();
        let mut id = 0u32;
        for _ in 0..r.var()? {
            id = id.checked_add(u32::try_from(r.var()?).ok()?)?;
            let path = r.str()?;
            let file_hash = r.i64()?;
            let language = Language::from_name(r.str()?)?;
            let chunks = u32::try_from(r.var()?).ok()?;
            let generated = r.var()? != 0;
            records.push((id, path, file_hash, language, chunks, generated));
        }
        let paths: IntMap<u32, PathMeta> = records
            .into_par_iter()
            .map(|(id, path, file_hash, language, chunks, generated)| {
                let meta = PathMeta {
                    class: path_class(path, generated),
                    prints: fingerprints(path),
                    path: path.to_owned(),
                    file_hash,
                    language,
                    chunks,
                    generated,
                };
                (id, meta)
            })
            .collect();
        let mut records = Vec::new();
        let mut key = 0u64;
        for _ in 0..r.var()? {
            key = key.checked_add(r.var()?)?;
            let kind = ChunkKind::from_name(r.str()?)?;
            let (symbol, local_path, names_text) = (r.str()?, r.str()?, r.str()?);
            let start = u32::try_from(r.var()?).ok()?;
            let end = start.checked_add(u32::try_from(r.var()?).ok()?)?;
            let quoted = r.var()?;
            let value_names = r.var()?;
            records.push((
                key,
                kind,
                symbol,
                local_path,
                names_text,
                (start, end),
                (quoted, value_names),
            ));
        }
        let metas: Vec<(u64, DocMeta)> = records
            .into_par_iter()
            .map(
                |(key, kind, symbol, local_path, names, lines, (quoted, values))| {
                    (
                        key,
                        DocMeta::new(kind, symbol, local_path, names, lines, quoted, values),
                    )
                },
            )
            .collect();
        let mut docs = IntMap::default();
        docs.reserve(metas.len());
        let mut names: HashMap<String, Vec<u64>> = HashMap::new();
        for (key, meta) in metas {
            for name in unit_names(&meta.names) {
                names.entry(name.to_lowercase()).or_default().push(key);
            }
            docs.insert(key, meta);
        }
        (r.is_empty() && docs.len() == bm25.len()).then_some(Lexical {
            bm25,
            generation,
            paths,
            docs,
            names,
            unsaved: 0,
        })
    }
}

fn doc_meta(c: &Chunk, values: &HashSet<&str>) -> DocMeta {
    let value_names = if values.is_empty() {
        0
    } else {
        (0..u64::BITS)
            .zip(other_names(&c.names, &c.symbol))
            .filter(|(_, n)| values.contains(base_name(n)))
            .fold(0, |mask, (bit, _)| mask | (1 << bit))
    };
    let mut meta = DocMeta::new(
        c.kind,
        &c.symbol,
        &c.local_path,
        &c.names,
        (c.start_line, c.end_line),
        quoted_sketch(&c.content),
        value_names,
    );
    // The chunk that holds the head of the file (a blank line or two may come first).
    meta.generated_head = c.start_line <= 3 && is_generated_head(&c.content);
    meta
}

/// The lexical documents of one path's chunks, keyed by ordinal.
fn path_docs(path: &str, language: Language, chunks: &[Chunk], symbols: &[Symbol]) -> PathDocs {
    let values = value_names(symbols);
    (0_u32..)
        .zip(chunks)
        .zip(chunk_docs(path, language, chunks))
        .map(|((ordinal, c), analyzed)| (ordinal, doc_meta(c, &values), analyzed))
        .collect()
}

/// Names that only values (fields, constants, enum members) define in a file: words like
/// `name`, `count`, `flags` that a description uses without asking for the struct that holds
/// them (a field and a method of one name keep it).
fn value_names(symbols: &[Symbol]) -> HashSet<&str> {
    let mut values: HashSet<&str> = symbols
        .iter()
        .filter(|s| s.kind.is_value())
        .map(|s| s.name.as_str())
        .collect();
    if !values.is_empty() {
        for s in symbols.iter().filter(|s| !s.kind.is_value()) {
            values.remove(s.name.as_str());
        }
    }
    values
}

/// The BM25F document of each of a file's chunks, analysed as the index analyses them (the
/// measuring examples use it too).
pub fn chunk_docs<'a>(
    path: &'a str,
    language: Language,
    chunks: &'a [Chunk],
) -> impl Iterator<Item = AnalyzedDoc> + 'a {
    let module = module_path(path, language);
    chunks.iter().map(move |c| {
        let symbol_path = join_symbol_path(&module, &c.local_path, language);
        let body = if c.context.is_empty() {
            Cow::Borrowed(c.content.as_str())
        } else {
            Cow::Owned(format!("{}\n{}", c.context, c.content))
        };
        // The name field weighs each unit's name, not the paths the units are listed by.
        let names = unit_names_joined(&c.names);
        analyze_doc(&DocFields {
            name: &names,
            symbol_path: &symbol_path,
            path,
            body: &body,
        })
    })
}

/// The symbol among a chunk's `symbols` that are its units (`is_unit`) that a sentence is
/// about by the units' own lines ([`crate::rank::unit_by_text`]).
fn unit_of_text(
    query: &Query,
    weights: &[f32],
    text: &str,
    doc: &DocMeta,
    symbols: &[Symbol],
    is_unit: impl Fn(&Symbol) -> bool,
) -> Option<Symbol> {
    let units: Vec<&Symbol> = symbols.iter().filter(|s| is_unit(s)).collect();
    let ranges: Vec<(u32, u32)> = units.iter().map(|s| (s.start_line, s.end_line)).collect();
    let own = units
        .iter()
        .position(|s| s.name == *doc.symbol && s.local_path == *doc.local_path);
    crate::rank::unit_by_text(query, weights, text, doc.start_line, &ranges, own)
        .filter(|&i| Some(i) != own)
        .map(|i| units[i].clone())
}

/// One view (a root) of an index directory, shared by every thread of a process.
pub struct Engine {
    dir: PathBuf,
    view: i64,
    writer: Mutex<Store>,
    reader: Mutex<Store>,
    lexical: RwLock<Lexical>,
    done: AtomicUsize,
    total: AtomicUsize,
    cancel: AtomicBool,
    weights: RwLock<Weights>,
    /// The call graph of the view at a generation, built on first use after a change.
    graph: Mutex<Option<(u64, Arc<Graph>)>>,
    #[cfg(feature = "embed")]
    semantic: RwLock<Option<crate::semantic::Semantic>>,
}

impl Engine {
    /// Opens or creates the index in `dir` and its view `view` (by convention the absolute
    /// root it indexes: every worktree of a repository shares the store and has its own
    /// view), loading the view's lexical snapshot and reconciling it with the store.
    pub fn open(dir: &Path, view: &str) -> Result<Engine> {
        fs::create_dir_all(dir)
            .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
        let db = dir.join(DB_FILE);
        let mut writer = Store::open(&db)?;
        let reader = Store::open(&db)?;
        let view = writer.open_view(view)?;
        // Best effort: only disk space is at stake.
        let _ = fs::remove_file(dir.join(LEGACY_LEXICAL_FILE));
        let snapshot = dir.join(lexical_file(view));
        let loaded = Bm25Index::load(&snapshot)
            .ok()
            .and_then(|(bm25, meta)| Lexical::decode(bm25, &meta));
        let lexical = loaded.unwrap_or_else(|| {
            // Missing, damaged, or of another format or analyzer version: rebuilt from the
            // store, and written as soon as it is. Left in place, a small index's unusable
            // file would be refused at every open and reported by `health`.
            let _ = fs::remove_file(&snapshot); // best effort: it is rebuilt either way
            Lexical::empty()
        });
        let engine = Engine {
            dir: dir.to_owned(),
            view,
            writer: Mutex::new(writer),
            reader: Mutex::new(reader),
            lexical: RwLock::new(lexical),
            done: AtomicUsize::new(0),
            total: AtomicUsize::new(0),
            cancel: AtomicBool::new(false),
            weights: RwLock::new(Weights::default()),
            graph: Mutex::new(None),
            #[cfg(feature = "embed")]
            semantic: RwLock::new(None),
        };
        engine.refresh()?;
        Ok(engine)
    }

    fn lock<'a, T>(m: &'a Mutex<T>) -> MutexGuard<'a, T> {
        // A panic while holding the lock leaves SQLite consistent (transactions roll back).
        m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    #[must_use]
    pub fn progress(&self) -> (usize, usize) {
        (
            self.done.load(Ordering::Relaxed),
            self.total.load(Ordering::Relaxed),
        )
    }

    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::SeqCst);
    }

    fn check_cancel(&self) -> Result<()> {
        if self.cancel.load(Ordering::SeqCst) {
            Err(Error::Cancelled)
        } else {
            Ok(())
        }
    }

    /// The view as `(path, mtime_ns, size, skip reason)`, for the caller's stat-based delta
    /// (only the paths at or below `under` when given): indexed files have no reason;
    /// remembered skips have theirs. A skip remembered for a reason this release no longer
    /// skips for has a stale stat, so the file is read again.
    pub fn file_stats(&self, under: Option<&[&str]>) -> Result<Vec<FileStat>> {
        let mut stats = Self::lock(&self.reader).file_stats(self.view, under)?;
        for (_, mtime_ns, _, reason) in &mut stats {
            if reason
                .as_deref()
                .is_some_and(|name| SkipReason::sticky_named(name).is_none())
            {
                *mtime_ns = -1;
            }
        }
        Ok(stats)
    }

    /// The ranking factors in use, by name.
    #[must_use]
    pub fn weights(&self) -> Weights {
        self.weights
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Changes ranking factors by name for this handle (benchmarks and ablations); all or
    /// nothing.
    pub fn set_weights(&self, values: &[(String, f32)]) -> Result<()> {
        let mut next = self.weights();
        for (name, value) in values {
            next.set(name, *value).map_err(Error::InvalidArgument)?;
        }
        *self
            .weights
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = next;
        Ok(())
    }

    /// The call graph of the view as published: the cached one while the generation is
    /// unchanged, else rebuilt from the store (one thread builds, others wait for it).
    pub fn graph(&self) -> Result<Arc<Graph>> {
        let mut slot = Self::lock(&self.graph);
        let generation = Self::lock(&self.reader).generation(self.view)?;
        if let Some((built, graph)) = slot.as_ref()
            && *built == generation
        {
            return Ok(Arc::clone(graph));
        }
        // Decoded after the reader is let go: see `Store::graph_rows`.
        let rows = Self::lock(&self.reader).graph_rows(self.view)?;
        let graph = Arc::new(Graph::build(rows.decode()?));
        *slot = Some((generation, Arc::clone(&graph)));
        Ok(graph)
    }

    /// Deletes another view of this store (a removed knowledge base) and its lexical
    /// snapshot. Its file versions are collected after the grace period. False if unknown.
    pub fn drop_view(&self, name: &str) -> Result<bool> {
        let own = Self::lock(&self.reader)
            .views()?
            .into_iter()
            .any(|(id, n)| id == self.view && n == name);
        if own {
            return Err(Error::InvalidArgument("a view cannot drop itself".into()));
        }
        let Some(id) = Self::lock(&self.writer).drop_view(name)? else {
            return Ok(false);
        };
        let _ = fs::remove_file(self.dir.join(lexical_file(id))); // best effort: disk only
        Ok(true)
    }

    /// Vectors stored for `model` (all views).
    pub fn vector_count(&self, model: &str) -> Result<usize> {
        Self::lock(&self.reader).count_vectors(model)
    }

    /// Lines `start..=end` (1-based, inclusive) of `path` as indexed.
    pub fn lines(&self, path: &str, start: u32, end: u32) -> Result<Option<String>> {
        Self::lock(&self.reader).view_lines(self.view, path, start, end)
    }

    pub fn get_meta(&self, key: &str) -> Result<Option<String>> {
        Self::lock(&self.reader).get_meta(key)
    }

    pub fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        Self::lock(&self.writer).set_meta(key, value)
    }

    /// Indexes `files` and removes `removed` from the view, publishing atomically.
    pub fn update(
        &self,
        root: &Path,
        files: &[FileInput],
        removed: &[String],
        max_file_bytes: u64,
    ) -> Result<UpdateStats> {
        self.cancel.store(false, Ordering::SeqCst);
        self.done.store(0, Ordering::Relaxed);
        self.total.store(files.len(), Ordering::Relaxed);
        let result = crate::helpers::in_own_pool(|| {
            let batches = self.batches(files, removed)?;
            let mut stats = UpdateStats::default();
            for (i, batch) in batches.iter().enumerate() {
                let last = i + 1 == batches.len();
                let part = self.update_in_pool(root, batch, removed, max_file_bytes, last)?;
                stats.absorb(part);
            }
            stats.skipped.sort();
            Ok(stats)
        });
        self.cancel.store(false, Ordering::SeqCst);
        result
    }

    /// `files` cut into the updates to publish one after the other. An update that only adds
    /// paths (a first index, or one resumed after a cancellation) is published every
    /// [`UPDATE_BATCH_BYTES`] of files: what a reader sees meanwhile is a part of the tree,
    /// never a mix of old and new content, and memory holds one batch's texts and chunks
    /// instead of the whole tree's. Any other update is published at once.
    fn batches<'a>(
        &self,
        files: &'a [FileInput],
        removed: &[String],
    ) -> Result<Vec<&'a [FileInput]>> {
        let bytes: i64 = files.iter().map(|f| f.size.max(0)).sum();
        if bytes <= UPDATE_BATCH_BYTES || !removed.is_empty() {
            return Ok(vec![files]);
        }
        let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        if Self::lock(&self.reader).holds_any(self.view, &paths)? {
            return Ok(vec![files]);
        }
        let mut batches = Vec::new();
        let (mut start, mut size) = (0, 0);
        for (i, f) in files.iter().enumerate() {
            size += f.size.max(0);
            if size >= UPDATE_BATCH_BYTES {
                batches.push(&files[start..=i]);
                (start, size) = (i + 1, 0);
            }
        }
        if start < files.len() {
            batches.push(&files[start..]);
        }
        Ok(batches)
    }

    /// The dictionary new texts are compressed with: the index's, or one trained now when
    /// the index has none and `batch` is worth it.
    fn text_dictionary(
        &self,
        batch: &HashMap<i64, &Read_>,
    ) -> Result<Option<&'static crate::textblob::Dictionary>> {
        if let Some(known) = Self::lock(&self.writer).text_dictionary()? {
            return Ok(Some(known));
        }
        let total = batch.values().map(|r| r.bytes.len()).sum::<usize>();
        if total < DICTIONARY_MIN_BATCH {
            return Ok(None);
        }
        let Some(bytes) = crate::textblob::train(&dictionary_sample(batch), total) else {
            return Ok(None);
        };
        Self::lock(&self.writer)
            .set_text_dictionary(&bytes)
            .map(Some)
    }

    /// One published update; `last` of a run of them (see [`Self::batches`]), which may
    /// write the lexical snapshot.
    fn update_in_pool(
        &self,
        root: &Path,
        files: &[FileInput],
        removed: &[String],
        max_file_bytes: u64,
        last: bool,
    ) -> Result<UpdateStats> {
        let mut stats = UpdateStats::default();
        if files.is_empty() && removed.is_empty() {
            // Nothing changed on disk: publishing would only churn the generation and the
            // snapshot, and make every reader reconcile for nothing.
            stats.generation = Self::lock(&self.reader).generation(self.view)?;
            return Ok(stats);
        }
        // Read and hash in parallel; parse only what the store has never seen.
        let reads: Vec<std::result::Result<Read_, (String, SkipReason)>> = files
            .par_iter()
            .map(|f| {
                let read = read_file(root, f, max_file_bytes);
                if read.is_err() {
                    self.done.fetch_add(1, Ordering::Relaxed);
                }
                read
            })
            .collect();
        self.check_cancel()?;
        let mut ok: Vec<Read_> = Vec::with_capacity(reads.len());
        let stat_of: HashMap<&str, &FileInput> =
            files.iter().map(|f| (f.path.as_str(), f)).collect();
        for r in reads {
            match r {
                Ok(read) => ok.push(read),
                Err(skip) => stats.skipped.push(skip),
            }
        }
        let hashes: Vec<i64> = ok.iter().map(|r| r.hash).collect();
        let known = Self::lock(&self.writer).known_hashes(&hashes)?;
        for r in &mut ok {
            if known.contains(&r.hash) {
                r.bytes = Vec::new(); // only never-seen content is parsed; free the rest now
            }
        }
        // One parse per distinct unknown content, whatever the number of paths holding it.
        let mut to_parse: HashMap<i64, &Read_> = HashMap::new();
        for r in &ok {
            if known.contains(&r.hash) {
                self.done.fetch_add(1, Ordering::Relaxed);
            } else {
                to_parse.entry(r.hash).or_insert(r);
            }
        }
        // Largest first, one file per task: the last files a thread picks are then small, so
        // no core idles at the end while another parses a big one. (Rayon otherwise cuts the
        // list into a few runs up front, one run per thread at a time.)
        let mut order: Vec<&Read_> = to_parse.values().copied().collect();
        order.sort_unstable_by_key(|r| (std::cmp::Reverse(r.bytes.len()), r.hash));
        // A first large batch trains the index's text dictionary on one thread while the
        // others parse; texts are compressed once it is ready.
        let (dictionary, chunked) = rayon::join(
            || self.text_dictionary(&to_parse),
            || {
                order
                    .par_iter()
                    .with_max_len(1)
                    .map(|&r| {
                        if self.cancel.load(Ordering::Relaxed) {
                            return (r, Err(SkipReason::Unreadable));
                        }
                        let chunked = chunk_read(r);
                        self.done.fetch_add(1, Ordering::Relaxed);
                        (r, chunked)
                    })
                    .collect::<Vec<_>>()
            },
        );
        self.check_cancel()?;
        let dictionary = dictionary?;
        // Still largest first: one file per task again.
        let parsed: Vec<_> = chunked
            .into_par_iter()
            .with_max_len(1)
            .map(|(r, chunked)| {
                let version = chunked.map(|(language, text, chunks, encoding)| {
                    let version = FileVersion::new(
                        r.hash,
                        language,
                        r.bytes.len() as u64,
                        &text,
                        chunks,
                        dictionary,
                    );
                    (version, encoding)
                });
                (r.hash, version)
            })
            .collect();
        // The versions hold what is needed from here on: the raw bytes of every file read
        // (the size of the tree) need not live through publishing.
        for r in &mut ok {
            r.bytes = Vec::new();
        }
        let mut versions = Vec::new();
        let mut failed: HashMap<i64, SkipReason> = HashMap::new();
        let mut decoded: HashMap<i64, Encoding> = HashMap::new();
        for (hash, p) in parsed {
            match p {
                Ok((v, encoding)) => {
                    if encoding != Encoding::Utf8 {
                        decoded.insert(hash, encoding);
                    }
                    stats.bytes_parsed += v.size;
                    stats.chunks_added += v.chunks.len() as u64;
                    stats.symbols_added += v.symbols.len() as u64;
                    versions.push(v);
                }
                Err(reason) => {
                    failed.insert(hash, reason);
                }
            }
        }
        stats.files_parsed = versions.len() as u64;
        let mut upserts = Vec::with_capacity(ok.len());
        for r in &ok {
            if let Some(reason) = failed.get(&r.hash) {
                stats.skipped.push((r.path.clone(), *reason));
            } else {
                if let Some(encoding) = decoded.get(&r.hash) {
                    stats.decoded.push((r.path.clone(), *encoding));
                }
                upserts.push(ViewUpdate {
                    path: r.path.clone(),
                    file_hash: r.hash,
                    mtime_ns: r.mtime_ns,
                    size: r.size,
                });
            }
        }
        // Paths whose content was known or shared with another path of this batch.
        stats.files_reused = (upserts.len() - versions.len()) as u64;
        let remembered: Vec<SkippedFile> = stats
            .skipped
            .iter()
            .filter(|(_, reason)| reason.is_sticky())
            .filter_map(|(path, reason)| {
                let f = stat_of.get(path.as_str())?;
                Some(SkippedFile {
                    path: path.clone(),
                    mtime_ns: f.mtime_ns,
                    size: f.size,
                    reason: reason.name().to_owned(),
                })
            })
            .collect();
        // Whatever was skipped this time must not linger in the view with old content.
        let mut to_remove: Vec<String> = removed.to_vec();
        to_remove.extend(
            stats
                .skipped
                .iter()
                .filter(|(_, r)| !r.is_sticky())
                .map(|(p, _)| p.clone()),
        );
        let by_hash: HashMap<i64, &FileVersion> = versions.iter().map(|v| (v.hash, v)).collect();
        // Documents of new content do not depend on the store: analyse them on the pool while
        // one thread commits to SQLite, instead of one after the other.
        let (published, prepared) = std::thread::scope(|scope| {
            let publish = scope.spawn(|| -> Result<(u64, u64)> {
                let mut writer = Self::lock(&self.writer);
                let leaving: Vec<&str> = to_remove
                    .iter()
                    .chain(remembered.iter().map(|s| &s.path))
                    .map(String::as_str)
                    .collect();
                let removed = writer.view_entries(self.view, &leaving)?.len() as u64;
                let changes = Changes {
                    versions: &versions,
                    upserts: &upserts,
                    removed: &to_remove,
                    skipped: &remembered,
                };
                let generation = writer.publish(self.view, &changes, || self.check_cancel())?;
                Ok((generation, removed))
            });
            let prepared: Prepared = upserts
                .par_iter()
                .with_max_len(1)
                .filter_map(|u| {
                    let version = by_hash.get(&u.file_hash)?;
                    let docs =
                        path_docs(&u.path, version.language, &version.chunks, &version.symbols);
                    Some(((u.path.clone(), u.file_hash), docs))
                })
                .collect();
            let published = publish.join().unwrap_or_else(|_| {
                Err(Error::InvalidArgument("the store writer panicked".into()))
            });
            (published, prepared)
        });
        // Chunk contents and compressed texts are in SQLite and analysed: free them before
        // the lexical index grows.
        drop(by_hash);
        drop(versions);
        let (generation, removed) = published?;
        stats.files_removed = removed;
        stats.generation = generation;
        let touched: Vec<&str> = upserts
            .iter()
            .map(|u| u.path.as_str())
            .chain(to_remove.iter().map(String::as_str))
            .chain(remembered.iter().map(|s| s.path.as_str()))
            .collect();
        self.reconcile(prepared, Some(&touched), last)?;
        Ok(stats)
    }

    /// Brings the lexical index up to the published generation if it lags.
    pub fn refresh(&self) -> Result<()> {
        let generation = Self::lock(&self.reader).generation(self.view)?;
        let current = self
            .lexical
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .generation;
        if generation != current {
            crate::helpers::in_own_pool(|| self.reconcile(Prepared::new(), None, true))?;
        }
        Ok(())
    }

    /// Makes the lexical index reflect the store's view exactly, rebuilding the documents of
    /// every path whose content changed (from `prepared` documents when given, else from
    /// SQLite), then saves a snapshot stamped with the generation when one is due.
    ///
    /// `touched` names the paths this handle just published: when that publication is the
    /// only one since the index was current, only those paths are read back from SQLite;
    /// otherwise (another process published too) the whole view is compared. Without
    /// `may_save` (a part of a batched run) the snapshot waits for a later call.
    fn reconcile(
        &self,
        mut prepared: Prepared,
        touched: Option<&[&str]>,
        may_save: bool,
    ) -> Result<()> {
        // SQLite is read before the write lock is taken, so searches of this process wait
        // only for the in-memory changes; another thread may reconcile meanwhile, which the
        // generation check under the lock catches.
        let (mut lexical, previous, generation, view, only) = loop {
            let current = self
                .lexical
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .generation;
            let (generation, view, only) = {
                let reader = Self::lock(&self.reader);
                let partial = match touched {
                    Some(paths) if current != 0 => {
                        let (generation, entries) = reader.snapshot_of(self.view, paths)?;
                        (generation == current + 1).then(|| {
                            let only: HashSet<&str> = paths.iter().copied().collect();
                            (generation, entries, Some(only))
                        })
                    }
                    _ => None,
                };
                match partial {
                    Some(partial) => partial,
                    None => {
                        let (generation, view) = reader.snapshot(self.view)?;
                        (generation, view, None)
                    }
                }
            };
            let lexical = self
                .lexical
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if lexical.generation == current || lexical.generation == generation {
                break (lexical, current, generation, view, only);
            }
        };
        if lexical.generation == generation && generation != 0 {
            return Ok(());
        }
        let by_id: HashMap<u32, &ViewEntry> = view.iter().map(|e| (e.path_id, e)).collect();
        let stale: Vec<u32> = lexical
            .paths
            .iter()
            .filter(|(_, meta)| only.as_ref().is_none_or(|o| o.contains(meta.path.as_str())))
            .filter(|(id, meta)| {
                by_id
                    .get(id)
                    .is_none_or(|e| e.file_hash != meta.file_hash || e.path != meta.path)
            })
            .map(|(id, _)| *id)
            .collect();
        let mut changed = stale.len();
        // The semantic channel's map follows a partial reconcile the same way (a full one
        // is redone by `sync_semantic`): the documents that go, and the paths that come.
        let gone: Vec<u64> = if only.is_some() {
            stale
                .iter()
                .filter_map(|id| Some((*id, lexical.paths.get(id)?.chunks)))
                .flat_map(|(id, chunks)| (0..chunks).map(move |o| doc_key(id, o)))
                .collect()
        } else {
            Vec::new()
        };
        for id in stale {
            lexical.remove_path(id);
        }
        let missing: Vec<&ViewEntry> = view
            .iter()
            .filter(|e| !lexical.paths.contains_key(&e.path_id))
            .collect();
        let added: Vec<(u32, i64)> = missing.iter().map(|e| (e.path_id, e.file_hash)).collect();
        // Documents prepared from fresh content are used as they are; the rest are rebuilt
        // from stored chunks (SQLite reads are sequential, analysis runs in parallel).
        let mut analyzed: Vec<(&ViewEntry, PathDocs)> = Vec::with_capacity(missing.len());
        let mut loaded: Vec<(&ViewEntry, ChunksAndSymbols)> = Vec::new();
        {
            let reader = Self::lock(&self.reader);
            for entry in missing {
                match prepared.remove(&(entry.path.clone(), entry.file_hash)) {
                    Some(docs) => analyzed.push((entry, docs)),
                    None => loaded.push((entry, reader.chunks_and_symbols(entry.file_hash)?)),
                }
            }
        }
        analyzed.par_extend(loaded.par_iter().map(|(entry, (chunks, symbols))| {
            (
                *entry,
                path_docs(&entry.path, entry.language, chunks, symbols),
            )
        }));
        changed += analyzed.len();
        let bulk = analyzed.len() > lexical.paths.len();
        lexical.insert_paths(analyzed);
        if bulk {
            // After a build or a large change, packing the postings saves about a quarter of
            // the memory for a few milliseconds.
            lexical.bm25.compact();
        }
        lexical.generation = generation;
        #[cfg(feature = "embed")]
        if only.is_some() {
            self.patch_semantic(previous, generation, &gone, &added)?;
        }
        #[cfg(not(feature = "embed"))]
        let _ = (previous, gone, added);
        lexical.unsaved += changed;
        let path = self.dir.join(lexical_file(self.view));
        if may_save && (lexical.snapshot_due() || (changed > 0 && !path.exists())) {
            // The snapshot is an optimisation: failing to write it (read-only media, disk
            // full) costs a rebuild on the next open, never correctness.
            let _ = lexical.save(&path);
        }
        Ok(())
    }

    pub fn search(&self, req: &SearchRequest) -> Result<Vec<Hit>> {
        self.refresh()?;
        #[cfg(feature = "embed")]
        self.sync_semantic()?;
        let weights = self.weights();
        let mut query = Query::parse(&req.query);
        if query.terms.is_empty() || req.limit == 0 {
            return Ok(Vec::new());
        }
        let lexical = self
            .lexical
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let lx = &*lexical;
        // `Context.JSON` or `App\Http\Kernel` is a file name only if a file is so named.
        if query.may_name_code() && !lx.paths.values().any(|p| query.names_path(&p.path)) {
            query = query.as_identifier();
        }
        let allowed = |key: u64| lx.allows(req, key);
        let k = req.limit.max(match query.class {
            QueryClass::Identifier => IDENTIFIER_CANDIDATES,
            QueryClass::Path | QueryClass::NaturalLanguage => MIN_CANDIDATES,
        });
        // Identifier queries also consider every chunk defining that name, however common
        // the name is in bodies elsewhere.
        let defining: &[u64] = match (query.class, query.segments.last()) {
            (QueryClass::Identifier, Some(last)) => lx.names.get(last).map_or(&[], Vec::as_slice),
            _ => &[],
        };
        // Without restrictions every indexed chunk is allowed: no per-candidate lookups.
        let filter: Option<crate::bm25::KeyFilter<'_>> =
            Lexical::restricted(req).then_some(&allowed);
        let fused = self.candidates(&query, k, filter, defining, lx, req.lexical_only)?;
        let mut scored: Vec<(f32, (u64, Channels))> = fused
            .into_iter()
            .filter_map(|(key, bm25, channels)| {
                let doc = lx.docs.get(&key)?;
                let path = lx.paths.get(&path_id_of(key))?;
                Some((
                    score(&query, &doc.candidate(bm25, path), &weights),
                    (key, channels),
                ))
            })
            .collect();
        if query.class == QueryClass::NaturalLanguage {
            inherit_from_neighbours(
                &mut scored,
                |(key, _)| *key,
                adjacent_keys,
                weights.neighbours,
            );
        }
        // Chunk texts the phrase rule read, for the hits that need them again.
        let mut read = HashMap::new();
        if query.class == QueryClass::NaturalLanguage {
            self.raise_phrases(&mut scored, lx, &query, &weights, &mut read)?;
        }
        if query.class == QueryClass::Path {
            in_file_order(&mut scored, lx, &query);
        }
        let windows = match query.class {
            QueryClass::Identifier => Windows::Demoted,
            QueryClass::NaturalLanguage => Windows::Folded,
            _ => Windows::Apart,
        };
        let (ranked, spans) = per_file_cap(scored, req, &weights, lx, windows);
        self.hits(lx, ranked, &spans, req, Some(&query), read)
    }

    /// The phrase rule ([`phrase_factor`]) for the best [`PHRASE_CANDIDATES`] of `scored`:
    /// only a chunk's text shows its word order, and reading it costs a decompression. The
    /// texts read are left in `read` by document key (the lines of the chunk's range).
    fn raise_phrases(
        &self,
        scored: &mut [(f32, (u64, Channels))],
        lx: &Lexical,
        query: &Query,
        weights: &Weights,
        read: &mut HashMap<u64, String>,
    ) -> Result<()> {
        let weight = weights.phrase;
        if query.phrase.len() < PHRASE_RUN || weight <= 0.0 {
            return Ok(());
        }
        let n = scored.len().min(PHRASE_CANDIDATES);
        if n < scored.len() {
            scored.select_nth_unstable_by(n, |a, b| b.0.total_cmp(&a.0));
        }
        scored[..n].sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
        // A chunk whose score, raised as far as the rule goes, stays below the tenth cannot
        // reach the first results: its text is not read.
        let floor = scored[..n]
            .get(PHRASE_FLOOR_RANK - 1)
            .map_or(0.0, |(s, _)| *s / (1.0 + weight));
        let mut wanted: Vec<(i64, (u32, u32), usize)> = scored[..n]
            .iter()
            .enumerate()
            .filter(|(_, (s, _))| *s >= floor)
            .filter_map(|(i, (_, (key, _)))| {
                let path = lx.paths.get(&path_id_of(*key))?;
                let doc = lx
                    .docs
                    .get(key)
                    .filter(|d| sketch_admits(&query.phrase, d.quoted, weights.phrase_share))?;
                Some((path.file_hash, (doc.start_line, doc.end_line), i))
            })
            .collect();
        // One read per file: the candidates are often several chunks of one file.
        wanted.sort_unstable();
        let reader = Self::lock(&self.reader);
        for file in wanted.chunk_by(|a, b| a.0 == b.0) {
            let ranges: Vec<(u32, u32)> = file.iter().map(|w| w.1).collect();
            let texts = reader.version_lines(file[0].0, &ranges)?;
            for (&(_, _, i), text) in file.iter().zip(texts) {
                scored[i].0 *= phrase_factor(&query.phrase, &text, weight, weights.phrase_share);
                read.insert(scored[i].1.0, text);
            }
        }
        Ok(())
    }

    /// Hits for ranked `(score, (document key, channels))`, with their text if asked. A hit
    /// names the unit of its chunk that `query` asks for ([`crate::rank::merged_unit`]),
    /// which is not always the first of the units merged into it.
    fn hits(
        &self,
        lx: &Lexical,
        ranked: Ranked,
        spans: &Spans,
        req: &SearchRequest,
        query: Option<&Query>,
        mut read: HashMap<u64, String>,
    ) -> Result<Vec<Hit>> {
        let with_content = req.with_content;
        let mut reader = None;
        // Per file: its outline and, once a chunk's text is cut from it, its stored text.
        let mut files: HashMap<i64, (Option<Outline>, Option<Vec<u8>>)> = HashMap::new();
        let mut term_weights: Option<Vec<f32>> = None;
        let mut hits = Vec::with_capacity(ranked.len());
        for (score, (key, channels)) in ranked {
            let (Some(doc), Some(path)) = (lx.docs.get(&key), lx.paths.get(&path_id_of(key)))
            else {
                continue;
            };
            let choice = query.map_or(HitUnit::Own, |q| merged_unit(q, &doc.candidate(0.0, path)));
            let unit = match choice {
                HitUnit::Unit(unit) => Some(unit),
                _ => None,
            };
            // A sentence whose words name none of a merged chunk's units: their lines tell.
            let by_text = query.filter(|_| choice == HitUnit::ByText);
            // A kind filter admitted the chunk: its name stays unless the unit's kind is one
            // asked for too. Lines first: a file's outline lists every symbol of the file.
            let within = |s: &Symbol| {
                (doc.start_line..=doc.end_line).contains(&s.start_line)
                    && (req.kinds.is_empty() || req.kinds.contains(&s.kind))
            };
            let listed = |s: &Symbol, unit: &str| {
                within(s) && crate::rank::is_unit(unit, &s.name, &s.local_path)
            };
            // A folded hit spans the lines of all its windows.
            let span = spans.get(&key).and_then(|(first, last)| {
                Some((lx.docs.get(first)?.start_line, lx.docs.get(last)?.end_line))
            });
            let (content, named) = if unit.is_some() || by_text.is_some() || with_content {
                let r = reader.get_or_insert_with(|| Self::lock(&self.reader));
                // One read per file: the hits are often several chunks of one file.
                let (outline, blob) = match files.entry(path.file_hash) {
                    Entry::Occupied(e) => e.into_mut(),
                    Entry::Vacant(e) => e.insert((r.outline(path.file_hash)?, None)),
                };
                match outline {
                    Some(outline) => {
                        let ordinal = ordinal_of(key);
                        // A derived chunk's text is the lines of its range, as the phrase
                        // rule read them.
                        let derived = outline.derived.get(ordinal as usize) == Some(&true);
                        let text = match read.remove(&key).filter(|_| derived) {
                            Some(text) => Some(text),
                            None if (with_content && span.is_none()) || by_text.is_some() => {
                                r.chunk_text(path.file_hash, outline, ordinal, blob)?
                            }
                            None => None,
                        };
                        let named = match (unit, by_text) {
                            (Some(unit), _) => {
                                outline.symbols.iter().find(|s| listed(s, unit)).cloned()
                            }
                            (None, Some(q)) => {
                                let weights = term_weights.get_or_insert_with(|| {
                                    q.terms.iter().map(|t| lx.bm25.idf(t)).collect()
                                });
                                text.as_deref().and_then(|text| {
                                    unit_of_text(q, weights, text, doc, &outline.symbols, |s| {
                                        within(s) && doc.names.split(' ').any(|u| listed(s, u))
                                    })
                                })
                            }
                            (None, None) => None,
                        };
                        let content = match span {
                            Some((start, end)) if with_content => {
                                Some(r.stored_lines(path.file_hash, start, end, blob)?)
                            }
                            _ => text.filter(|_| with_content),
                        };
                        (content, named)
                    }
                    None => (None, None),
                }
            } else {
                (None, None)
            };
            let (kind, symbol, local_path) = match &named {
                Some(s) => (s.kind, s.name.as_str(), s.local_path.as_str()),
                None => (doc.kind, &*doc.symbol, &*doc.local_path),
            };
            let (start_line, end_line) = span.unwrap_or((doc.start_line, doc.end_line));
            hits.push(Hit {
                path: path.path.clone(),
                start_line,
                end_line,
                language: path.language,
                kind,
                symbol: symbol.to_owned(),
                symbol_path: shown_symbol_path(
                    &module_path(&path.path, path.language),
                    local_path,
                    path.language,
                ),
                score,
                content,
                channels,
            });
        }
        Ok(hits)
    }

    /// The BM25F candidates of `query` with the channels that found them, fused with the
    /// semantic channel's for a sentence when a model is set (and `lexical_only` is false):
    /// the graph is searched on a query helper while this thread walks the postings.
    /// Identifiers and paths are exact lookups: nearest neighbours only dilute them.
    #[allow(clippy::unnecessary_wraps, unused_variables)]
    fn candidates(
        &self,
        query: &Query,
        k: usize,
        filter: Option<crate::bm25::KeyFilter<'_>>,
        defining: &[u64],
        lx: &Lexical,
        lexical_only: bool,
    ) -> Result<Vec<(u64, f32, Channels)>> {
        let lexical = || {
            lx.bm25
                .search_terms_including(&query.terms, k, filter, defining)
        };
        #[cfg(feature = "embed")]
        if !lexical_only && query.class == QueryClass::NaturalLanguage {
            let semantic = self
                .semantic
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(semantic) = semantic.as_ref() {
                let (lexical, nearest) =
                    crate::helpers::join(lexical, || semantic.search(&query.body, filter));
                let nearest = nearest?;
                if !nearest.is_empty() {
                    return Ok(crate::semantic::fuse(&lexical, &nearest, semantic.weight));
                }
                return Ok(only_lexical(lexical));
            }
        }
        Ok(only_lexical(lexical()))
    }

    /// Sets the embedding model of the semantic channel (`model` names it in the index:
    /// vectors of different models never mix). Loads or rebuilds its graph from the stored
    /// vectors.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] if the index holds vectors of another length under this name.
    #[cfg(feature = "embed")]
    pub fn set_embedder(
        &self,
        model: &str,
        embedder: Arc<dyn crate::embed::Embedder>,
        options: crate::semantic::SemanticOptions,
    ) -> Result<()> {
        let semantic = {
            let reader = Self::lock(&self.reader);
            crate::semantic::Semantic::open(&self.dir, &reader, model, embedder, options)?
        };
        *self
            .semantic
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(semantic);
        self.sync_semantic()
    }

    /// Points the semantic channel's content map at the current view, and its graph at the
    /// stored vectors, when either changed (here or in another process).
    #[cfg(feature = "embed")]
    fn sync_semantic(&self) -> Result<()> {
        let generation = self
            .lexical
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .generation;
        if self
            .semantic
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_none()
        {
            return Ok(());
        }
        let vectors = Self::lock(&self.reader).get_meta(VECTORS_META)?;
        // Every search passes here: only a change takes the write lock.
        let current = |slot: &Option<crate::semantic::Semantic>| {
            slot.as_ref().is_none_or(|s| {
                s.generation == Some(generation) && s.vectors_seen.as_ref() == Some(&vectors)
            })
        };
        if current(
            &self
                .semantic
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        ) {
            return Ok(());
        }
        let mut slot = self
            .semantic
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if current(&slot) {
            return Ok(()); // another search got here first
        }
        let Some(semantic) = slot.as_mut() else {
            return Ok(());
        };
        let reader = Self::lock(&self.reader);
        if semantic.vectors_seen.as_ref() != Some(&vectors) {
            // Another process embedded or collected: take its saved graph when it matches
            // the stored vectors (a run still embedding leaves ours in use until it ends).
            semantic.reload_graph(&reader)?;
            semantic.vectors_seen = Some(vectors);
        }
        if semantic.generation != Some(generation) {
            semantic.by_content.clear();
            semantic.by_key.clear();
            for (path_id, ordinal, hash) in reader.view_chunk_hashes(self.view)? {
                semantic.remember(doc_key(path_id, ordinal), hash);
            }
            semantic.generation = Some(generation);
        }
        Ok(())
    }

    /// Moves the semantic channel's map from `previous` to `generation` when it was current:
    /// drops the documents `gone`, adds the chunks of the `added` (path id, file version).
    #[cfg(feature = "embed")]
    fn patch_semantic(
        &self,
        previous: u64,
        generation: u64,
        gone: &[u64],
        added: &[(u32, i64)],
    ) -> Result<()> {
        let mut slot = self
            .semantic
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(semantic) = slot.as_mut() else {
            return Ok(());
        };
        if semantic.generation != Some(previous) {
            return Ok(()); // rebuilt whole by the next search
        }
        for key in gone {
            semantic.forget(*key);
        }
        let reader = Self::lock(&self.reader);
        for &(path_id, file_hash) in added {
            for (ordinal, hash) in reader.chunk_hashes(file_hash)? {
                semantic.remember(doc_key(path_id, ordinal), hash);
            }
        }
        semantic.generation = Some(generation);
        Ok(())
    }

    /// Embeds the chunks of the view that have no vector for the model yet, `batch` at a time
    /// (each batch stored in its own transaction, so an interruption keeps what was done);
    /// `progress(done, total)` after each. Returns how many were embedded.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] without a model; [`Error::Cancelled`] if cancelled (the
    /// batches stored so far are kept); model and store errors.
    #[cfg(feature = "embed")]
    pub fn embed_pending(&self, batch: usize, progress: &dyn Fn(usize, usize)) -> Result<usize> {
        let (model, embedder) = {
            let slot = self
                .semantic
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let semantic = slot
                .as_ref()
                .ok_or_else(|| Error::InvalidArgument("no embedding model is set".into()))?;
            (semantic.model.clone(), Arc::clone(&semantic.embedder))
        };
        self.cancel.store(false, Ordering::SeqCst);
        let pending = Self::lock(&self.reader).pending_vectors(self.view, &model)?;
        let mut done = 0;
        let result = pending.chunks(batch.max(1)).try_for_each(|batch| {
            if self.cancel.swap(false, Ordering::SeqCst) {
                return Err(Error::Cancelled);
            }
            let texts = Self::lock(&self.reader).embedding_texts(batch)?;
            let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
            let values = embedder.embed(&texts)?;
            let items: Vec<(i64, Vec<f32>)> = batch
                .iter()
                .zip(values.chunks_exact(embedder.dims()))
                .map(|(p, v)| (p.content_hash, v.to_vec()))
                .collect();
            // SQLite takes a fifth of the time the graph does, on one thread: storing the
            // batch beside the graph's insertion instead of before it saves about that much.
            let (stored, added) = std::thread::scope(|scope| {
                let storing = scope.spawn(|| Self::lock(&self.writer).put_vectors(&model, &items));
                let added = self.change_graph(|graph| graph.add(&items));
                let stored = storing
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                (stored, added)
            });
            if let Err(e) = stored {
                // The graph holds only stored vectors, so that it can always be rebuilt
                // from them; what this batch added goes back out (it was all pending).
                if added.is_ok() {
                    let hashes: Vec<i64> = items.iter().map(|(hash, _)| *hash).collect();
                    self.change_graph(|graph| graph.remove(&hashes))?;
                }
                return Err(e);
            }
            added?;
            done += items.len();
            progress(done, pending.len());
            Ok(())
        });
        // Whatever was added is saved, even after an error or a cancellation: the stored
        // vectors and the graph file stay in step.
        if done > 0
            && let Some(semantic) = self
                .semantic
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .as_ref()
        {
            semantic.graph.save()?;
            self.announce_vectors()?;
        }
        result.map(|()| done)
    }

    /// Runs `change` on the semantic channel's graph, if a model is set.
    #[cfg(feature = "embed")]
    fn change_graph(
        &self,
        change: impl FnOnce(&mut crate::vectors::VectorIndex) -> Result<()>,
    ) -> Result<()> {
        match self
            .semantic
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_mut()
        {
            Some(semantic) => change(&mut semantic.graph),
            None => Ok(()),
        }
    }

    /// Tells the other handles on this index that the stored vectors changed and the saved
    /// graph follows them.
    #[cfg(feature = "embed")]
    fn announce_vectors(&self) -> Result<()> {
        Self::lock(&self.writer).bump_meta(VECTORS_META)
    }

    /// The chunks most like `to`, best first, within the request's filters and per-file cap
    /// (`req.query` is not used). With a model, nearest neighbours by cosine similarity, using
    /// the stored vector of an indexed chunk when there is one; otherwise, and with
    /// `req.lexical_only`, BM25 over the terms of the code. A location's unit is not among
    /// the results, and another unit's neighbouring windows fold as a sentence's do.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `path` is not in the view or `line` in no chunk of it;
    /// store and model errors.
    pub fn similar(&self, to: SimilarTo<'_>, req: &SearchRequest) -> Result<Vec<Hit>> {
        self.refresh()?;
        let weights = self.weights();
        #[cfg(feature = "embed")]
        self.sync_semantic()?;
        let lexical = self
            .lexical
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let lx = &*lexical;
        let (given, source, chunk) = match to {
            SimilarTo::Text(text) => (text, None, None),
            SimilarTo::Location { path, line } => {
                let (key, chunk) = self.chunk_at(lx, path, line)?;
                ("", Some(key), Some(chunk))
            }
        };
        // The code asked about is not like itself: neither its chunk nor, for a unit split
        // for length, the unit's other windows (which share its lines) are results.
        let own = source.map_or_else(Vec::new, |key| unit_windows(lx, key));
        let allowed = |key: u64| !own.contains(&key) && lx.allows(req, key);
        let k = req.limit.max(MIN_CANDIDATES);
        #[cfg(feature = "embed")]
        if !req.lexical_only {
            let slot = self
                .semantic
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(semantic) = slot.as_ref() {
                let stored = match &chunk {
                    Some(c) => Self::lock(&self.reader).vector(&semantic.model, c.content_hash)?,
                    None => None,
                };
                let vector = match (stored, &chunk) {
                    (Some(v), _) => v,
                    (None, Some(c)) => semantic
                        .embedder
                        .embed(&[crate::store::embedding_text(c).as_str()])?,
                    (None, None) => semantic.embedder.embed(&[given])?,
                };
                let nearest = semantic.nearest(&vector, k, Some(&allowed))?;
                let semantic_only = Channels {
                    lexical: false,
                    semantic: true,
                };
                let scored = nearest
                    .into_iter()
                    .map(|(key, similarity)| (similarity, (key, semantic_only)))
                    .collect();
                let (ranked, spans) = per_file_cap(scored, req, &weights, lx, Windows::Folded);
                return self.hits(lx, ranked, &spans, req, None, HashMap::new());
            }
        }
        // The code's own terms, whatever a query parser would make of its first words.
        let terms = crate::rank::distinct_terms(chunk.as_ref().map_or(given, |c| &c.content));
        let candidates = lx
            .bm25
            .search_terms_including(&terms, k, Some(&allowed), &[]);
        let scored = candidates
            .into_iter()
            .map(|(key, score)| (score, (key, Channels::LEXICAL)))
            .collect();
        let (ranked, spans) = per_file_cap(scored, req, &weights, lx, Windows::Folded);
        self.hits(lx, ranked, &spans, req, None, HashMap::new())
    }

    /// The document key and chunk of the innermost chunk of `path` that holds `line`, or
    /// the nearest chunk when none does.
    fn chunk_at(&self, lx: &Lexical, path: &str, line: u32) -> Result<(u64, Chunk)> {
        let Some((&path_id, meta)) = lx.paths.iter().find(|(_, p)| p.path == path) else {
            return Err(Error::InvalidArgument(format!(
                "{path} is not in the index (not a file of the view, or skipped)"
            )));
        };
        let chunks = {
            let reader = Self::lock(&self.reader);
            // A line past the end is a mistake (a stale location, a typo), not the last chunk.
            let lines = reader.file_lines(meta.file_hash)?;
            if line > lines {
                return Err(Error::InvalidArgument(format!(
                    "{path} has {lines} lines: line {line} is past its end"
                )));
            }
            reader.chunks(meta.file_hash)?
        };
        // A line between chunks (a blank line, say) means the nearest one.
        let distance =
            |c: &Chunk| c.start_line.saturating_sub(line) + line.saturating_sub(c.end_line);
        chunks
            .into_iter()
            .enumerate()
            .min_by_key(|(_, c)| (distance(c), c.end_line - c.start_line))
            .map(|(ordinal, chunk)| {
                (
                    doc_key(path_id, u32::try_from(ordinal).unwrap_or(u32::MAX)),
                    chunk,
                )
            })
            .ok_or_else(|| Error::InvalidArgument(format!("{path} has no chunks")))
    }

    /// The texts of the view's chunks that have no vector for `model` yet, as they would be
    /// embedded: what an estimate of an embedding run counts.
    ///
    /// # Errors
    ///
    /// Store errors.
    pub fn pending_texts(&self, model: &str) -> Result<Vec<String>> {
        let reader = Self::lock(&self.reader);
        let pending = reader.pending_vectors(self.view, model)?;
        reader.embedding_texts(&pending)
    }

    /// The view's published generation (0: never indexed); one row read, unlike
    /// [`Self::status`], whose counts scan the view.
    pub fn generation(&self) -> Result<u64> {
        Self::lock(&self.reader).generation(self.view)
    }

    pub fn status(&self) -> Result<Status> {
        // A current lexical index mirrors the view: counting it is free, where SQLite reads
        // every chunk key of the view and, for languages, the large rows of `files`.
        let (lexical_generation, known) = {
            let lexical = self
                .lexical
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            (lexical.generation, lexical.view_counts())
        };
        let reader = Self::lock(&self.reader);
        let current = lexical_generation == reader.generation(self.view)?;
        let counts = reader.counts(self.view, current.then_some(known))?;
        let size = |name: &str| fs::metadata(self.dir.join(name)).map_or(0, |m| m.len());
        Ok(Status {
            schema_version: reader.schema_version()?,
            generation: reader.generation(self.view)?,
            files: counts.files,
            chunks: counts.chunks,
            symbols: counts.symbols,
            file_versions: counts.file_versions,
            languages: counts.languages,
            db_bytes: size(DB_FILE) + size(&format!("{DB_FILE}-wal")),
            lexical_bytes: size(&lexical_file(self.view)),
        })
    }
}

impl Engine {
    /// Deletes what no view has referenced for `grace` (see [`Store::collect_garbage`]) and
    /// drops the deleted vectors from this handle's graph.
    ///
    /// # Errors
    ///
    /// Store errors; nothing is deleted then.
    pub fn collect_garbage(&self, grace: std::time::Duration) -> Result<GcStats> {
        let stats = Self::lock(&self.writer).collect_garbage(grace)?;
        for path in self
            .leftover_files()
            .into_iter()
            .chain(self.orphan_snapshots()?)
        {
            let _ = fs::remove_file(path); // best effort: another sweep may be first
        }
        #[cfg(feature = "embed")]
        if !stats.vectors.is_empty() {
            if let Some(semantic) = self
                .semantic
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .as_mut()
            {
                let gone: Vec<i64> = stats
                    .vectors
                    .iter()
                    .filter(|(model, _)| *model == semantic.model)
                    .map(|(_, hash)| *hash)
                    .collect();
                semantic.graph.remove(&gone)?;
                semantic.graph.save()?;
            }
            // Graphs of other models no longer match their vectors: rebuilt when next used.
            self.announce_vectors()?;
        }
        Ok(stats)
    }

    /// Checks the store and the files derived from it (this view's lexical snapshot, the
    /// graph of `vectors` = (model, dimensions, quantization) when given, leftover temporary
    /// files); with `repair`, rebuilds what is derived from SQLite, without embedding anything.
    /// Problems of the database itself are reported, never repaired here.
    ///
    /// # Errors
    ///
    /// Store errors that keep the check from running.
    pub fn health(
        &self,
        repair: bool,
        #[cfg(feature = "embed")] vectors: Option<(&str, usize, crate::vectors::Quantization)>,
    ) -> Result<Health> {
        let (problems, unreadable) = {
            let reader = Self::lock(&self.reader);
            (reader.check()?, reader.unreadable_versions()?)
        };
        let mut health = Health {
            problems,
            repaired: Vec::new(),
        };
        let database_ok = health.problems.is_empty();
        if let Some(problem) = Store::unreadable_problem(&unreadable) {
            health.problems.push(problem);
            // The worktree holds what was lost: its paths leave the view, to be read again.
            if repair && database_ok {
                let hashes: Vec<i64> = unreadable.iter().map(|(hash, _)| *hash).collect();
                let paths = Self::lock(&self.writer).drop_versions(&hashes)?;
                health.repaired.push(format!(
                    "dropped {} file versions that could not be read back; the next index reads \
                     their {paths} paths again",
                    hashes.len()
                ));
            }
        }
        if let Some(problem) = self.lexical_problem()? {
            health.problems.push(problem);
            if repair && database_ok {
                self.rebuild_lexical()?;
                health
                    .repaired
                    .push("rebuilt the lexical index from the store".into());
            }
        }
        #[cfg(feature = "embed")]
        if let Some((model, dims, quantization)) = vectors
            && let Some(problem) = self.graph_problem(model, dims, quantization)?
        {
            health.problems.push(problem);
            if repair && database_ok {
                self.rebuild_graph(model, dims, quantization)?;
                health.repaired.push(format!(
                    "rebuilt the vector graph of {model} from stored vectors"
                ));
            }
        }
        let leftovers = self.leftover_files();
        if !leftovers.is_empty() {
            health.problems.push(format!(
                "{} temporary files left by an interrupted write",
                leftovers.len()
            ));
            if repair {
                for path in &leftovers {
                    let _ = fs::remove_file(path); // may be gone: another process finished
                }
                health.repaired.push("removed the temporary files".into());
            }
        }
        Ok(health)
    }

    /// What is wrong with this view's lexical snapshot on disk, compared with the store.
    fn lexical_problem(&self) -> Result<Option<String>> {
        let path = self.dir.join(lexical_file(self.view));
        let (generation, view) = Self::lock(&self.reader).snapshot(self.view)?;
        if !path.exists() {
            return Ok(None); // not written yet: built from the store when next opened
        }
        let snapshot = match Bm25Index::load(&path) {
            Ok((bm25, meta)) => Lexical::decode(bm25, &meta),
            Err(e) => return Ok(Some(format!("lexical index: {e}"))),
        };
        let Some(snapshot) = snapshot else {
            return Ok(Some(
                "lexical index: written by another version or inconsistent".into(),
            ));
        };
        if snapshot.generation > generation {
            return Ok(Some(format!(
                "lexical index: generation {} is ahead of the store's {generation}",
                snapshot.generation
            )));
        }
        // A snapshot may lag the store (readers reconcile it); it may never disagree with
        // the view it claims to reflect. Compare where it has caught up.
        if snapshot.generation < generation {
            return Ok(None);
        }
        let chunks = Self::lock(&self.reader).chunk_counts(self.view)?;
        let mismatched = view
            .iter()
            .filter(|e| {
                snapshot.paths.get(&e.path_id).is_none_or(|p| {
                    p.path != e.path
                        || p.file_hash != e.file_hash
                        || Some(&p.chunks) != chunks.get(&e.file_hash)
                })
            })
            .count()
            + snapshot.paths.len().saturating_sub(view.len());
        Ok((mismatched > 0)
            .then(|| format!("lexical index: {mismatched} paths disagree with the store")))
    }

    fn rebuild_lexical(&self) -> Result<()> {
        *self
            .lexical
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Lexical::empty();
        crate::helpers::in_own_pool(|| self.reconcile(Prepared::new(), None, true))?;
        // reconcile may leave the save for later, or ignore a failed one; a repair must not.
        self.save_lexical()
    }

    /// Writes this view's lexical snapshot now if it lags the index in memory (changes too
    /// small to be worth one yet); also done when the engine is dropped.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] if the file cannot be written.
    pub fn save_lexical(&self) -> Result<()> {
        let path = self.dir.join(lexical_file(self.view));
        let mut lexical = self
            .lexical
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if lexical.unsaved == 0 && path.exists() {
            return Ok(());
        }
        lexical.save(&path).map_err(|e| {
            Error::io(
                format!("saving {}", path.display()),
                std::io::Error::other(e),
            )
        })
    }

    #[cfg(feature = "embed")]
    fn graph_problem(
        &self,
        model: &str,
        dims: usize,
        quantization: crate::vectors::Quantization,
    ) -> Result<Option<String>> {
        let reader = Self::lock(&self.reader);
        let stored = reader.vectors(model)?;
        drop(reader);
        let wrong = stored.iter().filter(|(_, v)| v.len() != dims).count();
        if wrong > 0 {
            return Ok(Some(format!(
                "vectors: {wrong} stored vectors of {model} do not have {dims} dimensions"
            )));
        }
        let path = crate::vectors::VectorIndex::path_in(&self.dir, model, quantization);
        if !path.exists() {
            return Ok(None); // built from the stored vectors when next used
        }
        let Some(graph) = crate::vectors::VectorIndex::load_any(&path, dims, quantization) else {
            return Ok(Some(format!(
                "vector graph of {model}: unreadable or not of {dims} dimensions"
            )));
        };
        // A graph that lags the stored vectors (an embedding run was interrupted) or is ahead
        // of them (another process collected some) is rebuilt when next opened: its count
        // differs. Only one that counts the same yet holds other vectors would be trusted.
        let missing = stored.iter().filter(|(h, _)| !graph.contains(*h)).count();
        Ok((graph.len() == stored.len() && missing > 0)
            .then(|| format!("vector graph of {model}: {missing} stored vectors are not in it")))
    }

    /// Rebuilds the graph of `model` from the stored vectors (deleting those of the wrong
    /// width: they are embedded again by the next run).
    #[cfg(feature = "embed")]
    fn rebuild_graph(
        &self,
        model: &str,
        dims: usize,
        quantization: crate::vectors::Quantization,
    ) -> Result<()> {
        Self::lock(&self.writer).delete_vectors_not_of_width(model, dims)?;
        let vectors = Self::lock(&self.reader).vectors(model)?;
        let path = crate::vectors::VectorIndex::path_in(&self.dir, model, quantization);
        let mut graph = crate::vectors::VectorIndex::new(&path, dims, vectors.len(), quantization)?;
        graph.add(&vectors)?;
        graph.save()?;
        self.announce_vectors()
    }

    /// Temporary files of snapshot and graph writes that never reached their rename: older
    /// than any write takes, so their writer is gone (killed mid-write).
    /// Lexical snapshots of views that no longer exist (worktrees removed and collected).
    fn orphan_snapshots(&self) -> Result<Vec<PathBuf>> {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return Ok(Vec::new());
        };
        // Listed before the views are read: a snapshot is written after its view's row, so
        // one listed here whose view is missing below had its view dropped, not yet created.
        let snapshots: Vec<(i64, PathBuf)> = entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name();
                let id = name
                    .to_str()?
                    .strip_prefix("lexical-")?
                    .strip_suffix(".bin")?;
                Some((id.parse().ok()?, e.path()))
            })
            .collect();
        let views: HashSet<i64> = Self::lock(&self.reader)
            .views()?
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        Ok(snapshots
            .into_iter()
            .filter(|(id, _)| !views.contains(id))
            .map(|(_, path)| path)
            .collect())
    }

    fn leftover_files(&self) -> Vec<PathBuf> {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let abandoned = |entry: &fs::DirEntry| {
            entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|age| age >= LEFTOVER_AGE))
        };
        entries
            .flatten()
            .filter(|e| {
                e.file_name().to_str().is_some_and(|name| {
                    (name.starts_with('.') && name.ends_with(".tmp")) || name.contains(".tmp-")
                })
            })
            .filter(abandoned)
            .map(|e| e.path())
            .collect()
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // Changes too small to be worth a snapshot so far: the next open starts from here.
        let _ = self.save_lexical();
    }
}

/// What [`Engine::health`] found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Health {
    pub problems: Vec<String>,
    pub repaired: Vec<String>,
}

/// A file read from disk, with the facts needed to decide what to do with it.
struct Read_ {
    path: String,
    mtime_ns: i64,
    size: i64,
    hash: i64,
    bytes: Vec<u8>,
}

fn read_file(
    root: &Path,
    f: &FileInput,
    max_file_bytes: u64,
) -> std::result::Result<Read_, (String, SkipReason)> {
    let skip = |reason| Err((f.path.clone(), reason));
    let full = root.join(&f.path);
    let meta = match fs::symlink_metadata(&full) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return skip(SkipReason::Deleted),
        Err(_) => return skip(SkipReason::Unreadable),
    };
    if meta.file_type().is_symlink() {
        return skip(SkipReason::Symlink);
    }
    if !meta.is_file() {
        return skip(SkipReason::Unreadable);
    }
    if meta.len() > max_file_bytes {
        return skip(SkipReason::TooLarge);
    }
    // Look at the head first: binary files (often the largest) are rejected after 8 KB.
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    let read = fs::File::open(&full).and_then(|mut file| {
        (&mut file)
            .take(BINARY_SNIFF_BYTES as u64)
            .read_to_end(&mut bytes)?;
        if bytes.contains(&0) && !crate::decode::utf16_bom(&bytes) {
            return Ok(true);
        }
        // Saturating: under a limit below the sniffed head, the file may have grown past it
        // since the stat (it is then too large, below).
        file.take((max_file_bytes + 1).saturating_sub(bytes.len() as u64))
            .read_to_end(&mut bytes)?;
        Ok(false)
    });
    match read {
        Ok(true) => return skip(SkipReason::Binary),
        Ok(false) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return skip(SkipReason::Deleted),
        Err(_) => return skip(SkipReason::Unreadable),
    }
    if bytes.len() as u64 > max_file_bytes {
        return skip(SkipReason::TooLarge); // grew after the stat
    }
    let head = &bytes[..bytes.len().min(BINARY_SNIFF_BYTES)];
    if Language::detect(&f.path, head).is_none() {
        return skip(SkipReason::NoParser);
    }
    Ok(Read_ {
        path: f.path.clone(),
        mtime_ns: f.mtime_ns,
        size: f.size,
        hash: file_hash(&bytes),
        bytes,
    })
}

/// A file read: its language, its text (decoded, byte-order mark removed), its chunks, and
/// how its bytes were decoded.
fn chunk_read(
    r: &Read_,
) -> std::result::Result<(Language, Cow<'_, str>, FileChunks, Encoding), SkipReason> {
    let (text, encoding) = crate::decode::decode(&r.bytes).ok_or(SkipReason::Binary)?;
    let head = &text.as_bytes()[..text.len().min(BINARY_SNIFF_BYTES)];
    let language = Language::detect(&r.path, head).ok_or(SkipReason::NoParser)?;
    let chunks = chunk_file(&text, language);
    Ok((language, text, chunks, encoding))
}

/// Parsing this much new text at once (a first index, mostly) trains a dictionary for the
/// index's texts, if it pays for its own bytes (see [`crate::textblob::train`]): below it
/// it seldom does. A tree of 3 MB (tmux, commonmark) stores its text 15-25% smaller with one.
const DICTIONARY_MIN_BATCH: usize = if cfg!(test) { 64 << 10 } else { 1 << 20 };

/// The sample a dictionary is trained on: ~0.5 s of training. 2 MiB came within 2% of 8 MiB
/// on the benchmark tree, at half the time.
const DICTIONARY_SAMPLE: usize = 2 << 20;

/// Files spread over `batch` (by hash, so the same batch gives the same sample) adding up
/// to about [`DICTIONARY_SAMPLE`] bytes.
fn dictionary_sample<'a>(batch: &HashMap<i64, &'a Read_>) -> Vec<&'a [u8]> {
    let mut reads: Vec<&Read_> = batch.values().copied().collect();
    reads.sort_unstable_by_key(|r| r.hash);
    let total: usize = reads.iter().map(|r| r.bytes.len()).sum();
    // Every k-th file: sizes are not weighed, or a few large generated files would fill it.
    let k = (total / DICTIONARY_SAMPLE).max(1);
    reads
        .into_iter()
        .step_by(k)
        .map(|r| r.bytes.as_slice())
        .collect()
}

/// A tiny length-prefixed binary codec for the lexical snapshot's sidecar: fixed-width
/// integers where every bit counts (versions, hashes), varints elsewhere.
mod codec {
    use crate::bm25::{get_varint, put_varint};

    #[derive(Default)]
    pub(super) struct Writer(Vec<u8>);

    impl Writer {
        pub(super) fn u32(&mut self, v: u32) {
            self.0.extend_from_slice(&v.to_le_bytes());
        }
        pub(super) fn u64(&mut self, v: u64) {
            self.0.extend_from_slice(&v.to_le_bytes());
        }
        pub(super) fn i64(&mut self, v: i64) {
            self.0.extend_from_slice(&v.to_le_bytes());
        }
        pub(super) fn var(&mut self, v: u64) {
            put_varint(&mut self.0, v);
        }
        pub(super) fn str(&mut self, s: &str) {
            self.var(s.len() as u64);
            self.0.extend_from_slice(s.as_bytes());
        }
        pub(super) fn into_inner(self) -> Vec<u8> {
            self.0
        }
    }

    pub(super) struct Reader<'a>(&'a [u8]);

    impl<'a> Reader<'a> {
        pub(super) fn new(bytes: &'a [u8]) -> Self {
            Reader(bytes)
        }
        fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
            let (head, rest) = self.0.split_at_checked(N)?;
            self.0 = rest;
            head.try_into().ok()
        }
        pub(super) fn u32(&mut self) -> Option<u32> {
            self.take().map(u32::from_le_bytes)
        }
        pub(super) fn u64(&mut self) -> Option<u64> {
            self.take().map(u64::from_le_bytes)
        }
        pub(super) fn i64(&mut self) -> Option<i64> {
            self.take().map(i64::from_le_bytes)
        }
        pub(super) fn var(&mut self) -> Option<u64> {
            let mut pos = 0;
            let v = get_varint(self.0, &mut pos)?;
            self.0 = &self.0[pos..];
            Some(v)
        }
        pub(super) fn str(&mut self) -> Option<&'a str> {
            let len = usize::try_from(self.var()?).ok()?;
            let (head, rest) = self.0.split_at_checked(len)?;
            self.0 = rest;
            std::str::from_utf8(head).ok()
        }
        pub(super) fn is_empty(&self) -> bool {
            self.0.is_empty()
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    struct Repo {
        root: tempfile::TempDir,
        index: tempfile::TempDir,
    }

    impl Repo {
        fn new(files: &[(&str, &str)]) -> Repo {
            let repo = Repo {
                root: tempfile::tempdir().unwrap(),
                index: tempfile::tempdir().unwrap(),
            };
            for (path, text) in files {
                repo.write(path, text);
            }
            repo
        }

        fn write(&self, path: &str, text: &str) {
            let full = self.root.path().join(path);
            fs::create_dir_all(full.parent().unwrap()).unwrap();
            fs::write(full, text).unwrap();
        }

        fn inputs(&self, paths: &[&str]) -> Vec<FileInput> {
            paths
                .iter()
                .map(|p| FileInput {
                    path: (*p).to_owned(),
                    mtime_ns: 1,
                    size: fs::metadata(self.root.path().join(p))
                        .map_or(0, |m| i64::try_from(m.len()).unwrap_or(i64::MAX)),
                })
                .collect()
        }

        fn open(&self) -> Engine {
            Engine::open(self.index.path(), self.root.path().to_str().unwrap()).unwrap()
        }

        /// Indexes `paths` (of this tree) with `engine`.
        fn index(&self, engine: &Engine, paths: &[&str]) -> UpdateStats {
            engine
                .update(self.root.path(), &self.inputs(paths), &[], 1 << 20)
                .unwrap()
        }
    }

    const AUTH: &str = "\
import time


class TokenStore:
    \"\"\"Keeps OAuth tokens and refreshes them before they expire.\"\"\"

    def __init__(self, client):
        self.client = client
        self.tokens = {}

    def refresh_token(self, user):
        \"\"\"Exchange the refresh token of a user for a new access token.\"\"\"
        token = self.client.post('/oauth/token', user=user)
        self.tokens[user] = (token, time.time())
        return token
";

    const UTIL: &str = "\
def slugify(text):
    \"\"\"Lower-case text and join its words with dashes for use in URLs.\"\"\"
    return '-'.join(text.lower().split())
";

    fn search(engine: &Engine, query: &str) -> Vec<Hit> {
        engine
            .search(&SearchRequest {
                query: query.into(),
                limit: 5,
                per_file: 2,
                with_content: true,
                ..SearchRequest::default()
            })
            .unwrap()
    }

    fn top(engine: &Engine, query: &str) -> (String, String) {
        let hits = search(engine, query);
        let hit = hits
            .first()
            .unwrap_or_else(|| panic!("no hit for {query:?}"));
        (hit.path.clone(), hit.symbol_path.clone())
    }

    #[test]
    fn indexes_and_finds_definitions() {
        let repo = Repo::new(&[("app/auth.py", AUTH), ("app/util.py", UTIL)]);
        let engine = repo.open();
        let stats = repo.index(&engine, &["app/auth.py", "app/util.py"]);
        assert_eq!(stats.files_parsed, 2);
        assert_eq!(stats.generation, 1);
        // A class this small is one chunk that holds the method; a hit for the method names
        // it, with the chunk's lines.
        for query in ["refresh_token", "TokenStore.refresh_token"] {
            let hit = &search(&engine, query)[0];
            assert_eq!(
                (hit.path.as_str(), hit.symbol_path.as_str(), hit.start_line),
                ("app/auth.py", "app.auth.TokenStore.refresh_token", 4),
                "{query}"
            );
            assert!(
                hit.content
                    .as_deref()
                    .unwrap()
                    .contains("def refresh_token")
            );
        }
        assert_eq!(
            top(&engine, "join words with dashes for urls").0,
            "app/util.py"
        );
        let hit = &search(&engine, "slugify")[0];
        assert_eq!((hit.start_line, hit.end_line), (1, 3));
        assert!(hit.content.as_deref().unwrap().starts_with("def slugify"));
    }

    /// A generated module of a few functions, ~1.6 KB, different for every `i`.
    fn module(i: usize) -> String {
        (0..6)
            .map(|j| {
                format!(
                    "def handler_{i}_{j}(request, retries={j}):\n    \"\"\"Serve request {i}.{j} and log it.\"\"\"\n    for attempt in range(retries):\n        response = request.send(timeout={i})\n        if response.ok:\n            return response.json()\n    raise RuntimeError('request {i}.{j} failed')\n\n\n"
                )
            })
            .collect()
    }

    /// A tree of `n` modules `pkg/m{i}.py`, with their paths and texts.
    fn module_repo(n: usize) -> (Repo, Vec<(String, String)>) {
        let files: Vec<(String, String)> = (0..n)
            .map(|i| (format!("pkg/m{i}.py"), module(i)))
            .collect();
        let named: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, t)| (p.as_str(), t.as_str()))
            .collect();
        (Repo::new(&named), files)
    }

    /// The stored text blob of every file version.
    fn text_blobs(repo: &Repo) -> Vec<Vec<u8>> {
        let conn = rusqlite::Connection::open(repo.index.path().join("index.db")).unwrap();
        let mut stmt = conn.prepare("SELECT text FROM files").unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    #[test]
    fn a_hit_s_text_is_its_lines_also_when_the_phrase_rule_read_them() {
        const NET: &str = "\
def connect(host):
    \"\"\"Opens a connection to the host.\"\"\"
    raise ConnectionError('could not reach the server at the host')


def close(conn):
    conn.close()
";
        let files = [
            ("app/auth.py", AUTH),
            ("app/util.py", UTIL),
            ("app/net.py", NET),
        ];
        let repo = Repo::new(&files);
        let engine = repo.open();
        repo.index(&engine, &files.map(|(path, _)| path));
        // A run of a message's words: the phrase rule reads the candidates' texts, which the
        // hits then reuse.
        for query in ["could not reach the server", "connection to the host"] {
            let hits = search(&engine, query);
            assert!(!hits.is_empty(), "{query}");
            for hit in hits {
                let file = files.iter().find(|(path, _)| *path == hit.path).unwrap().1;
                let lines: Vec<&str> = file.lines().collect();
                let want = lines[hit.start_line as usize - 1..hit.end_line as usize].join("\n");
                assert_eq!(hit.content.as_deref(), Some(want.as_str()), "{query}");
            }
        }
    }

    #[test]
    fn a_first_index_is_published_in_batches_and_a_rewrite_at_once() {
        let (repo, files) = module_repo(200);
        let bytes: usize = files.iter().map(|(_, t)| t.len()).sum();
        let batches = bytes.div_ceil(usize::try_from(UPDATE_BATCH_BYTES).unwrap());
        assert!(batches >= 3, "{bytes} bytes");
        let paths: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
        let engine = repo.open();
        let stats = engine
            .update(repo.root.path(), &repo.inputs(&paths), &[], 1 << 20)
            .unwrap();
        // One generation per batch; the report counts the whole run.
        assert_eq!(stats.generation as usize, batches);
        assert_eq!(stats.files_parsed, 200);
        assert_eq!(
            stats.chunks_added as usize,
            files
                .iter()
                .map(|(_, t)| chunk_file(t, Language::Python).chunks.len())
                .sum::<usize>()
        );
        let found = |engine: &Engine, i: usize| {
            search(engine, &format!("handler_{i}_3"))
                .first()
                .map(|h| h.path.clone())
        };
        for i in [0, 99, 199] {
            assert_eq!(found(&engine, i), Some(format!("pkg/m{i}.py")));
        }
        drop(engine);
        // The snapshot on disk reflects the whole run.
        let (bm25, meta) = Bm25Index::load(
            &repo
                .index
                .path()
                .join(lexical_file(crate::store::DEFAULT_VIEW)),
        )
        .unwrap();
        let snapshot = Lexical::decode(bm25, &meta).expect("a snapshot of this version");
        assert_eq!(snapshot.generation, stats.generation);
        assert_eq!(snapshot.paths.len(), 200);
        let engine = repo.open();
        for i in [0, 150] {
            assert_eq!(found(&engine, i), Some(format!("pkg/m{i}.py")));
        }
        // The first batch trained the dictionary every later batch compressed with.
        let store = Store::open(&repo.index.path().join("index.db")).unwrap();
        let dictionary = store.text_dictionary().unwrap().expect("trained");
        for blob in text_blobs(&repo) {
            assert_eq!(crate::textblob::dictionary_of(&blob), Some(dictionary.id));
        }
        // Changing paths the view holds is one publication, however large.
        for (i, path) in paths.iter().enumerate() {
            repo.write(path, &module(i + 1000));
        }
        let again = engine
            .update(repo.root.path(), &repo.inputs(&paths), &[], 1 << 20)
            .unwrap();
        assert_eq!(again.generation, stats.generation + 1);
        assert_eq!(found(&engine, 1150), Some("pkg/m150.py".to_owned()));
        assert!(
            search(&engine, "handler_150_3")
                .iter()
                .all(|h| h.symbol != "handler_150_3")
        );
        // Only new paths beside a non-empty view (a run resumed after an interruption):
        // in parts again.
        let added: Vec<String> = (0..200).map(|i| format!("pkg/n{i}.py")).collect();
        for (i, path) in added.iter().enumerate() {
            repo.write(path, &module(i + 2000));
        }
        let added: Vec<&str> = added.iter().map(String::as_str).collect();
        let resumed = engine
            .update(repo.root.path(), &repo.inputs(&added), &[], 1 << 20)
            .unwrap();
        assert!(resumed.generation >= again.generation + 3);
        assert_eq!(found(&engine, 2199), Some("pkg/n199.py".to_owned()));
    }

    #[test]
    fn a_large_first_batch_trains_the_dictionary_every_later_text_is_compressed_with() {
        let (repo, files) = module_repo(60);
        assert!(files.iter().map(|(_, t)| t.len()).sum::<usize>() >= DICTIONARY_MIN_BATCH);
        let engine = repo.open();
        let paths: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
        engine
            .update(repo.root.path(), &repo.inputs(&paths), &[], 1 << 20)
            .unwrap();
        repo.write("pkg/late.py", &module(99));
        repo.index(&engine, &["pkg/late.py"]);
        let store = Store::open(&repo.index.path().join("index.db")).unwrap();
        let dictionary = store
            .text_dictionary()
            .unwrap()
            .expect("a dictionary was trained");
        let blobs = text_blobs(&repo);
        assert_eq!(blobs.len(), 61);
        for blob in &blobs {
            assert_eq!(crate::textblob::dictionary_of(blob), Some(dictionary.id));
        }
        // Every chunk reads back as the chunker cut it, in this handle and a new one.
        for (path, text) in files
            .iter()
            .map(|(p, t)| (p.as_str(), t.clone()))
            .chain([("pkg/late.py", module(99))])
        {
            let expected = chunk_file(&text, Language::Python).chunks;
            let stored = store.chunks(file_hash(text.as_bytes())).unwrap();
            assert_eq!(stored.len(), expected.len(), "{path}");
            for (s, e) in stored.iter().zip(&expected) {
                assert_eq!(s.content, e.content, "{path}");
            }
        }
        assert!(store.unreadable_versions().unwrap().is_empty());
        assert_eq!(top(&repo.open(), "handler_7_3").0, "pkg/m7.py");
        // A small first index trains none: the dictionary would outweigh what it saves.
        let small = Repo::new(&[("auth.py", AUTH), ("util.py", UTIL)]);
        let engine = small.open();
        small.index(&engine, &["auth.py", "util.py"]);
        let store = Store::open(&small.index.path().join("index.db")).unwrap();
        assert!(store.text_dictionary().unwrap().is_none());
        assert!(
            text_blobs(&small)
                .iter()
                .all(|b| crate::textblob::dictionary_of(b).is_none())
        );
    }

    #[test]
    fn only_new_content_is_parsed_and_removed_paths_disappear() {
        let repo = Repo::new(&[("auth.py", AUTH), ("util.py", UTIL), ("copy.py", UTIL)]);
        let engine = repo.open();
        let all = repo.inputs(&["auth.py", "util.py", "copy.py"]);
        let stats = engine.update(repo.root.path(), &all, &[], 1 << 20).unwrap();
        assert_eq!(
            (stats.files_parsed, stats.files_reused),
            (2, 1),
            "identical files parse once"
        );
        repo.write("util.py", &UTIL.replace("slugify", "make_slug"));
        let stats = engine
            .update(
                repo.root.path(),
                &repo.inputs(&["util.py"]),
                &["auth.py".into()],
                1 << 20,
            )
            .unwrap();
        assert_eq!((stats.files_parsed, stats.files_removed), (1, 1));
        assert_eq!(top(&engine, "make_slug").0, "util.py");
        assert!(
            search(&engine, "refresh_token")
                .iter()
                .all(|h| h.path != "auth.py")
        );
        // Reverting to known content parses nothing.
        repo.write("util.py", UTIL);
        let stats = engine
            .update(repo.root.path(), &repo.inputs(&["util.py"]), &[], 1 << 20)
            .unwrap();
        assert_eq!((stats.files_parsed, stats.files_reused), (0, 1));
    }

    #[test]
    fn skips_are_reported_with_reasons_and_leave_the_view() {
        let repo = Repo::new(&[
            ("ok.py", UTIL),
            ("bin.dat", "a\0b"),
            ("big.py", &"x = 1\n".repeat(300)),
        ]);
        repo.write("app.min.js", "var a=1;");
        let engine = repo.open();
        let inputs = repo.inputs(&["ok.py", "bin.dat", "big.py", "app.min.js", "gone.py"]);
        let stats = engine.update(repo.root.path(), &inputs, &[], 1000).unwrap();
        let reasons: HashMap<&str, &str> = stats
            .skipped
            .iter()
            .map(|(p, r)| (p.as_str(), r.name()))
            .collect();
        assert_eq!(reasons["bin.dat"], "binary");
        assert_eq!(reasons["big.py"], "too large");
        assert_eq!(reasons["app.min.js"], "no parser");
        assert_eq!(reasons["gone.py"], "deleted");
        let stats_now = engine.file_stats(None).unwrap();
        let remembered: HashMap<&str, Option<&str>> = stats_now
            .iter()
            .map(|(p, _, _, r)| (p.as_str(), r.as_deref()))
            .collect();
        assert_eq!(remembered["ok.py"], None);
        assert_eq!(remembered["bin.dat"], Some("binary"));
        assert_eq!(remembered["app.min.js"], Some("no parser"));
        assert!(
            !remembered.contains_key("big.py") && !remembered.contains_key("gone.py"),
            "only content-based skips are remembered"
        );
        // A file indexed before and unreadable now leaves the view.
        let stats = engine
            .update(repo.root.path(), &repo.inputs(&["ok.py"]), &[], 1 << 20)
            .unwrap();
        assert_eq!(stats.files_reused, 1);
        fs::write(repo.root.path().join("ok.py"), b"x = 1\0\0\0").unwrap();
        let stats = engine
            .update(repo.root.path(), &repo.inputs(&["ok.py"]), &[], 1 << 20)
            .unwrap();
        assert_eq!(stats.files_removed, 1);
        assert!(
            engine
                .file_stats(None)
                .unwrap()
                .iter()
                .all(|(_, _, _, reason)| reason.is_some())
        );
    }

    /// Small methods merge into one chunk named by the first; a hit for another of them
    /// names that one, with its own kind and path, spelled as typed and on the owner the
    /// qualifier names, and so does a sentence that names it as a compound identifier, or
    /// covers its name, or else holds words of its own lines.
    #[test]
    fn a_hit_names_the_merged_unit_the_identifier_asks_for() {
        let watcher = "\
class Watcher:
    def __repr__(self):
        return 'Watcher()'

    @property
    def polling(self):
        return self._polling

    def polling_mode(self):
        return 'notify'

    @property
    def debounce(self):
        return self._debounce

    def Debounce(self):
        return None


class Other:
    def __repr__(self):
        return 'Other()'

    def debounce(self):
        return 0
";
        let repo = Repo::new(&[("watch.py", watcher)]);
        let engine = repo.open();
        repo.index(&engine, &["watch.py"]);
        let named = |query: &str| -> Vec<(String, ChunkKind, u32)> {
            search(&engine, query)
                .into_iter()
                .map(|h| (h.symbol_path, h.kind, h.start_line))
                .collect()
        };
        let polling = named("Watcher.polling");
        // The class is one chunk: the hit keeps its lines.
        assert_eq!(
            polling[0],
            ("watch.Watcher.polling".into(), ChunkKind::Method, 1)
        );
        assert_eq!(named("polling")[0].0, "watch.Watcher.polling");
        assert_eq!(named("Debounce")[0].0, "watch.Watcher.Debounce");
        assert_eq!(named("Other.debounce")[0].0, "watch.Other.debounce");
        // Naming the unit reads the file's definitions, never its text when none was asked.
        let bare = engine
            .search(&SearchRequest {
                query: "debounce".into(),
                limit: 5,
                ..SearchRequest::default()
            })
            .unwrap();
        assert_eq!(bare.len(), 2);
        assert!(bare.iter().all(|h| h.content.is_none()));
        assert_eq!(
            named("what does polling_mode return")[0].0,
            "watch.Watcher.polling_mode"
        );
        // A sentence's words cover the names: the chunk's own wins ties (`watcher`).
        let sentence: Vec<String> = named("the watcher repr").into_iter().map(|h| h.0).collect();
        assert_eq!(sentence, ["watch.Watcher", "watch.Other.__repr__"]);
        // Words that cover no name: the unit whose own lines hold them.
        assert_eq!(
            named("what returns notify")[0].0,
            "watch.Watcher.polling_mode"
        );
    }

    /// A file that is not UTF-8 is decoded and indexed, and says how; one remembered as
    /// skipped for it by an older release is read again.
    #[test]
    fn text_that_is_not_utf8_is_decoded_and_searchable() {
        let repo = Repo::new(&[("ok.py", UTIL)]);
        let root = repo.root.path();
        fs::write(
            root.join("legacy.c"),
            b"/* \xa9 1998 J\xfcrgen M\xfcller */\nint checksum_block(int n) { return n; }\n",
        )
        .unwrap();
        fs::write(
            root.join("mixed.py"),
            b"# caf\xc3\xa9 \xe9\ndef reconcile_ledger():\n    return 1\n",
        )
        .unwrap();
        let utf16: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain(
                "// Überblick\nclass InvoiceMailer { }\n"
                    .encode_utf16()
                    .flat_map(u16::to_le_bytes),
            )
            .collect();
        fs::write(root.join("Mailer.cs"), utf16).unwrap();
        let engine = repo.open();
        let inputs = repo.inputs(&["ok.py", "legacy.c", "mixed.py", "Mailer.cs"]);
        let stats = engine.update(root, &inputs, &[], 1 << 20).unwrap();
        assert!(stats.skipped.is_empty(), "{:?}", stats.skipped);
        let mut decoded: Vec<(&str, Option<&str>)> = stats
            .decoded
            .iter()
            .map(|(p, e)| (p.as_str(), e.name()))
            .collect();
        decoded.sort_unstable();
        assert_eq!(
            decoded,
            [
                ("Mailer.cs", Some("UTF-16LE")),
                ("legacy.c", Some("windows-1252")),
                ("mixed.py", Some("UTF-8 with invalid bytes replaced")),
            ]
        );
        assert_eq!(top(&engine, "checksum_block").0, "legacy.c");
        assert_eq!(top(&engine, "reconcile_ledger").0, "mixed.py");
        assert_eq!(top(&engine, "InvoiceMailer").0, "Mailer.cs");
        let hit = search(&engine, "Jürgen Müller")
            .into_iter()
            .find(|h| h.path == "legacy.c")
            .expect("the decoded comment is searchable");
        let content = hit.content.unwrap_or_default();
        assert!(content.contains("© 1998 Jürgen Müller"), "{content}");

        // An older release remembered such a file as skipped: it is read again.
        drop(engine);
        rusqlite::Connection::open(repo.index.path().join("index.db"))
            .unwrap()
            .execute_batch(
                "DELETE FROM view_files WHERE path = 'legacy.c';
                 INSERT INTO skipped_files (view_id, path, mtime_ns, size, reason)
                 SELECT id, 'legacy.c', 1, 2, 'not valid UTF-8' FROM views;",
            )
            .unwrap();
        let engine = repo.open();
        let stale: Vec<_> = engine
            .file_stats(None)
            .unwrap()
            .into_iter()
            .filter(|(p, ..)| p == "legacy.c")
            .collect();
        assert_eq!(
            stale,
            [(
                "legacy.c".to_owned(),
                -1,
                2,
                Some("not valid UTF-8".to_owned())
            )]
        );
    }

    #[test]
    fn derived_index_is_reloaded_or_rebuilt_to_the_same_results() {
        let repo = Repo::new(&[("auth.py", AUTH), ("util.py", UTIL)]);
        let inputs = repo.inputs(&["auth.py", "util.py"]);
        let queries = ["refresh_token", "slugify", "tokens expire", "dashes"];
        let expected: Vec<Vec<Hit>> = {
            let engine = repo.open();
            engine
                .update(repo.root.path(), &inputs, &[], 1 << 20)
                .unwrap();
            queries.iter().map(|q| search(&engine, q)).collect()
        };
        let again = |label: &str| {
            let engine = repo.open();
            for (q, want) in queries.iter().zip(&expected) {
                assert_eq!(&search(&engine, q), want, "{label}: {q}");
            }
        };
        again("snapshot reload");
        let lexical = repo
            .index
            .path()
            .join(lexical_file(crate::store::DEFAULT_VIEW));
        let mut bytes = fs::read(&lexical).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0xff;
        fs::write(&lexical, bytes).unwrap();
        again("corrupt snapshot");
        fs::remove_file(&lexical).unwrap();
        again("missing snapshot");
    }

    #[test]
    fn a_file_that_says_it_was_generated_ranks_below_source() {
        // The generated file holds the words more often (it outranks the source without the
        // rule); its banner, not its name, gives it away, and the snapshot keeps that for the
        // next process.
        let generated = format!(
            "// Code generated by routegen. DO NOT EDIT.\n\npackage mux\n\n{}",
            (0..8)
                .map(|i| format!(
                    "// matchRoute{i} reports whether route {i} matches the path: a route match.\n\
                     func matchRoute{i}(p string) bool {{ return matchRoute(p) }}\n"
                ))
                .collect::<String>()
        );
        let source = "package mux\n\n// matchRoute reports whether a route matches the path.\n\
                      func matchRoute(p string) bool {\n\treturn p != \"\"\n}\n";
        let repo = Repo::new(&[("routes.go", generated.as_str()), ("match.go", source)]);
        let engine = repo.open();
        repo.index(&engine, &["routes.go", "match.go"]);
        let paths = |engine: &Engine| -> Vec<String> {
            search(engine, "route match path")
                .into_iter()
                .map(|h| h.path)
                .collect()
        };
        assert_eq!(paths(&engine).first().map(String::as_str), Some("match.go"));
        let lx = engine.lexical.read().unwrap();
        let classes: Vec<(&str, PathClass)> = {
            let mut v: Vec<_> = lx
                .paths
                .values()
                .map(|p| (p.path.as_str(), p.class))
                .collect();
            v.sort_unstable_by_key(|(p, _)| *p);
            v
        };
        assert_eq!(
            classes,
            [
                ("match.go", PathClass::Source),
                ("routes.go", PathClass::Generated)
            ]
        );
        drop(lx);
        let expected = paths(&engine);
        drop(engine);
        let engine = repo.open();
        assert_eq!(paths(&engine), expected, "the class survives the snapshot");
    }

    #[test]
    fn a_sentence_shows_a_long_function_once_as_far_as_its_windows_rank() {
        // Too long for one chunk: its windows share the sentence's words, and each would
        // take a place of its own.
        let body: String = (0..40)
            .map(|i| format!("    cache_entry_{i} = expire_stale_cache_entries(store, {i})\n"))
            .collect();
        let long = format!("def sweep(store):\n{body}    return store\n");
        let short = "def expire(store):\n    return expire_stale_cache_entries(store, 0)\n";
        // Two definitions of one name, one after the other (an overload), are two units.
        let twice: String = (0..2)
            .map(|n| {
                let lines: String = (0..12)
                    .map(|i| {
                        format!("    stale_{n}_{i} = expire_stale_cache_entries(store, {i})\n")
                    })
                    .collect();
                format!("def prune(store):\n{lines}    return store\n")
            })
            .collect();
        let files = [
            ("sweep.py", long.as_str()),
            ("short.py", short),
            ("prune.py", twice.as_str()),
        ];
        let repo = Repo::new(&files);
        let engine = repo.open();
        repo.index(&engine, &files.map(|(path, _)| path));
        let query = "expire the stale cache entries of the store";
        let spans = |engine: &Engine| -> Vec<(String, u32, u32)> {
            search(engine, query)
                .into_iter()
                .map(|h| (h.path, h.start_line, h.end_line))
                .collect()
        };
        let apart = {
            engine
                .set_weights(&[("fold_windows".to_owned(), 0.0)])
                .unwrap();
            let hits = spans(&engine);
            engine
                .set_weights(&[("fold_windows".to_owned(), Weights::default().fold_windows)])
                .unwrap();
            hits
        };
        let windows: Vec<(u32, u32)> = apart
            .iter()
            .filter(|(path, ..)| path == "sweep.py")
            .map(|&(_, start, end)| (start, end))
            .collect();
        assert!(windows.len() >= 2, "one window only: {apart:?}");
        let hits = search(&engine, query);
        let folded: Vec<&Hit> = hits.iter().filter(|h| h.path == "sweep.py").collect();
        assert_eq!(folded.len(), 1, "{:?}", spans(&engine));
        let hit = folded[0];
        let first = windows.iter().map(|w| w.0).min().unwrap();
        let last = windows.iter().map(|w| w.1).max().unwrap();
        assert_eq!((hit.start_line, hit.end_line), (first, last));
        let lines: Vec<&str> = long.lines().collect();
        let want = lines[first as usize - 1..last as usize].join("\n");
        assert_eq!(hit.content.as_deref(), Some(want.as_str()));
        assert!(hits.iter().any(|h| h.path == "short.py"));
        let overloads: Vec<(u32, u32)> = hits
            .iter()
            .filter(|h| h.path == "prune.py")
            .map(|h| (h.start_line, h.end_line))
            .collect();
        assert_eq!(overloads.len(), 2, "{:?}", spans(&engine));
        // A name still asks for the definition once, by its best window alone.
        let named = search(&engine, "sweep");
        assert_eq!(named[0].path, "sweep.py");
        assert!(named[0].end_line < last);
    }

    #[test]
    fn similar_leaves_out_the_unit_asked_about_and_shows_a_long_clone_once() {
        let body = |name: &str| -> String {
            let lines: String = (0..40)
                .map(|i| format!("    {name}_{i} = expire_stale_cache_entries(store, {i})\n"))
                .collect();
            format!("def {name}(store):\n{lines}    return store\n")
        };
        // The unit asked about has other windows, sharing its lines; the same file also has
        // a short function like it, and another file a renamed copy of the unit.
        let source = format!(
            "{}\n\ndef expire(store):\n    return expire_stale_cache_entries(store, 0)\n",
            body("sweep")
        );
        let clone = body("purge");
        let files = [("sweep.py", source.as_str()), ("purge.py", clone.as_str())];
        let repo = Repo::new(&files);
        let engine = repo.open();
        repo.index(&engine, &files.map(|(path, _)| path));
        let request = SearchRequest {
            limit: 10,
            per_file: 4,
            lexical_only: true,
            ..SearchRequest::default()
        };
        let at = SimilarTo::Location {
            path: "sweep.py",
            line: 20,
        };
        let hits = engine.similar(at, &request).unwrap();
        let spans: Vec<(&str, u32, u32)> = hits
            .iter()
            .map(|h| (h.path.as_str(), h.start_line, h.end_line))
            .collect();
        let sweep_end = 42;
        assert!(
            hits.iter()
                .all(|h| h.path != "sweep.py" || h.start_line > sweep_end),
            "a window of the unit asked about came back: {spans:?}"
        );
        assert!(
            hits.iter()
                .any(|h| h.path == "sweep.py" && h.symbol == "expire"),
            "{spans:?}"
        );
        let copies: Vec<&Hit> = hits.iter().filter(|h| h.path == "purge.py").collect();
        assert_eq!(
            copies.len(),
            1,
            "the copy's windows show as one hit: {spans:?}"
        );
        assert!(copies[0].end_line - copies[0].start_line > 20, "{spans:?}");
    }

    #[test]
    fn a_type_and_its_impl_block_are_two_units() {
        // The struct and the `impl` after it share a path; they are not windows of one unit,
        // so the methods' block answers the type's name right after the declaration.
        let point = "pub struct Point {\n    pub x: f64,\n    pub y: f64,\n}\n\nimpl Point {\n\
                     pub fn norm(&self) -> f64 {\n        (self.x * self.x + self.y * self.y).sqrt()\n\
                     }\n}\n";
        let uses = format!(
            "fn far(points: &[Point]) -> f64 {{\n{}    0.0\n}}\n",
            (0..6)
                .map(|i| format!("    let p{i}: &Point = &points[{i}];\n"))
                .collect::<String>()
        );
        let repo = Repo::new(&[("point.rs", point), ("uses.rs", uses.as_str())]);
        let engine = repo.open();
        repo.index(&engine, &["point.rs", "uses.rs"]);
        let hits: Vec<(String, u32)> = search(&engine, "Point")
            .into_iter()
            .map(|h| (h.path, h.start_line))
            .collect();
        assert_eq!(
            hits[..2],
            [("point.rs".to_owned(), 1), ("point.rs".to_owned(), 6)]
        );
    }

    #[test]
    fn a_sentence_does_not_ask_for_the_fields_named_like_its_words() {
        // The struct's fields are named by the sentence's words (it outranks the function
        // without the rule); a field answers its name, not a description, and the snapshot
        // keeps which names are fields for the next process.
        let types = "package fs\n\n// Entry is one line of a listing.\ntype Entry struct {\n\
                     \tName  string\n\tSize  int64\n\tMode  uint32\n\tOwner string\n}\n";
        let stat = "package fs\n\n// Stat returns the size and mode of the named file.\n\
                    func Stat(path string) (int64, uint32) {\n\treturn lstat(path)\n}\n";
        let repo = Repo::new(&[("types.go", types), ("stat.go", stat)]);
        let engine = repo.open();
        repo.index(&engine, &["types.go", "stat.go"]);
        let first = |engine: &Engine, query: &str| -> String {
            search(engine, query)
                .into_iter()
                .map(|h| h.path)
                .next()
                .unwrap_or_default()
        };
        assert_eq!(first(&engine, "size and mode of a named file"), "stat.go");
        assert_eq!(first(&engine, "Entry.Size"), "types.go");
        drop(engine);
        let engine = repo.open();
        assert_eq!(
            first(&engine, "size and mode of a named file"),
            "stat.go",
            "the fields are known after a reopen"
        );
    }

    #[test]
    fn a_snapshot_from_another_analyzer_version_is_rebuilt() {
        let repo = Repo::new(&[("util.py", UTIL)]);
        let engine = repo.open();
        engine
            .update(repo.root.path(), &repo.inputs(&["util.py"]), &[], 1 << 20)
            .unwrap();
        let expected = search(&engine, "dashes");
        drop(engine);
        // Rewrite the sidecar as if an older analyzer had built the snapshot.
        let path = repo
            .index
            .path()
            .join(lexical_file(crate::store::DEFAULT_VIEW));
        let (bm25, mut meta) = Bm25Index::load(&path).unwrap();
        meta[..4].copy_from_slice(&(META_FORMAT - 1).to_le_bytes());
        bm25.save(&path, &meta).unwrap();
        let engine = repo.open();
        assert_eq!(search(&engine, "dashes"), expected);
        // Saved with the rebuild, not left to be refused again (nor reported by `health`).
        let (bm25, mut meta) = Bm25Index::load(&path).unwrap();
        assert_eq!(meta[..4], META_FORMAT.to_le_bytes(), "rebuilt and saved");
        drop(engine);
        // A sidecar of the fields before the phrase rule's flag (the analyzer's version
        // alone) likewise.
        meta[..4].copy_from_slice(&crate::analyzer::VERSION.to_le_bytes());
        bm25.save(&path, &meta).unwrap();
        let engine = repo.open();
        assert_eq!(search(&engine, "dashes"), expected);
        let (_, meta) = Bm25Index::load(&path).unwrap();
        assert_eq!(meta[..4], META_FORMAT.to_le_bytes(), "rebuilt and saved");
        #[cfg(feature = "embed")]
        assert_eq!(engine.health(false, None).unwrap(), Health::default());
        drop(engine);

        // A snapshot of an older format version likewise.
        let mut old = fs::read(&path).unwrap();
        old[8..12].copy_from_slice(&(crate::bm25::FORMAT_VERSION - 1).to_le_bytes());
        fs::write(&path, old).unwrap();
        assert!(Bm25Index::load(&path).is_err());
        let engine = repo.open();
        assert_eq!(search(&engine, "dashes"), expected);
        assert!(Bm25Index::load(&path).is_ok(), "rebuilt and saved");
    }

    #[test]
    fn status_counts_the_view_from_memory_as_sqlite_does() {
        let repo = Repo::new(&[
            ("auth.py", AUTH),
            ("util.py", UTIL),
            (
                "lib.rs",
                "pub fn one() -> u32 {\n    1\n}\n\npub struct Two;\n",
            ),
            ("empty.py", ""),
        ]);
        let engine = repo.open();
        let paths = ["auth.py", "util.py", "lib.rs", "empty.py"];
        engine
            .update(repo.root.path(), &repo.inputs(&paths), &[], 1 << 20)
            .unwrap();
        let from_sqlite = |engine: &Engine| {
            let reader = Engine::lock(&engine.reader);
            reader.view_counts(engine.view).unwrap()
        };
        let status = engine.status().unwrap();
        let expected = from_sqlite(&engine);
        let in_memory = engine
            .lexical
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .view_counts();
        assert_eq!(in_memory, expected);
        assert_eq!(
            (status.files, status.chunks, status.languages.clone()),
            (expected.files, expected.chunks, expected.languages.clone())
        );
        assert_eq!(status.files, 4);
        assert_eq!(expected.languages[0], ("python".to_owned(), 3));
        // Another handle publishes: this one's lexical index lags, so SQLite answers.
        let other = repo.open();
        other
            .update(repo.root.path(), &[], &["util.py".into()], 1 << 20)
            .unwrap();
        let lagging = engine.status().unwrap();
        assert_eq!(lagging.files, 3);
        let stale = engine
            .lexical
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .view_counts();
        assert_eq!(
            stale.files, 4,
            "the lagging index still holds util.py: not trusted"
        );
        assert_eq!(lagging.chunks, from_sqlite(&engine).chunks);
        assert_eq!(other.status().unwrap().chunks, lagging.chunks);
    }

    #[test]
    fn a_lagging_snapshot_is_reconciled_with_the_store() {
        // Simulates a writer killed after its SQLite commit but before writing the snapshot.
        let repo = Repo::new(&[("auth.py", AUTH), ("util.py", UTIL)]);
        let engine = repo.open();
        repo.index(&engine, &["auth.py", "util.py"]);
        engine.save_lexical().unwrap();
        let stale_snapshot = fs::read(
            repo.index
                .path()
                .join(lexical_file(crate::store::DEFAULT_VIEW)),
        )
        .unwrap();
        repo.write("util.py", &UTIL.replace("slugify", "make_slug"));
        engine
            .update(
                repo.root.path(),
                &repo.inputs(&["util.py"]),
                &["auth.py".into()],
                1 << 20,
            )
            .unwrap();
        drop(engine);
        fs::write(
            repo.index
                .path()
                .join(lexical_file(crate::store::DEFAULT_VIEW)),
            stale_snapshot,
        )
        .unwrap();
        let engine = repo.open();
        assert_eq!(top(&engine, "make_slug").0, "util.py");
        assert!(search(&engine, "slugify").is_empty());
        assert!(search(&engine, "refresh_token").is_empty());
    }

    #[test]
    fn a_second_handle_sees_what_the_first_published() {
        let repo = Repo::new(&[("util.py", UTIL)]);
        let writer = repo.open();
        let reader = repo.open();
        assert!(search(&reader, "slugify").is_empty());
        writer
            .update(repo.root.path(), &repo.inputs(&["util.py"]), &[], 1 << 20)
            .unwrap();
        assert_eq!(top(&reader, "slugify").0, "util.py");
    }

    #[test]
    fn filters_restrict_results() {
        let repo = Repo::new(&[
            ("src/a.py", UTIL),
            ("lib/b.py", UTIL.replace("text", "words").as_str()),
            ("docs/c.md", "# slugify\n\nHow slugify works.\n"),
        ]);
        let engine = repo.open();
        repo.index(&engine, &["src/a.py", "lib/b.py", "docs/c.md"]);
        let run = |req: SearchRequest| {
            engine
                .search(&SearchRequest {
                    query: "slugify".into(),
                    limit: 10,
                    ..req
                })
                .unwrap()
        };
        let paths = |hits: Vec<Hit>| hits.into_iter().map(|h| h.path).collect::<HashSet<_>>();
        assert_eq!(
            paths(run(SearchRequest {
                directories: vec!["lib".into()],
                ..Default::default()
            })),
            HashSet::from(["lib/b.py".to_owned()])
        );
        assert_eq!(
            paths(run(SearchRequest {
                languages: vec![Language::Markdown],
                ..Default::default()
            })),
            HashSet::from(["docs/c.md".to_owned()])
        );
        assert!(
            run(SearchRequest {
                kinds: vec![ChunkKind::Function],
                ..Default::default()
            })
            .iter()
            .all(|h| h.kind == ChunkKind::Function)
        );
        assert!(
            run(SearchRequest {
                directories: vec!["sr".into()],
                ..Default::default()
            })
            .is_empty(),
            "prefix must match whole directories"
        );
    }

    /// Hashed character trigrams: texts that share code share direction, enough to test the
    /// plumbing of nearest-neighbour search without a real model.
    #[cfg(feature = "embed")]
    struct Trigrams {
        calls: AtomicUsize,
    }

    #[cfg(feature = "embed")]
    impl crate::embed::Embedder for Trigrams {
        fn dims(&self) -> usize {
            64
        }

        fn embed(&self, texts: &[&str]) -> Result<Vec<f32>> {
            self.calls.fetch_add(texts.len(), Ordering::SeqCst);
            let mut out = Vec::with_capacity(texts.len() * 64);
            for text in texts {
                let mut v = vec![0.0f32; 64];
                for w in text.as_bytes().windows(3) {
                    v[usize::try_from(xxhash_rust::xxh3::xxh3_64(w) % 64).unwrap()] += 1.0;
                }
                crate::embed::normalize(&mut v);
                out.extend(v);
            }
            Ok(out)
        }

        fn tokenize(&self, _texts: &[&str]) -> Result<Vec<Vec<u32>>> {
            Ok(Vec::new())
        }
    }

    #[cfg(feature = "embed")]
    #[test]
    fn similar_finds_clones_by_vector_or_terms_and_leaves_out_the_source() {
        let clone = UTIL.replace("slugify", "make_slug");
        let repo = Repo::new(&[("auth.py", AUTH), ("util.py", UTIL), ("copy.py", &clone)]);
        let engine = repo.open();
        repo.index(&engine, &["auth.py", "util.py", "copy.py"]);
        let request = SearchRequest {
            limit: 3,
            per_file: 1,
            ..SearchRequest::default()
        };
        let at_slugify = SimilarTo::Location {
            path: "util.py",
            line: 2,
        };
        // Lexical first (no model): the renamed copy shares nearly every term.
        let hits = engine.similar(at_slugify, &request).unwrap();
        assert_eq!(hits[0].path, "copy.py");
        assert!(
            hits.iter().all(|h| h.path != "util.py"),
            "the source is left out"
        );
        assert_eq!(hits[0].channels, Channels::LEXICAL);

        let embedder = Arc::new(Trigrams {
            calls: AtomicUsize::new(0),
        });
        engine
            .set_embedder(
                "trigrams",
                embedder.clone(),
                crate::semantic::SemanticOptions::default(),
            )
            .unwrap();
        let embedded = engine.embed_pending(16, &|_, _| {}).unwrap();
        assert!(embedded >= 3);
        let calls = embedder.calls.load(Ordering::SeqCst);
        let hits = engine.similar(at_slugify, &request).unwrap();
        assert_eq!(hits[0].path, "copy.py");
        assert!(hits[0].channels.semantic && !hits[0].channels.lexical);
        assert!(
            hits[0].score > 0.8,
            "cosine of near clones: {}",
            hits[0].score
        );
        assert_eq!(
            embedder.calls.load(Ordering::SeqCst),
            calls,
            "an indexed chunk's stored vector is reused, not embedded again"
        );
        let text = engine.similar(SimilarTo::Text(&clone), &request).unwrap();
        assert!(text.iter().any(|h| h.path == "util.py"));
        assert_eq!(embedder.calls.load(Ordering::SeqCst), calls + 1);

        let missing = engine.similar(
            SimilarTo::Location {
                path: "nope.py",
                line: 1,
            },
            &request,
        );
        assert!(matches!(missing, Err(Error::InvalidArgument(m)) if m.contains("nope.py")));
    }

    #[cfg(feature = "embed")]
    #[test]
    fn health_finds_and_repairs_derived_files_and_gc_keeps_the_graph_in_step() {
        use crate::vectors::Quantization;
        let repo = Repo::new(&[("auth.py", AUTH), ("util.py", UTIL)]);
        let engine = repo.open();
        let inputs = repo.inputs(&["auth.py", "util.py"]);
        engine
            .update(repo.root.path(), &inputs, &[], 1 << 20)
            .unwrap();
        let embedder = Arc::new(Trigrams {
            calls: AtomicUsize::new(0),
        });
        let options = crate::semantic::SemanticOptions::default();
        // A cosine graph an older version left is deleted, not kept beside the new one.
        let legacy = crate::vectors::VectorIndex::legacy_path_in(
            repo.index.path(),
            "trigrams",
            options.quantization,
        )
        .unwrap();
        fs::write(&legacy, b"an old graph").unwrap();
        engine
            .set_embedder("trigrams", embedder.clone(), options)
            .unwrap();
        assert!(!legacy.exists());
        engine.embed_pending(16, &|_, _| {}).unwrap();
        let graph = Some(("trigrams", 64, Quantization::F16));
        assert_eq!(engine.health(false, graph).unwrap(), Health::default());

        // A second handle (another process) embeds new content: the first one's searches
        // pick up the saved graph.
        repo.write("new.py", "def brand_new_helper():\n    return 'shiny'\n");
        let other = repo.open();
        other
            .update(repo.root.path(), &repo.inputs(&["new.py"]), &[], 1 << 20)
            .unwrap();
        other
            .set_embedder("trigrams", embedder.clone(), options)
            .unwrap();
        assert!(other.embed_pending(16, &|_, _| {}).unwrap() >= 1);
        let request = SearchRequest {
            query: "shiny brand new helper returning".into(),
            limit: 3,
            per_file: 1,
            ..SearchRequest::default()
        };
        let hits = engine.search(&request).unwrap();
        assert!(
            hits.iter()
                .any(|h| h.path == "new.py" && h.channels.semantic),
            "{hits:?}"
        );

        // Damage every derived file: a snapshot that disagrees with the store at its own
        // generation, a graph file cut short, a temporary file of a killed write.
        {
            let mut lexical = engine.lexical.write().unwrap();
            let id = *lexical.paths.keys().next().unwrap();
            lexical.remove_path(id);
            let meta = lexical.encode_meta();
            let path = repo
                .index
                .path()
                .join(lexical_file(crate::store::DEFAULT_VIEW));
            lexical.bm25.save(&path, &meta).unwrap();
        }
        let graph_file =
            crate::vectors::VectorIndex::path_in(repo.index.path(), "trigrams", Quantization::F16);
        fs::write(&graph_file, b"not a graph").unwrap();
        let leftover = repo.index.path().join(".lexical-1.bin.1.2.3.tmp");
        fs::write(&leftover, b"x").unwrap();
        let killed_long_ago = std::time::SystemTime::now() - 2 * LEFTOVER_AGE;
        fs::File::options()
            .write(true)
            .open(&leftover)
            .unwrap()
            .set_modified(killed_long_ago)
            .unwrap();
        fs::write(
            repo.index.path().join(".lexical-1.bin.4.5.6.tmp"),
            b"in use",
        )
        .unwrap();
        let found = engine.health(false, graph).unwrap();
        assert_eq!(found.problems.len(), 3, "{found:?}");
        assert!(found.repaired.is_empty());
        let calls = embedder.calls.load(Ordering::SeqCst);
        let repaired = engine.health(true, graph).unwrap();
        assert_eq!(repaired.repaired.len(), 3, "{repaired:?}");
        assert!(!leftover.exists());
        assert!(
            repo.index.path().join(".lexical-1.bin.4.5.6.tmp").exists(),
            "a write that may be in progress is left alone"
        );
        assert_eq!(engine.health(false, graph).unwrap(), Health::default());
        assert_eq!(
            embedder.calls.load(Ordering::SeqCst),
            calls,
            "a repair never embeds"
        );
        assert_eq!(search(&engine, "refresh_token")[0].path, "auth.py");

        // Deleting a file and collecting at once drops its vectors from SQLite and the graph.
        fs::remove_file(repo.root.path().join("new.py")).unwrap();
        engine
            .update(repo.root.path(), &[], &["new.py".to_owned()], 1 << 20)
            .unwrap();
        let before = graph_len(&engine);
        let stats = engine.collect_garbage(std::time::Duration::ZERO).unwrap();
        assert_eq!(stats.file_versions, 1);
        assert!(!stats.vectors.is_empty());
        assert_eq!(graph_len(&engine), before - stats.vectors.len());
        assert_eq!(engine.health(false, graph).unwrap(), Health::default());
    }

    #[test]
    fn collecting_a_gone_view_deletes_its_lexical_snapshot() {
        let repo = Repo::new(&[("auth.py", AUTH)]);
        let engine = repo.open();
        repo.index(&engine, &["auth.py"]);
        let other = tempfile::tempdir().unwrap();
        fs::write(other.path().join("util.py"), UTIL).unwrap();
        let worktree = Engine::open(repo.index.path(), other.path().to_str().unwrap()).unwrap();
        let input = FileInput {
            path: "util.py".to_owned(),
            mtime_ns: 1,
            size: 10,
        };
        worktree
            .update(other.path(), &[input], &[], 1 << 20)
            .unwrap();
        drop(worktree); // saves its snapshot
        let snapshots = || {
            let mut names: Vec<String> = fs::read_dir(repo.index.path())
                .unwrap()
                .flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.starts_with("lexical-"))
                .collect();
            names.sort();
            names
        };
        let own = lexical_file(engine.view);
        let before = snapshots();
        assert!(before.iter().any(|name| *name != own), "{before:?}");
        engine.collect_garbage(std::time::Duration::ZERO).unwrap();
        assert_eq!(snapshots(), before, "a view whose root exists is kept");
        drop(other); // the worktree is removed
        let stats = engine.collect_garbage(std::time::Duration::ZERO).unwrap();
        assert_eq!(stats.views, 1);
        assert!(
            snapshots().iter().all(|name| *name == own),
            "{:?}",
            snapshots()
        );
        assert_eq!(search(&engine, "refresh_token")[0].path, "auth.py");
    }

    #[cfg(feature = "embed")]
    fn graph_len(engine: &Engine) -> usize {
        engine
            .semantic
            .read()
            .unwrap()
            .as_ref()
            .unwrap()
            .graph
            .len()
    }

    #[cfg(feature = "embed")]
    #[test]
    fn vectors_the_store_refuses_leave_the_graph_too() {
        let repo = Repo::new(&[("auth.py", AUTH), ("util.py", UTIL)]);
        let engine = repo.open();
        repo.index(&engine, &["auth.py", "util.py"]);
        let embedder = Arc::new(Trigrams {
            calls: AtomicUsize::new(0),
        });
        engine
            .set_embedder(
                "trigrams",
                embedder,
                crate::semantic::SemanticOptions::default(),
            )
            .unwrap();
        // The batch is stored while the graph takes it: a write that fails (here a trigger
        // standing in for a full disk) must not leave vectors in the graph that SQLite lacks.
        let raw = rusqlite::Connection::open(repo.index.path().join("index.db")).unwrap();
        raw.execute_batch(
            "CREATE TRIGGER refuse BEFORE INSERT ON vectors BEGIN SELECT RAISE(ABORT, 'disk full'); END;",
        )
        .unwrap();
        let refused = engine.embed_pending(1000, &|_, _| {}).unwrap_err();
        assert!(refused.to_string().contains("disk full"), "{refused}");
        assert_eq!(engine.vector_count("trigrams").unwrap(), 0);
        assert_eq!(graph_len(&engine), 0);

        raw.execute_batch("DROP TRIGGER refuse").unwrap();
        let stored = engine.embed_pending(1000, &|_, _| {}).unwrap();
        assert!(stored >= 2);
        assert_eq!(engine.vector_count("trigrams").unwrap(), stored);
        assert_eq!(graph_len(&engine), stored);
    }

    #[cfg(feature = "embed")]
    #[test]
    fn a_partial_reconcile_patches_the_semantic_map_as_a_full_rebuild_would() {
        let repo = Repo::new(&[("auth.py", AUTH), ("util.py", UTIL), ("copy.py", UTIL)]);
        let engine = repo.open();
        let all = repo.inputs(&["auth.py", "util.py", "copy.py"]);
        engine.update(repo.root.path(), &all, &[], 1 << 20).unwrap();
        let embedder = Arc::new(Trigrams {
            calls: AtomicUsize::new(0),
        });
        let options = crate::semantic::SemanticOptions::default();
        engine.set_embedder("trigrams", embedder, options).unwrap();
        let map = || {
            let slot = engine.semantic.read().unwrap();
            let semantic = slot.as_ref().unwrap();
            let mut pairs: Vec<(u64, i64)> =
                semantic.by_key.iter().map(|(k, h)| (*k, *h)).collect();
            pairs.sort_unstable();
            let mut keys: Vec<(i64, Vec<u64>)> = semantic
                .by_content
                .iter()
                .map(|(h, k)| {
                    let mut k = k.clone();
                    k.sort_unstable();
                    (*h, k)
                })
                .collect();
            keys.sort_unstable();
            (pairs, keys, semantic.generation)
        };
        repo.write("util.py", &UTIL.replace("slugify", "make_slug"));
        repo.write("new.py", "def fresh():\n    return 1\n");
        engine
            .update(
                repo.root.path(),
                &repo.inputs(&["util.py", "new.py"]),
                &["copy.py".to_owned()],
                1 << 20,
            )
            .unwrap();
        let patched = map();
        assert_eq!(
            patched.2,
            Some(engine.lexical.read().unwrap().generation),
            "patched in place, not left for a rebuild"
        );
        engine
            .semantic
            .write()
            .unwrap()
            .as_mut()
            .unwrap()
            .generation = None;
        engine.sync_semantic().unwrap();
        assert_eq!(map(), patched);
    }
}

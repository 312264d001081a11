//! BM25F inverted index over four fixed fields, with incremental updates and atomic snapshots.
//!
//! # Scoring
//!
//! The "simple BM25F" of Robertson and Zaragoza. For a query term `t` and document `d`:
//!
//! ```text
//! tf~(d,t) = Σ_f weight_f · tf_f(d,t) / (1 − b_f + b_f · len_f(d) / avglen_f)
//! score(d) = Σ_t idf(t) · tf~(d,t) / (k1 + tf~(d,t))
//! idf(t)   = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
//! ```
//!
//! `N` is the number of live documents, `df(t)` the number of live documents containing `t` in
//! any field, `len_f` the number of analyzer tokens in field `f`, and `avglen_f` its mean over
//! live documents (a field whose mean is 0 gets a normalisation of 1). Query terms are the
//! [`analyzer`] tokens of the query, deduplicated. Filters only restrict which documents are
//! returned: `N`, `df` and the mean lengths are always those of the whole index.
//!
//! # Layout
//!
//! * Terms are interned in one string arena with an open-addressing table of `u32` ids (about
//!   20 bytes per term plus its text, instead of ~80 for a `HashMap<Box<str>, u32>`).
//! * Documents get dense internal ids in insertion order; per document the index keeps the
//!   caller's `u64` key, four `u32` field lengths, a live bit, and its *forward list* (sorted term
//!   ids as delta varints), which is what lets a removal update `df` immediately.
//! * A posting is one varint `delta_doc << 4 | field_mask` followed by one varint tf per field in
//!   the mask (tfs saturate at `u16::MAX`); mask 0 is the common "body only, tf 1". Typical
//!   postings take 1–3 bytes. Because internal ids only grow, a term's postings are an
//!   append-only delta stream: all terms' streams sit in one sealed arena, and postings added
//!   since the last seal sit in small per-term tails that are concatenated into the arena once
//!   they (with their allocation overhead) reach a quarter of its size: amortised linear work,
//!   and no per-term allocation at rest.
//! * Removal tombstones the document and updates `N`, `df` and the length sums at once, so
//!   scores stay exact; dead postings are skipped at query time and purged by [`Bm25Index::compact`],
//!   which runs by itself once more than 20% of the documents are dead.
//!
//! # Performance
//!
//! Measured with a scratch benchmark (`/tmp/bm25dev/examples/bench.rs`, release build, on a
//! shared two-core VM), over 66k real code chunks of ~1.1 KB (99 distinct terms each) and 100k
//! synthetic ~1 KB chunks with a Zipfian vocabulary (135 distinct terms each, ~950k terms):
//!
//! * Build (analysis on two threads, serial inserts, final [`Bm25Index::compact`]): 55–65k
//!   docs/s (60–75 MB/s) on real code; 23–33k docs/s on the synthetic set, whose dictionary is
//!   three times larger (dictionary lookups are cache misses).
//! * A bulk build into an empty index ([`Bm25Index::extend`], what a cold index and a rebuild
//!   use) splits the terms by hash over the threads: on the 150k-chunk benchmark tree
//!   (`examples/bm25_build.rs`, 15.2M postings) 1.4-1.8 s on two threads against 2.7-3.4 s
//!   one by one.
//! * Search, k = 20, 1–4 word queries drawn from the documents: mean 0.35 ms (p99 0.9 ms) on
//!   real code; mean 2.3 ms (p99 5.8 ms) on the synthetic set, where a third of all tokens are
//!   keywords present in nearly every document. Cost is linear in the postings the query terms
//!   touch, 7–10 ns each all included; 1M synthetic documents took 30 ms per query (with an
//!   earlier build some 20% slower).
//! * Broad queries are pruned with MaxScore and block skips ([`prune`]): on a 187k-chunk index
//!   of 29 projects (`examples/bm25_queries.rs`, k = 200, the ranking layer's candidate count)
//!   the median identifier query went from 0.71 to 0.45 ms and the median 3–5 word query from
//!   0.83 to 0.58 ms; at k = 10, 0.62 to 0.17 ms.
//! * Memory after `compact`: 685 bytes per document on real code (7.0 per posting), 1.1 KB on
//!   the synthetic set; a freshly loaded index (no forward lists yet): 550 and 905 bytes.
//!   Snapshots before compression (format 2): 343 and 516 bytes per document, loaded in 0.1
//!   and 0.25 s. Compressed, format 3 (below) takes 127 bytes per document on the 150k-chunk
//!   tree, the engine's per-chunk metadata included (19.1 MB; 24.0 MB with format 2).
//!
//! # Persistence
//!
//! [`Bm25Index::save`] writes a compacted snapshot (format [`FORMAT_VERSION`], all integers
//! little-endian): magic, version, the zstd-compressed body, and an xxh3-64 checksum of
//! everything before it. The body holds the parameters, documents (key deltas and field
//! lengths as varints), the dictionary in byte order with each term front-coded against the
//! one before, then every term's postings in that order, and the caller's opaque `meta` blob;
//! it is cut into frames of [`FRAME_BYTES`] that compress and decompress on their own, in
//! parallel. Compression makes the snapshot 2.7x smaller (66 to 24.5 MB on the 187k-chunk
//! benchmark tree: term texts and the metadata are text, and small postings deltas repeat);
//! the sorted, front-coded dictionary (format 3) took a fifth off what format 2 compressed to
//! (24.0 to 19.1 MB on the 150k-chunk speed tree, with the engine's sorted metadata). It
//! writes a temporary file in the same directory, fsyncs it and renames it into place.
//! [`Bm25Index::load`] validates everything and never panics on damaged input. Forward lists are
//! not stored: a loaded index rebuilds them from the postings on its first removal.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::fs::{self, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::time::{SystemTime, UNIX_EPOCH};

use rayon::prelude::*;
use xxhash_rust::xxh3::{Xxh3Default, xxh3_64};

use crate::analyzer;
use crate::hash::BuildIntHasher;

mod prune;

use prune::SkipCache;

/// Number of fields of every document.
pub const NUM_FIELDS: usize = 4;

/// Version of the snapshot format written by [`Bm25Index::save`].
pub const FORMAT_VERSION: u32 = 3;

/// Uncompressed body bytes per zstd frame of a snapshot (tiny in tests, so that their small
/// indexes take many frames). Frames use the file texts' level 3, which packs 66 MB in about
/// 0.5 s of one core (level 1: 8% larger for half the time) and unpacks at over 1 GB/s.
const FRAME_BYTES: usize = if cfg!(test) { 256 } else { 4 << 20 };

/// A body claiming more than this many times its compressed size is damaged (real snapshots
/// compress about 3x), so a corrupt size never turns into a huge allocation.
const MAX_EXPANSION: usize = 1 << 12;

const MAGIC: [u8; 8] = *b"CRBM25IX";

/// Numbers temporary files, so concurrent saves in one process never share one.
static SAVE_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Compaction runs once more than `1 / COMPACT_DEAD_DIVISOR` of the documents are dead.
const COMPACT_DEAD_DIVISOR: usize = 5;

/// Tails are sealed into the arena once they exceed a quarter of it and at least this many bytes
/// (tiny in tests so that sealing is exercised).
const SEAL_MIN_BYTES: usize = if cfg!(test) { 64 } else { 256 << 10 };

/// Bit of the body field in a posting's field mask.
const BODY_BIT: u64 = 1 << (Field::Body as u64);

/// The fields of a document, in storage order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    /// Names of the symbols defined in the chunk.
    Name = 0,
    /// Qualified path of the enclosing symbol (module, class, …).
    SymbolPath = 1,
    /// The file path.
    Path = 2,
    /// The chunk's content.
    Body = 3,
}

impl Field {
    /// All fields, in storage order.
    pub const ALL: [Field; NUM_FIELDS] = [Field::Name, Field::SymbolPath, Field::Path, Field::Body];

    /// Position of the field in per-field arrays such as [`Bm25Params::weight`].
    #[must_use]
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// The raw text of a document's fields, borrowed from the caller.
#[derive(Debug, Clone, Copy, Default)]
pub struct DocFields<'a> {
    /// Names of the symbols defined in the chunk.
    pub name: &'a str,
    /// Qualified path of the enclosing symbol.
    pub symbol_path: &'a str,
    /// The file path.
    pub path: &'a str,
    /// The chunk's content.
    pub body: &'a str,
}

impl<'a> DocFields<'a> {
    /// The text of one field.
    #[must_use]
    pub fn get(&self, field: Field) -> &'a str {
        match field {
            Field::Name => self.name,
            Field::SymbolPath => self.symbol_path,
            Field::Path => self.path,
            Field::Body => self.body,
        }
    }
}

/// A document after analysis: its distinct terms with per-field term frequencies, and the length
/// (token count) of each field. Produced by [`analyze_doc`], consumed by [`Bm25Index::insert`].
#[derive(Debug, Clone, Default)]
pub struct AnalyzedDoc {
    /// Distinct terms, concatenated in order of first occurrence.
    text: String,
    /// End of each term in `text` (u32: a build holds every document's analysis at once).
    ends: Vec<u32>,
    /// Per-field frequency of each term (saturating).
    tf: Vec<[u16; NUM_FIELDS]>,
    /// Number of tokens per field (saturating).
    lens: [u16; NUM_FIELDS],
}

impl AnalyzedDoc {
    /// Number of tokens in `field`.
    #[must_use]
    pub fn field_len(&self, field: Field) -> u32 {
        u32::from(self.lens[field.index()])
    }

    /// Number of distinct terms over all fields.
    #[must_use]
    pub fn unique_terms(&self) -> usize {
        self.ends.len()
    }

    /// The distinct terms with their per-field frequencies (indexed by [`Field::index`]), in
    /// order of first occurrence.
    pub fn terms(&self) -> impl Iterator<Item = (&str, [u16; NUM_FIELDS])> + '_ {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(&self.ends)
            .zip(&self.tf)
            .map(|((start, &end), &tf)| (&self.text[start as usize..end as usize], tf))
    }
}

/// Analyses the four fields of a document. Pure and `Send`, so callers can run it in parallel.
#[must_use]
pub fn analyze_doc(doc: &DocFields<'_>) -> AnalyzedDoc {
    // Code has roughly one distinct term per 8 bytes; sizing the table up front avoids rehashing.
    let bytes: usize = Field::ALL.iter().map(|&f| doc.get(f).len()).sum();
    let mut table = TermTable::with_capacity((bytes / 8).min(1 << 16), 0);
    let mut tf: Vec<[u16; NUM_FIELDS]> = Vec::new();
    let mut lens = [0u16; NUM_FIELDS];
    for field in Field::ALL {
        let f = field.index();
        analyzer::for_each_token(doc.get(field), |token| {
            let id = table.intern(token) as usize;
            if id == tf.len() {
                tf.push([0; NUM_FIELDS]);
            }
            tf[id][f] = tf[id][f].saturating_add(1);
            lens[f] = lens[f].saturating_add(1);
        });
    }
    // Terms past 4 GiB of distinct-term text (never seen: files are capped far below) are
    // dropped rather than mis-sliced.
    let ends: Vec<u32> = table
        .ends
        .iter()
        .map_while(|&end| u32::try_from(end).ok())
        .collect();
    let mut text = table.text;
    text.truncate(ends.last().map_or(0, |&end| end as usize));
    text.shrink_to_fit();
    tf.truncate(ends.len());
    tf.shrink_to_fit();
    AnalyzedDoc {
        text,
        ends,
        tf,
        lens,
    }
}

/// Analyses documents as [`analyze_doc`] does, in order; a batch of
/// [`PARALLEL_ANALYSIS_MIN_DOCS`] or more on every core (a memory store's records
/// and their windows are analysed at a process's first search: most of its time).
#[must_use]
pub fn analyze_docs(docs: &[DocFields<'_>]) -> Vec<AnalyzedDoc> {
    if docs.len() < PARALLEL_ANALYSIS_MIN_DOCS {
        return docs.iter().map(analyze_doc).collect();
    }
    crate::helpers::in_own_pool(|| docs.par_iter().map(analyze_doc).collect())
}

/// Below this many documents, waking the pool costs more than it saves.
const PARALLEL_ANALYSIS_MIN_DOCS: usize = 64;

/// BM25F parameters. Only used at query time, so they can be changed at any moment with
/// [`Bm25Index::set_params`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25Params {
    /// Term-frequency saturation (after field weighting).
    pub k1: f32,
    /// Length normalisation per field, in `[0, 1]`, indexed by [`Field::index`].
    pub b: [f32; NUM_FIELDS],
    /// Weight per field, indexed by [`Field::index`].
    pub weight: [f32; NUM_FIELDS],
}

impl Default for Bm25Params {
    /// * `k1 = 1.2`: the usual value; weighted tf saturates after a few occurrences.
    /// * Weights: a chunk that *defines* the queried name should beat chunks that merely use it,
    ///   so one occurrence in `name` counts like three in the body (3.0). The symbol path names
    ///   the enclosing module or class: strong context, but shared by sibling chunks (1.5). The
    ///   file path and the body are the baseline (1.0); the path is shared by every chunk of a
    ///   file, and its idf already makes it weak for common directory names.
    /// * `b`: names are a few tokens long with little variance, so they barely need length
    ///   normalisation (0.3); symbol and file paths vary moderately (0.5); bodies get the
    ///   standard 0.75 so long chunks do not win just by containing more words.
    fn default() -> Self {
        Bm25Params {
            k1: 1.2,
            b: [0.3, 0.5, 0.5, 0.75],
            weight: [3.0, 1.5, 1.0, 1.0],
        }
    }
}

impl Bm25Params {
    /// Whether every value is finite, `k1 >= 0`, each `b` is in `[0, 1]` and each weight `>= 0`.
    #[must_use]
    pub fn is_valid(&self) -> bool {
        self.k1.is_finite()
            && self.k1 >= 0.0
            && self.b.iter().all(|b| (0.0..=1.0).contains(b))
            && self.weight.iter().all(|w| w.is_finite() && *w >= 0.0)
    }
}

/// Size counters for status output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Bm25Stats {
    /// Live documents.
    pub docs: usize,
    /// Distinct terms occurring in at least one live document.
    pub terms: usize,
    /// (term, live document) pairs.
    pub postings: usize,
    /// Removed documents whose postings have not been purged yet.
    pub dead: usize,
}

/// Errors of [`Bm25Index::save`] and [`Bm25Index::load`].
#[derive(Debug, thiserror::Error)]
pub enum Bm25Error {
    /// Reading, writing, syncing or renaming a file failed.
    #[error("BM25 index I/O error on {}: {source}", path.display())]
    Io {
        /// The file or directory concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The file is not a valid snapshot: bad magic, other format version, bad checksum,
    /// truncation or inconsistent contents.
    #[error("corrupt BM25 index {}: {reason}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

/// Keeps a document's key or not. Shared with the threads that walk part of a broad query.
pub type KeyFilter<'a> = &'a (dyn Fn(u64) -> bool + Sync);

/// How a search walks the postings; all give the same answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strategy {
    /// Sparse for selective queries, pruned for broad ones (split when there are helpers).
    Auto,
    /// Every posting into (doc, score) pairs, merged after a sort.
    Sparse,
    /// MaxScore with block skips ([`prune`]), over this many ranges of documents.
    Prune(usize),
}

/// An in-memory BM25F index of documents identified by caller-chosen `u64` keys.
#[derive(Debug, Clone)]
pub struct Bm25Index {
    params: Bm25Params,
    terms: TermTable,
    /// Live documents containing each term.
    df: Vec<u32>,
    /// Internal id of each term's last posting: the delta base of the next one.
    last_doc: Vec<u32>,
    /// Sealed postings of all terms, one delta stream after the other.
    base: Vec<u8>,
    /// End of each term's stream in `base`.
    base_ends: Vec<usize>,
    /// Postings appended since the last seal, continuing each term's delta stream.
    tails: HashMap<u32, Vec<u8>, BuildIntHasher>,
    tail_bytes: usize,
    /// Caller key of each internal document id.
    keys: Vec<u64>,
    /// Token count of each internal document's fields. u16 (saturating at 65,535 tokens: a chunk
    /// is a few hundred) halves the table every scored posting loads from at random (1.2 MB at
    /// 150k documents instead of 2.4): queries 2-11% faster, by how slow memory is.
    lens: Vec<[u16; NUM_FIELDS]>,
    /// Live bit of each internal document id.
    live: Vec<u64>,
    /// Forward lists: sorted term ids of each document as delta varints.
    fwd: Vec<u8>,
    /// End of each document's forward list in `fwd`.
    fwd_ends: Vec<usize>,
    /// Whether `fwd` is maintained. Forward lists are only needed to remove documents, so a
    /// loaded index builds them on its first removal: read-only processes never pay for them.
    fwd_built: bool,
    key_to_doc: HashMap<u64, u32, BuildIntHasher>,
    live_docs: usize,
    /// Sum of each field's length over live documents.
    len_sums: [u64; NUM_FIELDS],
    /// Skip lists and score bounds of recently queried terms, for pruned searches.
    skips: SkipCache,
}

impl Default for Bm25Index {
    fn default() -> Self {
        Bm25Index::new(Bm25Params::default())
    }
}

impl Bm25Index {
    /// An empty index. `params` should pass [`Bm25Params::is_valid`] (checked in debug builds):
    /// other values give meaningless scores, and [`load`](Self::load) rejects a snapshot holding
    /// them.
    #[must_use]
    pub fn new(params: Bm25Params) -> Self {
        debug_assert!(params.is_valid(), "invalid BM25 parameters {params:?}");
        Bm25Index {
            params,
            terms: TermTable::default(),
            df: Vec::new(),
            last_doc: Vec::new(),
            base: Vec::new(),
            base_ends: Vec::new(),
            tails: HashMap::default(),
            tail_bytes: 0,
            keys: Vec::new(),
            lens: Vec::new(),
            live: Vec::new(),
            fwd: Vec::new(),
            fwd_ends: Vec::new(),
            fwd_built: true,
            key_to_doc: HashMap::default(),
            live_docs: 0,
            len_sums: [0; NUM_FIELDS],
            skips: SkipCache::default(),
        }
    }

    /// The scoring parameters.
    #[must_use]
    pub fn params(&self) -> &Bm25Params {
        &self.params
    }

    /// Replaces the scoring parameters; takes effect at the next search. The same validity
    /// rule as for [`new`](Self::new) applies.
    pub fn set_params(&mut self, params: Bm25Params) {
        debug_assert!(params.is_valid(), "invalid BM25 parameters {params:?}");
        self.params = params;
        self.skips.invalidate();
    }

    /// Number of live documents.
    #[must_use]
    pub fn len(&self) -> usize {
        self.live_docs
    }

    /// Whether the index has no live document.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.live_docs == 0
    }

    /// Whether a live document has this key.
    #[must_use]
    pub fn contains(&self, key: u64) -> bool {
        self.key_to_doc.contains_key(&key)
    }

    /// Keys of the live documents, in internal order (insertion order, replacements last).
    pub fn keys(&self) -> impl Iterator<Item = u64> + '_ {
        self.keys
            .iter()
            .enumerate()
            .filter(|&(doc, _)| self.is_live(doc))
            .map(|(_, &key)| key)
    }

    /// Adds a document under `key`, replacing any live document with the same key.
    ///
    /// # Panics
    ///
    /// If the index would need more than `u32::MAX - 1` internal document ids or distinct terms.
    #[allow(clippy::needless_pass_by_value)] // the index takes the document over
    pub fn insert(&mut self, key: u64, doc: AnalyzedDoc) {
        self.skips.invalidate();
        if let Some(old) = self.key_to_doc.remove(&key) {
            self.kill(old);
        }
        if self.keys.len() >= u32::MAX as usize && self.live_docs < self.keys.len() {
            self.compact();
        }
        let id = u32::try_from(self.keys.len())
            .ok()
            .filter(|&id| id < u32::MAX)
            .expect("a BM25 index holds fewer than 2^32 - 1 documents");

        let mut term_ids = Vec::with_capacity(if self.fwd_built {
            doc.unique_terms()
        } else {
            0
        });
        for (term, tf) in doc.terms() {
            let t = self.terms.intern(term);
            let ti = t as usize;
            if ti == self.df.len() {
                self.df.push(0);
                self.last_doc.push(0);
                self.base_ends.push(self.base.len());
            }
            let tail = self.tails.entry(t).or_default();
            let before = tail.len();
            encode_posting(tail, id - self.last_doc[ti], tf);
            self.tail_bytes += tail.len() - before;
            self.last_doc[ti] = id;
            self.df[ti] += 1;
            if self.fwd_built {
                term_ids.push(t);
            }
        }
        if self.fwd_built {
            term_ids.sort_unstable();
            let mut prev = 0;
            for t in term_ids {
                put_varint(&mut self.fwd, u64::from(t - prev));
                prev = t;
            }
            self.fwd_ends.push(self.fwd.len());
        }

        self.push_live(key, doc.lens);

        // Each tail also costs a map entry and an allocation: count ~64 bytes for those.
        if self.tail_bytes + 64 * self.tails.len() > SEAL_MIN_BYTES.max(self.base.len() / 4) {
            self.seal();
        }
        self.maybe_compact();
    }

    /// Adds documents as [`insert`](Self::insert) would one after the other. Into an empty
    /// index, a large batch is built in parallel (on this process's own pool,
    /// [`crate::helpers::in_own_pool`]): one posting costs
    /// a lookup in a dictionary of about a million terms, mostly cache misses, and a serial
    /// build of the 150k-chunk benchmark tree spent 2.5 s on them with the other core idle.
    /// Each thread takes the terms of one hash range, so the threads' dictionaries and posting
    /// lists are disjoint and are concatenated at the end. Forward lists are left to the first
    /// removal, as after a load. Into an index that has documents but no forward lists (built
    /// or loaded so), a batch of new keys is built the same way and each of its terms' posting
    /// lists appended to the term's stream (see `append`): a lookup per term of the batch
    /// instead of per posting (a first index published in parts takes this path from its
    /// second part).
    ///
    /// # Panics
    ///
    /// As [`insert`](Self::insert).
    pub fn extend(&mut self, docs: Vec<(u64, AnalyzedDoc)>) {
        // A small batch (a memory record) is inserted here, without a trip to a pool thread.
        if docs.len() < PARALLEL_BUILD_MIN_DOCS {
            self.insert_all(docs);
        } else {
            crate::helpers::in_own_pool(|| self.extend_here(docs));
        }
    }

    fn insert_all(&mut self, docs: Vec<(u64, AnalyzedDoc)>) {
        for (key, doc) in docs {
            self.insert(key, doc);
        }
    }

    fn extend_here(&mut self, docs: Vec<(u64, AnalyzedDoc)>) {
        let threads = rayon::current_num_threads();
        let appendable = self.keys.is_empty()
            || (!self.fwd_built
                && self.keys.len() + docs.len() < u32::MAX as usize
                && docs
                    .iter()
                    .all(|(key, _)| !self.key_to_doc.contains_key(key)));
        let parallel = appendable && threads >= 2 && docs.len() >= PARALLEL_BUILD_MIN_DOCS;
        let key_to_doc = if parallel { distinct_keys(&docs) } else { None };
        let Some(key_to_doc) = key_to_doc else {
            self.insert_all(docs);
            return;
        };
        let shards: Vec<ShardPostings> = (0..threads)
            .into_par_iter()
            .map(|shard| ShardPostings::build(&docs, shard, threads))
            .collect();
        if !self.keys.is_empty() {
            self.append(&shards, docs);
            return;
        }
        self.skips.invalidate();
        let terms: usize = shards.iter().map(|s| s.df.len()).sum();
        assert!(
            terms < u32::MAX as usize - 1,
            "a term dictionary holds fewer than 2^32 - 2 terms"
        );
        let mut table = TermTable {
            text: String::with_capacity(shards.iter().map(|s| s.terms.text.len()).sum()),
            ends: Vec::with_capacity(terms),
            slots: Vec::new(),
        };
        let mut base = Vec::with_capacity(shards.iter().map(|s| s.base.len()).sum());
        let mut base_ends = Vec::with_capacity(terms);
        let (mut df, mut last_doc) = (Vec::with_capacity(terms), Vec::with_capacity(terms));
        for shard in shards {
            let (text_at, base_at) = (table.text.len(), base.len());
            table.text.push_str(&shard.terms.text);
            table
                .ends
                .extend(shard.terms.ends.iter().map(|end| end + text_at));
            base.extend_from_slice(&shard.base);
            base_ends.extend(shard.base_ends.iter().map(|end| end + base_at));
            df.extend(shard.df);
            last_doc.extend(shard.last_doc);
        }
        table.resize_slots(TermTable::slots_for(terms));
        self.set_postings(table, df, last_doc, base, base_ends);
        self.key_to_doc = key_to_doc;
        self.keys = docs.iter().map(|(key, _)| *key).collect();
        self.lens = docs.iter().map(|(_, doc)| doc.lens).collect();
        self.live = all_live(docs.len());
        self.live_docs = docs.len();
        self.len_sums = [0; NUM_FIELDS];
        for (_, doc) in &docs {
            for (sum, &len) in self.len_sums.iter_mut().zip(&doc.lens) {
                *sum += u64::from(len);
            }
        }
        self.fwd = Vec::new();
        self.fwd_ends = Vec::new();
        self.fwd_built = false;
    }

    /// Adds `docs`, new keys all, whose postings `shards` hold with ids from 0 in batch order.
    /// Each term's list goes after the term's stream in one rewrite of the arena, its first
    /// delta counted from the term's last document and the rest copied as it is: a lookup
    /// per term of the batch and a copy of the arena, where tails would cost an allocation
    /// per term. The last three of four parts of the 150k-chunk benchmark tree take 0.85 s,
    /// against 1.2 s one by one and 0.97 s through tails (`examples/bm25_build.rs`).
    fn append(&mut self, shards: &[ShardPostings], docs: Vec<(u64, AnalyzedDoc)>) {
        self.skips.invalidate();
        #[allow(clippy::cast_possible_truncation)] // checked by the caller: ids stay below u32::MAX
        let first = self.keys.len() as u32;
        // Each list of the batch: its term here, its first posting re-based (in `heads`), and
        // its shard and postings after the first.
        let mut lists: Vec<(u32, Range<usize>, usize, Range<usize>)> = Vec::new();
        let mut heads: Vec<u8> = Vec::new();
        for (si, shard) in shards.iter().enumerate() {
            let mut start = 0;
            for (local, &end) in shard.base_ends.iter().enumerate() {
                let list = &shard.base[start..end];
                let t = self.terms.intern(shard.terms.term(local));
                assert!(
                    t < u32::MAX - 1,
                    "a term dictionary holds fewer than 2^32 - 2 terms"
                );
                let ti = t as usize;
                if ti == self.df.len() {
                    self.df.push(0);
                    self.last_doc.push(0);
                    self.base_ends.push(self.base.len());
                }
                let mut pos = 0;
                let (delta, tf) = decode_posting(list, &mut pos).expect("a list built above");
                #[allow(clippy::cast_possible_truncation)] // a batch id
                let doc = first + delta as u32;
                let head = heads.len();
                encode_posting(&mut heads, doc - self.last_doc[ti], tf);
                self.last_doc[ti] = first + shard.last_doc[local];
                self.df[ti] += shard.df[local];
                lists.push((t, head..heads.len(), si, start + pos..end));
                start = end;
            }
        }
        lists.sort_unstable_by_key(|l| l.0);
        let mut next = lists.iter().peekable();
        let bytes = heads.len() + shards.iter().map(|s| s.base.len()).sum::<usize>();
        self.reseal(bytes, |t, out| {
            if let Some((_, head, si, rest)) = next.next_if(|l| l.0 as usize == t) {
                out.extend_from_slice(&heads[head.clone()]);
                out.extend_from_slice(&shards[*si].base[rest.clone()]);
            }
        });
        for (key, doc) in docs {
            self.push_live(key, doc.lens);
        }
    }

    /// Records a new live document under the next internal id.
    fn push_live(&mut self, key: u64, lens: [u16; NUM_FIELDS]) {
        let id = self.keys.len();
        self.keys.push(key);
        self.lens.push(lens);
        if id / 64 >= self.live.len() {
            self.live.push(0);
        }
        self.live[id / 64] |= 1 << (id % 64);
        self.live_docs += 1;
        for (sum, &len) in self.len_sums.iter_mut().zip(&lens) {
            *sum += u64::from(len);
        }
        #[allow(clippy::cast_possible_truncation)] // callers keep ids below u32::MAX
        self.key_to_doc.insert(key, id as u32);
    }

    /// Removes the document with this key; returns whether there was one.
    pub fn remove(&mut self, key: u64) -> bool {
        let Some(doc) = self.key_to_doc.remove(&key) else {
            return false;
        };
        self.kill(doc);
        self.maybe_compact();
        true
    }

    /// Tombstones a document and takes it out of `N`, `df` and the length sums.
    fn kill(&mut self, doc: u32) {
        self.skips.invalidate();
        if !self.fwd_built {
            self.build_forward();
        }
        let d = doc as usize;
        self.live[d / 64] &= !(1 << (d % 64));
        self.live_docs -= 1;
        for (sum, &len) in self.len_sums.iter_mut().zip(&self.lens[d]) {
            *sum -= u64::from(len);
        }
        let start = if d == 0 { 0 } else { self.fwd_ends[d - 1] };
        let list = &self.fwd[start..self.fwd_ends[d]];
        let mut pos = 0;
        let mut t = 0u64;
        while let Some(delta) = get_varint(list, &mut pos) {
            t += delta;
            if let Some(df) = usize::try_from(t).ok().and_then(|t| self.df.get_mut(t)) {
                debug_assert!(*df > 0, "forward list and document frequencies disagree");
                *df = df.saturating_sub(1);
            }
        }
    }

    fn is_live(&self, doc: usize) -> bool {
        self.live[doc / 64] >> (doc % 64) & 1 == 1
    }

    fn dead_docs(&self) -> usize {
        self.keys.len() - self.live_docs
    }

    fn maybe_compact(&mut self) {
        if self.dead_docs() * COMPACT_DEAD_DIVISOR > self.keys.len() {
            self.compact();
        }
    }

    /// The postings of term `t` in internal-id order, dead documents included.
    fn postings(&self, t: u32) -> PostingIter<'_> {
        let (cur, next) = self.streams(t);
        PostingIter {
            cur,
            next,
            pos: 0,
            prev: 0,
        }
    }

    /// A term's sealed stream and its unsealed tail, which continues the same delta sequence.
    fn streams(&self, t: u32) -> (&[u8], &[u8]) {
        let ti = t as usize;
        let start = if ti == 0 { 0 } else { self.base_ends[ti - 1] };
        let tail = self.tails.get(&t).map_or(&[][..], Vec::as_slice);
        (&self.base[start..self.base_ends[ti]], tail)
    }

    /// Appends the postings of term `t` to `out` with documents renumbered by `remap` (dead
    /// ones, `u32::MAX`, dropped); returns the last new id written (0 if none).
    fn encode_remapped(&self, t: u32, remap: &[u32], out: &mut Vec<u8>) -> u32 {
        let mut prev = 0;
        for (doc, tf) in self.postings(t) {
            let new_doc = remap[doc as usize];
            if new_doc != u32::MAX {
                encode_posting(out, new_doc - prev, tf);
                prev = new_doc;
            }
        }
        prev
    }

    /// Concatenates every tail into the sealed arena.
    fn seal(&mut self) {
        if !self.tails.is_empty() {
            self.reseal(0, |_, _| {});
        }
    }

    /// Rewrites the arena: each term's sealed stream, its tail, then what `extra` writes
    /// for it (about `extra_bytes` in all).
    fn reseal(&mut self, extra_bytes: usize, mut extra: impl FnMut(usize, &mut Vec<u8>)) {
        let mut base = Vec::with_capacity(self.base.len() + self.tail_bytes + extra_bytes);
        let mut start = 0;
        for (t, end) in self.base_ends.iter_mut().enumerate() {
            base.extend_from_slice(&self.base[start..*end]);
            start = *end;
            #[allow(clippy::cast_possible_truncation)] // term ids are u32
            if let Some(tail) = self.tails.get(&(t as u32)) {
                base.extend_from_slice(tail);
            }
            extra(t, &mut base);
            *end = base.len();
        }
        self.base = base;
        self.tails = HashMap::default();
        self.tail_bytes = 0;
    }

    /// Purges the postings of removed documents, drops terms no live document contains,
    /// renumbers documents densely and seals all postings into one arena. Runs by itself when
    /// more than 20% of the documents are dead. Call it after a bulk build too: with nothing
    /// dead it only seals and releases spare capacity (milliseconds, and ~25% less memory).
    pub fn compact(&mut self) {
        self.skips.invalidate();
        if self.live_docs == self.keys.len() {
            // Nothing dead, hence no term without live documents: sealing is all there is to do.
            self.seal();
            self.shrink_to_fit();
            return;
        }
        let mut remap = vec![u32::MAX; self.keys.len()];
        let mut keys = Vec::with_capacity(self.live_docs);
        let mut lens = Vec::with_capacity(self.live_docs);
        for (doc, new_id) in remap.iter_mut().enumerate() {
            if self.is_live(doc) {
                #[allow(clippy::cast_possible_truncation)] // fewer than u32::MAX docs
                {
                    *new_id = keys.len() as u32;
                }
                keys.push(self.keys[doc]);
                lens.push(self.lens[doc]);
            }
        }

        let live_terms = self.df.iter().filter(|&&df| df > 0).count();
        let mut term_remap = vec![u32::MAX; self.df.len()];
        let mut terms = TermTable::with_capacity(live_terms, self.terms.text.len());
        let mut df = Vec::with_capacity(live_terms);
        let mut last_doc = Vec::with_capacity(live_terms);
        let mut base = Vec::with_capacity(self.base.len() + self.tail_bytes);
        let mut base_ends = Vec::with_capacity(live_terms);
        #[allow(clippy::cast_possible_truncation)] // term ids are u32
        for t in 0..self.df.len() as u32 {
            let term_df = self.df[t as usize];
            if term_df == 0 {
                continue;
            }
            term_remap[t as usize] = terms.intern(self.terms.term(t as usize));
            let prev = self.encode_remapped(t, &remap, &mut base);
            base_ends.push(base.len());
            df.push(term_df);
            last_doc.push(prev);
        }

        self.key_to_doc = HashMap::with_capacity_and_hasher(keys.len(), BuildIntHasher::default());
        #[allow(clippy::cast_possible_truncation)] // fewer than u32::MAX docs
        for (doc, &key) in keys.iter().enumerate() {
            self.key_to_doc.insert(key, doc as u32);
        }
        self.live = all_live(keys.len());
        self.live_docs = keys.len();
        self.keys = keys;
        self.lens = lens;
        self.set_postings(terms, df, last_doc, base, base_ends);
        if self.fwd_built {
            self.remap_forward(&remap, &term_remap);
        }
        self.shrink_to_fit();
    }

    /// Installs a dictionary with its sealed postings (no tails left).
    fn set_postings(
        &mut self,
        terms: TermTable,
        df: Vec<u32>,
        last_doc: Vec<u32>,
        base: Vec<u8>,
        base_ends: Vec<usize>,
    ) {
        self.terms = terms;
        self.df = df;
        self.last_doc = last_doc;
        self.base = base;
        self.base_ends = base_ends;
        self.tails = HashMap::default();
        self.tail_bytes = 0;
    }

    /// Rewrites the forward lists after a compaction: drops dead documents and renumbers terms
    /// (a live document only has terms that survive, and renumbering keeps their order).
    fn remap_forward(&mut self, doc_remap: &[u32], term_remap: &[u32]) {
        let mut fwd = Vec::with_capacity(self.fwd.len());
        let mut fwd_ends = Vec::with_capacity(self.keys.len());
        let mut start = 0;
        for (&end, &new_doc) in self.fwd_ends.iter().zip(doc_remap) {
            if new_doc != u32::MAX {
                let list = &self.fwd[start..end];
                let (mut pos, mut old, mut prev) = (0, 0u64, 0);
                while let Some(delta) = get_varint(list, &mut pos) {
                    old += delta;
                    let t = usize::try_from(old).map_or(u32::MAX, |old| term_remap[old]);
                    debug_assert!(t != u32::MAX && t >= prev, "forward list out of sync");
                    put_varint(&mut fwd, u64::from(t.wrapping_sub(prev)));
                    prev = t;
                }
                fwd_ends.push(fwd.len());
            }
            start = end;
        }
        self.fwd = fwd;
        self.fwd_ends = fwd_ends;
    }

    /// Releases spare capacity after a compaction or a load.
    fn shrink_to_fit(&mut self) {
        self.terms.text.shrink_to_fit();
        self.terms.ends.shrink_to_fit();
        self.df.shrink_to_fit();
        self.last_doc.shrink_to_fit();
        self.base.shrink_to_fit();
        self.base_ends.shrink_to_fit();
        self.keys.shrink_to_fit();
        self.lens.shrink_to_fit();
        self.live.shrink_to_fit();
        self.fwd.shrink_to_fit();
        self.fwd_ends.shrink_to_fit();
    }

    /// Builds the forward lists of live documents from the postings (dead ones get empty
    /// lists), and maintains them from then on.
    fn build_forward(&mut self) {
        let n = self.keys.len();
        let mut starts = vec![0usize; n + 1];
        #[allow(clippy::cast_possible_truncation)] // term ids are u32
        for t in 0..self.df.len() as u32 {
            for (doc, _) in self.postings(t) {
                if self.is_live(doc as usize) {
                    starts[doc as usize + 1] += 1;
                }
            }
        }
        for d in 0..n {
            starts[d + 1] += starts[d];
        }
        let mut flat = vec![0u32; starts[n]];
        let mut fill = starts.clone();
        #[allow(clippy::cast_possible_truncation)] // term ids are u32
        for t in 0..self.df.len() as u32 {
            for (doc, _) in self.postings(t) {
                let d = doc as usize;
                if self.is_live(d) {
                    flat[fill[d]] = t;
                    fill[d] += 1;
                }
            }
        }
        // Term ids come out ascending per document because terms were visited in order.
        let mut fwd = Vec::with_capacity(flat.len() * 2);
        let mut fwd_ends = Vec::with_capacity(n);
        for d in 0..n {
            let mut prev = 0;
            for &t in &flat[starts[d]..starts[d + 1]] {
                put_varint(&mut fwd, u64::from(t - prev));
                prev = t;
            }
            fwd_ends.push(fwd.len());
        }
        self.fwd = fwd;
        self.fwd_ends = fwd_ends;
        self.fwd_built = true;
    }

    /// Size counters for status output.
    #[must_use]
    pub fn stats(&self) -> Bm25Stats {
        Bm25Stats {
            docs: self.live_docs,
            terms: self.df.iter().filter(|&&df| df > 0).count(),
            postings: self.df.iter().map(|&df| df as usize).sum(),
            dead: self.dead_docs(),
        }
    }

    /// Estimated heap memory held by the index, in bytes.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        use std::mem::size_of;
        // hashbrown: one control byte per bucket, buckets ≈ capacity · 8/7.
        fn map_bytes<K, V>(capacity: usize) -> usize {
            capacity * 8 / 7 * (size_of::<(K, V)>() + 1)
        }
        self.terms.memory_bytes()
            + self.df.capacity() * 4
            + self.last_doc.capacity() * 4
            + self.base.capacity()
            + self.base_ends.capacity() * size_of::<usize>()
            + map_bytes::<u32, Vec<u8>>(self.tails.capacity())
            + self.tails.values().map(Vec::capacity).sum::<usize>()
            + self.keys.capacity() * 8
            + self.lens.capacity() * size_of::<[u16; NUM_FIELDS]>()
            + self.live.capacity() * 8
            + self.fwd.capacity()
            + self.fwd_ends.capacity() * size_of::<usize>()
            + map_bytes::<u64, u32>(self.key_to_doc.capacity())
            + self.skips.bytes()
    }

    /// The top `k` live documents for `query` as `(key, score)`: score descending, ties by key
    /// ascending, only scores above 0.
    ///
    /// `filter`, if given, keeps only the keys it accepts: the result is the top `k` among
    /// those, exactly as if the others did not match. It does not change `N`, `df` or the mean
    /// lengths. It is called lazily, only for matching keys that could still enter the top `k`,
    /// in no particular order, so it should be a pure predicate.
    #[must_use]
    pub fn search(&self, query: &str, k: usize, filter: Option<KeyFilter<'_>>) -> Vec<(u64, f32)> {
        let mut ids = Vec::new();
        analyzer::for_each_token(query, |token| {
            if let Some(t) = self.terms.get(token) {
                ids.push(t);
            }
        });
        self.search_ids(ids, k, filter)
    }

    /// Like [`search`](Self::search), with already analysed query terms (deduplicated here).
    #[must_use]
    pub fn search_terms(
        &self,
        terms: &[String],
        k: usize,
        filter: Option<KeyFilter<'_>>,
    ) -> Vec<(u64, f32)> {
        self.search_terms_including(terms, k, filter, &[])
    }

    /// Like [`search_terms`](Self::search_terms), and also every key of `include` that matches
    /// and passes `filter` but did not make the top `k`, appended after it (score descending,
    /// ties by key). Scored in the same pass over the postings, so asking for a few known
    /// documents costs no second search.
    #[must_use]
    pub fn search_terms_including(
        &self,
        terms: &[String],
        k: usize,
        filter: Option<KeyFilter<'_>>,
        include: &[u64],
    ) -> Vec<(u64, f32)> {
        let ids = terms.iter().filter_map(|t| self.terms.get(t)).collect();
        self.search_ids_including(ids, k, filter, include, Strategy::Auto)
    }

    /// The inverse document frequency of `term` as the scores weigh it; 0 for a term no
    /// live document holds.
    #[must_use]
    pub fn idf(&self, term: &str) -> f32 {
        self.terms
            .get(term)
            .filter(|&t| self.df[t as usize] > 0)
            .map_or(0.0, |t| self.idf_of(t))
    }

    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
    fn idf_of(&self, term: u32) -> f32 {
        let n = self.live_docs as f64;
        let df = f64::from(self.df[term as usize]);
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln() as f32
    }

    /// Per-field constants of the length normalisation for the current state of the index.
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
    fn field_norms(&self) -> FieldNorms {
        let mut norms = FieldNorms {
            weight: self.params.weight,
            c0: [1.0; NUM_FIELDS],
            c1: [0.0; NUM_FIELDS],
        };
        if self.live_docs > 0 {
            let n = self.live_docs as f64;
            for f in 0..NUM_FIELDS {
                let avg = self.len_sums[f] as f64 / n;
                if avg > 0.0 {
                    let b = self.params.b[f];
                    norms.c0[f] = 1.0 - b;
                    norms.c1[f] = (f64::from(b) / avg) as f32;
                }
            }
        }
        norms
    }

    fn search_ids(
        &self,
        ids: Vec<u32>,
        k: usize,
        filter: Option<KeyFilter<'_>>,
    ) -> Vec<(u64, f32)> {
        self.search_ids_including(ids, k, filter, &[], Strategy::Auto)
    }

    #[allow(clippy::cast_possible_truncation)]
    fn search_ids_including(
        &self,
        mut ids: Vec<u32>,
        k: usize,
        filter: Option<KeyFilter<'_>>,
        include: &[u64],
        strategy: Strategy,
    ) -> Vec<(u64, f32)> {
        // Scores are summed in the terms' byte order, not their ids': a snapshot numbers the
        // terms afresh, and a loaded index must score to the last bit like the one it saved.
        ids.sort_unstable_by(|&a, &b| self.terms.term(a as usize).cmp(self.terms.term(b as usize)));
        ids.dedup();
        ids.retain(|&t| self.df[t as usize] > 0);
        if (k == 0 && include.is_empty()) || ids.is_empty() || self.live_docs == 0 {
            return Vec::new();
        }
        let field_norms = self.field_norms();
        let k1 = self.params.k1;
        let idfs: Vec<f32> = ids.iter().map(|&t| self.idf_of(t)).collect();
        let all_live = self.live_docs == self.keys.len();
        // Internal ids of the live `include` documents, ascending.
        let mut included: Vec<u32> = include
            .iter()
            .filter_map(|key| self.key_to_doc.get(key).copied())
            .filter(|&d| self.is_live(d as usize))
            .collect();
        included.sort_unstable();
        included.dedup();
        let finish = |mut top: Vec<(u64, f32)>, score_of: &dyn Fn(u32) -> f32| {
            if included.is_empty() {
                return top;
            }
            let have: std::collections::HashSet<u64> = top.iter().map(|&(key, _)| key).collect();
            let mut extra: Vec<(u64, f32)> = included
                .iter()
                .map(|&d| (self.keys[d as usize], score_of(d)))
                .filter(|&(key, score)| {
                    score > 0.0 && !have.contains(&key) && filter.is_none_or(|accept| accept(key))
                })
                .collect();
            extra.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            top.extend(extra);
            top
        };

        // Selective queries (rare identifiers, the common case in code search) gather
        // (doc, contribution) pairs and merge them after a stable sort, which keeps each
        // document's sum in term order (identical documents tie exactly) and costs nothing per
        // untouched document. Broad queries (≥ N/16 postings) are pruned with MaxScore, which
        // sums in the same order: on 187k chunks of code it decodes ~40% of the postings, and
        // cut the median broad query from 0.71 to 0.45 ms against a dense accumulator (k = 200;
        // 0.62 to 0.17 ms at k = 10). Norms are computed per posting rather than cached per
        // document: a cache measured ~10% faster on broad queries only, and every change to
        // the index would invalidate it (an O(N) refill before the next query).
        let expected: usize = ids.iter().map(|&t| self.df[t as usize] as usize).sum();
        let strategy = match strategy {
            Strategy::Auto if expected.saturating_mul(16) < self.keys.len() => Strategy::Sparse,
            Strategy::Auto => Strategy::Prune(prune::split_parts(expected)),
            chosen => chosen,
        };
        match strategy {
            Strategy::Sparse | Strategy::Auto => {
                let mut pairs: Vec<(u32, f32)> = Vec::with_capacity(expected);
                for (&t, &idf) in ids.iter().zip(&idfs) {
                    for (doc, tf) in self.postings(t) {
                        let d = doc as usize;
                        if all_live || self.is_live(d) {
                            let lens = &self.lens[d];
                            pairs.push((
                                doc,
                                term_score(idf, k1, tf, |f| field_norms.norm(f, lens[f])),
                            ));
                        }
                    }
                }
                pairs.sort_by_key(|&(doc, _)| doc);
                let mut merged: Vec<(u32, f32)> = Vec::with_capacity(pairs.len());
                for (doc, score) in pairs {
                    match merged.last_mut() {
                        Some((last, sum)) if *last == doc => *sum += score,
                        _ => merged.push((doc, score)),
                    }
                }
                let top = self.top_k(merged.iter().copied(), k, filter);
                finish(top, &|d| {
                    merged
                        .binary_search_by_key(&d, |&(doc, _)| doc)
                        .map_or(0.0, |i| merged[i].1)
                })
            }
            Strategy::Prune(parts) => {
                let top = self.maxscore_top_k(&ids, &idfs, &field_norms, k, filter, parts);
                let scores = self.score_docs(&ids, &idfs, &field_norms, &included);
                finish(top, &|d| {
                    scores
                        .binary_search_by_key(&d, |&(doc, _)| doc)
                        .map_or(0.0, |i| scores[i].1)
                })
            }
        }
    }

    fn top_k(
        &self,
        candidates: impl Iterator<Item = (u32, f32)>,
        k: usize,
        filter: Option<KeyFilter<'_>>,
    ) -> Vec<(u64, f32)> {
        let mut top = TopK::new(k);
        for (doc, score) in candidates {
            top.offer(score, || self.keys[doc as usize], filter);
        }
        top.into_sorted()
    }

    /// Writes a compacted snapshot of the index and `meta` to `path`, atomically: a temporary
    /// file in the same directory is written, fsynced and renamed over `path`, then the
    /// directory is fsynced.
    ///
    /// # Errors
    ///
    /// [`Bm25Error::Io`] if any file operation fails; the temporary file is removed then.
    pub fn save(&self, path: &Path, meta: &[u8]) -> Result<(), Bm25Error> {
        let io_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| Bm25Error::Io { path, source }
        };
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        let Some(name) = path.file_name() else {
            return Err(Bm25Error::Io {
                path: path.to_path_buf(),
                source: io::Error::new(io::ErrorKind::InvalidInput, "not a file path"),
            });
        };
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let tmp = dir.join(format!(
            ".{}.{}.{}.{nanos}.tmp",
            name.to_string_lossy(),
            std::process::id(),
            SAVE_COUNTER.fetch_add(1, AtomicOrdering::Relaxed)
        ));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(io_err(&tmp))?;
        let written = (|| -> io::Result<()> {
            let out = self.write_snapshot(BufWriter::with_capacity(1 << 20, file), meta)?;
            let file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
            file.sync_all()
        })()
        .map_err(io_err(&tmp))
        .and_then(|()| fs::rename(&tmp, path).map_err(io_err(path)));
        if let Err(err) = written {
            // Best effort: the temporary file is garbage either way.
            let _ = fs::remove_file(&tmp);
            return Err(err);
        }
        #[cfg(unix)]
        fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io_err(dir))?;
        Ok(())
    }

    /// The snapshot [`save`](Self::save) writes, in memory: for callers that keep it
    /// elsewhere (a cache file of their own, with more beside it).
    #[must_use]
    pub fn to_snapshot(&self, meta: &[u8]) -> Vec<u8> {
        self.write_snapshot(Vec::new(), meta)
            .expect("writing to a Vec does not fail")
    }

    /// Reads a snapshot made by [`to_snapshot`](Self::to_snapshot) or
    /// [`save`](Self::save); returns the index and the `meta` blob.
    ///
    /// # Errors
    ///
    /// A human-readable reason if it is not a snapshot of this format version, fails its
    /// checksum, or is inconsistent.
    pub fn from_snapshot(data: &[u8]) -> Result<(Bm25Index, Vec<u8>), String> {
        parse_snapshot(data)
    }

    /// Header, compressed body and checksum to `out`; returns `out`.
    fn write_snapshot<W: Write + Send>(&self, out: W, meta: &[u8]) -> io::Result<W> {
        crate::helpers::in_own_pool(|| self.write_snapshot_here(out, meta))
    }

    fn write_snapshot_here<W: Write>(&self, out: W, meta: &[u8]) -> io::Result<W> {
        let mut out = HashingWriter {
            inner: out,
            hasher: Xxh3Default::new(),
        };
        out.write_all(&MAGIC)?;
        out.write_all(&FORMAT_VERSION.to_le_bytes())?;
        let mut frames = FrameWriter::new(&mut out);
        self.write_body(&mut frames, meta)?;
        frames.finish()?;
        let checksum = out.hasher.digest();
        let mut inner = out.inner;
        inner.write_all(&checksum.to_le_bytes())?;
        Ok(inner)
    }

    /// The snapshot's body, before compression.
    fn write_body(&self, out: &mut impl Write, meta: &[u8]) -> io::Result<()> {
        let p = &self.params;
        for v in std::iter::once(p.k1).chain(p.b).chain(p.weight) {
            out.write_all(&v.to_le_bytes())?;
        }

        // Documents: each key as a zigzag delta from the one before (keys of one path are
        // consecutive), then its field lengths, all varints.
        let mut remap = vec![u32::MAX; self.keys.len()];
        let mut buf = Vec::with_capacity(1 << 16);
        #[allow(clippy::cast_possible_truncation)] // fewer than u32::MAX docs
        buf.extend_from_slice(&(self.live_docs as u32).to_le_bytes());
        let mut next = 0u32;
        let mut prev_key = 0u64;
        for (doc, new_id) in remap.iter_mut().enumerate() {
            if !self.is_live(doc) {
                continue;
            }
            *new_id = next;
            next += 1;
            let key = self.keys[doc];
            put_varint(&mut buf, zigzag(key.wrapping_sub(prev_key)));
            prev_key = key;
            for len in self.lens[doc] {
                put_varint(&mut buf, u64::from(len));
            }
            if buf.len() >= 1 << 16 {
                out.write_all(&buf)?;
                buf.clear();
            }
        }

        // The dictionary in byte order, each term as the length of the prefix it shares with
        // the term before and the rest; then every term's postings in the same order. Apart
        // from the postings, sorted and front-coded, serde's 60 KB of term text compress to
        // 16 KB; the snapshot as a whole shrinks by a fifth against insertion order.
        #[allow(clippy::cast_possible_truncation)] // term ids are u32
        let mut order: Vec<u32> = (0..self.df.len() as u32)
            .filter(|&t| self.df[t as usize] > 0)
            .collect();
        order.par_sort_unstable_by(|&a, &b| {
            self.terms.term(a as usize).cmp(self.terms.term(b as usize))
        });
        #[allow(clippy::cast_possible_truncation)] // term ids are u32
        buf.extend_from_slice(&(order.len() as u32).to_le_bytes());
        let mut dictionary = Vec::new();
        let mut prev: &[u8] = &[];
        for &t in &order {
            let term = self.terms.term(t as usize).as_bytes();
            let shared = term.iter().zip(prev).take_while(|(a, b)| a == b).count();
            put_varint(&mut dictionary, shared as u64);
            put_varint(&mut dictionary, (term.len() - shared) as u64);
            dictionary.extend_from_slice(&term[shared..]);
            prev = term;
        }
        buf.extend_from_slice(&(dictionary.len() as u64).to_le_bytes());
        out.write_all(&buf)?;
        buf.clear();
        out.write_all(&dictionary)?;
        drop(dictionary);
        let mut postings = Vec::new();
        for &t in &order {
            postings.clear();
            self.encode_remapped(t, &remap, &mut postings);
            put_varint(&mut buf, u64::from(self.df[t as usize]));
            put_varint(&mut buf, postings.len() as u64);
            buf.extend_from_slice(&postings);
            if buf.len() >= 1 << 16 {
                out.write_all(&buf)?;
                buf.clear();
            }
        }
        out.write_all(&buf)?;
        out.write_all(&(meta.len() as u64).to_le_bytes())?;
        out.write_all(meta)
    }

    /// Reads a snapshot written by [`save`](Self::save); returns the index and the `meta` blob.
    ///
    /// # Errors
    ///
    /// [`Bm25Error::Io`] if the file cannot be read; [`Bm25Error::Corrupt`] if it is not a
    /// snapshot of this format version, fails its checksum, or is inconsistent.
    pub fn load(path: &Path) -> Result<(Bm25Index, Vec<u8>), Bm25Error> {
        let data = fs::read(path).map_err(|source| Bm25Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        parse_snapshot(&data).map_err(|reason| Bm25Error::Corrupt {
            path: path.to_path_buf(),
            reason,
        })
    }
}

const HEADER_BYTES: usize = MAGIC.len() + 4;

/// Parses a whole snapshot file; errors are human-readable reasons.
fn parse_snapshot(data: &[u8]) -> Result<(Bm25Index, Vec<u8>), String> {
    crate::helpers::in_own_pool(|| {
        let body = unpack(&check_envelope(data)?[HEADER_BYTES..])?;
        parse_body(&body)
    })
}

/// Compresses a snapshot body as it is written: frames of [`FRAME_BYTES`] (a few compressed
/// in parallel at a time, so memory stays a few frames whatever the index size), then each
/// frame's compressed length (u32), the body length (u64), the frame size and the frame count
/// (u32 each).
struct FrameWriter<W: Write> {
    out: W,
    /// The frame being filled.
    raw: Vec<u8>,
    /// Full frames waiting to be compressed together.
    full: Vec<Vec<u8>>,
    lens: Vec<u32>,
    total: u64,
}

impl<W: Write> FrameWriter<W> {
    fn new(out: W) -> Self {
        FrameWriter {
            out,
            raw: Vec::with_capacity(FRAME_BYTES),
            full: Vec::new(),
            lens: Vec::new(),
            total: 0,
        }
    }

    fn compress_full(&mut self) -> io::Result<()> {
        let frames = std::mem::take(&mut self.full)
            .into_par_iter()
            .map(|raw| crate::textblob::zstd_compress(&raw))
            .collect::<io::Result<Vec<_>>>()?;
        for frame in frames {
            let len = u32::try_from(frame.len())
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "frame too large"))?;
            self.out.write_all(&frame)?;
            self.lens.push(len);
        }
        Ok(())
    }

    fn finish(mut self) -> io::Result<()> {
        if !self.raw.is_empty() {
            self.full.push(std::mem::take(&mut self.raw));
        }
        self.compress_full()?;
        for len in &self.lens {
            self.out.write_all(&len.to_le_bytes())?;
        }
        self.out.write_all(&self.total.to_le_bytes())?;
        #[allow(clippy::cast_possible_truncation)] // a constant of at most 4 MiB
        self.out.write_all(&(FRAME_BYTES as u32).to_le_bytes())?;
        let count = u32::try_from(self.lens.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "too many frames"))?;
        self.out.write_all(&count.to_le_bytes())
    }
}

impl<W: Write> Write for FrameWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = buf.len().min(FRAME_BYTES - self.raw.len());
        self.raw.extend_from_slice(&buf[..n]);
        self.total += n as u64;
        if self.raw.len() == FRAME_BYTES {
            let next = Vec::with_capacity(FRAME_BYTES);
            self.full.push(std::mem::replace(&mut self.raw, next));
            if self.full.len() >= rayon::current_num_threads() {
                self.compress_full()?;
            }
        }
        Ok(n)
    }

    /// Frames have a fixed size, so a partial one cannot be written early: everything reaches
    /// the output in [`Self::finish`].
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Decompresses what a [`FrameWriter`] wrote, frames in parallel.
fn unpack(data: &[u8]) -> Result<Vec<u8>, String> {
    const TRAILER: usize = 16;
    let Some(trailer_at) = data.len().checked_sub(TRAILER) else {
        return Err(format!("truncated: only {} bytes of frames", data.len()));
    };
    let mut r = Reader {
        buf: data,
        pos: trailer_at,
    };
    let raw_len = usize::try_from(r.u64()?).map_err(|_| "body too large".to_owned())?;
    let frame_bytes = r.u32()? as usize;
    let count = r.u32()? as usize;
    if frame_bytes == 0 || count != raw_len.div_ceil(frame_bytes) {
        return Err(format!(
            "{count} frames of {frame_bytes} bytes cannot hold {raw_len} bytes"
        ));
    }
    if raw_len > data.len().saturating_mul(MAX_EXPANSION) {
        return Err(format!(
            "a body of {raw_len} bytes in {} compressed bytes",
            data.len()
        ));
    }
    let Some(table_at) = count
        .checked_mul(4)
        .and_then(|table| trailer_at.checked_sub(table))
    else {
        return Err(format!("{count} frames do not fit in {} bytes", data.len()));
    };
    let mut table = Reader {
        buf: &data[..trailer_at],
        pos: table_at,
    };
    let mut frames_reader = Reader {
        buf: &data[..table_at],
        pos: 0,
    };
    let mut frames = Vec::with_capacity(count);
    for _ in 0..count {
        frames.push(frames_reader.bytes(table.u32()? as usize)?);
    }
    if frames_reader.remaining() != 0 {
        return Err(format!(
            "{} bytes between the frames and their table",
            frames_reader.remaining()
        ));
    }
    let mut raw = vec![0u8; raw_len];
    raw.par_chunks_mut(frame_bytes)
        .zip(frames.par_iter())
        .enumerate()
        .try_for_each(
            |(i, (out, frame))| match zstd::bulk::decompress_to_buffer(frame, out) {
                Ok(n) if n == out.len() => Ok(()),
                Ok(n) => Err(format!("frame {i} holds {n} bytes, expected {}", out.len())),
                Err(e) => Err(format!("frame {i} is damaged: {e}")),
            },
        )?;
    Ok(raw)
}

/// Parses a snapshot body.
fn parse_body(body: &[u8]) -> Result<(Bm25Index, Vec<u8>), String> {
    let mut r = Reader { buf: body, pos: 0 };
    let mut index = Bm25Index::new(read_params(&mut r)?);
    read_docs(&mut r, &mut index)?;
    read_terms(&mut r, &mut index)?;
    let meta_len = usize::try_from(r.u64()?).map_err(|_| "metadata too large".to_owned())?;
    let meta = r.bytes(meta_len)?.to_vec();
    if r.remaining() != 0 {
        return Err(format!(
            "{} unexpected bytes after the metadata",
            r.remaining()
        ));
    }
    // Forward lists are built on the first removal, if any.
    index.fwd_built = false;
    index.shrink_to_fit();
    Ok((index, meta))
}

/// Checks magic, version and checksum; returns the data before the checksum.
fn check_envelope(data: &[u8]) -> Result<&[u8], String> {
    if data.len() < HEADER_BYTES {
        return Err(format!("truncated: only {} bytes", data.len()));
    }
    if data[..MAGIC.len()] != MAGIC {
        return Err("not a coderecall BM25 index (bad magic bytes)".to_owned());
    }
    let mut r = Reader {
        buf: data,
        pos: MAGIC.len(),
    };
    let version = r.u32()?;
    if version != FORMAT_VERSION {
        return Err(format!(
            "format version {version}, expected {FORMAT_VERSION}"
        ));
    }
    let Some(body_len) = data.len().checked_sub(8).filter(|&len| len >= HEADER_BYTES) else {
        return Err(format!("truncated: only {} bytes", data.len()));
    };
    let (body, checksum) = data.split_at(body_len);
    let mut stored = [0u8; 8];
    stored.copy_from_slice(checksum);
    if xxh3_64(body) != u64::from_le_bytes(stored) {
        return Err("checksum mismatch (truncated or damaged file)".to_owned());
    }
    Ok(body)
}

fn read_params(r: &mut Reader<'_>) -> Result<Bm25Params, String> {
    let k1 = r.f32()?;
    let mut b = [0.0; NUM_FIELDS];
    for v in &mut b {
        *v = r.f32()?;
    }
    let mut weight = [0.0; NUM_FIELDS];
    for v in &mut weight {
        *v = r.f32()?;
    }
    let params = Bm25Params { k1, b, weight };
    if !params.is_valid() {
        return Err(format!("invalid parameters {params:?}"));
    }
    Ok(params)
}

/// Reads the document table into an empty index; all documents are live.
fn read_docs(r: &mut Reader<'_>, index: &mut Bm25Index) -> Result<(), String> {
    let n_docs = r.u32()?;
    if n_docs == u32::MAX {
        return Err("too many documents".to_owned());
    }
    let n = n_docs as usize;
    // A document takes at least one byte per varint.
    if n.saturating_mul(1 + NUM_FIELDS) > r.remaining() {
        return Err(format!("document table of {n_docs} entries is truncated"));
    }
    index.keys.reserve_exact(n);
    index.lens.reserve_exact(n);
    index.key_to_doc.reserve(n);
    let mut key = 0u64;
    for doc in 0..n_docs {
        key = key.wrapping_add(unzigzag(r.varint()?));
        let mut lens = [0u16; NUM_FIELDS];
        for (len, sum) in lens.iter_mut().zip(&mut index.len_sums) {
            *len = u16::try_from(r.varint()?)
                .map_err(|_| format!("field length of document {doc} exceeds u16"))?;
            *sum += u64::from(*len);
        }
        if index.key_to_doc.insert(key, doc).is_some() {
            return Err(format!("duplicate document key {key}"));
        }
        index.keys.push(key);
        index.lens.push(lens);
    }
    index.live = all_live(n);
    index.live_docs = n;
    Ok(())
}

/// Reads the dictionary and postings, checking them against the document table.
fn read_terms(r: &mut Reader<'_>, index: &mut Bm25Index) -> Result<(), String> {
    let n_docs = index.keys.len();
    let n_terms = r.u32()?;
    // Each term takes at least 4 bytes: length, one byte of text, df, postings length.
    if (n_terms as usize).saturating_mul(4) > r.remaining() {
        return Err(format!("dictionary of {n_terms} terms is truncated"));
    }
    if n_terms >= u32::MAX - 1 {
        return Err("too many terms".to_owned());
    }
    let n = n_terms as usize;
    // Bounded by the file size (checked above).
    index.terms = TermTable::with_capacity(n, 0);
    index.df.reserve_exact(n);
    index.last_doc.reserve_exact(n);
    index.base_ends.reserve_exact(n);
    let dictionary_len = usize::try_from(r.u64()?)
        .ok()
        .filter(|&len| len <= r.remaining())
        .ok_or_else(|| "dictionary length exceeds the data".to_owned())?;
    let texts = read_dictionary(r.bytes(dictionary_len)?, n)?;
    // The postings are scanned in order, each term checked in parallel (validating the
    // postings is most of the work of loading), then interned in order.
    let mut entries = Vec::with_capacity(n);
    for term in texts.iter() {
        let df = r.varint()?;
        let postings_len = r.len()?;
        entries.push((term, df, r.bytes(postings_len)?));
    }
    let checked = entries
        .par_iter()
        .enumerate()
        .map(|(t, &(term, df, postings))| {
            let term = std::str::from_utf8(term).map_err(|_| format!("term {t} is not UTF-8"))?;
            if term.is_empty() {
                return Err(format!("term {t} is empty"));
            }
            let (count, last) = validate_postings(postings, n_docs)
                .ok_or_else(|| format!("postings of term {term:?} are invalid"))?;
            if count == 0 || u64::from(count) != df {
                return Err(format!(
                    "term {term:?} has {count} postings but document frequency {df}"
                ));
            }
            Ok((term, count, last, postings))
        })
        .collect::<Result<Vec<_>, String>>()?;
    drop(entries);
    index
        .base
        .reserve_exact(checked.iter().map(|c| c.3.len()).sum());
    for (t, (term, count, last, postings)) in (0..n_terms).zip(checked) {
        if index.terms.intern(term) != t {
            return Err(format!("duplicate term {term:?}"));
        }
        index.df.push(count);
        index.last_doc.push(last);
        index.base.extend_from_slice(postings);
        index.base_ends.push(index.base.len());
    }
    Ok(())
}

/// How many times its front-coded size a dictionary's text may be. A term costs at least three
/// bytes there and the analyzer makes none longer than 64, so a real one stays far below; a
/// damaged one that repeats long prefixes must not grow into a huge allocation.
const MAX_DICTIONARY_EXPANSION: usize = 64;

/// The terms of a front-coded dictionary: `n` of them, strictly ascending.
fn read_dictionary(column: &[u8], n: usize) -> Result<Dictionary, String> {
    let mut r = Reader {
        buf: column,
        pos: 0,
    };
    let mut texts = Dictionary {
        text: Vec::with_capacity(column.len() * 2),
        ends: Vec::with_capacity(n),
    };
    let mut start = 0;
    for t in 0..n {
        let prev = start..texts.text.len();
        let shared = usize::try_from(r.varint()?).unwrap_or(usize::MAX);
        let rest = r.len()?;
        if shared > prev.len() || rest == 0 {
            return Err(format!("term {t} of the dictionary is malformed"));
        }
        let at = texts.text.len();
        texts
            .text
            .extend_from_within(prev.start..prev.start + shared);
        texts.text.extend_from_slice(r.bytes(rest)?);
        if t > 0 && texts.text[prev.clone()] >= texts.text[at..] {
            return Err(format!("term {t} of the dictionary is out of order"));
        }
        if texts.text.len() > column.len().saturating_mul(MAX_DICTIONARY_EXPANSION) {
            return Err(format!("term {t} expands the dictionary past any real one"));
        }
        texts.ends.push(texts.text.len());
        start = at;
    }
    if r.remaining() != 0 {
        return Err(format!(
            "{} unexpected bytes after the dictionary",
            r.remaining()
        ));
    }
    Ok(texts)
}

/// Terms read from a snapshot, one after another.
struct Dictionary {
    text: Vec<u8>,
    ends: Vec<usize>,
}

impl Dictionary {
    fn iter(&self) -> impl Iterator<Item = &[u8]> {
        std::iter::once(0)
            .chain(self.ends.iter().copied())
            .zip(&self.ends)
            .map(|(start, &end)| &self.text[start..end])
    }
}

/// Maps a signed difference (as wrapped `u64`) to small varints for small magnitudes.
fn zigzag(delta: u64) -> u64 {
    #[allow(clippy::cast_possible_wrap, clippy::cast_sign_loss)] // bit reinterpretation
    {
        let d = delta as i64;
        ((d << 1) ^ (d >> 63)) as u64
    }
}

/// The inverse of [`zigzag`].
fn unzigzag(z: u64) -> u64 {
    (z >> 1) ^ (z & 1).wrapping_neg()
}

/// Checks a term's postings read from a file: well-formed, documents strictly ascending and
/// below `n_docs`. Returns the number of postings and the last document.
fn validate_postings(buf: &[u8], n_docs: usize) -> Option<(u32, u32)> {
    let mut pos = 0;
    let mut count = 0u32;
    let mut prev = 0u64;
    while pos < buf.len() {
        let (delta, _) = decode_posting(buf, &mut pos)?;
        if count > 0 && delta == 0 {
            return None;
        }
        prev = prev.checked_add(delta)?;
        if prev >= n_docs as u64 {
            return None;
        }
        count += 1;
    }
    Some((count, u32::try_from(prev).ok()?))
}

/// Bounds-checked little-endian reader over a byte slice.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.buf.len())
            .ok_or_else(|| format!("unexpected end of data at byte {}", self.pos))?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(N)?);
        Ok(out)
    }

    fn u32(&mut self) -> Result<u32, String> {
        self.array().map(u32::from_le_bytes)
    }

    fn u64(&mut self) -> Result<u64, String> {
        self.array().map(u64::from_le_bytes)
    }

    fn f32(&mut self) -> Result<f32, String> {
        self.array().map(f32::from_le_bytes)
    }

    fn varint(&mut self) -> Result<u64, String> {
        get_varint(self.buf, &mut self.pos)
            .ok_or_else(|| format!("bad variable-length integer at byte {}", self.pos))
    }

    /// A varint length that must fit in the remaining data.
    fn len(&mut self) -> Result<usize, String> {
        let v = self.varint()?;
        usize::try_from(v)
            .ok()
            .filter(|&v| v <= self.remaining())
            .ok_or_else(|| format!("length {v} at byte {} exceeds the data", self.pos))
    }
}

/// Appends a LEB128 varint.
#[allow(clippy::cast_possible_truncation)] // deliberate: low 7 bits at a time
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a LEB128 varint at `*pos`; `None` if it is truncated or overflows 64 bits.
#[allow(clippy::inline_always)] // query hot path: ~3% faster than `#[inline]`
#[inline(always)]
pub(crate) fn get_varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let byte = *buf.get(*pos)?;
    if byte < 0x80 {
        *pos += 1;
        return Some(u64::from(byte));
    }
    // Two bytes: document deltas of 8 to 1023 postings.
    if let Some(&next) = buf.get(*pos + 1)
        && next < 0x80
    {
        *pos += 2;
        return Some(u64::from(byte & 0x7f) | u64::from(next) << 7);
    }
    get_long_varint(buf, pos)
}

fn get_long_varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let byte = *buf.get(*pos)?;
        *pos += 1;
        if shift == 63 && byte > 1 {
            return None;
        }
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

/// Appends one posting: `delta << 4 | mask`, then one tf per field in the mask. Mask 0 stands
/// for the most common posting, "body only, tf 1". Every posting has some tf, as analysed
/// documents only list terms that occur.
fn encode_posting(out: &mut Vec<u8>, delta: u32, tf: [u16; NUM_FIELDS]) {
    let head = u64::from(delta) << 4;
    let mut mask = 0u64;
    for (f, &v) in tf.iter().enumerate() {
        if v != 0 {
            mask |= 1 << f;
        }
    }
    if mask == BODY_BIT && tf[Field::Body.index()] == 1 {
        put_varint(out, head);
        return;
    }
    put_varint(out, head | mask);
    for &v in &tf {
        if v != 0 {
            put_varint(out, u64::from(v));
        }
    }
}

/// Reads one posting: the document delta and the per-field tfs.
#[allow(clippy::inline_always)] // query hot path: ~3% faster than `#[inline]`
#[inline(always)]
fn decode_posting(buf: &[u8], pos: &mut usize) -> Option<(u64, [u16; NUM_FIELDS])> {
    let head = get_varint(buf, pos)?;
    let mask = head & 0xf;
    let mut tf = [0u16; NUM_FIELDS];
    if mask == 0 {
        tf[Field::Body.index()] = 1;
    } else {
        for (f, v) in tf.iter_mut().enumerate() {
            if mask & (1 << f) != 0 {
                *v = u16::try_from(get_varint(buf, pos)?)
                    .ok()
                    .filter(|&v| v != 0)?;
            }
        }
    }
    Some((head >> 4, tf))
}

/// Iterates a term's postings: the sealed stream, then its tail (which continues the deltas).
struct PostingIter<'a> {
    cur: &'a [u8],
    next: &'a [u8],
    pos: usize,
    prev: u32,
}

impl Iterator for PostingIter<'_> {
    type Item = (u32, [u16; NUM_FIELDS]);

    #[allow(clippy::inline_always)] // query hot path
    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.cur.len() {
            if self.next.is_empty() {
                return None;
            }
            self.cur = std::mem::take(&mut self.next);
            self.pos = 0;
        }
        let (delta, tf) = decode_posting(self.cur, &mut self.pos)?;
        self.prev = u32::try_from(u64::from(self.prev) + delta).ok()?;
        Some((self.prev, tf))
    }
}

/// One term's share of a document's score, `idf · tf~ / (k1 + tf~)`, with `norm(f)` the
/// document's norm for field `f`. Fields without the term are skipped, so a zero length (whose
/// norm is infinite when `b = 1`) never meets a zero tf.
#[inline]
fn term_score(idf: f32, k1: f32, tf: [u16; NUM_FIELDS], norm: impl Fn(usize) -> f32) -> f32 {
    let mut t = 0.0f32;
    for (f, &tf) in tf.iter().enumerate() {
        if tf != 0 {
            t += f32::from(tf) * norm(f);
        }
    }
    // Zero weights give t = 0; with k1 = 0 the general form would be 0 / 0.
    if t == 0.0 {
        return 0.0;
    }
    idf * t / (k1 + t)
}

/// Per-field constants of BM25F length normalisation: `norm = weight / (c0 + c1 · len)`.
struct FieldNorms {
    weight: [f32; NUM_FIELDS],
    c0: [f32; NUM_FIELDS],
    c1: [f32; NUM_FIELDS],
}

impl FieldNorms {
    #[inline]
    fn norm(&self, f: usize, len: u16) -> f32 {
        self.weight[f] / (self.c0[f] + self.c1[f] * f32::from(len))
    }
}

/// A search hit ordered so that the *worse* hit is the greater: lower score, then higher key.
/// A `BinaryHeap<Hit>` therefore keeps the worst of the current top k on top.
#[derive(Debug, Clone, Copy)]
struct Hit {
    score: f32,
    key: u64,
}

impl Ord for Hit {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then(self.key.cmp(&other.key))
    }
}

impl PartialOrd for Hit {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Hit {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Hit {}

/// The best `k` hits offered so far, the worst on top of the heap.
struct TopK {
    heap: BinaryHeap<Hit>,
    k: usize,
}

impl TopK {
    fn new(k: usize) -> Self {
        TopK {
            heap: BinaryHeap::with_capacity(k.min(1024) + 1),
            k,
        }
    }

    /// Keeps the document if its score makes the top k and `filter` accepts its key. The key
    /// is only read once the score alone cannot rule the document out: it is a random load
    /// from a table as long as the index, and most scored documents never come close.
    /// Returns whether the document was kept.
    #[inline]
    fn offer(
        &mut self,
        score: f32,
        key: impl FnOnce() -> u64,
        filter: Option<KeyFilter<'_>>,
    ) -> bool {
        // A document touched only through zero contributions (zero weights) stays out.
        if score.partial_cmp(&0.0) != Some(Ordering::Greater) || self.k == 0 {
            return false;
        }
        let full = self.heap.len() == self.k;
        if full && self.heap.peek().is_some_and(|worst| score < worst.score) {
            return false;
        }
        let hit = Hit { score, key: key() };
        if full && self.heap.peek().is_some_and(|worst| hit >= *worst) {
            return false;
        }
        if filter.is_some_and(|accept| !accept(hit.key)) {
            return false;
        }
        if full {
            self.heap.pop();
        }
        self.heap.push(hit);
        true
    }

    /// The k-th best score once k documents are kept.
    fn threshold(&self) -> Option<f32> {
        (self.heap.len() == self.k)
            .then(|| self.heap.peek().map(|worst| worst.score))
            .flatten()
    }

    fn into_sorted(self) -> Vec<(u64, f32)> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|hit| (hit.key, hit.score))
            .collect()
    }
}

/// Documents below which [`Bm25Index::extend`] inserts one by one: threads and the final
/// concatenation only pay off for a bulk build.
const PARALLEL_BUILD_MIN_DOCS: usize = if cfg!(test) { 8 } else { 4096 };

/// Each key's internal id (its position), or `None` when a key repeats or the batch is too
/// large for u32 ids: [`Bm25Index::insert`]'s replacement rules then apply one by one.
fn distinct_keys(docs: &[(u64, AnalyzedDoc)]) -> Option<HashMap<u64, u32, BuildIntHasher>> {
    if docs.len() >= u32::MAX as usize {
        return None;
    }
    let mut map = HashMap::with_capacity_and_hasher(docs.len(), BuildIntHasher::default());
    for (id, (key, _)) in (0_u32..).zip(docs) {
        if map.insert(*key, id).is_some() {
            return None;
        }
    }
    Some(map)
}

/// The postings of one hash range of terms over a batch of documents, ids from 0 in batch
/// order: one thread's share of [`Bm25Index::extend`].
struct ShardPostings {
    terms: TermTable,
    base: Vec<u8>,
    base_ends: Vec<usize>,
    df: Vec<u32>,
    last_doc: Vec<u32>,
}

impl ShardPostings {
    fn build(docs: &[(u64, AnalyzedDoc)], shard: usize, shards: usize) -> Self {
        let mut terms = TermTable::with_capacity(docs.len() / shards, 0);
        // A term's postings, last document and document count side by side: one cache miss
        // where three arrays would take three.
        let mut lists: Vec<(Vec<u8>, u32, u32)> = Vec::new();
        for (id, (_, doc)) in (0_u32..).zip(docs) {
            for (term, tf) in doc.terms() {
                let hash = xxh3_64(term.as_bytes());
                // The table's slot comes from the low bits, so the range from the high ones.
                #[allow(clippy::cast_possible_truncation)] // < shards
                if (((hash >> 32) * shards as u64) >> 32) as usize != shard {
                    continue;
                }
                let t = terms.intern_hashed(term, hash) as usize;
                if t == lists.len() {
                    lists.push((Vec::new(), 0, 0));
                }
                let (list, last, df) = &mut lists[t];
                encode_posting(list, id - *last, tf);
                *last = id;
                *df += 1;
            }
        }
        let mut base = Vec::with_capacity(lists.iter().map(|l| l.0.len()).sum());
        let mut base_ends = Vec::with_capacity(lists.len());
        let (mut df, mut last_doc) = (
            Vec::with_capacity(lists.len()),
            Vec::with_capacity(lists.len()),
        );
        for (list, last, count) in lists {
            base.extend_from_slice(&list);
            base_ends.push(base.len());
            last_doc.push(last);
            df.push(count);
        }
        ShardPostings {
            terms,
            base,
            base_ends,
            df,
            last_doc,
        }
    }
}

fn all_live(n: usize) -> Vec<u64> {
    let mut live = vec![u64::MAX; n / 64];
    if !n.is_multiple_of(64) {
        live.push((1 << (n % 64)) - 1);
    }
    live
}

/// Writer that hashes everything written through it.
struct HashingWriter<W> {
    inner: W,
    hasher: Xxh3Default,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Interned strings with dense `u32` ids: all text in one arena, ids found through an
/// open-addressing table (linear probing, load ≤ 3/4). Each slot holds the high 32 bits of the
/// term's xxh3 hash and `id + 1` (0 is empty), so most mismatches are rejected without touching
/// the text.
#[derive(Debug, Clone, Default)]
struct TermTable {
    text: String,
    ends: Vec<usize>,
    slots: Vec<u64>,
}

impl TermTable {
    fn with_capacity(terms: usize, bytes: usize) -> Self {
        let mut table = TermTable {
            text: String::with_capacity(bytes),
            ends: Vec::with_capacity(terms),
            slots: Vec::new(),
        };
        table.resize_slots(Self::slots_for(terms));
        table
    }

    /// Slots for `terms` terms at most three quarters full.
    fn slots_for(terms: usize) -> usize {
        (terms * 4 / 3 + 1).next_power_of_two().max(16)
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    #[inline]
    fn term(&self, id: usize) -> &str {
        let start = if id == 0 { 0 } else { self.ends[id - 1] };
        &self.text[start..self.ends[id]]
    }

    /// `Ok(id)` if `s` is present, else `Err(slot)` with the empty slot where it would go.
    /// The table must have at least one empty slot.
    #[allow(clippy::cast_possible_truncation)] // slot index from the low hash bits
    fn find(&self, s: &str, hash: u64) -> Result<u32, usize> {
        let mask = self.slots.len() - 1;
        let tag = hash >> 32;
        let mut i = hash as usize & mask;
        loop {
            let slot = self.slots[i];
            if slot == 0 {
                return Err(i);
            }
            if slot >> 32 == tag {
                let id = (slot as u32).wrapping_sub(1);
                if self.term(id as usize) == s {
                    return Ok(id);
                }
            }
            i = (i + 1) & mask;
        }
    }

    fn get(&self, s: &str) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        self.find(s, xxh3_64(s.as_bytes())).ok()
    }

    /// The id of `s`, adding it if new (ids are assigned densely from 0).
    fn intern(&mut self, s: &str) -> u32 {
        self.intern_hashed(s, xxh3_64(s.as_bytes()))
    }

    /// [`intern`](Self::intern) with the term's xxh3 hash already computed.
    fn intern_hashed(&mut self, s: &str, hash: u64) -> u32 {
        if (self.len() + 1) * 4 > self.slots.len() * 3 {
            self.resize_slots((self.slots.len() * 2).max(16));
        }
        match self.find(s, hash) {
            Ok(id) => id,
            Err(slot) => {
                let id = u32::try_from(self.len())
                    .ok()
                    .filter(|&id| id < u32::MAX - 1)
                    .expect("a term dictionary holds fewer than 2^32 - 2 terms");
                self.text.push_str(s);
                self.ends.push(self.text.len());
                self.slots[slot] = (hash >> 32) << 32 | (u64::from(id) + 1);
                id
            }
        }
    }

    #[allow(clippy::cast_possible_truncation)] // ids are u32, slot index from the low hash bits
    fn resize_slots(&mut self, n: usize) {
        let mut slots = vec![0u64; n];
        let mask = n - 1;
        for id in 0..self.len() {
            let hash = xxh3_64(self.term(id).as_bytes());
            let mut i = hash as usize & mask;
            while slots[i] != 0 {
                i = (i + 1) & mask;
            }
            slots[i] = (hash >> 32) << 32 | (id as u64 + 1);
        }
        self.slots = slots;
    }

    fn memory_bytes(&self) -> usize {
        self.text.capacity()
            + self.ends.capacity() * std::mem::size_of::<usize>()
            + self.slots.capacity() * 8
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation
)]
mod tests {
    use super::*;
    use crate::analyzer::analyze_to_vec;
    use rand::rngs::StdRng;
    use rand::seq::IndexedRandom;
    use rand::{Rng, SeedableRng};
    use std::collections::{BTreeMap, HashSet};

    /// A raw document as the oracle sees it: the four field texts and their token lists.
    #[derive(Clone, Debug)]
    struct RawDoc {
        text: [String; NUM_FIELDS],
        tokens: [Vec<String>; NUM_FIELDS],
    }

    impl RawDoc {
        fn new(name: &str, symbol_path: &str, path: &str, body: &str) -> Self {
            let text = [name, symbol_path, path, body].map(str::to_owned);
            let tokens = text.clone().map(|t| analyze_to_vec(&t));
            RawDoc { text, tokens }
        }

        fn fields(&self) -> DocFields<'_> {
            DocFields {
                name: &self.text[0],
                symbol_path: &self.text[1],
                path: &self.text[2],
                body: &self.text[3],
            }
        }

        fn analyzed(&self) -> AnalyzedDoc {
            analyze_doc(&self.fields())
        }
    }

    /// Brute-force BM25F straight from the formula, recomputing N, df and the mean field
    /// lengths from the live raw documents. Returns every document with a positive score,
    /// best first (ties by key).
    fn oracle(
        docs: &BTreeMap<u64, RawDoc>,
        query: &[String],
        params: &Bm25Params,
    ) -> Vec<(u64, f64)> {
        if docs.is_empty() {
            return Vec::new();
        }
        let n = docs.len() as f64;
        let mut avg = [0.0f64; NUM_FIELDS];
        for (f, a) in avg.iter_mut().enumerate() {
            let total: usize = docs.values().map(|d| d.tokens[f].len()).sum();
            *a = total as f64 / n;
        }
        let mut unique: Vec<&String> = Vec::new();
        for t in query {
            if !unique.contains(&t) {
                unique.push(t);
            }
        }
        let mut scores: BTreeMap<u64, f64> = BTreeMap::new();
        for t in unique {
            let df = docs
                .values()
                .filter(|d| d.tokens.iter().any(|field| field.contains(t)))
                .count() as f64;
            if df == 0.0 {
                continue;
            }
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for (&key, doc) in docs {
                let mut tfw = 0.0;
                for (f, field) in doc.tokens.iter().enumerate() {
                    let tf = field.iter().filter(|x| *x == t).count() as f64;
                    if tf == 0.0 {
                        continue;
                    }
                    let b = f64::from(params.b[f]);
                    let norm = if avg[f] > 0.0 {
                        1.0 - b + b * field.len() as f64 / avg[f]
                    } else {
                        1.0
                    };
                    tfw += f64::from(params.weight[f]) * tf / norm;
                }
                if tfw > 0.0 {
                    *scores.entry(key).or_default() += idf * tfw / (f64::from(params.k1) + tfw);
                }
            }
        }
        let mut out: Vec<(u64, f64)> = scores.into_iter().filter(|&(_, s)| s > 0.0).collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out
    }

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * a.abs().max(b.abs()).max(1e-9)
    }

    /// Compares one search against the oracle: same length, each returned score within 1e-4 of
    /// the oracle's score for that key and for that rank, and the same key at each rank unless
    /// the two oracle scores are a near tie that f32 rounding may legitimately swap.
    fn check_query(
        index: &Bm25Index,
        docs: &BTreeMap<u64, RawDoc>,
        query: &str,
        k: usize,
        filter: Option<KeyFilter<'_>>,
    ) {
        let terms = analyze_to_vec(query);
        let all = oracle(docs, &terms, index.params());
        let by_key: HashMap<u64, f64> = all.iter().copied().collect();
        let expected: Vec<(u64, f64)> = all
            .iter()
            .copied()
            .filter(|&(key, _)| filter.is_none_or(|f| f(key)))
            .take(k)
            .collect();
        let got = index.search(query, k, filter);
        assert_eq!(
            got,
            index.search_terms(&terms, k, filter),
            "query {query:?}"
        );
        // Both walks of the postings give the same answer, whichever `Auto` picked.
        let ids: Vec<u32> = terms.iter().filter_map(|t| index.terms.get(t)).collect();
        for strategy in [
            Strategy::Sparse,
            Strategy::Prune(1),
            Strategy::Prune(2),
            Strategy::Prune(5),
        ] {
            assert_eq!(
                index.search_ids_including(ids.clone(), k, filter, &[], strategy),
                got,
                "query {query:?} k {k} {strategy:?}"
            );
        }
        assert_eq!(
            got.len(),
            expected.len(),
            "query {query:?} k {k}: got {got:?}, expected {expected:?}"
        );
        for (rank, (&(key, score), &(exp_key, exp_score))) in got.iter().zip(&expected).enumerate()
        {
            let true_score = *by_key
                .get(&key)
                .unwrap_or_else(|| panic!("query {query:?}: key {key} should not match"));
            let score = f64::from(score);
            assert!(
                close(score, true_score, 1e-4),
                "query {query:?}: key {key} scored {score}, oracle {true_score}"
            );
            assert!(
                close(score, exp_score, 1e-4),
                "query {query:?} rank {rank}: score {score}, oracle {exp_score}"
            );
            if key != exp_key {
                assert!(
                    close(true_score, exp_score, 1e-5),
                    "query {query:?} rank {rank}: key {key} ({true_score}) instead of \
                     {exp_key} ({exp_score})"
                );
            }
        }
        // Included keys come after the top k: every matching, accepted one not already in it.
        let include: Vec<u64> = docs.keys().copied().step_by(3).chain([u64::MAX]).collect();
        let with = index.search_terms_including(&terms, k, filter, &include);
        assert_eq!(
            index.search_ids_including(ids.clone(), k, filter, &include, Strategy::Prune(3)),
            with,
            "query {query:?} k {k}: included keys, pruned"
        );
        assert_eq!(
            index.search_ids_including(ids, k, filter, &include, Strategy::Sparse),
            with,
            "query {query:?} k {k}: included keys, sparse"
        );
        assert_eq!(with[..got.len()], got[..], "query {query:?}: top k changed");
        let extra: Vec<u64> = with[got.len()..].iter().map(|h| h.0).collect();
        let mut want: Vec<u64> = include
            .iter()
            .copied()
            .filter(|key| by_key.contains_key(key) && filter.is_none_or(|f| f(*key)))
            .filter(|key| !got.iter().any(|h| h.0 == *key))
            .collect();
        want.sort_unstable();
        let mut extra_sorted = extra.clone();
        extra_sorted.sort_unstable();
        assert_eq!(extra_sorted, want, "query {query:?} k {k}: included keys");
        for pair in with[got.len()..].windows(2) {
            assert!(
                pair[0].1 >= pair[1].1,
                "query {query:?}: included keys out of order"
            );
        }
        for &(key, score) in &with[got.len()..] {
            assert!(
                close(f64::from(score), by_key[&key], 1e-4),
                "key {key} score"
            );
        }
    }

    const BASE_WORDS: &[&str] = &[
        "alpha", "beta", "parse", "args", "http", "server", "get", "set", "user", "name", "config",
        "load", "save", "index", "search", "token", "query", "file", "path", "node", "tree",
        "value", "key", "map", "list", "error", "io", "read", "write", "buf", "len", "x", "id",
        "url", "utf8", "sha256", "init", "self", "new", "data",
    ];

    fn random_vocab(rng: &mut StdRng) -> Vec<String> {
        let size = rng.random_range(50..=200);
        let mut vocab: Vec<String> = Vec::new();
        while vocab.len() < size {
            let parts: Vec<&str> = (0..rng.random_range(1..=3))
                .map(|_| *BASE_WORDS.choose(rng).unwrap())
                .collect();
            let capital = |w: &str| {
                let mut c = w.chars();
                c.next()
                    .map_or(String::new(), |f| f.to_uppercase().chain(c).collect())
            };
            let word = match rng.random_range(0..8) {
                0 => parts.join("_"),
                1 => parts.join("_").to_uppercase(),
                2 => parts.iter().map(|p| capital(p)).collect(),
                3 => {
                    let mut w = parts[0].to_owned();
                    w.extend(parts[1..].iter().map(|p| capital(p)));
                    w
                }
                4 => parts.join("."),
                5 => parts.join("::"),
                6 => parts.join("-"),
                _ => parts[0].to_owned(),
            };
            vocab.push(word);
        }
        vocab
    }

    fn random_text(rng: &mut StdRng, vocab: &[String], words: usize, seps: &[&str]) -> String {
        let mut out = String::new();
        for i in 0..words {
            if i > 0 {
                out.push_str(seps.choose(rng).unwrap());
            }
            out.push_str(vocab.choose(rng).unwrap());
        }
        out
    }

    fn random_doc(rng: &mut StdRng, vocab: &[String]) -> RawDoc {
        let body_words = match rng.random_range(0..10) {
            0 => 0,
            1 => rng.random_range(100..300),
            _ => rng.random_range(1..60),
        };
        let name_words = rng.random_range(0..=2);
        let sp_words = rng.random_range(0..=3);
        let name = random_text(rng, vocab, name_words, &[" "]);
        let symbol_path = random_text(rng, vocab, sp_words, &["::", ".", " "]);
        let path = format!(
            "src/{}/{}.rs",
            vocab.choose(rng).unwrap(),
            vocab.choose(rng).unwrap()
        );
        let body = random_text(
            rng,
            vocab,
            body_words,
            &[" ", "  ", "\n", "(", ") ", ", ", "; ", " = ", ".", "->"],
        );
        RawDoc::new(&name, &symbol_path, &path, &body)
    }

    fn random_query(rng: &mut StdRng, vocab: &[String]) -> String {
        let absent = ["zzyzx", "missingTerm", "nothing_here", "q9"];
        (0..rng.random_range(1..=4))
            .map(|_| {
                if rng.random_bool(0.2) {
                    (*absent.choose(rng).unwrap()).to_owned()
                } else {
                    vocab.choose(rng).unwrap().clone()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn random_params(rng: &mut StdRng) -> Bm25Params {
        let mut pick_b = || match rng.random_range(0..4) {
            0 => 0.0,
            1 => 1.0,
            _ => rng.random_range(0.0..=1.0),
        };
        let b = [pick_b(), pick_b(), pick_b(), pick_b()];
        let mut pick_w = || match rng.random_range(0..5) {
            0 => 0.0,
            _ => rng.random_range(0.1..4.0),
        };
        let weight = [pick_w(), pick_w(), pick_w(), pick_w()];
        Bm25Params {
            k1: rng.random_range(0.3..2.5),
            b,
            weight,
        }
    }

    fn key_of(i: u64) -> u64 {
        i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 3
    }

    fn check_consistency(index: &Bm25Index, docs: &BTreeMap<u64, RawDoc>) {
        assert_eq!(index.len(), docs.len());
        assert_eq!(index.is_empty(), docs.is_empty());
        let keys: HashSet<u64> = index.keys().collect();
        assert_eq!(keys, docs.keys().copied().collect::<HashSet<_>>());
        let mut terms: HashSet<&String> = HashSet::new();
        let mut postings = 0;
        for doc in docs.values() {
            let unique: HashSet<&String> = doc.tokens.iter().flatten().collect();
            postings += unique.len();
            terms.extend(unique);
        }
        let stats = index.stats();
        assert_eq!(
            (stats.docs, stats.terms, stats.postings),
            (docs.len(), terms.len(), postings)
        );
        assert!(stats.dead * COMPACT_DEAD_DIVISOR <= stats.docs + stats.dead);
    }

    /// Random inserts, replacements and removals, checked against the oracle along the way.
    /// Returns how many compactions were observed.
    fn run_random(seed: u64) -> usize {
        let mut rng = StdRng::seed_from_u64(seed);
        let vocab = random_vocab(&mut rng);
        let params = if seed.is_multiple_of(3) {
            Bm25Params::default()
        } else {
            random_params(&mut rng)
        };
        let mut index = Bm25Index::new(params);
        let mut docs: BTreeMap<u64, RawDoc> = BTreeMap::new();
        let key_space = rng.random_range(1..=350u64);
        let ops = rng.random_range(1..=700);
        let mut compactions = 0;
        let mut last_dead = 0;
        for op in 0..ops {
            match rng.random_range(0..10) {
                0..=5 => {
                    let key = key_of(rng.random_range(0..key_space));
                    // Sometimes copy another document, to get exact ties.
                    let doc = match docs.values().next() {
                        Some(d) if rng.random_bool(0.05) => d.clone(),
                        _ => random_doc(&mut rng, &vocab),
                    };
                    index.insert(key, doc.analyzed());
                    docs.insert(key, doc);
                }
                6..=8 => {
                    if let Some(&key) = docs.keys().nth(rng.random_range(0..docs.len().max(1))) {
                        assert!(index.remove(key));
                        docs.remove(&key);
                        assert!(!index.contains(key));
                    }
                }
                _ => {
                    let key = key_of(key_space + rng.random_range(0..10));
                    assert!(!index.remove(key));
                }
            }
            let dead = index.stats().dead;
            if dead < last_dead {
                compactions += 1;
            }
            last_dead = dead;
            if op % 150 == 149 {
                // Continue on a reloaded snapshot (lazy forward lists, renumbered ids).
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("mid.idx");
                index.save(&path, b"").unwrap();
                index = Bm25Index::load(&path).unwrap().0;
                last_dead = 0;
            }
            if op % 25 == 0 || op + 1 == ops {
                check_consistency(&index, &docs);
                for _ in 0..4 {
                    let query = random_query(&mut rng, &vocab);
                    let k = *[1, 3, 10, 1000].choose(&mut rng).unwrap();
                    check_query(&index, &docs, &query, k, None);
                }
                let query = random_query(&mut rng, &vocab);
                let odd = |key: u64| key % 2 == 1;
                check_query(&index, &docs, &query, 5, Some(&odd));
            }
        }
        // Drain most of the index, which forces compactions, and check again.
        let keys: Vec<u64> = docs.keys().copied().collect();
        for key in keys.iter().step_by(3).chain(keys.iter().skip(1).step_by(3)) {
            assert!(index.remove(*key));
            docs.remove(key);
            let dead = index.stats().dead;
            if dead < last_dead {
                compactions += 1;
            }
            last_dead = dead;
        }
        check_consistency(&index, &docs);
        for _ in 0..10 {
            let query = random_query(&mut rng, &vocab);
            check_query(&index, &docs, &query, 20, None);
        }
        index.compact();
        check_consistency(&index, &docs);
        assert_eq!(index.stats().dead, 0);
        for _ in 0..5 {
            let query = random_query(&mut rng, &vocab);
            check_query(&index, &docs, &query, 20, None);
        }
        compactions
    }

    #[test]
    fn matches_oracle_on_random_corpora() {
        let mut compactions = 0;
        for seed in 0..24 {
            compactions += run_random(seed);
        }
        assert!(compactions > 10, "only {compactions} compactions");
    }

    /// The pruned search keeps skip lists and bounds between queries: after every kind of
    /// change (insert, replace, remove, seal, compact, new parameters) it must still agree with
    /// the exhaustive walk, exactly, on queries that warmed its cache just before.
    #[test]
    fn pruned_search_follows_every_change() {
        for seed in 0..10 {
            let mut rng = StdRng::seed_from_u64(seed);
            let vocab = random_vocab(&mut rng);
            let mut index = Bm25Index::new(random_params(&mut rng));
            let queries: Vec<Vec<String>> = (0..6)
                .map(|_| analyze_to_vec(&random_query(&mut rng, &vocab)))
                .collect();
            let mut next_key = 0u64;
            for step in 0..400 {
                match rng.random_range(0..20) {
                    0 if !index.is_empty() => {
                        let keys: Vec<u64> = index.keys().collect();
                        index.remove(*keys.choose(&mut rng).unwrap());
                    }
                    1 if !index.is_empty() => {
                        let keys: Vec<u64> = index.keys().collect();
                        let key = *keys.choose(&mut rng).unwrap();
                        index.insert(key, random_doc(&mut rng, &vocab).analyzed());
                    }
                    2 => index.compact(),
                    3 => index.set_params(random_params(&mut rng)),
                    _ => {
                        index.insert(next_key, random_doc(&mut rng, &vocab).analyzed());
                        next_key += 1;
                    }
                }
                for terms in &queries {
                    let ids: Vec<u32> = terms.iter().filter_map(|t| index.terms.get(t)).collect();
                    let k = 1 + step % 4;
                    let sparse =
                        index.search_ids_including(ids.clone(), k, None, &[], Strategy::Sparse);
                    for parts in [1, 3] {
                        let pruned = index.search_ids_including(
                            ids.clone(),
                            k,
                            None,
                            &[],
                            Strategy::Prune(parts),
                        );
                        assert_eq!(pruned, sparse, "seed {seed} step {step} terms {terms:?}");
                    }
                }
            }
        }
    }

    fn small_index() -> (Bm25Index, BTreeMap<u64, RawDoc>) {
        let mut index = Bm25Index::default();
        let mut docs = BTreeMap::new();
        let raw = [
            (
                10,
                RawDoc::new(
                    "parse_args",
                    "cli::parse_args",
                    "src/cli.rs",
                    "fn parse_args(argv: &[String]) -> Args { Args::default() }",
                ),
            ),
            (
                20,
                RawDoc::new(
                    "HttpServer",
                    "net::HttpServer",
                    "src/net/server.rs",
                    "struct HttpServer { addr: SocketAddr, config: Config }",
                ),
            ),
            (
                30,
                RawDoc::new(
                    "",
                    "",
                    "src/net/server.rs",
                    "let server = HttpServer::new(config); server.run()",
                ),
            ),
            (
                40,
                RawDoc::new(
                    "load_config",
                    "config::load_config",
                    "src/config.rs",
                    "fn load_config(path: &Path) -> io::Result<Config> { read(path) }",
                ),
            ),
            (
                50,
                RawDoc::new(
                    "",
                    "",
                    "README.md",
                    "Run the HTTP server with a config file.",
                ),
            ),
            (
                60,
                RawDoc::new(
                    "",
                    "",
                    "README.md",
                    "Run the HTTP server with a config file.",
                ),
            ),
        ];
        for (key, doc) in raw {
            index.insert(key, doc.analyzed());
            docs.insert(key, doc);
        }
        (index, docs)
    }

    #[test]
    fn analyze_doc_counts_terms_and_lengths() {
        let doc = analyze_doc(&DocFields {
            name: "parseArgs",
            symbol_path: "",
            path: "src/cli.rs",
            body: "parse parse args",
        });
        // Stems count as tokens: parseargs parsearg parse pars args arg.
        assert_eq!(doc.field_len(Field::Name), 6);
        assert_eq!(doc.field_len(Field::SymbolPath), 0);
        assert_eq!(doc.field_len(Field::Path), 4);
        assert_eq!(doc.field_len(Field::Body), 6);
        let terms: HashMap<&str, [u16; NUM_FIELDS]> = doc.terms().collect();
        assert_eq!(doc.unique_terms(), terms.len());
        assert_eq!(terms["parse"], [1, 0, 0, 2]);
        assert_eq!(terms["pars"], [1, 0, 0, 2]);
        assert_eq!(terms["args"], [1, 0, 0, 1]);
        assert_eq!(terms["arg"], [1, 0, 0, 1]);
        assert_eq!(terms["parseargs"], [1, 0, 0, 0]);
        assert_eq!(terms["parsearg"], [1, 0, 0, 0]);
        assert_eq!(terms["cli.rs"], [0, 0, 1, 0]);
    }

    #[test]
    fn analyze_docs_keeps_order_on_the_pool_and_off_it() {
        let bodies: Vec<String> = (0..200)
            .map(|i| format!("note {i} about kiln{} firing", i % 7))
            .collect();
        let fields: Vec<DocFields<'_>> = bodies
            .iter()
            .map(|body| DocFields {
                name: "",
                symbol_path: "decision",
                path: "",
                body,
            })
            .collect();
        for count in [0, 3, fields.len()] {
            let batch = analyze_docs(&fields[..count]);
            assert_eq!(batch.len(), count);
            for (doc, field) in batch.iter().zip(&fields) {
                let one = analyze_doc(field);
                assert_eq!(
                    doc.terms().collect::<Vec<_>>(),
                    one.terms().collect::<Vec<_>>()
                );
                assert_eq!(doc.lens, one.lens);
            }
        }
    }

    #[test]
    fn definitions_rank_first_and_identical_docs_tie_by_key() {
        let (index, docs) = small_index();
        let hits = index.search("HttpServer", 10, None);
        assert_eq!(hits[0].0, 20, "{hits:?}");
        let hits = index.search("parse args", 10, None);
        assert_eq!(hits[0].0, 10);
        let hits: HashSet<u64> = index.search("run", 10, None).iter().map(|h| h.0).collect();
        assert_eq!(hits, HashSet::from([30, 50, 60]));
        let readme: Vec<_> = index.search("README", 10, None);
        assert_eq!(readme.len(), 2);
        assert_eq!(readme[0].1.to_bits(), readme[1].1.to_bits());
        assert_eq!((readme[0].0, readme[1].0), (50, 60));
        for q in ["HttpServer", "config file", "server.rs", "io::Result", "x"] {
            check_query(&index, &docs, q, 10, None);
        }
    }

    #[test]
    fn idf_weighs_rarer_terms_more_and_unknown_ones_not_at_all() {
        let (index, _) = small_index();
        // `run` is in three documents, `readme` in two.
        assert!(index.idf("readme") > index.idf("run"));
        assert!(index.idf("run") > 0.0);
        assert_eq!(index.idf("no-such-term"), 0.0);
    }

    #[test]
    fn filters_k_and_empty_cases() {
        let (mut index, docs) = small_index();
        // k larger than N, and k = 0.
        let all = index.search("config server", 1000, None);
        assert_eq!(
            all.len(),
            oracle(&docs, &analyze_to_vec("config server"), index.params()).len()
        );
        assert!(index.search("config server", 0, None).is_empty());
        // Filter before ranking: the top results among the accepted keys.
        let only = |key: u64| key == 40 || key == 60;
        let hits = index.search("config server", 1, Some(&only));
        assert_eq!(hits.len(), 1);
        assert!(only(hits[0].0));
        check_query(&index, &docs, "config server", 1, Some(&only));
        let none = |_: u64| false;
        assert!(index.search("config", 10, Some(&none)).is_empty());
        // Empty and unknown queries.
        assert!(index.search("", 10, None).is_empty());
        assert!(index.search("  ;; ", 10, None).is_empty());
        assert!(index.search("zzyzx", 10, None).is_empty());
        assert!(index.search_terms(&[], 10, None).is_empty());
        // Duplicated query terms count once.
        assert_eq!(
            index.search("config", 10, None),
            index.search("config config", 10, None)
        );
        // Replacement and removal.
        assert_eq!(index.len(), 6);
        index.insert(
            40,
            RawDoc::new("", "", "a.txt", "nothing relevant").analyzed(),
        );
        assert_eq!(index.len(), 6);
        assert!(
            !index
                .search("load_config", 10, None)
                .iter()
                .any(|h| h.0 == 40)
        );
        assert!(index.remove(40));
        assert!(!index.remove(40));
        assert!(!index.contains(40));
        // An empty document counts in N but never matches.
        index.insert(70, RawDoc::new("", "", "", "").analyzed());
        assert!(index.contains(70));
        assert!(!index.search("config", 10, None).iter().any(|h| h.0 == 70));
        // Empty index.
        let empty = Bm25Index::default();
        assert!(empty.is_empty());
        assert!(empty.search("config", 10, None).is_empty());
        assert_eq!(empty.stats(), Bm25Stats::default());
        assert_eq!(empty.keys().count(), 0);
        // Removing everything leaves a working empty index.
        for key in index.keys().collect::<Vec<_>>() {
            assert!(index.remove(key));
        }
        assert!(index.is_empty());
        assert_eq!(index.stats(), Bm25Stats::default());
        assert!(index.search("config", 10, None).is_empty());
        index.insert(1, RawDoc::new("config", "", "", "").analyzed());
        assert_eq!(index.search("config", 10, None).len(), 1);
    }

    #[test]
    fn set_params_changes_scores() {
        let (mut index, docs) = small_index();
        let mut params = Bm25Params {
            weight: [0.0, 0.0, 0.0, 1.0],
            ..Bm25Params::default()
        };
        index.set_params(params);
        assert!(!index.search("parse_args", 10, None).is_empty());
        check_query(&index, &docs, "parse_args HttpServer", 10, None);
        assert!(Bm25Params::default().is_valid());
        params.b[0] = 1.5;
        assert!(!params.is_valid());
    }

    fn random_index(seed: u64, ops: usize) -> (Bm25Index, BTreeMap<u64, RawDoc>, Vec<String>) {
        let mut rng = StdRng::seed_from_u64(seed);
        let vocab = random_vocab(&mut rng);
        let mut index = Bm25Index::new(random_params(&mut rng));
        let mut docs = BTreeMap::new();
        for _ in 0..ops {
            let key = key_of(rng.random_range(0..200));
            if rng.random_bool(0.25) {
                index.remove(key);
                docs.remove(&key);
            } else {
                let doc = random_doc(&mut rng, &vocab);
                index.insert(key, doc.analyzed());
                docs.insert(key, doc);
            }
        }
        (index, docs, vocab)
    }

    #[test]
    fn save_load_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bm25.idx");
        for seed in 0..6 {
            let (mut index, mut docs, vocab) = random_index(100 + seed, 400);
            let meta = format!("meta for seed {seed}").into_bytes();
            index.save(&path, &meta).unwrap();
            let (mut loaded, loaded_meta) = Bm25Index::load(&path).unwrap();
            assert_eq!(loaded_meta, meta);
            assert_eq!(loaded.params(), index.params());
            let (a, b) = (index.stats(), loaded.stats());
            assert_eq!((a.docs, a.terms, a.postings), (b.docs, b.terms, b.postings));
            assert_eq!(b.dead, 0);
            assert_eq!(
                loaded.keys().collect::<HashSet<_>>(),
                index.keys().collect::<HashSet<_>>()
            );
            let mut rng = StdRng::seed_from_u64(seed);
            for _ in 0..40 {
                let query = random_query(&mut rng, &vocab);
                assert_eq!(
                    index.search(&query, 15, None),
                    loaded.search(&query, 15, None)
                );
            }
            // The loaded index keeps working incrementally.
            for i in 0..60u64 {
                let key = key_of(i * 7 % 250);
                if i % 3 == 0 {
                    assert_eq!(loaded.remove(key), docs.remove(&key).is_some());
                } else {
                    let doc = random_doc(&mut rng, &vocab);
                    loaded.insert(key, doc.analyzed());
                    index.insert(key, doc.analyzed());
                    docs.insert(key, doc);
                }
            }
            check_consistency(&loaded, &docs);
            for _ in 0..20 {
                let query = random_query(&mut rng, &vocab);
                check_query(&loaded, &docs, &query, 10, None);
            }
        }
        // Only the published file remains: no temporary files.
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("bm25.idx")]);
        // Empty index, empty meta.
        Bm25Index::default().save(&path, &[]).unwrap();
        let (empty, meta) = Bm25Index::load(&path).unwrap();
        assert!(empty.is_empty() && meta.is_empty());
        assert!(empty.search("x", 5, None).is_empty());
        // Missing file and missing directory.
        let missing = dir.path().join("nope.idx");
        assert!(matches!(
            Bm25Index::load(&missing),
            Err(Bm25Error::Io { .. })
        ));
        let bad_dir = dir.path().join("no/such/dir/x.idx");
        assert!(matches!(
            Bm25Index::default().save(&bad_dir, &[]),
            Err(Bm25Error::Io { .. })
        ));
    }

    #[test]
    fn a_parallel_bulk_build_scores_like_inserts_one_by_one() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        for seed in 0..4 {
            let mut rng = StdRng::seed_from_u64(900 + seed);
            let vocab = random_vocab(&mut rng);
            let params = random_params(&mut rng);
            let mut docs = BTreeMap::new();
            let mut batch = Vec::new();
            for i in 0..rng.random_range(40..300) {
                let doc = random_doc(&mut rng, &vocab);
                batch.push((key_of(i), doc.analyzed()));
                docs.insert(key_of(i), doc);
            }
            let mut one_by_one = Bm25Index::new(params);
            for (key, doc) in batch.clone() {
                one_by_one.insert(key, doc);
            }
            let mut bulk = Bm25Index::new(params);
            pool.install(|| bulk.extend(batch));
            assert!(
                !bulk.fwd_built,
                "seed {seed}: the parallel path should have run"
            );
            check_consistency(&bulk, &docs);
            for _ in 0..12 {
                let query = random_query(&mut rng, &vocab);
                check_query(&bulk, &docs, &query, 10, None);
                check_same_ranking(&bulk, &one_by_one, &query);
            }
            // A second batch of new keys appended as `extend` does into a built index (called
            // directly, so that this cannot pass through the one-by-one path).
            let mut second = Vec::new();
            for i in 0..rng.random_range(40..200) {
                let doc = random_doc(&mut rng, &vocab);
                one_by_one.insert(key_of(1000 + i), doc.analyzed());
                second.push((key_of(1000 + i), doc.analyzed()));
                docs.insert(key_of(1000 + i), doc);
            }
            let shards: Vec<ShardPostings> = (0..3)
                .map(|shard| ShardPostings::build(&second, shard, 3))
                .collect();
            bulk.append(&shards, second);
            assert!(!bulk.fwd_built);
            check_consistency(&bulk, &docs);
            for _ in 0..8 {
                let query = random_query(&mut rng, &vocab);
                check_query(&bulk, &docs, &query, 10, None);
                check_same_ranking(&bulk, &one_by_one, &query);
            }
            // Changes after the build (forward lists built on the first removal), and a
            // batch into an index that is no longer empty, one by one.
            let keys: Vec<u64> = docs.keys().copied().step_by(4).collect();
            for key in keys {
                assert!(bulk.remove(key));
                docs.remove(&key);
            }
            let mut more = Vec::new();
            for i in 0..20 {
                let key = key_of(rng.random_range(0..400));
                let doc = random_doc(&mut rng, &vocab);
                if i % 2 == 0 {
                    bulk.insert(key, doc.analyzed());
                } else {
                    more.push((key, doc.analyzed()));
                }
                docs.insert(key, doc);
            }
            pool.install(|| bulk.extend(more));
            check_consistency(&bulk, &docs);
            let path = dir.path().join(format!("bulk-{seed}.idx"));
            bulk.save(&path, b"").unwrap();
            let loaded = Bm25Index::load(&path).unwrap().0;
            for _ in 0..8 {
                let query = random_query(&mut rng, &vocab);
                check_query(&bulk, &docs, &query, 10, None);
                check_query(&loaded, &docs, &query, 10, None);
            }
        }
    }

    /// `a` and `b`, built from the same documents in other ways, rank `query` alike. Term ids
    /// differ between the builds, so a score's terms may add up in another order: the same
    /// ranking, to f32 rounding.
    fn check_same_ranking(a: &Bm25Index, b: &Bm25Index, query: &str) {
        let (a, b) = (a.search(query, 1000, None), b.search(query, 1000, None));
        assert_eq!(a.len(), b.len(), "query {query:?}");
        for ((ka, sa), (kb, sb)) in a.into_iter().zip(b) {
            let (sa, sb) = (f64::from(sa), f64::from(sb));
            assert!(close(sa, sb, 1e-5), "query {query:?}: {sa} and {sb}");
            assert!(
                ka == kb || close(sa, sb, 1e-6),
                "query {query:?}: {ka} and {kb}"
            );
        }
    }

    #[test]
    fn a_bulk_batch_with_a_repeated_key_keeps_the_last_document() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let mut rng = StdRng::seed_from_u64(77);
        let vocab = random_vocab(&mut rng);
        let mut docs = BTreeMap::new();
        let mut batch = Vec::new();
        for i in 0..60 {
            let key = key_of(i % 50);
            let doc = random_doc(&mut rng, &vocab);
            batch.push((key, doc.analyzed()));
            docs.insert(key, doc);
        }
        let mut index = Bm25Index::default();
        pool.install(|| index.extend(batch));
        check_consistency(&index, &docs);
        for _ in 0..8 {
            let query = random_query(&mut rng, &vocab);
            check_query(&index, &docs, &query, 10, None);
        }
    }

    fn snapshot_bytes(index: &Bm25Index, meta: &[u8]) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.idx");
        index.save(&path, meta).unwrap();
        fs::read(&path).unwrap()
    }

    fn with_checksum(mut body: Vec<u8>) -> Vec<u8> {
        let sum = xxh3_64(&body);
        body.extend_from_slice(&sum.to_le_bytes());
        body
    }

    #[test]
    fn rejects_truncated_and_damaged_files() {
        let (index, _, _) = random_index(7, 40);
        let bytes = snapshot_bytes(&index, b"meta");
        assert!(parse_snapshot(&bytes).is_ok());
        for len in 0..bytes.len() {
            assert!(parse_snapshot(&bytes[..len]).is_err(), "truncated to {len}");
        }
        let mut rng = StdRng::seed_from_u64(1);
        for _ in 0..3000 {
            let mut damaged = bytes.clone();
            for _ in 0..rng.random_range(1..=3) {
                let at = rng.random_range(0..damaged.len());
                damaged[at] ^= rng.random_range(1..=255u8);
            }
            assert!(parse_snapshot(&damaged).is_err());
        }
        // Through the file system too, with the reason and path in the error.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.idx");
        fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        let err = Bm25Index::load(&path).unwrap_err();
        assert!(
            matches!(&err, Bm25Error::Corrupt { path: p, .. } if *p == path),
            "{err}"
        );
        assert!(err.to_string().contains("checksum"), "{err}");
    }

    #[test]
    fn rejects_other_versions_and_magic() {
        let bytes = snapshot_bytes(&small_index().0, b"");
        let mut v2 = bytes.clone();
        v2[8..12].copy_from_slice(&2u32.to_le_bytes());
        let reason = parse_snapshot(&v2).unwrap_err();
        assert_eq!(
            reason,
            format!("format version 2, expected {FORMAT_VERSION}")
        );
        let mut magic = bytes;
        magic[0] = b'X';
        assert!(parse_snapshot(&magic).unwrap_err().contains("magic"));
        assert!(parse_snapshot(b"").unwrap_err().contains("truncated"));
    }

    /// One of four kinds of damage at a random place from `from` on.
    fn damage(rng: &mut StdRng, bytes: &[u8], from: usize, kind: usize) -> Vec<u8> {
        let mut damaged = bytes.to_vec();
        let at = rng.random_range(from..damaged.len());
        match kind % 4 {
            0 => damaged[at] ^= rng.random_range(1..=255u8),
            1 => damaged.insert(at, rng.random()),
            2 => {
                damaged.remove(at);
            }
            _ => {
                let end = (at + rng.random_range(1..6)).min(damaged.len());
                damaged[at..end].fill(0xff);
            }
        }
        damaged
    }

    /// Damaged compressed frames behind a *valid* checksum are refused, never a panic.
    #[test]
    fn damaged_frames_with_valid_checksum_are_refused() {
        let (index, _, _) = random_index(9, 60);
        let bytes = snapshot_bytes(&index, b"m");
        let packed = &bytes[..bytes.len() - 8];
        let frames = u32::from_le_bytes(packed[packed.len() - 4..].try_into().unwrap());
        assert!(
            frames > 2,
            "{frames} frames: the test should cross frame boundaries"
        );
        let mut rng = StdRng::seed_from_u64(3);
        let refused = (0..2000)
            .filter(|&i| {
                let damaged = damage(&mut rng, packed, HEADER_BYTES, i);
                parse_snapshot(&with_checksum(damaged)).is_err()
            })
            .count();
        // Frames carry no checksum of their own, so a flipped literal can decompress to other
        // bytes that still parse; zstd, the frame table and the body's checks catch the rest.
        assert!(
            refused >= 1800,
            "only {refused} of 2000 damaged snapshots refused"
        );
        // A size that the frames cannot hold is named as such.
        let mut wrong = packed.to_vec();
        let at = wrong.len() - 16;
        wrong[at..at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
        let reason = parse_snapshot(&with_checksum(wrong)).unwrap_err();
        assert!(reason.contains("cannot hold"), "{reason}");
    }

    /// Damaged bodies (after decompression) must still never panic, and whatever loads must
    /// stay usable.
    #[test]
    fn garbage_bodies_never_panic() {
        let (index, _, vocab) = random_index(9, 60);
        let mut body = Vec::new();
        index.write_body(&mut body, b"m").unwrap();
        let mut rng = StdRng::seed_from_u64(2);
        let mut loaded_ok = 0;
        for i in 0..4000 {
            let damaged = damage(&mut rng, &body, 0, i);
            if let Ok((mut index, _)) = parse_body(&damaged) {
                loaded_ok += 1;
                for _ in 0..3 {
                    let _ = index.search(&random_query(&mut rng, &vocab), 5, None);
                }
                let _ = index.stats();
                let first = index.keys().next();
                if let Some(key) = first {
                    index.remove(key);
                }
                index.insert(
                    u64::MAX,
                    analyze_doc(&DocFields {
                        body: "alpha beta",
                        ..DocFields::default()
                    }),
                );
                let _ = index.search("alpha", 5, None);
            }
        }
        // Some mutations (a key, a length, a tf) still give a well-formed file.
        assert!(loaded_ok > 0);
    }

    #[test]
    fn a_dictionary_that_expands_without_bound_is_refused() {
        // A 200-byte term, then terms that each repeat all of the one before plus a byte.
        let mut column = Vec::new();
        put_varint(&mut column, 0);
        put_varint(&mut column, 200);
        column.extend_from_slice(&[b'a'; 200]);
        for len in 200..10_200 {
            put_varint(&mut column, len);
            put_varint(&mut column, 1);
            column.push(b'b');
        }
        let reason = read_dictionary(&column, 10_001).err().unwrap();
        assert!(reason.contains("past any real one"), "{reason}");
        // The real dictionary of a random index reads back.
        let (index, _, _) = random_index(5, 300);
        let bytes = snapshot_bytes(&index, b"");
        assert!(parse_snapshot(&bytes).is_ok());
    }

    #[test]
    fn a_field_length_past_u16_is_refused() {
        let mut index = Bm25Index::default();
        index.insert(0, RawDoc::new("", "", "", &"x ".repeat(70_000)).analyzed());
        let mut body = Vec::new();
        index.write_body(&mut body, b"").unwrap();
        // The parameters (k1, then b and the weight of each field), the document count, then
        // the document: its key delta and its field lengths, as varints.
        let at = 4 * (1 + 2 * NUM_FIELDS) + 4 + 1 + Field::Body.index();
        let mut saturated = Vec::new();
        put_varint(&mut saturated, u64::from(u16::MAX));
        assert_eq!(body[at..at + saturated.len()], saturated);
        let mut longer = Vec::new();
        put_varint(&mut longer, 70_000);
        body.splice(at..at + saturated.len(), longer);
        let reason = parse_body(&body).unwrap_err();
        assert!(reason.contains("exceeds u16"), "{reason}");
    }

    #[test]
    fn tf_saturates_and_large_gaps_round_trip() {
        let big = "x ".repeat(70_000);
        let doc = RawDoc::new("", "", "", &big);
        let analyzed = doc.analyzed();
        // Field lengths saturate as tfs do.
        assert_eq!(analyzed.field_len(Field::Body), u32::from(u16::MAX));
        assert_eq!(analyzed.terms().next(), Some(("x", [0, 0, 0, u16::MAX])));
        let mut index = Bm25Index::default();
        index.insert(0, analyzed);
        // Thousands of documents between two postings of `rare`: multi-byte deltas.
        for i in 1..5000u64 {
            let body = if i == 4999 { "rare x" } else { "common" };
            index.insert(i, RawDoc::new("", "", "", body).analyzed());
        }
        index.insert(7, RawDoc::new("rare", "", "", "").analyzed());
        // (Doc 7 ranks second: almost every document has an empty name, so the mean name length
        // is tiny and b_name normalises its one-token name heavily. That is the formula.)
        let hits = index.search("rare", 10, None);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![4999, 7]);
        let x_hits = index.search("x", 10, None);
        assert_eq!(x_hits.len(), 2);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.idx");
        index.save(&path, b"").unwrap();
        let (loaded, _) = Bm25Index::load(&path).unwrap();
        assert_eq!(loaded.search("rare", 10, None), hits);
        assert_eq!(loaded.search("x", 10, None), x_hits);
        let (a, b) = (loaded.stats(), index.stats());
        assert_eq!((a.docs, a.terms, a.postings), (b.docs, b.terms, b.postings));
    }

    #[test]
    fn index_is_send_and_sync() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Bm25Index>();
        send_sync::<AnalyzedDoc>();
        send_sync::<Bm25Error>();
    }

    #[test]
    fn varints_round_trip_and_reject_overflow() {
        let mut buf = Vec::new();
        let values = [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX];
        for v in values {
            put_varint(&mut buf, v);
        }
        let mut pos = 0;
        for v in values {
            assert_eq!(get_varint(&buf, &mut pos), Some(v));
        }
        assert_eq!(get_varint(&buf, &mut pos), None);
        let mut pos = 0;
        assert_eq!(get_varint(&[0xff; 11], &mut pos), None);
        let mut pos = 0;
        assert_eq!(get_varint(&[0x80, 0x80], &mut pos), None);
    }

    #[test]
    fn term_table_interns_densely() {
        let mut table = TermTable::default();
        assert_eq!(table.get("a"), None);
        for i in 0..1000 {
            assert_eq!(table.intern(&format!("t{i}")), i);
        }
        for i in 0..1000u32 {
            assert_eq!(table.intern(&format!("t{i}")), i);
            assert_eq!(table.get(&format!("t{i}")), Some(i));
            assert_eq!(table.term(i as usize), format!("t{i}"));
        }
        assert_eq!(table.get("t1000"), None);
    }

    #[test]
    fn memory_estimate_is_plausible() {
        let (mut index, _, _) = random_index(3, 300);
        let before = index.memory_bytes();
        assert!(before > 0);
        index.compact();
        assert!(index.memory_bytes() > 0);
    }
}

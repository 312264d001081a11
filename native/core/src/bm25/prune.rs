//! Dynamic pruning for broad queries: MaxScore over posting lists with block skips.
//!
//! A broad query (common words, the usual natural-language query) touches a good share of all
//! postings, yet only its top k matter. Each term gets an upper bound `ub` on what it can add
//! to a score. Terms are ordered by bound; once the k-th best score θ exceeds the sum of the
//! smallest bounds, those terms are *non-essential*: a document containing only them cannot
//! enter the top k. Documents are then visited only from the essential terms' postings, and
//! the non-essential lists are probed for each one, skipping whole blocks of postings, and only
//! while the document could still reach θ (Turtle and Flood's MaxScore, document at a time).
//!
//! The answer is the exhaustive one: each document's score is summed in term order as the
//! accumulators do, and a document is only dropped when its bound is strictly below θ, so ties
//! resolve by key exactly as before (checked against the oracle in the parent's tests).
//!
//! Bounds depend on the length norms, which move with every change to the index, so a term's
//! blocks and bounds are computed on its first use in a query and kept until the index changes
//! ([`SkipCache`]). Building them costs one pass over the term's postings, the price of one
//! exhaustive query.
//!
//! A broad query's documents are also walked by more than one thread when a core is idle: the
//! internal ids are cut into ranges that the thread asking and the query helpers take in turn.
//! θ is shared: a walker's k-th best score, and the least of the walkers' `⌈k / walkers⌉`-th
//! best (together they hold k documents at least that good), both bound the index's k-th
//! best from below, so each walker prunes almost as well as one walk over everything would.
//! Each walker keeps its own top k; the answer is the top k of theirs, the same as a single
//! walk's to the last bit.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex, PoisonError};

use super::{Bm25Index, FieldNorms, KeyFilter, NUM_FIELDS, TopK, decode_posting};
use crate::hash::IntMap;
use crate::helpers;

/// Postings per block: the unit skipped without decoding (tiny in tests so skips happen).
const BLOCK: usize = if cfg!(test) { 3 } else { 64 };

/// Bounds are inflated by this factor, so that f32 rounding (scores and bounds are summed in
/// different orders) can never make a bound smaller than the score it bounds.
const SLACK: f32 = 1.0 + 1e-4;

#[derive(Debug, Clone, Copy)]
struct Block {
    /// Internal id of the block's last posting.
    last_doc: u32,
    /// Offset just past the block in the term's sealed stream.
    end: usize,
    /// The largest `tf~` in the block.
    max_tf: f32,
}

/// A term's blocks over its sealed postings, and the largest `tf~` of any of its postings.
#[derive(Debug)]
struct TermSkips {
    blocks: Box<[Block]>,
    max_tf: f32,
    /// The largest `tf~` among the unsealed postings.
    tail_max_tf: f32,
}

/// Per-term skips and bounds, valid until the index changes.
#[derive(Debug, Default)]
pub(super) struct SkipCache(Mutex<IntMap<u32, Arc<TermSkips>>>);

impl Clone for SkipCache {
    fn clone(&self) -> Self {
        SkipCache::default()
    }
}

impl SkipCache {
    /// Forgets every bound: called by each change to documents, norms or the arena.
    pub(super) fn invalidate(&mut self) {
        self.0
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// Entries cached, for memory accounting.
    pub(super) fn bytes(&self) -> usize {
        let map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        map.values()
            .map(|s| size_of::<TermSkips>() + s.blocks.len() * size_of::<Block>() + 32)
            .sum()
    }
}

/// The most a term can add to a score where its `tf~` is at most `max_tf`, with slack.
fn bound(idf: f32, k1: f32, max_tf: f32) -> f32 {
    if max_tf > 0.0 {
        idf * max_tf / (k1 + max_tf) * SLACK
    } else {
        0.0
    }
}

/// `Σ_f tf_f · norm_f(d)`: the part of a term's score that depends on the document.
#[inline]
fn tf_weight(norms: &FieldNorms, tf: [u16; NUM_FIELDS], lens: &[u16; NUM_FIELDS]) -> f32 {
    let mut t = 0.0f32;
    for (f, &tf) in tf.iter().enumerate() {
        if tf != 0 {
            t += f32::from(tf) * norms.norm(f, lens[f]);
        }
    }
    t
}

impl Bm25Index {
    fn term_skips(&self, t: u32, norms: &FieldNorms) -> Arc<TermSkips> {
        if let Some(skips) = self
            .skips
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&t)
        {
            return Arc::clone(skips);
        }
        let (arena, tail) = self.streams(t);
        let mut blocks = Vec::with_capacity(self.df[t as usize] as usize / BLOCK + 1);
        let weight = |doc: u32, tf| {
            self.lens
                .get(doc as usize)
                .map_or(0.0, |lens| tf_weight(norms, tf, lens))
        };
        let (mut pos, mut prev, mut count, mut block_max) = (0, 0u32, 0, 0.0f32);
        while pos < arena.len() {
            let Some((delta, tf)) = decode_posting(arena, &mut pos) else {
                break;
            };
            prev = prev.saturating_add(u32::try_from(delta).unwrap_or(u32::MAX));
            block_max = block_max.max(weight(prev, tf));
            count += 1;
            if count == BLOCK || pos >= arena.len() {
                blocks.push(Block {
                    last_doc: prev,
                    end: pos,
                    max_tf: block_max,
                });
                (count, block_max) = (0, 0.0);
            }
        }
        let (mut tail_pos, mut tail_max_tf) = (0, 0.0f32);
        while let Some((delta, tf)) = decode_posting(tail, &mut tail_pos) {
            prev = prev.saturating_add(u32::try_from(delta).unwrap_or(u32::MAX));
            tail_max_tf = tail_max_tf.max(weight(prev, tf));
        }
        let max_tf = blocks.iter().fold(tail_max_tf, |m, b| m.max(b.max_tf));
        let skips = Arc::new(TermSkips {
            blocks: blocks.into_boxed_slice(),
            max_tf,
            tail_max_tf,
        });
        self.skips
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(t, Arc::clone(&skips));
        skips
    }

    /// The exact top `k` of the terms `ids` (sorted, distinct, each with live documents),
    /// visiting as few postings as MaxScore allows. With `walkers` > 1 the internal ids are cut
    /// into ranges, walked side by side by this thread and the query helpers ([`helpers`]),
    /// which share one θ: the k-th best score of any walker bounds the whole index's from
    /// below, so each prunes as well as a single walk would.
    pub(super) fn maxscore_top_k(
        &self,
        ids: &[u32],
        idfs: &[f32],
        norms: &FieldNorms,
        k: usize,
        filter: Option<KeyFilter<'_>>,
        walkers: usize,
    ) -> Vec<(u64, f32)> {
        if k == 0 {
            return Vec::new();
        }
        let skips: Vec<Arc<TermSkips>> = ids.iter().map(|&t| self.term_skips(t, norms)).collect();
        let end = u32::try_from(self.keys.len()).unwrap_or(EXHAUSTED);
        // Only idle helpers are asked: a query never waits for one busy with another query.
        let lease = (walkers > 1).then(|| helpers::lease(walkers - 1)).flatten();
        let walkers = 1 + lease.as_ref().map_or(0, helpers::Lease::count);
        let walk = Walk {
            index: self,
            ids,
            idfs,
            skips: &skips,
            norms,
            k,
            filter,
            theta: Padded(AtomicU32::new(0)),
            shares: (0..walkers).map(|_| Padded(AtomicU32::new(0))).collect(),
        };
        let Some(lease) = lease else {
            return walk
                .ranges(0, &[0, end], &AtomicUsize::new(0))
                .into_sorted();
        };
        // More ranges than walkers, taken in turn, so that a walker whose ranges hold fewer
        // postings takes more of them.
        let count = walkers * RANGES_PER_WALKER;
        let bounds: Vec<u32> = (0..=count)
            .map(|i| u32::try_from(self.keys.len() * i / count).unwrap_or(end))
            .collect();
        let next = AtomicUsize::new(0);
        let (walk, bounds, next) = (&walk, &bounds, &next);
        let mut tops: Vec<Option<TopK>> = (1..walkers).map(|_| None).collect();
        let mine = lease.pool().in_place_scope(|scope| {
            for (w, slot) in (1..).zip(&mut tops) {
                scope.spawn(move |_| *slot = Some(walk.ranges(w, bounds, next)));
            }
            walk.ranges(0, bounds, next)
        });
        drop(lease);
        let tops = std::iter::once(mine).chain(tops.into_iter().flatten());
        let mut top = TopK::new(k);
        for (key, score) in tops.flat_map(TopK::into_sorted) {
            top.offer(score, || key, None);
        }
        top.into_sorted()
    }

    /// Scores of the live internal ids `docs` (ascending) for the terms `ids`, summed in term
    /// order; 0 for a document none of them contains.
    pub(super) fn score_docs(
        &self,
        ids: &[u32],
        idfs: &[f32],
        norms: &FieldNorms,
        docs: &[u32],
    ) -> Vec<(u32, f32)> {
        let k1 = self.params.k1;
        let skips: Vec<Arc<TermSkips>> = ids.iter().map(|&t| self.term_skips(t, norms)).collect();
        let mut cursors = self.cursors(ids, idfs, &skips);
        docs.iter()
            .map(|&doc| {
                let lens = &self.lens[doc as usize];
                let score = cursors.iter_mut().fold(0.0f32, |sum, c| {
                    c.seek(doc);
                    if c.doc == doc {
                        sum + c.score(k1, norms, lens)
                    } else {
                        sum
                    }
                });
                (doc, score)
            })
            .collect()
    }

    /// One cursor per term, in term order.
    fn cursors<'a>(
        &'a self,
        ids: &[u32],
        idfs: &[f32],
        skips: &'a [Arc<TermSkips>],
    ) -> Vec<Cursor<'a>> {
        ids.iter()
            .zip(idfs)
            .zip(skips)
            .enumerate()
            .map(|(order, ((&t, &idf), skips))| {
                let (arena, tail) = self.streams(t);
                let ub = bound(idf, self.params.k1, skips.max_tf);
                Cursor::new(arena, tail, skips, idf, ub, order)
            })
            .collect()
    }
}

/// Postings counted over a broad query's terms from which its walk is split between threads
/// ([`Bm25Index::maxscore_top_k`]): below it, handing a range to a helper costs more than it
/// saves.
pub(super) const SPLIT_MIN_POSTINGS: usize = if cfg!(test) { 16 } else { 1 << 12 };

/// Documents a walker visits between two looks at the other walkers' scores.
const SHARED_EVERY: u32 = 16;

/// Ranges of documents per walker of a split query.
const RANGES_PER_WALKER: usize = 8;

/// How many threads walk a broad query of `postings` postings: this one and every helper.
pub(super) fn split_parts(postings: usize) -> usize {
    if postings >= SPLIT_MIN_POSTINGS {
        helpers::count() + 1
    } else {
        1
    }
}

/// One MaxScore query, walked over ranges of internal ids that share its θ.
struct Walk<'a> {
    index: &'a Bm25Index,
    ids: &'a [u32],
    idfs: &'a [f32],
    skips: &'a [Arc<TermSkips>],
    norms: &'a FieldNorms,
    k: usize,
    filter: Option<KeyFilter<'a>>,
    /// The best k-th score any walker has reached, as f32 bits (scores are never negative,
    /// so their bits order as they do).
    theta: Padded<AtomicU32>,
    /// Each walker's `⌈k / walkers⌉`-th best score (0 until it has that many): together the
    /// walkers hold k documents scoring at least the least of them, so θ is at least that
    /// long before any one walker holds k documents of its own.
    shares: Box<[Padded<AtomicU32>]>,
}

/// A value alone on its cache lines (two: Intel fetches lines in pairs), so that writing it
/// does not slow down reading what would sit beside it.
#[repr(align(128))]
struct Padded<T>(T);

impl Walk<'_> {
    /// The least score the k-th best document of the index can have, as far as the walkers
    /// know.
    fn theta(&self) -> f32 {
        let least_share = self
            .shares
            .iter()
            .map(|s| s.0.load(AtomicOrdering::Relaxed))
            .min()
            .unwrap_or(0);
        f32::from_bits(self.theta.0.load(AtomicOrdering::Relaxed).max(least_share))
    }

    /// The top k of the ranges of internal ids this walker takes from `bounds` (ranges
    /// `bounds[i]..bounds[i + 1]`, claimed through `next`): every document of those ranges that
    /// can be in the top k of the whole index is in it.
    fn ranges(&self, walker: usize, bounds: &[u32], next: &AtomicUsize) -> TopK {
        let index = self.index;
        let k1 = index.params.k1;
        let norms = self.norms;
        let mut cursors = index.cursors(self.ids, self.idfs, self.skips);
        cursors.sort_by(|a, b| a.ub.total_cmp(&b.ub).then(a.order.cmp(&b.order)));
        // prefix[i]: the most the i + 1 weakest terms can add together.
        let prefix: Vec<f32> = cursors
            .iter()
            .scan(0.0f32, |sum, c| {
                *sum += c.ub;
                Some(*sum)
            })
            .collect();
        let all_live = index.live_docs == index.keys.len();
        let mut contrib = vec![0.0f32; self.ids.len()];
        let mut top = TopK::new(self.k);
        // This walker's best `share` scores, as bits, when there are other walkers.
        let share = self.k.div_ceil(self.shares.len());
        let mut best = BinaryHeap::with_capacity(share + 1);
        let mut published = 0;
        let mut theta = 0.0f32;
        // cursors[..essential] are non-essential.
        let mut essential = 0;
        let mut hi = 0;
        let mut steps = 0u32;
        loop {
            // Another walker may have raised θ (looked at now and then: the values sit on
            // cache lines the other walkers write).
            steps = steps.wrapping_add(1);
            let shared = if steps.is_multiple_of(SHARED_EVERY) {
                self.theta()
            } else {
                0.0
            };
            if shared > theta {
                theta = shared;
                while essential < cursors.len() && prefix[essential] < theta {
                    essential += 1;
                }
                if essential == cursors.len() {
                    break; // no document can beat the k-th any more
                }
            }
            let doc = cursors[essential..]
                .iter()
                .map(|c| c.doc)
                .min()
                .unwrap_or(EXHAUSTED);
            if doc >= hi {
                // This range is done: on to the next one no walker has taken.
                let i = next.fetch_add(1, AtomicOrdering::Relaxed);
                let (Some(&lo), Some(&end)) = (bounds.get(i), bounds.get(i + 1)) else {
                    break;
                };
                for c in &mut cursors {
                    c.seek(lo);
                }
                hi = end;
                continue;
            }
            let d = doc as usize;
            let live = all_live || index.is_live(d);
            let lens = &index.lens[d];
            let mut partial = 0.0f32;
            for c in &mut cursors[essential..] {
                if c.doc == doc {
                    if live {
                        let s = c.score(k1, norms, lens);
                        contrib[c.order] = s;
                        partial += s;
                    }
                    c.advance();
                }
            }
            if !live {
                continue;
            }
            let mut reachable = true;
            for i in (0..essential).rev() {
                // `partial` is summed in another order than the final score: the slack keeps a
                // document that would tie θ from being dropped by a rounding difference.
                if (partial + prefix[i]) * SLACK < theta {
                    reachable = false;
                    break;
                }
                let c = &mut cursors[i];
                c.skip_blocks(doc);
                if c.doc < doc {
                    // Not decoded yet: the bound of the block holding `doc` may already rule
                    // it out.
                    let rest = if i == 0 { 0.0 } else { prefix[i - 1] };
                    if (partial + c.block_bound(k1) + rest) * SLACK < theta {
                        reachable = false;
                        break;
                    }
                    c.seek(doc);
                }
                if c.doc == doc {
                    let s = c.score(k1, norms, lens);
                    contrib[c.order] = s;
                    partial += s;
                }
            }
            // Summed in term order, as the accumulators do, for identical scores and ties.
            let score = contrib.iter().fold(0.0f32, |sum, &s| sum + s);
            contrib.fill(0.0);
            // Below θ a document cannot be among the k best of the whole index.
            if !reachable || score < theta || !top.offer(score, || index.keys[d], self.filter) {
                continue;
            }
            if self.shares.len() > 1 {
                best.push(Reverse(score.to_bits()));
                if best.len() > share {
                    best.pop();
                }
                if best.len() == share
                    && let Some(&Reverse(least)) = best.peek()
                    && least > published
                {
                    published = least;
                    self.shares[walker].0.store(least, AtomicOrdering::Relaxed);
                }
            }
            if let Some(worst) = top.threshold().filter(|&worst| worst > theta) {
                theta = worst;
                self.theta
                    .0
                    .fetch_max(worst.to_bits(), AtomicOrdering::Relaxed);
                while essential < cursors.len() && prefix[essential] < theta {
                    essential += 1;
                }
                if essential == cursors.len() {
                    break;
                }
            }
        }
        top
    }
}

/// The current doc of a cursor that has no postings left.
const EXHAUSTED: u32 = u32::MAX;

/// A position in one term's postings that can jump ahead by whole blocks.
struct Cursor<'a> {
    arena: &'a [u8],
    tail: &'a [u8],
    in_tail: bool,
    blocks: &'a [Block],
    tail_max_tf: f32,
    /// The block of the current posting (while in the arena).
    block: usize,
    pos: usize,
    prev: u32,
    /// Internal id of the current posting, or [`EXHAUSTED`].
    doc: u32,
    tf: [u16; NUM_FIELDS],
    idf: f32,
    ub: f32,
    /// Position of the term among the query's terms (summation order).
    order: usize,
}

impl<'a> Cursor<'a> {
    fn new(
        arena: &'a [u8],
        tail: &'a [u8],
        skips: &'a TermSkips,
        idf: f32,
        ub: f32,
        order: usize,
    ) -> Self {
        let mut cursor = Cursor {
            arena,
            tail,
            in_tail: arena.is_empty() || skips.blocks.is_empty(),
            blocks: &skips.blocks,
            tail_max_tf: skips.tail_max_tf,
            block: 0,
            pos: 0,
            prev: 0,
            doc: EXHAUSTED,
            tf: [0; NUM_FIELDS],
            idf,
            ub,
            order,
        };
        cursor.advance();
        cursor
    }

    #[inline]
    fn score(&self, k1: f32, norms: &FieldNorms, lens: &[u16; NUM_FIELDS]) -> f32 {
        let t = tf_weight(norms, self.tf, lens);
        if t == 0.0 {
            return 0.0;
        }
        self.idf * t / (k1 + t)
    }

    /// Moves to the next posting.
    #[inline]
    fn advance(&mut self) {
        if !self.in_tail {
            if self.pos < self.arena.len() {
                if let Some((delta, tf)) = decode_posting(self.arena, &mut self.pos) {
                    self.set(delta, tf);
                    while self.block + 1 < self.blocks.len()
                        && self.pos > self.blocks[self.block].end
                    {
                        self.block += 1;
                    }
                    return;
                }
                self.doc = EXHAUSTED;
                return;
            }
            self.in_tail = true;
            self.pos = 0;
        }
        match decode_posting(self.tail, &mut self.pos) {
            Some((delta, tf)) => self.set(delta, tf),
            None => self.doc = EXHAUSTED,
        }
    }

    #[inline]
    fn set(&mut self, delta: u64, tf: [u16; NUM_FIELDS]) {
        match u32::try_from(u64::from(self.prev) + delta) {
            Ok(doc) if doc != EXHAUSTED => {
                self.prev = doc;
                self.doc = doc;
                self.tf = tf;
            }
            _ => self.doc = EXHAUSTED,
        }
    }

    /// Moves to the start of the block that may hold `target` when the current one ends
    /// before it, without decoding anything; `doc` stays below `target` until [`seek`].
    ///
    /// [`seek`]: Self::seek
    fn skip_blocks(&mut self, target: u32) {
        if self.doc >= target || self.in_tail || self.blocks[self.block].last_doc >= target {
            return;
        }
        let rest = &self.blocks[self.block + 1..];
        let next = self.block + 1 + rest.partition_point(|b| b.last_doc < target);
        let before = &self.blocks[next - 1];
        self.prev = before.last_doc;
        if next < self.blocks.len() {
            self.pos = before.end;
            self.block = next;
        } else {
            // Past the sealed postings: the tail continues the delta sequence.
            self.in_tail = true;
            self.pos = 0;
        }
    }

    /// The most the posting list can add from the current block (or the tail) on.
    fn block_bound(&self, k1: f32) -> f32 {
        let max_tf = if self.in_tail {
            self.tail_max_tf
        } else {
            self.blocks[self.block].max_tf
        };
        bound(self.idf, k1, max_tf)
    }

    /// Moves to the first posting at or after `target`.
    fn seek(&mut self, target: u32) {
        self.skip_blocks(target);
        while self.doc < target {
            self.advance();
        }
    }
}

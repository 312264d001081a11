//! The semantic channel of an index: one embedding model, its vectors' HNSW graph, and the map
//! from content hashes to the view's chunks, plus its fusion with the lexical channel.

use std::path::Path;
use std::sync::Arc;

use crate::embed::Embedder;
use crate::engine::Channels;
use crate::error::{Error, Result};
use crate::hash::IntMap;
use crate::store::Store;
use crate::vectors::{Quantization, VectorIndex};

/// Nearest chunks asked of the graph per query (before fusion).
pub const SEMANTIC_CANDIDATES: usize = 100;

/// How the semantic channel stores and weighs its vectors.
#[derive(Clone, Copy, Debug, Default)]
pub struct SemanticOptions {
    pub quantization: Quantization,
    /// Share of the channel in hybrid ranking; the engine's own when `None`.
    pub weight: Option<f32>,
}

pub(crate) struct Semantic {
    pub(crate) model: String,
    /// Share of this channel in [`fuse`].
    pub(crate) weight: f32,
    pub(crate) embedder: Arc<dyn Embedder>,
    pub(crate) graph: VectorIndex,
    /// Content hash -> lexical document keys of the view, as of `generation`.
    pub(crate) by_content: IntMap<i64, Vec<u64>>,
    /// Document key -> content hash: the reverse of `by_content`, to patch it per path.
    pub(crate) by_key: IntMap<u64, i64>,
    pub(crate) generation: Option<u64>,
    /// The store's vectors counter when the graph was last matched with it.
    pub(crate) vectors_seen: Option<Option<String>>,
    quantization: Quantization,
}

impl Semantic {
    /// Opens the graph of `model` in `dir`, rebuilding it from the stored vectors (never by
    /// embedding again) when it is missing or out of step with them.
    pub(crate) fn open(
        dir: &Path,
        store: &Store,
        model: &str,
        embedder: Arc<dyn Embedder>,
        options: SemanticOptions,
    ) -> Result<Self> {
        if model.is_empty() {
            return Err(Error::InvalidArgument("the model name is empty".into()));
        }
        let weight = options.weight.unwrap_or_else(|| embedder.fusion_weight());
        if !(0.0..=1.0).contains(&weight) {
            return Err(Error::InvalidArgument(format!(
                "the semantic weight is a share between 0 and 1, not {weight}"
            )));
        }
        let quantization = options.quantization;
        let dims = embedder.dims();
        let path = VectorIndex::path_in(dir, model, quantization);
        if let Some(legacy) = VectorIndex::legacy_path_in(dir, model, quantization) {
            // A cosine graph of an older version: rebuilt below from the stored vectors.
            let _ = std::fs::remove_file(legacy); // best effort: only disk space is at stake
        }
        let stored = store.count_vectors(model)?;
        let graph = match VectorIndex::load(&path, dims, stored, quantization) {
            Some(graph) => graph,
            None => {
                let vectors = store.vectors(model)?;
                if let Some((_, v)) = vectors.iter().find(|(_, v)| v.len() != dims) {
                    return Err(Error::InvalidArgument(format!(
                        "the index holds {}-dimensional vectors for {model:?}, the model gives {dims}",
                        v.len()
                    )));
                }
                let mut graph = VectorIndex::new(&path, dims, vectors.len(), quantization)?;
                graph.add(&vectors)?;
                if !vectors.is_empty() {
                    graph.save()?;
                }
                graph
            }
        };
        Ok(Semantic {
            model: model.to_owned(),
            weight,
            embedder,
            graph,
            by_content: IntMap::default(),
            by_key: IntMap::default(),
            generation: None,
            vectors_seen: None,
            quantization,
        })
    }

    /// Maps the document `key` to its content `hash`.
    pub(crate) fn remember(&mut self, key: u64, hash: i64) {
        self.by_content.entry(hash).or_default().push(key);
        self.by_key.insert(key, hash);
    }

    /// Drops the document `key` from the map.
    pub(crate) fn forget(&mut self, key: u64) {
        let Some(hash) = self.by_key.remove(&key) else {
            return;
        };
        if let Some(keys) = self.by_content.get_mut(&hash) {
            keys.retain(|k| *k != key);
            if keys.is_empty() {
                self.by_content.remove(&hash);
            }
        }
    }

    /// Replaces the graph with the saved one if that holds every stored vector (and this one
    /// does not).
    pub(crate) fn reload_graph(&mut self, store: &Store) -> Result<()> {
        let stored = store.count_vectors(&self.model)?;
        if self.graph.len() == stored {
            return Ok(());
        }
        let path = VectorIndex::path_in(self.graph.dir(), &self.model, self.quantization);
        if let Some(graph) =
            VectorIndex::load(&path, self.embedder.dims(), stored, self.quantization)
        {
            self.graph = graph;
        }
        Ok(())
    }

    /// Document keys of the chunks nearest to `query` with their cosine similarity, best
    /// first, among those `allowed` (`None`: every chunk of the view).
    pub(crate) fn search(
        &self,
        query: &str,
        allowed: Option<crate::bm25::KeyFilter<'_>>,
    ) -> Result<Vec<(u64, f32)>> {
        if self.graph.is_empty() {
            return Ok(Vec::new());
        }
        let vector = self.embedder.embed_query(query)?;
        self.nearest(&vector, SEMANTIC_CANDIDATES, allowed)
    }

    /// Document keys of the chunks nearest to `vector` with their cosine similarity, best
    /// first, among those `allowed` (`None`: every chunk of the view): the `k` nearest
    /// contents, each expanded to the chunks of the view that hold it.
    pub(crate) fn nearest(
        &self,
        vector: &[f32],
        k: usize,
        allowed: Option<crate::bm25::KeyFilter<'_>>,
    ) -> Result<Vec<(u64, f32)>> {
        // The graph calls the filter for every node it weighs: keep the common case (no
        // restriction) to one map probe.
        let keep = |k: &u64| allowed.is_none_or(|allowed| allowed(*k));
        let nearest = self.graph.search(vector, k, |hash| match allowed {
            None => self.by_content.contains_key(&hash),
            Some(_) => self
                .by_content
                .get(&hash)
                .is_some_and(|keys| keys.iter().any(keep)),
        })?;
        Ok(nearest
            .iter()
            .filter_map(|(hash, similarity)| Some((self.by_content.get(hash)?, *similarity)))
            .flat_map(|(keys, similarity)| {
                keys.iter()
                    .filter(|k| keep(k))
                    .map(move |&k| (k, similarity))
            })
            .collect())
    }
}

/// Fuses the lexical candidates `(key, BM25F)` and the semantic ones `(key, cosine)`, each
/// best first: a convex combination of the two scores, each scaled to [0, 1] within its own
/// candidates (BM25F by the best, cosine from the worst to the best), `weight` on the
/// semantic side. A candidate one channel did not return scores 0 there.
///
/// Scores rather than ranks (reciprocal rank fusion): how far ahead the best candidates of a
/// channel are is the evidence a rank throws away, and the ranking layer multiplies the
/// fused score, so it must stay proportional. Measured in benches/quality/README.md.
#[must_use]
pub fn fuse(
    lexical: &[(u64, f32)],
    semantic: &[(u64, f32)],
    weight: f32,
) -> Vec<(u64, f32, Channels)> {
    const NONE: Channels = Channels {
        lexical: false,
        semantic: false,
    };
    let mut fused: IntMap<u64, (f32, Channels)> = IntMap::default();
    let best = lexical.iter().map(|c| c.1).fold(0.0f32, f32::max);
    for &(key, score) in lexical {
        let entry = fused.entry(key).or_insert((0.0, NONE));
        if !entry.1.lexical && best > 0.0 {
            entry.0 += (1.0 - weight) * score / best;
        }
        entry.1.lexical = true;
    }
    let (low, high) = semantic
        .iter()
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), c| {
            (lo.min(c.1), hi.max(c.1))
        });
    let span = (high - low).max(f32::EPSILON);
    for &(key, similarity) in semantic {
        let entry = fused.entry(key).or_insert((0.0, NONE));
        if !entry.1.semantic {
            entry.0 += weight * (similarity - low) / span;
            entry.1.semantic = true;
        }
    }
    let mut out: Vec<(u64, f32, Channels)> = fused
        .into_iter()
        .map(|(key, (score, channels))| (key, score, channels))
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fusion_rewards_agreement_and_keeps_both_channels() {
        let lexical = [(1, 9.0), (2, 5.0), (3, 1.0)];
        let semantic = [(3, 0.9), (4, 0.8), (1, 0.5)];
        let fused = fuse(&lexical, &semantic, 0.5);
        let order: Vec<u64> = fused.iter().map(|f| f.0).collect();
        // 3: lexical 1/9 and semantic 1.0; 1: lexical 1.0 and semantic 0.0; 4: semantic 0.75;
        // 2: lexical 5/9. Each halved.
        assert_eq!(order, [3, 1, 4, 2]);
        assert!((fused[1].1 - 0.5).abs() < 1e-6);
        assert!((fused[0].1 - (1.0 / 9.0 + 1.0) / 2.0).abs() < 1e-6);
        let four = fused.iter().find(|f| f.0 == 4).map(|f| f.2);
        assert_eq!(
            four,
            Some(Channels {
                lexical: false,
                semantic: true
            })
        );
        assert_eq!(fused.len(), 4);
        assert!(fuse(&[], &[], 0.5).is_empty());
        let lexical_only = fuse(&lexical, &semantic, 0.0);
        let order: Vec<u64> = lexical_only.iter().map(|f| f.0).collect();
        assert_eq!(order[..3], [1, 2, 3], "weight 0 keeps the lexical order");
        let semantic_only = fuse(&lexical, &semantic, 1.0);
        let order: Vec<u64> = semantic_only.iter().map(|f| f.0).collect();
        assert_eq!(order[..3], [3, 4, 1], "weight 1 keeps the semantic order");
    }
}

//! The semantic channel of an index: one embedding model, its vectors' HNSW graph, and the map
//! from content hashes to the view's chunks, plus reciprocal rank fusion with the lexical
//! channel.

use std::path::Path;
use std::sync::Arc;

use crate::embed::Embedder;
use crate::engine::Channels;
use crate::error::{Error, Result};
use crate::hash::IntMap;
use crate::store::Store;
use crate::vectors::{Quantization, VectorIndex};

/// The `k` of reciprocal rank fusion, `1 / (k + rank)`: the usual 60, which keeps a document
/// ranked well by one channel from being swamped by one ranked middling by both.
pub const RRF_K: f32 = 60.0;

/// Nearest chunks asked of the graph per query (before fusion).
pub const SEMANTIC_CANDIDATES: usize = 100;

pub(crate) struct Semantic {
    pub(crate) model: String,
    pub(crate) embedder: Arc<dyn Embedder>,
    pub(crate) graph: VectorIndex,
    /// Content hash -> lexical document keys of the view, as of `generation`.
    pub(crate) by_content: IntMap<i64, Vec<u64>>,
    pub(crate) generation: Option<u64>,
}

impl Semantic {
    /// Opens the graph of `model` in `dir`, rebuilding it from the stored vectors (never by
    /// embedding again) when it is missing or out of step with them. Each quantization has
    /// its own file, so switching is a rebuild, never a misread.
    pub(crate) fn open(
        dir: &Path,
        store: &Store,
        model: &str,
        embedder: Arc<dyn Embedder>,
        quantization: Quantization,
    ) -> Result<Self> {
        if model.is_empty() {
            return Err(Error::InvalidArgument("the model name is empty".into()));
        }
        let dims = embedder.dims();
        let suffix = match quantization {
            Quantization::F16 => String::new(),
            other => format!(".{}", other.name()),
        };
        let path = dir.join(format!(
            "vectors-{:016x}{suffix}.usearch",
            xxhash_rust::xxh3::xxh3_64(model.as_bytes())
        ));
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
            embedder,
            graph,
            by_content: IntMap::default(),
            generation: None,
        })
    }

    /// Document keys of the chunks nearest to `query`, best first (chunks sharing content share
    /// a rank), among those `allowed` (`None`: every chunk of the view).
    pub(crate) fn search(
        &self,
        query: &str,
        allowed: Option<&dyn Fn(u64) -> bool>,
    ) -> Result<Vec<u64>> {
        if self.graph.is_empty() {
            return Ok(Vec::new());
        }
        let vector = self.embedder.embed_query(query)?;
        Ok(self
            .nearest(&vector, SEMANTIC_CANDIDATES, allowed)?
            .into_iter()
            .map(|(key, _)| key)
            .collect())
    }

    /// Document keys of the chunks nearest to `vector` with their cosine similarity, best
    /// first, among those `allowed` (`None`: every chunk of the view): the `k` nearest
    /// contents, each expanded to the chunks of the view that hold it.
    pub(crate) fn nearest(
        &self,
        vector: &[f32],
        k: usize,
        allowed: Option<&dyn Fn(u64) -> bool>,
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

/// Reciprocal rank fusion of the lexical ranking (already best first) and the semantic one.
#[must_use]
pub fn fuse(lexical: &[(u64, f32)], semantic: &[u64]) -> Vec<(u64, f32, Channels)> {
    const NONE: Channels = Channels {
        lexical: false,
        semantic: false,
    };
    let mut fused: IntMap<u64, (f32, Channels)> = IntMap::default();
    #[allow(clippy::cast_precision_loss)]
    let rrf = |rank: usize| 1.0 / (RRF_K + (rank + 1) as f32);
    for (rank, &(key, _)) in lexical.iter().enumerate() {
        let entry = fused.entry(key).or_insert((0.0, NONE));
        entry.0 += rrf(rank);
        entry.1.lexical = true;
    }
    for (rank, &key) in semantic.iter().enumerate() {
        let entry = fused.entry(key).or_insert((0.0, NONE));
        if !entry.1.semantic {
            entry.0 += rrf(rank);
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
        let semantic = [3, 4, 1];
        let fused = fuse(&lexical, &semantic);
        assert_eq!(fused[0].0, 1, "first lexically, third semantically");
        assert_eq!(fused[1].0, 3);
        let four = fused.iter().find(|f| f.0 == 4).map(|f| f.2);
        assert_eq!(
            four,
            Some(Channels {
                lexical: false,
                semantic: true
            })
        );
        assert_eq!(fused.len(), 4);
        assert!(fuse(&[], &[]).is_empty());
    }
}

//! Chunk vectors of one model in an HNSW graph (usearch): cosine over bf16 (or f16, i8), keyed by
//! the chunk-content hash, so identical code in many files and versions is one vector. The
//! float graphs hold unit vectors and rank by inner product, which is cosine for them.
//!
//! The vectors themselves live in SQLite (table `vectors`); this graph is derived from them,
//! saved beside the database and rebuilt from SQLite when missing or out of step, never by
//! calling a model again.

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

use crate::error::{Error, Result};

/// HNSW neighbours per node; usearch's default, a good recall/size balance for 256–768 dims.
const CONNECTIVITY: usize = 16;

/// Candidates weighed when linking a new vector. usearch's default (128) costs three times
/// as much per insert for under 2 points of recall@10 (measured on 55k real code embeddings
/// with `examples/hnsw.rs`: 0.997 at 128, 0.981 at 40), and fused ranking hides that loss.
const EXPANSION_ADD: usize = 40;

/// How the graph stores each vector component.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Quantization {
    /// Brain float, 16 bits: the default. Its distance kernels (AVX-512 BF16 where the CPU
    /// has it) build the graph 15–30% faster than f16's, at the same recall@10 (0.983 against
    /// 0.981 over 131k real code embeddings, `examples/hnsw.rs`).
    #[default]
    BF16,
    /// IEEE half precision, the default before bf16.
    F16,
    /// One byte per component: half the memory and faster inserts, at a few points of recall.
    I8,
}

impl Quantization {
    /// The graph's distance. Over unit vectors inner product ranks as cosine does, and its
    /// kernels skip the two norms cosine computes for every pair: building a 142k-vector
    /// graph of real code embeddings took 4.4-4.7 s instead of 6.8-7.0 with bf16 and 5.8
    /// instead of 6.9 with f16, at the same recall@10 (`examples/hnsw.rs`,
    /// `HNSW_METRICS=cos,ip`). i8 keeps cosine: usearch scales i8 components for it, and
    /// inner product over them lost recall (0.906 against 0.940).
    fn metric(self) -> MetricKind {
        match self {
            Quantization::BF16 | Quantization::F16 => MetricKind::IP,
            Quantization::I8 => MetricKind::Cos,
        }
    }

    /// The name used in settings and file names.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Quantization::BF16 => "bf16",
            Quantization::F16 => "f16",
            Quantization::I8 => "i8",
        }
    }

    /// The quantization called `name` (`bf16`, `f16` or `i8`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for any other name.
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "bf16" => Ok(Quantization::BF16),
            "f16" => Ok(Quantization::F16),
            "i8" => Ok(Quantization::I8),
            other => Err(Error::InvalidArgument(format!(
                "unknown vector quantization {other:?} (expected \"bf16\", \"f16\" or \"i8\")"
            ))),
        }
    }
}

/// The graph of one model's vectors.
pub struct VectorIndex {
    index: Index,
    dims: usize,
    path: PathBuf,
}

fn hnsw_error(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Corrupt {
        path: path.to_path_buf(),
        reason: format!("vector index: {e}"),
    }
}

impl VectorIndex {
    /// An empty graph for `dims`-dimensional vectors, to be saved at `path`.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] if usearch cannot allocate the index.
    pub fn new(
        path: &Path,
        dims: usize,
        capacity: usize,
        quantization: Quantization,
    ) -> Result<Self> {
        let options = IndexOptions {
            dimensions: dims,
            metric: quantization.metric(),
            quantization: match quantization {
                Quantization::BF16 => ScalarKind::BF16,
                Quantization::F16 => ScalarKind::F16,
                Quantization::I8 => ScalarKind::I8,
            },
            connectivity: CONNECTIVITY,
            expansion_add: EXPANSION_ADD,
            expansion_search: 0,
            multi: false,
        };
        let index = Index::new(&options).map_err(|e| hnsw_error(path, e))?;
        let graph = VectorIndex {
            index,
            dims,
            path: path.to_path_buf(),
        };
        graph.reserve(capacity)?;
        Ok(graph)
    }

    /// Where the graph of `model` stored with `quantization` lives in `dir`: one file per pair
    /// (and distance), so switching either is a rebuild, never a misread.
    #[must_use]
    pub fn path_in(dir: &Path, model: &str, quantization: Quantization) -> PathBuf {
        let suffix = match quantization {
            Quantization::F16 => ".ip",
            Quantization::BF16 => ".bf16.ip",
            Quantization::I8 => ".i8",
        };
        Self::file_in(dir, model, suffix)
    }

    /// Where a cosine graph of `model` with `quantization` lived before the float graphs
    /// moved to inner product (`None` where the name did not change): a rebuild deletes it.
    #[must_use]
    pub fn legacy_path_in(dir: &Path, model: &str, quantization: Quantization) -> Option<PathBuf> {
        let suffix = match quantization {
            Quantization::F16 => "",
            Quantization::BF16 => ".bf16",
            Quantization::I8 => return None,
        };
        Some(Self::file_in(dir, model, suffix))
    }

    fn file_in(dir: &Path, model: &str, suffix: &str) -> PathBuf {
        dir.join(format!(
            "vectors-{:016x}{suffix}.usearch",
            xxhash_rust::xxh3::xxh3_64(model.as_bytes())
        ))
    }

    /// The graph saved at `path`, if it exists, holds `dims`-dimensional vectors and `expected`
    /// of them; `None` otherwise (the caller rebuilds it).
    #[must_use]
    pub fn load(
        path: &Path,
        dims: usize,
        expected: usize,
        quantization: Quantization,
    ) -> Option<Self> {
        Self::load_any(path, dims, quantization)
            .filter(|g| g.index.size() == expected)
            .and_then(|g| g.reserve(expected).ok().map(|()| g))
    }

    /// The graph saved at `path` whatever it holds, if it reads as `dims`-dimensional vectors.
    #[must_use]
    pub fn load_any(path: &Path, dims: usize, quantization: Quantization) -> Option<Self> {
        let graph = VectorIndex::new(path, dims, 0, quantization).ok()?;
        graph.index.load(path.to_str()?).ok()?;
        (graph.index.dimensions() == dims).then_some(graph)
    }

    /// Room for `capacity` vectors and a search context per thread (usearch needs both before
    /// `add` and `search`).
    fn reserve(&self, capacity: usize) -> Result<()> {
        // The process's pool adds on every thread; query helpers (fewer than its threads) and
        // the threads that ask search. (Not `rayon::current_num_threads()`, which would
        // start the global pool, nor the helpers' count, which would start them.)
        let threads = 2 * crate::helpers::threads() + 2;
        self.index
            .reserve_capacity_and_threads(capacity.max(self.index.size()).max(64), threads)
            .map_err(|e| hnsw_error(&self.path, e))
    }

    /// The folder of the graph file.
    #[must_use]
    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or_else(|| Path::new("."))
    }

    /// Whether the vector of `hash` is in the graph.
    #[must_use]
    pub fn contains(&self, hash: i64) -> bool {
        self.index.contains(key_of(hash))
    }

    /// Drops the vectors of `hashes` (absent ones are ignored).
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] if usearch fails.
    pub fn remove(&mut self, hashes: &[i64]) -> Result<()> {
        for &hash in hashes {
            self.index
                .remove(key_of(hash))
                .map_err(|e| hnsw_error(&self.path, e))?;
        }
        Ok(())
    }

    /// Number of vectors.
    #[must_use]
    pub fn len(&self) -> usize {
        self.index.size()
    }

    /// Whether the graph is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds the vectors not in the graph yet.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a vector of the wrong length; [`Error::Corrupt`] if
    /// usearch fails.
    pub fn add(&mut self, vectors: &[(i64, Vec<f32>)]) -> Result<()> {
        if let Some((_, v)) = vectors.iter().find(|(_, v)| v.len() != self.dims) {
            return Err(Error::InvalidArgument(format!(
                "a vector of {} values for an index of {} dimensions",
                v.len(),
                self.dims
            )));
        }
        if self.index.size() + vectors.len() > self.index.capacity() {
            self.reserve((self.index.size() + vectors.len()).next_power_of_two())?;
        }
        // usearch takes concurrent adds (one reserved context per thread); insertion is
        // nearly all distance computations, so it scales with the cores.
        let index = &self.index;
        crate::helpers::in_own_pool(|| {
            vectors
                .par_iter()
                .filter(|(hash, _)| !index.contains(key_of(*hash)))
                .try_for_each(|(hash, v)| index.add(key_of(*hash), &unit_length(v)))
        })
        .map_err(|e| hnsw_error(&self.path, e))
    }

    /// The `k` nearest content hashes accepted by `filter`, with their cosine similarity.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a query of the wrong length.
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        filter: impl Fn(i64) -> bool,
    ) -> Result<Vec<(i64, f32)>> {
        if query.len() != self.dims {
            return Err(Error::InvalidArgument(format!(
                "a query of {} values for an index of {} dimensions",
                query.len(),
                self.dims
            )));
        }
        if self.is_empty() || k == 0 {
            return Ok(Vec::new());
        }
        let matches = self
            .index
            .filtered_search(&unit_length(query), k, |key| filter(hash_of(key)))
            .map_err(|e| hnsw_error(&self.path, e))?;
        Ok(matches
            .keys
            .iter()
            .zip(&matches.distances)
            .map(|(&key, &distance)| (hash_of(key), 1.0 - distance))
            .collect())
    }

    /// Writes the graph to its path (a temporary file renamed into place).
    ///
    /// # Errors
    ///
    /// [`Error::Io`] if the file cannot be written.
    pub fn save(&self) -> Result<()> {
        let temp = self
            .path
            .with_extension(format!("tmp-{}", std::process::id()));
        let text = temp
            .to_str()
            .ok_or_else(|| Error::InvalidArgument("index path is not UTF-8".into()))?;
        self.index.save(text).map_err(|e| {
            Error::io(
                format!("saving {}", self.path.display()),
                std::io::Error::other(e.to_string()),
            )
        })?;
        std::fs::rename(&temp, &self.path)
            .map_err(|e| Error::io(format!("saving {}", self.path.display()), e))
    }
}

/// `v` scaled to length 1 (a zero vector as it is). Local engines already normalise; a
/// remote provider's vectors may not be, and the float graphs rank by inner product.
fn unit_length(v: &[f32]) -> std::borrow::Cow<'_, [f32]> {
    let squared = v.iter().map(|x| x * x).sum::<f32>();
    if squared == 0.0 || (squared - 1.0).abs() < 2e-4 {
        std::borrow::Cow::Borrowed(v)
    } else {
        let mut unit = v.to_vec();
        crate::embed::normalize(&mut unit);
        std::borrow::Cow::Owned(unit)
    }
}

/// usearch keys are `u64`; content hashes are SQLite's signed integers (same bits), except
/// that `u64::MAX` is usearch's mark of a free slot: the hash with those bits (one in 2^64)
/// shares the key below it.
fn key_of(hash: i64) -> u64 {
    u64::from_ne_bytes(hash.to_ne_bytes()).min(u64::MAX - 1)
}

fn hash_of(key: u64) -> i64 {
    i64::from_ne_bytes(key.to_ne_bytes())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn unit(seed: u64, dims: usize) -> Vec<f32> {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut v: Vec<f32> = (0..dims).map(|_| rng.random_range(-1.0..1.0)).collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter_mut().for_each(|x| *x /= n);
        v
    }

    #[test]
    fn finds_neighbours_filters_saves_and_loads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.usearch");
        let mut graph = VectorIndex::new(&path, 32, 8, Quantization::F16).unwrap();
        let vectors: Vec<(i64, Vec<f32>)> = (0..500)
            .map(|i| (i * 3 - 700, unit(i as u64, 32)))
            .collect();
        graph.add(&vectors).unwrap();
        graph.add(&vectors[..10]).unwrap(); // known keys are skipped
        assert_eq!(graph.len(), 500);
        let hits = graph.search(&vectors[7].1, 5, |_| true).unwrap();
        assert_eq!(hits[0].0, vectors[7].0);
        assert!((hits[0].1 - 1.0).abs() < 1e-2);
        let odd = graph.search(&vectors[7].1, 5, |h| h % 2 != 0).unwrap();
        assert!(odd.iter().all(|(h, _)| h % 2 != 0));
        assert!(graph.search(&[0.0; 3], 5, |_| true).is_err());
        assert!(graph.add(&[(1, vec![0.0; 3])]).is_err());
        graph.save().unwrap();
        let loaded = VectorIndex::load(&path, 32, 500, Quantization::F16).unwrap();
        assert_eq!(
            loaded.search(&vectors[7].1, 1, |_| true).unwrap()[0].0,
            vectors[7].0
        );
        assert!(
            VectorIndex::load(&path, 32, 499, Quantization::F16).is_none(),
            "a count mismatch means rebuild"
        );
        assert!(VectorIndex::load(&dir.path().join("missing"), 32, 0, Quantization::F16).is_none());
    }

    /// Vectors of any length rank by cosine in every graph, and report it: a long vector
    /// at a wide angle would win by inner product alone.
    #[test]
    fn vectors_of_any_length_rank_by_cosine() {
        let axes = |a: f32, b: f32| {
            let mut v = vec![0.0; 16];
            (v[0], v[1]) = (a, b);
            v
        };
        for quantization in [Quantization::BF16, Quantization::F16, Quantization::I8] {
            let dir = tempfile::tempdir().unwrap();
            let mut graph = VectorIndex::new(&dir.path().join("v"), 16, 8, quantization).unwrap();
            // Cosine with the query: 1, 0.71 and 0.3; inner product: 50, 1 and 30.
            let same = axes(50.0, 0.0);
            let near = axes(1.0, 1.0);
            let wide = axes(30.0, 95.4);
            graph.add(&[(1, same), (2, near), (3, wide)]).unwrap();
            let hits = graph.search(&axes(0.01, 0.0), 3, |_| true).unwrap();
            let order: Vec<i64> = hits.iter().map(|h| h.0).collect();
            assert_eq!(order, [1, 2, 3], "{quantization:?}");
            assert!(
                (hits[0].1 - 1.0).abs() < 0.02,
                "{quantization:?}: {}",
                hits[0].1
            );
        }
    }

    #[test]
    fn quantized_graphs_find_the_same_neighbours() {
        for quantization in [Quantization::BF16, Quantization::I8] {
            let dir = tempfile::tempdir().unwrap();
            let mut graph = VectorIndex::new(&dir.path().join("v"), 32, 8, quantization).unwrap();
            let vectors: Vec<(i64, Vec<f32>)> = (0..300).map(|i| (i, unit(i as u64, 32))).collect();
            graph.add(&vectors).unwrap();
            // The graph is approximate and built by parallel inserts, so a rare vector may be
            // missed; quantization that broke neighbours would miss most of them.
            let mut found = 0;
            for (hash, v) in &vectors {
                let hits = graph.search(v, 3, |_| true).unwrap();
                if hits[0].0 == *hash {
                    found += 1;
                    assert!(
                        (hits[0].1 - 1.0).abs() < 0.05,
                        "{quantization:?} keeps cosine close: {}",
                        hits[0].1
                    );
                }
            }
            assert!(
                found >= 285,
                "{quantization:?}: only {found} of 300 find themselves"
            );
        }
        for quantization in [Quantization::BF16, Quantization::F16, Quantization::I8] {
            assert_eq!(
                Quantization::parse(quantization.name()).unwrap(),
                quantization
            );
        }
        assert_eq!(Quantization::default(), Quantization::BF16);
        assert!(Quantization::parse("f32").is_err());
    }
}

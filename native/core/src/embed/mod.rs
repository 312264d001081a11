//! Local embedding engines: a BERT-family transformer run with candle, a static (Model2Vec
//! format) token-lookup model, and the distillation of the second from the first.
//!
//! Every engine returns row-major `f32` vectors, one row of [`Embedder::dims`] per text,
//! L2-normalised so that a dot product is the cosine.

mod distill;
mod learn;
mod lookup;
mod transformer;
mod wordpiece;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub use distill::{DistillOptions, DistillReport, distill};
pub use learn::{LearnOptions, LearnReport, learn, learn_table};
pub use lookup::StaticEmbedder;
pub use transformer::{Pooling, Recipe, TransformerEmbedder};

use crate::error::{Error, Result};

/// Tokens a chunk is cut to before embedding, unless the caller says otherwise. The
/// sentence-transformers setting of all-MiniLM-L6-v2; its `tokenizer.json` bakes in 128.
pub const DEFAULT_MAX_TOKENS: usize = 256;

/// Fixes the number of threads candle's matrix products use, unless the environment does.
///
/// Without `RAYON_NUM_THREADS`, candle counts the physical cores again, by reading
/// `/proc/cpuinfo`, before every matrix product: about fifty times per embedded query, a third
/// of a short query's time. The value set is rayon's own default, so rayon's pools keep their
/// size.
///
/// # Safety
///
/// Writes the process environment: call it before other threads may read or write it, as at
/// start-up or while a module is being imported.
#[allow(unsafe_code)]
pub unsafe fn settle_thread_count() {
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        // SAFETY: the caller guarantees no other thread touches the environment meanwhile.
        unsafe { std::env::set_var("RAYON_NUM_THREADS", threads.to_string()) };
    }
}

/// `tokenizer.encode_batch(texts)` on this process's own pool (`tokenizers` parallelises on
/// the current rayon pool); one text is encoded here, without a trip to a pool thread.
pub(crate) fn encode_batch(
    tokenizer: &tokenizers::Tokenizer,
    texts: Vec<&str>,
    special_tokens: bool,
) -> tokenizers::Result<Vec<tokenizers::Encoding>> {
    if let [text] = texts[..] {
        return tokenizer.encode(text, special_tokens).map(|e| vec![e]);
    }
    crate::helpers::in_own_pool(|| tokenizer.encode_batch(texts, special_tokens))
}

/// A local model that turns texts into unit vectors.
pub trait Embedder: Send + Sync {
    /// Length of every vector.
    fn dims(&self) -> usize;

    /// One normalised vector per text, concatenated (`texts.len() * dims()` values).
    ///
    /// # Errors
    ///
    /// [`Error::Model`] when the tokenizer or the model fails on the input.
    fn embed(&self, texts: &[&str]) -> Result<Vec<f32>>;

    /// The vector of a search query. Engines whose models embed queries and documents
    /// differently (remote APIs with an input type) override this.
    ///
    /// # Errors
    ///
    /// As [`Self::embed`].
    fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        self.embed(&[text])
    }

    /// The token ids the model sees for each text (after truncation).
    ///
    /// # Errors
    ///
    /// [`Error::Model`] when the tokenizer fails.
    fn tokenize(&self, texts: &[&str]) -> Result<Vec<Vec<u32>>>;

    /// Share of this engine's channel in hybrid ranking (see `semantic::fuse`) when the user
    /// sets none: how far its nearest neighbours can be trusted against BM25F.
    fn fusion_weight(&self) -> f32 {
        DEFAULT_FUSION_WEIGHT
    }
}

/// Fusion weight of a sentence-embedding model: with chunks merged up to a window, doc-to-code
/// MRR@10 peaks at 0.3 with all-MiniLM-L6-v2 on both halves of the quality benchmark and falls
/// below lexical-only on the holdout half at 0.5 (benches/quality/README.md, "Semantic channel").
pub const DEFAULT_FUSION_WEIGHT: f32 = 0.3;

/// The vectors of the latest queries an engine embedded, for engines whose pass costs more
/// than a look-up.
#[derive(Default)]
pub(crate) struct RecentQueries {
    /// Newest first.
    entries: Mutex<VecDeque<(String, Vec<f32>)>>,
}

impl RecentQueries {
    const KEPT: usize = 16;

    /// The vector of `text`, remembered or computed by `embed` (and then remembered). The
    /// lock is not held through `embed`: other threads' queries go on meanwhile.
    pub(crate) fn get_or_embed(
        &self,
        text: &str,
        embed: impl FnOnce() -> Result<Vec<f32>>,
    ) -> Result<Vec<f32>> {
        let find = |entries: &VecDeque<(String, Vec<f32>)>| {
            entries
                .iter()
                .find(|(q, _)| q == text)
                .map(|(_, v)| v.clone())
        };
        if let Some(vector) = find(&self.lock()) {
            return Ok(vector);
        }
        let vector = embed()?;
        let mut entries = self.lock();
        if find(&entries).is_none() {
            entries.push_front((text.to_owned(), vector.clone()));
            entries.truncate(Self::KEPT);
        }
        Ok(vector)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(String, Vec<f32>)>> {
        // A panic while it was held leaves at worst one entry too many: the list stays usable.
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Scales `v` to length 1 (a zero vector stays zero).
pub(crate) fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for x in v {
            *x /= norm;
        }
    }
}

/// An error about the model folder `dir`.
pub(crate) fn model_error(dir: &Path, reason: impl std::fmt::Display) -> Error {
    Error::Model {
        path: dir.to_path_buf(),
        reason: reason.to_string(),
    }
}

/// `dir/name`, which must exist.
pub(crate) fn model_file(dir: &Path, name: &str) -> Result<PathBuf> {
    let path = dir.join(name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(model_error(dir, format!("{name} is missing")))
    }
}

/// Loads `tokenizer.json` from `dir` with truncation at `max_tokens` and no padding (batches
/// are padded to their own longest input).
pub(crate) fn load_tokenizer(dir: &Path, max_tokens: usize) -> Result<tokenizers::Tokenizer> {
    let mut tokenizer = tokenizers::Tokenizer::from_file(model_file(dir, "tokenizer.json")?)
        .map_err(|e| model_error(dir, format!("tokenizer.json: {e}")))?;
    tokenizer
        .with_truncation(Some(tokenizers::TruncationParams {
            max_length: max_tokens,
            ..tokenizers::TruncationParams::default()
        }))
        .map_err(|e| model_error(dir, format!("tokenizer.json: {e}")))?;
    tokenizer.with_padding(None);
    Ok(tokenizer)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::cell::Cell;

    use super::*;

    #[test]
    fn a_recent_query_is_not_embedded_again_and_the_oldest_are_forgotten() {
        let recent = RecentQueries::default();
        let passes = Cell::new(0);
        let embed = |text: &str| {
            recent.get_or_embed(text, || {
                passes.set(passes.get() + 1);
                #[allow(clippy::cast_precision_loss)]
                Ok(vec![text.len() as f32])
            })
        };
        assert_eq!(embed("retry on 429").unwrap(), vec![12.0]);
        assert_eq!(embed("retry on 429").unwrap(), vec![12.0]);
        assert_eq!(passes.get(), 1);
        for n in 0..RecentQueries::KEPT {
            embed(&format!("query {n}")).unwrap();
        }
        assert_eq!(passes.get(), 1 + RecentQueries::KEPT);
        embed("retry on 429").unwrap(); // pushed out by the newer ones
        assert_eq!(passes.get(), 2 + RecentQueries::KEPT);
        let failed = recent.get_or_embed("broken", || Err(Error::InvalidArgument("no".into())));
        assert!(failed.is_err());
        assert!(recent.get_or_embed("broken", || Ok(vec![1.0])).is_ok()); // errors not kept
    }
}

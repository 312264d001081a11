//! Static embeddings in the Model2Vec format: one vector per token, looked up and averaged.
//!
//! The folder holds `tokenizer.json`, `model.safetensors` with an `embeddings` matrix
//! (vocabulary × dims, any float type) and optionally per-token `weights`, and `config.json`
//! (`normalize`, default true). Texts are tokenized without special tokens, the unknown
//! token is dropped, the rows are averaged (weighted when weights are given) and normalised.
//! No matrix products: microseconds per chunk, dominated by tokenization.

use std::path::Path;

use candle_core::{DType, Device};

use rayon::prelude::*;

use super::wordpiece::FastWordPiece;
use super::{Embedder, load_tokenizer, model_error, model_file, normalize};
use crate::error::Result;

/// Tokens of a text that count; the rest is cut (Model2Vec's own default).
const MAX_TOKENS: usize = 512;

/// A static embedding model loaded from a local folder.
pub struct StaticEmbedder {
    tokenizer: tokenizers::Tokenizer,
    /// WordPiece without offset tracking, when the tokenizer's pipeline is BERT's.
    fast: Option<FastWordPiece>,
    /// Row-major vocabulary × dims.
    table: Vec<f32>,
    weights: Option<Vec<f32>>,
    dims: usize,
    unknown: Option<u32>,
    normalize: bool,
    dir: std::path::PathBuf,
}

impl StaticEmbedder {
    /// Loads the model in `dir`.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Model`] naming the file that is missing, unreadable or inconsistent.
    pub fn load(dir: &Path) -> Result<Self> {
        let tokenizer = load_tokenizer(dir, MAX_TOKENS)?;
        let normalize = match std::fs::read_to_string(dir.join("config.json")) {
            Ok(text) => serde_json::from_str::<serde_json::Value>(&text)
                .map_err(|e| model_error(dir, format!("config.json: {e}")))?
                .get("normalize")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(true),
            Err(_) => true,
        };
        let tensors =
            candle_core::safetensors::load(model_file(dir, "model.safetensors")?, &Device::Cpu)
                .map_err(|e| model_error(dir, format!("model.safetensors: {e}")))?;
        let bad = |e: candle_core::Error| model_error(dir, format!("model.safetensors: {e}"));
        let matrix = tensors
            .get("embeddings")
            .ok_or_else(|| model_error(dir, "model.safetensors has no `embeddings` tensor"))?;
        let (rows, dims) = matrix.dims2().map_err(bad)?;
        let table = matrix
            .to_dtype(DType::F32)
            .and_then(|t| t.flatten_all())
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(bad)?;
        let weights = match tensors.get("weights") {
            Some(w) => {
                let w = w
                    .to_dtype(DType::F32)
                    .and_then(|t| t.to_vec1::<f32>())
                    .map_err(bad)?;
                if w.len() != rows {
                    return Err(model_error(
                        dir,
                        "`weights` and `embeddings` disagree in length",
                    ));
                }
                Some(w)
            }
            None => None,
        };
        let vocab = tokenizer.get_vocab_size(true);
        if vocab > rows {
            return Err(model_error(
                dir,
                format!("the tokenizer has {vocab} tokens but the table only {rows} rows"),
            ));
        }
        let unknown = ["[UNK]", "<unk>"]
            .iter()
            .find_map(|t| tokenizer.token_to_id(t));
        Ok(StaticEmbedder {
            fast: FastWordPiece::of(&tokenizer),
            tokenizer,
            table,
            weights,
            dims,
            unknown,
            normalize,
            dir: dir.to_path_buf(),
        })
    }

    /// The table with each row scaled by its token's weight (a copy; the table itself if the
    /// model has no weights), and its width.
    pub(crate) fn weighted_table(&self) -> (Vec<f32>, usize) {
        let mut table = self.table.clone();
        if let Some(weights) = &self.weights {
            for (row, w) in table.chunks_exact_mut(self.dims).zip(weights) {
                row.iter_mut().for_each(|x| *x *= w);
            }
        }
        (table, self.dims)
    }

    /// The token ids of each text that pooling reads: the unknown token and ids past the table
    /// left out.
    pub(crate) fn pooled_ids(&self, texts: &[&str]) -> Result<Vec<Vec<u32>>> {
        let rows = self.table.len() / self.dims.max(1);
        let mut ids = self.tokenize(texts)?;
        for text in &mut ids {
            text.retain(|&id| Some(id) != self.unknown && (id as usize) < rows);
        }
        Ok(ids)
    }

    /// The mean of the rows of `ids` (weighted), normalised if the model says so.
    fn pool(&self, ids: &[u32], out: &mut [f32]) {
        let mut total = 0.0f32;
        for &id in ids {
            if Some(id) == self.unknown {
                continue;
            }
            let row = id as usize;
            let Some(values) = self.table.get(row * self.dims..(row + 1) * self.dims) else {
                continue;
            };
            let weight = self.weights.as_ref().map_or(1.0, |w| w[row]);
            for (o, v) in out.iter_mut().zip(values) {
                *o += weight * v;
            }
            total += weight;
        }
        if total > 0.0 {
            for o in out.iter_mut() {
                *o /= total;
            }
        }
        if self.normalize {
            normalize(out);
        }
    }
}

/// Fusion weight of a static model: averaged token vectors are a weak signal beside BM25F
/// (a model distilled from all-MiniLM-L6-v2 helps doc-to-code up to 0.2 and hurts beyond,
/// benches/quality/README.md), so they only reorder close lexical calls.
const STATIC_FUSION_WEIGHT: f32 = 0.1;

impl Embedder for StaticEmbedder {
    fn dims(&self) -> usize {
        self.dims
    }

    fn fusion_weight(&self) -> f32 {
        STATIC_FUSION_WEIGHT
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<f32>> {
        let ids = self.tokenize(texts)?;
        let mut out = vec![0.0f32; texts.len() * self.dims];
        // Pooling reads a table row per token (a kilobyte at 256 dimensions): as long as
        // tokenizing, so it runs on every core too.
        if texts.len() > 1 {
            crate::helpers::in_own_pool(|| {
                ids.par_iter()
                    .zip(out.par_chunks_exact_mut(self.dims))
                    .for_each(|(ids, row)| self.pool(ids, row));
            });
        } else {
            for (ids, row) in ids.iter().zip(out.chunks_exact_mut(self.dims)) {
                self.pool(ids, row);
            }
        }
        Ok(out)
    }

    fn tokenize(&self, texts: &[&str]) -> Result<Vec<Vec<u32>>> {
        let fast = |text: &&str| {
            self.fast
                .as_ref()
                .and_then(|fast| fast.encode(text, MAX_TOKENS))
        };
        let mut ids: Vec<Option<Vec<u32>>> = if texts.len() > 1 {
            crate::helpers::in_own_pool(|| texts.par_iter().map(fast).collect())
        } else {
            texts.iter().map(fast).collect()
        };
        let rest: Vec<usize> = (0..texts.len()).filter(|&i| ids[i].is_none()).collect();
        if !rest.is_empty() {
            let rest_texts = rest.iter().map(|&i| texts[i]).collect();
            let encodings = crate::embed::encode_batch(&self.tokenizer, rest_texts, false)
                .map_err(|e| model_error(&self.dir, format!("tokenizer: {e}")))?;
            for (i, encoding) in rest.into_iter().zip(encodings) {
                ids[i] = Some(encoding.get_ids().to_vec());
            }
        }
        Ok(ids.into_iter().map(Option::unwrap_or_default).collect())
    }
}

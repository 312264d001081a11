//! BERT-family sentence embeddings (all-MiniLM-L6-v2, bge-small, …) run in-process with candle.
//!
//! The model folder holds `config.json`, `tokenizer.json` and `model.safetensors`. Texts are
//! tokenized with an explicit truncation (the tokenizer file's own is overridden), sorted by
//! length so each batch pads to little, run through the encoder, mean-pooled over the
//! attention mask and L2-normalised: what sentence-transformers does for these models.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};

use super::{Embedder, RecentQueries, load_tokenizer, model_error, model_file, normalize};
use crate::error::Result;

/// Tokens per forward pass (batch size × padded length): large enough to keep the matrix
/// kernels busy, small enough that attention's `len²` buffers stay in cache-friendly sizes.
const BATCH_TOKENS: usize = 8192;

/// Which token states a vector averages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pooling {
    /// Every real token, special ones included (sentence-transformers' mean pooling).
    All,
    /// All but the first and last (the special tokens around a single vocabulary token).
    Inner,
}

/// A sentence-embedding transformer loaded from a local folder.
pub struct TransformerEmbedder {
    model: BertModel,
    tokenizer: tokenizers::Tokenizer,
    dims: usize,
    vocab_size: usize,
    pad_id: u32,
    dir: PathBuf,
    device: Device,
    /// One question is often asked of several channels at once (`ask` searches code and
    /// memory), and a pass through the model costs milliseconds.
    recent: RecentQueries,
}

impl TransformerEmbedder {
    /// Loads the model in `dir`, cutting inputs to `max_tokens` tokens (special ones included).
    ///
    /// # Errors
    ///
    /// [`crate::Error::Model`] naming the file that is missing or unreadable.
    pub fn load(dir: &Path, max_tokens: usize) -> Result<Self> {
        let config_text = std::fs::read_to_string(model_file(dir, "config.json")?)
            .map_err(|e| model_error(dir, format!("config.json: {e}")))?;
        let config: Config = serde_json::from_str(&config_text)
            .map_err(|e| model_error(dir, format!("config.json is not a BERT config: {e}")))?;
        let max_tokens = max_tokens.clamp(2, config.max_position_embeddings);
        let tokenizer = load_tokenizer(dir, max_tokens)?;
        let weights = std::fs::read(model_file(dir, "model.safetensors")?)
            .map_err(|e| model_error(dir, format!("model.safetensors: {e}")))?;
        let device = Device::Cpu;
        let tensors = candle_core::safetensors::load_buffer(&weights, &device)
            .and_then(|tensors| {
                tensors
                    .into_iter()
                    .map(|(name, t)| Ok((name.clone(), for_matmul(&name, t)?)))
                    .collect::<candle_core::Result<_>>()
            })
            .map_err(|e| model_error(dir, format!("model.safetensors: {e}")))?;
        drop(weights);
        let vb = VarBuilder::from_tensors(tensors, DType::F32, &device);
        let model = BertModel::load(vb, &config)
            .map_err(|e| model_error(dir, format!("model.safetensors: {e}")))?;
        let pad_id = u32::try_from(config.pad_token_id).unwrap_or(0);
        Ok(TransformerEmbedder {
            model,
            tokenizer,
            dims: config.hidden_size,
            vocab_size: config.vocab_size,
            pad_id,
            dir: dir.to_path_buf(),
            device,
            recent: RecentQueries::default(),
        })
    }

    /// The tokenizer, as loaded (with this engine's truncation).
    #[must_use]
    pub fn tokenizer(&self) -> &tokenizers::Tokenizer {
        &self.tokenizer
    }

    /// Number of token ids the model knows.
    #[must_use]
    pub fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// Token ids of each text, special tokens included, truncated.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Model`] if the tokenizer fails.
    pub fn token_ids(&self, texts: &[&str]) -> Result<Vec<Vec<u32>>> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| model_error(&self.dir, format!("tokenizer: {e}")))?;
        Ok(encodings.iter().map(|e| e.get_ids().to_vec()).collect())
    }

    /// Embeds already tokenized inputs (each with its special tokens).
    ///
    /// # Errors
    ///
    /// [`crate::Error::Model`] if an id is out of the vocabulary or the model fails.
    pub fn embed_ids(&self, inputs: &[Vec<u32>]) -> Result<Vec<f32>> {
        self.embed_ids_pooled(inputs, Pooling::All)
    }

    /// Like [`embed_ids`](Self::embed_ids), choosing which positions are averaged.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Model`] if an id is out of the vocabulary or the model fails.
    pub fn embed_ids_pooled(&self, inputs: &[Vec<u32>], pooling: Pooling) -> Result<Vec<f32>> {
        let mut out = vec![0.0f32; inputs.len() * self.dims];
        let mut order: Vec<usize> = (0..inputs.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(inputs[i].len()));
        let mut at = 0;
        while at < order.len() {
            let longest = inputs[order[at]].len().max(1);
            let size = (BATCH_TOKENS / longest).max(1).min(order.len() - at);
            let batch = &order[at..at + size];
            let pooled = self
                .forward(
                    batch.iter().map(|&i| inputs[i].as_slice()),
                    longest,
                    pooling,
                )
                .map_err(|e| model_error(&self.dir, format!("inference: {e}")))?;
            for (row, &i) in pooled.chunks_exact(self.dims).zip(batch) {
                let target = &mut out[i * self.dims..(i + 1) * self.dims];
                target.copy_from_slice(row);
                normalize(target);
            }
            at += size;
        }
        Ok(out)
    }

    /// Mean-pooled last hidden states of one padded batch, row-major.
    fn forward<'a>(
        &self,
        batch: impl ExactSizeIterator<Item = &'a [u32]>,
        len: usize,
        pooling: Pooling,
    ) -> candle_core::Result<Vec<f32>> {
        let rows = batch.len();
        let mut ids = Vec::with_capacity(rows * len);
        let mut mask = Vec::with_capacity(rows * len);
        let mut pooled = Vec::with_capacity(rows * len);
        for input in batch {
            if let Some(&bad) = input.iter().find(|&&id| id as usize >= self.vocab_size) {
                candle_core::bail!("token id {bad} is outside the vocabulary");
            }
            ids.extend_from_slice(input);
            ids.extend(std::iter::repeat_n(self.pad_id, len - input.len()));
            mask.extend(std::iter::repeat_n(1u32, input.len()));
            mask.extend(std::iter::repeat_n(0u32, len - input.len()));
            let inner = pooling == Pooling::Inner && input.len() > 2;
            pooled.extend((0..len).map(|i| {
                let inside = i < input.len() && !(inner && (i == 0 || i + 1 == input.len()));
                f32::from(u8::from(inside))
            }));
        }
        let ids = Tensor::from_vec(ids, (rows, len), &self.device)?;
        let mask = Tensor::from_vec(mask, (rows, len), &self.device)?;
        let types = ids.zeros_like()?;
        let hidden = self.model.forward(&ids, &types, Some(&mask))?;
        let weights = Tensor::from_vec(pooled, (rows, len), &self.device)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&weights)?.sum(1)?;
        let counts = weights.sum(1)?.clamp(1e-9, f64::INFINITY)?;
        summed
            .broadcast_div(&counts)?
            .flatten_all()?
            .to_vec1::<f32>()
    }
}

/// A dense layer's weight (`out × in`) laid out so that its transpose, which the layer
/// multiplies by, is contiguous: gemm then reads it in place. Stored row-major, each call
/// for a few rows (a query) would first gather the whole matrix column by column, which
/// took half the time of embedding one query.
fn for_matmul(name: &str, tensor: Tensor) -> candle_core::Result<Tensor> {
    if tensor.rank() == 2 && name.ends_with(".weight") && !name.contains("embeddings") {
        tensor.t()?.contiguous()?.t()
    } else {
        Ok(tensor)
    }
}

impl Embedder for TransformerEmbedder {
    fn dims(&self) -> usize {
        self.dims
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<f32>> {
        self.embed_ids(&self.token_ids(texts)?)
    }

    fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        self.recent.get_or_embed(text, || self.embed(&[text]))
    }

    fn tokenize(&self, texts: &[&str]) -> Result<Vec<Vec<u32>>> {
        self.token_ids(texts)
    }
}

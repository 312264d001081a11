//! BERT-family sentence embeddings (all-MiniLM-L6-v2, bge-small, …) run in-process with candle.
//!
//! The model folder holds `config.json`, `tokenizer.json` and `model.safetensors`. Texts are
//! tokenized with an explicit truncation (the tokenizer file's own is overridden), sorted by
//! length so each batch pads to little, run through the encoder, pooled and L2-normalised:
//! what sentence-transformers does for these models. Pooling and prompts follow the folder's
//! sentence-transformers files when it has them (see [`Recipe`]): mean pooling over the
//! attention mask and no prompt otherwise.

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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Pooling {
    /// Every real token, special ones included (sentence-transformers' mean pooling).
    #[default]
    All,
    /// All but the first and last (the special tokens around a single vocabulary token).
    Inner,
    /// The first token's state alone (`[CLS]`: bge and other models trained so).
    Cls,
}

/// What a sentence-transformers folder says beyond the encoder: how token states pool into
/// one vector (`1_Pooling/config.json`, with whether a prompt's tokens enter the mean) and
/// the prompts put before a query or a document (`prompts` in
/// `config_sentence_transformers.json`: e5's `query: ` and `passage: `, bge's search
/// instruction). Without those files: mean pooling and no prompts, as all-MiniLM-L6-v2 wants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recipe {
    pub pooling: Pooling,
    pub query_prompt: String,
    pub document_prompt: String,
    /// Whether the mean takes in the prompt's tokens (and `[CLS]` before them);
    /// instruction-tuned models trained without them say `"include_prompt": false`.
    pub include_prompt: bool,
}

impl Default for Recipe {
    fn default() -> Self {
        Recipe {
            pooling: Pooling::default(),
            query_prompt: String::new(),
            document_prompt: String::new(),
            include_prompt: true,
        }
    }
}

impl Recipe {
    /// What sets this recipe apart from the default (mean pooling, no prompts), for a
    /// model's identity: empty for the default, so such models keep theirs.
    #[must_use]
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        // Spelled out, not Debug: the text is part of stored model ids.
        match self.pooling {
            Pooling::All => {}
            Pooling::Inner => parts.push("pooling=inner".to_owned()),
            Pooling::Cls => parts.push("pooling=cls".to_owned()),
        }
        for (name, prompt) in [
            ("query", &self.query_prompt),
            ("document", &self.document_prompt),
        ] {
            if !prompt.is_empty() {
                parts.push(format!("{name} prompt={prompt:?}"));
            }
        }
        if self.skips_prompt() {
            parts.push("prompt not pooled".to_owned());
        }
        parts.join("; ")
    }

    /// Whether some prompt is left out of the mean (without a prompt the flag changes nothing).
    fn skips_prompt(&self) -> bool {
        !self.include_prompt
            && self.pooling != Pooling::Cls
            && !(self.query_prompt.is_empty() && self.document_prompt.is_empty())
    }

    /// The recipe of the model in `dir`.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Model`] when a file is unreadable or not JSON, or asks for a pooling
    /// other than mean or CLS (max, last token, weighted mean), which would give vectors the
    /// model was not trained for.
    pub fn read(dir: &Path) -> Result<Self> {
        let read = |name: &str| -> Result<Option<serde_json::Value>> {
            match std::fs::read_to_string(dir.join(name)) {
                Ok(text) => serde_json::from_str(&text)
                    .map(Some)
                    .map_err(|e| model_error(dir, format!("{name}: {e}"))),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(model_error(dir, format!("{name}: {e}"))),
            }
        };
        let mut recipe = Recipe::default();
        if let Some(config) = read("1_Pooling/config.json")? {
            let modes: Vec<&str> = config
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(_, on)| on.as_bool() == Some(true))
                .filter_map(|(key, _)| key.strip_prefix("pooling_mode_"))
                .collect();
            recipe.pooling = match modes.as_slice() {
                [] | ["mean_tokens"] => Pooling::All,
                ["cls_token"] => Pooling::Cls,
                other => {
                    return Err(model_error(
                        dir,
                        format!(
                            "1_Pooling/config.json asks for {} pooling; only mean or CLS \
                             pooling is supported",
                            other.join(" + ")
                        ),
                    ));
                }
            };
            recipe.include_prompt = config["include_prompt"].as_bool().unwrap_or(true);
        }
        if let Some(config) = read("config_sentence_transformers.json")? {
            let prompts = &config["prompts"];
            let prompt = |names: &[&str]| {
                names
                    .iter()
                    .find_map(|name| prompts[*name].as_str())
                    .unwrap_or_default()
                    .to_owned()
            };
            recipe.query_prompt = prompt(&["query"]);
            recipe.document_prompt = prompt(&["document", "passage", "corpus"]);
        }
        Ok(recipe)
    }
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
    recipe: Recipe,
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
        let recipe = Recipe::read(dir)?;
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
            recipe,
            recent: RecentQueries::default(),
        })
    }

    /// How this model pools and prompts (from its folder, unless replaced).
    #[must_use]
    pub fn recipe(&self) -> &Recipe {
        &self.recipe
    }

    /// Replaces the prompts the folder names (`None` keeps the folder's; an empty prompt
    /// means none), for a model whose folder does not say what it was trained with.
    pub fn set_prompts(&mut self, query: Option<String>, document: Option<String>) {
        if let Some(query) = query {
            self.recipe.query_prompt = query;
        }
        if let Some(document) = document {
            self.recipe.document_prompt = document;
        }
    }

    /// Token ids of `texts` with `prompt` before each.
    fn prompted_ids(&self, prompt: &str, texts: &[&str]) -> Result<Vec<Vec<u32>>> {
        if prompt.is_empty() {
            return self.token_ids(texts);
        }
        let texts: Vec<String> = texts.iter().map(|text| format!("{prompt}{text}")).collect();
        self.token_ids(&texts.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// Embeds `texts` with `prompt` before each, leaving the prompt's positions out of the
    /// mean when the recipe says so: `[CLS]` and the prompt's tokens, counted as
    /// sentence-transformers counts them (the prompt tokenized alone, less its `[SEP]`).
    fn embed_prompted(&self, prompt: &str, texts: &[&str]) -> Result<Vec<f32>> {
        let inputs = self.prompted_ids(prompt, texts)?;
        let skip = if self.recipe.include_prompt || prompt.is_empty() {
            0
        } else {
            self.token_ids(&[prompt])?[0].len().saturating_sub(1)
        };
        self.embed_skipping(&inputs, self.recipe.pooling, skip)
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
        let encodings = super::encode_batch(&self.tokenizer, texts.to_vec(), true)
            .map_err(|e| model_error(&self.dir, format!("tokenizer: {e}")))?;
        Ok(encodings.iter().map(|e| e.get_ids().to_vec()).collect())
    }

    /// Embeds already tokenized inputs (each with its special tokens), pooled as the model's
    /// recipe says.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Model`] if an id is out of the vocabulary or the model fails.
    pub fn embed_ids(&self, inputs: &[Vec<u32>]) -> Result<Vec<f32>> {
        self.embed_ids_pooled(inputs, self.recipe.pooling)
    }

    /// Like [`embed_ids`](Self::embed_ids), choosing which positions are averaged.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Model`] if an id is out of the vocabulary or the model fails.
    pub fn embed_ids_pooled(&self, inputs: &[Vec<u32>], pooling: Pooling) -> Result<Vec<f32>> {
        self.embed_skipping(inputs, pooling, 0)
    }

    /// Like [`embed_ids_pooled`](Self::embed_ids_pooled), a mean leaving out each input's
    /// first `skip` positions (never its last).
    fn embed_skipping(
        &self,
        inputs: &[Vec<u32>],
        pooling: Pooling,
        skip: usize,
    ) -> Result<Vec<f32>> {
        // candle's matrix products run on the current rayon pool.
        crate::helpers::in_own_pool(|| self.embed_skipping_here(inputs, pooling, skip))
    }

    fn embed_skipping_here(
        &self,
        inputs: &[Vec<u32>],
        pooling: Pooling,
        skip: usize,
    ) -> Result<Vec<f32>> {
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
                    skip,
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

    /// Pooled last hidden states of one padded batch, row-major.
    fn forward<'a>(
        &self,
        batch: impl ExactSizeIterator<Item = &'a [u32]>,
        len: usize,
        pooling: Pooling,
        skip: usize,
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
            // A prompt that truncation left alone in the input keeps its last token in.
            let first = skip.min(input.len().saturating_sub(1));
            pooled.extend((0..len).map(|i| {
                let inside = match pooling {
                    Pooling::Cls => i == 0,
                    _ => {
                        i < input.len()
                            && i >= first
                            && !(inner && (i == 0 || i + 1 == input.len()))
                    }
                };
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
        self.embed_prompted(&self.recipe.document_prompt, texts)
    }

    fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        self.recent.get_or_embed(text, || {
            self.embed_prompted(&self.recipe.query_prompt, &[text])
        })
    }

    fn tokenize(&self, texts: &[&str]) -> Result<Vec<Vec<u32>>> {
        self.prompted_ids(&self.recipe.document_prompt, texts)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn recipe(files: &[(&str, &str)]) -> Result<Recipe> {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        Recipe::read(dir.path())
    }

    #[test]
    fn a_recipe_follows_the_sentence_transformers_files() {
        assert_eq!(recipe(&[]).unwrap(), Recipe::default());
        assert_eq!(Recipe::default().describe(), "");
        let bge = recipe(&[(
            "1_Pooling/config.json",
            r#"{"word_embedding_dimension": 384, "pooling_mode_cls_token": true,
                "pooling_mode_mean_tokens": false, "include_prompt": true}"#,
        )])
        .unwrap();
        assert_eq!(bge.pooling, Pooling::Cls);
        assert_eq!(bge.describe(), "pooling=cls");
        let e5 = recipe(&[(
            "config_sentence_transformers.json",
            r#"{"prompts": {"query": "query: ", "passage": "passage: "}, "default_prompt_name": null}"#,
        )])
        .unwrap();
        assert_eq!(
            (
                e5.pooling,
                e5.query_prompt.as_str(),
                e5.document_prompt.as_str()
            ),
            (Pooling::All, "query: ", "passage: ")
        );
        // No prompts named: none used.
        let plain = recipe(&[("config_sentence_transformers.json", r#"{"prompts": {}}"#)]);
        assert_eq!(plain.unwrap(), Recipe::default());
        // A prompt left out of the mean; without a prompt that changes nothing.
        let pooled = r#"{"pooling_mode_mean_tokens": true, "include_prompt": false}"#;
        let instructed = recipe(&[
            ("1_Pooling/config.json", pooled),
            (
                "config_sentence_transformers.json",
                r#"{"prompts": {"query": "Find: "}}"#,
            ),
        ])
        .unwrap();
        assert!(!instructed.include_prompt);
        assert_eq!(
            instructed.describe(),
            r#"query prompt="Find: "; prompt not pooled"#
        );
        let unprompted = recipe(&[("1_Pooling/config.json", pooled)]).unwrap();
        assert_eq!(unprompted.describe(), "");
    }

    #[test]
    fn a_recipe_the_engine_cannot_follow_is_refused_by_name() {
        let max = recipe(&[(
            "1_Pooling/config.json",
            r#"{"pooling_mode_max_tokens": true, "pooling_mode_mean_tokens": true}"#,
        )]);
        let message = max.unwrap_err().to_string();
        assert!(
            message.contains("max_tokens + mean_tokens pooling"),
            "{message}"
        );
        let broken = recipe(&[("config_sentence_transformers.json", "{not json")]);
        assert!(
            broken
                .unwrap_err()
                .to_string()
                .contains("config_sentence_transformers.json")
        );
    }
}

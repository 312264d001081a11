//! Distillation of a static model from a transformer, offline: every vocabulary token is embedded
//! by the transformer on its own, the table is reduced with PCA, and rows are weighted so that
//! frequent tokens count less (smooth inverse frequency, as Model2Vec does). A user with only a
//! transformer on disk gets the fast engine.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::{Device, Tensor};

use super::transformer::Pooling;
use super::{Embedder as _, TransformerEmbedder, model_error};
use crate::error::{Error, Result};

/// Inputs embedded per call, so progress can be reported and memory stays bounded.
const TOKENS_PER_STEP: usize = 2048;

/// The SIF coefficient `a` of the weight `a / (a + p(token))`.
const SIF: f64 = 1e-3;

/// How to distill.
#[derive(Clone, Debug)]
pub struct DistillOptions {
    /// Dimensions of the static vectors (PCA); at most the transformer's own.
    pub dims: usize,
    /// Occurrences of each token id in a representative corpus. Without them, the token's rank
    /// in the vocabulary stands in for its frequency (Zipf), as for Model2Vec's own models.
    pub frequencies: Option<Vec<f64>>,
}

impl Default for DistillOptions {
    fn default() -> Self {
        DistillOptions {
            dims: 256,
            frequencies: None,
        }
    }
}

/// What a distillation produced.
#[derive(Clone, Debug)]
pub struct DistillReport {
    pub tokens: usize,
    pub dims: usize,
    /// Share of the variance the kept PCA components explain.
    pub explained_variance: f64,
    pub output: PathBuf,
}

/// Builds a static model in `dst` from the transformer in `src`. `progress(done, total)` is
/// called after each step of embedding; an error it returns stops the run (Ctrl-C). `dst` is
/// written beside and renamed into place, so an interrupted run leaves no half-written model.
///
/// # Errors
///
/// [`Error::Model`] for an unusable source folder, [`Error::Io`] if `dst` cannot be written,
/// [`Error::InvalidArgument`] for zero dimensions or more than the transformer's, or an
/// existing `dst`; whatever `progress` returns.
pub fn distill(
    src: &Path,
    dst: &Path,
    options: &DistillOptions,
    progress: &(dyn Fn(usize, usize) -> Result<()> + Sync),
) -> Result<DistillReport> {
    if options.dims == 0 {
        return Err(Error::InvalidArgument("dims must be at least 1".into()));
    }
    check_destination(dst)?;
    let teacher = TransformerEmbedder::load(src, 16)?;
    if options.dims > teacher.dims() {
        // Checked before minutes of work: PCA cannot add dimensions.
        return Err(Error::InvalidArgument(format!(
            "dims must be at most {}, the width of the transformer in {}",
            teacher.dims(),
            src.display()
        )));
    }
    let vocab = teacher
        .tokenizer()
        .get_vocab_size(true)
        .min(teacher.vocab_size());
    // The special tokens the tokenizer wraps every input in ([CLS] … [SEP] for BERT).
    let frame = teacher.token_ids(&[""])?.pop().unwrap_or_default();
    let (open, close) = frame.split_at(frame.len().min(1));
    let hidden = {
        let mut table = Vec::with_capacity(vocab * 384);
        let ids: Vec<u32> = (0..u32::try_from(vocab).unwrap_or(u32::MAX)).collect();
        for (step, chunk) in ids.chunks(TOKENS_PER_STEP).enumerate() {
            let inputs: Vec<Vec<u32>> = chunk
                .iter()
                .map(|&id| open.iter().chain([&id]).chain(close).copied().collect())
                .collect();
            table.extend(teacher.embed_ids_pooled(&inputs, Pooling::Inner)?);
            progress(((step + 1) * TOKENS_PER_STEP).min(vocab), vocab)?;
        }
        table
    };
    let width = hidden.len() / vocab.max(1);
    let dims = options.dims.min(width);
    let (mut reduced, explained) = pca(&hidden, vocab, width, dims);
    let weights = sif_weights(vocab, options.frequencies.as_deref());
    for (row, w) in reduced.chunks_exact_mut(dims).zip(&weights) {
        for x in row {
            *x *= w;
        }
    }
    let config = serde_json::json!({
        "model_type": "model2vec",
        "architectures": ["StaticModel"],
        "hidden_dim": dims,
        "normalize": true,
        "apply_pca": dims,
        "sif_coefficient": SIF,
        "explained_variance": explained,
        "distilled_from": src.file_name().map(|n| n.to_string_lossy().into_owned()),
        "distilled_by": concat!("coderecall ", env!("CARGO_PKG_VERSION")),
    });
    write_model(src, dst, &reduced, vocab, dims, &config)?;
    Ok(DistillReport {
        tokens: vocab,
        dims,
        explained_variance: explained,
        output: dst.to_path_buf(),
    })
}

/// `a / (a + p)` per token, `p` its probability (from counts, or Zipf over the ranks).
#[allow(clippy::cast_precision_loss)]
fn sif_weights(vocab: usize, frequencies: Option<&[f64]>) -> Vec<f32> {
    let probabilities: Vec<f64> = match frequencies {
        Some(counts) => {
            let total: f64 = counts.iter().take(vocab).sum::<f64>().max(1.0);
            (0..vocab)
                .map(|i| counts.get(i).copied().unwrap_or(0.0) / total)
                .collect()
        }
        None => {
            let harmonic: f64 = (1..=vocab).map(|r| 1.0 / r as f64).sum();
            (1..=vocab).map(|r| 1.0 / (r as f64 * harmonic)).collect()
        }
    };
    #[allow(clippy::cast_possible_truncation)]
    probabilities
        .into_iter()
        .map(|p| (SIF / (SIF + p)) as f32)
        .collect()
}

/// Projects the rows of `x` (`rows` × `width`) on their `dims` principal components; returns
/// the projection and the share of variance kept.
#[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
fn pca(x: &[f32], rows: usize, width: usize, dims: usize) -> (Vec<f32>, f64) {
    let mut mean = vec![0.0f64; width];
    for row in x.chunks_exact(width) {
        for (m, &v) in mean.iter_mut().zip(row) {
            *m += f64::from(v);
        }
    }
    for m in &mut mean {
        *m /= rows.max(1) as f64;
    }
    let mut cov = vec![0.0f64; width * width];
    let mut centred = vec![0.0f64; width];
    for row in x.chunks_exact(width) {
        for ((c, &v), m) in centred.iter_mut().zip(row).zip(&mean) {
            *c = f64::from(v) - m;
        }
        add_outer_upper(&mut cov, &centred);
    }
    let (values, vectors, order) = principal_components(cov, width);
    let total: f64 = values.iter().map(|v| v.max(0.0)).sum();
    let kept: f64 = order[..dims].iter().map(|&i| values[i].max(0.0)).sum();
    let mut out = Vec::with_capacity(rows * dims);
    for row in x.chunks_exact(width) {
        for &component in &order[..dims] {
            let dot: f64 = row
                .iter()
                .zip(&mean)
                .enumerate()
                .map(|(k, (&v, m))| (f64::from(v) - m) * vectors[k * width + component])
                .sum();
            out.push(dot as f32);
        }
    }
    (out, if total > 0.0 { kept / total } else { 1.0 })
}

/// Adds `rowᵀ row` to the upper triangle of the square matrix `gram` (`row.len()` wide).
pub(super) fn add_outer_upper(gram: &mut [f64], row: &[f64]) {
    let n = row.len();
    for (i, &ri) in row.iter().enumerate() {
        let line = &mut gram[i * n..(i + 1) * n];
        for (l, &rj) in line[i..].iter_mut().zip(&row[i..]) {
            *l += ri * rj;
        }
    }
}

/// Copies the upper triangle of the `n` × `n` matrix `a` into its lower one.
pub(super) fn mirror_upper(a: &mut [f64], n: usize) {
    for i in 0..n {
        for j in 0..i {
            a[i * n + j] = a[j * n + i];
        }
    }
}

/// Eigenvalues and eigenvectors of the symmetric `n` × `n` matrix whose upper triangle `a`
/// holds, and the components ordered by eigenvalue, largest first.
pub(super) fn principal_components(mut a: Vec<f64>, n: usize) -> (Vec<f64>, Vec<f64>, Vec<usize>) {
    mirror_upper(&mut a, n);
    let (values, vectors) = symmetric_eigen(a, n);
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&x, &y| values[y].total_cmp(&values[x]));
    (values, vectors, order)
}

/// Eigenvalues and eigenvectors (columns of a row-major `n` × `n` matrix) of the symmetric
/// matrix `a`, by cyclic Jacobi rotations: simple, and exact enough for a few hundred
/// dimensions in well under a second.
fn symmetric_eigen(mut a: Vec<f64>, n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut v = vec![0.0f64; n * n];
    for i in 0..n {
        v[i * n + i] = 1.0;
    }
    let scale: f64 = a.iter().map(|x| x * x).sum::<f64>().max(f64::MIN_POSITIVE);
    for _sweep in 0..64 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i * n + j] * a[i * n + j])
            .sum();
        if off <= 1e-24 * scale {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = a[p * n + q];
                if apq.abs() <= f64::MIN_POSITIVE {
                    continue;
                }
                let theta = (a[q * n + q] - a[p * n + p]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let (akp, akq) = (a[k * n + p], a[k * n + q]);
                    a[k * n + p] = c * akp - s * akq;
                    a[k * n + q] = s * akp + c * akq;
                }
                for k in 0..n {
                    let (apk, aqk) = (a[p * n + k], a[q * n + k]);
                    a[p * n + k] = c * apk - s * aqk;
                    a[q * n + k] = s * apk + c * aqk;
                }
                for k in 0..n {
                    let (vkp, vkq) = (v[k * n + p], v[k * n + q]);
                    v[k * n + p] = c * vkp - s * vkq;
                    v[k * n + q] = s * vkp + c * vkq;
                }
            }
        }
    }
    ((0..n).map(|i| a[i * n + i]).collect(), v)
}

/// Refuses to write a model over anything that exists.
pub(super) fn check_destination(dst: &Path) -> Result<()> {
    if dst.exists() {
        return Err(Error::InvalidArgument(format!(
            "{} already exists; choose a new folder",
            dst.display()
        )));
    }
    Ok(())
}

/// Writes a static model into `dst`: `table` (`vocab` × `dims`), the tokenizer of the model in
/// `tokenizer_from`, and `config`. It is written beside and renamed into place, so an
/// interrupted run leaves no half-written model.
pub(super) fn write_model(
    tokenizer_from: &Path,
    dst: &Path,
    table: &[f32],
    vocab: usize,
    dims: usize,
    config: &serde_json::Value,
) -> Result<()> {
    let name = dst
        .file_name()
        .map_or_else(|| "model".into(), |n| n.to_string_lossy().into_owned());
    let staging = dst.with_file_name(format!(".{name}.partial-{}", std::process::id()));
    let io = |what: &str, e: std::io::Error| Error::io(format!("{what} {}", staging.display()), e);
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).map_err(|e| io("creating", e))?;
    let result = (|| {
        let tensor = Tensor::from_slice(table, (vocab, dims), &Device::Cpu)
            .map_err(|e| model_error(dst, e))?;
        let tensors: HashMap<String, Tensor> = [("embeddings".to_owned(), tensor)].into();
        candle_core::safetensors::save(&tensors, staging.join("model.safetensors"))
            .map_err(|e| model_error(dst, e))?;
        std::fs::copy(
            tokenizer_from.join("tokenizer.json"),
            staging.join("tokenizer.json"),
        )
        .map_err(|e| io("writing tokenizer.json in", e))?;
        std::fs::write(
            staging.join("config.json"),
            serde_json::to_string_pretty(config).unwrap_or_default(),
        )
        .map_err(|e| io("writing config.json in", e))?;
        std::fs::rename(&staging, dst)
            .map_err(|e| Error::io(format!("moving the model to {}", dst.display()), e))
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    result
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn jacobi_decomposes_a_symmetric_matrix() {
        let n = 7;
        let mut a = vec![0.0f64; n * n];
        for i in 0..n {
            for j in 0..=i {
                let x = ((i * 31 + j * 17) % 13) as f64 - 6.0;
                a[i * n + j] = x;
                a[j * n + i] = x;
            }
        }
        let (values, v) = symmetric_eigen(a.clone(), n);
        for i in 0..n {
            for j in 0..n {
                // V diag(λ) Vᵀ == A, and V is orthogonal.
                let rebuilt: f64 = (0..n)
                    .map(|k| v[i * n + k] * values[k] * v[j * n + k])
                    .sum();
                assert!((rebuilt - a[i * n + j]).abs() < 1e-9, "({i}, {j})");
                let dot: f64 = (0..n).map(|k| v[k * n + i] * v[k * n + j]).sum();
                assert!((dot - f64::from(u8::from(i == j))).abs() < 1e-9);
            }
        }
    }

    #[test]
    fn pca_keeps_the_dominant_direction_and_sif_downweights_frequent_tokens() {
        // Points along (1, 1, 0) with a little noise in z: one component explains nearly all.
        let x: Vec<f32> = (0..50)
            .flat_map(|i| {
                let t = i as f32 - 25.0;
                [t, t, if i % 2 == 0 { 0.01 } else { -0.01 }]
            })
            .collect();
        let (reduced, explained) = pca(&x, 50, 3, 1);
        assert_eq!(reduced.len(), 50);
        assert!(explained > 0.999, "{explained}");
        assert!((reduced[49] - reduced[0]).abs() > 60.0);
        let w = sif_weights(4, Some(&[100.0, 10.0, 1.0, 0.0]));
        assert!(w[0] < w[1] && w[1] < w[2] && w[2] < w[3] && (w[3] - 1.0).abs() < 1e-6);
        let zipf = sif_weights(1000, None);
        assert!(zipf[0] < zipf[10] && zipf[10] < zipf[999]);
    }
}

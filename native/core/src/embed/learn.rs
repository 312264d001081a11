//! Fitting a static model to a transformer on real texts (the idea of Model2Vec's
//! "tokenlearn"): a distilled table embeds every token alone, out of context, so the mean of a
//! chunk's rows drifts from what the transformer says of the whole chunk. Here the table is
//! refitted so that, over a corpus of the user's own texts, the mean of each text's rows comes
//! as close as it can to the transformer's vector of that text.
//!
//! The fit is linear least squares, solved in closed form where it is small and by conjugate
//! gradients where it is large, rather than by stochastic gradient descent: no learning rate,
//! no epochs, the same answer on every run.
//!
//! 1. Targets: the transformer's vectors, projected on their own top principal directions
//!    (uncentred, so cosines survive) to the static model's width.
//! 2. Alignment: the base table is mapped into that space by the one linear map that best
//!    carries the texts' mean rows onto their targets.
//! 3. Refit: every token that occurs in the corpus moves its row to minimise
//!    `Σ_texts |mean of its rows − target|² + λ Σ_tokens |row − aligned row|²`; tokens the corpus
//!    never shows keep their aligned rows, and the ridge `λ` keeps rare tokens near them.

use std::path::Path;

use rayon::prelude::*;

use super::distill::{
    add_outer_upper, check_destination, mirror_upper, principal_components, write_model,
};
use super::{DEFAULT_MAX_TOKENS, Embedder, StaticEmbedder, TransformerEmbedder};
use crate::error::{Error, Result};

/// How to fit.
#[derive(Clone, Debug)]
pub struct LearnOptions {
    /// Width of the learned rows (at most the teacher's).
    pub dims: usize,
    /// Ridges toward the aligned base rows to try, each relative to a token's mean squared
    /// weight in the texts, from the strongest: the one whose fit is best on the held-out texts
    /// is kept, and none if the aligned base fits them better still. With nothing held out,
    /// the first is used.
    pub ridges: Vec<f64>,
    /// Conjugate-gradient iterations at most.
    pub max_iterations: usize,
}

impl Default for LearnOptions {
    fn default() -> Self {
        LearnOptions {
            dims: 256,
            ridges: vec![10.0, 3.0, 1.0, 0.3, 0.1],
            max_iterations: 150,
        }
    }
}

/// What a fit achieved, measured on a tenth of the texts it did not learn from.
#[derive(Clone, Debug, Default)]
pub struct LearnReport {
    /// Texts learned from.
    pub texts: usize,
    /// Texts held out to measure the fit.
    pub held_out: usize,
    /// Distinct tokens whose rows were refitted.
    pub tokens: usize,
    /// Mean cosine between the model's and the teacher's vectors of the held-out texts, with the
    /// base table only aligned, then after the refit.
    pub cosine_before: f64,
    pub cosine_after: f64,
    /// The ridge kept; `None` when the aligned base rows fitted the held-out texts best.
    pub ridge: Option<f64>,
    /// Conjugate-gradient iterations, over all ridges tried.
    pub iterations: usize,
}

/// Texts the teacher embeds per call, so progress can be reported and memory stays bounded.
const TEXTS_PER_STEP: usize = 32;

/// Builds in `dst` a static model fitted to the transformer in `teacher` on `texts` (a sample of
/// the user's own code and comments), starting from the static model in `base`, whose tokenizer
/// it keeps. `progress(done, total)` is called as the teacher embeds the texts, which is where
/// the time goes (a transformer reads about ten code chunks per second per two cores); an
/// error it returns stops the run.
///
/// # Errors
///
/// [`Error::Model`] for an unusable model folder, [`Error::InvalidArgument`] for an existing
/// `dst` or texts with nothing to learn from, [`Error::Io`] if `dst` cannot be written.
pub fn learn(
    base: &Path,
    teacher: &Path,
    dst: &Path,
    texts: &[&str],
    options: &LearnOptions,
    progress: &(dyn Fn(usize, usize) -> Result<()> + Sync),
) -> Result<LearnReport> {
    check_destination(dst)?;
    let student = StaticEmbedder::load(base)?;
    let master = TransformerEmbedder::load(teacher, DEFAULT_MAX_TOKENS)?;
    let width = master.dims();
    let mut vectors = Vec::with_capacity(texts.len() * width);
    for (step, batch) in texts.chunks(TEXTS_PER_STEP).enumerate() {
        vectors.extend(master.embed(batch)?);
        progress(((step + 1) * TEXTS_PER_STEP).min(texts.len()), texts.len())?;
    }
    drop(master);
    let ids = student.pooled_ids(texts)?;
    let refs: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
    let (table, base_dims) = student.weighted_table();
    let options = LearnOptions {
        dims: options.dims.min(width),
        ..options.clone()
    };
    let (fitted, report) = learn_table(&table, base_dims, &refs, &vectors, width, &options)?;
    // The base's own description stays (what it was distilled from, say); what changed is added.
    let mut config = std::fs::read_to_string(base.join("config.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .filter(serde_json::Value::is_object)
        .unwrap_or_else(|| serde_json::json!({"model_type": "model2vec"}));
    let learned = serde_json::json!({
        "teacher": teacher.file_name().map(|n| n.to_string_lossy().into_owned()),
        "texts": report.texts,
        "held_out": report.held_out,
        "tokens": report.tokens,
        "ridge": report.ridge,
        "cosine_before": report.cosine_before,
        "cosine_after": report.cosine_after,
    });
    if let Some(fields) = config.as_object_mut() {
        fields.remove("apply_pca");
        fields.remove("explained_variance");
        fields.insert("hidden_dim".into(), options.dims.into());
        fields.insert("normalize".into(), true.into());
        fields.insert("learned".into(), learned);
    }
    write_model(
        base,
        dst,
        &fitted,
        table.len() / base_dims,
        options.dims,
        &config,
    )?;
    Ok(report)
}

/// Every tenth text is held out to choose the ridge and report the fit, once there are enough
/// to spare.
const HOLD_OUT_EVERY: usize = 10;
const MIN_TEXTS_TO_HOLD_OUT: usize = 50;
/// Relative residual at which conjugate gradients stop.
const TOLERANCE: f64 = 1e-4;

/// Texts as bags of tokens: each row lists its distinct tokens, each weighted by its share of
/// the text's tokens, so that `row · table` is the mean of the text's rows.
struct Bags {
    offsets: Vec<usize>,
    /// Column: the token's index among the tokens that occur (see [`Bags::tokens`]).
    cols: Vec<u32>,
    vals: Vec<f64>,
    /// Occurring token ids, ascending; the columns index into this.
    tokens: Vec<u32>,
}

impl Bags {
    fn new(texts: &[&[u32]], vocab: usize) -> Bags {
        let mut seen = vec![u32::MAX; vocab];
        let mut tokens = Vec::new();
        for &id in texts.iter().flat_map(|t| t.iter()) {
            if let Some(slot) = seen.get_mut(id as usize)
                && *slot == u32::MAX
            {
                *slot = 0;
                tokens.push(id);
            }
        }
        tokens.sort_unstable();
        for (i, &id) in tokens.iter().enumerate() {
            seen[id as usize] = u32::try_from(i).unwrap_or(u32::MAX);
        }
        let mut offsets = vec![0];
        let (mut cols, mut vals) = (Vec::new(), Vec::new());
        let mut counts: Vec<(u32, u32)> = Vec::new();
        for text in texts {
            counts.clear();
            counts.extend(
                text.iter()
                    .filter_map(|&id| seen.get(id as usize).map(|&c| (c, 1))),
            );
            counts.sort_unstable();
            counts.dedup_by(|next, kept| {
                let same = next.0 == kept.0;
                if same {
                    kept.1 += 1;
                }
                same
            });
            let total: u32 = counts.iter().map(|c| c.1).sum();
            for &(col, n) in &counts {
                cols.push(col);
                vals.push(f64::from(n) / f64::from(total.max(1)));
            }
            offsets.push(cols.len());
        }
        Bags {
            offsets,
            cols,
            vals,
            tokens,
        }
    }

    fn row(&self, i: usize) -> impl Iterator<Item = (usize, f64)> + '_ {
        let span = self.offsets[i]..self.offsets[i + 1];
        self.cols[span.clone()]
            .iter()
            .zip(&self.vals[span])
            .map(|(&c, &v)| (c as usize, v))
    }

    /// The rows of `texts` (a subset of row indices), each the weighted sum of `table`'s rows
    /// picked by `index(column)`, `dims` wide.
    fn mean_rows(
        &self,
        texts: &[usize],
        table: &[f64],
        dims: usize,
        index: impl Fn(usize) -> usize + Sync,
    ) -> Vec<f64> {
        let mut out = vec![0.0; texts.len() * dims];
        out.par_chunks_mut(dims)
            .zip(texts.par_iter())
            .for_each(|(o, &i)| {
                for (col, v) in self.row(i) {
                    let at = index(col) * dims;
                    let row = &table[at..at + dims];
                    for (x, r) in o.iter_mut().zip(row) {
                        *x += v * r;
                    }
                }
            });
        out
    }
}

/// `Aᵀ` of the training rows, by token: the texts each token occurs in, with its weight there.
struct Transposed {
    offsets: Vec<usize>,
    entries: Vec<(u32, f64)>,
}

impl Transposed {
    fn new(bags: &Bags, train: &[usize]) -> Transposed {
        let width = bags.tokens.len();
        let mut counts = vec![0usize; width + 1];
        for &i in train {
            for (col, _) in bags.row(i) {
                counts[col + 1] += 1;
            }
        }
        for c in 1..=width {
            counts[c] += counts[c - 1];
        }
        let offsets = counts.clone();
        let mut entries = vec![(0u32, 0.0); offsets[width]];
        for (position, &i) in train.iter().enumerate() {
            for (col, v) in bags.row(i) {
                entries[counts[col]] = (u32::try_from(position).unwrap_or(u32::MAX), v);
                counts[col] += 1;
            }
        }
        Transposed { offsets, entries }
    }

    fn column(&self, col: usize) -> &[(u32, f64)] {
        &self.entries[self.offsets[col]..self.offsets[col + 1]]
    }
}

/// Refits `base` (a static table, `vocab` rows of `base_dims`) to the `teacher` vectors
/// (`width` wide, one per text) of `texts` (each text's token ids in the base's own
/// tokenization, unknown tokens already left out). Returns the new table, `vocab` rows of
/// `options.dims`, and how well it fits.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for inconsistent sizes, no texts, or no token the table knows.
pub fn learn_table(
    base: &[f32],
    base_dims: usize,
    texts: &[&[u32]],
    teacher: &[f32],
    width: usize,
    options: &LearnOptions,
) -> Result<(Vec<f32>, LearnReport)> {
    crate::helpers::in_own_pool(|| {
        let invalid = |what: &str| Err(Error::InvalidArgument(what.into()));
        if base_dims == 0 || !base.len().is_multiple_of(base_dims) {
            return invalid("the base table's size is not a multiple of its width");
        }
        if width == 0 || teacher.len() != texts.len() * width {
            return invalid("one teacher vector is needed per text");
        }
        if options.dims == 0 || options.dims > width {
            return invalid("dims must be between 1 and the teacher's width");
        }
        let vocab = base.len() / base_dims;
        let dims = options.dims;
        let bags = Bags::new(texts, vocab);
        let (train, held): (Vec<usize>, Vec<usize>) = (0..texts.len())
            .filter(|&i| bags.offsets[i + 1] > bags.offsets[i])
            .partition(|&i| {
                texts.len() < MIN_TEXTS_TO_HOLD_OUT || i % HOLD_OUT_EVERY != HOLD_OUT_EVERY - 1
            });
        if train.is_empty() {
            return invalid("no text has a token the model knows");
        }
        let targets = project_targets(teacher, width, dims, &train);
        let base64: Vec<f64> = base.iter().map(|&x| f64::from(x)).collect();
        let aligned = align(&bags, (&train, &held), &base64, base_dims, &targets, dims);
        let fit = |rows_by_column: &[f64]| {
            let rows = bags.mean_rows(&held, rows_by_column, dims, |col| col);
            mean_cosine(&rows, &held, &targets, dims)
        };
        let start: Vec<f64> = bags
            .tokens
            .iter()
            .flat_map(|&id| {
                aligned[id as usize * dims..(id as usize + 1) * dims]
                    .iter()
                    .copied()
            })
            .collect();
        let cosine_before = fit(&start);

        // Conjugate gradients on (AᵀA + λI) X = AᵀT + λ X₀ over the occurring tokens, one system
        // per column, all columns at once; once per ridge, each from the previous solution.
        let columns = Transposed::new(&bags, &train);
        let tokens = bags.tokens.len();
        #[allow(clippy::cast_precision_loss)]
        let mean_diagonal = (0..tokens)
            .map(|c| columns.column(c).iter().map(|e| e.1 * e.1).sum::<f64>())
            .sum::<f64>()
            / tokens.max(1) as f64;
        let train_targets: Vec<f64> = train
            .iter()
            .flat_map(|&i| targets[i * dims..(i + 1) * dims].iter().copied())
            .collect();
        let data_rhs = transpose_times(&columns, &train_targets, dims, tokens);
        let ridges = if held.is_empty() {
            &options.ridges[..options.ridges.len().min(1)]
        } else {
            &options.ridges[..]
        };
        let (mut best, mut cosine_after, mut ridge) = (None, cosine_before, None);
        let (mut x, mut iterations) = (start.clone(), 0);
        for &candidate in ridges {
            let lambda = candidate * mean_diagonal;
            let operator = |x: &[f64]| -> Vec<f64> {
                let y = bags.mean_rows(&train, x, dims, |c| c);
                let mut out = transpose_times(&columns, &y, dims, tokens);
                out.par_iter_mut()
                    .zip(x)
                    .for_each(|(o, v)| *o += lambda * v);
                out
            };
            let rhs: Vec<f64> = data_rhs
                .par_iter()
                .zip(&start)
                .map(|(r, s)| r + lambda * s)
                .collect();
            let (solution, steps) = conjugate_gradients(operator, &rhs, x, dims, options);
            iterations += steps;
            let cosine = fit(&solution);
            // Held out, a refit must beat the aligned base; with nothing held out, it is trusted.
            if held.is_empty() || cosine > cosine_after {
                (cosine_after, ridge, best) = (cosine, Some(candidate), Some(solution.clone()));
            }
            x = solution;
        }

        let mut table = aligned;
        if let Some(solution) = best {
            for (col, &id) in bags.tokens.iter().enumerate() {
                table[id as usize * dims..(id as usize + 1) * dims]
                    .copy_from_slice(&solution[col * dims..(col + 1) * dims]);
            }
        }
        #[allow(clippy::cast_possible_truncation)]
        let table: Vec<f32> = table.into_iter().map(|x| x as f32).collect();
        Ok((
            table,
            LearnReport {
                texts: train.len(),
                held_out: held.len(),
                tokens,
                cosine_before,
                cosine_after,
                ridge,
                iterations,
            },
        ))
    })
}

/// `Aᵀ y` for per-text rows `y` (`dims` wide, in training order), one row per token.
fn transpose_times(columns: &Transposed, y: &[f64], dims: usize, tokens: usize) -> Vec<f64> {
    let mut out = vec![0.0; tokens * dims];
    out.par_chunks_mut(dims).enumerate().for_each(|(c, o)| {
        for &(position, v) in columns.column(c) {
            let row = &y[position as usize * dims..(position as usize + 1) * dims];
            for (x, r) in o.iter_mut().zip(row) {
                *x += v * r;
            }
        }
    });
    out
}

/// Solves `operator(X) = rhs` for a symmetric positive definite operator, column by column of
/// the `dims`-wide rows, from `x`. Returns the solution and the iterations taken.
fn conjugate_gradients(
    operator: impl Fn(&[f64]) -> Vec<f64>,
    rhs: &[f64],
    mut x: Vec<f64>,
    dims: usize,
    options: &LearnOptions,
) -> (Vec<f64>, usize) {
    let column_dots = |a: &[f64], b: &[f64]| -> Vec<f64> {
        a.par_chunks(dims)
            .zip(b.par_chunks(dims))
            .fold(
                || vec![0.0; dims],
                |mut acc, (ra, rb)| {
                    for ((s, p), q) in acc.iter_mut().zip(ra).zip(rb) {
                        *s += p * q;
                    }
                    acc
                },
            )
            .reduce(
                || vec![0.0; dims],
                |mut a, b| {
                    for (s, t) in a.iter_mut().zip(b) {
                        *s += t;
                    }
                    a
                },
            )
    };
    let scale: Vec<f64> = column_dots(rhs, rhs)
        .into_iter()
        .map(|v| v.max(f64::MIN_POSITIVE))
        .collect();
    let applied = operator(&x);
    let mut r: Vec<f64> = rhs.iter().zip(&applied).map(|(b, a)| b - a).collect();
    let mut p = r.clone();
    let mut rs = column_dots(&r, &r);
    let converged = |rs: &[f64]| {
        rs.iter()
            .zip(&scale)
            .all(|(v, s)| (v / s).sqrt() < TOLERANCE)
    };
    let mut iterations = 0;
    while iterations < options.max_iterations && !converged(&rs) {
        iterations += 1;
        let ap = operator(&p);
        let curvature = column_dots(&p, &ap);
        let alpha = ratios(&rs, &curvature);
        x.par_chunks_mut(dims)
            .zip(r.par_chunks_mut(dims))
            .zip(p.par_chunks(dims).zip(ap.par_chunks(dims)))
            .for_each(|((xr, rr), (pr, apr))| {
                for k in 0..dims {
                    xr[k] += alpha[k] * pr[k];
                    rr[k] -= alpha[k] * apr[k];
                }
            });
        let next = column_dots(&r, &r);
        let beta = ratios(&next, &rs);
        p.par_chunks_mut(dims)
            .zip(r.par_chunks(dims))
            .for_each(|(pr, rr)| {
                for k in 0..dims {
                    pr[k] = rr[k] + beta[k] * pr[k];
                }
            });
        rs = next;
    }
    (x, iterations)
}

/// `a[k] / b[k]`, and 0 where `b[k]` is not positive (a column already solved).
fn ratios(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter()
        .zip(b)
        .map(|(x, y)| if *y > 0.0 { x / y } else { 0.0 })
        .collect()
}

/// The teacher's vectors on the `dims` directions that carry most of the training texts'
/// vectors (uncentred principal directions: a projection that keeps dot products), one row
/// per text.
fn project_targets(teacher: &[f32], width: usize, dims: usize, train: &[usize]) -> Vec<f64> {
    let teacher: Vec<f64> = teacher.iter().map(|&x| f64::from(x)).collect();
    let mut gram = vec![0.0f64; width * width];
    for &i in train {
        add_outer_upper(&mut gram, &teacher[i * width..(i + 1) * width]);
    }
    let (_, vectors, order) = principal_components(gram, width);
    // The kept eigenvectors as a width × dims matrix.
    let projection: Vec<f64> = (0..width)
        .flat_map(|k| order[..dims].iter().map(move |&c| (k, c)))
        .map(|(k, c)| vectors[k * width + c])
        .collect();
    times(&teacher, width, &projection, dims)
}

/// Ridges of the alignment, relative to the mean diagonal of its normal equations; the
/// held-out texts choose (a few hundred texts fit a full linear map only loosely).
const ALIGN_RIDGES: [f64; 4] = [1e-3, 1e-2, 1e-1, 1.0];

/// The base table carried into the target space: `base · M`, with `M` the ridge least-squares
/// map from the training texts' mean base rows to their targets, its ridge the one that fits
/// the `held` texts best (the weakest when none are held out).
fn align(
    bags: &Bags,
    (train, held): (&[usize], &[usize]),
    base: &[f64],
    base_dims: usize,
    targets: &[f64],
    dims: usize,
) -> Vec<f64> {
    let known = |col: usize| bags.tokens[col] as usize;
    let means = bags.mean_rows(train, base, base_dims, known);
    // Normal equations (SᵀS + εI) M = Sᵀ T, solved by Cholesky.
    let mut gram = vec![0.0f64; base_dims * base_dims];
    let mut cross = vec![0.0f64; base_dims * dims];
    for (s, &i) in means.chunks_exact(base_dims).zip(train) {
        add_outer_upper(&mut gram, s);
        let t = &targets[i * dims..(i + 1) * dims];
        for (a, sa) in s.iter().enumerate() {
            for (c, tv) in cross[a * dims..(a + 1) * dims].iter_mut().zip(t) {
                *c += sa * tv;
            }
        }
    }
    mirror_upper(&mut gram, base_dims);
    #[allow(clippy::cast_precision_loss)]
    let diagonal = (0..base_dims).map(|a| gram[a * base_dims + a]).sum::<f64>() / base_dims as f64;
    let held_means = bags.mean_rows(held, base, base_dims, known);
    let candidates = if held.is_empty() {
        &ALIGN_RIDGES[..1]
    } else {
        &ALIGN_RIDGES[..]
    };
    let map = candidates
        .iter()
        .map(|&ridge| {
            let mut system = gram.clone();
            for a in 0..base_dims {
                system[a * base_dims + a] += (ridge * diagonal).max(f64::MIN_POSITIVE);
            }
            let map = cholesky_solve(system, base_dims, cross.clone(), dims);
            let rows = times(&held_means, base_dims, &map, dims);
            (mean_cosine(&rows, held, targets, dims), map)
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, map)| map)
        .unwrap_or_default();
    times(base, base_dims, &map, dims)
}

/// `rows` (each `width` wide) times the `width` × `dims` matrix `map`.
fn times(rows: &[f64], width: usize, map: &[f64], dims: usize) -> Vec<f64> {
    rows.par_chunks(width)
        .flat_map_iter(|row| {
            (0..dims).map(move |c| {
                row.iter()
                    .enumerate()
                    .map(|(k, v)| v * map[k * dims + c])
                    .sum::<f64>()
            })
        })
        .collect()
}

/// Solves `a · X = b` for a symmetric positive definite `n` × `n` matrix `a` and `n` × `m`
/// right-hand sides `b` (row-major).
fn cholesky_solve(mut a: Vec<f64>, n: usize, mut b: Vec<f64>, m: usize) -> Vec<f64> {
    // a = L Lᵀ, L stored in the lower triangle.
    for j in 0..n {
        let mut d = a[j * n + j];
        for k in 0..j {
            d -= a[j * n + k] * a[j * n + k];
        }
        let d = d.max(f64::MIN_POSITIVE).sqrt();
        a[j * n + j] = d;
        for i in j + 1..n {
            let mut s = a[i * n + j];
            for k in 0..j {
                s -= a[i * n + k] * a[j * n + k];
            }
            a[i * n + j] = s / d;
        }
    }
    for c in 0..m {
        // L y = b, then Lᵀ x = y, in place in column c of b.
        for i in 0..n {
            let mut s = b[i * m + c];
            for k in 0..i {
                s -= a[i * n + k] * b[k * m + c];
            }
            b[i * m + c] = s / a[i * n + i];
        }
        for i in (0..n).rev() {
            let mut s = b[i * m + c];
            for k in i + 1..n {
                s -= a[k * n + i] * b[k * m + c];
            }
            b[i * m + c] = s / a[i * n + i];
        }
    }
    b
}

/// Mean cosine between `rows` (one per text of `texts`, in that order) and those texts' targets.
fn mean_cosine(rows: &[f64], texts: &[usize], targets: &[f64], dims: usize) -> f64 {
    if texts.is_empty() {
        return 0.0;
    }
    let total: f64 = rows
        .chunks_exact(dims)
        .zip(texts)
        .map(|(s, &i)| {
            let t = &targets[i * dims..(i + 1) * dims];
            let dot: f64 = s.iter().zip(t).map(|(a, b)| a * b).sum();
            let norms = s.iter().map(|a| a * a).sum::<f64>().sqrt()
                * t.iter().map(|b| b * b).sum::<f64>().sqrt();
            if norms > 0.0 { dot / norms } else { 0.0 }
        })
        .sum();
    #[allow(clippy::cast_precision_loss)]
    let mean = total / texts.len() as f64;
    mean
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::cast_precision_loss)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn cholesky_solves_a_small_system() {
        // a = [[4, 2], [2, 3]], x = [[1, -1], [2, 0.5]] -> b = a x
        let a = vec![4.0, 2.0, 2.0, 3.0];
        let b = vec![8.0, -3.0, 8.0, -0.5];
        let x = cholesky_solve(a, 2, b, 2);
        for (got, want) in x.iter().zip([1.0, -1.0, 2.0, 0.5]) {
            assert!((got - want).abs() < 1e-12, "{x:?}");
        }
    }

    /// Texts over a vocabulary whose "true" rows the teacher averages; the base table is the
    /// truth seen through a fixed random linear map plus heavy per-token noise. Alignment can
    /// undo the map but not the noise; the refit must undo much of both.
    #[test]
    fn refitting_recovers_what_the_teacher_averages() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let (vocab, width, base_dims, dims) = (300, 24, 16, 12);
        let truth: Vec<f32> = (0..vocab * width)
            .map(|_| rng.random_range(-1.0..1.0))
            .collect();
        let mix: Vec<f32> = (0..width * base_dims)
            .map(|_| rng.random_range(-1.0..1.0))
            .collect();
        let base: Vec<f32> = truth
            .chunks(width)
            .flat_map(|row| {
                let mut out = vec![0.0f32; base_dims];
                for (k, v) in row.iter().enumerate() {
                    for (c, o) in out.iter_mut().enumerate() {
                        *o += v * mix[k * base_dims + c];
                    }
                }
                out.into_iter()
                    .map(|x| x + 3.0 * (rng.random::<f32>() - 0.5))
                    .collect::<Vec<_>>()
            })
            .collect();
        let texts: Vec<Vec<u32>> = (0..2000)
            .map(|_| {
                let len = rng.random_range(5..30);
                (0..len)
                    .map(|_| rng.random_range(0..vocab as u32))
                    .collect()
            })
            .collect();
        let teacher: Vec<f32> = texts
            .iter()
            .flat_map(|t| {
                let mut mean = vec![0.0f32; width];
                for &id in t {
                    for (m, v) in mean.iter_mut().zip(&truth[id as usize * width..]) {
                        *m += v / t.len() as f32;
                    }
                }
                let norm = mean.iter().map(|x| x * x).sum::<f32>().sqrt();
                mean.into_iter().map(move |x| x / norm)
            })
            .collect();
        let refs: Vec<&[u32]> = texts.iter().map(Vec::as_slice).collect();
        let options = LearnOptions {
            dims,
            ridges: vec![1.0, 0.1, 0.01],
            max_iterations: 200,
        };
        let (table, report) =
            learn_table(&base, base_dims, &refs, &teacher, width, &options).unwrap();
        assert_eq!(table.len(), vocab * dims);
        assert_eq!((report.texts, report.held_out), (1800, 200));
        assert_eq!(report.tokens, vocab);
        assert!(report.cosine_before < 0.8, "{report:?}");
        assert!(report.cosine_after > 0.95, "{report:?}");
        assert!(
            report.iterations > 0 && report.iterations < 600,
            "{report:?}"
        );
        assert!(report.ridge.is_some(), "{report:?}");
    }

    /// A base that already holds the truth, and teacher vectors with much noise on top of it:
    /// a weakly held refit learns the noise of its own texts, fits the held-out texts worse
    /// than the aligned base, and is not kept.
    #[test]
    fn a_refit_that_does_not_generalise_is_not_kept() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let (vocab, width) = (200, 8);
        let truth: Vec<f32> = (0..vocab * width)
            .map(|_| rng.random_range(-1.0..1.0))
            .collect();
        let texts: Vec<Vec<u32>> = (0..300)
            .map(|_| (0..4).map(|_| rng.random_range(0..vocab as u32)).collect())
            .collect();
        let teacher: Vec<f32> = texts
            .iter()
            .flat_map(|t| {
                let mut v = vec![0.0f32; width];
                for &id in t {
                    for (x, r) in v.iter_mut().zip(&truth[id as usize * width..]) {
                        *x += r / 4.0;
                    }
                }
                v.into_iter()
                    .map(|x| x + 2.0 * rng.random_range(-1.0f32..1.0))
                    .collect::<Vec<_>>()
            })
            .collect();
        let refs: Vec<&[u32]> = texts.iter().map(Vec::as_slice).collect();
        let options = LearnOptions {
            dims: width,
            ridges: vec![0.001],
            max_iterations: 300,
        };
        let (table, report) = learn_table(&truth, width, &refs, &teacher, width, &options).unwrap();
        assert_eq!(report.ridge, None, "{report:?}");
        assert_eq!(report.cosine_after, report.cosine_before);
        let (aligned, _) = learn_table(
            &truth,
            width,
            &refs,
            &teacher,
            width,
            &LearnOptions {
                max_iterations: 0,
                ..options
            },
        )
        .unwrap();
        assert_eq!(table, aligned);
    }

    #[test]
    fn tokens_the_texts_never_show_keep_their_aligned_rows_and_bad_sizes_are_refused() {
        let base: Vec<f32> = (0..40).map(|i| (i as f32 * 0.37).sin()).collect(); // 10 x 4
        let texts: Vec<&[u32]> = vec![&[0, 1, 2], &[1, 2, 3], &[0, 3], &[2, 2, 1]];
        let teacher: Vec<f32> = (0..12).map(|i| (i as f32 * 0.91).cos()).collect(); // 4 x 3
        let options = LearnOptions {
            dims: 2,
            ..LearnOptions::default()
        };
        let (table, report) = learn_table(&base, 4, &texts, &teacher, 3, &options).unwrap();
        assert_eq!(table.len(), 10 * 2);
        assert_eq!((report.tokens, report.held_out), (4, 0));
        // Tokens 4..10 never occur: the refit leaves their aligned rows as they were (no
        // iteration at all leaves every row aligned only).
        let (learned, _) = learn_table(
            &base,
            4,
            &texts,
            &teacher,
            3,
            &LearnOptions {
                max_iterations: 0,
                ..options.clone()
            },
        )
        .unwrap();
        assert_eq!(table[8..], learned[8..]);
        assert_ne!(table[..8], learned[..8]);
        let too_wide = LearnOptions { dims: 4, ..options };
        assert!(learn_table(&base, 4, &texts, &teacher, 3, &too_wide).is_err());
        assert!(learn_table(&base, 4, &texts, &teacher[..9], 3, &LearnOptions::default()).is_err());
        let unknown: Vec<&[u32]> = vec![&[50, 60]];
        assert!(
            learn_table(
                &base,
                4,
                &unknown,
                &teacher[..3],
                3,
                &LearnOptions {
                    dims: 2,
                    ..LearnOptions::default()
                }
            )
            .is_err()
        );
    }
}

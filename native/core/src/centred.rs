//! Exact nearest records by centred cosine, the vector side of memory search: each record
//! scored by its own vector (or its nearest sentence) and by its window's, with the shared
//! direction of the project's records taken out at scoring time, so no centred copy of any
//! row is ever stored (`coderecall._memory_vectors` defines the rows and the centring).
//!
//! One pass of dot products per matrix (`dot::dot_rows`), then linear passes over the
//! scores and a partial selection of the best: a 10,000-record store is 40,000 rows.

use std::ops::Range;

use crate::dot::dot_rows;

/// The rows of one generation of a project's record vectors, as stored.
pub struct CentredRows<'a> {
    pub dims: usize,
    /// Each record's vector, row-major, and 1 / |row - shift| per row.
    pub matrix: &'a [f32],
    pub scale: &'a [f32],
    /// The sentence vectors of the records that have some, in their records' order.
    pub parts: &'a [f32],
    pub part_scale: &'a [f32],
    /// The row in `matrix` of each record with sentences, and its first row in `parts`.
    pub owners: &'a [i64],
    pub starts: &'a [i64],
    /// The sum of each record's window, how many vectors it sums, 1 / its centred length.
    pub windows: &'a [f32],
    pub counts: &'a [f32],
    pub window_scale: &'a [f32],
    /// The records alone in their window: their window scores as they do.
    pub alone: &'a [bool],
}

/// How a query is scored against [`CentredRows`].
pub struct CentredQuery<'a> {
    /// The unit centred query `q'`.
    pub vector: &'a [f32],
    /// `shift . q'`: what centring takes from every row's dot product (times its count).
    pub offset: f32,
    /// Share of a record's own score that comes from its nearest sentence.
    pub part_weight: f32,
}

impl CentredRows<'_> {
    /// How many records.
    #[must_use]
    pub fn len(&self) -> usize {
        self.scale.len()
    }

    /// Whether there is no record.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.scale.is_empty()
    }

    /// Checks that the arrays fit together; returns each record with sentences: its row and
    /// the range of its sentences in `parts`.
    fn sentences(&self, query: &[f32]) -> crate::Result<Vec<(usize, Range<usize>)>> {
        let n = self.len();
        let p = self.part_scale.len();
        let shapes = [
            (query.len(), self.dims, "query"),
            (self.matrix.len(), n * self.dims, "matrix"),
            (self.parts.len(), p * self.dims, "parts"),
            (self.windows.len(), n * self.dims, "windows"),
            (self.counts.len(), n, "counts"),
            (self.window_scale.len(), n, "window scales"),
            (self.alone.len(), n, "alone"),
            (self.starts.len(), self.owners.len(), "starts"),
        ];
        for (got, want, what) in shapes {
            if got != want {
                return Err(crate::Error::InvalidArgument(format!(
                    "{what}: {got} values where {want} were expected"
                )));
            }
        }
        let mut spans: Vec<(usize, Range<usize>)> = Vec::with_capacity(self.owners.len());
        for (&owner, &start) in self.owners.iter().zip(self.starts) {
            let row = usize::try_from(owner).ok().filter(|&row| row < n);
            let start = usize::try_from(start).ok().filter(|&start| start < p);
            let after = spans.last().map_or(0, |(_, span)| span.start + 1);
            let (Some(row), Some(start)) = (row, start.filter(|&start| start >= after)) else {
                return Err(crate::Error::InvalidArgument(format!(
                    "the sentences of row {owner} start at {start:?}: out of order or range"
                )));
            };
            if let Some((_, span)) = spans.last_mut() {
                span.end = start;
            }
            spans.push((row, start..p));
        }
        Ok(spans)
    }

    /// Every record's score: its own centred cosine (its text's, blended with its nearest
    /// sentence's) plus its window's.
    ///
    /// # Errors
    ///
    /// [`crate::Error::InvalidArgument`] when the arrays do not fit together.
    pub fn scores(&self, query: &CentredQuery<'_>) -> crate::Result<Vec<f32>> {
        let sentences = self.sentences(query.vector)?;
        let (n, dims, offset) = (self.len(), self.dims, query.offset);
        let mut own = vec![0.0f32; n];
        dot_rows(self.matrix, dims, query.vector, &mut own);
        for (score, scale) in own.iter_mut().zip(self.scale) {
            *score = (*score - offset) * scale;
        }
        if !sentences.is_empty() {
            let mut near = vec![0.0f32; self.part_scale.len()];
            dot_rows(self.parts, dims, query.vector, &mut near);
            let weight = query.part_weight;
            for (row, span) in sentences {
                let best = near[span.clone()]
                    .iter()
                    .zip(&self.part_scale[span])
                    .map(|(dot, scale)| (dot - offset) * scale)
                    .fold(f32::NEG_INFINITY, f32::max);
                own[row] = (1.0 - weight) * own[row] + weight * best;
            }
        }
        let mut window = vec![0.0f32; n];
        dot_rows(self.windows, dims, query.vector, &mut window);
        Ok(own
            .iter()
            .zip(&window)
            .zip(self.counts.iter().zip(self.window_scale))
            .zip(self.alone)
            .map(|(((&own, &dot), (&count, &scale)), &alone)| {
                own + if alone {
                    own
                } else {
                    (dot - count * offset) * scale
                }
            })
            .collect())
    }
}

/// The `limit` best of `scores` among the rows `keep` allows (all without it), best first,
/// ties to the lower row.
#[must_use]
pub fn best(scores: &[f32], keep: Option<&[bool]>, limit: usize) -> Vec<(usize, f32)> {
    let mut found: Vec<(usize, f32)> = match keep {
        Some(keep) => scores
            .iter()
            .zip(keep)
            .enumerate()
            .filter(|(_, (_, keep))| **keep)
            .map(|(row, (score, _))| (row, *score))
            .collect(),
        None => scores.iter().copied().enumerate().collect(),
    };
    let order = |a: &(usize, f32), b: &(usize, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if limit < found.len() {
        if limit == 0 {
            return Vec::new();
        }
        found.select_nth_unstable_by(limit - 1, order);
        found.truncate(limit);
    }
    found.sort_unstable_by(order);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    #[test]
    fn scores_follow_the_definition() {
        // Three records in 2 dims; the second has two sentences; the third is alone.
        let matrix = [1.0, 0.0, 0.0, 1.0, 0.6, 0.8];
        let parts = [0.0, 1.0, 1.0, 0.0];
        let windows = [1.0, 1.0, 1.0, 1.0, 0.6, 0.8];
        let shift = [0.1f32, 0.1];
        let inverse = |v: &[f32], k: f32| {
            let d: Vec<f32> = v.iter().zip(&shift).map(|(x, s)| x - k * s).collect();
            1.0 / d.iter().map(|x| x * x).sum::<f32>().sqrt()
        };
        let scale: Vec<f32> = matrix.chunks(2).map(|r| inverse(r, 1.0)).collect();
        let part_scale: Vec<f32> = parts.chunks(2).map(|r| inverse(r, 1.0)).collect();
        let counts = [2.0, 2.0, 1.0];
        let window_scale: Vec<f32> = windows
            .chunks(2)
            .zip(counts)
            .map(|(r, k)| inverse(r, k))
            .collect();
        let rows = CentredRows {
            dims: 2,
            matrix: &matrix,
            scale: &scale,
            parts: &parts,
            part_scale: &part_scale,
            owners: &[1],
            starts: &[0],
            windows: &windows,
            counts: &counts,
            window_scale: &window_scale,
            alone: &[false, false, true],
        };
        let q = unit(&[0.2 - 0.1, 1.0 - 0.1]);
        let offset = shift.iter().zip(&q).map(|(s, x)| s * x).sum::<f32>();
        let query = CentredQuery {
            vector: &q,
            offset,
            part_weight: 0.85,
        };
        let got = rows.scores(&query).expect("arrays fit");
        let cos = |v: &[f32], k: f32| {
            let d: Vec<f32> = v.iter().zip(&shift).map(|(x, s)| x - k * s).collect();
            unit(&d).iter().zip(&q).map(|(a, b)| a * b).sum::<f32>()
        };
        let own1 = 0.15 * cos(&matrix[2..4], 1.0) + 0.85 * cos(&parts[0..2], 1.0);
        let want = [
            cos(&matrix[0..2], 1.0) + cos(&windows[0..2], 2.0),
            own1 + cos(&windows[2..4], 2.0),
            2.0 * cos(&matrix[4..6], 1.0),
        ];
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-5, "{got:?} against {want:?}");
        }
    }

    #[test]
    fn arrays_that_do_not_fit_are_refused() {
        let rows = CentredRows {
            dims: 2,
            matrix: &[1.0, 0.0],
            scale: &[1.0],
            parts: &[1.0, 0.0],
            part_scale: &[1.0],
            owners: &[3],
            starts: &[0],
            windows: &[1.0, 0.0],
            counts: &[1.0],
            window_scale: &[1.0],
            alone: &[true],
        };
        let query = CentredQuery {
            vector: &[1.0, 0.0],
            offset: 0.0,
            part_weight: 0.5,
        };
        assert!(rows.scores(&query).is_err());
        let short = CentredQuery {
            vector: &[1.0],
            ..query
        };
        assert!(rows.scores(&short).is_err());
    }

    #[test]
    fn best_keeps_the_allowed_rows_in_order_with_ties_to_the_lower_row() {
        let scores = [0.5, 0.9, 0.5, 0.1, 0.9, 0.7];
        assert_eq!(best(&scores, None, 3), vec![(1, 0.9), (4, 0.9), (5, 0.7)]);
        let keep = [true, false, true, true, true, false];
        assert_eq!(
            best(&scores, Some(&keep), 3),
            vec![(4, 0.9), (0, 0.5), (2, 0.5)]
        );
        assert_eq!(best(&scores, None, 0), vec![]);
        assert_eq!(best(&scores, Some(&keep), 10).len(), 4);
    }
}

//! A query's dot product with every row of a matrix: the inner loop of exact vector search
//! (memory ranks a project's records this way; thousands of rows beat any graph).
//!
//! The build targets baseline x86-64 (SSE2), so the kernel is compiled again for AVX-512 and
//! for AVX2 and picked at run time. One thread for a small matrix: handing a few hundred rows
//! to the pool costs more than it saves, and its threads would then spin on the cores the
//! next query's embedding needs.

use rayon::prelude::*;

/// Rows per task when the matrix is split over the pool.
const ROWS_PER_TASK: usize = 2048;

/// Floats from which a matrix is split over the pool (4 MiB, a few hundred microseconds on
/// one core: one thread cannot draw all the memory bandwidth there is).
const PARALLEL_FROM: usize = 1 << 20;

/// Fills `out[i]` with the dot product of row `i` of `rows` (row-major, `dims` wide) and
/// `query`.
///
/// # Panics
///
/// If `query` is not `dims` long, `rows` not `out.len()` rows of `dims`.
pub fn dot_rows(rows: &[f32], dims: usize, query: &[f32], out: &mut [f32]) {
    assert_eq!(query.len(), dims, "query length");
    assert_eq!(rows.len(), out.len() * dims, "matrix shape");
    if dims == 0 {
        out.fill(0.0);
        return;
    }
    if rows.len() < PARALLEL_FROM {
        serial(rows, dims, query, out);
    } else {
        crate::helpers::in_own_pool(|| {
            rows.par_chunks(ROWS_PER_TASK * dims)
                .zip(out.par_chunks_mut(ROWS_PER_TASK))
                .for_each(|(rows, out)| serial(rows, dims, query, out));
        });
    }
}

// Calling a kernel compiled for features the build does not assume is unsafe: the
// detection just before each call is what makes it sound.
#[allow(unsafe_code)]
fn serial(rows: &[f32], dims: usize, query: &[f32], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has the features the function was compiled for.
            return unsafe { serial_avx512(rows, dims, query, out) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { serial_avx2(rows, dims, query, out) };
        }
    }
    serial_portable(rows, dims, query, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn serial_avx512(rows: &[f32], dims: usize, query: &[f32], out: &mut [f32]) {
    serial_portable(rows, dims, query, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn serial_avx2(rows: &[f32], dims: usize, query: &[f32], out: &mut [f32]) {
    serial_portable(rows, dims, query, out);
}

#[inline(always)]
fn serial_portable(rows: &[f32], dims: usize, query: &[f32], out: &mut [f32]) {
    for (row, dot) in rows.chunks_exact(dims).zip(out.iter_mut()) {
        *dot = dot_one(row, query);
    }
}

/// Lanes summed apart: float addition is not associative, so the compiler vectorises a
/// dot product only when the code itself keeps separate partial sums (two AVX-512 registers'
/// worth, so two additions are in flight at once).
const LANES: usize = 32;

#[inline(always)]
fn dot_one(a: &[f32], b: &[f32]) -> f32 {
    let mut sums = [0.0f32; LANES];
    let (blocks_a, tail_a) = a.as_chunks::<LANES>();
    let (blocks_b, tail_b) = b.as_chunks::<LANES>();
    for (x, y) in blocks_a.iter().zip(blocks_b) {
        for lane in 0..LANES {
            sums[lane] += x[lane] * y[lane];
        }
    }
    // A plain sum of the lanes: reducing them pairwise in a loop made the compiler keep
    // the lanes in memory and the whole kernel scalar (3x slower).
    let tail: f32 = tail_a.iter().zip(tail_b).map(|(x, y)| x * y).sum();
    tail + sums.iter().sum::<f32>()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(rows: &[f32], dims: usize, query: &[f32]) -> Vec<f64> {
        rows.chunks_exact(dims)
            .map(|row| {
                row.iter()
                    .zip(query)
                    .map(|(x, y)| f64::from(*x) * f64::from(*y))
                    .sum()
            })
            .collect()
    }

    fn values(seed: u32, n: usize) -> Vec<f32> {
        // A small LCG: deterministic values in [-1, 1) without a dependency.
        let mut state = seed;
        (0..n)
            .map(|_| {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                f32::from_bits(0x3f80_0000 | (state >> 9)) * 2.0 - 3.0
            })
            .collect()
    }

    #[test]
    fn matches_a_plain_sum_for_any_width() {
        for dims in [1, 7, 31, 32, 33, 64, 100, 256, 384, 1000] {
            let rows = values(dims as u32, 37 * dims);
            let query = values(7 + dims as u32, dims);
            let mut out = vec![f32::NAN; 37];
            dot_rows(&rows, dims, &query, &mut out);
            for (got, want) in out.iter().zip(reference(&rows, dims, &query)) {
                assert!(
                    (f64::from(*got) - want).abs() <= 1e-4 * (1.0 + want.abs()),
                    "{dims} dims: {got} against {want}"
                );
            }
        }
    }

    #[test]
    fn a_large_matrix_split_over_the_pool_gives_the_same_dots() {
        let dims = 256;
        let n = PARALLEL_FROM / dims + 3 * ROWS_PER_TASK + 5;
        let rows = values(11, n * dims);
        let query = values(12, dims);
        let mut split = vec![0.0; n];
        dot_rows(&rows, dims, &query, &mut split);
        let mut alone = vec![0.0; n];
        serial(&rows, dims, &query, &mut alone);
        assert_eq!(split, alone);
    }

    #[test]
    fn empty_matrices_and_zero_widths() {
        let mut none: [f32; 0] = [];
        dot_rows(&[], 8, &[0.0; 8], &mut none);
        let mut out = [1.0; 3];
        dot_rows(&[], 0, &[], &mut out);
        assert_eq!(out, [0.0; 3]);
    }
}

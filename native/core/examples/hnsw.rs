//! HNSW build time and recall for a set of real embeddings, across `expansion_add` and
//! quantisation settings: `cargo run --features embed --example hnsw -- VECTORS.f32 DIMS`.
//! The file holds row-major little-endian f32 vectors (numpy's `tofile`).
#![allow(clippy::print_stdout, clippy::cast_precision_loss, clippy::unwrap_used)]

use std::time::Instant;

use rayon::prelude::*;
use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

fn main() {
    let mut args = std::env::args().skip(1);
    let file = args.next().expect("VECTORS.f32");
    let dims: usize = args.next().expect("DIMS").parse().unwrap();
    let bytes = std::fs::read(file).unwrap();
    let all: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let rows: Vec<&[f32]> = all.chunks_exact(dims).collect();
    let queries: Vec<&[f32]> = rows.iter().step_by(rows.len() / 200).copied().collect();
    // Exact top 10 by brute force, the reference for recall.
    let exact: Vec<Vec<usize>> = queries
        .par_iter()
        .map(|q| {
            let mut scored: Vec<(f32, usize)> = rows
                .iter()
                .enumerate()
                .map(|(i, r)| (r.iter().zip(*q).map(|(a, b)| a * b).sum::<f32>(), i))
                .collect();
            scored.sort_by(|a, b| b.0.total_cmp(&a.0));
            scored.iter().take(10).map(|s| s.1).collect()
        })
        .collect();
    println!(
        "{} vectors of {dims} dims, {} queries",
        rows.len(),
        queries.len()
    );
    println!("| quantisation | expansion_add | build s | per 10k s | recall@10 |");
    for (kind, name) in [(ScalarKind::F16, "f16"), (ScalarKind::I8, "i8")] {
        for expansion in [128, 64, 40, 24] {
            let options = IndexOptions {
                dimensions: dims,
                metric: MetricKind::Cos,
                quantization: kind,
                connectivity: 16,
                expansion_add: expansion,
                expansion_search: 64,
                multi: false,
            };
            let index = Index::new(&options).unwrap();
            index
                .reserve_capacity_and_threads(rows.len(), rayon::current_num_threads() + 2)
                .unwrap();
            let started = Instant::now();
            rows.par_iter()
                .enumerate()
                .try_for_each(|(i, r)| index.add(i as u64, r))
                .unwrap();
            let seconds = started.elapsed().as_secs_f64();
            let found: usize = queries
                .iter()
                .zip(&exact)
                .map(|(q, truth)| {
                    let m = index.search(q, 10).unwrap();
                    m.keys
                        .iter()
                        .filter(|k| truth.contains(&(**k as usize)))
                        .count()
                })
                .sum();
            println!(
                "| {name} | {expansion} | {seconds:.2} | {:.3} | {:.3} |",
                seconds * 10_000.0 / rows.len() as f64,
                found as f64 / (10 * queries.len()) as f64
            );
        }
    }
}

//! HNSW build time and recall for a set of real embeddings, across graph settings and
//! quantisations: `cargo run --release --features embed --example hnsw -- VECTORS.f32 DIMS`.
//! The file holds row-major little-endian f32 vectors (numpy's `tofile`). Vectors are added
//! in batches of 10,000 as the index adds them, so the table shows the first batch (an empty
//! graph) and the last full one (the graph nearly full).
#![allow(clippy::print_stdout, clippy::cast_precision_loss, clippy::unwrap_used)]

use std::time::Instant;

use rayon::prelude::*;
use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

mod support;

const BATCH: usize = 10_000;

fn main() {
    let (all, dims, _) = support::vectors_from_args();
    let rows: Vec<&[f32]> = all.iter().map(Vec::as_slice).collect();
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
        "{} vectors of {dims} dims, {} queries, {} threads; SIMD compiled: {}; available: {}",
        rows.len(),
        queries.len(),
        rayon::current_num_threads(),
        usearch::hardware_acceleration_compiled(),
        usearch::hardware_acceleration_available(),
    );
    println!(
        "| quantisation | connectivity | expansion_add | kernel | build s | first 10k s | last 10k s | recall@10 |"
    );
    println!("| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |");
    let settings =
        std::env::var("HNSW_SETTINGS").unwrap_or_else(|_| "16:40,16:24,12:40,8:40".into());
    let kinds = [
        (ScalarKind::F16, "f16"),
        (ScalarKind::BF16, "bf16"),
        (ScalarKind::I8, "i8"),
    ];
    let only = std::env::var("HNSW_KINDS").unwrap_or_else(|_| "f16,bf16,i8".into());
    // The vectors are unit length, so inner product ranks as cosine does.
    let metrics = std::env::var("HNSW_METRICS").unwrap_or_else(|_| "cos".into());
    for (kind, name) in kinds {
        if !only.split(',').any(|k| k == name) {
            continue;
        }
        for (setting, metric) in settings
            .split(',')
            .flat_map(|s| metrics.split(',').map(move |m| (s, m)))
        {
            let (connectivity, expansion) = setting.split_once(':').unwrap();
            let options = IndexOptions {
                dimensions: dims,
                metric: if metric == "ip" {
                    MetricKind::IP
                } else {
                    MetricKind::Cos
                },
                quantization: kind,
                connectivity: connectivity.parse().unwrap(),
                expansion_add: expansion.parse().unwrap(),
                expansion_search: 64,
                multi: false,
            };
            let index = Index::new(&options).unwrap();
            index
                .reserve_capacity_and_threads(rows.len(), rayon::current_num_threads() + 2)
                .unwrap();
            let mut batches = Vec::new();
            for (b, batch) in rows.chunks(BATCH).enumerate() {
                let started = Instant::now();
                batch
                    .par_iter()
                    .enumerate()
                    .try_for_each(|(i, r)| index.add((b * BATCH + i) as u64, r))
                    .unwrap();
                batches.push((batch.len(), started.elapsed().as_secs_f64()));
            }
            let seconds: f64 = batches.iter().map(|b| b.1).sum();
            let last_full = batches.iter().rev().find(|b| b.0 == BATCH).unwrap().1;
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
                "| {name} {metric} | {connectivity} | {expansion} | {} | {seconds:.2} | {:.3} | {last_full:.3} | {:.3} |",
                index.hardware_acceleration(),
                batches[0].1,
                found as f64 / (10 * queries.len()) as f64
            );
        }
    }
}

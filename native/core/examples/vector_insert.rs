//! Where inserting vectors goes: storing them in SQLite and adding them to the HNSW graph,
//! timed apart, in batches of 10,000 as `embed_pending` adds them:
//! `cargo run --release --features embed --example vector_insert -- VECTORS.f32 DIMS [QUANT]`.
//! The file holds row-major little-endian f32 vectors (numpy's `tofile`). With `OVERLAP=1`
//! each batch is stored while the graph takes it, as `Engine::embed_pending` does.
#![allow(clippy::print_stdout, clippy::cast_precision_loss, clippy::unwrap_used)]

use std::time::Instant;

use coderecall_core::store::Store;
use coderecall_core::vectors::{Quantization, VectorIndex};

mod support;

const BATCH: usize = 10_000;

fn main() {
    let (rows, dims, mut args) = support::vectors_from_args();
    let quantization = Quantization::parse(&args.next().unwrap_or_else(|| "bf16".into())).unwrap();
    // Content hashes are random 64-bit values; a hash of the row number stands in for them.
    let items: Vec<(i64, Vec<f32>)> = rows
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            (
                xxhash_rust::xxh3::xxh3_64(&i.to_le_bytes()).cast_signed(),
                v,
            )
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("index.db")).unwrap();
    let mut graph = VectorIndex::new(&dir.path().join("graph"), dims, BATCH, quantization).unwrap();
    println!(
        "{} vectors of {dims} dims, {}, {} threads",
        items.len(),
        quantization.name(),
        rayon::current_num_threads()
    );
    let overlap = std::env::var("OVERLAP").is_ok();
    println!("| batch | graph before | SQLite s | graph s | total s |");
    println!("| ---: | ---: | ---: | ---: | ---: |");
    let (mut sqlite, mut adding, mut total) = (0.0, 0.0, 0.0);
    for (b, batch) in items.chunks(BATCH).enumerate() {
        // With OVERLAP set, the batch is stored on another thread while the graph takes it.
        let (stored, added, wall) = if overlap {
            let started = Instant::now();
            let store = &mut store;
            let graph = &mut graph;
            let (stored, added) = std::thread::scope(|s| {
                let h = s.spawn(|| {
                    store.put_vectors("bench", batch).unwrap();
                    started.elapsed().as_secs_f64()
                });
                graph.add(batch).unwrap();
                let added = started.elapsed().as_secs_f64();
                (h.join().unwrap(), added)
            });
            (stored, added, started.elapsed().as_secs_f64())
        } else {
            let started = Instant::now();
            store.put_vectors("bench", batch).unwrap();
            let stored = started.elapsed().as_secs_f64();
            let started = Instant::now();
            graph.add(batch).unwrap();
            let added = started.elapsed().as_secs_f64();
            (stored, added, stored + added)
        };
        sqlite += stored;
        adding += added;
        total += wall;
        println!(
            "| {} | {} | {stored:.3} | {added:.3} | {wall:.3} |",
            b + 1,
            b * BATCH,
        );
    }
    let per = BATCH as f64 / items.len() as f64;
    println!(
        "per 10,000: SQLite {:.3} s, graph {:.3} s, total {:.3} s",
        sqlite * per,
        adding * per,
        total * per
    );
}

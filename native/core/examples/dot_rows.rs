//! Throughput of `dot::dot_rows` at memory-search shapes:
//! `cargo run --release --example dot_rows`.
#![allow(clippy::print_stdout, clippy::cast_precision_loss)]

use std::time::Instant;

fn main() {
    for (rows, dims) in [(413, 384), (1416, 384), (10_000, 384), (50_000, 256)] {
        let matrix: Vec<f32> = (0..rows * dims).map(|i| (i % 97) as f32 * 0.01).collect();
        let query: Vec<f32> = (0..dims).map(|i| (i % 13) as f32 * 0.1).collect();
        let mut out = vec![0.0; rows];
        let repeats = 200;
        let mut best = f64::MAX;
        for _ in 0..5 {
            let started = Instant::now();
            for _ in 0..repeats {
                coderecall_core::dot::dot_rows(&matrix, dims, &query, &mut out);
            }
            best = best.min(started.elapsed().as_secs_f64() / f64::from(repeats));
        }
        println!("{rows} x {dims}: {:.1} us", best * 1e6);
    }
}

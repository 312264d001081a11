//! Latency of one query and throughput of a batch through the transformer engine:
//! `cargo run --release --features embed --example embed_latency -- MODEL_DIR`.
#![allow(clippy::print_stdout, clippy::cast_precision_loss, clippy::unwrap_used)]

use std::path::Path;
use std::time::Instant;

use coderecall_core::embed::{DEFAULT_MAX_TOKENS, Embedder, TransformerEmbedder};

const QUERIES: [&str; 8] = [
    "How did Caroline feel about the adoption agency?",
    "retry a request after a rate limit",
    "What did Melanie paint last summer?",
    "parse command line arguments into a struct",
    "When did they go camping with the kids?",
    "open the database and apply pending migrations before serving",
    "Which books does Tim recommend?",
    "error",
];

fn main() {
    let dir = std::env::args().nth(1).expect("MODEL_DIR");
    // SAFETY: no other thread runs yet.
    #[allow(unsafe_code)]
    unsafe {
        coderecall_core::embed::settle_thread_count();
    }
    let model = TransformerEmbedder::load(Path::new(&dir), DEFAULT_MAX_TOKENS).unwrap();
    let mut times = Vec::new();
    for round in 0..40 {
        for q in QUERIES {
            let started = Instant::now();
            // `embed`, not `embed_query`: the latter remembers recent queries.
            model.embed(&[q]).unwrap();
            if round > 2 {
                times.push(started.elapsed().as_secs_f64() * 1000.0);
            }
        }
    }
    times.sort_by(f64::total_cmp);
    let at = |p: f64| times[((times.len() - 1) as f64 * p) as usize];
    println!("one query: p50 {:.2} ms, p95 {:.2} ms", at(0.5), at(0.95));
    let text = "fn parse(input: &str) -> Result<Config> { let mut config = Config::default(); \
                for line in input.lines() { let (key, value) = line.split_once('=')?; \
                config.set(key.trim(), value.trim())?; } Ok(config) }";
    let batch: Vec<&str> = std::iter::repeat_n(text, 64).collect();
    let mut rates: Vec<f64> = (0..5)
        .map(|_| {
            let started = Instant::now();
            model.embed(&batch).unwrap();
            64.0 / started.elapsed().as_secs_f64()
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    println!("batches of 64 code chunks: median {:.1} chunks/s", rates[2]);
}

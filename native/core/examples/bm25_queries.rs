//! Lexical query latency of a saved BM25 snapshot, without the ranking layer:
//! `cargo run --release --example bm25_queries -- INDEX_DIR/lexical.bin QUERIES.json [K]`,
//! where the JSON maps a family name to a list of queries (the speed benchmark writes one).
#![allow(clippy::print_stdout, clippy::cast_precision_loss)]

use std::path::Path;
use std::time::Instant;

use coderecall_core::analyzer::analyze_to_vec;
use coderecall_core::bm25::Bm25Index;

/// Parses `{"family": ["query", ...], ...}` well enough for the benchmark's own files.
fn families(json: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut strings = Vec::new();
    let mut chars = json.chars();
    let mut depth = 0;
    while let Some(c) = chars.next() {
        match c {
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if let Some(last) = out.last_mut() {
                    last.1 = std::mem::take(&mut strings);
                }
            }
            '"' => {
                let mut s = String::new();
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => s.extend(chars.next()),
                        c => s.push(c),
                    }
                }
                if depth == 0 {
                    out.push((s, Vec::new()));
                } else {
                    strings.push(s);
                }
            }
            _ => {}
        }
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (index, _) = Bm25Index::load(Path::new(&args[0])).expect("snapshot");
    let json = std::fs::read_to_string(&args[1]).expect("queries");
    let k: usize = args.get(2).map_or(200, |k| k.parse().expect("K"));
    println!("{} documents, k = {k}", index.len());
    for (family, queries) in families(&json) {
        let terms: Vec<Vec<String>> = queries.iter().map(|q| analyze_to_vec(q)).collect();
        let mut times = Vec::new();
        for _ in 0..5 {
            for t in &terms {
                let start = Instant::now();
                std::hint::black_box(index.search_terms(t, k, None));
                times.push(start.elapsed().as_secs_f64() * 1000.0);
            }
        }
        times.sort_by(f64::total_cmp);
        let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
        println!(
            "{family:<12} p50 {:.3} ms  p95 {:.3} ms  p99 {:.3} ms",
            at(0.5),
            at(0.95),
            at(0.99)
        );
    }
}

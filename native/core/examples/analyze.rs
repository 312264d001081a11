//! Throughput of the tokenizer alone, on one thread, over the source files under some
//! folders: `cargo run --release --example analyze -- DIR [DIR...]`. Prints the best of five
//! passes (the analyzer's stem memo is warm after the first).
#![allow(clippy::print_stdout, clippy::cast_precision_loss)]

use std::time::Instant;

use coderecall_core::analyzer::for_each_token;

mod support;

fn main() {
    let files = support::source_files(std::env::args().skip(1));
    let bytes: usize = files.iter().map(|(_, _, text)| text.len()).sum();
    let mut best = f64::INFINITY;
    let mut tokens = 0usize;
    for _ in 0..5 {
        let start = Instant::now();
        tokens = 0;
        for (_, _, text) in &files {
            for_each_token(text, |_| tokens += 1);
        }
        best = best.min(start.elapsed().as_secs_f64());
    }
    println!(
        "{} files, {:.1} MB, {tokens} tokens: best pass {best:.3} s, {:.0} MB/s",
        files.len(),
        bytes as f64 / 1e6,
        bytes as f64 / 1e6 / best
    );
}

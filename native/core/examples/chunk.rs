//! Prints the chunks and symbols of files: `cargo run --example chunk -- FILE...`.
#![allow(clippy::print_stdout)]

use coderecall_core::chunk::chunk_file;
use coderecall_core::lang::{Language, module_path};

fn main() {
    for path in std::env::args().skip(1) {
        let Ok(bytes) = std::fs::read(&path) else {
            println!("{path}: unreadable");
            continue;
        };
        // As the indexer reads it: a byte-order mark dropped, UTF-16 and Latin-1 decoded.
        let Some((text, _)) = coderecall_core::decode::decode(&bytes) else {
            println!("{path}: not text");
            continue;
        };
        let Some(lang) = Language::detect(&path, &bytes) else {
            println!("{path}: no parser");
            continue;
        };
        let out = chunk_file(&text, lang);
        println!(
            "== {path} ({}, module {:?})",
            lang.name(),
            module_path(&path, lang)
        );
        for c in &out.chunks {
            let first = c.content.lines().next().unwrap_or_default();
            println!(
                "  {:>4}-{:<4} {:<9} {:<40} names=[{}] ctx={:?} | {}",
                c.start_line,
                c.end_line,
                c.kind.name(),
                c.local_path,
                c.names,
                c.context,
                first
            );
        }
        for s in &out.symbols {
            println!(
                "  sym {:>4}-{:<4} {:<9} {}",
                s.start_line,
                s.end_line,
                s.kind.name(),
                s.local_path
            );
        }
    }
}

//! Times compiling each language's tree-sitter queries (what a process pays the first time it
//! parses a language), and the slowest patterns of each:
//! `cargo run --release --example query_compile [-- --patterns]`; or one query file against a
//! language's grammar, to try a pattern's variants: `... -- --try LANGUAGE FILE`.
#![allow(clippy::print_stdout)]

use std::time::Instant;

use coderecall_core::lang::Language;

fn millis(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, lang, file] = args.as_slice()
        && flag == "--try"
    {
        let grammar = Language::from_name(lang).and_then(Language::grammar);
        let source = std::fs::read_to_string(file);
        let (Some(grammar), Ok(source)) = (grammar, source) else {
            println!("usage: --try LANGUAGE FILE (a grammar-backed language, a readable file)");
            return;
        };
        let start = Instant::now();
        let result = tree_sitter::Query::new(&grammar, &source);
        println!(
            "{:.1} ms: {:?}",
            millis(start),
            result.map(|q| q.pattern_count())
        );
        return;
    }
    let patterns = args.iter().any(|a| a == "--patterns");
    let mut total = 0.0;
    for &lang in Language::all() {
        let Some(grammar) = lang.grammar() else {
            continue;
        };
        let definitions = lang.definitions_query_source();
        let references = lang.references_query_source();
        // The chunker compiles the two as one (`Language::syntax_query`).
        let both = definitions.map(|d| format!("{d}\n{}", references.unwrap_or_default()));
        for (what, source) in [
            ("definitions", definitions),
            ("references", references),
            ("both", both.as_deref()),
        ] {
            let Some(source) = source else { continue };
            let start = Instant::now();
            let Ok(query) = tree_sitter::Query::new(&grammar, source) else {
                println!("{:<11} {what:<12} does not compile", lang.name());
                continue;
            };
            let ms = millis(start);
            if what == "both" {
                total += ms;
            }
            println!(
                "{:<11} {what:<12} {ms:>7.1} ms  {} patterns",
                lang.name(),
                query.pattern_count()
            );
            if patterns {
                let mut each: Vec<(f64, usize)> = (0..query.pattern_count())
                    .map(|i| {
                        let end = if i + 1 < query.pattern_count() {
                            query.start_byte_for_pattern(i + 1)
                        } else {
                            source.len()
                        };
                        let text = &source[query.start_byte_for_pattern(i)..end];
                        let start = Instant::now();
                        let _ = tree_sitter::Query::new(&grammar, text);
                        (millis(start), i)
                    })
                    .collect();
                each.sort_by(|a, b| b.0.total_cmp(&a.0));
                for (ms, i) in each.iter().take(3) {
                    let start = query.start_byte_for_pattern(*i);
                    let line = source[..start].lines().count() + 1;
                    println!("    pattern {i} (line {line}): {ms:.1} ms");
                }
            }
        }
    }
    println!("all languages: {total:.0} ms");
}

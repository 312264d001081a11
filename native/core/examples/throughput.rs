//! Parse + chunk + analyze throughput of the core, without storage:
//! `cargo run --release --example throughput -- DIR [DIR...]`.
#![allow(clippy::print_stdout, clippy::cast_precision_loss)]

use std::time::Instant;

use coderecall_core::analyzer::for_each_token;
use coderecall_core::chunk::chunk_file;
use coderecall_core::engine::chunk_docs;
use rayon::prelude::*;
use tree_sitter::StreamingIterator;

mod support;

fn main() {
    let files = support::source_files(std::env::args().skip(1));
    let mb = files.iter().map(|f| f.2.len()).sum::<usize>() as f64 / 1e6;
    let threads = rayon::current_num_threads();
    let time = |label: &str, f: &dyn Fn() -> usize| {
        let start = Instant::now();
        let n = f();
        let s = start.elapsed().as_secs_f64();
        println!(
            "{label:<22} {s:>7.2} s {:>7.1} MB/s {:>6.1} MB/s/core  ({n})",
            mb / s,
            mb / s / threads as f64
        );
    };
    println!("{} files, {mb:.1} MB, {threads} threads", files.len());
    time("chunk (parse+query)", &|| {
        files
            .par_iter()
            .map(|(_, l, t)| chunk_file(t, *l).chunks.len())
            .sum()
    });
    time("parse only, 1 thread", &|| {
        let mut parser = tree_sitter::Parser::new();
        files
            .iter()
            .filter_map(|(_, l, t)| {
                parser.set_language(&l.grammar()?).ok()?;
                Some(parser.parse(t, None)?.root_node().child_count())
            })
            .sum()
    });
    time("chunk, 1 thread", &|| {
        files
            .iter()
            .map(|(_, l, t)| chunk_file(t, *l).chunks.len())
            .sum()
    });
    let chunked: Vec<_> = files
        .par_iter()
        .map(|(name, l, t)| (name, *l, chunk_file(t, *l).chunks))
        .collect();
    time("analyze (documents)", &|| {
        chunked
            .par_iter()
            .map(|(name, l, chunks)| {
                chunk_docs(name, *l, chunks)
                    .map(|d| d.unique_terms())
                    .sum::<usize>()
            })
            .sum()
    });
    time("analyze (tokens)", &|| {
        files
            .par_iter()
            .map(|(_, _, t)| {
                let mut n = 0;
                for_each_token(t, |_| n += 1);
                n
            })
            .sum()
    });
    // Where one thread's time goes, per language: parsing, then the query over the tree.
    let mut phases: std::collections::BTreeMap<&str, [f64; 3]> = Default::default();
    let mut parser = tree_sitter::Parser::new();
    for (_, lang, text) in &files {
        let Some(grammar) = lang.grammar() else {
            continue;
        };
        if parser.set_language(&grammar).is_err() {
            continue;
        }
        let start = Instant::now();
        let Some(tree) = parser.parse(text, None) else {
            continue;
        };
        let parsed = start.elapsed().as_secs_f64();
        let start = Instant::now();
        if let Some(query) = lang.syntax_query() {
            let mut cursor = tree_sitter::QueryCursor::new();
            let mut matches = cursor.matches(&query.query, tree.root_node(), text.as_bytes());
            while matches.next().is_some() {}
        }
        let e = phases.entry(lang.name()).or_default();
        e[0] += text.len() as f64 / 1e6;
        e[1] += parsed;
        e[2] += start.elapsed().as_secs_f64();
    }
    println!("  language          MB  parse s  query s (1 thread)");
    let mut sum = [0.0; 3];
    for (lang, p) in &phases {
        println!("  {lang:<12} {:>7.1} {:>8.2} {:>8.2}", p[0], p[1], p[2]);
        for (t, v) in sum.iter_mut().zip(p) {
            *t += v;
        }
    }
    println!(
        "  {:<12} {:>7.1} {:>8.2} {:>8.2}",
        "all", sum[0], sum[1], sum[2]
    );
    let mut per_lang: std::collections::BTreeMap<&str, (f64, f64)> = Default::default();
    let mut slowest: Vec<(f64, &str, usize)> = Vec::new();
    for (name, lang, text) in &files {
        let start = Instant::now();
        let _ = chunk_file(text, *lang);
        let s = start.elapsed().as_secs_f64();
        let e = per_lang.entry(lang.name()).or_default();
        e.0 += s;
        e.1 += text.len() as f64 / 1e6;
        slowest.push((s, name, text.len()));
    }
    for (lang, (s, mb)) in &per_lang {
        println!(
            "  {lang:<12} {mb:>7.1} MB {s:>6.2} s {:>7.1} MB/s (1 thread)",
            mb / s
        );
    }
    slowest.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (s, name, len) in slowest.iter().take(8) {
        println!("  slow: {s:.2} s {len:>8} B {name}");
    }
}

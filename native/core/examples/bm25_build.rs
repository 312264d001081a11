//! Time of a bulk BM25F build, the serial part of a cold index after parsing:
//! `cargo run --release --example bm25_build -- DIR [DIR...]`.
#![allow(clippy::print_stdout, clippy::cast_precision_loss)]

use std::time::Instant;

use coderecall_core::bm25::{Bm25Index, Bm25Params, DocFields, analyze_doc};
use coderecall_core::chunk::chunk_file;
use rayon::prelude::*;

mod support;

fn main() {
    let start = Instant::now();
    let files = support::source_files(std::env::args().skip(1));
    let docs: Vec<_> = files
        .par_iter()
        .flat_map_iter(|(name, lang, text)| {
            let chunks = chunk_file(text, *lang).chunks;
            chunks
                .iter()
                .map(|c| {
                    analyze_doc(&DocFields {
                        name: &c.names,
                        symbol_path: &c.local_path,
                        path: name,
                        body: &c.content,
                    })
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let postings: usize = docs
        .iter()
        .map(coderecall_core::bm25::AnalyzedDoc::unique_terms)
        .sum();
    println!(
        "{} docs, {postings} postings, chunked and analysed in {:.2} s",
        docs.len(),
        start.elapsed().as_secs_f64()
    );
    let keyed =
        |docs: Vec<coderecall_core::bm25::AnalyzedDoc>| (0_u64..).zip(docs).collect::<Vec<_>>();
    for round in 0..3 {
        let batch = keyed(docs.clone());
        let start = Instant::now();
        let mut index = Bm25Index::new(Bm25Params::default());
        index.extend(batch);
        let built = start.elapsed().as_secs_f64();
        index.compact();
        println!(
            "round {round}: extend on {} threads {built:.2} s ({:.0} ns/posting), compact {:.2} s",
            rayon::current_num_threads(),
            built * 1e9 / postings as f64,
            start.elapsed().as_secs_f64() - built
        );
    }
    // A first index published in four parts: each part extends the index of the ones
    // before, as against the first part built and the rest inserted one by one.
    let quarter = docs.len().div_ceil(4);
    for round in 0..3 {
        let mut parts = keyed(docs.clone());
        let start = Instant::now();
        let mut index = Bm25Index::new(Bm25Params::default());
        let rest = parts.split_off(quarter);
        index.extend(parts);
        let first = start.elapsed().as_secs_f64();
        let mut rest = rest.into_iter();
        loop {
            let part: Vec<_> = rest.by_ref().take(quarter).collect();
            if part.is_empty() {
                break;
            }
            if round % 2 == 0 {
                index.extend(part);
            } else {
                for (key, doc) in part {
                    index.insert(key, doc);
                }
            }
        }
        println!(
            "round {round}: four parts, first {first:.2} s, the rest {} {:.2} s",
            if round % 2 == 0 {
                "extended"
            } else {
                "inserted"
            },
            start.elapsed().as_secs_f64() - first
        );
    }
    for round in 0..3 {
        let docs = docs.clone();
        let start = Instant::now();
        let mut index = Bm25Index::new(Bm25Params::default());
        for (key, doc) in (0_u64..).zip(docs) {
            index.insert(key, doc);
        }
        let inserted = start.elapsed().as_secs_f64();
        index.compact();
        let total = start.elapsed().as_secs_f64();
        println!(
            "round {round}: insert {inserted:.2} s ({:.0} ns/posting), compact {:.2} s",
            inserted * 1e9 / postings as f64,
            total - inserted
        );
    }
}

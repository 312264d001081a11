//! Parse + chunk + analyze throughput of the core, without storage:
//! `cargo run --release --example throughput -- DIR [DIR...]`.
#![allow(clippy::print_stdout, clippy::cast_precision_loss)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use coderecall_core::analyzer::for_each_token;
use coderecall_core::chunk::chunk_file;
use coderecall_core::lang::Language;
use rayon::prelude::*;

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() {
            walk(&entry.path(), out);
        } else if kind.is_file() {
            out.push(entry.path());
        }
    }
}

fn main() {
    let mut paths = Vec::new();
    for dir in std::env::args().skip(1) {
        walk(Path::new(&dir), &mut paths);
    }
    let files: Vec<(String, Language, String)> = paths
        .iter()
        .filter_map(|p| {
            let bytes = std::fs::read(p).ok()?;
            if bytes.len() > 1 << 20 || bytes.iter().take(8000).any(|&b| b == 0) {
                return None;
            }
            let name = p.to_string_lossy().into_owned();
            let lang = Language::detect(&name, &bytes)?;
            Some((name, lang, String::from_utf8(bytes).ok()?))
        })
        .collect();
    let mb = files.iter().map(|f| f.2.len()).sum::<usize>() as f64 / 1e6;
    let threads = rayon::current_num_threads();
    let time = |label: &str, f: &dyn Fn() -> usize| {
        let start = Instant::now();
        let n = f();
        let s = start.elapsed().as_secs_f64();
        println!("{label:<22} {s:>7.2} s {:>7.1} MB/s {:>6.1} MB/s/core  ({n})", mb / s, mb / s / threads as f64);
    };
    println!("{} files, {mb:.1} MB, {threads} threads", files.len());
    time("chunk (parse+query)", &|| files.par_iter().map(|(_, l, t)| chunk_file(t, *l).chunks.len()).sum());
    time("analyze (tokens)", &|| {
        files.par_iter().map(|(_, _, t)| { let mut n = 0; for_each_token(t, |_| n += 1); n }).sum()
    });
    time("chunk, 1 thread", &|| files.iter().take(files.len() / 4).map(|(_, l, t)| chunk_file(t, *l).chunks.len()).sum());
}

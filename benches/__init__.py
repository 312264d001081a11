"""Benchmarks for coderecall: pinned corpora, speed and retrieval quality."""

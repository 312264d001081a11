"""Speed benchmark: coderecall against ripgrep, tantivy and SQLite FTS5 on the same files.

    python -m benches.speed [--quick] [--dirs D ...] [--runs N] [--json]

Measures cold index, no-op and one-file-edit re-index, index size and warm query latency on
a small, a medium and a large tree, with the baselines built from the same files in the same
run, so the ratios hold on whatever machine prints them. Targets are reported, never asserted.
"""

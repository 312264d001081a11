"""Retrieval-quality benchmark: doc-to-code and symbol queries on pinned corpora.

Run ``python -m benches.quality``; see ``benches/quality/README.md``.
"""

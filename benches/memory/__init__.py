"""Agent-memory retrieval on LoCoMo: does the memory store bring back the turns a question
needs? See ``benches/memory/README.md``; run with ``python -m benches.memory``."""

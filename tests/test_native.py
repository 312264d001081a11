"""The compiled module's small helpers, called directly."""

from __future__ import annotations

from pathlib import Path

import pytest

from coderecall._native import detect_language, extract_symbols, languages


def test_extract_symbols_gives_definitions_with_doc_comments() -> None:
    source = (
        "/// Adds two numbers.\n"
        "pub fn add(a: i32, b: i32) -> i32 {\n"
        "    a + b\n"
        "}\n"
        "\n"
        "impl Point {\n"
        "    fn norm(&self) -> f64 {\n"
        "        0.0\n"
        "    }\n"
        "}\n"
    )
    symbols = extract_symbols("src/geometry.rs", source)
    assert ("add", "function", "add", 1, 4) in symbols
    assert ("norm", "method", "Point::norm", 7, 9) in symbols


def test_extract_symbols_is_empty_without_a_grammar() -> None:
    assert extract_symbols("notes.txt", "def looks_like_code(): pass\n") == []
    assert extract_symbols("yarn.lock", "x") == []


def test_language_helpers() -> None:
    assert {"python", "rust", "markdown", "text"} <= set(languages())
    assert detect_language("pkg/mod.pyi", b"") == "python"
    assert detect_language("include/x.h", b"namespace a { class B {}; }") == "cpp"
    assert detect_language("app.min.js", b"") is None


def test_ranking_weights_can_be_read_and_changed(tmp_path: Path) -> None:
    from coderecall._native import NativeIndex

    index = NativeIndex(str(tmp_path / "index"), str(tmp_path))
    weights = index.weights()
    assert weights["test"] < 1.0 < weights["exact_symbol"]
    index.set_weights({"test": 1.0, "docs": 1.0})
    assert index.weights() == {**weights, "test": 1.0, "docs": 1.0}
    with pytest.raises(ValueError, match="unknown ranking weight"):
        index.set_weights({"test": 0.5, "no_such_rule": 1.0})
    assert index.weights()["test"] == 1.0, "a rejected update changes nothing"
    index.close()

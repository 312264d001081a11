"""The markdown tables and the JSON document, from the same numbers (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from benches.speed.report import table
from benches.speed.stats import Latency, fmt_ms, percentile, ratio

from .data import CATEGORIES, EvidenceCounts
from .metrics import RECALL_AT, Summary, summarize
from .run import BASELINE, BASELINES, CONTEXT_AT, SystemRun

__all__ = ["TARGETS", "DataInfo", "Report", "markdown", "to_json"]

TARGETS = {"hit": 0.90, "recall": 0.85, "p95_ms": 20.0}
"""The issue's targets for the memory store."""


@dataclass(slots=True)
class DataInfo:
    path: str
    conversations: list[str]
    turns: int
    adversarial: int
    evidence: EvidenceCounts
    available: int
    """Scored questions in these conversations (categories 1-4 with valid evidence)."""
    scored: int
    """Of those, the ones run (all but with ``--quick``)."""

    @property
    def questions(self) -> int:
        return self.available + self.adversarial + self.evidence.unanswerable


@dataclass(slots=True)
class Report:
    header: dict[str, str]
    data: DataInfo
    runs: list[SystemRun]
    """The store configurations, then the baselines (BM25 first)."""
    notes: list[str] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)


def _summary(run: SystemRun, category: int | None = None) -> Summary:
    return summarize([o for q, o in run.results if category is None or q.category == category])


def _mark(value: float, ok: bool, judged: bool) -> str:
    return f"{value:.3f} {'✓' if ok else '✗'}" if judged else f"{value:.3f}"


def _ingest(run: SystemRun) -> str:
    rate = run.turns_per_second
    if rate is None:
        return "n/a"
    return f"{rate:,.0f}" if rate >= 100 else f"{rate:.1f}"


def _context(run: SystemRun) -> tuple[float, float] | None:
    """Mean and p95 over questions of the tokens of the context @10."""
    tokens = run.context_tokens
    return (sum(tokens) / len(tokens), percentile(tokens, 95)) if tokens else None


_RECALLS = [f"Recall@{k}" for k in RECALL_AT]


def _after_write(run: SystemRun) -> tuple[float, float] | None:
    """p50 and p95 of the searches right after a write, for engines that take writes."""
    if not run.after_write_ms:
        return None
    return percentile(run.after_write_ms, 50), percentile(run.after_write_ms, 95)


_JUDGED_K = RECALL_AT[-1]
"""The Recall@k with a target."""


def _overall(report: Report) -> str:
    hit, recall, p95 = TARGETS["hit"], TARGETS["recall"], TARGETS["p95_ms"]
    headers = [
        "system",
        "questions",
        "Hit@10",
        *_RECALLS,
        "MRR@10",
        "search ms p50 / p95 / p99",
        "after a write ms p50 / p95",
        f"context tokens @{CONTEXT_AT} mean / p95",
        "ingest turns/s",
        "records",
    ]
    target = ["target (issue)", "", f"≥ {hit:.2f}"] + [""] * (len(RECALL_AT) - 1)
    rows = [[*target, f"≥ {recall:.2f}", "", f"p95 < {p95:g}", "", "", "", ""]]
    baseline = next((r for r in report.runs if r.name == BASELINE), None)
    for run in report.runs:
        s = _summary(run)
        judged = run.name not in BASELINES
        latency = Latency.of(run.latencies_ms) if run.latencies_ms else None
        if latency is None:
            speed = "n/a"
        elif judged:
            speed = f"{latency.cell()} {'✓' if latency.p95 < p95 else '✗'}"
        else:
            speed = latency.cell()
        context = _context(run)
        after = _after_write(run)
        rows.append(
            [
                run.name,
                str(s.questions),
                _mark(s.hit, s.hit >= hit, judged),
                *(f"{s.recall[k]:.3f}" for k in RECALL_AT[:-1]),
                _mark(s.recall[_JUDGED_K], s.recall[_JUDGED_K] >= recall, judged),
                f"{s.mrr:.3f}",
                speed,
                "n/a" if after is None else f"{fmt_ms(after[0])} / {fmt_ms(after[1])}",
                "n/a" if context is None else f"{context[0]:,.0f} / {context[1]:,.0f}",
                _ingest(run),
                f"{run.records:,}" + (f" ({run.merged:,} merged)" if run.merged else ""),
            ]
        )
    if baseline is not None:
        base = _summary(baseline)
        for run in report.runs:
            if run is baseline:
                continue
            s = _summary(run)
            rows.append(
                [
                    f"{run.name} ÷ BM25",
                    "",
                    ratio(s.hit, base.hit),
                    *(ratio(s.recall[k], base.recall[k]) for k in RECALL_AT),
                    ratio(s.mrr, base.mrr),
                    "",
                    "",
                    "",
                    "",
                    "",
                ]
            )
    return table(headers, rows)


def _categories(report: Report) -> str:
    headers = ["category", "questions", "system", "Hit@10", *_RECALLS, "MRR@10"]
    rows: list[list[str]] = []
    for category, label in CATEGORIES.items():
        for run in report.runs:
            s = _summary(run, category)
            rows.append(
                [
                    f"{label} ({category})",
                    str(s.questions),
                    run.name,
                    f"{s.hit:.3f}",
                    *(f"{s.recall[k]:.3f}" for k in RECALL_AT),
                    f"{s.mrr:.3f}",
                ]
            )
    rows.append(["adversarial (5)", str(report.data.adversarial), "not scored"] + [""] * 5)
    return table(headers, rows, text=3)


def _data_line(data: DataInfo) -> str:
    ev = data.evidence
    run = (
        f"{data.scored} of {data.available} scored questions run (evenly spaced)"
        if data.scored < data.available
        else f"{data.scored} scored (categories 1-4)"
    )
    return (
        f"data: {data.path} (LoCoMo, CC BY-NC 4.0): {len(data.conversations)} conversation(s) "
        f"({', '.join(data.conversations)}), {data.turns:,} turns, {data.questions:,} "
        f"questions: {run}, {data.adversarial} adversarial (category 5, not scored), "
        f"{ev.unanswerable} dropped for lack of valid evidence; evidence entries: "
        f"{ev.repaired} repaired, {ev.invalid} invalid ids dropped"
    )


def markdown(report: Report) -> str:
    head = report.header
    lines = [
        "## Agent-memory retrieval (LoCoMo)",
        "",
        f"{head['date']} · {head['machine']} · Python {head['python']} · "
        f"coderecall {head['coderecall']} · {head['load']}",
        "",
        _data_line(report.data),
        "",
        "### Overall (categories 1-4)",
        "",
        _overall(report),
        "",
        "### Per category",
        "",
        _categories(report),
    ]
    if report.notes:
        lines += ["", "### Notes", "", *(f"- {note}" for note in report.notes)]
    return "\n".join(lines) + "\n"


def _summary_json(s: Summary) -> dict[str, Any]:
    recall = {f"recall@{k}": s.recall[k] for k in RECALL_AT}
    return {"questions": s.questions, "hit@10": s.hit, **recall, "mrr@10": s.mrr}


def to_json(report: Report) -> dict[str, Any]:
    data = report.data
    systems = []
    for run in report.runs:
        latency = Latency.of(run.latencies_ms) if run.latencies_ms else None
        context = _context(run)
        after = _after_write(run)
        systems.append(
            {
                "name": run.name,
                "overall": _summary_json(_summary(run)),
                "categories": {
                    label: _summary_json(_summary(run, category))
                    for category, label in CATEGORIES.items()
                },
                "search_ms": None
                if latency is None
                else {"p50": latency.p50, "p95": latency.p95, "p99": latency.p99},
                "search_after_write_ms": None
                if after is None
                else {"p50": after[0], "p95": after[1], "searches": len(run.after_write_ms)},
                f"context_tokens@{CONTEXT_AT}": None
                if context is None
                else {"mean": context[0], "p95": context[1]},
                "ingest": {
                    "turns": run.turns,
                    "seconds": run.ingest_seconds,
                    "turns_per_s": run.turns_per_second,
                    "records": run.records,
                    "merged": run.merged,
                    "refused": run.refused,
                },
            }
        )
    return {
        "header": report.header,
        "settings": report.settings,
        "targets": TARGETS,
        "data": {
            "path": data.path,
            "conversations": data.conversations,
            "turns": data.turns,
            "questions": data.questions,
            "scored": data.scored,
            "scored_available": data.available,
            "adversarial": data.adversarial,
            "dropped_no_evidence": data.evidence.unanswerable,
            "evidence_repaired": data.evidence.repaired,
            "evidence_invalid": data.evidence.invalid,
        },
        "systems": systems,
        "results": [
            {
                "question": q.key,
                "category": q.category,
                "system": run.name,
                "first_rank": o.first,
                "evidence_ranks": list(o.ranks),
                "found": o.found(RECALL_AT[-1]),
                "evidence": o.evidence,
                "context_tokens": tokens,
            }
            for run in report.runs
            for (q, o), tokens in zip(run.results, run.context_tokens, strict=True)
        ],
        "notes": report.notes,
    }

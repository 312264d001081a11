"""The index log: JSON lines on disk, read back with filters, rotated, shared by processes."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import coderecall
import coderecall._logs as logs_module
from coderecall._logs import LogEntry, attach_file_log, detach_file_log, read_logs

LOGGER = logging.getLogger("coderecall")
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


class _Collect(logging.Handler):
    def __init__(self, level: int) -> None:
        super().__init__(level)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def index_dir(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "index"
    folder.mkdir()
    level = LOGGER.level
    try:
        yield folder
    finally:
        detach_file_log(folder)
        assert LOGGER.level == level


def log_file(index_dir: Path) -> Path:
    return index_dir / "logs" / "coderecall.log"


def line(time: str, level: str, message: str, pid: int = 7, logger: str = "coderecall") -> str:
    entry = {"time": time, "level": level, "pid": pid, "logger": logger, "message": message}
    return json.dumps(entry) + "\n"


def messages(entries: list[LogEntry]) -> list[str]:
    return [entry["message"] for entry in entries]


def test_records_are_json_lines(index_dir: Path) -> None:
    attach_file_log(index_dir)
    LOGGER.debug("not kept: below INFO")
    LOGGER.info("indexed %d files", 12)
    LOGGER.warning("provider %s failed", "ollama")
    logging.getLogger("coderecall.providers").error("timeout after %ss", 30)

    lines = log_file(index_dir).read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3
    records = [json.loads(text) for text in lines]
    assert [list(r) for r in records] == [["time", "level", "pid", "logger", "message"]] * 3
    assert all(TIME.fullmatch(r["time"]) for r in records)
    assert all(r["pid"] == os.getpid() for r in records)
    assert [r["level"] for r in records] == ["INFO", "WARNING", "ERROR"]
    assert [r["logger"] for r in records] == ["coderecall", "coderecall", "coderecall.providers"]

    entries = read_logs(index_dir)
    assert messages(entries) == ["indexed 12 files", "provider ollama failed", "timeout after 30s"]
    moment = datetime.fromisoformat(entries[0]["time"].replace("Z", "+00:00"))
    assert abs(datetime.now(timezone.utc) - moment) < timedelta(minutes=1)


def test_attach_is_idempotent(index_dir: Path) -> None:
    before = len(LOGGER.handlers)
    attach_file_log(index_dir)
    attach_file_log(index_dir)
    attach_file_log(index_dir / "." / "logs" / "..")  # the same folder, spelled otherwise
    assert len(LOGGER.handlers) == before + 1
    LOGGER.info("once")
    assert messages(read_logs(index_dir)) == ["once"]
    detach_file_log(index_dir)
    assert len(LOGGER.handlers) == before
    LOGGER.info("after detach")
    assert messages(read_logs(index_dir)) == ["once"]


def test_console_handlers_stay_quiet(index_dir: Path) -> None:
    console = _Collect(logging.WARNING)
    LOGGER.addHandler(console)
    LOGGER.setLevel(logging.WARNING)
    try:
        attach_file_log(index_dir)
        assert LOGGER.level == logging.INFO
        assert console.level == logging.WARNING
        LOGGER.info("progress")
        LOGGER.warning("trouble")
        assert [r.getMessage() for r in console.records] == ["trouble"]
        assert messages(read_logs(index_dir)) == ["progress", "trouble"]
        detach_file_log(index_dir)
        assert LOGGER.level == logging.WARNING  # restored
    finally:
        LOGGER.removeHandler(console)
        LOGGER.setLevel(logging.NOTSET)


def test_a_lower_level_is_kept(index_dir: Path) -> None:
    LOGGER.setLevel(logging.DEBUG)
    try:
        attach_file_log(index_dir)
        assert LOGGER.level == logging.DEBUG
        LOGGER.debug("debug stays out of the file")
        assert read_logs(index_dir) == []
    finally:
        LOGGER.setLevel(logging.NOTSET)


def test_traceback_and_odd_text_are_kept(index_dir: Path) -> None:
    attach_file_log(index_dir)
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        LOGGER.exception("indexing failed")
    LOGGER.warning("name\udcff.py: ünïcode, 你好, newline\nin message")

    failed, odd = read_logs(index_dir)
    assert failed["level"] == "ERROR"
    assert failed["message"].startswith("indexing failed\nTraceback")
    assert "RuntimeError: boom" in failed["message"]
    assert odd["message"] == "name\udcff.py: ünïcode, 你好, newline\nin message"
    assert len(log_file(index_dir).read_bytes().splitlines()) == 2


def test_filters(index_dir: Path) -> None:
    folder = log_file(index_dir).parent
    folder.mkdir()
    log_file(index_dir).write_text(
        line("2025-01-01T10:00:00.000Z", "DEBUG", "debug detail")
        + line("2025-01-01T11:00:00.000Z", "INFO", "Indexed 3 files")
        + line("2025-01-01T12:00:00.000Z", "WARNING", "provider down")
        + line("2025-01-01T13:00:00.500Z", "ERROR", "index failed")
        + line("2025-01-01T14:00:00.000Z", "CRITICAL", "disk full")
        + line("2025-01-01T15:00:00.000Z", "Level 25", "custom level"),
        encoding="utf-8",
    )
    everything = read_logs(index_dir)
    assert len(everything) == 6
    assert messages(read_logs(index_dir, level="warning")) == [
        "provider down",
        "index failed",
        "disk full",
    ]
    assert messages(read_logs(index_dir, level="WARN")) == messages(
        read_logs(index_dir, level="warning")
    )
    assert messages(read_logs(index_dir, level="Error")) == ["index failed", "disk full"]
    assert len(read_logs(index_dir, level="info")) == 5  # with the custom level 25
    assert len(read_logs(index_dir, level="debug")) == 6
    with pytest.raises(ValueError, match="unknown log level"):
        read_logs(index_dir, level="loud")

    since = datetime(2025, 1, 1, 13, 0, 0, 500000, tzinfo=timezone.utc)
    assert messages(read_logs(index_dir, since=since)) == [
        "index failed",
        "disk full",
        "custom level",
    ]
    naive_local = since.astimezone().replace(tzinfo=None)  # as datetime.now() gives
    assert read_logs(index_dir, since=naive_local) == read_logs(index_dir, since=since)

    assert messages(read_logs(index_dir, contains="INDEX")) == ["Indexed 3 files", "index failed"]
    assert messages(read_logs(index_dir, contains="index", level="error")) == ["index failed"]
    assert read_logs(index_dir, contains="nowhere") == []

    assert messages(read_logs(index_dir, limit=2)) == ["disk full", "custom level"]
    assert messages(read_logs(index_dir, limit=2, level="error")) == ["index failed", "disk full"]
    assert read_logs(index_dir, limit=0) == []


def test_missing_log_reads_empty(tmp_path: Path) -> None:
    assert read_logs(tmp_path) == []
    assert read_logs(tmp_path / "nowhere") == []


def test_rotation_keeps_the_newest_in_order(
    index_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(logs_module, "MAX_BYTES", 2000)
    monkeypatch.setattr(logs_module, "BACKUP_COUNT", 2)
    attach_file_log(index_dir)
    for i in range(200):
        LOGGER.info("message %03d %s", i, "x" * 40)

    folder = log_file(index_dir).parent
    assert sorted(p.name for p in folder.iterdir()) == [
        "coderecall.log",
        "coderecall.log.1",
        "coderecall.log.2",
    ]
    assert all(p.stat().st_size <= 2000 for p in folder.iterdir())

    entries = read_logs(index_dir, limit=1000)
    numbers = [int(message.split()[1]) for message in messages(entries)]
    assert numbers[-1] == 199
    assert numbers == list(range(numbers[0], 200))  # newest last, none missing in between
    assert len(numbers) > 30  # spans the backups: one file holds about 15
    assert messages(read_logs(index_dir, limit=3))[0].startswith("message 197")


def test_damaged_lines_are_skipped(index_dir: Path) -> None:
    folder = log_file(index_dir).parent
    folder.mkdir()
    good = line("2025-01-01T10:00:00.000Z", "INFO", "first")
    cut_short = line("2025-01-01T10:00:01.000Z", "INFO", "killed mid-write")[:40]
    (folder / "coderecall.log.1").write_bytes(
        good.encode()
        + b"not json at all\n"
        + b"[1, 2, 3]\n"
        + b'{"time": "2025-01-01T10:00:00.000Z", "level": "INFO"}\n'  # fields missing
        + line("yesterday", "INFO", "bad time").encode()
        + line("2025-01-01T10:00:00.000Z", "INFO", "bad pid", pid=True).encode()
        + b'{"time": "\xff\xfe"}\n'  # not UTF-8
        + b"\x00\x00\x00\n"
        + b"\n\n"
    )
    log_file(index_dir).write_bytes(
        # A writer killed mid-line, then the next record appended to the fragment.
        cut_short.encode()
        + line("2025-01-01T10:00:02.000Z", "ERROR", "after the fragment").encode()
        + line("2025-01-01T10:00:03.000Z", "INFO", "last").encode()
        + cut_short.encode()  # still being written
    )
    assert messages(read_logs(index_dir)) == ["first", "after the fragment", "last"]


def test_processes_append_to_one_log(index_dir: Path) -> None:
    attach_file_log(index_dir)
    LOGGER.info("parent before")
    script = (
        "import logging, sys\n"
        "from pathlib import Path\n"
        "from coderecall._logs import attach_file_log\n"
        "attach_file_log(Path(sys.argv[1]))\n"
        "log = logging.getLogger('coderecall')\n"
        "for i in range(int(sys.argv[2])):\n"
        "    log.info('%s line %d %s', sys.argv[3], i, 'y' * (i % 50))\n"
    )
    package_root = str(Path(coderecall.__file__).parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    count = 300
    children = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(index_dir), str(count), tag],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for tag in ("alpha", "beta")
    ]
    for child in children:
        _, err = child.communicate(timeout=120)
        assert child.returncode == 0, err.decode()
        assert err == b""  # nothing reached the console
    LOGGER.info("parent after")

    entries = read_logs(index_dir, limit=10_000)
    assert len(entries) == 2 * count + 2
    assert len(log_file(index_dir).read_bytes().splitlines()) == 2 * count + 2
    assert entries[0]["message"] == "parent before"
    assert entries[-1]["message"] == "parent after"
    pids = {entry["pid"] for entry in entries}
    assert pids == {os.getpid(), children[0].pid, children[1].pid}
    for child, tag in zip(children, ("alpha", "beta"), strict=True):
        mine = [e["message"].split()[2] for e in entries if e["pid"] == child.pid]
        assert mine == [str(i) for i in range(count)]  # each process's lines in its order
        assert all(e["message"].startswith(tag) for e in entries if e["pid"] == child.pid)


def test_unwritable_index_dir_is_skipped(index_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    debug = _Collect(logging.DEBUG)
    LOGGER.addHandler(debug)
    LOGGER.setLevel(logging.DEBUG)
    before = list(LOGGER.handlers)

    def refuse(self: Path, *args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Read-only file system", str(self))

    try:
        with monkeypatch.context() as patch:
            patch.setattr(Path, "mkdir", refuse)
            attach_file_log(index_dir)
        assert LOGGER.handlers == before
        assert any("no index log" in r.getMessage() for r in debug.records)
        LOGGER.info("still fine")
        assert read_logs(index_dir) == []
    finally:
        LOGGER.removeHandler(debug)
        LOGGER.setLevel(logging.NOTSET)


def test_logs_path_taken_by_a_file_is_skipped(index_dir: Path) -> None:
    (index_dir / "logs").write_text("not a folder")
    before = list(LOGGER.handlers)
    attach_file_log(index_dir)
    assert LOGGER.handlers == before
    assert read_logs(index_dir) == []


def test_missing_index_dir_is_skipped(tmp_path: Path) -> None:
    before = list(LOGGER.handlers)
    attach_file_log(tmp_path / "not-created")
    assert LOGGER.handlers == before
    assert not (tmp_path / "not-created").exists()

"""``coderecall hook EVENT``: lifecycle hooks of agent hosts (Claude Code, Codex).

The host runs the command with one JSON object on stdin and reads one JSON object from
stdout. Both hosts send snake_case payloads with ``session_id``, ``cwd`` and
``hook_event_name`` (Codex adds ``turn_id`` to the events of a turn), and both take extra
context as ``{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}``.

==================  =========================================  ==============================
command             host events                                 what it does
==================  =========================================  ==============================
``session-start``   ``SessionStart`` (startup, resume, clear,   opens the session; answers the
                    compact)                                    ``[MEMORY]`` block, plus the
                                                                session snapshot when the
                                                                session has a history (resume,
                                                                or after the host compacted;
                                                                its latest prompt then picks
                                                                the block's relevant records)
``prompt``          ``UserPromptSubmit``                        records the prompt; answers
                                                                the records it recalls, if
                                                                any (``--no-recall``: none)
``tool``            ``PostToolUse``,                            records the tool call: an
                    ``PostToolUseFailure``                      ``edit`` for file writes, an
                                                                ``error`` for failures, else a
                                                                compacted ``tool`` result
``stop``            ``Stop``, ``SubagentStop``, ``SessionEnd``  records the assistant's last
                                                                message; ``SessionEnd`` ends
                                                                the session with a summary
``compact``         ``PreCompact`` (``PostCompact``)            notes the compaction and
                                                                rebuilds the snapshot that the
                                                                next ``SessionStart`` injects
==================  =========================================  ==============================

The project is Claude Code's ``$CLAUDE_PROJECT_DIR`` when set (its ``cwd`` follows the
agent's ``cd``), else the one the session already belongs to, else the one holding ``cwd``.

Subagents: an event that carries ``agent_id`` (Claude Code, Codex) comes from a child session
``<session_id>/agent/<agent_id>`` of the main one; a ``parent_session_id`` (hosts that give
subagents their own sessions) links the two. Either way the events land in the root's log.

A hook must never break its host: a payload that cannot be read or a store that cannot be
opened gives ``{}`` on stdout, a one-line reason on stderr, and exit status 0; a command line
that names no hook gives ``{}`` and status 1, which hosts report without blocking the session.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ._errors import Error
from ._paths import project_root

if TYPE_CHECKING:  # loaded by a hook that runs: the CLI builds its parser from this module
    from ._memory import MemoryStore
    from ._sessions import Sessions

__all__ = ["HOOK_EVENTS", "HookResult", "run_hook"]

CONTEXT_BUDGET = 1300
"""Tokens of the ``[MEMORY]`` block injected at session start."""
SNAPSHOT_BUDGET = 1000
"""Tokens of the session snapshot re-injected after the host compacted its context. With
:data:`CONTEXT_BUDGET`, below the 2,500 tokens Codex passes whole (:data:`CONTEXT_BYTES`)."""
CONTEXT_BYTES = 9600
"""UTF-8 bytes a session start answers at most, cut at a line (a record, an item): Claude
Code passes 10,000 characters of context whole and Codex 2,500 tokens counted as 4 bytes
each; past that, both save the text to a file and show the model a preview."""
RECALL_BUDGET = 400
"""Tokens of the records a prompt recalls (see :meth:`MemoryStore.recall`)."""
RECALL_LIMIT = 3
"""Records a prompt recalls at most."""
_TRANSCRIPT_TAIL = 1 << 20
"""Bytes read from the end of a transcript to find the last assistant message."""
_EDIT_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit", "apply_patch"})
_PATCH_PATH = re.compile(r"^\*\*\* (?:Update File|Add File|Delete File|Move to): (.+?)\s*$", re.M)
"""A path in a Codex ``apply_patch`` patch: the files it updates, adds, deletes or moves to."""
_TIMED_OUT = re.compile(
    r"(?:Warning: truncated output[^\n]*\n(?:Total output lines: \d+\n)?\n)?"
    r"command timed out after \d+ milliseconds\n"
)
"""How Codex opens the output of a shell command that timed out: the only failure its Bash
output shows (it passes no exit status, and a failing command's output as any other)."""
_SUMMARY_CHARS = 2000
BUSY_TIMEOUT = 10.0
"""Seconds a hook waits for another process's write to the memory database: well within
the hosts' own hook timeout (600 s by default in Claude Code and Codex), so a stuck writer
costs the event, with a message, not the host's wait."""
SESSION_END_BUSY_TIMEOUT = 0.3
"""The wait at ``SessionEnd``, whose whole hook the hosts give 1.5 s (Claude Code) and 1 s
(Codex) by default: a writer holding the database then costs the session's summary, not a
hook the host kills."""


@dataclass(frozen=True, slots=True)
class HookResult:
    """What a hook answers the host (``output``) and what it recorded."""

    output: dict[str, Any]
    session: str | None = None
    recorded: int | None = None
    """Id of the event recorded, if any."""


def run_hook(
    event: str,
    payload: Mapping[str, Any],
    *,
    memory: str | Path | None = None,
    recall: bool = True,
) -> HookResult:
    """Handle one hook call: ``event`` is a command of the table above, ``payload`` the
    host's JSON; ``recall=False`` keeps a prompt from recalling records. Raises
    :class:`~coderecall.Error` subclasses on bad input; the CLI turns those into ``{}`` and a
    message (see the module docs)."""
    handler = _HANDLERS.get(event)
    if handler is None:
        raise _HookError(f"unknown hook {event!r}; expected one of {', '.join(HOOK_EVENTS)}")
    session = _text(payload, "session_id")
    if not session:
        raise _HookError("the hook payload has no session_id")
    from ._sessions import Sessions

    with _open_store(payload, session, memory) as store:
        sessions = Sessions(store)
        current = _session_of(sessions, payload, session)
        return handler(_Call(store, sessions, current, payload, recall))


def _open_store(payload: Mapping[str, Any], session: str, memory: str | Path | None) -> MemoryStore:
    """The store of the session's project (see the module docs)."""
    from ._memory import MemoryStore
    from ._sessions import Sessions

    ending = _text(payload, "hook_event_name") == "SessionEnd"
    busy = SESSION_END_BUSY_TIMEOUT if ending else BUSY_TIMEOUT
    named = os.environ.get("CLAUDE_PROJECT_DIR", "").strip()
    store = MemoryStore(
        _project(named or _text(payload, "cwd") or "."), path=memory, busy_timeout=busy
    )
    if named:
        return store
    try:
        known = Sessions(store).project_of(session)
    except BaseException:
        store.close()
        raise
    if known is None or known == store.project:
        return store
    store.close()  # the agent moved to another folder: the session stays where it began
    return MemoryStore(known, path=memory, busy_timeout=busy)


def _project(folder: str) -> str | Path:
    path = Path(folder).expanduser()
    # The host's folder may be a sub-folder of the project; one that is gone names it as is.
    return project_root(path) if path.is_dir() else folder


@dataclass(frozen=True, slots=True)
class _Call:
    store: MemoryStore
    sessions: Sessions
    session: str
    payload: Mapping[str, Any]
    recall: bool = True

    @property
    def host_event(self) -> str:
        return _text(self.payload, "hook_event_name")


class _HookError(Error):
    """A hook payload that cannot be handled."""


def _session_start(call: _Call) -> HookResult:
    known = call.sessions.info(call.session)
    call.sessions.start(call.session, host=_host(call.payload))
    source = _text(call.payload, "source") or "startup"
    parts: list[str] = []
    resumed = known is not None or source in ("resume", "compact")
    # A session with a history has a task: its latest prompt picks the relevant records.
    block = call.store.context(session=call.session if resumed else None, budget=CONTEXT_BUDGET)
    if block.text:
        parts.append(block.text)
    if resumed:
        snapshot = call.sessions.snapshot(call.session, budget=SNAPSHOT_BUDGET)
        if snapshot:
            parts.append(snapshot)
    output = _context(call.host_event or "SessionStart", _fit(parts, CONTEXT_BYTES))
    return HookResult(output, call.session)


def _prompt(call: _Call) -> HookResult:
    prompt = _text(call.payload, "prompt")
    if not prompt.strip():
        return HookResult({}, call.session)
    host = _host(call.payload)  # a Codex session start may not tell; its turns do
    if host is not None:
        known = call.sessions.info(call.session)
        if known is None or known.host is None:
            call.sessions.start(call.session, host=host)
    text, recalled = "", []
    if call.recall:
        from ._privacy import filter_text

        # What the store would keep of the prompt is all a search may read.
        asked = filter_text(prompt).text
        shown = {
            i
            for e in call.sessions.events(call.session, kinds=["prompt"], include_private=True)
            for i in e.meta.get("recalled", ())
        }
        block = call.store.recall(
            asked, session=call.session, shown=shown, limit=RECALL_LIMIT, budget=RECALL_BUDGET
        )
        text, recalled = block.text, list(block.records)
    meta = {"recalled": recalled} if recalled else None
    event = call.sessions.record(call.session, "prompt", prompt, meta=meta)
    output = _context(call.host_event or "UserPromptSubmit", text) if recalled else {}
    return HookResult(output, call.session, event.id if event else None)


def _tool(call: _Call) -> HookResult:
    name = _text(call.payload, "tool_name") or "tool"
    given = call.payload.get("tool_input")
    arguments: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    if call.host_event == "PostToolUseFailure":  # Claude Code: an error, no tool_response
        failed, output = True, _text(call.payload, "error")
    else:
        failed, output = _outcome(call.payload.get("tool_response"))
    paths = _paths(name, arguments)
    meta: dict[str, Any] = {"tool": name}
    if paths:
        meta["path"] = paths[0]
    if len(paths) > 1:
        meta["paths"] = paths
    if call.payload.get("is_interrupt") is True:
        meta["interrupted"] = True
    if name in _EDIT_TOOLS and not failed:
        named = ", ".join(paths) or _first_line(_text(arguments, "input"))
        kind, text = "edit", f"{name} {named}"
    else:
        command = "" if name == "apply_patch" else _text(arguments, "command")
        command = command or ", ".join(paths) or _first_line(json.dumps(arguments))
        kind = "error" if failed else "tool"
        text = f"{name}: {command}\n{output}".rstrip()
    event = call.sessions.record(call.session, kind, text, meta=meta, compact=kind != "edit")
    return HookResult({}, call.session, event.id if event else None)


def _stop(call: _Call) -> HookResult:
    if call.host_event == "SessionEnd":  # the last turn's Stop recorded its message
        snapshot = call.sessions.snapshot(call.session, budget=SNAPSHOT_BUDGET)
        call.sessions.end(call.session, summary=snapshot or None)
        return HookResult({}, call.session)
    # A subagent's own transcript: transcript_path is the main session's.
    key = "agent_transcript_path" if call.host_event == "SubagentStop" else "transcript_path"
    message = _text(call.payload, "last_assistant_message") or _last_assistant_message(
        _text(call.payload, key)
    )
    event = None
    if message.strip():
        event = call.sessions.record(call.session, "summary", message[:_SUMMARY_CHARS])
    return HookResult({}, call.session, event.id if event else None)


def _compact(call: _Call) -> HookResult:
    trigger = _text(call.payload, "trigger") or "auto"
    event = call.sessions.record(call.session, "note", f"context compacted ({trigger})")
    call.sessions.snapshot(call.session, budget=SNAPSHOT_BUDGET)  # ready for SessionStart
    return HookResult({}, call.session, event.id if event else None)


_HANDLERS: dict[str, Callable[[_Call], HookResult]] = {
    "session-start": _session_start,
    "prompt": _prompt,
    "tool": _tool,
    "stop": _stop,
    "compact": _compact,
}
HOOK_EVENTS = tuple(_HANDLERS)


def _session_of(sessions: Sessions, payload: Mapping[str, Any], session: str) -> str:
    """The session an event belongs to: a subagent's own child session when the payload
    names one, linked to its parent."""
    parent = _text(payload, "parent_session_id")
    if parent and parent != session:
        sessions.start(session, parent=parent)
    agent = _text(payload, "agent_id")
    if agent:
        child = f"{session}/agent/{agent}"
        sessions.start(child, parent=session)
        return child
    return session


def _context(event: str, text: str) -> dict[str, Any]:
    if not text:
        return {}
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def _outcome(response: object) -> tuple[bool, str]:
    """Whether a tool call failed, and its output as text. Shapes: Codex's Bash output is a
    string; an MCP result is ``{"content": [parts], "isError": ...}``, as is Claude Code's
    Agent result (with no ``isError``); Claude Code's Bash gives ``stdout``, ``stderr`` and
    ``interrupted``."""
    if isinstance(response, str):
        return _TIMED_OUT.match(response) is not None, response
    if isinstance(response, list):
        return False, _parts_text(response)
    if not isinstance(response, Mapping):
        return False, "" if response is None else json.dumps(response)
    failed = any(response.get(key) is True for key in ("is_error", "isError", "interrupted"))
    failed = failed or response.get("success") is False
    code = response.get("exit_code", response.get("exitCode"))
    if isinstance(code, int) and code != 0:
        failed = True
    pieces = [
        str(response[key])
        for key in ("stdout", "output", "stderr", "error")
        if isinstance(response.get(key), str) and response[key]
    ]
    content = response.get("content")
    pieces.append(_parts_text(content) if isinstance(content, list) else _text(response, "content"))
    return failed, "\n".join(piece for piece in pieces if piece)


def _parts_text(parts: Sequence[object]) -> str:
    """The text parts of MCP-style content (images and the like are left out)."""
    return "\n".join(
        part["text"]
        for part in parts
        if isinstance(part, Mapping) and isinstance(part.get("text"), str) and part["text"]
    )


def _paths(tool: str, arguments: Mapping[str, Any]) -> list[str]:
    """The files a tool call names: a Claude Code tool's ``file_path``, or the files a
    Codex ``apply_patch`` patch touches (in ``tool_input.command``)."""
    if tool == "apply_patch":
        found = _PATCH_PATH.findall(_text(arguments, "command"))
        return list(dict.fromkeys(path for path in found if path))
    path = _text(arguments, "file_path") or _text(arguments, "notebook_path")
    return [path] if path else []


def _host(payload: Mapping[str, Any]) -> str | None:
    """The host that sent ``payload``, by what only it sends, or ``None`` when nothing tells:
    a host, once stored, stays (both send ``model`` at session start)."""
    if "turn_id" in payload:
        return "codex"
    transcript = Path(_text(payload, "transcript_path"))
    if ".claude" in transcript.parts:  # ~/.claude/projects/...
        return "claude-code"
    if ".codex" in transcript.parts or transcript.name.startswith("rollout-"):
        return "codex"  # ~/.codex/sessions/.../rollout-....jsonl
    if os.environ.get("CLAUDE_PROJECT_DIR"):  # what Claude Code exports to its hooks
        return "claude-code"
    return None


def _fit(parts: Sequence[str], limit: int) -> str:
    """``parts`` joined by blank lines, within ``limit`` UTF-8 bytes: whole lines are dropped
    from the end of the last part first (a ``[MEMORY]`` block keeps its closing line), with
    any heading left with nothing under it, and a part left with its first line only goes."""
    texts = [part.splitlines() for part in parts if part]

    def joined() -> str:
        return "\n\n".join("\n".join(lines) for lines in texts)

    while texts and len(joined().encode()) > limit:
        lines = texts[-1]
        closer = 1 if lines[-1] == "[/MEMORY]" else 0
        end = len(lines) - closer
        if end <= 1:
            texts.pop()
            continue
        del lines[end - 1]
        while end - 1 > 1 and lines[end - 2].startswith("#"):  # an empty section's title
            del lines[end - 2]
            end -= 1
    texts = [lines for lines in texts if len(lines) > (2 if lines[-1] == "[/MEMORY]" else 1)]
    return joined()


def _last_assistant_message(transcript: str) -> str:
    """The text of the last assistant message of a JSON Lines transcript (Claude Code's
    format), read from the file's end; ``""`` when there is none or it cannot be read."""
    if not transcript:
        return ""
    try:
        with open(transcript, "rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - _TRANSCRIPT_TAIL))
            tail = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    for line in reversed(tail.splitlines()):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict) or entry.get("type") != "assistant":
            continue
        message = entry.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            texts = [
                part["text"]
                for part in content
                if isinstance(part, dict) and part.get("type") == "text" and part.get("text")
            ]
            if texts:
                return "\n".join(texts)
    return ""


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    return value if isinstance(value, str) else ""


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:200] if text.strip() else ""


DESCRIPTION = (
    "Records a session event from Claude Code or Codex and answers the context to add (see "
    "docs/hooks.md). Never fails the host: errors print {} and exit 0 (1 for a command line "
    "that names no hook)."
)


def arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``coderecall hook``, in the full command line and in :func:`command`."""
    parser.add_argument("event", choices=HOOK_EVENTS)
    parser.add_argument("--memory", metavar="PATH", help="the memory database")
    parser.add_argument(
        "--no-recall",
        dest="recall",
        action="store_false",
        help="prompt: record the prompt only, without answering the records it recalls",
    )


def command(argv: Sequence[str]) -> int:
    """``coderecall hook ARGS`` parsed on its own: a host starts it on every prompt and tool
    call, so it loads nothing of the command line but this (see ``_launch``)."""
    parser = argparse.ArgumentParser(prog="coderecall hook", description=DESCRIPTION)
    arguments(parser)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        if exc.code == 0:  # --help
            raise
        # argparse's status 2 means "block this action" to Claude Code: a misconfigured
        # hook must not stop every prompt, so the host gets no context and a plain failure.
        sys.stdout.write("{}\n")
        return 1
    # Hosts send UTF-8 whatever the locale; a stray bad byte costs that character only.
    stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
    return main(args.event, stdin, sys.stdout, args.memory, recall=args.recall)


def main(
    event: str,
    stdin: IO[str],
    stdout: IO[str],
    memory: str | None = None,
    *,
    recall: bool = True,
) -> int:
    """The CLI's entry: never fails the host (see the module docs)."""
    try:
        raw = stdin.read()
        try:
            payload = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as exc:
            raise _HookError(f"the hook payload on stdin is not JSON ({exc})") from None
        if not isinstance(payload, dict):
            raise _HookError("the hook payload is not a JSON object")
        output = run_hook(event, payload, memory=memory, recall=recall).output
    except (Error, ValueError, OSError) as exc:
        print(f"coderecall hook {event}: {exc}", file=sys.stderr)
        output = {}
    except Exception as exc:  # a bug, or a payload nested past Python's recursion limit
        print(f"coderecall hook {event}: {type(exc).__name__}: {exc}", file=sys.stderr)
        output = {}
    stdout.write(json.dumps(output, ensure_ascii=False))
    stdout.write("\n")
    return 0

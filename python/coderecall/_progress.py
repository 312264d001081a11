"""Progress of long operations: a rich bar on a terminal, a callback for API callers."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["ProgressCallback", "progress_reporter"]

ProgressCallback = Callable[[int, int], None]
"""Called with ``(done, total)``; ``total`` is 0 while it is not known yet."""


@contextmanager
def progress_reporter(
    progress: bool | ProgressCallback | None, description: str
) -> Iterator[ProgressCallback | None]:
    """Yield the function to feed with ``(done, total)``, or ``None`` when nobody listens.

    ``progress`` is a callback (called only when the numbers change), ``False`` for silence,
    or ``True``/``None`` for a bar on stderr. The bar appears only when stderr is a terminal:
    redrawn bars would garble logs and piped output.
    """
    if callable(progress):
        yield _OnChange(progress)
        return
    if progress is False or not _may_be_terminal():
        yield None
        return
    # rich loads only where a bar may be drawn: it costs every importer of coderecall ~25 ms.
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    if not console.is_terminal:
        yield None
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total or None)

        yield update


class _OnChange:
    """Forward ``(done, total)`` only when it differs from the last call."""

    def __init__(self, callback: ProgressCallback):
        self._callback = callback
        self._last: tuple[int, int] | None = None

    def __call__(self, done: int, total: int) -> None:
        if (done, total) != self._last:
            self._last = (done, total)
            self._callback(done, total)


def _may_be_terminal() -> bool:
    """Whether rich might take stderr for a terminal: it is one, or the environment tells
    rich to act as if (rich decides the rest). Piped output (an agent's tool call) does not
    load rich at all."""
    isatty = getattr(sys.stderr, "isatty", None)
    forced = any(os.environ.get(name) for name in ("FORCE_COLOR", "TTY_COMPATIBLE"))
    return forced or (isatty is not None and isatty())

"""The ``coderecall`` command's entry point. ``coderecall hook`` runs on every prompt and
tool call of an agent, each time as a new process, so it is dispatched before the rest of the
command line (the code index, the model hub, rich) is imported: those would cost it more than
its own work."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["hook"]:
        from ._hooks import command

        return command(args[1:])
    from ._cli import main as cli_main

    return cli_main(args)

"""``python -m coderecall``: the same as the ``coderecall`` command."""

from ._cli import main

raise SystemExit(main())

"""``python -m coderecall``: the same as the ``coderecall`` command."""

from ._launch import main

raise SystemExit(main())

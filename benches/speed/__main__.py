"""Entry point of ``python -m benches.speed``."""

from .run import main

raise SystemExit(main())

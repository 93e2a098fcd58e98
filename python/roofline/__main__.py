"""``python -m roofline``: the same as the ``roofline`` command."""

from roofline.cli import main

raise SystemExit(main())

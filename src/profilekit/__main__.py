"""`python -m profilekit`."""

from profilekit.cli import main

raise SystemExit(main())

"""`python -m console` runs the same entry point as the `eagle-console` command."""

from console.cli.launch import main

raise SystemExit(main())

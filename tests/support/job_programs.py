"""Small programs the tests launch as jobs, each doing one thing a test can read back."""

from __future__ import annotations

ARGV_ECHO = (
    "import json, os, sys; json.dump({'argv': sys.argv[1:], 'env': os.environ.get('PROBE')},"
    " open(sys.argv[1], 'w'))"
)
"""`python -c ARGV_ECHO OUT ARGS...` writes its ARGS and $PROBE to OUT as JSON: what a job got."""

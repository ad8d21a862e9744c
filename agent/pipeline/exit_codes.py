"""The pipeline jobs' exit codes: a contract with the agent's restart policy, kept in one place.

The restart policy reads them to tell a failure a retry may mend from an end a retry cannot;
the runner and the other jobs exit with them. Only the standard library here.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import NoReturn

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_SIGNAL = 0, 1, 2, 3
"""EXIT_USAGE: refused (bad arguments, or the server refused every request). EXIT_SIGNAL:
stopped by SIGINT/SIGTERM after draining (or cancelling) what was in flight."""
EXIT_LOCKED = 4
"""Another process writes the dataset (it holds writer.lock); nothing was read or written."""
EXIT_WRITE_FAILED = 5
"""A dataset file could not be written (disk full, quota, I/O error, size limit): the run
stopped, every record written whole is kept, and a rerun resumes exactly."""


def exit_with(main: Callable[[], int], program: str) -> NoReturn:
    """Run a job's `main` as its process: Ctrl+C or SIGINT ends it with one line, not a traceback.

    An interrupted export printed a KeyboardInterrupt traceback; what a job had written is
    left as it was, incomplete, and it exits EXIT_SIGNAL (a stop someone asked for: no restart).
    """
    try:
        code = main()
    except KeyboardInterrupt:
        print(f"{program}: interrupted; what it wrote is incomplete: run it again", file=sys.stderr)  # noqa: T201
        code = EXIT_SIGNAL
    raise SystemExit(code)

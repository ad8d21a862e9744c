"""The runner's exit codes: a contract with the agent's restart policy, kept in one place.

The restart policy reads them to tell a failure a retry may mend from an end a retry cannot
(DESIGN §10); the runner exits with them. Nothing here imports anything.
"""

from __future__ import annotations

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_SIGNAL = 0, 1, 2, 3
"""EXIT_USAGE: refused (bad arguments, or the server refused every request). EXIT_SIGNAL:
stopped by SIGINT/SIGTERM after draining (or cancelling) what was in flight."""
EXIT_LOCKED = 4
"""Another process writes the dataset (it holds writer.lock); nothing was read or written."""
EXIT_WRITE_FAILED = 5
"""A dataset file could not be written (disk full, quota, I/O error, size limit): the run
stopped, every record written whole is kept, and a rerun resumes exactly."""

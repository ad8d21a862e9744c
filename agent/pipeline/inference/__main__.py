"""`python -m agent.pipeline.inference`: run one dataset up to its token budget."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys

from agent.datasets.writer_lock import DatasetLockedError, WriterLockError
from agent.host.sglang_auth import ApiKeyError
from agent.pipeline.inference.options import (
    EXIT_FAILURE,
    EXIT_LOCKED,
    EXIT_USAGE,
    EXIT_WRITE_FAILED,
    parse_options,
)
from agent.pipeline.inference.prompts import PromptsError
from agent.pipeline.inference.records import CorruptRecordError
from agent.pipeline.inference.runner import RunFailedError, Runner
from agent.pipeline.inference.storage import StorageError
from agent.pipeline.inference.torn_tail import ConcurrentWriterError


def main(argv: list[str] | None = None) -> int:
    """Parse flags, run, and turn every expected failure into one clear line and an exit code."""
    options = parse_options(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s"
    )
    try:
        return asyncio.run(Runner(options).run())
    except (DatasetLockedError, ConcurrentWriterError) as exc:
        return _said(exc, EXIT_LOCKED)
    except (PromptsError, WriterLockError, ApiKeyError) as exc:
        return _said(exc, EXIT_USAGE)
    except RunFailedError as exc:
        return _said(exc, exc.exit_code)
    except CorruptRecordError as exc:
        return _said(exc, EXIT_FAILURE)
    except StorageError as exc:
        return _said(f"stopped: {exc}", EXIT_WRITE_FAILED)
    except OSError as exc:  # a dataset file that is a FIFO or a device, or cannot be read
        return _said(exc, EXIT_FAILURE)


def _said(what: object, code: int) -> int:
    """One line on stderr (which may sit on the full disk itself), and the exit code."""
    with contextlib.suppress(OSError):
        print(f"runner: {what}", file=sys.stderr, flush=True)  # noqa: T201
    return code


if __name__ == "__main__":
    raise SystemExit(main())

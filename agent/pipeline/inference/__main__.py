"""`python -m agent.pipeline.inference`: run one dataset up to its token budget."""

from __future__ import annotations

import asyncio
import logging
import sys

from agent.pipeline.inference.options import EXIT_FAILURE, EXIT_USAGE, parse_options
from agent.pipeline.inference.prompts import PromptsError
from agent.pipeline.inference.records import CorruptRecordError
from agent.pipeline.inference.runner import RunFailedError, Runner


def main(argv: list[str] | None = None) -> int:
    """Parse flags, run, and turn every expected failure into one clear line and an exit code."""
    options = parse_options(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s"
    )
    try:
        return asyncio.run(Runner(options).run())
    except PromptsError as exc:
        print(f"runner: {exc}", file=sys.stderr)  # noqa: T201
        return EXIT_USAGE
    except (CorruptRecordError, RunFailedError) as exc:
        print(f"runner: {exc}", file=sys.stderr)  # noqa: T201
        return EXIT_FAILURE
    except OSError as exc:  # a dataset file that is a FIFO or a device, or cannot be read
        print(f"runner: {exc}", file=sys.stderr)  # noqa: T201
        return EXIT_FAILURE


if __name__ == "__main__":
    raise SystemExit(main())

"""`python -m agent.pipeline.tokenizer PATH [--trust-remote-code] [--json]`: load it, say what it is.

The agent runs this in a subprocess for `doctor` (so transformers and the folder's own code never
run inside the daemon, and a slow load is bounded by killing the process). Exit 0 when it loads,
2 when it is refused or cannot be loaded, with one line on stderr (or in the JSON) saying why.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from agent.pipeline.tokenizer import TokenizerError, add_trust_remote_code_flag, load_tokenizer
from agent.pipeline.tokenizer.describe import describe_tokenizer, summary

EXIT_OK, EXIT_REFUSED = 0, 2


def main(argv: list[str] | None = None) -> int:
    """Load the tokenizer and print its facts (a JSON object with --json)."""
    parser = argparse.ArgumentParser(prog="python -m agent.pipeline.tokenizer", description=__doc__)
    parser.add_argument("path", help="the tokenizer folder")
    add_trust_remote_code_flag(parser)
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        facts = describe_tokenizer(
            load_tokenizer(args.path, trust_remote_code=args.trust_remote_code)
        )
    except TokenizerError as exc:
        _say(args.json, {"ok": False, "detail": str(exc)}, f"tokenizer: {exc}")
        return EXIT_REFUSED
    facts |= {"ok": True, "load_s": round(time.monotonic() - started, 3)}
    _say(args.json, facts, summary(facts))
    return EXIT_OK


def _say(as_json: bool, record: dict[str, object], line: str) -> None:
    if as_json:
        print(json.dumps(record), flush=True)  # noqa: T201
    else:
        print(line, file=sys.stdout if record["ok"] else sys.stderr)  # noqa: T201


if __name__ == "__main__":
    raise SystemExit(main())

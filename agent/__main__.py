"""`python -m agent serve|attach|start|status|stop`: the agent's command line on the GPU box."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from agent.state import DEFAULT_STATE_DIR, StateDirError, prepare_state_dir, read_json


def build_parser() -> argparse.ArgumentParser:
    """The agent's argument parser."""
    parser = argparse.ArgumentParser(prog="python -m agent", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    for name, text in (
        ("serve", "run the daemon in the foreground on <state>/agent.sock"),
        ("attach", "start the daemon if needed, then bridge stdin/stdout to it"),
        ("start", "start the daemon if it is not running, then return (at boot, from cron)"),
        ("status", "print the running daemon's identity as JSON"),
        ("stop", "stop the daemon (jobs it started keep running)"),
    ):
        command = commands.add_parser(name, help=text, description=text)
        command.add_argument("--state-dir", default=DEFAULT_STATE_DIR, help="private state dir")
    shim = commands.add_parser("shim", help="run one job and record its end (the daemon uses it)")
    shim.add_argument("--job-dir", type=Path, required=True)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one agent command; returns its exit code."""
    args = build_parser().parse_args(argv)
    if args.command == "shim":
        from agent.jobs.shim import run_shim

        return run_shim(args.job_dir)
    try:
        paths = prepare_state_dir(args.state_dir)
    except StateDirError as exc:
        print(f"agent: {exc}", file=sys.stderr)  # noqa: T201
        return 1
    if args.command == "serve":
        from agent.daemon import serve

        return serve(paths)
    if args.command in ("attach", "start"):
        from agent.attach import AttachError, attach, start

        try:
            return attach(paths) if args.command == "attach" else start(paths)
        except AttachError as exc:
            print(f"agent: {exc}", file=sys.stderr)  # noqa: T201
            return 1
    if args.command == "stop":
        from agent.attach import AttachError, stop_daemon

        try:
            stop_daemon(paths)
        except AttachError as exc:
            print(f"agent: {exc}", file=sys.stderr)  # noqa: T201
            return 1
        return 0
    print(json.dumps(read_json(paths.daemon_info)))  # noqa: T201
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

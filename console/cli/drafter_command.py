"""`eagle-console check-drafter HOST [PATH]`: the drafter check, run on the box now.

Without PATH, the checkpoint the drafter server would serve (the training run's best where its
command says `{best_checkpoint}`). Exit 0 when no field failed, 1 when one did or the check could
not run, 2 on usage. `--json` prints the check as the agent answered it.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from agent.protocol import DRAFTER_CHECK, DrafterCheck, DrafterCheckParams, to_wire
from console.cli.output import stdout_console
from console.config import HostConfig
from console.link.host_link import open_host_link
from console.model.drafter_check_view import check_text
from console.model.safe_text import literal_lines

EXIT_FAILED = 1


def add_parser(commands: Any) -> None:
    """The verb's parser, added to `eagle-console`'s subcommands."""
    check = commands.add_parser(
        "check-drafter",
        help="check a drafter checkpoint against its target, vocab, layers and server",
    )
    check.add_argument("host", help="a host from the config's [hosts]")
    check.add_argument(
        "path", nargs="?", help="a checkpoint folder on the box (default: the one it would serve)"
    )
    check.add_argument("--json", action="store_true", help="the check as one JSON object")


async def run_check_drafter(args: argparse.Namespace, host: HostConfig) -> int:
    """Ask the agent to check; print every field."""
    link = await open_host_link(host)
    try:
        check: DrafterCheck = await link.call(DRAFTER_CHECK, DrafterCheckParams(args.path))
    finally:
        await link.close()
    out = stdout_console()
    if args.json:
        out.file.write(json.dumps({"host": host.name, **to_wire(check)}) + "\n")
    else:
        out.print(literal_lines(check_text(check)))
    return 0 if check.ok else EXIT_FAILED

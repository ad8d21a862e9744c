"""`eagle-console recipe HOST --trainer T --server S`: the job blocks after the export, ready-made.

Printed as TOML to add to eagle-console.toml (then `apply`), each note a comment above them;
`--json` gives {"host", "jobs", "notes"}. Filled from the host's config and, when the box answers, a
snapshot (the GPUs nvidia-smi shows, the export's max length, a dataset's prompts).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from agent.protocol import SNAPSHOT, Snapshot, SnapshotParams
from console.cli.output import stderr_console, stdout_console
from console.config import HostConfig
from console.config.toml_text import job_blocks
from console.link.agent_link import LinkError
from console.link.host_link import open_host_link
from console.model.recipe import SERVERS, TRAINERS, RecipeError, build_recipe, recipe_facts
from console.model.safe_text import literal

EXIT_REFUSED = 1


def add_parser(commands: Any) -> None:
    """The verb's parser, added to `eagle-console`'s subcommands."""
    recipe = commands.add_parser(
        "recipe", help="job blocks for training, the drafter's server and its evaluation"
    )
    recipe.add_argument("host", help="a host from the config's [hosts]")
    recipe.add_argument(
        "--trainer", choices=TRAINERS, required=True, help="whose training and checkpoints"
    )
    recipe.add_argument(
        "--server", choices=SERVERS, required=True, help="what serves the trained drafter"
    )
    recipe.add_argument("--json", action="store_true", help='one object: {"host", "jobs", "notes"}')


async def run_recipe(args: argparse.Namespace, host: HostConfig) -> int:
    """Print the recipe; 1 when it cannot be written (the reason on stderr)."""
    snapshot = await _snapshot(host)
    try:
        recipe = build_recipe(recipe_facts(host.pipeline, snapshot), args.trainer, args.server)
    except RecipeError as exc:
        stderr_console().print(literal(f"eagle-console: no recipe for {host.name}: {exc}"))
        return EXIT_REFUSED
    if not snapshot:
        recipe.notes.insert(0, f"{host.name} did not answer: filled from the config alone")
    out = stdout_console()
    if args.json:
        out.file.write(
            json.dumps({"host": host.name, "jobs": recipe.jobs, "notes": recipe.notes}) + "\n"
        )
        return 0
    lines = [f"# {note}" for note in recipe.notes] + [""] + job_blocks(host.name, recipe.jobs)
    out.file.write("\n".join(lines))
    return 0


async def _snapshot(host: HostConfig) -> Snapshot | None:
    try:
        link = await open_host_link(host)
    except LinkError:
        return None
    try:
        snapshot: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
        return snapshot
    except LinkError:
        return None
    finally:
        await link.close()

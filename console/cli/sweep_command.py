"""`eagle-console sweep HOST`: the drafter served at each draft setting in turn, the best named.

The grid is every combination of the values given (SGLang: --steps, --topk, --draft-tokens;
vLLM: --tokens). The agent carries it (start the drafter server at a setting, run the evaluate
job into a folder of its own, stop the server, next), so a lost link changes nothing on the box;
this follows it and prints each step, then the best setting per concurrency level and the
command line that serves it.
"""

from __future__ import annotations

import argparse
import itertools
import secrets
from typing import Any

from agent.protocol import OPERATIONS_SWEEP, DraftSetting, SweepParams
from console.cli.apply_command import refuse_start_if_config_differs
from console.cli.output import stdout_console, step_printer
from console.config import HostConfig
from console.link.agent_link import LinkError
from console.link.host_link import open_host_link
from console.link.redeploy import follow_operation
from console.model.safe_text import literal

MAX_SETTINGS = 64


def add_parser(commands: Any) -> None:
    """The verb's parser, added to `eagle-console`'s subcommands."""
    sweep = commands.add_parser(
        "sweep", help="serve the drafter at each draft setting, evaluate it, name the best"
    )
    sweep.add_argument("host", help="a host from the config's [hosts]")
    for flag, what in (("--steps", "SGLang's --speculative-num-steps"),
                       ("--topk", "SGLang's --speculative-eagle-topk"),
                       ("--draft-tokens", "SGLang's --speculative-num-draft-tokens"),
                       ("--tokens", "vLLM's num_speculative_tokens")):  # fmt: skip
        sweep.add_argument(flag, type=_values, default=(None,), help=f"{what}, e.g. 1,3,5")
    sweep.add_argument("--server", help="the drafter_server job (default: the configured one)")
    sweep.add_argument("--evaluate", help="the evaluate job (default: the configured one)")


def _values(text: str) -> tuple[int, ...]:
    try:
        values = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
    except ValueError:
        values = ()
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of whole numbers from 1")
    return values


def grid(args: argparse.Namespace) -> tuple[DraftSetting, ...]:
    """Every combination of the values given; LinkError when there is none or too many."""
    settings = tuple(
        DraftSetting(steps, topk, tokens, speculative)
        for steps, topk, tokens, speculative in itertools.product(
            args.steps, args.topk, args.draft_tokens, args.tokens
        )
    )  # fmt: skip
    if settings == (DraftSetting(),):
        raise LinkError("give the values to sweep: --steps, --topk, --draft-tokens (SGLang) or "
                        "--tokens (vLLM), e.g. --steps 1,3,5 --topk 1,4")  # fmt: skip
    if len(settings) > MAX_SETTINGS:
        raise LinkError(f"{len(settings)} settings: at most {MAX_SETTINGS}, each a server start "
                        "and an evaluation")  # fmt: skip
    return settings


def _job(host: HostConfig, given: str | None, kind: str, flag: str) -> str:
    names = [name for name, spec in host.pipeline.jobs.items() if spec.kind == kind]
    if given is not None:
        return given
    if len(names) != 1:
        raise LinkError(f"{len(names)} {kind} jobs in hosts.{host.name}.jobs: name one with {flag}")
    return names[0]


async def run_sweep(args: argparse.Namespace, host: HostConfig) -> int:
    """Ask the agent for the sweep, follow it to its end; 0 when a best setting was named."""
    if host.read_only:
        raise LinkError(f"{host.name} is read_only in the config: a sweep starts and stops servers")
    params = SweepParams(_job(host, args.server, "drafter_server", "--server"),
                         _job(host, args.evaluate, "evaluate", "--evaluate"), grid(args))  # fmt: skip
    out = stdout_console()
    link = await open_host_link(host)
    try:
        refuse_start_if_config_differs(link, host)
        started = await link.call(
            OPERATIONS_SWEEP, params, idempotency_key=f"sweep-{secrets.token_hex(6)}"
        )
        out.print(literal(f"the agent carries the sweep as {started.id}: {started.subject}"))
        ended = await follow_operation(
            link, started.id, step_printer(out), lambda: open_host_link(host)
        )
    finally:
        await link.close()
    out.print(literal(ended.outcome))
    return 0 if ended.state == "done" else 1

"""Terminal text: hostile host text through every screen and every headless command.

A box whose every file holds hostile text (`_terminal_text_box`: markup, real escape sequences
and every control, bidi and undecodable character, each between BARs) is served by a real agent
over asyncssh's loopback SSH server, with the SGLang simulator reporting a hostile model path.
The real `eagle-console` runs on a pty of its own and is driven by keys through the dashboard,
a dataset's detail, a job's log (search and filter), the pipeline, the stop and redeploy modals
and the palette; then `status`, `status --json`, `report`, `doctor`, `deploy --dry-run` and
`redeploy` run on ptys too. Every byte they write is kept.

Checks: no hostile character or sequence reached the terminal raw (corrupt counts each), none
was silently dropped, each surface showed the hostile text as text (JSON: gave it back exactly),
and every command ended as it should, with no traceback.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from agent.protocol import JOBS_LAUNCH, JobInfo, LaunchParams
from console.config import load_config
from console.link.ssh_link import open_ssh_link
from faults.harness.agents import agent_cleanup, private_home
from faults.hostile._terminal_text_box import SHOWN, Counts, HostileBox, count
from faults.result import Scale, ScenarioResult
from tests.support.simulator_process import running_simulator
from tests.support.ssh_servers import asyncssh_server
from tests.support.terminal import MarkerNotSeenError, PtyTerminal

TITLE = "Terminal text: hostile host text through every screen and headless command"

STEP_TIMEOUT_S = 60.0
FOOTER = re.compile(rb"\x1b\[50;1H((?:\x1b\[[\d;]*m)*) o ")
"""The footer is the last of the terminal's 50 rows, its first key `o` while the datasets table
has the focus (only that table has it), `g` otherwise. Its style tells the dashboard on top from
the dashboard dimmed behind a modal."""
DATASETS_FOCUSED = b"<the dashboard on top, its datasets table focused>"
JOBS_FOCUSED = b"<the dashboard on top, its datasets table not focused>"
TUI_STEPS: tuple[tuple[str, bytes, bytes], ...] = (
    ("dashboard", b"", rb"hostds0"),
    ("dataset detail", b"\r", rb"finish reasons"),
    ("back", b"\x1b", DATASETS_FOCUSED),
    ("jobs table", b"\t", JOBS_FOCUSED),
    ("job log", b"l", rb"hostlog0"),
    ("search prompt", b"/", re.escape(b"search (regex")),
    ("log search", b"hostlog1\r", re.escape(b"search: /hostlog1/")),
    ("filter prompt", b"f", re.escape(b"filter (regex")),
    ("log filter", b"\\[red\r", re.escape(b"filter: /\\[red/")),
    ("back", b"\x1b", JOBS_FOCUSED),
    ("stop modal", b"k", rb"Stop hostjob"),
    ("back", b"\x1b", JOBS_FOCUSED),
    ("redeploy modal", b"R", rb"Kill, deploy, restart"),
    ("back", b"\x1b", JOBS_FOCUSED),
    ("pipeline", b"p", rb"stop server"),
    ("back", b"\x1b", JOBS_FOCUSED),
    ("palette", b":", rb"Search"),
    ("palette search", b"reconnect", rb"reconnect"),
    ("palette command", b"\r", JOBS_FOCUSED),
)
"""(surface, keys, what it shows once it is up); keys go one step at a time, never ahead."""
SHOWING_STEPS = ("console: dashboard", "console: dataset detail", "console: job log",
                 "console: log search", "console: log filter", "console: stop modal",
                 "console: redeploy modal")  # fmt: skip
"""Steps whose screen is mostly host text: each must show some (the others may repaint little)."""
HEADLESS: tuple[tuple[str, tuple[str, ...], int], ...] = (
    ("status", ("status", "gpu"), 0),
    ("status --json", ("status", "gpu", "--json"), 0),
    ("report", ("report", "gpu"), 0),
    ("doctor", ("doctor", "gpu"), 0),  # no job needs a GPU: no line fails
    ("deploy --dry-run", ("deploy", "gpu", "--dry-run"), 0),
)


@dataclass
class Surface:
    """What one screen or command wrote, and whether it ended as it should."""

    name: str
    output: bytes
    ended_well: bool
    json_lines: bool = False


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """Serve the hostile box, drive every surface, count what reached the terminal."""
    result = ScenarioResult("terminal_text", TITLE, seed)
    box = HostileBox.create(workdir / "box", scale.pick(12, 3), scale.pick(24, 3))
    result.faults = box.planted
    surfaces: list[Surface] = []
    with private_home(workdir / "home"):
        async with agent_cleanup(box.state):
            with running_simulator(workdir / "sim", "--model-path", box.model_path) as sim:
                box.append_server_log(sim.log_file)
                async with asyncssh_server(workdir / "ssh") as server:
                    config = workdir / "eagle-console.toml"
                    config.write_text(box.config(server.endpoint, sim.url, sim.log_file))
                    job_id = await launch_job(config, box)
                    surfaces += await asyncio.to_thread(drive_console, config, result)
                    for name, args, code in (
                        *HEADLESS,
                        ("redeploy", ("redeploy", "gpu", job_id), 0),
                    ):
                        surfaces.append(
                            await asyncio.to_thread(run_command, config, name, args, code)
                        )
    judge(surfaces, box, result)
    return result


async def launch_job(config: Path, box: HostileBox) -> str:
    """Start the hostile job (its name, argv and output are hostile); returns its id."""
    link = await open_ssh_link(load_config(config).host("gpu"))
    try:
        job: JobInfo = await link.call(
            JOBS_LAUNCH, LaunchParams(box.job_name), idempotency_key="hostile"
        )
    finally:
        await link.close()
    return job.id


def command(config: Path, *args: str) -> list[str]:
    """`python -m console --config CONFIG ARGS`, as a user runs it."""
    return [sys.executable, "-m", "console", "--config", str(config), *args]


def drive_console(config: Path, result: ScenarioResult) -> list[Surface]:
    """The TUI, key by key; one surface per step (the bytes written while it was up)."""
    terminal = PtyTerminal(command(config, "gpu"), dict(os.environ))
    surfaces: list[Surface] = []
    try:
        start = 0
        footer_style = b""
        for name, keys, shown in TUI_STEPS:
            sent_at = len(terminal.output)
            if keys:
                terminal.send(keys)
            terminal.wait_for(_marker(shown, footer_style), STEP_TIMEOUT_S, after=sent_at)
            if f"console: {name}" in SHOWING_STEPS:  # its marker may be drawn a frame before
                terminal.wait_for(SHOWN.pattern, STEP_TIMEOUT_S, after=start)  # the host text
            footer_style = footer_style or _footer_style(terminal)
            surfaces.append(Surface(f"console: {name}", bytes(terminal.output[start:]), True))
            start = len(terminal.output)
        terminal.send(b"q")
        code = terminal.wait_exit(STEP_TIMEOUT_S)
        surfaces.append(Surface("console: quit", bytes(terminal.output[start:]), code == 0))
    except MarkerNotSeenError as exc:
        kept = config.parent / "console-output.bin"
        kept.write_bytes(bytes(terminal.output))
        result.violate(f"the console never showed what a step waits for (all it wrote is in "
                       f"{kept}): {str(exc).splitlines()[0]}")  # fmt: skip
    finally:
        terminal.close()
    return surfaces


def _footer_style(terminal: PtyTerminal) -> bytes:
    """The style of the footer's keys on the dashboard as it first showed (not dimmed)."""
    found = FOOTER.search(terminal.output)
    return found.group(1) if found else b""


def _marker(shown: bytes, footer_style: bytes) -> bytes:
    """The regex a step waits for: the footer (in the dashboard's own style), or `shown`."""
    if shown == DATASETS_FOCUSED:
        return re.escape(b"\x1b[50;1H" + footer_style + b" o ")
    if shown == JOBS_FOCUSED:
        return re.escape(b"\x1b[50;1H" + footer_style + b" g ")
    return shown


def run_command(config: Path, name: str, args: tuple[str, ...], expected: int) -> Surface:
    """One headless command on a pty of its own, to its end."""
    terminal = PtyTerminal(command(config, *args), dict(os.environ))
    try:
        code = terminal.wait_exit(STEP_TIMEOUT_S * 2)
    finally:
        terminal.close()
    return Surface(name, bytes(terminal.output), code == expected, json_lines="--json" in args)


def judge(surfaces: list[Surface], box: HostileBox, result: ScenarioResult) -> None:
    """Count every surface; each must show the text as text and let nothing through."""
    total = Counts()
    for surface in surfaces:
        result.attempted += 1
        counts = count(surface.output)
        total.add(counts)
        problems = _problems(surface, counts, box)
        if problems:
            result.violate(f"{surface.name}: {'; '.join(problems)}")
        else:
            result.acknowledged += 1
        result.notes.append(
            f"{surface.name}: shown {counts.shown}, reached the terminal raw {counts.leaked}, "
            f"dropped {counts.dropped}"
        )
    result.corrupt = total.leaked + total.dropped
    result.notes.insert(0, f"hostile characters shown as text {total.shown}, reached the terminal "
                           f"raw {total.leaked}, dropped {total.dropped} over {len(surfaces)} surfaces")  # fmt: skip
    if total.leaked_chars:
        result.notes.append(f"characters that got through: {', '.join(sorted(total.leaked_chars))}")


def _problems(surface: Surface, counts: Counts, box: HostileBox) -> list[str]:
    problems = []
    if not surface.ended_well:
        tail = surface.output[-400:].decode(errors="replace")
        problems.append(f"did not end as it should; it wrote at the end: {tail!r}")
    if b"Traceback" in surface.output:
        problems.append("printed a traceback")
    if counts.leaked or counts.dropped:
        chars = ", ".join(sorted(counts.leaked_chars))
        problems.append(f"{counts.leaked} raw ({chars}), {counts.dropped} dropped")
    if surface.json_lines:
        if not _gives_back(surface.output, box):
            problems.append("its JSON does not give the hostile dataset names back exactly")
    elif counts.shown == 0 and (surface.name in SHOWING_STEPS or ":" not in surface.name):
        problems.append("showed no hostile text at all")
    return problems


def _gives_back(output: bytes, box: HostileBox) -> bool:
    lines = [line for line in output.decode(errors="replace").splitlines() if line.startswith("{")]
    try:
        names = {d["name"] for line in lines for d in json.loads(line)["datasets"]}
    except (ValueError, KeyError, TypeError):
        return False
    return names == set(box.datasets) and output.isascii()

"""An agent on this machine, reached through `python -m agent attach` as a subprocess.

A host configured with `ssh = "local"`, the plain demo and many tests use it; it runs the very
same attach and daemon code as the SSH path. Files move on the local disk (LocalChannel); the
agent's own files.install still confines them to the deploy roots and swaps them atomically.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from pathlib import Path

from agent.protocol import PipelineConfig
from console.link.agent_link import AgentLink, LinkError
from console.link.bundle import local_bundle
from console.link.file_channel import LocalChannel
from console.link.pipes import read_out, to_end

EXIT_WAIT_S = 10.0
STDERR_KEPT_BYTES = 64 * 1024
"""What a link that failed keeps of the attach's stderr, to say why."""


async def open_local_link(
    state_dir: Path, pipeline: PipelineConfig | None, python: str = sys.executable
) -> AgentLink:
    """Start `attach` for `state_dir`, complete hello, and return the link."""
    source = local_bundle().source
    try:  # run from the bundle's folder, as over SSH: no `agent` folder in the cwd shadows it
        process = await asyncio.create_subprocess_exec(
            python, "-m", "agent", "attach", "--state-dir", str(state_dir),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(os.environ, PYTHONPATH=str(source)),
            cwd=source,
        )  # fmt: skip
    except OSError as exc:
        raise LinkError(f"cannot run {python}: {exc.strerror}") from None
    assert process.stdin is not None
    assert process.stdout is not None
    assert process.stderr is not None
    stdout = process.stdout
    # read all along: an attach that wrote more than a pipe holds would block before its hello
    said = asyncio.create_task(to_end(process.stderr, STDERR_KEPT_BYTES))

    async def close() -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), EXIT_WAIT_S)
        if process.returncode is None:
            process.kill()
            await process.wait()
        await read_out(to_end(stdout), said)

    link = AgentLink(stdout, process.stdin, close, f"local agent in {state_dir}")
    link.files = LocalChannel()
    try:
        await link.hello(pipeline, local_bundle().sha256)
    except LinkError as exc:
        await link.close()
        stderr = _kept(said).decode(errors="replace").strip()
        raise LinkError(f"{exc}{'; agent said: ' + stderr if stderr else ''}") from None
    except BaseException:  # cancelled mid-hello (the app quitting): leave no attach process behind
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await link.close()
        raise
    return link


def _kept(said: asyncio.Task[bytes]) -> bytes:
    """What the stderr reader kept, or nothing where it did not finish."""
    if not said.done() or said.cancelled() or said.exception() is not None:
        return b""
    return said.result()


async def run_local_python(python: str, code: str, timeout_s: float) -> tuple[int | None, str, str]:
    """Run `python -c code` here: (exit status, stdout, stderr); None when it could not run."""
    try:
        process = await asyncio.create_subprocess_exec(
            python, "-c", code, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
    except OSError as exc:
        return None, "", exc.strerror or str(exc)
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout_s)
    except TimeoutError:
        process.kill()
        await process.wait()
        return None, "", f"no answer in {timeout_s:g} s"
    return process.returncode, out.decode(errors="replace"), err.decode(errors="replace")

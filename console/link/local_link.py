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

EXIT_WAIT_S = 10.0


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

    said: list[bytes] = []

    async def close() -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), EXIT_WAIT_S)
        if process.returncode is None:
            process.kill()
            await process.wait()
        said.append(await _drained(process))

    link = AgentLink(process.stdout, process.stdin, close, f"local agent in {state_dir}")
    link.files = LocalChannel()
    try:
        await link.hello(pipeline, local_bundle().sha256)
    except LinkError as exc:
        await link.close()
        stderr = b"".join(said).decode(errors="replace").strip()
        raise LinkError(f"{exc}{'; agent said: ' + stderr if stderr else ''}") from None
    except BaseException:  # cancelled mid-hello (the app quitting): leave no attach process behind
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await link.close()
        raise
    return link


async def _drained(process: asyncio.subprocess.Process) -> bytes:
    """Read the ended attach's pipes to their end, and return what it said on stderr.

    Only then are they closed: asyncio's wait() returns before (Python 3.11), and an event loop
    that ends first leaves them open, for the garbage collector to warn of in whatever runs next.
    """
    assert process.stdout is not None
    assert process.stderr is not None
    try:
        _, stderr = await asyncio.wait_for(
            asyncio.gather(process.stdout.read(), process.stderr.read()), EXIT_WAIT_S
        )
    except TimeoutError:  # a child of the attach holds them: nothing more to wait for
        return b""
    await asyncio.sleep(0)  # the pipes' connection_lost, queued behind their end of file
    return stderr


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

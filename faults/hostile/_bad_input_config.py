"""Part (a) of bad_input: broken eagle-console.toml files, loaded in process and by the real CLI.

Each must be refused with one line that names the file and the key (or, for a file that is not
TOML at all, says so), never accepted and never a traceback. An empty file is valid TOML with no
hosts: loading it is fine, and `status` must say there are no hosts (exit 2).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from console.config import ConfigError, load_config

CLI_TIMEOUT_S = 60.0
HOST = '[hosts.gpu]\nssh = "root@127.0.0.1:1"\n'
"""A host that answers nothing at once (loopback port 1), should a broken config be accepted."""
JOB = HOST + '[hosts.gpu.jobs.j]\nargv = ["python", "run.py"]\n'
DATASETS = HOST + '[hosts.gpu.datasets]\nroot = "/data"\n'


@dataclass(frozen=True, slots=True)
class BrokenConfig:
    """One broken config and what its error must mention."""

    label: str
    content: bytes | None
    """None: a directory stands where the file should be; b"missing": no file at all."""
    mentions: str
    """What the one error line must say besides the file name ("": the file name is enough)."""
    loads: bool = False
    """Valid as a file (the empty one): the mistake shows when a command needs a host."""


def _text(label: str, text: str, mentions: str) -> BrokenConfig:
    return BrokenConfig(label, text.encode(), mentions)


BROKEN = (
    _text("invalid TOML", "[hosts.gpu\nssh = 1\n", "not valid TOML"),
    _text("duplicate key", HOST + 'ssh = "other"\n', "not valid TOML"),
    _text("NUL in a string", HOST.replace("root", "ro\x00ot"), "not valid TOML"),
    _text("UTF-8 BOM", "\ufeff" + HOST, "not valid TOML"),
    BrokenConfig("non-UTF-8 bytes", b'[hosts.gpu]\nssh = "r\xff\xfeot@box"\n', "not valid TOML"),
    BrokenConfig("empty file", b"", "no [hosts] configured", loads=True),
    BrokenConfig("a directory", None, "cannot read"),
    BrokenConfig("no such file", b"missing", "file not found"),
    _text("deeply nested array", "x = " + "[" * 5000 + "]" * 5000 + "\n", ""),
    _text("unknown top-level key", '[host.gpu]\nssh = "b"\n', "host"),
    _text("unknown host key", HOST + 'pyhton = "python3"\n', "hosts.gpu.pyhton"),
    _text("hosts not a table", "hosts = 3\n", "hosts"),
    _text("host not a table", '[hosts]\ngpu = "root@box"\n', "hosts.gpu"),
    _text("missing ssh", '[hosts.gpu]\npython = "python3"\n', "hosts.gpu.ssh"),
    _text("empty ssh", '[hosts.gpu]\nssh = ""\n', "hosts.gpu.ssh"),
    _text("ssh a number", "[hosts.gpu]\nssh = 22\n", "hosts.gpu.ssh"),
    _text("port out of range", '[hosts.gpu]\nssh = "root@box:99999"\n', "hosts.gpu.ssh"),
    _text("port zero", '[hosts.gpu]\nssh = "root@box:0"\n', "hosts.gpu.ssh"),
    _text("read_only a string", HOST + 'read_only = "yes"\n', "hosts.gpu.read_only"),
    _text(
        "relative deploy remote",
        HOST + '[[hosts.gpu.deploy]]\nlocal = "src"\nremote = "srv/app"\n',
        "hosts.gpu.deploy[0].remote",
    ),  # fmt: skip
    _text("deploy not a list", HOST + 'deploy = "src"\n', "hosts.gpu.deploy"),
    _text("relative deploy root", HOST + 'deploy_roots = ["srv"]\n', "hosts.gpu.deploy_roots"),
    _text("bad job kind", JOB + 'kind = "magic"\n', "hosts.gpu.jobs.j.kind"),
    _text("bad stop signal", JOB + 'stop_signal = "TERM"\n', "hosts.gpu.jobs.j.stop_signal"),
    _text(
        "argv a shell string",
        HOST + '[hosts.gpu.jobs.j]\nargv = "python run.py"\n',
        "hosts.gpu.jobs.j.argv",
    ),  # fmt: skip
    _text("env value a number", JOB + "env = { A = 1 }\n", "hosts.gpu.jobs.j.env.A"),
    _text("negative grace", JOB + "grace_s = -1\n", "hosts.gpu.jobs.j.grace_s"),
    _text("grace not a number", JOB + "grace_s = nan\n", "hosts.gpu.jobs.j.grace_s"),
    _text("endless grace", JOB + "grace_s = inf\n", "hosts.gpu.jobs.j.grace_s"),
    _text(
        "bad regex",
        HOST + '[hosts.gpu.external]\nsglang = "launch("\n',
        "hosts.gpu.external.sglang",
    ),  # fmt: skip
    _text("negative budget", DATASETS + "budget = -5\n", "hosts.gpu.datasets.budget"),
    _text("budget a string", DATASETS + 'budget = "10M"\n', "hosts.gpu.datasets.budget"),
    _text(
        "budgets entry a boolean",
        DATASETS + "budgets = { B1 = true }\n",
        "hosts.gpu.datasets.budgets.B1",
    ),  # fmt: skip
    _text(
        "datasets without root",
        HOST + "[hosts.gpu.datasets]\nbudget = 5\n",
        "hosts.gpu.datasets.root",
    ),  # fmt: skip
    _text(
        "unknown sglang key", HOST + "[hosts.gpu.sglang]\nport = 30000\n", "hosts.gpu.sglang.port"
    ),
)
CLI_QUICK = ("non-UTF-8 bytes", "empty file", "a directory", "deeply nested array",
             "relative deploy remote", "bad stop signal")  # fmt: skip
"""The cases the short campaign also runs through the CLI (the full one runs them all)."""


def write_broken(folder: Path, case: BrokenConfig, number: int) -> Path:
    """The config file (or directory) for one case."""
    path = folder / f"{number:02d}-eagle-console.toml"
    if case.content is None:
        path.mkdir(parents=True, exist_ok=True)
    elif case.content != b"missing":
        path.write_bytes(case.content)
    return path


def check_loading(path: Path, case: BrokenConfig, report: Callable[[str], None]) -> bool:
    """load_config refuses the file with one clear line (or accepts the empty one)."""
    try:
        config = load_config(path)
    except ConfigError as exc:
        return _clear(str(exc), path, case, f"config {case.label!r}: load_config", report)
    except Exception as exc:  # any other exception is the finding
        report(f"config {case.label!r}: load_config crashed with {type(exc).__name__}")
        return False
    if case.loads and not config.hosts:
        return True
    report(f"config {case.label!r}: load_config accepted it")
    return False


def _clear(
    message: str, path: Path, case: BrokenConfig, where: str, report: Callable[[str], None]
) -> bool:
    if "\n" not in message.strip() and str(path) in message and case.mentions in message:
        return True
    report(f"{where}: unclear error {message[:200]!r} (want the file and {case.mentions!r})")
    return False


async def check_cli(path: Path, case: BrokenConfig, report: Callable[[str], None]) -> bool:
    """`python -m console --config PATH status` exits 2 with one clear line on stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "console", "--config", str(path), "status",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env=dict(os.environ, COLUMNS="200"),
    )  # fmt: skip
    try:
        _, err = await asyncio.wait_for(process.communicate(), CLI_TIMEOUT_S)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    text, where = err.decode(errors="replace"), f"config {case.label!r}: the CLI"
    if process.returncode != 2 or "Traceback" in text:
        last = text.strip().splitlines()[-1:] or ["nothing on stderr"]
        report(f"{where} exited {process.returncode}: {last[0][:200]}")
        return False
    return _clear(text, path, case, where, report)

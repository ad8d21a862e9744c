"""Host-key matrix: every way a host key can be untrusted, and configs that try to loosen checks.

Injects, against asyncssh's loopback server (and OpenSSH's sshd in the full run, where it is
installed): an unknown host (empty known_hosts), a changed key (known_hosts pins an impostor), a
missing known_hosts, an unreadable one (a directory in its place when running as root, since root
reads a mode-000 file), `StrictHostKeyChecking no` with `UserKnownHostsFile /dev/null` in both
the host's ssh_config and $HOME/.ssh/config (HOME is private to the scenario), `ForwardAgent yes`
with a real ssh-agent in SSH_AUTH_SOCK, and a key marked `@revoked`; plus the positive control
(the right key pinned). Each through `open_ssh_link`, some also through `python -m console status`.

Checks: 0 sessions established with an untrusted key, counted by the server itself; every refusal
names the offered key's fingerprint (or, for an unreadable known_hosts, the file); known_hosts is
never written; agent forwarding is never asked for (the witness is first shown to see a request
made on purpose); the positive control connects, else the matrix would prove nothing.
"""

from __future__ import annotations

import os
import random
import shutil
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh

from console.config import HostConfig, SshTarget
from console.link.loopback_ssh import write_known_hosts
from faults.harness.agents import agent_cleanup, private_home
from faults.hostile._host_key_attempts import (
    Attempt,
    attempt_cli,
    attempt_link,
    check_agent_witness,
)
from faults.hostile._host_key_servers import (
    WitnessedServer,
    environment,
    running_ssh_agent,
    witnessed_asyncssh,
    witnessed_sshd,
)
from faults.result import Scale, ScenarioResult
from tests.support.datasets import write_prompts
from tests.support.ssh_servers import sshd_binary

TITLE = "Host-key matrix: unknown, changed, missing, unreadable, loosened by config, revoked"


@dataclass(frozen=True, slots=True)
class Setup:
    """How one case configures the host, and what it must lead to."""

    known_hosts: str
    """"" leaves it unset: ~/.ssh/known_hosts of the private HOME."""
    ssh_config: Path | None
    must_show: tuple[str, ...]
    """What the refusal must name; empty when the case must connect."""
    agent_socket: bool = False


def _fingerprint(server: WitnessedServer) -> str:
    return server.endpoint.host_key_fingerprint


def _ssh_configs(folder: Path, text: str) -> Path:
    """The same ssh config as the host's ssh_config file and as the user's ~/.ssh/config."""
    user_config = Path.home() / ".ssh" / "config"
    user_config.parent.mkdir(mode=0o700, exist_ok=True)
    user_config.write_text(text)
    (folder / "ssh_config").write_text(text)
    return folder / "ssh_config"


def positive_control(server: WitnessedServer, folder: Path) -> Setup:
    """The right key pinned: must connect."""
    return Setup(str(server.endpoint.known_hosts), None, ())


def unknown_host(server: WitnessedServer, folder: Path) -> Setup:
    """An empty known_hosts."""
    (folder / "known_hosts").write_text("")
    return Setup(str(folder / "known_hosts"), None, ("unknown host key", _fingerprint(server)))


def changed_key(server: WitnessedServer, folder: Path) -> Setup:
    """known_hosts pins another key for the host."""
    impostor = asyncssh.generate_private_key("ssh-ed25519")
    path = folder / "known_hosts"
    write_known_hosts(path, server.endpoint.port, impostor.export_public_key().decode())
    shown = ("HOST KEY CHANGED", _fingerprint(server), impostor.get_fingerprint("sha256"))
    return Setup(str(path), None, shown)


def missing_known_hosts(server: WitnessedServer, folder: Path) -> Setup:
    """known_hosts names a file that does not exist."""
    shown = ("unknown host key", _fingerprint(server))
    return Setup(str(folder / "absent" / "known_hosts"), None, shown)


def unreadable_known_hosts(server: WitnessedServer, folder: Path) -> Setup:
    """A known_hosts that pins the right key but cannot be read: refused, never skipped."""
    path = folder / "known_hosts"
    if os.geteuid() == 0:
        path.mkdir()  # root reads a mode-000 file; a directory cannot be read as one
    else:
        shutil.copyfile(server.endpoint.known_hosts, path)
        path.chmod(0)
    return Setup(str(path), None, ("cannot read known_hosts", str(path)))


def checking_off_in_config(server: WitnessedServer, folder: Path) -> Setup:
    """The ssh configs that would turn host-key checking off in OpenSSH."""
    text = "Host *\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n"
    return Setup("", _ssh_configs(folder, text), ("unknown host key", _fingerprint(server)))


def forward_agent_in_config(server: WitnessedServer, folder: Path) -> Setup:
    """`ForwardAgent yes` with a live agent: connects, but never asks to forward it."""
    config = _ssh_configs(folder, "Host *\n  ForwardAgent yes\n")
    return Setup(str(server.endpoint.known_hosts), config, (), agent_socket=True)


def revoked_key(server: WitnessedServer, folder: Path) -> Setup:
    """The key pinned and also marked @revoked: revocation wins."""
    pinned = server.endpoint.known_hosts.read_text()
    (folder / "known_hosts").write_text(pinned + "@revoked " + pinned)
    return Setup(str(folder / "known_hosts"), None, (_fingerprint(server),))


CASES: dict[str, Callable[[WitnessedServer, Path], Setup]] = {
    "positive_control": positive_control,
    "unknown_host": unknown_host,
    "changed_key": changed_key,
    "missing_known_hosts": missing_known_hosts,
    "unreadable_known_hosts": unreadable_known_hosts,
    "checking_off_in_config": checking_off_in_config,
    "forward_agent_in_config": forward_agent_in_config,
    "revoked_key": revoked_key,
}
CLI_CASES_QUICK = ("unknown_host", "checking_off_in_config")
CLI_CASES_FULL = CLI_CASES_QUICK + ("changed_key", "revoked_key", "positive_control")


@dataclass(slots=True)
class Matrix:
    """Where the matrix runs and what it saw."""

    folder: Path
    result: ScenarioResult
    agent_socket: str | None = None
    outcomes: Counter[str] = field(default_factory=Counter)


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """Every case against each server, in an order drawn from the seed."""
    result = ScenarioResult("host_keys", TITLE, seed)
    matrix = Matrix(workdir, result)
    rng = random.Random(seed)
    write_prompts(workdir / "datasets" / "B1_sharegpt", 1)
    with private_home(workdir / "home"):
        async with (
            agent_cleanup(workdir / "state"),
            running_ssh_agent(workdir / "ssh-agent") as socket,
        ):
            matrix.agent_socket = socket
            await _run_servers(matrix, scale, rng)
    _write_notes(matrix)
    return result


async def _run_servers(matrix: Matrix, scale: Scale, rng: random.Random) -> None:
    repeats = scale.pick(3, 1)
    async with witnessed_asyncssh(matrix.folder / "asyncssh") as server:
        await check_agent_witness(server, matrix.agent_socket, matrix.result)
        await _run_cases(matrix, server, repeats, scale, rng)
    if not scale.full:
        return
    if sshd_binary() is None:
        matrix.result.notes.append("OpenSSH's sshd is not installed: the sshd rows were skipped")
        return
    with witnessed_sshd(matrix.folder / "sshd") as sshd:
        await _run_cases(matrix, sshd, repeats, scale, rng)


async def _run_cases(
    matrix: Matrix, server: WitnessedServer, repeats: int, scale: Scale, rng: random.Random
) -> None:
    cli_cases = CLI_CASES_FULL if scale.full else CLI_CASES_QUICK
    for repeat in range(repeats):
        names = list(CASES)
        rng.shuffle(names)
        for name in names:
            await _one_case(matrix, server, name, repeat, via_cli=False)
            if repeat == 0 and name in cli_cases:
                await _one_case(matrix, server, name, repeat, via_cli=True)


async def _one_case(
    matrix: Matrix, server: WitnessedServer, name: str, repeat: int, *, via_cli: bool
) -> None:
    via = "cli" if via_cli else "link"
    folder = matrix.folder / "cases" / f"{server.kind}-{name}-{via}-{repeat}"
    folder.mkdir(parents=True)
    (Path.home() / ".ssh" / "config").unlink(missing_ok=True)  # no case inherits another's
    setup = CASES[name](server, folder)
    host = _host(server, setup, matrix.folder)
    hostile = name != "positive_control"
    label = f"{server.kind}/{via}/{name}#{repeat}"
    attempt = Attempt(label, server, host, setup.must_show, hostile)
    socket = matrix.agent_socket if setup.agent_socket else None
    with environment("SSH_AUTH_SOCK", socket):
        if via_cli:
            outcome = await attempt_cli(attempt, folder, matrix.folder, matrix.result)
        else:
            outcome = await attempt_link(attempt, matrix.result)
    matrix.result.faults += hostile
    matrix.outcomes[f"{server.kind}/{via}: {name} {outcome}"] += 1


def _host(server: WitnessedServer, setup: Setup, workdir: Path) -> HostConfig:
    endpoint = server.endpoint
    return HostConfig(
        "gpu", SshTarget(endpoint.host, endpoint.user, endpoint.port), python=sys.executable,
        state_dir=str(workdir / "state"), known_hosts=setup.known_hosts or None,
        identity=str(endpoint.identity),
        ssh_config=str(setup.ssh_config) if setup.ssh_config else None,
    )  # fmt: skip


def _write_notes(matrix: Matrix) -> None:
    notes = matrix.result.notes
    notes.append("acked: refusals naming the offered key (the file, when unreadable), and "
                 "ForwardAgent connections that never asked to forward the agent")  # fmt: skip
    notes += [f"{case}: ×{count}" for case, count in sorted(matrix.outcomes.items())]
    if any(case.startswith("sshd/") for case in matrix.outcomes):
        notes.append("sshd logs refused agent forwarding at debug level only: on its rows the "
                     "client's options are the agent-forwarding witness")  # fmt: skip
    if os.geteuid() == 0:
        notes.append("running as root, which reads mode-000 files: a directory stood in for "
                     "the unreadable known_hosts")  # fmt: skip
    if matrix.agent_socket is None:
        notes.append("ssh-agent is not installed: ForwardAgent ran without a live agent")

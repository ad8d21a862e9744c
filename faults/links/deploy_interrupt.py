"""Deploys interrupted at random points: every target stays exactly old or new, and heals.

Each trial ships a new version of three files (2 KB, 60 KB and a large one, each with its own
mode) through the real path (`console.link.deploy` stages each file through the link's file channel,
then the agent's `files.install` swaps it in), over a local link or, for some trials, over SSH to
an asyncssh server on loopback (so the cut lands in SFTP too). It interrupts the deploy at a
random moment: the deploy task is cancelled, or the agent daemon is SIGKILLed (pid from the
state dir's daemon.json), at a random time or just as the large file's install starts. After each
trial every target must be exactly the old or the new version with its mode bits, a deploy the
console reported done must have landed whole, and an uninterrupted follow-up deploy must land
every file, keep the old version as the backup, and remove the upload leftovers. The agent
removes only leftovers older than STALE_UPLOAD_S, so the scenario ages them first (os.utime), as
that much time passing would.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

from agent.attach import stop_daemon
from agent.files import STALE_UPLOAD_S
from agent.host.signals import kill_process
from agent.protocol import InstallResult, PipelineConfig
from agent.state import StatePaths, read_json
from console.config import DeployMapping, HostConfig, SshTarget
from console.link.agent_link import AgentLink, LinkError
from console.link.deploy import deploy, plan_deploy
from console.link.file_channel import LocalChannel
from console.link.local_link import open_local_link
from console.link.ssh_link import open_ssh_link
from faults.links._deploy_interrupt_files import (
    LARGE,
    FinishingChannel,
    Version,
    age,
    classify_targets,
    outcome_counts,
    upload_leftovers,
    wait_settled,
    write_version,
    wrong_backups,
    wrong_modes,
)
from faults.result import Scale, ScenarioResult
from tests.support.ssh_servers import SshEndpoint, asyncssh_server
from tests.support.waits import wait_until

TITLE = "Deploys interrupted at random points"

LARGE_BYTES = (32 << 20, 8 << 20)
"""The large file in the full and the short campaign."""
SSH_SHARE = 0.25
"""Trials over SSH (SFTP staging); the rest over a local link."""
INSTALL_KILL_SHARE = 0.6
"""A kill aimed at the install lands within this share of a whole deploy's time after the large
upload is complete: while the agent hashes, backs up and swaps it in, or just after."""
AIM_TIMEOUT_S = 20.0
LINK_NOTICE_TIMEOUT_S = 10.0
POLL_S = 0.02


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """`scale.pick(100, 10)` interrupted deploys, each followed by one that must heal."""
    result = ScenarioResult("deploy_interrupt", TITLE, seed)
    large_bytes = scale.pick(*LARGE_BYTES)
    async with _Deployer.started(workdir, random.Random(seed), result, large_bytes) as deployer:
        await deployer.set_up()
        for trial in range(scale.pick(100, 10)):
            await deployer.trial(trial)
        deployer.write_notes()
    return result


class _Deployer:
    """The local folder, the deploy root on the "host", the links, and the trial loop."""

    def __init__(
        self, workdir: Path, rng: random.Random, result: ScenarioResult, large_bytes: int,
        ssh: SshEndpoint,
    ) -> None:  # fmt: skip
        self.rng, self.result, self.ssh = rng, result, ssh
        self.large_bytes = large_bytes
        self.state_dir = workdir / "state"
        self.local, root = workdir / "local", workdir / "root"
        self.remote = root / "app"
        root.mkdir(parents=True, exist_ok=True)
        self.pipeline = PipelineConfig(deploy_roots=(str(root),))
        self.mappings = (DeployMapping(self.local, str(self.remote)),)
        (workdir / "no-ssh-config").write_text("")
        self.ssh_config = str(workdir / "no-ssh-config")
        self.link: AgentLink | None = None
        self.killed = False
        self.current = Version(-1, {})
        self.deploy_s: dict[str, float] = {}
        self.states: list[dict[str, str]] = []
        self.outcomes: dict[str, int] = {}

    @classmethod
    @contextlib.asynccontextmanager
    async def started(
        cls, workdir: Path, rng: random.Random, result: ScenarioResult, large_bytes: int
    ) -> AsyncIterator[_Deployer]:
        """The SSH server up; on the way out every link closed and the daemon stopped."""
        async with asyncssh_server(workdir / "ssh") as server:
            deployer = cls(workdir, rng, result, large_bytes, server.endpoint)
            try:
                yield deployer
            finally:
                await deployer.close()

    async def close(self) -> None:
        """Close the local link and stop the agent daemon."""
        if self.link is not None:
            await self.link.close()
        if self.state_dir.exists():
            await asyncio.to_thread(stop_daemon, StatePaths(self.state_dir))

    # ------------------------------------------------------------ links

    async def local_link(self) -> AgentLink:
        """The local link, reopened (starting a daemon) when the last one died."""
        if self.link is None or self.link.closed.is_set():
            if self.link is not None:
                await self.link.close()
            self.link = await open_local_link(self.state_dir, self.pipeline)
            self.link.files = FinishingChannel(LocalChannel())
        return self.link

    async def open_ssh(self) -> AgentLink:
        """A fresh link over SSH to the same agent state dir."""
        endpoint = self.ssh
        host = HostConfig(
            "faults", SshTarget(endpoint.host, endpoint.user, endpoint.port),
            python=sys.executable, state_dir=str(self.state_dir),
            known_hosts=str(endpoint.known_hosts), identity=str(endpoint.identity),
            ssh_config=self.ssh_config, pipeline=self.pipeline,
        )  # fmt: skip
        return await open_ssh_link(host)

    # ------------------------------------------------------------ the trials

    async def set_up(self) -> None:
        """Ship two versions uninterrupted (local, then SSH), timing each kind of deploy."""
        for number, transport in enumerate(("local", "ssh")):
            new = write_version(self.local, number, self.large_bytes, self.rng)
            link = await (self.local_link() if transport == "local" else self.open_ssh())
            started = time.monotonic()
            try:
                await self._deploy_all(link)
            finally:
                if transport == "ssh":
                    await link.close()
            self.deploy_s[transport] = time.monotonic() - started
            self.current = new

    async def trial(self, number: int) -> None:
        """One interrupted deploy, the checks, and the follow-up deploy that must heal."""
        old = self.current
        new = write_version(self.local, old.number + 1, self.large_bytes, self.rng)
        transport = "ssh" if self.rng.random() < SSH_SHARE else "local"
        how = self.rng.choice(("cancel", "kill", "kill at install"))
        name = f"trial {number} ({transport}, {how})"
        outcome = await self._interrupted(transport, how)
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
        self._check_targets(name, old, new, outcome)
        leftovers = await wait_settled(self.remote)
        age(leftovers, 2 * STALE_UPLOAD_S)
        await self._follow_up(name, old, new, leftovers)
        self.current = new

    async def _interrupted(self, transport: str, how: str) -> str:
        link = await (self.local_link() if transport == "local" else self.open_ssh())
        try:
            plans = await plan_deploy(link, self.mappings)
            task = asyncio.create_task(deploy(link, plans))
            self.result.attempted += 1
            await self._interrupt(task, transport, how)
            return await _outcome(task)
        finally:
            if isinstance(link.files, FinishingChannel):
                await link.files.finished()
            if transport == "ssh":
                await link.close()

    async def _interrupt(
        self, task: asyncio.Task[list[InstallResult]], transport: str, how: str
    ) -> None:
        if how == "kill at install":
            await self._large_upload_complete(task)
            await asyncio.sleep(
                self.rng.uniform(0.0, INSTALL_KILL_SHARE * self.deploy_s[transport])
            )
        else:
            await asyncio.sleep(self.rng.uniform(0.0, 1.1 * self.deploy_s[transport]))
        self.result.faults += 1
        if how == "cancel":
            task.cancel()
        else:
            self._kill_daemon()

    async def _large_upload_complete(self, task: asyncio.Task[list[InstallResult]]) -> None:
        large = self.remote / LARGE

        def uploaded() -> bool:
            staged = large.parent.glob(f".{large.name}.eagle-upload-*")
            return task.done() or any(_size(path) >= self.large_bytes for path in staged)

        await wait_until(uploaded, AIM_TIMEOUT_S, POLL_S / 4)

    def _kill_daemon(self) -> None:
        info = read_json(StatePaths(self.state_dir).daemon_info)
        if isinstance(info, dict):
            with contextlib.suppress(ProcessLookupError):
                kill_process(int(info["pid"]), signal.SIGKILL)
            self.killed = True

    async def _local_link_noticed_kill(self, name: str) -> None:
        """After a kill, the open local link must see its agent go before it is reused."""
        if not self.killed or self.link is None:
            return
        self.killed = False
        try:
            await asyncio.wait_for(self.link.closed.wait(), LINK_NOTICE_TIMEOUT_S)
        except TimeoutError:
            self.result.violate(f"{name}: the local link did not notice its agent was killed")

    def _check_targets(self, name: str, old: Version, new: Version, outcome: str) -> None:
        states = classify_targets(self.remote, old, new)
        self.states.append(states)
        for relative, state in states.items():
            if state == "other":
                self.result.violate(f"{name}: {relative} is neither the old nor the new version")
        for wrong in wrong_modes(self.remote):
            self.result.violate(f"{name}: mode bits changed: {wrong}")
        if outcome == "done":
            self.result.acknowledged += 1
            if set(states.values()) != {"new"}:
                self.result.lost += 1
                self.result.violate(f"{name}: reported done, but the targets are {states}")

    async def _follow_up(
        self, name: str, old: Version, new: Version, leftovers: list[Path]
    ) -> None:
        await self._local_link_noticed_kill(name)
        started = time.monotonic()
        try:
            results = await self._deploy_all(await self.local_link())
        except LinkError as exc:
            self.result.violate(f"{name}: the follow-up deploy failed: {exc}")
            return
        self.result.recovery_s.append(time.monotonic() - started)
        self._check_healed(name, old, new, leftovers, results)

    def _check_healed(
        self, name: str, old: Version, new: Version, leftovers: list[Path],
        results: list[InstallResult],
    ) -> None:  # fmt: skip
        removed = {path for result in results for path in result.removed_leftovers}
        self.result.repaired += sum(str(path) in removed for path in leftovers)
        states = classify_targets(self.remote, old, new)
        if set(states.values()) != {"new"}:
            self.result.violate(f"{name}: after the follow-up deploy the targets are {states}")
        for wrong in wrong_modes(self.remote) + [
            f"{relative} backup is not the old version"
            for relative in wrong_backups(self.remote, old)
        ]:
            self.result.violate(f"{name}: after the follow-up deploy: {wrong}")
        lingering = upload_leftovers(self.remote)
        if kept := [path.name for path in lingering if path in leftovers]:
            self.result.violate(f"{name}: the follow-up deploy did not remove {', '.join(kept)}")
        if made := [path.name for path in lingering if path not in leftovers]:
            self.result.violate(f"{name}: the follow-up deploy left its own {', '.join(made)}")

    async def _deploy_all(self, link: AgentLink) -> list[InstallResult]:
        plans = await plan_deploy(link, self.mappings)
        self.result.attempted += 1
        results = await deploy(link, plans)
        self.result.acknowledged += 1
        return results

    def write_notes(self) -> None:
        """Outcome counts, and what recovery_s measures."""
        outcomes = ", ".join(
            f"{count} {outcome}" for outcome, count in sorted(self.outcomes.items())
        )
        self.result.notes += [
            outcome_counts(self.states),
            f"interrupted deploys ended: {outcomes}; attempted/acked also count the setup and "
            f"follow-up deploys",
            f"an uninterrupted deploy took {self.deploy_s['local']:.2f} s locally and "
            f"{self.deploy_s['ssh']:.2f} s over SSH ({self.large_bytes >> 20} MiB large file)",
            f"leftovers: the agent removes only uploads older than {STALE_UPLOAD_S:.0f} s, so each "
            "trial's leftovers were aged with os.utime before the follow-up deploy; repaired "
            "counts those the follow-up removed",
            "recovery_s: the follow-up deploy, from opening the link (a new daemon after a kill) "
            "to the last file installed",
        ]


async def _outcome(task: asyncio.Task[list[InstallResult]]) -> str:
    """done, cancelled or cut (the link failed); any other failure is the scenario's crash."""
    await asyncio.wait({task})
    if task.cancelled():
        return "cancelled"
    if isinstance(task.exception(), LinkError):
        return "cut"
    task.result()
    return "done"


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0

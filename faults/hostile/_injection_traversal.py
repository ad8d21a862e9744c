"""The traversal half of the injection scenario: paths and names that lead out of the roots.

A sentinel folder outside the deploy root holds files that each carry a secret marker, and files
the agent might be tempted to touch (a backup to roll back to, an upload to swap in). Every
hostile request must be refused with a clear error; the sentinel's tree (names, sha256, sizes,
mtimes) must be the same after each one, and no answer may carry a sentinel file's bytes or hash.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from agent.protocol import (
    DATASETS_DETAIL,
    FILES_HASH,
    FILES_INSTALL,
    FILES_ROLLBACK,
    JOBS_STOP,
    LOGS_READ,
    LOGS_SUBSCRIBE,
    LOGS_UNSUBSCRIBE,
    DetailParams,
    FilesHashParams,
    InstallParams,
    LogReadParams,
    LogSubscribeParams,
    LogUnsubscribeParams,
    Method,
    RollbackParams,
    StopParams,
)
from console.config import DeployMapping
from console.link.agent_link import AgentLink, AgentRequestError, LinkError
from console.link.deploy import deploy, plan_deploy
from faults.result import ScenarioResult

P = TypeVar("P")
R = TypeVar("R")

CLEAR_CODES = ("invalid_params", "not_found")
FILE_REFUSALS = ("outside the deploy roots", "without '..'", "give an absolute path")
"""What the agent's refusal of a path says, as the console's deploy passes it on."""
SUBSCRIBE_WATCH_S = 0.5


@dataclass(frozen=True, slots=True)
class Layout:
    """Where everything of the injection scenario lives."""

    workdir: Path
    nonce: str

    @property
    def state(self) -> Path:  # noqa: D102
        return self.workdir / "state"

    @property
    def datasets(self) -> Path:  # noqa: D102
        return self.workdir / "datasets"

    @property
    def deploy_root(self) -> Path:  # noqa: D102
        return self.workdir / "roots" / "deploy"

    @property
    def sentinel(self) -> Path:
        """Outside every root: nothing here may change or be read."""
        return self.workdir / "sentinel"

    @property
    def secret(self) -> str:
        """In every sentinel file: a response that holds it read outside the roots."""
        return f"SENTINEL-SECRET-{self.nonce}"

    @property
    def local_file(self) -> Path:
        """What the deploys upload."""
        return self.workdir / "local" / "payload.py"

    def out_file(self, index: int) -> Path:
        """Where the echo job of case `index` writes what it received."""
        return self.workdir / "out" / f"case-{index}.json"

    @classmethod
    def create(cls, workdir: Path, nonce: str) -> Layout:
        """The folders, the sentinel files, and the symlinks out of the deploy root."""
        layout = cls(workdir, nonce)
        for folder in (layout.datasets, layout.deploy_root / "swap", layout.sentinel / "sub",
                       layout.local_file.parent, workdir / "out"):  # fmt: skip
            folder.mkdir(parents=True)
        for name in ("secret.txt", "victim.py", "victim.py.eagle-backup",
                     ".ok.py.eagle-upload-planted", "sub/x.py"):  # fmt: skip
            (layout.sentinel / name).write_text(f"{name}: {layout.secret}\n")
        (layout.deploy_root / "escape").symlink_to(layout.sentinel)
        (layout.deploy_root / "link-to-victim").symlink_to(layout.sentinel / "victim.py")
        layout.local_file.write_text(f"print('payload {nonce}')\n")
        return layout


def tree_state(folder: Path) -> dict[str, tuple[int, int, str]]:
    """Every entry below `folder` (and itself): (size, mtime ns, sha256 or link target)."""
    state = {}
    for path in [folder, *sorted(folder.rglob("*"))]:
        info = path.lstat()
        if path.is_symlink():
            content = "-> " + str(path.readlink())
        elif path.is_file():
            content = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            content = "dir"
        state[str(path.relative_to(folder))] = (info.st_size, info.st_mtime_ns, content)
    return state


class Prober:
    """Sends hostile requests and judges each: refused clearly, nothing outside touched or read."""

    def __init__(self, link: AgentLink, layout: Layout, result: ScenarioResult) -> None:
        self.link, self.layout, self.result = link, layout, result
        self.refused = 0
        self.bytes_outside = 0
        self._keys = 0
        sentinel_files = (p for p in layout.sentinel.rglob("*") if p.is_file())
        self._leak_marks = [layout.secret] + [
            hashlib.sha256(p.read_bytes()).hexdigest() for p in sentinel_files
        ]

    def key(self, what: str) -> str:
        """A fresh idempotency key."""
        self._keys += 1
        return f"traversal-{self.layout.nonce}-{what}-{self._keys}"

    async def must_refuse(self, label: str, method: Method[P, R], params: P) -> bool:
        """One hostile request: it must fail with a clear error and change nothing outside.

        Returns True when the agent refused it.
        """
        before = tree_state(self.layout.sentinel)
        self.result.faults += 1
        self.result.attempted += 1
        key = self.key(method.name) if method.mutating else None
        try:
            answer = await self.link.call(method, params, idempotency_key=key)
        except AgentRequestError as exc:
            self.judge_error(label, exc.code, exc.detail)
            refused = True
        else:
            self.result.violate(f"{label}: {method.name} was not refused: {str(answer)[:200]}")
            self.check_no_leak(label, answer)
            refused = False
        self.check_sentinel(label, before)
        return refused

    def judge_error(self, label: str, code: str, detail: str) -> None:
        """A refusal counts when its code says what was wrong with the request."""
        if code in CLEAR_CODES and detail:
            self.refused += 1
            self.result.acknowledged += 1
        else:
            self.result.violate(f"{label}: refused without a clear error: {code}: {detail}")

    def check_no_leak(self, label: str, answer: object) -> None:
        """No answer may carry the secret marker or a sentinel file's sha256."""
        text = repr(answer)
        if any(mark in text for mark in self._leak_marks):
            self.result.violate(f"{label}: the answer carries bytes (or a hash) from outside")

    def check_sentinel(self, label: str, before: dict[str, tuple[int, int, str]]) -> None:
        """The sentinel tree must be as it was."""
        after = tree_state(self.layout.sentinel)
        if after == before:
            return
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        written = sum(after[k][0] for k in changed if k in after and k != ".")
        self.bytes_outside += written
        self.result.violate(f"{label}: changed outside the roots: {changed} ({written} bytes)")


def hostile_targets(layout: Layout) -> list[tuple[str, str]]:
    """(label, deploy target) pairs that all lead outside the deploy root."""
    root, sentinel = layout.deploy_root, layout.sentinel
    return [
        ("relative ../x", "../x"),
        ("relative into the sentinel", "../../sentinel/victim.py"),
        ("absolute path outside", str(sentinel / "victim.py")),
        ("root/../../sentinel (as root/../../etc/x)", f"{root}/../../sentinel/victim.py"),
        ("the root's parent", f"{root}/.."),
        ("through a symlinked parent", f"{root}/escape/victim.py"),
        ("a symlink to a file outside", f"{root}/link-to-victim"),
        ("the sentinel folder itself", str(sentinel)),
        ("a NUL byte and .. in the path", f"{root}/ok.py\0/../../../sentinel/victim.py"),
        ("a NUL byte in the path", f"{root}/ok.py\0.txt"),
    ]


async def check_traversal(link: AgentLink, layout: Layout, result: ScenarioResult) -> None:
    """Every traversal attempt after a positive control that shows installs and reads work."""
    prober = Prober(link, layout, result)
    await _positive_control(prober)
    for label, target in hostile_targets(layout):
        await _hostile_target(prober, label, target)
    await _staged_outside(prober)
    await _parent_swapped_after_plan(prober)
    await _hostile_names(prober)
    result.notes += [
        f"traversal attempts refused: {prober.refused}",
        f"bytes written outside the roots: {prober.bytes_outside}",
    ]


async def _positive_control(prober: Prober) -> None:
    target = prober.layout.deploy_root / "ok.py"
    prober.result.attempted += 1
    try:
        await deploy(prober.link, await plan_deploy(prober.link, [_mapping(prober, target)]))
    except LinkError as exc:
        prober.result.violate(f"positive control: a deploy inside the root failed: {exc}")
        return
    if target.read_bytes() != prober.layout.local_file.read_bytes():
        prober.result.violate("positive control: the deployed file is not the uploaded one")


def _mapping(prober: Prober, target: Path | str) -> DeployMapping:
    return DeployMapping(prober.layout.local_file, str(target))


async def _hostile_target(prober: Prober, label: str, target: str) -> None:
    root, payload = prober.layout.deploy_root, prober.layout.local_file.read_bytes()
    name = Path(target.replace("\0", "_")).name or "x"
    staged = root / f".{name}.eagle-upload-{prober.key('stage')}"
    staged.write_bytes(payload)
    digest = hashlib.sha256(payload).hexdigest()
    install = InstallParams(target, str(staged), digest)
    await prober.must_refuse(f"install {label}", FILES_INSTALL, install)
    staged.unlink(missing_ok=True)
    rollback = RollbackParams(target)
    await prober.must_refuse(f"rollback {label}", FILES_ROLLBACK, rollback)
    hashed = FilesHashParams((target,))
    await prober.must_refuse(f"hash {label}", FILES_HASH, hashed)
    await _deploy_must_fail(prober, f"console deploy {label}", target)


async def _deploy_must_fail(prober: Prober, label: str, target: str) -> None:
    """The console's own deploy path: plan (files.hash), stage, install."""
    before = tree_state(prober.layout.sentinel)
    prober.result.faults += 1
    prober.result.attempted += 1
    try:
        plans = await plan_deploy(prober.link, [_mapping(prober, target)])
        await deploy(prober.link, plans)
    except AgentRequestError as exc:
        prober.judge_error(label, exc.code, exc.detail)
    except LinkError as exc:  # deploy() wraps the install's refusal in a LinkError
        clear = any(reason in str(exc) for reason in FILE_REFUSALS)
        prober.judge_error(label, CLEAR_CODES[0] if clear else "unclear", str(exc))
    else:
        prober.result.violate(f"{label}: the deploy of {target} went through")
    prober.check_sentinel(label, before)


async def _staged_outside(prober: Prober) -> None:
    """A target inside the root with an upload planted outside it: nothing may be swapped in."""
    planted = prober.layout.sentinel / ".ok.py.eagle-upload-planted"
    digest = hashlib.sha256(planted.read_bytes()).hexdigest()
    params = InstallParams(str(prober.layout.deploy_root / "ok.py"), str(planted), digest)
    await prober.must_refuse("install from an upload outside", FILES_INSTALL, params)


async def _parent_swapped_after_plan(prober: Prober) -> None:
    """A parent that was a folder at plan time is a symlink out at upload time (a race, fixed)."""
    folder = prober.layout.deploy_root / "swap"
    plans = await plan_deploy(prober.link, [_mapping(prober, folder / "x.py")])
    folder.rmdir()
    folder.symlink_to(prober.layout.sentinel)
    prober.result.faults += 1
    prober.result.attempted += 1
    before = tree_state(prober.layout.sentinel)
    label = "console deploy with its parent swapped for a symlink after the plan"
    try:
        await deploy(prober.link, plans)
    except LinkError as exc:
        clear = "outside the deploy roots" in str(exc)
        prober.judge_error(label, CLEAR_CODES[0] if clear else "unclear", str(exc))
    else:
        prober.result.violate(f"{label}: the deploy went through")
    prober.check_sentinel(label, before)


HOSTILE_LOG_NAMES = (
    "../../sentinel/secret.txt", "job:../../../sentinel/secret.txt", "agent/../../sentinel/secret.txt",
    "sglang", "job:", "", "..", "job:..", "agent\0", "agent\n", "AGENT", " agent",
)  # fmt: skip
HOSTILE_IDS = ("../../sentinel", "..", ".", "/etc", "job/../..", "\0", "")


async def _hostile_names(prober: Prober) -> None:
    sentinel = prober.layout.sentinel
    names = (*HOSTILE_LOG_NAMES, str(sentinel / "secret.txt"), f"job:{sentinel}/secret.txt")
    for name in names:
        read = LogReadParams(name, 0)
        await prober.must_refuse(f"logs.read {name!r}", LOGS_READ, read)
        await _subscribe_must_fail(prober, name)
    for job_id in HOSTILE_IDS:
        stop = StopParams(job_id)
        await prober.must_refuse(f"jobs.stop {job_id!r}", JOBS_STOP, stop)
    for dataset in ("../sentinel", "..", str(sentinel), "sentinel/../.."):
        detail = DetailParams(dataset)
        await prober.must_refuse(f"detail {dataset!r}", DATASETS_DETAIL, detail)


async def _subscribe_must_fail(prober: Prober, name: str) -> None:
    label = f"logs.subscribe {name!r}"
    params = LogSubscribeParams(name)
    if await prober.must_refuse(label, LOGS_SUBSCRIBE, params):
        return
    prober.check_no_leak(label, await _events_for(prober.link, SUBSCRIBE_WATCH_S))
    await prober.link.call(LOGS_UNSUBSCRIBE, LogUnsubscribeParams(name))


async def _events_for(link: AgentLink, seconds: float) -> list[object]:
    """Every event the link receives in the next `seconds`."""
    events: list[object] = []
    deadline = asyncio.get_running_loop().time() + seconds
    while (left := deadline - asyncio.get_running_loop().time()) > 0:
        try:
            events.append(await asyncio.wait_for(link.events.get(), left))
        except TimeoutError:
            break
    return events

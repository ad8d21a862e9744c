"""Fixtures shared by every test: an isolated HOME, agent state dirs that clean up, SSH servers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from agent.attach import stop_daemon
from agent.protocol import DatasetsConfig, PipelineConfig
from agent.state import StatePaths
from tests.support.datasets import write_sample_root
from tests.support.leftover_jobs import kill_leftover_jobs
from tests.support.shared_fixtures import shares_fixtures
from tests.support.ssh_servers import SshEndpoint, asyncssh_server, openssh_server, sshd_binary


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist, a module's shared fixtures are made once, and slow tests go first.

    A fixture of module or session scope is made once per worker that runs any of the module's
    tests: a module whose tests were spread over six workers built its tokenizer, or ran its
    trainer, six times. Such a module is one xdist group, so one worker runs it whole.

    Workers take tests in collection order, and a 50 s test handed out last would run on while
    the other workers sit idle: the slow tests go first, those allowed the longest (their
    timeout) first of all. The demo left alone to its verdict (3-4 minutes) once started at
    6 min 22 s and ran alone for the last 2 1/2 minutes. The sort is stable, so every worker
    collects the same order, as xdist requires.
    """
    if not hasattr(config, "workerinput"):
        return
    for item in items:
        if shares_fixtures(item.path):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
    items.sort(key=_hand_out_order)


def _hand_out_order(item: pytest.Item) -> tuple[bool, float]:
    """Slow tests first, the longest allowed of them first."""
    timeout = item.get_closest_marker("timeout")
    allowed = float(timeout.args[0]) if timeout is not None and timeout.args else 0.0
    return item.get_closest_marker("slow") is None, -allowed


@pytest.fixture(autouse=True)
def isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Point HOME at an empty folder: no test reads the user's ~/.ssh or config dir."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return home


@pytest.fixture
def state_dir(tmp_path: Path) -> Iterator[Path]:
    """A fresh agent state dir; its daemon is stopped after the test."""
    path = tmp_path / "state"
    yield path
    end_agent(path)


@pytest.fixture
def boxes(tmp_path: Path) -> Iterator[Path]:
    """Where two local agents, boxes a and b, keep their state (`state-a`, `state-b`); their
    daemons and jobs are ended after the test."""
    yield tmp_path
    for name in "ab":
        end_agent(tmp_path / f"state-{name}")


def end_agent(state_dir: Path) -> None:
    """Stop the daemon of `state_dir` and whatever jobs it left, if it ever started."""
    if state_dir.exists():
        stop_daemon(StatePaths(state_dir))
        kill_leftover_jobs(state_dir)


@pytest.fixture
def sample_root(tmp_path: Path) -> Path:
    """`tmp_path / "datasets"` holding the three sample datasets (`write_sample_root`)."""
    write_sample_root(tmp_path / "datasets")
    return tmp_path / "datasets"


@pytest.fixture
def sample_pipeline(sample_root: Path) -> PipelineConfig:
    """A pipeline over `sample_root`, each dataset's budget 1,000 tokens."""
    return PipelineConfig(datasets=DatasetsConfig(str(sample_root), budget=1000))


@pytest.fixture
async def asyncssh_endpoint(tmp_path: Path) -> AsyncIterator[SshEndpoint]:
    """asyncssh's server on loopback, trusted through a pinned known_hosts."""
    async with asyncssh_server(tmp_path / "asyncssh-server") as server:
        yield server.endpoint


@pytest.fixture
def sshd_endpoint(tmp_path: Path) -> Iterator[SshEndpoint]:
    """OpenSSH's sshd on loopback; skipped only where it is not installed."""
    if sshd_binary() is None:
        pytest.skip("OpenSSH's sshd is not installed here (make test installs openssh-server)")
    with openssh_server(tmp_path / "sshd") as endpoint:
        yield endpoint


@pytest.fixture(params=["asyncssh", pytest.param("sshd", marks=pytest.mark.sshd)])
async def ssh_endpoint(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[SshEndpoint]:
    """Each loopback SSH server in turn."""
    if request.param == "asyncssh":
        async with asyncssh_server(tmp_path / "asyncssh-server") as server:
            yield server.endpoint
        return
    yield request.getfixturevalue("sshd_endpoint")

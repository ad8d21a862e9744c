"""The demo at 80x24 in tmux, key by key, and a two-host config whose second host is down.

As in test_demo_tmux.py, tmux runs each console on a private server socket; keys go in with
`send-keys` and each phase is told by what `capture-pane` shows, waited for with a deadline.
"""

from __future__ import annotations

import shutil
import socket
import sys
from pathlib import Path

import pytest

from tests.support.demo_terminal import demo_processes
from tests.support.tmux import Tmux, tmux_server

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]
CONSOLE = Path(sys.executable).parent / "eagle-console"


def on_dashboard(screen: str) -> bool:
    """The dashboard with the demo's datasets, no modal or other screen over it."""
    return "B1_sharegpt" in screen and "datasets" in screen and "Cancel" not in screen


def closed_port() -> int:
    """A local port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.timeout(600)
@pytest.mark.slow
def test_at_80x24_r_d_and_k_open_and_cancel_and_q_exits_leaving_nothing(
    tmp_path: Path, tmux: Tmux
) -> None:
    workspace, exited = tmp_path / "demo", tmp_path / "exited"
    command = f"{CONSOLE} demo --dir {workspace}; echo $? > {exited}"
    tmux.run("new-session", "-d", "-s", "demo", "-x", "80", "-y", "24", command)
    tmux.wait_for(lambda s: on_dashboard(s) and "running" in s, "the demo's datasets running")
    tmux.wait_for(lambda s: "? Help" in s and "q Quit" in s, "? and q in the footer")

    tmux.keys("R")
    tmux.wait_for(lambda s: "Kill, deploy and restart" in s and "Cancel" in s, "the R modal")
    tmux.keys("Escape")
    tmux.wait_for(on_dashboard, "the dashboard again after escape")

    tmux.keys("d")
    tmux.wait_for(lambda s: "deploy drift" in s, "the deploy screen")
    tmux.keys("Escape")
    tmux.wait_for(on_dashboard, "the dashboard again after escape")

    tmux.keys("k")
    tmux.wait_for(lambda s: "Stop" in s and "Cancel" in s, "the stop modal")
    tmux.keys("Escape")
    tmux.wait_for(on_dashboard, "the dashboard again after escape")

    tmux.keys("q")
    assert tmux.wait_exit(exited) == "0"
    assert demo_processes(workspace) == []


@pytest.mark.timeout(600)
@pytest.mark.slow
def test_h_to_a_host_that_is_down_says_so_and_shows_none_of_the_first_hosts_rows(
    tmp_path: Path, tmux: Tmux
) -> None:
    workspace = tmp_path / "demo"
    tmux.run("new-session", "-d", "-s", "demo", "-x", "200", "-y", "50",
             f"{CONSOLE} demo --ssh --dir {workspace}")  # fmt: skip
    tmux.wait_for(on_dashboard, "the --ssh demo's dashboard")
    config = tmp_path / "two-hosts.toml"
    spare = f'\n\n[hosts.spare]\nssh = "127.0.0.1:{closed_port()}"\n'
    config.write_text((workspace / "eagle-console.toml").read_text() + spare)

    exited = tmp_path / "two-exited"
    with tmux_server() as two:
        two.run("new-session", "-d", "-s", "demo", "-x", "80", "-y", "24",
                f"{CONSOLE} --config {config}; echo $? > {exited}")  # fmt: skip
        two.wait_for(lambda s: "B1_sharegpt" in s and "spare" in s, "the demo host, spare listed")
        two.keys("h")
        screen = two.wait_for(
            lambda s: s.lstrip().startswith("spare") and "link down" in s, "spare, link down"
        )
        assert "B1_sharegpt" not in screen
        assert "B2_ultrachat" not in screen
        two.keys("q")
        assert two.wait_exit(exited) == "0"
    tmux.keys("q")

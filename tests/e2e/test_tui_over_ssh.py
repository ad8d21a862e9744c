"""The TUI over a real SSH server: an unknown key is shown and refused until pinned on purpose."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

from console.config import load_config
from console.link.host_connection import Opener
from console.link.host_keys import pin_host_key
from console.link.ssh_link import open_ssh_link
from console.ui.app import ConsoleApp
from console.ui.screens.dashboard import DashboardScreen
from console.ui.screens.trust import TrustScreen
from tests.support.screen import wait_for
from tests.support.ssh_servers import SshEndpoint


async def test_unknown_key_is_refused_then_pinned_with_a_typed_yes(
    asyncssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path, sample_root: Path
) -> None:
    known = tmp_path / "fresh_known_hosts"
    config_path = tmp_path / "eagle-console.toml"
    config_path.write_text(
        asyncssh_endpoint.config_toml("gpu", python=sys.executable, state_dir=state_dir,
                                      datasets_root=sample_root, known_hosts=str(known))
    )  # fmt: skip
    host = load_config(config_path).host("gpu")

    def opener() -> Opener:
        return lambda: open_ssh_link(host)

    app = ConsoleApp({"gpu": opener()}, pinners={"gpu": functools.partial(pin_host_key, host)})
    async with app.run_test(size=(170, 50)) as pilot:
        await wait_for(  # the screen is app.screen before its widgets are composed
            pilot,
            lambda: isinstance(app.screen, TrustScreen) and bool(app.screen.query("#trust-text")),
        )
        text = str(app.screen.query_one("#trust-text").render())
        assert asyncssh_endpoint.host_key_fingerprint in text
        assert not state_dir.exists(), "nothing ran on the host before the key was trusted"
        await pilot.press("y", "e", "s", "enter")
        await wait_for(
            pilot,
            lambda: (
                isinstance(app.screen, DashboardScreen) and app.views["gpu"].state.status == "up"
            ),
        )
        await wait_for(pilot, lambda: app.views["gpu"].snapshot is not None)
    snapshot = app.views["gpu"].snapshot
    assert snapshot is not None
    assert {d.name: d.responses for d in snapshot.datasets}["B1_sharegpt"] == 3
    assert (
        asyncssh_endpoint.host_key_fingerprint.split(":")[1] not in known.read_text()
    )  # the key, not the hash
    assert known.read_text().startswith(f"[127.0.0.1]:{asyncssh_endpoint.port} ssh-ed25519 ")

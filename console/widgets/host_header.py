"""The top line: host, link state and latency, agent version, age of the data, clock."""

from __future__ import annotations

import time

from textual.widgets import Static

from console.host_view import HostView
from console.model import STALE_AFTER_S, age


class HostHeader(Static):
    """One line about the host on screen."""

    def show(self, view: HostView, host_count: int) -> None:
        """Render the header for `view`."""
        state = view.state
        latency = (
            f" {state.latency_ms:.1f} ms"
            if state.latency_ms is not None and state.status == "up"
            else ""
        )
        version = f" · agent {state.agent_version}" if state.agent_version else ""
        hosts = f" ({host_count} hosts, h to switch)" if host_count > 1 else ""
        data_age = view.age_s()
        self.update(
            f"[b]{view.name}[/b]{hosts} · link {state.status}{latency}{version} · data "
            f"{age(data_age)} · {time.strftime('%H:%M:%S')}"
        )
        self.set_class(state.status != "up", "-down")
        self.set_class(data_age is not None and data_age > STALE_AFTER_S, "-stale")

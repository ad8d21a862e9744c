"""The top line: host, link state and latency, agent version, age of the data, clock."""

from __future__ import annotations

import time

from rich.text import Text
from textual.widgets import Static

from console.model.formatting import STALE_AFTER_S, age
from console.model.host_view import HostView
from console.model.link_text import link_text
from console.model.safe_text import literal


class HostHeader(Static):
    """One line about the host on screen."""

    def show(self, view: HostView, others: list[str], now: float) -> None:
        """Render the header for `view` at time `now`, and one headline per other host."""
        state = view.state
        latency = (
            f" {state.latency_ms:.1f} ms"
            if state.latency_ms is not None and state.status == "up"
            else ""
        )
        version = f" · agent {state.agent_version}" if state.agent_version else ""
        hosts = f"  ·  others: {'; '.join(others)} (h to switch)" if others else ""
        data_age = view.age_s()
        self.update(
            Text.assemble(
                literal(view.name, "bold"),
                literal(
                    f" · link {link_text(state, view.last_failure, now)}{latency}{version}"
                    f" · data {age(data_age)} · "
                    f"{time.strftime('%H:%M:%S', time.localtime(now))}{hosts}"
                ),
            )  # fmt: skip
        )
        self.set_class(state.status != "up", "-down")
        self.set_class(data_age is not None and data_age > STALE_AFTER_S, "-stale")

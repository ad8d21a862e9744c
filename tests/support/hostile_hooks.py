"""Webhooks on loopback that misbehave: an endless 200, a drip, a redirect; and the sender
driven as the agent drives it. Shared by the webhook tests and the hostile_peers scenario.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agent.protocol import Alert, NotifyConfig, PipelineConfig, Snapshot
from agent.tasks import TaskOwner
from agent.watch.notify import Notifier, Post
from tests.support.waits import wait_until

DEADLINE_S = 30.0


@contextlib.contextmanager
def hook(behaviour: str) -> Iterator[tuple[str, list[int]]]:
    """A hook on loopback that behaves as named; yields its URL and a count of POSTs."""
    posts: list[int] = []
    stop = threading.Event()

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            self.rfile.read(int(self.headers["Content-Length"]))
            posts.append(1)
            if behaviour == "redirect":
                self.send_response(302)
                self.send_header("Location", "/elsewhere")
                self.end_headers()
                return
            self.send_response(200)
            self.end_headers()
            with contextlib.suppress(OSError):
                while not stop.is_set():  # endless: as fast as it goes, or a byte a second
                    self.wfile.write(b"x" * (1 << 16) if behaviour == "endless" else b"x")
                    if behaviour == "drip":
                        stop.wait(1.0)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/topic", posts
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


def notifier_for(url: str, post: Post | None = None) -> tuple[Notifier, TaskOwner]:
    """A notifier sending to `url` (through `post` where given) and the owner of its sender."""
    tasks = TaskOwner("test")
    pipeline = PipelineConfig(notify=NotifyConfig(url))
    return Notifier(lambda: pipeline, tasks, post), tasks


@contextlib.asynccontextmanager
async def sending_to(url: str, post: Post | None = None) -> AsyncIterator[Notifier]:
    """`notifier_for`'s notifier, its sender stopped when the block ends."""
    notifier, tasks = notifier_for(url, post)
    try:
        yield notifier
    finally:
        await tasks.close()


async def alert(notifier: Notifier, kind: str) -> None:
    alerts = (Alert(kind, "error", f"{kind} happened", "B1", 1.0),)
    await notifier.heard(Snapshot(1.0, "gpu-0", None, (), alerts))


async def settled(notifier: Notifier, done: int) -> None:
    """Until `done` alerts were sent or given up on."""
    ended = await wait_until(lambda: notifier.sent + notifier.dead_letters >= done, DEADLINE_S)
    assert ended, (notifier.sent, notifier.dead_letters)

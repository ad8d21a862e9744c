"""Alerts reach a webhook, with nobody watching; a dead webhook never holds up the scanner."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agent.protocol import Alert, DatasetsConfig, NotifyConfig, PipelineConfig, Snapshot
from agent.watch import notify
from console.link.local_link import open_local_link
from tests.support.datasets import response_line, write_prompts
from tests.support.hostile_hooks import notifier_for, sending_to
from tests.support.waits import until

DEADLINE_S = 30.0
SECRET = "topic-s3cr3t"


@contextlib.contextmanager
def webhook() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A local HTTP server that keeps every JSON body POSTed to it."""
    received: list[dict[str, Any]] = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            length = int(self.headers["Content-Length"])
            received.append(json.loads(self.rfile.read(length)))
            self.send_response(200)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/{SECRET}", received
    finally:
        server.shutdown()
        server.server_close()


async def test_an_over_budget_dataset_is_posted_to_the_webhook_with_nobody_watching(
    tmp_path: Path, state_dir: Path
) -> None:
    root = tmp_path / "datasets"
    write_prompts(root / "B1_chat", 5)
    with webhook() as (url, received):
        config = PipelineConfig(
            datasets=DatasetsConfig(str(root), budget=100), notify=NotifyConfig(url, "warning")
        )
        link = await open_local_link(state_dir, config)
        await link.close()
        (root / "B1_chat" / "raw_responses.jsonl").write_text(response_line("p0", 500))
        await until(
            lambda: any(body["kind"] == "over_budget" for body in received),
            "an over_budget POST",
            DEADLINE_S,
        )
    [body] = [body for body in received if body["kind"] == "over_budget"]
    assert (body["dataset"], body["severity"]) == ("B1_chat", "error")
    assert body["message"] in body["text"]
    assert body["host"] in body["text"]
    assert all(body["severity"] != "info" for body in received), "below min_severity"
    assert SECRET not in (state_dir / "agent.log").read_text()


def snapshot_with(*kinds: str) -> Snapshot:
    alerts = tuple(Alert(kind, "error", f"{kind} happened", "B1", 1.0) for kind in kinds)
    return Snapshot(1.0, "gpu-0", None, (), alerts)


async def test_a_hanging_webhook_never_makes_a_listener_wait() -> None:
    release, posted = threading.Event(), list[bytes]()

    def hang(url: str, body: bytes, timeout_s: float) -> None:
        posted.append(body)
        release.wait(DEADLINE_S)

    notifier, tasks = notifier_for("http://127.0.0.1:9/x", hang)
    try:
        for number in range(5):  # each returns while the first POST still hangs
            await asyncio.wait_for(notifier.heard(snapshot_with(f"kind{number}")), DEADLINE_S)
        assert not release.is_set()
        await until(lambda: posted, "a POST", DEADLINE_S)
        assert len(posted) == 1, "one POST at a time, the rest queued"
    finally:
        release.set()
        await tasks.close()


async def test_a_failing_webhook_counts_dead_letters_and_says_so_without_its_secret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(notify, "BACKOFF_S", 0.01)
    tries: list[str] = []

    def refuse(url: str, body: bytes, timeout_s: float) -> None:
        tries.append(url)
        raise ConnectionRefusedError("refused")

    async with sending_to(f"https://hooks.example/{SECRET}", refuse) as notifier:
        await notifier.heard(snapshot_with("over_budget"))
        await notifier.heard(snapshot_with("over_budget"))  # still raised: not sent again
        await until(lambda: notifier.dead_letters, "a dead letter", DEADLINE_S)
    assert len(tries) == notify.TRIES
    [alert] = notifier.alerts(2.0)
    assert alert.kind == "notify_failing"
    assert "https://hooks.example/" in alert.message
    assert SECRET not in alert.message
    status = notifier.status()
    assert (status.site, status.dead_letters) == ("https://hooks.example/…", 1)
    assert status.last_failure == "ConnectionRefusedError"
    assert SECRET not in repr(status)

"""doctor's webhook line: lost notifications, the last reason, and never more of the URL than its site."""

from __future__ import annotations

from agent.protocol import NotifyStatus
from console.cli.doctor_webhook import webhook_detail


def test_lost_notifications_fail_the_line_with_the_count_the_reason_and_the_site_only() -> None:
    status = NotifyStatus("https://hooks.example/…", 3, 2, "HTTP 503", 100.0)
    ok, detail = webhook_detail(status, now=140.0)
    assert not ok
    assert detail.startswith("https://hooks.example/…: 3 sent, 2 undelivered")
    assert "last: HTTP 503, 40 s ago" in detail


def test_a_webhook_that_lost_nothing_or_none_at_all_is_fine() -> None:
    assert webhook_detail(NotifyStatus("https://hooks.example/…", 3), 0.0) == (
        True,
        "https://hooks.example/…: 3 sent, 0 undelivered",
    )
    ok, detail = webhook_detail(NotifyStatus(None), 0.0)
    assert ok
    assert "none configured" in detail

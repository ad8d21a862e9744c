"""Retry-After as the runner reads it: seconds or an HTTP date, capped, None when absent."""

from __future__ import annotations

import email.utils
import time

import pytest

from agent.pipeline.inference.client import RETRY_AFTER_CAP_S, retry_after_s


@pytest.mark.parametrize(("header", "seconds"), [("7", 7.0), ("0.5", 0.5), (" 12 ", 12.0)])
def test_delta_seconds_are_taken_as_given(header: str, seconds: float) -> None:
    assert retry_after_s(header) == seconds


def test_an_http_date_is_the_time_left_until_it() -> None:
    header = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= (retry_after_s(header) or 0) <= 31


def test_a_huge_wait_is_capped_and_nonsense_is_ignored() -> None:
    assert retry_after_s("86400") == RETRY_AFTER_CAP_S
    assert retry_after_s("soon") is None
    assert retry_after_s(None) is None


@pytest.mark.parametrize("header", ["nan", "NaN", "inf", "-inf", "1e999", "1_0", "-3", "0x10", ""])
def test_what_is_not_delta_seconds_or_a_date_is_ignored(header: str) -> None:
    """float() takes all of these; a NaN wait froze the runner's status for 15 s."""
    assert retry_after_s(header) is None

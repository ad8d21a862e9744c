"""Which protocol and agent this code speaks for; a peer compares them at hello."""

from __future__ import annotations

PROTOCOL_VERSION = 1
"""Bumped whenever a message changes in a way an older peer cannot read."""


AGENT_VERSION = "0.1.0"
"""The version of the agent code shipped with this console."""

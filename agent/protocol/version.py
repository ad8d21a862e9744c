"""Which protocol and agent this code speaks for; a peer compares them at hello."""

from __future__ import annotations

PROTOCOL_VERSION = 2
"""Bumped whenever a message changes in a way an older peer cannot read.

2: hello no longer replaces the agent's config (it names the differences); `pipeline.apply` does.
"""


AGENT_VERSION = "0.1.0"
"""The version of the agent code shipped with this console."""

"""The one error a request's handler raises to refuse it: a code from the protocol and a line.

Handlers anywhere in the agent (the core, the operations, the autopilot) raise it; the session
answers it as the request's error. Nothing else is shown to a console as a refusal.
"""

from __future__ import annotations


class AgentError(Exception):
    """A request the agent understood but cannot carry out; the console shows the message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

"""Why a request failed: the error codes, the error body and the exception that carries them."""

from __future__ import annotations

from dataclasses import dataclass


class ErrorCode:
    """The `code` values an error response can carry."""

    MALFORMED = "malformed"
    OVERSIZED = "oversized"
    UNKNOWN_METHOD = "unknown_method"
    INVALID_PARAMS = "invalid_params"
    UNSUPPORTED_VERSION = "unsupported_version"
    HELLO_REQUIRED = "hello_required"
    NOT_FOUND = "not_found"
    UNREADABLE = "unreadable"
    GPU_BUSY = "gpu_busy"
    DATASET_BUSY = "dataset_busy"
    """The dataset already has a writer; the message names it."""
    STORAGE = "storage"
    """The agent could not write its own files (full disk...); the message names the path."""
    NOTHING_TO_ROLL_BACK = "nothing_to_roll_back"
    """The file already is its previous version: a rollback would change nothing."""
    KEY_REUSED = "key_reused"
    OPERATION_BUSY = "operation_busy"
    """Another operation is under way on the same job; the message names it."""
    UNAVAILABLE = "unavailable"
    """Something the request needs is missing on the box (no crontab); the message says what."""
    NO_ROOM = "no_room"
    """A hidden-states job's plan does not fit where it writes; `force` starts it anyway."""
    DRAFTER_CHECK_FAILED = "drafter_check_failed"
    """The drafter server's checkpoint failed its check; `force` serves it anyway."""
    CONFIG_DIFFERS = "config_differs"
    """The console's config is not the one the agent runs: nothing starts until it is applied."""
    INTERNAL = "internal"


class ProtocolError(Exception):
    """A line that is not a valid message; carries what to answer with."""

    def __init__(self, code: str, message: str, request_id: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """Why a request failed, and what to do about it."""

    code: str
    message: str

"""Why a job crashed, read from the end of its log: whether running it again can help.

A training or hidden-states job that dies of CUDA out-of-memory dies the same way when started
again with the same argv; the restart policy once did that up to its cap, each try loading the
target model for minutes (SpecForge #466, #112, #326). Two causes are taken as deterministic:

- out of memory on the GPU, as torch says it: `torch.OutOfMemoryError: CUDA out of memory`
  (torch 2.5 on; `torch.cuda.OutOfMemoryError` before), `CUDA error: out of memory` from a
  kernel, `HIP out of memory` on ROCm, each perhaps behind torchrun's `[rank0]:` prefix;
- the same Python exception, raised at the same place (file, line, function, type), as the run
  this one restarted: its message may differ (sizes, addresses), its place does not.

Anything else (a signal, a timeout, a lost process, a first Python error) keeps the policy. Only
the last TAIL_BYTES of the log are read, through the one bounded log reader.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from agent.logs import NamedLog, printable_line, read_chunk

TAIL_BYTES = 64 * 1024
MAX_SUMMARY_CHARS = 200
SAME_FAILURE = "not restarted: it would fail the same way"
"""How the note of a job the policy leaves alone for its cause begins (stages and alerts read it)."""

_RANK_PREFIX = re.compile(r"^\[(?:rank|default)\d+\]:\s?")
_OUT_OF_MEMORY = re.compile(
    r"(?:torch\.(?:cuda\.)?OutOfMemoryError|CUDA out of memory|CUDA error: out of memory"
    r"|HIP out of memory)"
)
_FRAME = re.compile(r'^\s*File "([^"]{1,500})", line (\d{1,9}), in (\S{1,200})')
_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]{0,200})(?::\s|$)")
OUT_OF_MEMORY_KNOBS = (
    "lower the batch size (--batch-size, training.batch_size) or the max length (--max-length, "
    "data.max_length), or spread the model over more GPUs (--tp-size), then start it"
)


@dataclass(frozen=True, slots=True)
class CrashCause:
    """What a log's end says the job died of."""

    kind: str
    """out_of_memory, or python_error."""
    summary: str
    """The line that says it, printable and cut short."""
    place: str = ""
    """For a Python error: file:line in function, and the exception's type."""

    def same_as(self, earlier: CrashCause | None) -> bool:
        """True when the run before died of this very error at this very place."""
        return earlier is not None and self.kind == earlier.kind and self.place == earlier.place

    def note(self) -> str:
        """The restart note: the cause, and what to change."""
        if self.kind == "out_of_memory":
            return f"{SAME_FAILURE}: GPU out of memory ({self.summary}); {OUT_OF_MEMORY_KNOBS}"
        return (
            f"{SAME_FAILURE}: the same error at the same place twice ({self.summary}, at "
            f"{self.place}); fix it, then start it"
        )


def read_cause(log_path: str | None) -> CrashCause | None:
    """The cause the end of the log at `log_path` gives, or None (blocking: reads the file)."""
    if not log_path:
        return None
    try:
        chunk = read_chunk(NamedLog("crash", Path(log_path)), -TAIL_BYTES, None)
    except OSError:
        return None
    return cause_in([_RANK_PREFIX.sub("", line) for line in chunk.text.splitlines()])


def cause_in(lines: list[str]) -> CrashCause | None:
    """The cause these last lines of a log give, or None."""
    for line in reversed(lines):
        if _OUT_OF_MEMORY.search(line):
            return CrashCause("out_of_memory", _short(line))
    return _python_error(lines)


def is_deterministic(cause: CrashCause | None, earlier: CrashCause | None) -> bool:
    """True when running the job again with the same argv would fail the same way."""
    return cause is not None and (cause.kind == "out_of_memory" or cause.same_as(earlier))


def _python_error(lines: list[str]) -> CrashCause | None:
    """The last traceback's innermost frame and exception, or None when the end holds none."""
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call")]
    if not starts:
        return None
    frame: tuple[str, ...] | None = None
    for line in lines[starts[-1] + 1 :]:
        if found := _FRAME.match(line):
            frame = found.groups()
        elif (
            frame is not None
            and not line.startswith((" ", "\t"))
            and (error := _EXCEPTION.match(line))
        ):
            path, number, function = frame
            place = f"{Path(path).name}:{number} in {function}: {error.group(1)}"
            return CrashCause("python_error", _short(line), place)
    return None


def _short(line: str) -> str:
    text = printable_line(line)
    return text if len(text) <= MAX_SUMMARY_CHARS else text[: MAX_SUMMARY_CHARS - 1] + "…"

"""What a crashed job's log says it died of, and whether the same argv would die the same way.

The messages are torch's own (torch/csrc/cuda/CUDACachingAllocator.cpp's "CUDA out of memory. Tried
to allocate", raised as torch.OutOfMemoryError since torch 2.5, torch.cuda.OutOfMemoryError before),
behind torchrun's `[rank0]:` prefix where several ranks print.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.operations.crash_causes import (
    MAX_SUMMARY_CHARS,
    SAME_FAILURE,
    TAIL_BYTES,
    cause_in,
    is_deterministic,
    read_cause,
)

OOM_TORCH_2_13 = """\
Traceback (most recent call last):
  File "/opt/specforge/specforge/training/trainer.py", line 412, in step
    loss = self.model(batch)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total \
capacity of 79.19 GiB of which 1.06 GiB is free."""


def traceback(line: int, message: str, error: str = "ValueError") -> str:
    return (
        "Traceback (most recent call last):\n"
        '  File "/opt/run/train.py", line 7, in <module>\n    main()\n'
        f'  File "/opt/run/train.py", line {line}, in main\n    load()\n'
        f"{error}: {message}\n"
    )


@pytest.mark.parametrize(
    "log",
    [
        OOM_TORCH_2_13,
        "[rank0]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB",
        "RuntimeError: CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported",
        "[rank3]: torch.OutOfMemoryError: HIP out of memory. Tried to allocate 1.00 GiB",
    ],
)
def test_gpu_out_of_memory_is_deterministic_the_first_time(log: str) -> None:
    cause = cause_in(log.splitlines())
    assert cause is not None
    assert cause.kind == "out_of_memory"
    assert is_deterministic(cause, None)
    note = cause.note()
    assert note.startswith(f"{SAME_FAILURE}: GPU out of memory (")
    assert "--batch-size" in note
    assert "--max-length" in note
    assert "--tp-size" in note


def test_the_same_error_at_the_same_place_twice_is_deterministic_whatever_its_message() -> None:
    first = cause_in(traceback(40, "shape (3, 4) does not fit (8,)").splitlines())
    second = cause_in(traceback(40, "shape (5, 4) does not fit (9,)").splitlines())
    elsewhere = cause_in(traceback(41, "shape (5, 4) does not fit (9,)").splitlines())
    other_type = cause_in(traceback(40, "x", error="KeyError").splitlines())
    assert first is not None
    assert second is not None
    assert first.place == "train.py:40 in main: ValueError"
    assert not is_deterministic(first, None), "one Python error alone keeps the policy"
    assert is_deterministic(second, first)
    assert not is_deterministic(elsewhere, first)
    assert not is_deterministic(other_type, first)
    assert "the same error at the same place twice" in second.note()


@pytest.mark.parametrize(
    "log",
    [
        "step 10 loss 1.2\nstep 11 loss 1.1\n",  # killed without a word
        "Traceback (most recent call last):\n",  # torn before its exception
        "NCCL WARN Timeout\nterminate called after throwing an instance of 'c10::Error'\n",
        "",
    ],
)
def test_anything_else_has_no_cause_and_keeps_the_policy(log: str) -> None:
    assert cause_in(log.splitlines()) is None


def test_only_the_end_of_a_huge_log_is_read_and_its_line_is_printable(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    with log.open("w") as handle:
        handle.write("torch.OutOfMemoryError: CUDA out of memory (long ago, then it recovered)\n")
        handle.write(("step ok " * 20 + "\n") * (TAIL_BYTES // 100))
        handle.write("x" * 50_000 + "\n")
        handle.write(traceback(40, "\x1b[2Jcleared " + "y" * 500))
    cause = read_cause(str(log))
    assert cause is not None
    assert cause.kind == "python_error", "an old OOM past the tail is not this crash's"
    assert "\x1b" not in cause.summary
    assert len(cause.summary) <= MAX_SUMMARY_CHARS
    assert read_cause(str(tmp_path / "missing.log")) is None
    assert read_cause(None) is None

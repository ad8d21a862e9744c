"""The runner's number flags take only what they can mean: float() also takes nan and inf.

`--temperature nan` was sent to the server as a bare NaN (not JSON); `--drain-timeout nan` and
`--request-timeout inf` passed the "positive" check; `--max-retries -1` was taken as 0.
"""

from __future__ import annotations

import pytest

from agent.pipeline.inference.options import parse_options

BASE = ["--server", "http://127.0.0.1:1", "--dataset-dir", "/tmp/B1"]


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [
        ("--temperature", "nan", "must be a finite number"),
        ("--temperature", "-0.5", "must be 0 or more"),
        ("--top-p", "inf", "must be a finite number"),
        ("--top-p", "0", "must be in (0, 1]"),
        ("--top-p", "1.5", "must be in (0, 1]"),
        ("--drain-timeout", "nan", "must be a finite number"),
        ("--request-timeout", "inf", "must be a finite number"),
        ("--server-down-timeout", "-inf", "must be a finite number"),
        ("--max-retries", "-1", "must be 0 or more"),
    ],
)
def test_a_value_no_run_can_mean_is_refused_naming_the_flag(
    flag: str, value: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_options([*BASE, f"{flag}={value}"])  # "=": argparse takes -inf for a flag
    assert exited.value.code == 2
    error = capsys.readouterr().err
    assert flag in error
    assert said in error


def test_values_in_range_are_taken() -> None:
    options = parse_options([*BASE, "--temperature", "0.7", "--top-p", "1", "--max-retries", "0"])
    assert (options.temperature, options.top_p, options.max_retries) == (0.7, 1.0, 0)

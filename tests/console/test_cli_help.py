"""Every flag of every subcommand says what it does, and each usage line parses as printed.

`demo --help` once listed --ssh, --dir and --keep with no word about them, and `redeploy`'s
usage put `--argv` (which swallows the rest of the line) before `host`, an order it rejected.
"""

from __future__ import annotations

import argparse
import shlex

import pytest

from console.cli.main import build_parser


def every_parser(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The parser and every subcommand's, by their prog."""
    found = {parser.prog: parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= every_parser(sub)
    return found


def undocumented(parser: argparse.ArgumentParser) -> list[str]:
    """The options and positionals of one parser that have no help text."""
    return [
        "/".join(action.option_strings) or action.dest
        for action in parser._actions
        if not isinstance(action, argparse._HelpAction) and not action.help
    ]


def test_every_action_of_every_subcommand_has_help() -> None:
    missing = {
        prog: names for prog, parser in every_parser(build_parser()).items()
        if (names := undocumented(parser))
    }  # fmt: skip
    assert missing == {}


def test_every_subcommand_is_walked() -> None:
    progs = set(every_parser(build_parser()))
    assert {"eagle-console demo", "eagle-console redeploy", "eagle-console events"} <= progs


def test_redeploy_usage_puts_host_and_job_before_argv() -> None:
    usage = every_parser(build_parser())["eagle-console redeploy"].format_usage()
    assert usage.index("host") < usage.index("--argv")
    line = "redeploy gpu inference/B3 --token-budget 5 --argv python -m x --token-budget 9"
    args = build_parser().parse_args(shlex.split(line))
    assert (args.host, args.job, args.token_budget) == ("gpu", "inference/B3", 5)
    assert args.argv == ["python", "-m", "x", "--token-budget", "9"]


@pytest.mark.parametrize("value", ["0", "-3", "ten"])
def test_redeploy_refuses_a_token_budget_that_is_not_one(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["redeploy", "gpu", "B1", "--token-budget", value])
    assert exited.value.code == 2
    assert "not a positive whole number of tokens" in capsys.readouterr().err

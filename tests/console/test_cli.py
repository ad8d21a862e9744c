"""The command line: finding the command after --config, and refusals before any connection."""

from __future__ import annotations

import pytest

from console.cli.deploy_command import run_deploy
from console.cli.main import _default_to_tui, build_parser
from console.config import HostConfig, SshTarget
from console.link.agent_link import LinkError


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["--config=x.toml", "status"], "status"),
        (["--config", "x.toml", "status"], "status"),
        (["--config=x.toml"], "tui"),
        (["--config=x.toml", "gpu"], "tui"),
        (["gpu"], "tui"),
    ],
)
def test_the_command_is_found_after_the_config_flag(argv: list[str], command: str) -> None:
    args = build_parser().parse_args(_default_to_tui(argv))
    assert args.command == command
    assert args.config is None or str(args.config) == "x.toml"


@pytest.mark.parametrize(
    "argv",
    [
        ["status", "kimi", "--config", "x.toml"],
        ["status", "--config=x.toml", "kimi", "--json"],
        ["gpu", "--config", "x.toml"],
        ["jobs", "kimi", "--config", "x.toml"],
    ],
)
def test_the_config_flag_may_come_after_the_command(argv: list[str]) -> None:
    """`status kimi --config F` printed a 4-line usage."""
    args = build_parser().parse_args(_default_to_tui(argv))
    assert str(args.config) == "x.toml"


def test_a_usage_mistake_is_one_line_that_says_where_to_read_more(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["status", "--bogus"])
    assert exited.value.code == 2
    error = capsys.readouterr().err
    assert (
        error
        == "eagle-console: error: unrecognized arguments: --bogus (see eagle-console --help)\n"
    )


@pytest.mark.parametrize(("dry_run", "rollback"), [(False, None), (True, "/srv/x.py")])
async def test_a_read_only_host_refuses_deploys_before_connecting(
    dry_run: bool, rollback: str | None
) -> None:
    host = HostConfig("gpu", SshTarget("unreachable.invalid"), read_only=True)
    with pytest.raises(LinkError, match="read_only"):
        await run_deploy(host, dry_run=dry_run, rollback_path=rollback)

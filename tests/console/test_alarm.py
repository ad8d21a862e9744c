"""A new critical alert rings the bell and sends a desktop notification escape, once."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.protocol import Alert, Snapshot
from console.config import ConfigError, ConsoleSettings, parse_config
from console.ui.alarm import Alarm

ERROR = Alert("stalled", "error", "B1 stalled; x;y", "B1", 1.0)
WARNING = Alert("overrun", "warning", "B1 will overrun", "B1", 1.0)


def snapshot(*alerts: Alert) -> Snapshot:
    return Snapshot(1.0, "gpu", None, (), alerts=alerts)


def written(settings: ConsoleSettings, *snapshots: Snapshot) -> list[str]:
    out: list[str] = []
    alarm = Alarm(settings, out.append)
    for each in snapshots:
        alarm.heard("gpu", each)
    return out


def test_a_critical_alert_rings_and_notifies_once_however_often_it_repeats() -> None:
    [text] = written(ConsoleSettings(), snapshot(ERROR), snapshot(ERROR, WARNING), snapshot(ERROR))
    assert text.startswith("\a")
    assert "\x1b]777;notify;eagle-console;gpu: B1 stalled, x,y\x1b\\" in text
    assert "\x1b]9;eagle-console: gpu: B1 stalled, x,y\x1b\\" in text


def test_a_warning_is_silent_and_an_alert_that_comes_back_rings_again() -> None:
    assert written(ConsoleSettings(), snapshot(WARNING)) == []
    assert len(written(ConsoleSettings(), snapshot(ERROR), snapshot(), snapshot(ERROR))) == 2


def test_bell_and_desktop_notification_each_turn_off() -> None:
    [no_bell] = written(ConsoleSettings(bell=False), snapshot(ERROR))
    assert "\a" not in no_bell
    assert "\x1b]777;" in no_bell
    assert written(ConsoleSettings(desktop_notify=False), snapshot(ERROR)) == ["\a"]


def test_the_console_table_reads_bell_and_desktop_notify(tmp_path: Path) -> None:
    config = parse_config({"console": {"bell": False}}, tmp_path / "c.toml")
    assert config.settings == ConsoleSettings(bell=False, desktop_notify=True)
    with pytest.raises(ConfigError, match="console.beep"):
        parse_config({"console": {"beep": True}}, tmp_path / "c.toml")

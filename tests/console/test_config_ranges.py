"""One range per config value, checked once, when the config is read, named by its key.

Values the console accepted and the agent refused at hello (a budget of 10**30 or 2**62 + 1,
stall_after_s 0.5, grace_s of 8 days) made every command on that host fail, naming a wire field
instead of the config key. The console now checks the protocol's own table: an out-of-range
value is refused at load with the file and the key, and whatever loads, the agent accepts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from console.config import ConfigError, load_config
from console.link.local_link import open_local_link
from tests.support.config_ranges import OUT_OF_RANGE, edge_config, write_config


@pytest.mark.parametrize(
    ("text", "key", "shown"), OUT_OF_RANGE, ids=[key.split(".", 2)[2] for _, key, _ in OUT_OF_RANGE]
)
def test_an_out_of_range_value_is_refused_at_load_by_its_key(
    tmp_path: Path, text: str, key: str, shown: str
) -> None:
    path = write_config(tmp_path, text)
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    message = str(refused.value)
    assert message.startswith(f"{path}: {key}: got {shown}; expected "), message
    assert " from " in message


@pytest.mark.parametrize("high", [False, True], ids=["lowest", "highest"])
async def test_whatever_loads_the_agent_takes_at_hello(
    tmp_path: Path, state_dir: Path, high: bool
) -> None:
    pipeline = load_config(write_config(tmp_path, edge_config(high))).host("gpu").pipeline
    link = await open_local_link(state_dir, pipeline)
    await link.close()

"""The console's TOML config: hosts, how to reach them, and their pipeline layout (docs/config.md).

Every mistake is reported as the file, the key and what was expected, so a user can fix it
without reading code. This module never imports Textual: the headless commands use it too.
"""

from console.config.hosts import (
    CONFIG_NAME,
    DEFAULT_STATE_DIR,
    LOCAL,
    ConfigError,
    ConsoleConfig,
    ConsoleSettings,
    DeployMapping,
    HostConfig,
    SshTarget,
)
from console.config.loading import (
    config_search_path,
    console_log_path,
    console_state_dir,
    load_config,
    parse_config,
)
from console.config.node_jobs import node_spans

__all__ = [
    "CONFIG_NAME",
    "DEFAULT_STATE_DIR",
    "LOCAL",
    "ConfigError",
    "ConsoleConfig",
    "ConsoleSettings",
    "DeployMapping",
    "HostConfig",
    "SshTarget",
    "config_search_path",
    "console_log_path",
    "console_state_dir",
    "load_config",
    "node_spans",
    "parse_config",
]

"""The `eagle-console` command line: the headless commands, and the launch of the TUI or demo."""

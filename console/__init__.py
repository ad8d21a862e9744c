"""eagle-console: the workstation side, a Textual console and headless commands over SSH."""

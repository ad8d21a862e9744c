"""The jobs eagle-console ships: ordinary command-line programs the agent launches like any other."""

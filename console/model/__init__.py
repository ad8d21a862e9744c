"""Pure functions from the agent's snapshots to what is shown. No I/O and no Textual here."""

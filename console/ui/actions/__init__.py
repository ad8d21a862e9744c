"""The console's actions, grouped by what they change; the app mixes them in."""

"""The console's screens: dashboard, logs, help, and the modals that confirm or pin."""

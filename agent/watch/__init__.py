"""Keeping watch, console or not: the observer, snapshot assembly, history, the guard, webhooks."""

"""Talking to a host's agent: the link over SSH or a local pipe, host keys, bundle, deploy."""

"""Hostile input from every side.

Configs, wire lines, files, host keys, terminal text, model servers, webhooks, tokenizers that
ship code: the agent and the console must refuse it or show it as plain data, and keep serving.
"""

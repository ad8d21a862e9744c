"""The drafter check: a checkpoint compared, field by field, with its target, its data and its server.

Users lose finished runs to a drafter that loads yet accepts about one token: layer ids off by one,
a missing or regenerated vocab mapping, a context shorter than what is served, a folder the server
cannot load (each field's fix names the public report of such a loss). `python -m
agent.pipeline.drafter_check` reads the checkpoint folder as SpecForge 0.2.0's and speculators 0.9.0's save code writes it, the
target's config.json, the vocab job's files, and compares; it prints one JSON report. The agent runs
it before a drafter server starts (agent/plans/drafter_checks.py), and a failure blocks serving.
"""

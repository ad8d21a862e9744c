"""Watching datasets: counting responses by byte offset, rates, stop conditions and projections.

`tracker` follows the files, `response_lines` reads one line fast, `finish_reasons` tells an
answer cut at max_new_tokens, `rates` keeps the agent's own history, `runner_status` reads what
the writing run says, `progress` turns all of it into ETA, projected overrun, status and alerts,
and `code_digest` tells whether that run's code is stale.
"""

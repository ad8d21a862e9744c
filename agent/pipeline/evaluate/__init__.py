"""`python -m agent.pipeline.evaluate`: does the drafter make the server faster, and by how much.

The same held-out prompts go to the server with the drafter and, when given, to the same model
without it (`--baseline`), at each concurrency level in turn, with fixed sampling (greedy by
default, so both produce the same tokens), as SGLang's and SpecForge's benchmarks measure: before
each level, warm-up requests on other prompts and a `/flush_cache`. Per level: output tokens/s,
per-request latency p50/p95, time to first token when streamed, the accept length both ways
SGLang counts it (per request from `meta_info`, per decode pass from `/server_info`), the accept
rate and the accepted-draft histogram, and the speedup. Written to `OUT/eval.json` with the
definition each figure follows and a verdict in words: speculative decoding helps at low batch and
can hurt at high batch, which is what a run needs to know before it ships a drafter.
"""

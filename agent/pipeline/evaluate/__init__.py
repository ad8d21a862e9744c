"""`python -m agent.pipeline.evaluate`: does the drafter make the server faster, and by how much.

The same held-out prompts go to the server with the drafter and, when given, to the same model
without it (`--baseline`), at each concurrency level in turn, with fixed sampling (greedy by
default, so both produce the same tokens). Per level: output tokens/s, per-request latency
p50/p95, time to first token when streamed, the mean accept length SGLang reports in each
answer's `meta_info` (completion tokens / verify steps), and the speedup. Written to
`OUT/eval.json` with a verdict in words: speculative decoding helps at low batch and can hurt at
high batch, which is what a run needs to know before it ships a drafter.
"""

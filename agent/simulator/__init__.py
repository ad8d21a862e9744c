"""A stand-in for the SGLang server, so the demo, the tests and the benchmarks need no GPU.

It speaks SGLang's real wire format (native `/generate`, health, info, metrics, abort) and
writes SGLang's scheduler log lines, with a throughput model shared by the running requests
and faults on demand. It replaces only the model server: everything talking to it is real.
"""

"""The check of the hidden states a capture wrote, before days of training read them.

Silently wrong hidden states cost whole runs: wrong at batch size > 1 (speculators #279), cut
short under speculative decoding with "no exception raised" (sglang #26163). After the capture
ends, the agent runs `python -m agent.pipeline.hidden_states_check` on its output: the number of
sample files against the records exported, and a spread of samples (first, last and evenly
between) opened as each trainer's loader opens them (weights only: never unpickling code), each
tensor checked against the target (hidden size, layers captured, dtype), one sequence length
across its tensors, no NaN or infinity, and no all-zero hidden state. It prints one JSON report
on stdout; the agent's training stage waits on it (`agent/plans/hidden_states_checks.py`).
"""

"""`eagle-console demo`: a live pipeline on this machine, no GPU and no remote box needed.

It writes eight datasets named like a real run, builds a small tokenizer with a chat template,
writes a config for this host (the example to read), starts the agent, the SGLang simulator as the
agent's GPU job and an inference run per dataset (one the "old" invocation with only --max-samples,
heading past its budget), and opens the console. `--ssh` puts a real SSH server on loopback between
the console and the agent. Quitting, closing the terminal, Ctrl+C or SIGTERM, at any moment, end
everything it started within seconds (`console.demo.processes`).
"""

from console.demo.run import run_demo

__all__ = ["run_demo"]

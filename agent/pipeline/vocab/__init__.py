"""The vocab job (`python -m agent.pipeline.vocab`, in `__main__`): one module per part of it."""

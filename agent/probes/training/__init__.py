"""Training jobs as the agent reads them: their command lines and configs, logs and checkpoints."""

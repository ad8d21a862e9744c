"""What the agent measures outside the files: SGLang (HTTP and its log) and the GPUs."""

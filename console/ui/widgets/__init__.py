"""Dashboard widgets, one per file; each receives frozen data and posts messages, nothing else."""

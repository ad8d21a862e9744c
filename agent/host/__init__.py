"""Facts about this machine read safely: /proc, regular files only, clocks that step, the SGLang key."""

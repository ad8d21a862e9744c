"""Facts about this machine read safely: /proc, regular files, clocks, the SGLang key, server kinds."""

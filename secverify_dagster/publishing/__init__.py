"""Publishing: the benchmark sheet (every model × environment with CIs) and the sanitized export bundle."""

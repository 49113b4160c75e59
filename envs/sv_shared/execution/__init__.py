"""Execution: the sandbox, the patch applier, the scanner tool environment and worker, caching, retries."""

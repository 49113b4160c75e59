"""Publishing: what may leave the machine, and in what form (sanitized results for external sharing)."""

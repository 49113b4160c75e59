"""The research loop: ablations, synthetic batches, experiments and iteration notes."""

"""The training lineage: SFT datasets, SFT and RLFT checkpoints, the safety scan and approval before promotion."""

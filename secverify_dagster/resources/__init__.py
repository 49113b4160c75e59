"""Resources of the secverify project: the model layer (plain Python, in `models`) and the Dagster resources."""

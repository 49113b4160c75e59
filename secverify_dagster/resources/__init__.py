"""Resources of the secverify project: the model layer (plain Python, in `models`) and Dagster resources."""

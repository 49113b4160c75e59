"""The seed's cadences as Dagster schedules: the sweeps (`sweeps.py`) and the reports after them (`reports.py`)."""

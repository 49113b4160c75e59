"""Environment reports and their sections (runs compared, operations, views, ablations, trajectories), and the
regression gate that compares a model's run with its previous comparable one."""

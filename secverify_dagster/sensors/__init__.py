"""Sensors: new models in the registry are added as partitions and backfilled on every environment."""

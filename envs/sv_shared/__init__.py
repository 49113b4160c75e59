"""Shared core of the secverify environments: contracts, parsing, rewards, metrics, statistics, caching."""

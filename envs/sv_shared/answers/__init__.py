"""Answers: parsing completions, reward components, metrics, statistics and their plots."""

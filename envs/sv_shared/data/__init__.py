"""Data: corpus loading, dataset artifacts, splits, frame validation, embedded-corpus writing, hashing."""

"""Run records: the typed, versioned files an eval run writes, and reading finished runs back."""

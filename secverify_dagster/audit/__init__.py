"""The audit: the chain behind a published number (an eval run, a report, a checkpoint), link by link, and the
records of failed Dagster runs it and the reports read."""

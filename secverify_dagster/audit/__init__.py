"""The audit: the chain behind a published number (an eval run, a report, a checkpoint), link by link, and the
records of failed Dagster runs it and the reports read.

- auditor: Auditor, the one entry point (`secverify audit`, the governance asset), and the governance record
- subjects: what can be audited, found by name, and what every chain shares (registry, code version)
- eval_runs, checkpoints, reports: the chain of each kind of subject
- datasets: an eval's items or a checkpoint's training data, traced to the raw corpora
- experiment, events, links: an experiment record's link, the Dagster event log, the links a chain is made of
- run_failures: the records of failed Dagster runs
"""

"""The code location the Kubernetes deployment serves: the project's definitions, with each step in its own pod
(dagster-k8s's k8s_job_executor) wherever a job leaves the executor to the definitions.

Per-step pods are what let a GPU-profile training step ask for a GPU node through its op tags
(secverify_dagster/assets/training.py) while data, eval and report steps of the same run stay on CPU nodes; a run's
own pod only orchestrates (an eval run is one environment × one model: its eval step and its regression check). A job
that chose its own executor would keep it. Locally the project's jobs run their steps in the run's process."""

import dagster as dg
from dagster_k8s import k8s_job_executor

from secverify_dagster.definitions import build_definitions

defs: dg.Definitions = build_definitions(executor=k8s_job_executor)

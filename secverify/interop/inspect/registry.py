"""The entry point module (group `inspect_ai`, name `secverify`): importing it registers the six environments as
inspect tasks, `secverify/e1` … `secverify/e6`, and under their seed names (`secverify/network_logs`, …).

Every task takes the runner's item arguments: `-T split=test -T n=10 -T seed=42 -T dataset=embedded` (or an items
file's path) pose exactly the items `secverify eval -n 10 --seed 42` scores, in its order; n left out keeps the whole
split, so `--limit N` takes the same first N. E2/E4 take `-T include_tools=true` (our tool episode, native function
calling); E5/E6 take `-T judge=<judge spec>` and E5 `-T target=<registry id>`. It also registers the model API
`secverify/<registry id>` (provider.py): a model of secverify's registry called through secverify's own client."""

from __future__ import annotations

from inspect_ai import Task, task

from secverify.interop.inspect import provider  # noqa: F401  (registers the `secverify/<registry id>` models)
from secverify.interop.inspect.tasks import single_turn_task


@task
def e1(split: str = "test", n: int | None = None, seed: int = 42, dataset: str = "embedded") -> Task:
    """sv-env-network-logs: classify a network log window."""
    return single_turn_task("e1", split=split, n=n, seed=seed, dataset=dataset)


@task
def e2(
    split: str = "test", n: int | None = None, seed: int = 42, dataset: str = "embedded", include_tools: bool = False
) -> Task:
    """sv-env-config-verification: find the misconfigurations (include_tools: with the scanners as tools)."""
    return single_turn_task("e2", split=split, n=n, seed=seed, dataset=dataset, include_tools=include_tools)


@task
def e3(split: str = "test", n: int | None = None, seed: int = 42, dataset: str = "embedded") -> Task:
    """sv-env-code-vulnerability: find and patch the vulnerability."""
    return single_turn_task("e3", split=split, n=n, seed=seed, dataset=dataset)


@task
def e4(
    split: str = "test", n: int | None = None, seed: int = 42, dataset: str = "embedded", include_tools: bool = False
) -> Task:
    """sv-env-phishing-detection: classify an e-mail (include_tools: with URL reputation as a tool)."""
    return single_turn_task("e4", split=split, n=n, seed=seed, dataset=dataset, include_tools=include_tools)


@task
def e5(
    split: str = "test",
    n: int | None = None,
    seed: int = 42,
    dataset: str = "embedded",
    judge: str | None = None,
    target: str | None = None,
) -> Task:
    """sv-env-redteam-attack: the model attacks a target (registry id, or the model role `target`)."""
    from secverify.interop.inspect.dialogue import dialogue_task  # the dialogue layer loads the judges' code

    return dialogue_task("e5", split=split, n=n, seed=seed, dataset=dataset, judge=judge, target=target)


@task
def e6(
    split: str = "test", n: int | None = None, seed: int = 42, dataset: str = "embedded", judge: str | None = None
) -> Task:
    """sv-env-redteam-defense: the model defends scripted adversarial conversations."""
    from secverify.interop.inspect.dialogue import dialogue_task

    return dialogue_task("e6", split=split, n=n, seed=seed, dataset=dataset, judge=judge)


network_logs = task(name="network_logs")(e1.__wrapped__)
config_verification = task(name="config_verification")(e2.__wrapped__)
code_vulnerability = task(name="code_vulnerability")(e3.__wrapped__)
phishing_detection = task(name="phishing_detection")(e4.__wrapped__)
redteam_attack = task(name="redteam_attack")(e5.__wrapped__)
redteam_defense = task(name="redteam_defense")(e6.__wrapped__)

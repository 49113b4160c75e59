"""GRPO that trains on groups with reward spread: groups of equal rewards are sampled again, then left out, and counted.

A group whose sampled answers all earned the same reward has advantage 0 for every answer: it teaches nothing. Issue
26 measured it in 70% of an E1 run's steps (a peaked SFT policy answers alike at temperature 1). With TRL's token-level
loss ("dapo", the default) such a group's tokens still count in the loss's denominator, so a batch where most groups
agree moves the policy less than one where they differ, and nothing says how much of the batch was wasted.

`SpreadAwareGRPOTrainer` samples a generation batch again, up to `resample` times, while some of its groups have no
spread, and trains on the attempt with the most groups with spread (the dynamic sampling of DAPO, bounded so a step's
cost stays predictable on a CPU); the groups still without spread are masked out of the loss. Every generation batch
logs `groups/without_spread_first_sample`, `groups/without_spread` (after resampling, what was left out) and
`groups/resamples`, so the learning curve shows them against step; `SpreadCounts` totals them for the run.

Only the kept attempt's metrics are logged (reward, entropy, completion lengths), so the reward curve is the reward of
what was trained on. One process only: with several, a group may span processes and its spread is not visible locally,
so the trainer behaves as TRL's own there.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch
from trl import GRPOTrainer

SPREAD_TOLERANCE = 1e-6
"""An advantage smaller than this in magnitude counts as none (TRL divides by std + 1e-4, so real spread is larger)."""


@dataclass
class SpreadCounts:
    """Groups of one run (this process's part of it: a resumed run counts from its resume)."""

    groups: int = 0
    """Groups trained on (one per prompt of each generation batch)."""
    without_spread_first_sample: int = 0
    """Groups whose first sample earned equal rewards."""
    recovered_by_resampling: int = 0
    """Of those, groups with spread in the attempt trained on."""
    left_out: int = 0
    """Groups without spread in the attempt trained on: masked out of the loss."""
    resamples: int = 0
    """Generation batches sampled again."""

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def groups_with_spread(advantages: torch.Tensor, num_generations: int) -> torch.Tensor:
    """One boolean per group (consecutive runs of num_generations answers): does any answer have an advantage?"""
    if advantages.numel() % num_generations:
        raise ValueError(f"{advantages.numel()} advantages do not make groups of {num_generations}")
    return advantages.detach().view(-1, num_generations).abs().amax(dim=1) > SPREAD_TOLERANCE


class SpreadAwareGRPOTrainer(GRPOTrainer):
    """TRL's GRPOTrainer, resampling and then masking groups without reward spread (see the module docstring)."""

    def __init__(self, *args: Any, resample: int = 0, **kwargs: Any) -> None:
        if resample < 0:
            raise ValueError(f"resample must be at least 0, not {resample}")
        super().__init__(*args, **kwargs)
        self.resample = resample
        self.spread_counts = SpreadCounts()

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        if not self.model.training or self.accelerator.num_processes != 1:
            return super()._generate_and_score_completions(inputs)
        metrics = self._metrics["train"]
        best: tuple[dict[str, Any], torch.Tensor, dict[str, list[Any]]] | None = None
        first_without: int | None = None
        attempts = 0
        while attempts <= self.resample:
            attempts += 1
            before = {name: len(values) for name, values in metrics.items()}
            output = super()._generate_and_score_completions(inputs)
            # This attempt's metrics are held back; only the attempt trained on is logged.
            logged = {name: values[before.get(name, 0) :] for name, values in metrics.items()}
            for name, values in metrics.items():
                del values[before.get(name, 0) :]
            spread = groups_with_spread(output["advantages"], self.num_generations)
            if first_without is None:
                first_without = int((~spread).sum())
            if best is None or int(spread.sum()) > int(best[1].sum()):
                best = (output, spread, logged)
            if bool(spread.all()):
                break
        assert best is not None and first_without is not None
        output, spread, logged = best
        for name, values in logged.items():
            metrics[name].extend(values)
        groups = int(spread.numel())
        left_out = groups - int(spread.sum())
        self.spread_counts.groups += groups
        self.spread_counts.without_spread_first_sample += first_without
        self.spread_counts.recovered_by_resampling += first_without - left_out
        self.spread_counts.left_out += left_out
        self.spread_counts.resamples += attempts - 1
        metrics["groups/without_spread_first_sample"].append(first_without / groups)
        metrics["groups/without_spread"].append(left_out / groups)
        metrics["groups/resamples"].append(float(attempts - 1))
        if left_out:
            keep = spread.repeat_interleave(self.num_generations).to(output["completion_mask"].dtype)
            output["completion_mask"] = output["completion_mask"] * keep.unsqueeze(1)
            loss_mask = output["completion_mask"]
            if output.get("tool_mask") is not None:
                loss_mask = loss_mask * output["tool_mask"]
            output["num_items_in_batch"] = loss_mask.sum()
        return output

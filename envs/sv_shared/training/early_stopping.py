"""Early stopping on dev reward: a training run keeps the checkpoint its verifiers like best, not its last.

At every checkpoint the model answers a fixed sample of each environment's dev items (greedy, the environment's own
token budget and prompts), the environment's verifier scores the answers, and the mean over environments is the run's
dev reward (logged as `dev_reward`, with `dev_reward/<env>` and, where answers are labels,
`dev_balanced_accuracy/<env>`). Training stops once `patience` checkpoints in a row fail to beat the best by more
than `min_delta`; the final model is the best one (its weights are kept in `best-dev/` beside the checkpoints, so a
resumed run still ends on it). The starting weights are measured first (step 0) and are the first candidate: a run
none of whose saves beats the model it started from ends on that model (best step 0), never on a worse one.

Why the reward and not the dev loss: the loss of a language model on reference answers keeps falling while the
policy collapses onto the majority label (issue 26: an E1 SFT checkpoint answered "Benign" at 0.9 on 30 of 32 items);
the verifier's reward on held-out items is what the project promises, and it falls when the policy collapses.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from sv_shared.answers.collapse import answer_profile
from sv_shared.contracts import CompletionVerifier, Item, Message
from sv_shared.data.files import write_json_atomic

BEST_FOLDER = "best-dev"
BEST_RECORD = "best.json"


@dataclass(frozen=True)
class DevProbe:
    """One environment's dev sample: the items, the prompts the model sees for them, the verifier and the budget."""

    env_id: str
    items: Sequence[Item]
    prompts: Sequence[Sequence[Message]]
    verifier: CompletionVerifier
    label_column: str | None
    """The items' label column where answers are labels (E1, E4): balanced accuracy is logged too."""
    max_new_tokens: int

    def measure(self, answer: Callable[[Sequence[Sequence[Message]], int], list[str]]) -> dict[str, float]:
        """dev_reward/<env> (and dev_balanced_accuracy/<env>) of the answers `answer` gives to the prompts."""
        completions = answer(self.prompts, self.max_new_tokens)
        scored = [self.verifier.score(item, text) for item, text in zip(self.items, completions, strict=True)]
        figures = {f"dev_reward/{self.env_id}": sum(sample.reward for sample in scored) / len(scored)}
        if self.label_column is not None:
            profile = answer_profile(
                [sample.parsed["label"] if sample.parsed else None for sample in scored],
                [str(item[self.label_column]) for item in self.items],
            )
            if profile.get("balanced_accuracy") is not None:
                figures[f"dev_balanced_accuracy/{self.env_id}"] = float(profile["balanced_accuracy"])
        return figures


def greedy_answers(model: Any, tokenizer: Any, batch_size: int = 8) -> Callable[..., list[str]]:
    """A function giving the model's greedy answers to chat prompts (left-padded batches, its chat template)."""
    import torch

    def answer(prompts: Sequence[Sequence[Message]], max_new_tokens: int) -> list[str]:
        texts = [tokenizer.apply_chat_template(list(p), tokenize=False, add_generation_prompt=True) for p in prompts]
        side, tokenizer.padding_side = tokenizer.padding_side, "left"
        training = model.training
        model.eval()
        answers: list[str] = []
        try:
            with torch.no_grad():
                for start in range(0, len(texts), batch_size):
                    batch = tokenizer(texts[start : start + batch_size], return_tensors="pt", padding=True)
                    batch = {name: tensor.to(model.device) for name, tensor in batch.items()}
                    output = model.generate(
                        **batch,
                        max_new_tokens=max_new_tokens,
                        do_sample=False,
                        use_cache=True,
                        pad_token_id=tokenizer.pad_token_id,
                    )
                    new = output[:, batch["input_ids"].shape[1] :]
                    answers.extend(tokenizer.batch_decode(new, skip_special_tokens=True))
        finally:
            tokenizer.padding_side = side
            model.train(training)
        return answers

    return answer


def _log_to_wandb(figures: dict[str, float], step: int) -> None:
    """The dev figures on the W&B run the trainer reports to (if any), on its step axis, beside the training curves:
    the trainer's own log call never sees them (they are measured in a callback, after its logging)."""
    wandb = sys.modules.get("wandb")
    if wandb is not None and getattr(wandb, "run", None) is not None:
        wandb.log({**{f"train/{name}": value for name, value in figures.items()}, "train/global_step": step})


class DevRewardStopping(TrainerCallback):
    """Measures the dev reward at every save, keeps the best weights, stops after `patience` saves without gain."""

    def __init__(
        self, probes: Sequence[DevProbe], *, tokenizer: Any, output_dir: Path, patience: int, min_delta: float
    ) -> None:
        if not probes:
            raise ValueError("early stopping needs at least one environment's dev items")
        self.probes = list(probes)
        self.tokenizer = tokenizer
        self.best_dir = Path(output_dir) / BEST_FOLDER
        self.patience = patience
        self.min_delta = min_delta
        self.best: float | None = None
        self.best_step: int | None = None
        self.without_gain = 0

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        """A resumed run goes on from its record: the best so far and the saves without gain since it. A fresh run
        measures its starting weights first: the bar every save must beat, and the model it ends on if none does."""
        record = self.best_dir / BEST_RECORD
        if record.is_file():
            saved = json.loads(record.read_text(encoding="utf-8"))
            self.best, self.best_step = float(saved["dev_reward"]), int(saved["step"])
            self.without_gain = sum(
                1 for entry in state.log_history if "dev_reward" in entry and entry["step"] > self.best_step
            )
        elif model is not None:
            self._measure(model, state)

    def _measure(self, model: Any, state: Any) -> bool:
        """The dev figures of the model at this step, logged; True when they beat the best (its weights kept)."""
        answer = greedy_answers(model, self.tokenizer)
        figures: dict[str, float] = {}
        for probe in self.probes:
            figures |= probe.measure(answer)
        rewards = [figures[f"dev_reward/{probe.env_id}"] for probe in self.probes]
        reward = sum(rewards) / len(rewards)
        state.log_history.append({"step": state.global_step, "dev_reward": reward, **figures})
        _log_to_wandb({"dev_reward": reward, **figures}, int(state.global_step))
        if self.best is not None and reward <= self.best + self.min_delta:
            return False
        self.best, self.best_step, self.without_gain = reward, int(state.global_step), 0
        model.save_pretrained(self.best_dir)
        write_json_atomic(self.best_dir / BEST_RECORD, {"step": self.best_step, "dev_reward": reward, **figures})
        return True

    def on_save(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> Any:
        if not self._measure(model, state):
            self.without_gain += 1
            if self.without_gain >= self.patience:
                control.should_training_stop = True
        return control

"""Reading synthetic batches for their review: the batch folders of an environment and their kept examples.

outputs/datasets/<env>/batches/<batch id>/ holds batch.json (batch_id, env, created_at, model, counts, …),
items.parquet (the items the candidates answer), candidates.jsonl, kept.jsonl (the examples the verifier agreed
with: id, item_id, prompt (chat messages), completion, reward, temperature) and, once queued, review_queue.jsonl,
reviews.jsonl and review.md. A folder without batch.json is a batch still being written and is not listed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sv_shared.data.review import ReviewError
from sv_shared.runs.folder import read_jsonl
from sv_shared.runs.schema import RunRecordError

BATCH_FILE: Final = "batch.json"
KEPT_FILE: Final = "kept.jsonl"
ITEMS_FILE: Final = "items.parquet"


class PromptMessage(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)

    role: str = Field(min_length=1)
    content: str


class KeptExample(BaseModel):
    """One line of kept.jsonl: a candidate completion the environment's verifier rewarded."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)

    id: str = Field(min_length=1)
    item_id: str = Field(min_length=1)
    prompt: list[PromptMessage] = Field(min_length=1)
    completion: str
    reward: float = Field(allow_inf_nan=False)
    temperature: float | None = None


@dataclass(frozen=True)
class SyntheticBatch:
    """A finished batch folder and its batch.json."""

    path: Path
    info: dict[str, Any]

    @property
    def batch_id(self) -> str:
        return self.path.name

    @property
    def created_at(self) -> str:
        return str(self.info.get("created_at", ""))

    def kept(self) -> list[KeptExample]:
        path = self.path / KEPT_FILE
        try:
            lines = read_jsonl(path)
        except RunRecordError as error:
            raise ReviewError(str(error)) from None
        examples = []
        for number, value in lines:
            try:
                examples.append(KeptExample.model_validate(value))
            except ValidationError as error:
                problem = error.errors()[0]
                where = ".".join(str(part) for part in problem["loc"])
                raise ReviewError(f"{path} line {number}: not a kept example ({where}: {problem['msg']})") from None
        return examples

    def kept_by_id(self) -> dict[str, KeptExample]:
        return {example.id: example for example in self.kept()}

    def items(self) -> list[dict[str, Any]]:
        """The batch's items (items.parquet rows); empty when the batch has none."""
        path = self.path / ITEMS_FILE
        if not path.is_file():
            return []
        return pl.read_parquet(path).to_dicts()


def batches_root(datasets_root: Path, env_id: str) -> Path:
    """outputs/datasets/<env>/batches for datasets_root outputs/datasets."""
    return datasets_root / env_id / "batches"


def read_batch(batch_dir: Path) -> SyntheticBatch:
    path = batch_dir / BATCH_FILE
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReviewError(f"{batch_dir}: no {BATCH_FILE} (not a synthetic batch, or not finished)") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ReviewError(f"{path}: not JSON ({error})") from None
    if not isinstance(info, dict):
        raise ReviewError(f"{path}: expected a JSON object")
    return SyntheticBatch(batch_dir, info)


def list_batches(root: Path) -> list[SyntheticBatch]:
    """The finished batches under a batches folder, oldest first (by created_at, then id)."""
    if not root.is_dir():
        return []
    batches = [read_batch(folder) for folder in root.iterdir() if (folder / BATCH_FILE).is_file()]
    return sorted(batches, key=lambda batch: (batch.created_at, batch.batch_id))


def unfinished_batches(root: Path) -> list[str]:
    """Batch folders without batch.json, by id: a build still being written, or one that stopped part-way (it resumes
    when the batch is built again). Readers list them as dropped rather than pass over them in silence."""
    if not root.is_dir():
        return []
    return sorted(
        folder.name
        for folder in root.iterdir()
        if folder.is_dir() and not folder.name.startswith(".") and not (folder / BATCH_FILE).is_file()
    )


def find_batch(root: Path, batch_id: str) -> SyntheticBatch:
    if not batch_id or "/" in batch_id or batch_id in (".", ".."):
        raise ReviewError(f"{batch_id!r} is not a batch id")
    folder = root / batch_id
    if not folder.is_dir():
        known = ", ".join(batch.batch_id for batch in list_batches(root)) or "none"
        raise ReviewError(f"no batch {batch_id!r} under {root} (batches: {known})")
    return read_batch(folder)

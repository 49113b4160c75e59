"""`secverify scan`: every scanner's normalized findings on config files, as JSON (the E2 oracle's front door).

The scan uses E2's own oracle, the one evals use, with its persistent scanner cache (outputs/cache/scanners.sqlite,
or the file $SECVERIFY_SCANNER_CACHE names; keyed by content, tool version and ruleset), so a file already scanned by
an eval or an earlier scan is a lookup; `--no-cache` scans everything afresh and stores nothing.
"""

from __future__ import annotations

import argparse
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from sv_shared.data.files import json_text

if TYPE_CHECKING:
    from sv_env_config_verification.config_model import LoadLimits
    from sv_env_config_verification.oracle import Oracle
    from sv_env_config_verification.verify import ConfigVerifier


def _refusal(path: str, kind: str, detail: str) -> dict[str, Any]:
    """A file the scan did not read, in the shape of a scan result."""
    return {
        "name": path,
        "kind": None,
        "content_sha256": None,
        "findings": [],
        "details": [],
        "raw": {},
        "error": kind,
        "error_detail": detail,
        "tool_versions": {},
        "skipped": [],
    }


def _read(path: str, limits: LoadLimits) -> bytes:
    """The file's bytes, after checking it is a regular file within the loader's size limit (a device such as
    /dev/zero, a FIFO or a folder is refused before anything is read, and a file is never read beyond the limit)."""
    from sv_env_config_verification.config_model import ConfigParseError
    from sv_env_config_verification.loading import read_config_file

    status = Path(path).stat()
    if not stat.S_ISREG(status.st_mode):
        raise ValueError(f"config {path} is not a regular file")
    if status.st_size > limits.max_bytes:
        raise ConfigParseError("too_large", f"{path} is {status.st_size} bytes, over the limit of {limits.max_bytes}")
    return read_config_file(path, limits=limits)


def _skipped_entries(result: dict[str, Any], content: bytes, limits: LoadLimits) -> list[dict[str, Any]]:
    """The entries of a scanned manifest that are not Kubernetes objects (a null List item), named per entry."""
    from sv_env_config_verification.loading import parse_config

    if result["error"] or result["kind"] != "kubernetes":
        return []
    return [entry.to_dict() for entry in parse_config("kubernetes", content, limits=limits).skipped]


def scan_oracle(*, use_cache: bool) -> Oracle:
    """E2's oracle as evals build it (persistent cache per configs/envs/e2.yaml), or one with no cache at all."""
    from sv_env_config_verification.oracle import Oracle
    from sv_shared.registry import get_environment

    if not use_cache:
        return Oracle()
    return cast("ConfigVerifier", get_environment("e2").verifier).oracle


def cmd_scan(args: argparse.Namespace) -> int:
    from sv_env_config_verification.config_model import ConfigParseError

    oracle = scan_oracle(use_cache=not args.no_cache)
    configs: list[tuple[str, bytes]] = []
    refused: dict[int, dict[str, Any]] = {}
    for index, path in enumerate(args.files):
        try:
            configs.append((path, _read(path, oracle.limits)))
        except ConfigParseError as error:
            refused[index] = _refusal(path, error.reason, str(error))
        except ValueError as error:
            refused[index] = _refusal(path, "not_a_file", str(error))
        except OSError as error:
            refused[index] = _refusal(path, "unreadable", f"{path}: {error.strerror or error}")
    scanned = []
    for (_, content), result in zip(configs, oracle.scan_many(configs), strict=True):
        row = result.to_dict()
        row["skipped"] = _skipped_entries(row, content, oracle.limits)
        scanned.append(row)
    rows = iter(scanned)
    results = [refused[index] if index in refused else next(rows) for index in range(len(args.files))]
    status = {
        name: {"available": st.available, "version": st.version, "reason": st.reason}
        for name, st in oracle.tool_status().items()
    }
    cache = {
        "persistent": oracle.cache is not None,
        "hits": oracle.stats.cache_hits,
        "misses": oracle.stats.cache_misses,
    }
    print(json_text({"tools": status, "cache": cache, "results": results}, indent=2, default=str))
    return 1 if any(result["error"] for result in results) else 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `secverify scan` to the CLI's sub-commands."""
    scan = sub.add_parser("scan", help="normalized findings of every scanner on Kubernetes/Terraform files (JSON)")
    scan.add_argument("files", nargs="+", help="YAML manifests, .tf or .tf.json files")
    scan.add_argument(
        "--no-cache",
        action="store_true",
        help="scan every file afresh, bypassing the persistent scanner cache (outputs/cache/scanners.sqlite)",
    )
    scan.set_defaults(func=cmd_scan)

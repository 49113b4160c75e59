"""Running the scanner tool environment (.venv-tools) from the project's own environment.

checkov and semgrep pin packages the project cannot share (packaging<24, opentelemetry), so they live in a second
virtual environment and are only ever run as subprocesses (or through the long-lived worker in toolworker.py).
Everything here exists so that a scanner can never hang or pollute the caller:

- a clean, whitelisted environment (no proxies, no user config, HOME under outputs/, version checks and telemetry off:
  semgrep otherwise waits ≈ 100 s on a version check when offline);
- a hard timeout that kills the tool's whole process group;
- one `ScannerError` naming the tool for every failure (missing binary, crash, timeout, unreadable output);
- helpers the config scanners share: writing given files into a private directory (one sub-directory per file, so
  no tool ever sees two files as one module), screening hostile input (huge files, YAML alias bombs) before a tool
  sees it, and mapping a reported line back to the Kubernetes object or Terraform block that holds it.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from functools import cache, lru_cache
from itertools import accumulate
from pathlib import Path

from sv_shared.config import outputs_dir, project_root

TOOLS_VENV_ENV = "SECVERIFY_TOOLS_VENV"
# Files larger than this are not handed to any scanner (semgrep's own default limit is 1 MB too).
MAX_CONFIG_BYTES = 1_000_000
# A manifest whose YAML aliases expand to more nodes than this is a "billion laughs" bomb: checkov expands it in
# memory (8.5 GB and still running after 120 s, measured here), so it is rejected before any tool sees it.
MAX_YAML_NODES = 200_000

ConfigKind = str  # "kubernetes" | "terraform"
_TF_SUFFIXES = (".tf", ".tf.json", ".hcl", ".tfvars")
_K8S_SUFFIXES = (".yaml", ".yml", ".json")
_TF_SNIFF = re.compile(r"^\s*(resource|data|module|provider|variable|output|locals|terraform)\b[^\n]*\{", re.MULTILINE)
_SAFE_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
_BRACKETS = re.compile(r"[^\[\]{}]+")
# Deeper flow nesting than this is rejected before parsing (libyaml's composer recurses in C).
MAX_FLOW_DEPTH = 1_000


class ScannerError(RuntimeError):
    """A scanner failed on a batch (not started, crashed, timed out, or wrote output we cannot read)."""

    def __init__(self, tool: str, message: str, *, timed_out: bool = False) -> None:
        super().__init__(f"{tool}: {message}")
        self.tool = tool
        self.timed_out = timed_out


def tools_venv() -> Path:
    """The scanner environment: $SECVERIFY_TOOLS_VENV, else <project root>/.venv-tools (built by `make setup`)."""
    if configured := os.environ.get(TOOLS_VENV_ENV):
        return Path(configured).expanduser().resolve()
    return project_root() / ".venv-tools"


def tools_python() -> Path:
    """The tools environment's interpreter; raises ScannerError when the environment has not been built."""
    python = tools_venv() / "bin" / "python"
    if not python.exists():
        raise ScannerError("tools-venv", f"{python} does not exist; run `make setup` (or set ${TOOLS_VENV_ENV})")
    return python


def tool_binary(name: str) -> Path | None:
    """An executable from the tools environment, else from PATH (kube-linter can only come from there), else None."""
    candidate = tools_venv() / "bin" / name
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return candidate
    found = shutil.which(name)
    return Path(found) if found else None


@cache
def tool_package_version(distribution: str) -> str | None:
    """A package's version in the tools environment, read from its dist-info (no subprocess, nothing to hang)."""
    wanted = distribution.lower().replace("-", "_")
    for site in sorted((tools_venv() / "lib").glob("python*/site-packages")):
        for info in site.glob("*.dist-info"):
            name, _, version = info.name[: -len(".dist-info")].rpartition("-")
            if name.lower().replace("-", "_") == wanted:
                return version
    return None


def tool_home() -> Path:
    """HOME (and XDG dirs) for tools: a private folder under outputs/, never the user's ~/.semgrep or ~/.cache."""
    home = outputs_dir() / "tools" / "home"
    home.mkdir(parents=True, exist_ok=True)
    return home


def tool_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A whitelisted environment: nothing inherited but PATH basics and TMPDIR, so no proxy or user config leaks in."""
    home = tool_home()
    env = {
        "PATH": os.pathsep.join([str(tools_venv() / "bin"), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        # semgrep: the version check blocks ≈ 100 s offline; metrics would try the network.
        "SEMGREP_ENABLE_VERSION_CHECK": "0",
        "SEMGREP_SEND_METRICS": "off",
        # trivy: never phone home, never try to download the checks bundle (embedded checks are used).
        "TRIVY_DISABLE_TELEMETRY": "true",
        "TRIVY_SKIP_VERSION_CHECK": "true",
        "TRIVY_SKIP_CHECK_UPDATE": "true",
        "TRIVY_NO_PROGRESS": "true",
        # checkov: no forked pool inside the worker (forks with threads, orphans on kill); quiet logs.
        "CHECKOV_PARALLELIZATION_TYPE": "none",
        "LOG_LEVEL": "ERROR",
    }
    if tmpdir := os.environ.get("TMPDIR"):
        env["TMPDIR"] = tmpdir
    env.update(extra or {})
    return env


def kill_process_group(proc: subprocess.Popen) -> None:
    """SIGKILL a child started with start_new_session=True and everything it spawned."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


def run_tool(
    args: Sequence[str | os.PathLike[str]],
    *,
    timeout_s: float,
    input: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
    tool: str | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a tool in its own process group with a clean environment; never waits longer than timeout_s.

    The exit status is the caller's to interpret (scanners use it for "found something"); failing to start and
    running past the timeout raise ScannerError naming the tool.
    """
    name = tool or Path(os.fspath(args[0])).name
    argv = [os.fspath(arg) for arg in args]
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=tool_env(extra_env),
            start_new_session=True,
            text=True,
            encoding="utf-8",
            errors="replace",
        )
    except OSError as exc:
        raise ScannerError(name, f"could not start {argv[0]}: {exc}") from exc
    try:
        stdout, stderr = proc.communicate(input, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        kill_process_group(proc)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.communicate(timeout=5)
        raise ScannerError(name, f"timed out after {timeout_s:g} s (process group killed)", timed_out=True) from None
    except BaseException:
        kill_process_group(proc)
        proc.wait()
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)


def stderr_tail(text: str | None, limit: int = 600) -> str:
    """The end of a tool's stderr, one line, for error messages."""
    tail = (text or "").strip()[-limit:]
    return " ".join(tail.split())


_SEVERITY_WORDS = {
    "critical": "high",
    "high": "high",
    "error": "high",
    "medium": "medium",
    "moderate": "medium",
    "warning": "medium",
    "low": "low",
    "info": "low",
    "note": "low",
    "unknown": "low",
}


def normalize_severity(value: object, default: str = "medium") -> str:
    """A tool's severity word as low/medium/high: CRITICAL/HIGH/ERROR -> high, MEDIUM/MODERATE/WARNING -> medium,
    LOW/INFO/NOTE/UNKNOWN -> low; anything else (or nothing) -> default."""
    if value is None:
        return default
    return _SEVERITY_WORDS.get(str(getattr(value, "name", value)).strip().lower(), default)


# ---------------------------------------------------------------------------------------------------------------------
# Config files handed to scanners (E2)
# ---------------------------------------------------------------------------------------------------------------------


def config_kind(name: str, content: str) -> ConfigKind:
    """Either "terraform" or "kubernetes": by suffix, else by sniffing HCL blocks (YAML is the default)."""
    lowered = name.lower()
    if lowered.endswith(_TF_SUFFIXES):
        return "terraform"
    if lowered.endswith(_K8S_SUFFIXES):
        return "kubernetes"
    return "terraform" if _TF_SNIFF.search(content[:20_000]) else "kubernetes"


def safe_file_name(name: str, kind: ConfigKind) -> str:
    """A basename tools will treat as the right language: no directories, no dot-files, the kind's suffix."""
    base = _SAFE_CHARS.sub("_", Path(name.replace("\\", "/")).name).strip("_")[-100:] or "config"
    if base.startswith("."):
        base = "f" + base
    suffixes = _TF_SUFFIXES if kind == "terraform" else _K8S_SUFFIXES
    if not base.lower().endswith(suffixes):
        base += ".tf" if kind == "terraform" else ".yaml"
    return base


def write_configs(files: Mapping[str, str], directory: Path) -> dict[str, str]:
    """Write each file to <directory>/<index>/<safe name>; returns {relative path: given name}.

    One sub-directory per file keeps scans independent: trivy and checkov treat all .tf files of a directory as one
    module (a bucket in one file was "fixed" by a public-access block in another when they shared a directory).
    Non-UTF-8 content that arrived as surrogate escapes is written back as the original bytes.
    """
    layout: dict[str, str] = {}
    for index, (name, content) in enumerate(files.items()):
        relative = f"{index:05d}/{safe_file_name(name, config_kind(name, content))}"
        target = directory / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            data = content.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            data = content.encode("utf-8", "replace")
        target.write_bytes(data)
        layout[relative] = name
    return layout


def name_for_path(path: str, layout: Mapping[str, str]) -> str | None:
    """The given name of a file a tool reported, whatever prefix the tool put before <index>/<safe name>."""
    parts = Path(path.replace("\\", "/")).parts
    for size in (2, 1):
        if len(parts) >= size:
            key = "/".join(parts[-2:]) if size == 2 else parts[-1]
            if key in layout:
                return layout[key]
    for part in parts:
        if part.isdigit():
            for relative, name in layout.items():
                if relative.startswith(part + "/"):
                    return name
    return None


def _flow_depth(content: str) -> int:
    """An upper bound on flow-collection nesting ([ and { inside strings count too), in one linear pass."""
    brackets = _BRACKETS.sub("", content)
    if not brackets:
        return 0
    return max(accumulate(1 if char in "[{" else -1 for char in brackets))


def _yaml_node_count(content: str, limit: int) -> tuple[int, int]:
    """(nodes after alias expansion, distinct nodes): composed, never constructed, so a bomb costs nothing; the
    expanded count stops at limit.

    libyaml's composer is C recursion (a segfault at ~100 k nested brackets, measured), so callers bound the flow
    depth first; block nesting is bounded by the file size limit (depth d needs ~d²/2 bytes of indentation).
    """
    yaml = importlib.import_module("yaml")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    memo: dict[int, int] = {}

    def size(node: object) -> int:
        key = id(node)
        if key in memo:
            return memo[key]
        value = getattr(node, "value", None)
        total = 1
        if isinstance(value, list):
            for child in value:
                total += sum(size(part) for part in child) if isinstance(child, tuple) else size(child)
                if total > limit:
                    break
        memo[key] = total
        return total

    count = 0
    for document in yaml.compose_all(content, Loader=loader):
        count += size(document) if document is not None else 0
        if count > limit:
            break
    return count, len(memo)


@lru_cache(maxsize=2048)
def _yaml_rejection(content: str, max_yaml_nodes: int) -> str | None:
    if _flow_depth(content) > MAX_FLOW_DEPTH:
        return f"YAML nests more than {MAX_FLOW_DEPTH} flow collections"
    try:
        expanded, distinct = _yaml_node_count(content, max_yaml_nodes)
    except RecursionError:
        return "YAML nesting is too deep to scan"
    except Exception:  # unparsable YAML goes to the tools, which report their own parse errors
        return None
    # A big but alias-free manifest is not a bomb: only expansion far beyond what the file spells out is.
    if expanded > max_yaml_nodes and expanded > 4 * distinct:
        return f"YAML aliases expand to more than {max_yaml_nodes} nodes (alias bomb)"
    return None


def screen_configs(
    files: Mapping[str, str], *, max_bytes: int = MAX_CONFIG_BYTES, max_yaml_nodes: int = MAX_YAML_NODES
) -> tuple[dict[str, str], dict[str, str]]:
    """Split files into (safe to scan, {name: why rejected}): too large, YAML alias bombs, absurd nesting.

    YAML that does not parse is kept: the tools report their own parse errors, and a broken manifest is data.
    """
    accepted: dict[str, str] = {}
    rejected: dict[str, str] = {}
    for name, content in files.items():
        size = len(content.encode("utf-8", "surrogatepass"))
        if size > max_bytes:
            rejected[name] = f"file is {size} bytes, larger than the {max_bytes}-byte scanner limit"
            continue
        if config_kind(name, content) == "kubernetes" and (reason := _yaml_rejection(content, max_yaml_nodes)):
            rejected[name] = reason
            continue
        accepted[name] = content
    return accepted, rejected


_K8S_DOC_SEPARATOR = re.compile(r"^(---|\.\.\.)\s*(#.*)?$")
_K8S_KIND = re.compile(r"""^kind:\s*["']?([A-Za-z0-9]+)["']?\s*(#.*)?$""")
_K8S_NAME = re.compile(r"""^\s+(name|generateName):\s*["']?([^"'#\s]+)["']?""")
_K8S_INLINE_NAME = re.compile(r"""^metadata:\s*\{.*?\bname:\s*["']?([^"',}\s]+)""")
_TF_BLOCK = re.compile(r'^(resource|data)\s+"([^"]+)"\s+"([^"]+)"')
_TF_MODULE = re.compile(r'^module\s+"([^"]+)"')


def _k8s_resource(lines: list[str], line: int) -> str | None:
    """ "Kind/name" of the document holding `line`; unnamed objects are "Kind/#<index of the object in the file>",
    as kubernetes_parsing.kubernetes_resource_name names them."""
    start, end, index = 0, len(lines), 0
    seen_content = False
    for number, text in enumerate(lines):
        if _K8S_DOC_SEPARATOR.match(text):
            if number >= line - 1:
                end = number
                break
            start = number + 1
            index += int(seen_content)
            seen_content = False
        elif text.strip() and not text.lstrip().startswith("#"):
            seen_content = True
    kind = name = None
    in_metadata = False
    child_indent: int | None = None
    for text in lines[start:end]:
        if match := _K8S_KIND.match(text):
            kind = match.group(1)
        if text.startswith("metadata:"):
            in_metadata = True
            if inline := _K8S_INLINE_NAME.search(text):  # metadata: {name: web, namespace: shop}
                name = inline.group(1)
            continue
        if not in_metadata or not text.strip() or text.lstrip().startswith("#"):
            continue
        indent = len(text) - len(text.lstrip())
        if indent == 0:
            in_metadata = False
            continue
        if child_indent is None:
            child_indent = indent
        match = _K8S_NAME.match(text) if indent == child_indent else None
        if match and (match.group(1) == "name" or name is None):
            name = match.group(2)
    if kind is None:
        return None
    return f"{kind}/{name if name else f'#{index}'}"


def _tf_resource(lines: list[str], line: int) -> str | None:
    for text in reversed(lines[: max(line, 1)]):
        if match := _TF_BLOCK.match(text):
            block, type_, name = match.groups()
            return f"{type_}.{name}" if block == "resource" else f"data.{type_}.{name}"
        if match := _TF_MODULE.match(text):
            return f"module.{match.group(1)}"
    return None


def resource_at_line(content: str, line: int | None, kind: ConfigKind) -> str | None:
    """The object a line belongs to: "Deployment/web" (multi-document YAML) or "aws_s3_bucket.logs" (Terraform).

    Regex-based on purpose: it must be safe on hostile input (no YAML parsing, so no alias expansion).
    """
    if line is None or line < 1:
        return None
    lines = content.splitlines()
    name = _tf_resource(lines, line) if kind == "terraform" else _k8s_resource(lines, line)
    # Non-UTF-8 bytes arrive as lone surrogates; a name must survive JSON and SQLite, so they become U+FFFD.
    return "".join("\ufffd" if "\ud800" <= char <= "\udfff" else char for char in name) if name else None


def canonical_lookup(table_module: str, tool: str, rule_id: str, fallback: Mapping[str, str]) -> str | None:
    """The canonical id from the environment's mapping table (imported lazily: it imports the adapters' RULE_MAPs),
    falling back to the adapter's own RULE_MAP while that table does not exist."""
    module = sys.modules.get(table_module)
    if module is None:
        try:
            spec = importlib.util.find_spec(table_module)
        except ModuleNotFoundError:
            spec = None
        module = importlib.import_module(table_module) if spec is not None else None
    lookup = getattr(module, "canonical_id_for", None)
    if callable(lookup):
        return lookup(tool, rule_id)
    return fallback.get(rule_id)

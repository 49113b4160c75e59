"""Run model-written code (patched projects and their tests) in a bubblewrap + cgroup v1 sandbox.

Why this shape (see NOTES.md, "Scanners and sandboxes"): an unsandboxed hostile test once wrote to /etc and reached a
public address, so untrusted code never runs outside this module, and there is no fallback. Each run gets:

* bubblewrap namespaces: no network (a private loopback only, so the host's 127.0.0.1 is unreachable too), own pid /
  ipc / uts / cgroup namespaces, a new session, and death with the caller;
* a read-only system (/usr and the /bin, /lib* links, the Python installation and venv that run the code), a synthetic
  minimal /etc, private tmpfs /tmp and /dev/shm, a minimal /dev and a fresh /proc, the root itself remounted read-only;
  the work dir, bound at ``/workspace``, is the only writable place that outlives the run;
* a non-root user: bwrap needs root to build the mounts, then ``setpriv`` drops to uid/gid 65534 with an empty
  capability bounding set before the command runs, so hostile code cannot remount, mknod or touch root-owned files;
* an empty environment plus what the caller passes (never the caller's own environment: API keys stay outside);
* limits: a per-run cgroup v1 for memory (memory + memsw) and pids (RLIMIT_NPROC does nothing as root), RLIMIT_CPU,
  RLIMIT_FSIZE, RLIMIT_NOFILE and RLIMIT_CORE=0 via ``prlimit``, a wall-clock timeout, and an output cap enforced
  while reading; on any exit every process left in the run's cgroup is killed and the cgroup removed. The work dir
  has no quota of its own: bind it from a scratch_filesystem() to cap it.

The launch chain is ``sh`` (joins the cgroups, so nothing runs outside them) -> ``prlimit`` -> ``bwrap`` -> ``sh``
(inside, marks that the set-up succeeded) -> ``setpriv`` -> the command; it avoids ``preexec_fn``, which is unsafe
in threaded callers such as Dagster. Callers must treat SandboxResult.killed_reason (any value) as a failed run.

Sandbox.run() runs one command to its end. Sandbox.start() returns a SandboxRun for callers that run several
sandboxes together (E3's worker and test process): it can list the processes in its cgroup (what is left after a
command, seen by the kernel, not by the sandboxed code) and be stopped from another thread; SandboxMounts adds host
directories (read-write, read-only, or at /tmp to share it) and private tmpfs mounts, and pass_fds hands the command
a pipe or socket to a trusted peer. scratch.scratch_filesystem() gives such runs a size- and inode-capped tmpfs on the
host to bind their writable directories from: the disk quota (a full one fails writes with ENOSPC; scratch_usage()
tells). The limits, results and status are sandbox_types.py's; the per-run cgroups cgroups.py's.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from sv_shared.execution.cgroups import RunCgroups, cgroup_v1_mounts, probe_cgroup, remove_stale_cgroups
from sv_shared.execution.sandbox_types import (
    CGROUP_NAME,
    MIB,
    SANDBOX_GID,
    SANDBOX_UID,
    SANDBOX_WORKDIR,
    KilledReason,
    SandboxError,
    SandboxLimits,
    SandboxResult,
    SandboxStatus,
    SandboxUnavailable,
)
from sv_shared.execution.scratch import probe_scratch, remove_stale_scratch

PYTEST_INI_PATH = "/opt/secverify/pytest.ini"
#: Pristine pytest configuration used instead of anything in the project (pytest.ini, tox.ini, pyproject, setup.cfg).
PYTEST_INI = "[pytest]\naddopts =\npython_files = test_*.py *_test.py\n"

_SH = "/bin/sh"
# Joins the run's cgroups before anything else runs, then execs the rest of the chain.
_JOIN_CGROUPS = 'for f in "$@"; do [ "$f" = -- ] && break; echo $$ >"$f" || exit 125; shift; done; shift; exec "$@"'
# Runs as root inside the finished sandbox, just before dropping privileges: its mark on the start pipe proves the
# set-up succeeded (bwrap reports its child's pid before mounting, so that cannot). The command inherits the pipe's
# write end but cannot reopen it, and what it writes comes after the mark: it can neither forge nor erase a start.
_MARK_STARTED = 'printf S >/proc/self/fd/"$1" || exit 125; shift; exec "$@"'
_SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PIPE_DATA_MAX = 60 * 1024  # below the pipe buffer, so writing the data before the child starts cannot block


def _system_binds() -> list[str]:
    """bwrap arguments for the read-only system: /usr, and /bin, /lib* as links (merged /usr) or read-only binds."""
    args = ["--ro-bind", "/usr", "/usr"]
    for path in _SYSTEM_LINKS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def _smoke_test(bwrap: str) -> str | None:
    """Start a trivial sandbox with the namespaces a run uses; None when it works, else bwrap's complaint."""
    argv = [bwrap, "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
            "--unshare-cgroup-try", "--new-session", *_system_binds(), "--proc", "/proc", "--dev", "/dev",
            "--perms", "1777", "--size", str(MIB), "--tmpfs", "/tmp", "--remount-ro", "/",
            "--", "/usr/bin/setpriv", f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_GID}", "--clear-groups",
            "--bounding-set=-all", "--inh-caps=-all", "--", "/usr/bin/true"]  # fmt: skip
    try:
        done = subprocess.run(argv, capture_output=True, timeout=20, env={}, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not start a sandbox: {exc}"
    if done.returncode != 0:
        complaint = done.stderr.decode(errors="replace").strip() or f"exit status {done.returncode}"
        return f"bwrap could not start a sandbox: {complaint}"
    return None


@functools.lru_cache(maxsize=1)
def _cached_status() -> SandboxStatus:
    missing: list[str] = []
    notes: list[str] = []
    if not sys.platform.startswith("linux"):
        missing.append(f"Linux is required (this is {sys.platform})")
    if os.geteuid() != 0:
        missing.append("root is required (to create per-run cgroups and to drop the sandbox to uid 65534)")
    bwrap = shutil.which("bwrap")
    version: str | None = None
    if bwrap is None:
        missing.append(
            "bwrap not found on PATH: install the Debian package `bubblewrap` (apt-get install -y bubblewrap)"
        )
    else:
        try:
            version = subprocess.run(
                [bwrap, "--version"], capture_output=True, text=True, check=False, timeout=10
            ).stdout
            version = version.strip() or None
        except (OSError, subprocess.TimeoutExpired) as exc:
            missing.append(f"bwrap at {bwrap} does not run: {exc}")
    for tool in ("/usr/bin/setpriv", "/usr/bin/prlimit", _SH):
        if not os.access(tool, os.X_OK):
            missing.append(f"{tool} not found (Debian packages `util-linux` / `dash`)")
    mounts = cgroup_v1_mounts()
    memory_root, pids_root = mounts.get("memory"), mounts.get("pids")
    if memory_root is None:
        missing.append("cgroup v1 memory controller is not mounted (expected at /sys/fs/cgroup/memory)")
    if pids_root is None:
        missing.append("cgroup v1 pids controller is not mounted (expected at /sys/fs/cgroup/pids)")
    memsw = memory_root is not None and (memory_root / "memory.memsw.limit_in_bytes").exists()
    if memory_root is not None and not memsw:
        notes.append("no memory.memsw (swap accounting off): swap is not limited")
    if not missing:
        for root, name in ((memory_root, "memory"), (pids_root, "pids")):
            assert root is not None
            problem = probe_cgroup(root, name)
            if problem:
                missing.append(problem)
    if not missing:
        for root in (memory_root, pids_root):
            assert root is not None
            remove_stale_cgroups(root / CGROUP_NAME)
    if not missing and bwrap is not None:
        problem = _smoke_test(bwrap)
        if problem:
            missing.append(problem)
    if not missing:
        remove_stale_scratch()
        problem = probe_scratch()
        if problem:
            missing.append(problem)
    return SandboxStatus(
        available=not missing,
        missing=tuple(missing),
        bwrap=bwrap,
        bwrap_version=version,
        memory_cgroup=memory_root / CGROUP_NAME if memory_root else None,
        pids_cgroup=pids_root / CGROUP_NAME if pids_root else None,
        memsw=memsw,
        notes=tuple(notes),
    )


def sandbox_status(*, refresh: bool = False) -> SandboxStatus:
    """Check (once per process unless refresh) that bwrap, setpriv, prlimit, root and cgroup v1 work here."""
    if refresh:
        _cached_status.cache_clear()
    return _cached_status()


@functools.lru_cache(maxsize=16)
def _python_prefixes(python: str) -> tuple[str, ...]:
    """The installation directories an interpreter needs (venv prefix and base prefix), to bind read-only."""
    if Path(python).absolute() == Path(sys.executable).absolute():
        prefixes = [sys.prefix, sys.base_prefix]
    else:
        code = "import sys; print(sys.prefix); print(sys.base_prefix)"
        out = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True, check=True, timeout=30, env={})
        prefixes = out.stdout.split()
    return tuple(dict.fromkeys(str(Path(p).resolve()) for p in prefixes))


def _is_under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _check_relative(path: str) -> PurePosixPath:
    rel = PurePosixPath(path)
    if rel.is_absolute() or not rel.parts or any(part in ("", ".", "..") for part in rel.parts):
        raise ValueError(f"not a plain relative path inside the work dir: {path!r}")
    return rel


def _no_symlinks(root: Path, rel: PurePosixPath) -> Path:
    """root/rel with every component checked not to be a symlink (so a bind cannot be redirected to the host)."""
    current = root
    for part in rel.parts:
        current = current / part
        if current.is_symlink():
            raise ValueError(f"{rel} crosses a symlink at {current}; refusing to bind it")
    return current


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    """Hand the (disposable) work dir to the sandbox user so the sandboxed code can write there."""
    os.lchown(root, uid, gid)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in (*dirnames, *filenames):
            os.lchown(os.path.join(dirpath, name), uid, gid)


def _data_pipe(data: bytes, pass_fds: list[int], close_after: list[int]) -> int:
    """A pipe already holding data (for bwrap's --ro-bind-data); returns the read end to pass to bwrap."""
    if len(data) > _PIPE_DATA_MAX:
        raise ValueError(f"sandbox data file too large ({len(data)} bytes > {_PIPE_DATA_MAX})")
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, data)
    finally:
        os.close(write_fd)
    pass_fds.append(read_fd)
    close_after.append(read_fd)
    return read_fd


def _etc_files(uid: int, gid: int) -> dict[str, bytes]:
    """A synthetic minimal /etc: no host users, no host names, nothing secret."""
    return {
        "/etc/passwd": (
            f"root:x:0:0:root:/root:/bin/sh\nsandbox:x:{uid}:{gid}:sandbox:{SANDBOX_WORKDIR}:/bin/sh\n".encode()
        ),
        "/etc/group": f"root:x:0:\nsandbox:x:{gid}:\n".encode(),
        "/etc/hosts": b"127.0.0.1 localhost sandbox\n::1 localhost ip6-localhost\n",
        "/etc/nsswitch.conf": b"passwd: files\ngroup: files\nhosts: files\n",
    }


@dataclass
class _Streams:
    out: bytearray = field(default_factory=bytearray)
    err: bytearray = field(default_factory=bytearray)
    seen_out: int = 0
    seen_err: int = 0
    overflow: bool = False
    timed_out: bool = False
    pids_killed: bool = False
    stopped: bool = False

    @property
    def stop(self) -> bool:
        return self.overflow or self.timed_out or self.pids_killed or self.stopped


_POLL_S = 0.05


def _pump(
    proc: subprocess.Popen[bytes],
    stdin: bytes | None,
    deadline: float,
    limits: SandboxLimits,
    pids_hit: Callable[[], bool],
    stop_requested: threading.Event,
) -> _Streams:
    """Read both streams (keeping max_output_bytes each) and feed stdin until EOF, overflow, a refused fork (when
    kill_on_pids_limit), the deadline or the caller's stop request; then wait for the process under the same rules."""
    streams = _Streams()
    next_check = time.monotonic() + _POLL_S

    def must_stop() -> bool:
        nonlocal next_check
        now = time.monotonic()
        if stop_requested.is_set():
            streams.stopped = True
        elif now >= deadline:
            streams.timed_out = True
        elif limits.kill_on_pids_limit and now >= next_check:
            next_check = now + _POLL_S
            streams.pids_killed = pids_hit()
        return streams.stop

    selector = selectors.DefaultSelector()
    assert proc.stdout is not None and proc.stderr is not None
    for pipe in (proc.stdout, proc.stderr):
        os.set_blocking(pipe.fileno(), False)
        selector.register(pipe, selectors.EVENT_READ)
    view = memoryview(stdin or b"")
    sent = 0
    if proc.stdin is not None:
        os.set_blocking(proc.stdin.fileno(), False)
        if view:
            selector.register(proc.stdin, selectors.EVENT_WRITE)
        else:
            proc.stdin.close()
    try:
        while selector.get_map():
            if must_stop():
                return streams
            for key, _ in selector.select(max(0.0, min(deadline - time.monotonic(), _POLL_S))):
                pipe = key.fileobj
                if pipe is proc.stdin:
                    try:
                        sent += os.write(proc.stdin.fileno(), view[sent : sent + 65536])
                    except BlockingIOError:
                        continue
                    except BrokenPipeError:  # the command stopped reading: drop the rest
                        sent = len(view)
                    if sent >= len(view):
                        selector.unregister(proc.stdin)
                        proc.stdin.close()
                    continue
                try:
                    chunk = os.read(key.fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    selector.unregister(pipe)
                    continue
                is_out = pipe is proc.stdout
                buffer = streams.out if is_out else streams.err
                room = limits.max_output_bytes - len(buffer)
                if room > 0:
                    buffer += chunk[:room]
                if is_out:
                    streams.seen_out += len(chunk)
                    seen = streams.seen_out
                else:
                    streams.seen_err += len(chunk)
                    seen = streams.seen_err
                if seen > limits.kill_output_bytes:
                    streams.overflow = True
                    return streams
    finally:
        selector.close()
    while proc.poll() is None and not must_stop():
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=max(0.0, min(deadline - time.monotonic(), _POLL_S)))
    return streams


@dataclass(frozen=True)
class SandboxMounts:
    """Extra mounts of one run: sandbox path -> host directory bound read-write (``/tmp`` here replaces the private
    tmpfs, so two sandboxes can share it) or read-only, private size-limited tmpfs mount points, and paths inside the
    work dir (relative, their mount point already there) overlaid read-only with a host directory or file that only
    this run sees (another sandbox sharing the work dir sees the empty mount point)."""

    binds: Mapping[str, Path] = field(default_factory=dict)
    ro_dirs: Mapping[str, Path] = field(default_factory=dict)
    tmpfs: Sequence[str] = ()
    workspace_ro: Mapping[str, Path] = field(default_factory=dict)


class SandboxRun:
    """A started sandboxed command (Sandbox.start): wait() pumps its output and ends the run; stop() (from another
    thread) asks it to end early without counting as a limit; pids() lists the processes in its cgroup now."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        cgroups: RunCgroups,
        limits: SandboxLimits,
        stdin: bytes | None,
        started: float,
        status_r: int,
        to_close: tuple[int, ...],
    ) -> None:
        self._proc = proc
        self._cgroups = cgroups
        self._limits = limits
        self._stdin = stdin
        self._started = started
        self._status_r = status_r
        self._to_close = to_close
        self._stop = threading.Event()

    def pids(self) -> set[int]:
        """Host pids of every process in the run's pids cgroup (empty once the run has ended)."""
        return self._cgroups.pids_now()

    def stop(self) -> None:
        """End the run now (thread-safe): wait() then returns without naming a limit."""
        self._stop.set()
        if self._proc.poll() is None:  # once reaped, its process group id may belong to someone else
            _killpg(self._proc)
        self._cgroups.kill_all()

    def wait(self) -> SandboxResult:
        """Pump output until the command ends, a limit is hit or stop() is called; kill what is left, remove the
        cgroups and return the result. Raises SandboxError when the sandbox itself did not start."""
        proc, cgroups, limits = self._proc, self._cgroups, self._limits
        try:
            streams = _pump(
                proc,
                self._stdin,
                self._started + limits.timeout_s,
                limits,
                lambda: cgroups.pids_refused() > 0,
                self._stop,
            )
            if streams.stop:
                _killpg(proc)
            cgroups.kill_all()
            returncode = proc.wait()
            wall_s = time.monotonic() - self._started
            # A run stopped while the sandbox was still setting up never reports that it started: it was stopped,
            # not broken (stop() returns without naming a limit, whenever it comes).
            if not _read_all(self._status_r).startswith("S") and not self._stop.is_set():
                detail = bytes(streams.err).decode(errors="replace").strip()
                raise SandboxError(f"the sandbox did not start (exit status {returncode}): {detail}")
            oom, refused, peak = cgroups.oom_kills(), cgroups.pids_refused(), cgroups.peak_memory()
        finally:
            if proc.poll() is None:
                _killpg(proc)
                proc.wait()
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                if pipe is not None and not pipe.closed:
                    pipe.close()
            cgroups.kill_all()
            cgroups.remove()
            # Each descriptor exactly once: a second close could hit a descriptor another thread just opened.
            for fd in self._to_close:
                with contextlib.suppress(OSError):
                    os.close(fd)
        reason: KilledReason | None = None
        if streams.overflow:
            reason = "output"
        elif oom:
            reason = "memory"
        elif refused or streams.pids_killed:
            reason = "pids"
        elif streams.timed_out:
            reason = "timeout"
        elif returncode in (128 + signal.SIGXCPU, 128 + signal.SIGKILL) and not streams.stopped:
            reason = "cpu"  # SIGXCPU at the soft RLIMIT_CPU, SIGKILL at the hard one (or a SIGKILL from inside)
        return SandboxResult(
            returncode=returncode,
            stdout=bytes(streams.out).decode(errors="replace"),
            stderr=bytes(streams.err).decode(errors="replace"),
            stdout_truncated=streams.seen_out > len(streams.out),
            stderr_truncated=streams.seen_err > len(streams.err),
            timed_out=streams.timed_out,
            killed_reason=reason,
            wall_s=wall_s,
            peak_memory_bytes=peak,
        )


class Sandbox:
    """A configured sandbox: which interpreter (and so which installation) the sandboxed code may use.

    python: host path of the interpreter commands may call (default: the one running this code). Its venv prefix and
    base installation are bound read-only at their own paths, so ``sandbox.python`` works as argv[0] inside.
    extra_ro_binds: more host paths to expose read-only at the same path (never secrets).
    """

    def __init__(
        self,
        *,
        python: str | os.PathLike[str] | None = None,
        extra_ro_binds: Sequence[str | os.PathLike[str]] = (),
        uid: int = SANDBOX_UID,
        gid: int = SANDBOX_GID,
    ) -> None:
        self.python = str(Path(python).absolute()) if python is not None else sys.executable
        self.uid = uid
        self.gid = gid
        self._extra_ro_binds = tuple(str(Path(p).resolve()) for p in extra_ro_binds)
        if uid == 0 or gid == 0:
            raise ValueError("the sandbox user must not be root")

    @functools.cached_property
    def ro_binds(self) -> tuple[str, ...]:
        """Host paths bound read-only at the same path (besides the system), minus those already covered."""
        binds: list[str] = []
        for path in (*_python_prefixes(self.python), *self._extra_ro_binds):
            if _is_under(path, "/usr") or any(_is_under(path, b) for b in binds):
                continue
            if _is_under(SANDBOX_WORKDIR, path) or _is_under(path, SANDBOX_WORKDIR) or path in ("/", "/tmp"):
                raise ValueError(f"read-only bind {path} collides with {SANDBOX_WORKDIR} or / or /tmp in the sandbox")
            binds = [b for b in binds if not _is_under(b, path)] + [path]
        return tuple(binds)

    def _check_workdir(self, workdir: Path) -> Path:
        """The resolved workdir, refused when it holds system paths or the caller's cwd (it gets chowned and
        exposed read-write, so it must be a disposable copy)."""
        workdir = Path(workdir).resolve(strict=True)
        if not workdir.is_dir():
            raise ValueError(f"workdir {workdir} is not a directory")
        for system in (*self.ro_binds, "/usr", "/etc", "/tmp", "/root", "/home", "/var", os.getcwd()):
            if _is_under(system, str(workdir)):
                raise ValueError(f"workdir {workdir} contains {system}; pass a disposable project copy")
        return workdir

    def _bwrap_args(
        self,
        workdir: Path,
        limits: SandboxLimits,
        env: Mapping[str, str],
        readonly_paths: Sequence[PurePosixPath],
        data_fds: Mapping[str, tuple[int, str]],
        mounts: SandboxMounts,
    ) -> list[str]:
        args = ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                "--hostname", "sandbox", "--die-with-parent", "--new-session", "--clearenv"]  # fmt: skip
        for name, value in env.items():
            args += ["--setenv", name, value]
        args += _system_binds()
        args += ["--proc", "/proc", "--dev", "/dev"]
        # tmpfs mounts first: nothing may be bound under /tmp before it is mounted (NOTES.md).
        if "/tmp" not in mounts.binds:
            args += ["--perms", "1777", "--size", str(limits.tmpfs_bytes), "--tmpfs", "/tmp"]
        args += ["--perms", "1777", "--size", str(limits.tmpfs_bytes), "--tmpfs", "/dev/shm"]
        made: set[str] = {"/", "/usr", "/tmp", "/proc", "/dev"}

        def parents(dest: str) -> list[str]:
            # bwrap may create missing parents 0700, unreadable for the sandbox user: make them 0755 ourselves.
            out: list[str] = []
            for parent in reversed(PurePosixPath(dest).parents):
                if str(parent) not in made:
                    out += ["--perms", "0755", "--dir", str(parent)]
                    made.add(str(parent))
            return out

        for dest in mounts.tmpfs:
            args += [*parents(dest), "--perms", "1777", "--size", str(limits.tmpfs_bytes), "--tmpfs", dest]
            made.add(dest)
        for dest, host in mounts.binds.items():
            args += [*parents(dest), "--bind", str(host), dest]
            made.add(dest)
        for dest, host in mounts.ro_dirs.items():
            args += [*parents(dest), "--ro-bind", str(host), dest]
            made.add(dest)
        for path in self.ro_binds:
            args += [*parents(path), "--ro-bind", path, path]
            made.add(path)
        for ld_file in ("/etc/ld.so.cache", "/etc/localtime"):
            if os.path.exists(ld_file):
                args += [*parents(ld_file), "--ro-bind", ld_file, ld_file]
        for dest, (fd, mode) in data_fds.items():
            args += [*parents(dest), "--perms", mode, "--ro-bind-data", str(fd), dest]
        args += ["--bind", str(workdir), SANDBOX_WORKDIR]
        for rel in readonly_paths:
            args += ["--ro-bind", str(workdir / rel), f"{SANDBOX_WORKDIR}/{rel}"]
        for rel, host in mounts.workspace_ro.items():
            args += ["--ro-bind", str(host), f"{SANDBOX_WORKDIR}/{rel}"]
        args += ["--remount-ro", "/", "--chdir", SANDBOX_WORKDIR]
        return args

    def run(
        self,
        argv: Sequence[str],
        *,
        workdir: Path,
        limits: SandboxLimits,
        env: Mapping[str, str] | None = None,
        stdin: bytes | None = None,
        readonly_paths: Sequence[str] = (),
        files: Mapping[str, bytes] | None = None,
        chown_workdir: bool = True,
    ) -> SandboxResult:
        """Run argv inside the sandbox with workdir (a disposable copy: it is chowned to the sandbox user) at
        /workspace. readonly_paths (relative to workdir) are re-bound read-only, so code under test cannot rewrite
        or rename them (test files, conftest.py). files maps absolute sandbox paths outside /workspace to contents
        bound read-only (e.g. a pristine pytest.ini). Raises SandboxUnavailable, never runs unsandboxed.
        """
        return self.start(
            argv,
            workdir=workdir,
            limits=limits,
            env=env,
            stdin=stdin,
            readonly_paths=readonly_paths,
            files=files,
            chown_workdir=chown_workdir,
        ).wait()

    def start(
        self,
        argv: Sequence[str],
        *,
        workdir: Path,
        limits: SandboxLimits,
        env: Mapping[str, str] | None = None,
        stdin: bytes | None = None,
        readonly_paths: Sequence[str] = (),
        files: Mapping[str, bytes] | None = None,
        executables: Mapping[str, bytes] | None = None,
        chown_workdir: bool = True,
        mounts: SandboxMounts | None = None,
        pass_fds: Sequence[int] = (),
    ) -> SandboxRun:
        """Start argv in the sandbox (as run() does) and return at once; the caller must wait() on the result.

        executables are like files but bound 0755. mounts adds read-write and read-only host directories and
        private tmpfs mounts (a host directory bound at /tmp replaces the private /tmp). pass_fds are the caller's
        descriptors the command inherits at the same numbers (a pipe or socket to a trusted peer).
        """
        status = sandbox_status()
        if not status.available:
            raise SandboxUnavailable(status.describe())
        assert status.bwrap is not None
        if not argv:
            raise ValueError("argv must not be empty")
        workdir = self._check_workdir(workdir)
        mounts = mounts or SandboxMounts()
        full_env = {"PATH": f"{Path(self.python).parent}:/usr/local/bin:/usr/bin:/bin", "HOME": SANDBOX_WORKDIR,
                    "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8", "TMPDIR": "/tmp"}  # fmt: skip
        full_env.update(env or {})
        for name, value in full_env.items():
            if not _ENV_NAME.match(name) or "\0" in value:
                raise ValueError(f"invalid environment entry {name!r}")
        rel_readonly = [_check_relative(p) for p in readonly_paths]
        for rel in rel_readonly:
            if not os.path.lexists(_no_symlinks(workdir, rel)):
                raise ValueError(f"read-only path {rel} does not exist in {workdir}")
        data = {dest: (content, "0644") for dest, content in (files or {}).items()}
        data.update({dest: (content, "0755") for dest, content in (executables or {}).items()})
        for dest in (*data, *mounts.binds, *mounts.ro_dirs, *mounts.tmpfs):
            if not dest.startswith("/") or _is_under(dest, SANDBOX_WORKDIR) or ".." in PurePosixPath(dest).parts:
                raise ValueError(f"sandbox path must be absolute and outside {SANDBOX_WORKDIR}: {dest!r}")
        for rel in mounts.workspace_ro:
            if not os.path.lexists(_no_symlinks(workdir, _check_relative(rel))):
                raise ValueError(f"mount point {rel} does not exist in {workdir}")
        if chown_workdir:
            _chown_tree(workdir, self.uid, self.gid)

        pass_list: list[int] = list(pass_fds)
        to_close: list[int] = []
        cgroups: RunCgroups | None = None
        proc: subprocess.Popen[bytes] | None = None
        status_r, status_w = os.pipe()
        to_close.append(status_r)
        pass_list.append(status_w)
        own = [status_w]
        try:
            data_fds = {
                dest: (_data_pipe(content, own, to_close), mode)
                for dest, (content, mode) in {
                    **{dest: (content, "0644") for dest, content in _etc_files(self.uid, self.gid).items()},
                    **data,
                }.items()
            }
            pass_list += [fd for fd in own if fd not in pass_list]
            bwrap_args = self._bwrap_args(workdir, limits, full_env, rel_readonly, data_fds, mounts)
            cgroups = RunCgroups(status, limits)
            cpu, fsize, nofile = limits.effective_cpu_s, limits.file_size_bytes, limits.max_open_files
            chain = [_SH, "-c", _JOIN_CGROUPS, "sh", *cgroups.procs_files, "--",
                     "/usr/bin/prlimit", f"--cpu={cpu}:{cpu + 1}", f"--fsize={fsize}:{fsize}",
                     f"--nofile={nofile}:{nofile}", "--core=0:0", "--",
                     status.bwrap, *bwrap_args, "--", "/bin/sh", "-c", _MARK_STARTED, "sh", str(status_w),
                     "/usr/bin/setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups",
                     "--bounding-set=-all", "--inh-caps=-all", "--", *argv]  # fmt: skip
            started = time.monotonic()
            proc = subprocess.Popen(
                chain,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env={},
                pass_fds=tuple(pass_list),
                start_new_session=True,
                close_fds=True,
            )
            os.close(status_w)
            own.remove(status_w)
        except BaseException:
            if proc is not None:
                if proc.poll() is None:
                    _killpg(proc)
                    proc.wait()
                for pipe in (proc.stdin, proc.stdout, proc.stderr):
                    if pipe is not None:
                        pipe.close()
            if cgroups is not None:
                cgroups.kill_all()
                cgroups.remove()
            for fd in dict.fromkeys((*to_close, *own)):
                with contextlib.suppress(OSError):
                    os.close(fd)
            raise
        return SandboxRun(proc, cgroups, limits, stdin, started, status_r, tuple(dict.fromkeys((*to_close, *own))))

    def run_pytest(
        self,
        workdir: Path,
        *,
        limits: SandboxLimits,
        pristine: Mapping[str, bytes] | None = None,
        pytest_args: Sequence[str] = ("-q",),
        env: Mapping[str, str] | None = None,
        autoload_plugins: bool = False,
    ) -> SandboxResult:
        """Run pytest on workdir in the sandbox with the caller's pristine copies of protected files.

        pristine (relative path -> bytes: test files, conftest.py) is written over whatever the patch left, and the
        top-level entry holding each (e.g. ``tests/``) is bound read-only, so code under test can neither rewrite nor
        rename them. Project ini files are ignored: pytest gets our own ini (-c), --rootdir, no cache provider and, by
        default, no plugin autoloading from the environment. Name the test files in pytest_args (("-q",
        "tests/test_app.py")) so that only they are collected. Code under test still runs inside pytest's process and
        could forge results in-process: the sandbox bounds what it can do to the host, not to the report (E3 keeps the
        code under test out of the test process for that reason, see sv_env_code_vulnerability/harness.py).
        """
        workdir = self._check_workdir(workdir)
        tops: list[str] = []
        for rel_text, data in (pristine or {}).items():
            rel = _check_relative(rel_text)
            target = _no_symlinks(workdir, rel)
            for parent in reversed(rel.parents[:-1]):
                folder = workdir / parent
                if folder.exists() and not folder.is_dir():
                    folder.unlink()
                folder.mkdir(exist_ok=True)
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            elif os.path.lexists(target):
                target.unlink()
            target.write_bytes(data)
            if rel.parts[0] not in tops:
                tops.append(rel.parts[0])
        argv = [self.python, "-m", "pytest", "-p", "no:cacheprovider", "-c", PYTEST_INI_PATH,
                "--rootdir", SANDBOX_WORKDIR, *pytest_args]  # fmt: skip
        full_env = {} if autoload_plugins else {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
        full_env.update(env or {})
        return self.run(
            argv,
            workdir=workdir,
            limits=limits,
            env=full_env,
            readonly_paths=tops,
            files={PYTEST_INI_PATH: PYTEST_INI.encode()},
        )


def _killpg(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _read_all(fd: int) -> str:
    """Read what is waiting on the start pipe (non-blocking: a lingering writer cannot stall us)."""
    chunks: list[bytes] = []
    os.set_blocking(fd, False)
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


@functools.lru_cache(maxsize=1)
def default_sandbox() -> Sandbox:
    """The sandbox over the interpreter running this code (its venv has pytest)."""
    return Sandbox()


def run_sandboxed(
    argv: Sequence[str],
    *,
    workdir: Path,
    limits: SandboxLimits,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    readonly_paths: Sequence[str] = (),
) -> SandboxResult:
    """Run argv in the default sandbox (see Sandbox.run); raises SandboxUnavailable rather than run unsandboxed."""
    return default_sandbox().run(
        argv, workdir=workdir, limits=limits, env=env, stdin=stdin, readonly_paths=readonly_paths
    )

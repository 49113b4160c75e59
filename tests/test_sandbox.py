"""The sandbox contains hostile code: each case runs the attack inside it and checks the host is unchanged.

Network attacks only ever target loopback or TEST-NET-1 (192.0.2.1, never routed) inside a network namespace that
has no route; nothing here runs model-style code outside the sandbox.
"""

from __future__ import annotations

import os
import socket
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sv_shared.execution import sandbox as sandbox_module
from sv_shared.execution import scratch as scratch_module
from sv_shared.execution.patch_format import PYTEST_PROTECTED, PatchError
from sv_shared.execution.patching import apply_patch_to_dir
from sv_shared.execution.sandbox import (
    SANDBOX_UID,
    Sandbox,
    SandboxError,
    SandboxLimits,
    SandboxResult,
    SandboxStatus,
    SandboxUnavailable,
    run_sandboxed,
    sandbox_status,
)

STATUS = sandbox_status()
needs_sandbox = pytest.mark.skipif(not STATUS.available, reason=STATUS.describe())
FAST = SandboxLimits(timeout_s=10, memory_bytes=256 * 2**20, max_pids=32)


@pytest.fixture(autouse=True)
def no_leftover_cgroups() -> Iterator[None]:
    """Every run removes its cgroups (and so has no process left): nothing of ours may remain after a test."""
    yield
    prefix = f"run-{os.getpid()}-"
    for parent in (STATUS.memory_cgroup, STATUS.pids_cgroup):
        if parent is not None and parent.is_dir():
            assert not [p.name for p in parent.iterdir() if p.name.startswith(prefix)]


def run_python(code: str, workdir: Path, limits: SandboxLimits = FAST) -> SandboxResult:
    return run_sandboxed([sys.executable, "-c", textwrap.dedent(code)], workdir=workdir, limits=limits)


def test_refuses_to_run_when_the_sandbox_is_unavailable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    missing = SandboxStatus(False, ("bwrap not found on PATH",), None, None, None, None, False)
    monkeypatch.setattr(sandbox_module, "sandbox_status", lambda refresh=False: missing)
    marker = tmp_path / "ran"
    with pytest.raises(SandboxUnavailable, match="bwrap not found"):
        run_sandboxed(["/usr/bin/touch", str(marker)], workdir=tmp_path, limits=FAST)
    assert not marker.exists()


def test_status_names_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_module.shutil, "which", lambda _name: None)
    monkeypatch.setattr(sandbox_module, "cgroup_v1_mounts", lambda: {})
    try:
        status = sandbox_status(refresh=True)
        assert not status.available
        text = status.describe()
        assert "bubblewrap" in text and "memory controller" in text and "pids controller" in text
    finally:
        monkeypatch.undo()
        sandbox_status(refresh=True)


@needs_sandbox
def test_only_a_disposable_workdir_is_accepted() -> None:
    for workdir in (Path("/"), Path.cwd(), Path(sys.prefix)):
        with pytest.raises(ValueError, match="disposable"):
            run_sandboxed(["/usr/bin/true"], workdir=workdir, limits=FAST)


@needs_sandbox
def test_a_sandbox_that_cannot_start_raises(tmp_path: Path) -> None:
    broken = Sandbox(extra_ro_binds=["/nonexistent-secverify-path"])
    with pytest.raises(SandboxError, match="did not start"):
        broken.run(["/usr/bin/true"], workdir=tmp_path, limits=FAST)


@needs_sandbox
def test_runs_as_unprivileged_user_with_clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secverify-test-secret")
    result = run_python(
        """
        import os
        print("uid", os.getuid(), os.getgid(), os.getgroups())
        print("caps", [l.split()[1] for l in open("/proc/self/status") if l.startswith(("CapEff", "CapBnd"))])
        print("env", sorted(os.environ))
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    print("environ", pid, open(f"/proc/{pid}/environ", "rb").read())
                except OSError as exc:
                    print("environ", pid, type(exc).__name__)
        print("root", sorted(os.listdir("/root")), "cwd", os.getcwd())
        """,
        tmp_path,
    )
    assert result.ok, result.stderr
    assert "sk-secverify-test-secret" not in result.stdout + result.stderr
    assert "OPENAI_API_KEY" not in result.stdout
    assert f"uid {SANDBOX_UID} {SANDBOX_UID} []" in result.stdout
    assert "caps ['0000000000000000', '0000000000000000']" in result.stdout
    assert "root ['.pyenv'] cwd /workspace" in result.stdout or "root [] cwd /workspace" in result.stdout


@needs_sandbox
def test_no_network_egress_and_host_loopback_unreachable(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        result = run_python(
            f"""
            import socket
            for family, addr in ((socket.AF_INET, ("192.0.2.1", 80)), (socket.AF_INET, ("127.0.0.1", {port})),
                                 (socket.AF_INET6, ("::1", {port}))):
                s = socket.socket(family, socket.SOCK_STREAM)
                s.settimeout(1.0)
                try:
                    s.connect(addr)
                    print("CONNECTED", addr)
                except OSError as exc:
                    print("blocked", addr, type(exc).__name__)
                finally:
                    s.close()
            try:
                socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("192.0.2.1", 53))
                print("SENT udp")
            except OSError as exc:
                print("blocked udp", type(exc).__name__)
            try:
                socket.getaddrinfo("example.com", 80)
                print("RESOLVED")
            except OSError as exc:
                print("blocked dns", type(exc).__name__)
            print("interfaces", sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:]))
            """,
            tmp_path,
        )
        listener.settimeout(0.3)
        with pytest.raises(TimeoutError):
            listener.accept()  # nothing from the sandbox reached the host's loopback
    assert result.ok, result.stderr
    assert "CONNECTED" not in result.stdout and "SENT" not in result.stdout and "RESOLVED" not in result.stdout
    assert result.stdout.count("blocked") == 5
    assert "interfaces ['lo']" in result.stdout
    assert result.wall_s < 5


@needs_sandbox
def test_writes_outside_the_workdir_do_not_reach_the_host(tmp_path: Path) -> None:
    token = uuid.uuid4().hex
    host_targets = [Path("/etc/secverify-pwned"), Path(f"/root/secverify-{token}"), Path(f"/tmp/secverify-{token}"),
                    Path(sys.prefix) / f"pwned-{token}", Path(f"/usr/secverify-{token}")]  # fmt: skip
    assert not any(p.exists() for p in host_targets)
    result = run_python(
        f"""
        import os, subprocess
        for path in {[str(p) for p in host_targets]!r} + ["/workspace/ok.txt"]:
            try:
                with open(path, "w") as handle:
                    handle.write("pwned")
                print("wrote", path)
            except OSError as exc:
                print("denied", path, type(exc).__name__)
        r = subprocess.run(["mount", "-o", "remount,rw", "/usr"], capture_output=True)
        print("remount", r.returncode)
        """,
        tmp_path,
    )
    assert result.ok, result.stderr
    assert not any(p.exists() for p in host_targets)
    assert (tmp_path / "ok.txt").read_text() == "pwned"  # the work dir is the one writable place
    assert f"wrote /tmp/secverify-{token}" in result.stdout  # the sandbox's private /tmp, gone with it
    assert "remount 0" not in result.stdout


@needs_sandbox
def test_file_size_and_tmpfs_are_bounded(tmp_path: Path) -> None:
    limits = SandboxLimits(timeout_s=10, file_size_bytes=8 * 2**20, tmpfs_bytes=4 * 2**20)
    result = run_python(
        """
        for path in ("/workspace/big.bin", "/tmp/big.bin", "/dev/shm/big.bin"):
            try:
                with open(path, "wb") as handle:
                    for _ in range(64):
                        handle.write(b"x" * 2**20)
                print("unbounded", path)
            except OSError as exc:
                print("bounded", path, exc.errno)
        """,
        tmp_path,
        limits,
    )
    assert "unbounded" not in result.stdout, result.stdout
    assert "bounded /workspace/big.bin 27" in result.stdout  # EFBIG: RLIMIT_FSIZE
    assert "bounded /tmp/big.bin 28" in result.stdout and "bounded /dev/shm/big.bin 28" in result.stdout  # ENOSPC
    assert (tmp_path / "big.bin").stat().st_size <= 8 * 2**20


@needs_sandbox
def test_fork_bomb_is_bounded_by_the_pids_cgroup(tmp_path: Path) -> None:
    limits = SandboxLimits(timeout_s=5, max_pids=24, memory_bytes=256 * 2**20)
    started = time.monotonic()
    result = run_python(
        """
        import os
        while True:
            try:
                os.fork()
            except OSError:
                pass
        """,
        tmp_path,
        limits,
    )
    assert result.killed_reason == "pids" and not result.timed_out
    assert time.monotonic() - started < 2  # ended at the first refused fork, well before the timeout


@needs_sandbox
def test_memory_bomb_is_killed_by_the_memory_cgroup(tmp_path: Path) -> None:
    limits = SandboxLimits(timeout_s=20, memory_bytes=96 * 2**20)
    result = run_python("chunks = []\nwhile True:\n    chunks.append(bytearray(8 * 2**20))\n", tmp_path, limits)
    assert result.killed_reason == "memory"
    assert result.returncode != 0 and not result.timed_out
    assert result.peak_memory_bytes is not None and result.peak_memory_bytes <= 96 * 2**20


@needs_sandbox
def test_infinite_loop_times_out_and_detached_children_die(tmp_path: Path) -> None:
    marker = f"{uuid.uuid4().int % 10**6}.{os.getpid()}"
    result = run_python(
        f"""
        import subprocess
        subprocess.Popen(["sleep", "{marker}"], start_new_session=True)
        while True:
            pass
        """,
        tmp_path,
        SandboxLimits(timeout_s=1.5),
    )
    assert result.timed_out and result.killed_reason == "timeout"
    assert result.wall_s < 4
    leftovers = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                leftovers.append(pid)
        except OSError:
            continue
    assert not leftovers


@needs_sandbox
def test_daemon_left_behind_by_a_finished_command_is_killed_quickly(tmp_path: Path) -> None:
    result = run_python(
        """
        import os, subprocess
        subprocess.Popen(["sleep", "300"], start_new_session=True, stdout=1, stderr=2)
        print("parent done")
        """,
        tmp_path,
        SandboxLimits(timeout_s=10),
    )
    assert result.ok and "parent done" in result.stdout
    assert result.wall_s < 3


@needs_sandbox
def test_cpu_time_is_limited(tmp_path: Path) -> None:
    result = run_python("while True:\n    pass\n", tmp_path, SandboxLimits(timeout_s=10, cpu_s=1))
    assert result.killed_reason == "cpu" and not result.timed_out
    assert result.wall_s < 4


@needs_sandbox
def test_huge_output_is_capped_and_killed(tmp_path: Path) -> None:
    limits = SandboxLimits(timeout_s=10, max_output_bytes=64 * 1024, kill_output_bytes=1024 * 1024)
    result = run_python("import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n", tmp_path, limits)
    assert result.killed_reason == "output"
    assert len(result.stdout) == 64 * 1024 and result.stdout_truncated
    assert result.wall_s < 5


@needs_sandbox
def test_moderate_output_is_truncated_without_a_kill(tmp_path: Path) -> None:
    result = run_python("print('y' * 200_000)", tmp_path, SandboxLimits(timeout_s=10, max_output_bytes=1000))
    assert result.ok and result.stdout == "y" * 1000 and result.stdout_truncated


@needs_sandbox
def test_stdin_is_passed(tmp_path: Path) -> None:
    result = run_sandboxed(["cat"], workdir=tmp_path, limits=FAST, stdin=b"hello sandbox")
    assert result.ok and result.stdout == "hello sandbox"


VULNERABLE = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
CONFTEST = "import pytest\n"


def make_project(root: Path, calc: str = VULNERABLE) -> Path:
    (root / "tests").mkdir(parents=True)
    (root / "calc.py").write_text(calc)
    (root / "tests" / "test_calc.py").write_text(TESTS)
    (root / "conftest.py").write_text(CONFTEST)
    return root


PRISTINE = {"tests/test_calc.py": TESTS.encode(), "conftest.py": CONFTEST.encode()}


@needs_sandbox
def test_a_real_fix_passes_and_the_vulnerable_code_fails(tmp_path: Path) -> None:
    source = make_project(tmp_path / "src")
    diff = "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
    fixed = tmp_path / "fixed"
    apply_patch_to_dir(diff, source, fixed, protected=PYTEST_PROTECTED)
    sandbox = Sandbox()
    good = sandbox.run_pytest(fixed, limits=FAST, pristine=PRISTINE)
    assert good.ok and "1 passed" in good.stdout, good.stdout + good.stderr
    bad = sandbox.run_pytest(source, limits=FAST, pristine=PRISTINE)
    assert bad.returncode == 1 and "1 failed" in bad.stdout


@needs_sandbox
def test_code_that_tampers_with_tests_conftest_and_pytest_config_is_contained(tmp_path: Path) -> None:
    hostile = VULNERABLE + textwrap.dedent(
        """
        import os
        for action in (
            lambda: open("tests/test_calc.py", "w").write("def test_add():\\n    pass\\n"),
            lambda: open("tests/test_fake.py", "w").write("def test_ok():\\n    pass\\n"),
            lambda: os.rename("tests", "tests_moved"),
            lambda: os.rename("conftest.py", "conftest_moved.py"),
            lambda: open("conftest.py", "w").write("def pytest_collection_modifyitems(items): items.clear()\\n"),
        ):
            try:
                action()
                print("TAMPERED")
            except OSError as exc:
                print("blocked", type(exc).__name__)
        """
    )
    workdir = make_project(tmp_path / "work", calc=hostile)
    # What a hostile patch could have left behind before the run: its own conftest and pytest configuration.
    (workdir / "conftest.py").write_text("def pytest_collection_modifyitems(items):\n    items.clear()\n")
    (workdir / "pytest.ini").write_text("[pytest]\naddopts = -p no:python\npython_files = nothing_*.py\n")
    (workdir / "tests" / "test_calc.py").write_text("def test_add():\n    pass\n")
    result = Sandbox().run_pytest(workdir, limits=FAST, pristine=PRISTINE, pytest_args=("-q", "-s"))
    assert result.returncode == 1 and "1 failed" in result.stdout, result.stdout + result.stderr
    assert "TAMPERED" not in result.stdout
    assert (workdir / "tests" / "test_calc.py").read_text() == TESTS
    assert (workdir / "conftest.py").read_text() == CONFTEST
    assert not (workdir / "tests" / "test_fake.py").exists() and not (workdir / "tests_moved").exists()


def test_patches_renaming_tests_or_escaping_are_refused_before_anything_runs(tmp_path: Path) -> None:
    source = make_project(tmp_path / "src")
    rename = "diff --git a/tests/test_calc.py b/tests/old_calc.txt\nsimilarity index 100%\n"
    rename += "rename from tests/test_calc.py\nrename to tests/old_calc.txt\n"
    escape = "--- a/../../etc/secverify-pwned\n+++ b/../../etc/secverify-pwned\n@@ -0,0 +1 @@\n+pwned\n"
    for diff, code in ((rename, "protected_file"), (escape, "path_outside_project")):
        with pytest.raises(PatchError) as caught:
            apply_patch_to_dir(diff, source, tmp_path / "dest", protected=PYTEST_PROTECTED)
        assert caught.value.code == code
        assert not (tmp_path / "dest").exists()
    assert not Path("/etc/secverify-pwned").exists()


@needs_sandbox
def test_a_started_run_lists_its_processes_and_stops_at_once_without_naming_a_limit(tmp_path: Path) -> None:
    run = Sandbox().start(["sleep", "30"], workdir=tmp_path, limits=FAST)
    deadline = time.monotonic() + 5
    while len(run.pids()) < 3 and time.monotonic() < deadline:  # bwrap, its pid 1 and the command
        time.sleep(0.01)
    assert len(run.pids()) >= 3
    started = time.monotonic()
    run.stop()
    result = run.wait()
    assert time.monotonic() - started < 2
    assert result.killed_reason is None and not result.timed_out
    assert run.pids() == set()


@needs_sandbox
def test_mounts_shared_tmp_private_tmpfs_read_only_dirs_and_passed_descriptors(tmp_path: Path) -> None:
    shared, readable, work = tmp_path / "shared", tmp_path / "readable", tmp_path / "work"
    for folder in (shared, readable, work):
        folder.mkdir()
    os.chown(shared, SANDBOX_UID, SANDBOX_UID)
    (readable / "note.txt").write_text("from the host")
    read_end, write_end = os.pipe()
    code = f"""
        import os
        open("/tmp/from-sandbox", "w").write("shared")
        open("/run/private/x", "w").write("private")
        print(open("/run/ro/note.txt").read())
        try:
            open("/run/ro/new", "w")
        except OSError as exc:
            print("ro", type(exc).__name__)
        os.write({write_end}, b"through the pipe")
        print(open("/opt/tool").read().strip(), oct(os.stat("/opt/tool").st_mode & 0o777))
    """
    try:
        run = Sandbox().start(
            [sys.executable, "-c", textwrap.dedent(code)],
            workdir=work,
            limits=FAST,
            executables={"/opt/tool": b"#!/bin/sh\n"},
            mounts=sandbox_module.SandboxMounts(
                binds={"/tmp": shared}, ro_dirs={"/run/ro": readable}, tmpfs=("/run/private",)
            ),
            pass_fds=(write_end,),
        )
        result = run.wait()
        os.close(write_end)
        assert result.ok, result.stderr
        assert os.read(read_end, 100) == b"through the pipe"
    finally:
        os.close(read_end)
    assert result.stdout.split("\n")[:3] == ["from the host", "ro OSError", "#!/bin/sh 0o755"]  # EROFS
    assert (shared / "from-sandbox").read_text() == "shared"
    assert not (readable / "new").exists()


@needs_sandbox
def test_a_scratch_filesystem_caps_what_a_run_can_write_and_goes_away(tmp_path: Path) -> None:
    with scratch_module.scratch_filesystem(4 * 2**20, inodes=64, root=tmp_path) as scratch:
        work = scratch / "work"
        work.mkdir()
        result = run_python(
            """
            try:
                with open("big", "wb") as handle:
                    for _ in range(16):
                        handle.write(b"x" * 2**20)
            except OSError as exc:
                print("refused", exc.errno)
            """,
            work,
        )
        assert "refused 28" in result.stdout  # ENOSPC: the host's disk was never at risk
        assert scratch_module.scratch_usage(scratch).full
    assert not scratch.exists()
    assert str(scratch) not in Path("/proc/self/mountinfo").read_text()


@needs_sandbox
def test_scratch_left_by_a_dead_process_is_removed(tmp_path: Path) -> None:
    stale = tmp_path / f"{scratch_module.SCRATCH_PREFIX}999999999-abc"
    stale.mkdir()
    scratch_module._mount_tmpfs(stale, 2**20, 16)
    scratch_module.remove_stale_scratch()
    assert not stale.exists()

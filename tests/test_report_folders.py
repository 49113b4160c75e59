"""A report appears whole or not at all: a writer killed mid-write leaves no partial folder among the complete ones,
the next writer removes what it left, a failing writer leaves nothing, and writers at the same second each get a
folder of their own."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from secverify_dagster.reports.environment_report import build_report, report_dir
from secverify_dagster.reports.report_folders import STAGING_SUFFIX, building, reserve_report_dir
from secverify_dagster.reports.scope import report_scope
from sv_shared.data.files import FolderBusyError
from sv_shared.registry import get_environment

ROOT = Path(__file__).resolve().parents[1]
NOW = datetime(2026, 11, 23, 12, 0, 0, tzinfo=UTC)

_KILLED_WRITER = """
import sys, time
from pathlib import Path
from secverify_dagster.reports.report_folders import building, reserve_report_dir
out_dir = reserve_report_dir(Path(sys.argv[1]))
with building(out_dir) as folder:
    for name in ("reward_by_model.png", "report.md", "report.html", "trajectories.html"):
        (folder / name).write_text(name)
    print("4 of 9 written", flush=True)
    time.sleep(600)
"""


def test_a_report_writer_killed_mid_write_leaves_no_partial_folder(tmp_path: Path) -> None:
    root = tmp_path / "reports" / "e1" / "latest"
    env = get_environment("e1")
    complete = build_report(
        env, tmp_path / "evals", report_dir(tmp_path / "reports" / "e1", report_scope(env, "latest"))
    )
    writer = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(root)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().startswith("4 of 9 written")
    finally:
        writer.kill()
        writer.wait()
    visible = [path for path in root.iterdir() if not path.name.startswith(".")]
    assert visible == [complete.markdown_path.parent]  # the killed report is nowhere a reader looks
    assert {path.name for path in complete.markdown_path.parent.iterdir()} >= {
        "report.md",
        "report.html",
        "report.json",
    }
    (leftover,) = [path for path in root.iterdir() if path.name.endswith(STAGING_SUFFIX)]

    reserve_report_dir(root, NOW)  # the next writer in the same place (another name: this one is free again)
    assert not leftover.exists()


def test_a_failing_writer_leaves_nothing_and_a_live_one_is_never_swept(tmp_path: Path) -> None:
    root = tmp_path / "reports"
    out_dir = reserve_report_dir(root, NOW)
    with pytest.raises(RuntimeError), building(out_dir) as folder:
        (folder / "report.md").write_text("half")
        raise RuntimeError("a plot failed")
    assert list(root.iterdir()) == []

    out_dir = reserve_report_dir(root, NOW)
    with building(out_dir) as folder:
        (folder / "report.md").write_text("first")
        reserve_report_dir(root, NOW)  # another writer's sweep while this one writes
        assert folder.is_dir()
        with pytest.raises(FolderBusyError), building(out_dir):
            pass
    assert (out_dir / "report.md").read_text() == "first"


def test_writers_at_the_same_second_each_publish_a_whole_report_of_their_own(tmp_path: Path) -> None:
    root = tmp_path / "reports"
    published: list[Path] = []
    start = threading.Barrier(8)

    def write(number: int) -> None:
        start.wait()
        out_dir = reserve_report_dir(root, NOW)
        with building(out_dir) as folder:
            for name in ("report.md", "report.html", "report.json"):
                (folder / name).write_text(f"writer {number}")
                time.sleep(0.01)
        published.append(out_dir)

    threads = [threading.Thread(target=write, args=(number,)) for number in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(published)) == 8
    assert sorted(path.name for path in root.iterdir()) == sorted(path.name for path in published)
    for folder in published:
        texts = {(folder / name).read_text() for name in ("report.md", "report.html", "report.json")}
        assert len(texts) == 1  # one writer's files, all three


def test_a_report_written_again_into_its_folder_replaces_it_whole(tmp_path: Path) -> None:
    out_dir = tmp_path / "export" / "e1"
    for text in ("old", "new"):
        with building(out_dir) as folder:
            (folder / "report.md").write_text(text)
    assert (out_dir / "report.md").read_text() == "new"
    assert [path.name for path in out_dir.parent.iterdir()] == ["e1"]

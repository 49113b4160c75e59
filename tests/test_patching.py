"""Applying model diffs: what applies (leniently, for small models), what is refused and why, and the stats."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from sv_shared.execution.patch_format import (
    PYTEST_PROTECTED,
    DiffStats,
    PatchError,
    PatchLimits,
    is_protected,
    parse_unified_diff,
)
from sv_shared.execution.patching import apply_patch_to_dir, apply_patch_to_file, apply_patch_to_files

APP = (
    "import sqlite3\n\n\ndef find(db, name):\n"
    "    q = \"SELECT * FROM users WHERE name = '%s'\" % name\n"
    "    return db.execute(q)\n"
)
FIX = """\
--- a/app.py
+++ b/app.py
@@ -4,3 +4,3 @@
 def find(db, name):
-    q = "SELECT * FROM users WHERE name = '%s'" % name
-    return db.execute(q)
+    q = "SELECT * FROM users WHERE name = ?"
+    return db.execute(q, (name,))
"""
FIXED = (
    "import sqlite3\n\n\ndef find(db, name):\n"
    '    q = "SELECT * FROM users WHERE name = ?"\n'
    "    return db.execute(q, (name,))\n"
)
PROJECT = {"app.py": APP, "tests/test_app.py": "def test_x():\n    pass\n", "conftest.py": "import pytest\n"}


def refused(diff: str, files: dict[str, str] | None = None, limits: PatchLimits | None = None) -> str:
    """The error code a patch is refused with (it must be refused)."""
    with pytest.raises(PatchError) as caught:
        apply_patch_to_files(diff, PROJECT if files is None else files, protected=PYTEST_PROTECTED, limits=limits)
    return caught.value.code


def test_git_style_fix_applies_with_stats() -> None:
    result = apply_patch_to_files(FIX, PROJECT, protected=PYTEST_PROTECTED)
    assert result.files == {"app.py": FIXED}
    assert result.stats == DiffStats(files_touched=1, lines_added=2, lines_removed=2)
    assert result.stats.lines_changed == 4
    assert result.updated(PROJECT)["app.py"] == FIXED and result.updated(PROJECT)["conftest.py"] == "import pytest\n"
    assert [c.kind for c in result.changes] == ["modified"]


def test_small_model_slop_still_applies() -> None:
    # prose and a fence around it, no a/ b/ prefixes, wrong line numbers and counts, a bare @@ elsewhere
    sloppy = "Here is the fix:\n```diff\n" + FIX.replace("a/app.py", "app.py").replace("b/app.py", "app.py")
    sloppy = sloppy.replace("@@ -4,3 +4,3 @@", "@@ -40,7 +40,9 @@") + "```\nThis uses parameters.\n"
    assert apply_patch_to_files(sloppy, PROJECT).files == {"app.py": FIXED}
    bare = FIX.replace("@@ -4,3 +4,3 @@", "@@")
    assert apply_patch_to_files(bare, PROJECT).files == {"app.py": FIXED}


def test_trailing_whitespace_crlf_and_missing_final_newline() -> None:
    crlf = {"app.py": APP.replace("\n", "\r\n")}
    assert apply_patch_to_files(FIX, crlf).files["app.py"] == FIXED.replace("\n", "\r\n")
    no_eol = {"a.txt": "one\ntwo"}
    diff = "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n\\ No newline at end of file\n+TWO\n"
    assert apply_patch_to_files(diff, no_eol).files["a.txt"] == "one\nTWO\n"
    diff = "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n\\ No newline at end of file\n"
    assert apply_patch_to_files(diff, {"a.txt": "one\ntwo\n"}).files["a.txt"] == "one\nTWO"


def test_several_hunks_and_files_create_delete_rename() -> None:
    files = {"a.py": "".join(f"line{i}\n" for i in range(1, 21)), "old.py": "x = 1\n", "gone.py": "y = 2\n"}
    diff = (
        "--- a/a.py\n+++ b/a.py\n@@ -2,3 +2,3 @@\n line2\n-line3\n+LINE3\n line4\n"
        "@@ -15,3 +15,4 @@\n line15\n line16\n+inserted\n line17\n"
        "--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,2 @@\n+a = 1\n+b = 2\n"
        "--- a/gone.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-y = 2\n"
        "diff --git a/old.py b/pkg/renamed.py\nsimilarity index 100%\nrename from old.py\nrename to pkg/renamed.py\n"
    )
    result = apply_patch_to_files(diff, files)
    after = result.updated(files)
    assert after["a.py"].splitlines()[2] == "LINE3" and after["a.py"].splitlines()[16] == "inserted"
    assert after["new.py"] == "a = 1\nb = 2\n" and after["pkg/renamed.py"] == "x = 1\n"
    assert "gone.py" not in after and "old.py" not in after
    assert sorted(result.deleted) == ["gone.py", "old.py"]
    assert [c.kind for c in result.changes] == ["modified", "created", "deleted", "renamed"]
    assert result.stats == DiffStats(files_touched=4, lines_added=4, lines_removed=2)


def test_empty_diff_is_a_no_op_and_junk_is_malformed() -> None:
    result = apply_patch_to_files("  \n", PROJECT)
    assert result.files == {} and result.stats == DiffStats(0, 0, 0)
    assert refused("I fixed it by using parameterized queries.") == "malformed_diff"
    assert refused("@@ -1 +1 @@\n-a\n+b\n") == "malformed_diff"
    assert refused("--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n") == "malformed_diff"
    assert refused("--- a/app.py\n+++ b/app.py\nno hunks here\n") == "malformed_diff"


@pytest.mark.parametrize(
    "path",
    ["../outside.py", "a/../../etc/passwd", "/etc/passwd", "..\\..\\x.py", "C:/x.py", ".git/hooks/pre-commit"],
)
def test_paths_outside_the_project_are_refused(path: str) -> None:
    diff = f"--- /dev/null\n+++ {path}\n@@ -0,0 +1 @@\n+pwned\n"
    assert refused(diff) == "path_outside_project"
    modify = f"--- {path}\n+++ {path}\n@@ -1 +1 @@\n-x\n+y\n"
    assert refused(modify) == "path_outside_project"


def test_symlinks_are_refused() -> None:
    diff = "diff --git a/link b/link\nnew file mode 120000\n--- /dev/null\n+++ b/link\n@@ -0,0 +1 @@\n+/etc/passwd\n"
    assert refused(diff) == "path_outside_project"


@pytest.mark.parametrize(
    "diff",
    [
        # edit a test so it passes
        "--- a/tests/test_app.py\n+++ b/tests/test_app.py\n@@ -1,2 +1,2 @@\n def test_x():\n-    pass\n+    return\n",
        # rename the tests away (git rename, and a plain delete + create)
        "diff --git a/tests/test_app.py b/tests/old.txt\nrename from tests/test_app.py\nrename to tests/old.txt\n",
        "diff --git a/tests/test_app.py b/skipped.txt\nrename from tests/test_app.py\nrename to skipped.txt\n",
        "--- a/tests/test_app.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-def test_x():\n-    pass\n",
        # tamper with the runner: conftest anywhere, pytest configuration, start-up hooks, new test files
        "--- a/conftest.py\n+++ b/conftest.py\n@@ -1 +1,2 @@\n import pytest\n+collect_ignore_glob = ['*']\n",
        "--- /dev/null\n+++ b/pkg/conftest.py\n@@ -0,0 +1 @@\n+import os\n",
        "--- /dev/null\n+++ b/pytest.ini\n@@ -0,0 +1,2 @@\n+[pytest]\n+addopts = -p no:python\n",
        "--- /dev/null\n+++ b/sitecustomize.py\n@@ -0,0 +1 @@\n+import os\n",
        "--- /dev/null\n+++ b/evil.pth\n@@ -0,0 +1 @@\n+import os\n",
        "--- /dev/null\n+++ b/test_extra.py\n@@ -0,0 +1 @@\n+def test_ok(): pass\n",
    ],
)
def test_protected_files_are_refused(diff: str) -> None:
    assert refused(diff) == "protected_file"


def test_protected_patches_can_be_dropped_instead() -> None:
    diff = FIX + "--- a/conftest.py\n+++ b/conftest.py\n@@ -1 +1,2 @@\n import pytest\n+collect_ignore_glob = ['*']\n"
    result = apply_patch_to_files(diff, PROJECT, protected=PYTEST_PROTECTED, on_protected="drop")
    assert result.files == {"app.py": FIXED} and result.dropped == ("conftest.py",)
    assert result.stats.files_touched == 1


def test_protection_patterns() -> None:
    assert is_protected("a/b/conftest.py", PYTEST_PROTECTED) and is_protected("tests/data/x.json", PYTEST_PROTECTED)
    assert not is_protected("app.py", PYTEST_PROTECTED) and not is_protected("pkg/testing.py", PYTEST_PROTECTED)
    assert is_protected("fixtures/a.txt", ["fixtures/"])


@pytest.mark.parametrize(
    "diff",
    [
        "diff --git a/x.bin b/x.bin\nindex 1..2 100644\nBinary files a/x.bin and b/x.bin differ\n",
        "diff --git a/x.bin b/x.bin\nnew file mode 100644\nGIT binary patch\nliteral 5\nMcmZ?b00001\n",
        "--- /dev/null\n+++ b/x.py\n@@ -0,0 +1 @@\n+a\x00b\n",
    ],
)
def test_binary_patches_are_refused(diff: str) -> None:
    assert refused(diff) == "binary_patch"


def test_binary_targets_are_refused() -> None:
    diff = "--- a/blob\n+++ b/blob\n@@ -1 +1 @@\n-a\n+b\n"
    assert refused(diff, {"blob": "a\x00\n"}) == "binary_patch"


@pytest.mark.parametrize(
    "diff",
    [
        FIX.replace("% name\n", "% other\n", 1),  # context that is not in the file
        FIX.replace("app.py", "missing.py"),  # a file that does not exist
        "--- /dev/null\n+++ b/app.py\n@@ -0,0 +1 @@\n+x = 1\n",  # creating a file that exists
        "--- a/app.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-import sqlite3\n",  # deleting with the wrong content
    ],
)
def test_hunks_that_do_not_apply(diff: str) -> None:
    assert refused(diff) == "does_not_apply"


def test_too_large() -> None:
    limits = PatchLimits(max_diff_bytes=1000, max_files=2, max_file_bytes=100)
    assert refused("--- a/x\n+++ b/x\n" + "+" * 2000, limits=limits) == "too_large"
    many = "".join(f"--- /dev/null\n+++ b/f{i}.py\n@@ -0,0 +1 @@\n+x\n" for i in range(3))
    assert refused(many, limits=limits) == "too_large"
    big = "--- /dev/null\n+++ b/big.py\n@@ -0,0 +1 @@\n+" + "x" * 200 + "\n"
    assert refused(big, limits=limits) == "too_large"
    # a hunk crafted to match partially everywhere must not make applying quadratic
    costly = "--- a/x.txt\n+++ b/x.txt\n" + ("@@\n" + " x\n" * 300 + "-y\n+z\n") * 50
    assert refused(costly, {"x.txt": "x\n" * 20_000}) == "too_large"


def test_in_memory_config_patch_for_e2() -> None:
    manifest = {
        "deploy.yaml": "spec:\n  containers:\n    - name: app\n      securityContext:\n        privileged: true\n"
    }
    diff = "--- a/deploy.yaml\n+++ b/deploy.yaml\n@@ -4,2 +4,3 @@\n       securityContext:\n-        privileged: true\n"
    diff += "+        privileged: false\n+        runAsNonRoot: true\n"
    after = apply_patch_to_files(diff, manifest).updated(manifest)
    assert after["deploy.yaml"].endswith("privileged: false\n        runAsNonRoot: true\n")


def refused_single(diff: str, text: str = APP) -> str:
    """The error code a one-file patch of app.py is refused with (it must be refused)."""
    with pytest.raises(PatchError) as caught:
        apply_patch_to_file(diff, "app.py", text)
    return caught.value.code


def test_single_file_patch_applies_with_or_without_headers() -> None:
    assert apply_patch_to_file(FIX, "app.py", APP) == FIXED
    headless = FIX.split("\n", 2)[2]
    assert headless.startswith("@@") and apply_patch_to_file(headless, "app.py", APP) == FIXED
    mixed = FIX.replace("+++ b/app.py", "+++ app.py") + "```\n"  # one side prefixed, a closing fence
    assert apply_patch_to_file(mixed, "app.py", APP) == FIXED


def test_single_file_patch_refusals() -> None:
    assert refused_single(FIX.replace("a/app.py", "a/../../etc/passwd")) == "path_outside_project"
    assert refused_single(FIX.replace("+++ b/app.py", "+++ /etc/passwd")) == "path_outside_project"
    assert refused_single(FIX.replace("app.py", "other.py")) == "touches_other_file"
    assert refused_single(FIX + FIX.replace("app.py", "second.py")) == "multiple_files"
    assert refused_single(FIX.replace("--- a/app.py", "--- /dev/null")) == "creates_or_deletes_file"
    rename = "diff --git a/app.py b/x.py\nsimilarity index 100%\nrename from app.py\nrename to x.py\n"
    assert refused_single(rename) == "creates_or_deletes_file"
    symlink = "diff --git a/app.py b/app.py\nold mode 100644\nnew mode 120000\n"
    assert refused_single(symlink) == "path_outside_project"
    assert refused_single("no diff here") == "malformed_diff"
    # a stray line inside a hunk is refused, not taken as the end of the diff (the cut hunk would still apply)
    assert refused_single(FIX.replace("-    return db.execute(q)", "*    return db.execute(q)")) == "malformed_diff"
    assert refused_single(FIX, text="a\x00b\n") == "binary_patch"
    assert refused_single(FIX.replace("% name", "% other")) == "does_not_apply"


def test_single_file_options_leave_project_parsing_alone() -> None:
    # project patches (E3) still refuse headerless hunks and still ignore prose after the diff
    assert refused("@@ -1 +1 @@\n-a\n+b\n") == "malformed_diff"
    prose = FIX + "This uses parameters.\n"
    assert apply_patch_to_files(prose, PROJECT).files == {"app.py": FIXED}
    assert refused_single(prose) == "malformed_diff"
    (patch,) = parse_unified_diff("@@ -1 +1 @@\n-a\n+b\n", default_path="x.py")
    assert (patch.old_path, patch.new_path, len(patch.hunks)) == ("x.py", "x.py", 1)


def test_parse_reports_renames_and_positions() -> None:
    (patch,) = parse_unified_diff(FIX)
    assert (patch.old_path, patch.new_path, patch.rename) == ("app.py", "app.py", False)
    assert patch.hunks[0].old_start == 4 and patch.hunks[0].added == 2 and patch.hunks[0].removed == 2


def make_dir(root: Path) -> Path:
    for rel, text in PROJECT.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_dir_patch_goes_to_a_fresh_copy(tmp_path: Path) -> None:
    source = make_dir(tmp_path / "src")
    result = apply_patch_to_dir(FIX, source, tmp_path / "dest", protected=PYTEST_PROTECTED)
    assert (tmp_path / "dest" / "app.py").read_text() == FIXED
    assert (tmp_path / "dest" / "tests" / "test_app.py").exists()
    assert (source / "app.py").read_text() == APP  # the source is never modified
    assert result.stats.files_touched == 1
    with pytest.raises(FileExistsError):
        apply_patch_to_dir(FIX, source, tmp_path / "dest")


def test_dir_patch_through_a_symlink_is_refused_and_leaves_the_host_alone(tmp_path: Path) -> None:
    source = make_dir(tmp_path / "src")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.py").write_text("safe = True\n")
    os.symlink(outside, source / "link")
    os.symlink(outside / "victim.py", source / "victim.py")
    for diff in (
        "--- /dev/null\n+++ b/link/new.py\n@@ -0,0 +1 @@\n+pwned = True\n",
        "--- a/victim.py\n+++ b/victim.py\n@@ -1 +1 @@\n-safe = True\n+safe = False\n",
        "--- a/link/victim.py\n+++ b/link/victim.py\n@@ -1 +1 @@\n-safe = True\n+safe = False\n",
    ):
        with pytest.raises(PatchError) as caught:
            apply_patch_to_dir(diff, source, tmp_path / "dest")
        assert caught.value.code == "path_outside_project"
        assert not (tmp_path / "dest").exists()
    assert sorted(p.name for p in outside.iterdir()) == ["victim.py"]
    assert (outside / "victim.py").read_text() == "safe = True\n"


def test_dir_patch_with_a_lone_surrogate_writes_nothing(tmp_path: Path) -> None:
    source = make_dir(tmp_path / "src")
    diff = FIX.replace("(name,))", "(name,))  # \ud800")
    with pytest.raises(PatchError) as caught:
        apply_patch_to_dir(diff, source, tmp_path / "dest")
    assert caught.value.code == "binary_patch" and not (tmp_path / "dest").exists()


def test_dir_patch_with_dotdot_leaves_no_trace(tmp_path: Path) -> None:
    source = make_dir(tmp_path / "src")
    diff = "--- /dev/null\n+++ b/../escaped.py\n@@ -0,0 +1 @@\n+pwned = True\n"
    with pytest.raises(PatchError) as caught:
        apply_patch_to_dir(diff, source, tmp_path / "dest")
    assert caught.value.code == "path_outside_project" and caught.value.path == "../escaped.py"
    assert not (tmp_path / "escaped.py").exists() and not (tmp_path / "dest").exists()


def test_a_huge_line_number_in_a_hunk_header_is_malformed() -> None:
    """int() refuses 4,300 digits with a ValueError, which escaped the parser before."""
    assert refused(FIX.replace("@@ -4,3 +4,3 @@", f"@@ -4,3 +{'4' * 5000},3 @@")) == "malformed_diff"
    assert refused_single(FIX.replace("@@ -4,3 +4,3 @@", "@@ -1234567890,3 +4,3 @@")) == "malformed_diff"


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("pkg/" * 40 + "deep.py", "too_large"),
        ("x" * 300 + ".py", "too_large"),
        ("/".join(letter * 240 for letter in "vwxyz") + "/a.py", "too_large"),
        ("bad\ud800name.py", "path_outside_project"),
        ("bell\x07.py", "path_outside_project"),
        ("cr\rname.py", "path_outside_project"),
    ],
)
def test_paths_a_file_system_would_refuse_are_refused_first(path: str, code: str) -> None:
    diff = f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+x = 1\n"
    assert refused(diff) == code


def test_a_deep_new_path_writes_nothing_in_a_dir(tmp_path: Path) -> None:
    """A created file 3,000 folders down raised OSError (name too long) half-way through writing the copy."""
    source = make_dir(tmp_path / "src")
    diff = "--- /dev/null\n+++ b/" + "d/" * 3000 + "x.py\n@@ -0,0 +1 @@\n+x = 1\n"
    with pytest.raises(PatchError) as caught:
        apply_patch_to_dir(diff, source, tmp_path / "dest")
    assert caught.value.code == "too_large" and not (tmp_path / "dest").exists()


def test_many_hunks_over_a_long_file_stay_linear() -> None:
    """500 hunks over 128k lines took 6 s: every hunk sorted every candidate position by distance from its hint."""
    text = "a\n" * 128_000
    diff = "".join(f"@@ -{i * 200 + 1},1 +{i * 200 + 1},1 @@\n-a\n+b\n" for i in range(500))
    started = time.perf_counter()
    assert apply_patch_to_file(diff, "f.yaml", text).count("b\n") == 500
    assert time.perf_counter() - started < 1.5
    far = "".join(f"@@ -1,1 +1,1 @@\n-a\n+b\n {i}\n" for i in range(500))  # each hunk searched across the file
    assert refused_single(far, text) in ("too_large", "does_not_apply")

"""Write envs/sv_env_code_vulnerability/data/embedded_items.jsonl: the hand-written E3 corpus, validated.

Each spec below is a small Python project: a vulnerable module, its functional tests, exploit tests, and the reference
fix as (old, new) replacements in the module. The script derives the reference diff, discovers the test node ids (a
sandboxed run of the fixed project), validates every item with the harness (functional tests pass and exploit tests
fail on the vulnerable code; every test passes with the reference fix), scans the vulnerable code with bandit and
semgrep, and writes the rows sorted by item_id. A spec that fails validation stops the build.

    .venv/bin/python scripts/build_e3_embedded.py
    .venv/bin/python scripts/build_e3_embedded.py --check   # exit 1 if the file differs from what this script writes

Exploit tests never touch the network: SSRF items test the URL validation with an injected opener, XXE items parse
local strings, command injection items check for a marker file in a temporary directory, ReDoS items time a child
process.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
import time
from dataclasses import dataclass

from sv_env_code_vulnerability import data
from sv_env_code_vulnerability.env import CodeVulnerabilityEnvironment
from sv_shared.data.embedded import check_or_write
from sv_shared.registry import load_env_config


@dataclass(frozen=True)
class Spec:
    name: str
    cwe: str
    module: str
    source: str
    fix: tuple[tuple[str, str], ...]
    functional: str
    exploit: str


def _d(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


REDOS_CHECK = '''
def _finishes_quickly(call: str, timeout: float = 1.5) -> bool:
    """Run the call in a child process: catastrophic backtracking cannot be interrupted in-process."""
    try:
        subprocess.run([sys.executable, "-c", call], timeout=timeout, check=True, capture_output=True)
    except subprocess.TimeoutExpired:
        return False
    return True
'''

SPECS: list[Spec] = [
    # --- CWE-89 SQL injection -----------------------------------------------------------------------------------
    Spec(
        name="sqli-user-lookup",
        cwe="CWE-89",
        module="users.py",
        source=_d('''
            """User lookups for the account service."""

            import sqlite3


            def connect(path=":memory:"):
                conn = sqlite3.connect(path)
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS users "
                    "(id INTEGER PRIMARY KEY, name TEXT UNIQUE, email TEXT, is_admin INTEGER DEFAULT 0)"
                )
                return conn


            def add_user(conn, name, email, is_admin=False):
                conn.execute("INSERT INTO users (name, email, is_admin) VALUES (?, ?, ?)", (name, email, int(is_admin)))
                conn.commit()


            def find_user(conn, name):
                """The (id, name, email) row of one user, or None."""
                query = f"SELECT id, name, email FROM users WHERE name = '{name}'"
                return conn.execute(query).fetchone()
            '''),
        fix=(
            (
                "query = f\"SELECT id, name, email FROM users WHERE name = '{name}'\"\n"
                "    return conn.execute(query).fetchone()",
                'query = "SELECT id, name, email FROM users WHERE name = ?"\n'
                "    return conn.execute(query, (name,)).fetchone()",
            ),
        ),
        functional=_d("""
            from users import add_user, connect, find_user


            def _db():
                conn = connect()
                add_user(conn, "alice", "alice@example.com")
                add_user(conn, "root", "root@example.com", is_admin=True)
                return conn


            def test_finds_existing_user():
                assert find_user(_db(), "alice")[1:] == ("alice", "alice@example.com")


            def test_unknown_user_is_none():
                assert find_user(_db(), "nobody") is None
            """),
        exploit=_d("""
            from users import add_user, connect, find_user


            def _db():
                conn = connect()
                add_user(conn, "alice", "alice@example.com")
                add_user(conn, "root", "root@example.com", is_admin=True)
                return conn


            def test_tautology_does_not_match_a_user():
                assert find_user(_db(), "x' OR '1'='1") is None


            def test_union_cannot_read_admin_rows():
                assert find_user(_db(), "x' UNION SELECT id, name, email FROM users WHERE is_admin = 1 --") is None
            """),
    ),
    Spec(
        name="sqli-product-search",
        cwe="CWE-89",
        module="catalog.py",
        source=_d('''
            """Product search for the shop front."""

            import sqlite3


            def connect():
                conn = sqlite3.connect(":memory:")
                conn.execute("CREATE TABLE products (name TEXT, price REAL, hidden INTEGER DEFAULT 0)")
                return conn


            def add_product(conn, name, price, hidden=False):
                conn.execute("INSERT INTO products VALUES (?, ?, ?)", (name, price, int(hidden)))


            def search(conn, term, max_price):
                """Visible products whose name contains term, at most max_price, by name."""
                sql = (
                    "SELECT name, price FROM products WHERE hidden = 0 "
                    "AND name LIKE '%%%s%%' AND price <= %s ORDER BY name" % (term, max_price)
                )
                return conn.execute(sql).fetchall()
            '''),
        fix=(
            (
                "\"AND name LIKE '%%%s%%' AND price <= %s ORDER BY name\" % (term, max_price)\n"
                "    )\n"
                "    return conn.execute(sql).fetchall()",
                '"AND name LIKE ? AND price <= ? ORDER BY name"\n'
                "    )\n"
                '    return conn.execute(sql, (f"%{term}%", max_price)).fetchall()',
            ),
        ),
        functional=_d("""
            from catalog import add_product, connect, search


            def _db():
                conn = connect()
                add_product(conn, "red mug", 8.5)
                add_product(conn, "blue mug", 12.0)
                add_product(conn, "prototype mug", 1.0, hidden=True)
                return conn


            def test_search_by_term_and_price():
                assert search(_db(), "mug", 10) == [("red mug", 8.5)]


            def test_hidden_products_are_not_listed():
                assert [name for name, _ in search(_db(), "mug", 100)] == ["blue mug", "red mug"]
            """),
        exploit=_d("""
            from catalog import add_product, connect, search


            def _db():
                conn = connect()
                add_product(conn, "red mug", 8.5)
                add_product(conn, "prototype mug", 1.0, hidden=True)
                return conn


            def test_injected_term_cannot_reveal_hidden_products():
                rows = search(_db(), "zzz' OR hidden = 1 --", 100)
                assert all(name != "prototype mug" for name, _ in rows)
            """),
    ),
    Spec(
        name="sqli-order-by",
        cwe="CWE-89",
        module="orders.py",
        source=_d('''
            """Order listings with a caller-chosen sort column."""

            import sqlite3

            SORTABLE = ("id", "customer", "total")


            def connect():
                conn = sqlite3.connect(":memory:")
                conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT, total REAL)")
                conn.execute("CREATE TABLE api_keys (owner TEXT, secret TEXT)")
                conn.execute("INSERT INTO api_keys VALUES ('ops', 'k-91f3')")
                return conn


            def add_order(conn, customer, total):
                conn.execute("INSERT INTO orders (customer, total) VALUES (?, ?)", (customer, total))


            def list_orders(conn, customer, sort="id"):
                """(id, customer, total) rows of one customer, sorted by one of SORTABLE."""
                sql = "SELECT id, customer, total FROM orders WHERE customer = ? ORDER BY " + sort
                return conn.execute(sql, (customer,)).fetchall()
            '''),
        fix=(
            (
                '    sql = "SELECT id, customer, total FROM orders WHERE customer = ? ORDER BY " + sort\n',
                "    if sort not in SORTABLE:\n"
                '        raise ValueError(f"cannot sort by {sort!r}")\n'
                '    sql = "SELECT id, customer, total FROM orders WHERE customer = ? ORDER BY " + sort\n',
            ),
        ),
        functional=_d("""
            from orders import add_order, connect, list_orders


            def _db():
                conn = connect()
                add_order(conn, "acme", 30.0)
                add_order(conn, "acme", 10.0)
                add_order(conn, "globex", 5.0)
                return conn


            def test_sort_by_total():
                assert [row[2] for row in list_orders(_db(), "acme", "total")] == [10.0, 30.0]


            def test_default_sort_is_id():
                assert [row[0] for row in list_orders(_db(), "acme")] == [1, 2]
            """),
        exploit=_d("""
            import pytest
            from orders import add_order, connect, list_orders


            def test_sort_expression_is_refused():
                conn = connect()
                add_order(conn, "acme", 30.0)
                with pytest.raises(ValueError):
                    list_orders(conn, "acme", "(SELECT CASE WHEN substr(secret, 1, 1) = 'k' THEN id ELSE total END "
                                "FROM api_keys)")
            """),
    ),
    # --- CWE-78 OS command injection ----------------------------------------------------------------------------
    Spec(
        name="cmdi-line-count",
        cwe="CWE-78",
        module="reports.py",
        source=_d('''
            """Report helpers that shell out to coreutils."""

            import subprocess


            def count_lines(path):
                """Number of lines in a text file."""
                out = subprocess.run(f"wc -l {path}", shell=True, capture_output=True, text=True, check=True)
                return int(out.stdout.split()[0])
            '''),
        fix=(
            (
                'subprocess.run(f"wc -l {path}", shell=True, capture_output=True, text=True, check=True)',
                'subprocess.run(["wc", "-l", "--", path], capture_output=True, text=True, check=True)',
            ),
        ),
        functional=_d("""
            from reports import count_lines


            def test_counts_lines(tmp_path):
                report = tmp_path / "report.txt"
                report.write_text("a\\nb\\nc\\n")
                assert count_lines(str(report)) == 3
            """),
        exploit=_d("""
            import subprocess

            from reports import count_lines


            def test_file_name_is_not_a_shell_command(tmp_path, monkeypatch):
                monkeypatch.chdir(tmp_path)
                (tmp_path / "a.txt").write_text("x\\n")
                try:
                    count_lines("a.txt; touch pwned")
                except (subprocess.CalledProcessError, OSError, ValueError, IndexError):
                    pass
                assert not (tmp_path / "pwned").exists()
            """),
    ),
    Spec(
        name="cmdi-archive",
        cwe="CWE-78",
        module="backup.py",
        source=_d('''
            """Nightly backup archives."""

            import os


            def make_archive(name, src_dir):
                """Write <name>.tar with the contents of src_dir; returns the archive's path."""
                status = os.system("tar -cf " + name + ".tar -C " + src_dir + " .")
                if status != 0:
                    raise RuntimeError(f"tar failed with status {status}")
                return name + ".tar"
            '''),
        fix=(
            ("import os\n", "import subprocess\n"),
            (
                '    status = os.system("tar -cf " + name + ".tar -C " + src_dir + " .")\n',
                '    status = subprocess.run(["tar", "-cf", name + ".tar", "-C", src_dir, "."]).returncode\n',
            ),
        ),
        functional=_d("""
            import tarfile

            from backup import make_archive


            def test_archive_contains_the_files(tmp_path, monkeypatch):
                monkeypatch.chdir(tmp_path)
                src = tmp_path / "src"
                src.mkdir()
                (src / "notes.txt").write_text("hello")
                path = make_archive("nightly", str(src))
                with tarfile.open(path) as archive:
                    assert "./notes.txt" in archive.getnames()
            """),
        exploit=_d("""
            import subprocess

            from backup import make_archive


            def test_archive_name_is_not_a_shell_command(tmp_path, monkeypatch):
                monkeypatch.chdir(tmp_path)
                src = tmp_path / "src"
                src.mkdir()
                (src / "notes.txt").write_text("hello")
                try:
                    make_archive("out; touch pwned; echo", str(src))
                except (RuntimeError, subprocess.CalledProcessError, OSError):
                    pass
                assert not (tmp_path / "pwned").exists()
            """),
    ),
    Spec(
        name="cmdi-grep-count",
        cwe="CWE-78",
        module="logsearch.py",
        source=_d('''
            """Count matching lines in log files."""

            import subprocess


            def count_matches(pattern, path):
                """How many lines of the file contain the fixed string pattern."""
                out = subprocess.run("grep -c -F '" + pattern + "' " + path, shell=True, capture_output=True, text=True)
                return int(out.stdout.strip() or 0)
            '''),
        fix=(
            (
                'subprocess.run("grep -c -F \'" + pattern + "\' " + path, shell=True, capture_output=True, text=True)',
                'subprocess.run(["grep", "-c", "-F", "--", pattern, path], capture_output=True, text=True)',
            ),
        ),
        functional=_d("""
            from logsearch import count_matches


            def test_counts_matching_lines(tmp_path):
                log = tmp_path / "app.log"
                log.write_text("ERROR a\\nINFO b\\nERROR c\\n")
                assert count_matches("ERROR", str(log)) == 2
                assert count_matches("WARN", str(log)) == 0
            """),
        exploit=_d("""
            from logsearch import count_matches


            def test_pattern_is_not_a_shell_command(tmp_path, monkeypatch):
                monkeypatch.chdir(tmp_path)
                log = tmp_path / "app.log"
                log.write_text("ERROR a\\n")
                try:
                    count_matches("x' /dev/null; touch pwned; echo '", str(log))
                except ValueError:
                    pass
                assert not (tmp_path / "pwned").exists()
            """),
    ),
    # --- CWE-22 path traversal ----------------------------------------------------------------------------------
    Spec(
        name="path-upload-read",
        cwe="CWE-22",
        module="uploads.py",
        source=_d('''
            """Serve files users uploaded earlier."""

            import os


            def read_upload(base_dir, filename):
                """The bytes of an uploaded file stored under base_dir."""
                with open(os.path.join(base_dir, filename), "rb") as handle:
                    return handle.read()
            '''),
        fix=(
            (
                '    with open(os.path.join(base_dir, filename), "rb") as handle:\n',
                "    base = os.path.realpath(base_dir)\n"
                "    path = os.path.realpath(os.path.join(base, filename))\n"
                "    if os.path.commonpath([base, path]) != base:\n"
                '        raise PermissionError(f"{filename!r} is outside the upload directory")\n'
                '    with open(path, "rb") as handle:\n',
            ),
        ),
        functional=_d("""
            from uploads import read_upload


            def test_reads_an_upload(tmp_path):
                (tmp_path / "uploads").mkdir()
                (tmp_path / "uploads" / "cv.txt").write_bytes(b"resume")
                assert read_upload(str(tmp_path / "uploads"), "cv.txt") == b"resume"
            """),
        exploit=_d("""
            import pytest
            from uploads import read_upload


            @pytest.mark.parametrize("name", ["../secret.txt", "SECRET_ABSOLUTE"])
            def test_cannot_read_outside_the_upload_dir(tmp_path, name):
                (tmp_path / "uploads").mkdir()
                secret = tmp_path / "secret.txt"
                secret.write_bytes(b"top secret")
                name = str(secret) if name == "SECRET_ABSOLUTE" else name
                with pytest.raises((PermissionError, ValueError)):
                    read_upload(str(tmp_path / "uploads"), name)
            """),
    ),
    Spec(
        name="path-static-files",
        cwe="CWE-22",
        module="static.py",
        source=_d('''
            """Static file serving for the web front end."""

            from pathlib import Path


            def serve_static(root, url_path):
                """The bytes of the file under root named by a URL path such as /css/site.css."""
                relative = url_path.lstrip("/")
                return (Path(root) / relative).read_bytes()
            '''),
        fix=(
            (
                "    return (Path(root) / relative).read_bytes()\n",
                "    base = Path(root).resolve()\n"
                "    target = (base / relative).resolve()\n"
                "    if not target.is_relative_to(base):\n"
                "        raise FileNotFoundError(url_path)\n"
                "    return target.read_bytes()\n",
            ),
        ),
        functional=_d("""
            import pytest
            from static import serve_static


            def test_serves_a_file(tmp_path):
                (tmp_path / "css").mkdir()
                (tmp_path / "css" / "site.css").write_text("body{}")
                assert serve_static(str(tmp_path), "/css/site.css") == b"body{}"


            def test_missing_file(tmp_path):
                with pytest.raises(FileNotFoundError):
                    serve_static(str(tmp_path), "/nope.css")
            """),
        exploit=_d("""
            import pytest
            from static import serve_static


            def test_dot_dot_cannot_leave_the_root(tmp_path):
                root = tmp_path / "public"
                root.mkdir()
                (tmp_path / "config.ini").write_text("password=hunter2")
                with pytest.raises((FileNotFoundError, PermissionError, ValueError)):
                    serve_static(str(root), "/../config.ini")
            """),
    ),
    Spec(
        name="path-zip-slip",
        cwe="CWE-22",
        module="unpack.py",
        source=_d('''
            """Unpack user-supplied zip archives."""

            import os
            import zipfile


            def extract_all(zip_path, dest):
                """Extract every file of the archive under dest; returns the paths written."""
                written = []
                with zipfile.ZipFile(zip_path) as archive:
                    for name in archive.namelist():
                        if name.endswith("/"):
                            continue
                        target = os.path.join(dest, name)
                        os.makedirs(os.path.dirname(target), exist_ok=True)
                        with open(target, "wb") as handle:
                            handle.write(archive.read(name))
                        written.append(target)
                return written
            '''),
        fix=(
            (
                "            target = os.path.join(dest, name)\n",
                "            target = os.path.join(dest, name)\n"
                "            root = os.path.realpath(dest)\n"
                "            if os.path.commonpath([root, os.path.realpath(target)]) != root:\n"
                '                raise ValueError(f"archive member {name!r} escapes {dest}")\n',
            ),
        ),
        functional=_d("""
            import zipfile

            from unpack import extract_all


            def test_extracts_nested_files(tmp_path):
                archive = tmp_path / "a.zip"
                with zipfile.ZipFile(archive, "w") as zf:
                    zf.writestr("docs/readme.txt", "hi")
                dest = tmp_path / "out"
                dest.mkdir()
                extract_all(str(archive), str(dest))
                assert (dest / "docs" / "readme.txt").read_text() == "hi"
            """),
        exploit=_d("""
            import zipfile

            import pytest
            from unpack import extract_all


            def test_member_cannot_escape_the_destination(tmp_path):
                archive = tmp_path / "evil.zip"
                with zipfile.ZipFile(archive, "w") as zf:
                    zf.writestr("../escaped.txt", "owned")
                dest = tmp_path / "out"
                dest.mkdir()
                with pytest.raises(ValueError):
                    extract_all(str(archive), str(dest))
                assert not (tmp_path / "escaped.txt").exists()
            """),
    ),
    # --- CWE-502 unsafe deserialization -------------------------------------------------------------------------
    Spec(
        name="deser-session-pickle",
        cwe="CWE-502",
        module="session.py",
        source=_d('''
            """Client-side session tokens."""

            import base64
            import pickle


            def dump_session(data):
                return base64.b64encode(pickle.dumps(data)).decode("ascii")


            def load_session(token):
                return pickle.loads(base64.b64decode(token))
            '''),
        fix=(
            ("import pickle\n", "import json\n"),
            ("base64.b64encode(pickle.dumps(data))", "base64.b64encode(json.dumps(data).encode())"),
            ("pickle.loads(base64.b64decode(token))", "json.loads(base64.b64decode(token))"),
        ),
        functional=_d("""
            from session import dump_session, load_session


            def test_round_trip():
                data = {"user": "alice", "cart": [1, 2, 3]}
                assert load_session(dump_session(data)) == data
            """),
        exploit=_d("""
            import base64

            import pytest
            from session import load_session


            def test_token_cannot_run_code():
                evil = base64.b64encode(b"cos\\ngetcwd\\n(tR.").decode()
                with pytest.raises(ValueError):
                    load_session(evil)
            """),
    ),
    Spec(
        name="deser-yaml-config",
        cwe="CWE-502",
        module="settings_loader.py",
        source=_d('''
            """Load service settings from YAML text."""

            import yaml


            def load_config(text):
                data = yaml.load(text, Loader=yaml.Loader)
                if not isinstance(data, dict):
                    raise ValueError("config must be a mapping")
                return data
            '''),
        fix=(("yaml.load(text, Loader=yaml.Loader)", "yaml.safe_load(text)"),),
        functional=_d("""
            import pytest
            from settings_loader import load_config


            def test_loads_a_mapping():
                assert load_config("port: 8080\\nhosts: [a, b]\\n") == {"port": 8080, "hosts": ["a", "b"]}


            def test_rejects_a_list():
                with pytest.raises(ValueError):
                    load_config("- 1\\n- 2\\n")
            """),
        exploit=_d("""
            import pytest
            import yaml
            from settings_loader import load_config


            def test_python_tags_are_refused():
                with pytest.raises(yaml.YAMLError):
                    load_config("settings: !!python/object/apply:os.getcwd []\\n")
            """),
    ),
    Spec(
        name="deser-pickle-cache",
        cwe="CWE-502",
        module="cache_store.py",
        source=_d('''
            """A tiny on-disk cache shared by workers."""

            import pickle
            from pathlib import Path


            def save(path, value):
                Path(path).write_bytes(pickle.dumps(value))


            def load(path):
                return pickle.loads(Path(path).read_bytes())
            '''),
        fix=(
            ("import pickle\n", "import json\n"),
            ("write_bytes(pickle.dumps(value))", "write_bytes(json.dumps(value).encode())"),
            ("pickle.loads(Path(path).read_bytes())", "json.loads(Path(path).read_bytes())"),
        ),
        functional=_d("""
            from cache_store import load, save


            def test_round_trip(tmp_path):
                save(tmp_path / "c.bin", {"hits": 3, "keys": ["a", "b"]})
                assert load(tmp_path / "c.bin") == {"hits": 3, "keys": ["a", "b"]}
            """),
        exploit=_d("""
            import pytest
            from cache_store import load


            def test_planted_cache_file_cannot_run_code(tmp_path):
                (tmp_path / "c.bin").write_bytes(b"cos\\ngetcwd\\n(tR.")
                with pytest.raises(ValueError):
                    load(tmp_path / "c.bin")
            """),
    ),
    # --- CWE-327 / CWE-328 weak cryptography --------------------------------------------------------------------
    Spec(
        name="crypto-md5-fingerprint",
        cwe="CWE-328",
        module="dedupe.py",
        source=_d('''
            """Content fingerprints for de-duplicating uploaded files."""

            import hashlib


            def fingerprint(data: bytes) -> str:
                return hashlib.md5(data).hexdigest()


            def same_content(a: bytes, b: bytes) -> bool:
                return fingerprint(a) == fingerprint(b)
            '''),
        fix=(("hashlib.md5(data)", "hashlib.sha256(data)"),),
        functional=_d("""
            from dedupe import fingerprint, same_content


            def test_equal_content_equal_fingerprint():
                assert same_content(b"abc", b"abc")
                assert not same_content(b"abc", b"abd")
                assert fingerprint(b"x") == fingerprint(b"x")
            """),
        exploit=_d("""
            import hashlib

            from dedupe import fingerprint


            def test_fingerprint_is_collision_resistant():
                digest = fingerprint(b"abc")
                assert digest not in (hashlib.md5(b"abc").hexdigest(), hashlib.sha1(b"abc").hexdigest())
                assert len(digest) >= 64
            """),
    ),
    Spec(
        name="crypto-md5-signature",
        cwe="CWE-327",
        module="signing.py",
        source=_d('''
            """Sign webhook payloads with a shared key."""

            import hashlib
            import hmac


            def sign(key: bytes, message: bytes) -> str:
                return hashlib.md5(key + message).hexdigest()


            def verify(key: bytes, message: bytes, signature: str) -> bool:
                return hmac.compare_digest(sign(key, message), signature)
            '''),
        fix=(("hashlib.md5(key + message).hexdigest()", "hmac.new(key, message, hashlib.sha256).hexdigest()"),),
        functional=_d("""
            from signing import sign, verify


            def test_verify_accepts_own_signature():
                assert verify(b"k", b"payload", sign(b"k", b"payload"))


            def test_verify_rejects_other_key():
                assert not verify(b"other", b"payload", sign(b"k", b"payload"))
            """),
        exploit=_d("""
            import hashlib

            from signing import sign


            def test_signature_is_a_real_mac():
                key, message = b"shared-key", b"amount=10"
                prefix_macs = {hashlib.new(name, key + message).hexdigest() for name in ("md5", "sha1", "sha256")}
                signature = sign(key, message)
                assert signature not in prefix_macs
                assert len(signature) >= 64
            """),
    ),
    Spec(
        name="crypto-sha1-passwords",
        cwe="CWE-328",
        module="passwords.py",
        source=_d('''
            """Password storage for the admin console."""

            import hashlib


            def hash_password(password: str) -> str:
                return hashlib.sha1(password.encode()).hexdigest()


            def check_password(password: str, stored: str) -> bool:
                return hash_password(password) == stored
            '''),
        fix=(
            ("import hashlib\n", "import hashlib\nimport hmac\nimport os\n"),
            (
                "    return hashlib.sha1(password.encode()).hexdigest()\n",
                "    salt = os.urandom(16)\n"
                '    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, 20_000)\n'
                '    return salt.hex() + "$" + digest.hex()\n',
            ),
            (
                "    return hash_password(password) == stored\n",
                '    salt_hex, _, digest_hex = stored.partition("$")\n'
                '    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), bytes.fromhex(salt_hex), 20_000)\n'
                "    return hmac.compare_digest(digest.hex(), digest_hex)\n",
            ),
        ),
        functional=_d("""
            from passwords import check_password, hash_password


            def test_check_accepts_the_right_password():
                assert check_password("correct horse", hash_password("correct horse"))


            def test_check_rejects_a_wrong_password():
                assert not check_password("wrong", hash_password("correct horse"))
            """),
        exploit=_d("""
            import hashlib

            from passwords import hash_password


            def test_hashes_are_salted_and_not_plain_digests():
                first, second = hash_password("hunter2"), hash_password("hunter2")
                assert first != second
                plain = {hashlib.new(name, b"hunter2").hexdigest() for name in ("md5", "sha1", "sha256")}
                assert first not in plain
            """),
    ),
    # --- CWE-798 hard-coded credentials -------------------------------------------------------------------------
    Spec(
        name="secret-api-key",
        cwe="CWE-798",
        module="payments.py",
        source=_d('''
            """HTTP headers for the payments provider."""

            API_KEY = "sk_live_51HcVq2ExAmPlEb7d9Qz"


            def auth_headers():
                return {"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"}
            '''),
        fix=(
            ('API_KEY = "sk_live_51HcVq2ExAmPlEb7d9Qz"\n', "import os\n"),
            (
                '    return {"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"}',
                '    api_key = os.environ["PAYMENTS_API_KEY"]\n'
                '    return {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"}',
            ),
        ),
        functional=_d("""
            from payments import auth_headers


            def test_headers_shape(monkeypatch):
                monkeypatch.setenv("PAYMENTS_API_KEY", "sk_test_env")
                headers = auth_headers()
                assert headers["Content-Type"] == "application/json"
                assert headers["Authorization"].startswith("Bearer ")
            """),
        exploit=_d("""
            import inspect

            import payments


            def test_key_comes_from_the_environment(monkeypatch):
                monkeypatch.setenv("PAYMENTS_API_KEY", "sk_test_env")
                assert payments.auth_headers()["Authorization"] == "Bearer sk_test_env"


            def test_no_live_key_in_the_source():
                assert "sk_live_" not in inspect.getsource(payments)
            """),
    ),
    Spec(
        name="secret-db-password",
        cwe="CWE-798",
        module="database.py",
        source=_d('''
            """Connection strings for the reporting database."""

            DB_USER = "reporting"
            DB_PASSWORD = "Summer2024!reporting"


            def dsn(host, name):
                return f"postgresql://{DB_USER}:{DB_PASSWORD}@{host}/{name}"
            '''),
        fix=(
            ('DB_USER = "reporting"\nDB_PASSWORD = "Summer2024!reporting"\n', 'import os\n\nDB_USER = "reporting"\n'),
            (
                '    return f"postgresql://{DB_USER}:{DB_PASSWORD}@{host}/{name}"',
                '    password = os.environ["DB_PASSWORD"]\n    return f"postgresql://{DB_USER}:{password}@{host}/{name}"',
            ),
        ),
        functional=_d("""
            from database import dsn


            def test_dsn_shape(monkeypatch):
                monkeypatch.setenv("DB_PASSWORD", "pw")
                url = dsn("db.internal", "reports")
                assert url.startswith("postgresql://reporting:")
                assert url.endswith("@db.internal/reports")
            """),
        exploit=_d("""
            import inspect

            import database


            def test_password_comes_from_the_environment(monkeypatch):
                monkeypatch.setenv("DB_PASSWORD", "from-env-42")
                assert database.dsn("h", "d") == "postgresql://reporting:from-env-42@h/d"


            def test_no_password_in_the_source():
                assert "Summer2024" not in inspect.getsource(database)
            """),
    ),
    Spec(
        name="secret-token-key",
        cwe="CWE-798",
        module="tokens.py",
        source=_d('''
            """Signed login tokens: "<user>.<hmac>"."""

            import hashlib
            import hmac

            SECRET_KEY = b"dev-secret-do-not-ship"


            def make_token(user):
                signature = hmac.new(SECRET_KEY, user.encode(), hashlib.sha256).hexdigest()
                return f"{user}.{signature}"


            def read_token(token):
                user, _, signature = token.rpartition(".")
                expected = hmac.new(SECRET_KEY, user.encode(), hashlib.sha256).hexdigest()
                if not hmac.compare_digest(signature, expected):
                    raise PermissionError("bad token signature")
                return user
            '''),
        fix=(
            (
                'import hmac\n\nSECRET_KEY = b"dev-secret-do-not-ship"\n',
                'import hmac\nimport os\n\n\ndef _secret():\n    return os.environ["TOKEN_SECRET"].encode()\n',
            ),
            (
                "hmac.new(SECRET_KEY, user.encode(), hashlib.sha256).hexdigest()\n    return",
                "hmac.new(_secret(), user.encode(), hashlib.sha256).hexdigest()\n    return",
            ),
            ("expected = hmac.new(SECRET_KEY,", "expected = hmac.new(_secret(),"),
        ),
        functional=_d("""
            import pytest
            from tokens import make_token, read_token


            def test_round_trip(monkeypatch):
                monkeypatch.setenv("TOKEN_SECRET", "rotated")
                assert read_token(make_token("alice")) == "alice"


            def test_tampered_token_is_refused(monkeypatch):
                monkeypatch.setenv("TOKEN_SECRET", "rotated")
                user, _, signature = make_token("alice").rpartition(".")
                with pytest.raises(PermissionError):
                    read_token(f"admin.{signature}")
            """),
        exploit=_d("""
            import hashlib
            import hmac

            import pytest
            from tokens import read_token


            def test_token_forged_with_the_leaked_key_is_refused(monkeypatch):
                monkeypatch.setenv("TOKEN_SECRET", "rotated")
                forged = hmac.new(b"dev-secret-do-not-ship", b"admin", hashlib.sha256).hexdigest()
                with pytest.raises(PermissionError):
                    read_token(f"admin.{forged}")
            """),
    ),
    # --- CWE-918 server-side request forgery --------------------------------------------------------------------
    Spec(
        name="ssrf-avatar-fetch",
        cwe="CWE-918",
        module="avatars.py",
        source=_d('''
            """Fetch profile pictures from image hosts."""

            from urllib.parse import urlparse

            ALLOWED_HOSTS = {"images.example.com", "cdn.example.com"}


            def fetch_avatar(url, opener):
                """The image bytes at url; opener(url) -> bytes performs the request (injected for testing)."""
                parsed = urlparse(url)
                if parsed.scheme not in ("http", "https"):
                    raise ValueError("unsupported URL scheme")
                return opener(url)
            '''),
        fix=(
            (
                '    if parsed.scheme not in ("http", "https"):\n        raise ValueError("unsupported URL scheme")\n',
                '    if parsed.scheme not in ("http", "https"):\n        raise ValueError("unsupported URL scheme")\n'
                "    if parsed.hostname not in ALLOWED_HOSTS:\n"
                '        raise ValueError(f"host {parsed.hostname!r} is not an image host")\n',
            ),
        ),
        functional=_d("""
            import pytest
            from avatars import fetch_avatar


            def test_fetches_from_an_image_host():
                calls = []
                assert fetch_avatar("https://images.example.com/u/1.png", lambda u: calls.append(u) or b"png") == b"png"
                assert calls == ["https://images.example.com/u/1.png"]


            def test_rejects_other_schemes():
                with pytest.raises(ValueError):
                    fetch_avatar("file:///etc/passwd", lambda u: b"")
            """),
        exploit=_d("""
            import pytest
            from avatars import fetch_avatar


            @pytest.mark.parametrize("url", ["http://169.254.169.254/latest/meta-data/", "http://localhost:8080/admin"])
            def test_internal_hosts_are_never_requested(url):
                calls = []
                with pytest.raises(ValueError):
                    fetch_avatar(url, lambda u: calls.append(u) or b"")
                assert calls == []
            """),
    ),
    Spec(
        name="ssrf-webhook-target",
        cwe="CWE-918",
        module="webhooks.py",
        source=_d('''
            """Validate webhook targets customers register."""

            import ipaddress
            from urllib.parse import urlparse


            def validate_webhook(url):
                """The URL if it may receive webhooks, else ValueError."""
                parsed = urlparse(url)
                if parsed.scheme not in ("http", "https") or not parsed.hostname:
                    raise ValueError("webhook must be an http(s) URL")
                return url
            '''),
        fix=(
            (
                '        raise ValueError("webhook must be an http(s) URL")\n',
                '        raise ValueError("webhook must be an http(s) URL")\n'
                "    try:\n"
                "        address = ipaddress.ip_address(parsed.hostname)\n"
                "    except ValueError:\n"
                "        address = None\n"
                '    if parsed.hostname == "localhost" or (address is not None and not address.is_global):\n'
                '        raise ValueError("webhook must not target an internal address")\n',
            ),
        ),
        functional=_d("""
            import pytest
            from webhooks import validate_webhook


            def test_public_https_is_fine():
                assert validate_webhook("https://hooks.example.org/x") == "https://hooks.example.org/x"


            def test_other_schemes_are_refused():
                with pytest.raises(ValueError):
                    validate_webhook("gopher://hooks.example.org/")
            """),
        exploit=_d("""
            import pytest
            from webhooks import validate_webhook


            @pytest.mark.parametrize(
                "url", ["http://127.0.0.1:8080/admin", "http://10.0.0.5/", "http://[::1]/", "http://localhost/"]
            )
            def test_internal_targets_are_refused(url):
                with pytest.raises(ValueError):
                    validate_webhook(url)
            """),
    ),
    Spec(
        name="ssrf-prefix-check",
        cwe="CWE-918",
        module="proxy.py",
        source=_d('''
            """Forward requests to the partner API only."""


            def upstream_url(url):
                """The URL to forward, if it belongs to the partner API; else ValueError."""
                if not url.startswith("https://api.example.com"):
                    raise ValueError("only the partner API may be proxied")
                return url
            '''),
        fix=(
            (
                '"""Forward requests to the partner API only."""\n',
                '"""Forward requests to the partner API only."""\n\nfrom urllib.parse import urlparse\n',
            ),
            (
                '    if not url.startswith("https://api.example.com"):\n',
                "    parsed = urlparse(url)\n"
                '    if parsed.scheme != "https" or parsed.hostname != "api.example.com" or parsed.username:\n',
            ),
        ),
        functional=_d("""
            import pytest
            from proxy import upstream_url


            def test_partner_url_passes():
                assert upstream_url("https://api.example.com/v1/items") == "https://api.example.com/v1/items"


            def test_other_host_is_refused():
                with pytest.raises(ValueError):
                    upstream_url("https://evil.example.net/")
            """),
        exploit=_d("""
            import pytest
            from proxy import upstream_url


            @pytest.mark.parametrize(
                "url", ["https://api.example.com.evil.net/steal", "https://api.example.com@169.254.169.254/latest"]
            )
            def test_lookalike_urls_are_refused(url):
                with pytest.raises(ValueError):
                    upstream_url(url)
            """),
    ),
    # --- CWE-611 XML external entities --------------------------------------------------------------------------
    Spec(
        name="xxe-sax-titles",
        cwe="CWE-611",
        module="feeds.py",
        source=_d('''
            """Read item titles from partner RSS feeds."""

            import io
            import xml.sax
            from xml.sax.handler import ContentHandler, feature_external_ges


            class _Titles(ContentHandler):
                def __init__(self):
                    super().__init__()
                    self.titles, self._buffer, self._inside = [], [], False

                def startElement(self, name, attrs):
                    self._inside, self._buffer = name == "title", []

                def characters(self, content):
                    if self._inside:
                        self._buffer.append(content)

                def endElement(self, name):
                    if name == "title":
                        self.titles.append("".join(self._buffer))
                        self._inside = False


            def read_titles(xml_text):
                handler = _Titles()
                parser = xml.sax.make_parser()
                parser.setContentHandler(handler)
                parser.setFeature(feature_external_ges, True)
                parser.parse(io.StringIO(xml_text))
                return handler.titles
            '''),
        fix=(("parser.setFeature(feature_external_ges, True)", "parser.setFeature(feature_external_ges, False)"),),
        functional=_d("""
            from feeds import read_titles


            def test_reads_titles():
                feed = "<rss><item><title>One</title></item><item><title>Two</title></item></rss>"
                assert read_titles(feed) == ["One", "Two"]
            """),
        exploit=_d("""
            from feeds import read_titles


            def test_external_entities_are_not_resolved(tmp_path):
                secret = tmp_path / "secret.txt"
                secret.write_text("TOPSECRET")
                feed = (
                    f'<?xml version="1.0"?><!DOCTYPE rss [<!ENTITY x SYSTEM "file://{secret}">]>'
                    "<rss><item><title>&x;</title></item></rss>"
                )
                assert "TOPSECRET" not in "".join(read_titles(feed))
            """),
    ),
    Spec(
        name="xxe-minidom-order",
        cwe="CWE-611",
        module="orders_xml.py",
        source=_d('''
            """Parse purchase orders sent as XML."""

            import xml.sax
            from xml.dom import minidom
            from xml.sax.handler import feature_external_ges


            def _parser():
                parser = xml.sax.make_parser()
                parser.setFeature(feature_external_ges, True)
                return parser


            def parse_order(xml_text):
                """{"id": ..., "note": ...} from <order id="..."><note>...</note></order>."""
                document = minidom.parseString(xml_text, parser=_parser())
                order = document.documentElement
                note = order.getElementsByTagName("note")
                if not note:
                    return {"id": order.getAttribute("id"), "note": ""}
                text = "".join(node.data for node in note[0].childNodes if node.nodeType == node.TEXT_NODE)
                return {"id": order.getAttribute("id"), "note": text}
            '''),
        fix=(("parser.setFeature(feature_external_ges, True)", "parser.setFeature(feature_external_ges, False)"),),
        functional=_d("""
            from orders_xml import parse_order


            def test_parses_an_order():
                order = parse_order('<order id="7"><note>leave at door</note></order>')
                assert order == {"id": "7", "note": "leave at door"}
            """),
        exploit=_d("""
            from orders_xml import parse_order


            def test_external_entities_are_not_resolved(tmp_path):
                secret = tmp_path / "secret.txt"
                secret.write_text("TOPSECRET")
                xml = (
                    f'<?xml version="1.0"?><!DOCTYPE order [<!ENTITY x SYSTEM "file://{secret}">]>'
                    '<order id="1"><note>&x;</note></order>'
                )
                try:
                    note = parse_order(xml)["note"]
                except Exception:
                    note = ""
                assert "TOPSECRET" not in note
            """),
    ),
    Spec(
        name="xxe-pulldom-settings",
        cwe="CWE-611",
        module="xml_settings.py",
        source=_d('''
            """Read <setting name="...">value</setting> elements from an XML document."""

            import xml.sax
            from xml.dom import pulldom
            from xml.sax.handler import feature_external_ges


            def read_settings(xml_text):
                parser = xml.sax.make_parser()
                parser.setFeature(feature_external_ges, True)
                settings = {}
                events = pulldom.parseString(xml_text, parser=parser)
                for event, node in events:
                    if event == pulldom.START_ELEMENT and node.tagName == "setting":
                        events.expandNode(node)
                        settings[node.getAttribute("name")] = "".join(
                            child.data for child in node.childNodes if child.nodeType == child.TEXT_NODE
                        )
                return settings
            '''),
        fix=(("parser.setFeature(feature_external_ges, True)", "parser.setFeature(feature_external_ges, False)"),),
        functional=_d("""
            from xml_settings import read_settings


            def test_reads_settings():
                xml = '<settings><setting name="mode">fast</setting><setting name="level">3</setting></settings>'
                assert read_settings(xml) == {"mode": "fast", "level": "3"}
            """),
        exploit=_d("""
            from xml_settings import read_settings


            def test_external_entities_are_not_resolved(tmp_path):
                secret = tmp_path / "secret.txt"
                secret.write_text("TOPSECRET")
                xml = (
                    f'<?xml version="1.0"?><!DOCTYPE settings [<!ENTITY x SYSTEM "file://{secret}">]>'
                    '<settings><setting name="mode">&x;</setting></settings>'
                )
                try:
                    values = "".join(read_settings(xml).values())
                except Exception:
                    values = ""
                assert "TOPSECRET" not in values
            """),
    ),
    # --- CWE-95 eval injection ----------------------------------------------------------------------------------
    Spec(
        name="eval-calculator",
        cwe="CWE-95",
        module="calc.py",
        source=_d('''
            """Arithmetic for the spreadsheet formula bar."""


            def evaluate(expression):
                """The value of an arithmetic expression such as "2 * (3 + 4)"."""
                return eval(expression, {"__builtins__": {}}, {})
            '''),
        fix=(
            (
                '"""Arithmetic for the spreadsheet formula bar."""\n',
                '"""Arithmetic for the spreadsheet formula bar."""\n\n'
                "import ast\n"
                "import operator\n\n"
                "_OPERATORS = {\n"
                "    ast.Add: operator.add,\n"
                "    ast.Sub: operator.sub,\n"
                "    ast.Mult: operator.mul,\n"
                "    ast.Div: operator.truediv,\n"
                "    ast.USub: operator.neg,\n"
                "    ast.UAdd: operator.pos,\n"
                "}\n\n\n"
                "def _value(node):\n"
                "    if isinstance(node, ast.Constant) and type(node.value) in (int, float):\n"
                "        return node.value\n"
                "    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:\n"
                "        return _OPERATORS[type(node.op)](_value(node.left), _value(node.right))\n"
                "    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:\n"
                "        return _OPERATORS[type(node.op)](_value(node.operand))\n"
                '    raise ValueError("only numbers and + - * / are allowed")\n',
            ),
            (
                '    return eval(expression, {"__builtins__": {}}, {})',
                '    return _value(ast.parse(expression, mode="eval").body)',
            ),
        ),
        functional=_d("""
            from calc import evaluate


            def test_arithmetic():
                assert evaluate("2 * (3 + 4)") == 14
                assert evaluate("-1.5 + 4 / 2") == 0.5
            """),
        exploit=_d("""
            import pytest
            from calc import evaluate


            @pytest.mark.parametrize("expression", ["().__class__.__mro__[1].__subclasses__()", "[x for x in (1, 2)]"])
            def test_only_arithmetic_is_evaluated(expression):
                with pytest.raises((ValueError, SyntaxError)):
                    evaluate(expression)
            """),
    ),
    Spec(
        name="eval-setting-values",
        cwe="CWE-95",
        module="setting_values.py",
        source=_d('''
            """Typed values for settings stored as text."""


            def parse_value(raw):
                """A Python literal (number, string, list, dict, bool) from its text."""
                return eval(raw)
            '''),
        fix=(
            (
                '"""Typed values for settings stored as text."""\n',
                '"""Typed values for settings stored as text."""\n\nimport ast\n',
            ),
            ("    return eval(raw)", "    return ast.literal_eval(raw)"),
        ),
        functional=_d("""
            from setting_values import parse_value


            def test_literals():
                assert parse_value("[1, 2]") == [1, 2]
                assert parse_value("{'a': True}") == {"a": True}
                assert parse_value("'text'") == "text"
                assert parse_value("42") == 42
            """),
        exploit=_d("""
            import pytest
            from setting_values import parse_value


            def test_code_is_not_run():
                with pytest.raises(ValueError):
                    parse_value("__import__('os').getcwd()")
            """),
    ),
    Spec(
        name="eval-record-filter",
        cwe="CWE-95",
        module="filters.py",
        source=_d('''
            """Record filters built from query-string parameters."""


            def matches(record, field, op, value):
                """Whether record[field] <op> value holds, for op in ==, !=, <, <=, >, >=."""
                return eval(f"record[{field!r}] {op} {value!r}")
            '''),
        fix=(
            (
                '"""Record filters built from query-string parameters."""\n',
                '"""Record filters built from query-string parameters."""\n\n'
                "import operator\n\n"
                '_OPERATORS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, '
                '">": operator.gt, ">=": operator.ge}\n',
            ),
            (
                '    return eval(f"record[{field!r}] {op} {value!r}")',
                "    if op not in _OPERATORS:\n"
                '        raise ValueError(f"unknown operator {op!r}")\n'
                "    return _OPERATORS[op](record[field], value)",
            ),
        ),
        functional=_d("""
            from filters import matches


            def test_comparisons():
                record = {"age": 30, "name": "ann"}
                assert matches(record, "age", ">=", 18)
                assert not matches(record, "age", "<", 18)
                assert matches(record, "name", "==", "ann")
            """),
        exploit=_d("""
            import pytest
            from filters import matches


            def test_operator_cannot_inject_code():
                with pytest.raises(ValueError):
                    matches({"age": 30}, "age", "and __import__('os').getcwd() or", 3)
            """),
    ),
    # --- CWE-125 / CWE-193 bounds -------------------------------------------------------------------------------
    Spec(
        name="bounds-negative-index",
        cwe="CWE-125",
        module="records.py",
        source=_d('''
            """Per-tenant record access by client-supplied index."""


            def get_record(records, index):
                """The record at a 0-based index; IndexError outside the list."""
                if index >= len(records):
                    raise IndexError(f"no record {index}")
                return records[index]
            '''),
        fix=(("    if index >= len(records):", "    if not 0 <= index < len(records):"),),
        functional=_d("""
            import pytest
            from records import get_record


            def test_reads_in_range():
                assert get_record(["a", "b"], 1) == "b"


            def test_past_the_end_fails():
                with pytest.raises(IndexError):
                    get_record(["a", "b"], 2)
            """),
        exploit=_d("""
            import pytest
            from records import get_record


            def test_negative_index_is_out_of_bounds():
                with pytest.raises(IndexError):
                    get_record(["mine", "someone else's"], -1)
            """),
    ),
    Spec(
        name="bounds-guard-byte",
        cwe="CWE-193",
        module="fixedbuffer.py",
        source=_d('''
            """A fixed-size byte buffer followed by a guard byte that detects overruns."""

            GUARD = 0xA5


            class FixedBuffer:
                def __init__(self, size):
                    self.size = size
                    self._data = bytearray(size + 1)
                    self._data[size] = GUARD

                def write(self, pos, value):
                    if pos < 0 or pos > self.size:
                        raise BufferError(f"position {pos} outside a buffer of {self.size}")
                    self._data[pos] = value

                def read(self, pos):
                    if pos < 0 or pos > self.size:
                        raise BufferError(f"position {pos} outside a buffer of {self.size}")
                    return self._data[pos]

                def intact(self):
                    return self._data[self.size] == GUARD
            '''),
        fix=(
            (
                "    def write(self, pos, value):\n        if pos < 0 or pos > self.size:",
                "    def write(self, pos, value):\n        if pos < 0 or pos >= self.size:",
            ),
            (
                "    def read(self, pos):\n        if pos < 0 or pos > self.size:",
                "    def read(self, pos):\n        if pos < 0 or pos >= self.size:",
            ),
        ),
        functional=_d("""
            from fixedbuffer import FixedBuffer


            def test_write_and_read():
                buffer = FixedBuffer(4)
                buffer.write(3, 7)
                assert buffer.read(3) == 7
                assert buffer.intact()
            """),
        exploit=_d("""
            import pytest
            from fixedbuffer import FixedBuffer


            def test_write_one_past_the_end_is_refused():
                buffer = FixedBuffer(4)
                with pytest.raises(BufferError):
                    buffer.write(4, 0)
                assert buffer.intact()


            def test_read_one_past_the_end_is_refused():
                with pytest.raises(BufferError):
                    FixedBuffer(4).read(4)
            """),
    ),
    Spec(
        name="bounds-ring-stale-read",
        cwe="CWE-193",
        module="messagelog.py",
        source=_d('''
            """The last messages of a chat room, kept in a ring of slots."""


            class MessageLog:
                def __init__(self, capacity):
                    self._slots = [None] * capacity
                    self._start = 0
                    self._count = 0

                def append(self, message):
                    capacity = len(self._slots)
                    self._slots[(self._start + self._count) % capacity] = message
                    if self._count < capacity:
                        self._count += 1
                    else:
                        self._start = (self._start + 1) % capacity

                def clear(self):
                    self._start = 0
                    self._count = 0

                def get(self, index):
                    """The index-th kept message, oldest first."""
                    if index < 0 or index > self._count:
                        raise IndexError(index)
                    return self._slots[(self._start + index) % len(self._slots)]
            '''),
        fix=(("if index < 0 or index > self._count:", "if index < 0 or index >= self._count:"),),
        functional=_d("""
            from messagelog import MessageLog


            def test_keeps_the_latest_messages():
                log = MessageLog(2)
                for message in ("a", "b", "c"):
                    log.append(message)
                assert [log.get(0), log.get(1)] == ["b", "c"]
            """),
        exploit=_d("""
            import pytest
            from messagelog import MessageLog


            def test_cleared_messages_cannot_be_read_back():
                log = MessageLog(4)
                log.append("alice: my pin is 4921")
                log.append("alice: bye")
                log.clear()
                log.append("bob: hi")
                with pytest.raises(IndexError):
                    log.get(1)
            """),
    ),
    # --- CWE-862 missing authorization --------------------------------------------------------------------------
    Spec(
        name="authz-delete-document",
        cwe="CWE-862",
        module="documents.py",
        source=_d('''
            """A document store with per-owner access."""

            from dataclasses import dataclass


            @dataclass(frozen=True)
            class User:
                name: str
                is_admin: bool = False


            class DocumentStore:
                def __init__(self):
                    self._docs = {}
                    self._next_id = 1

                def create(self, owner, text):
                    doc_id = self._next_id
                    self._next_id += 1
                    self._docs[doc_id] = (owner.name, text)
                    return doc_id

                def _check(self, user, doc_id):
                    owner, _ = self._docs[doc_id]
                    if owner != user.name and not user.is_admin:
                        raise PermissionError(f"{user.name} may not access document {doc_id}")

                def read(self, user, doc_id):
                    self._check(user, doc_id)
                    return self._docs[doc_id][1]

                def delete(self, user, doc_id):
                    del self._docs[doc_id]

                def exists(self, doc_id):
                    return doc_id in self._docs
            '''),
        fix=(
            (
                "    def delete(self, user, doc_id):\n        del self._docs[doc_id]",
                "    def delete(self, user, doc_id):\n"
                "        self._check(user, doc_id)\n"
                "        del self._docs[doc_id]",
            ),
        ),
        functional=_d("""
            import pytest
            from documents import DocumentStore, User


            def test_owner_reads_and_deletes():
                store, alice = DocumentStore(), User("alice")
                doc = store.create(alice, "draft")
                assert store.read(alice, doc) == "draft"
                store.delete(alice, doc)
                assert not store.exists(doc)


            def test_others_cannot_read():
                store = DocumentStore()
                doc = store.create(User("alice"), "draft")
                with pytest.raises(PermissionError):
                    store.read(User("mallory"), doc)
            """),
        exploit=_d("""
            import pytest
            from documents import DocumentStore, User


            def test_others_cannot_delete():
                store = DocumentStore()
                doc = store.create(User("alice"), "draft")
                with pytest.raises(PermissionError):
                    store.delete(User("mallory"), doc)
                assert store.exists(doc)
            """),
    ),
    Spec(
        name="authz-role-change",
        cwe="CWE-862",
        module="directory.py",
        source=_d('''
            """Team membership and roles."""

            ROLES = ("member", "admin")


            class Directory:
                def __init__(self):
                    self.roles = {}

                def add(self, name, role="member"):
                    self.roles[name] = role

                def set_role(self, actor, target, role):
                    """actor changes target's role."""
                    if role not in ROLES:
                        raise ValueError(f"unknown role {role!r}")
                    self.roles[target] = role
            '''),
        fix=(
            (
                '            raise ValueError(f"unknown role {role!r}")\n',
                '            raise ValueError(f"unknown role {role!r}")\n'
                '        if self.roles.get(actor) != "admin":\n'
                '            raise PermissionError(f"{actor} may not change roles")\n',
            ),
        ),
        functional=_d("""
            import pytest
            from directory import Directory


            def test_admin_promotes_member():
                team = Directory()
                team.add("root", "admin")
                team.add("bob")
                team.set_role("root", "bob", "admin")
                assert team.roles["bob"] == "admin"


            def test_unknown_role():
                team = Directory()
                team.add("root", "admin")
                with pytest.raises(ValueError):
                    team.set_role("root", "root", "owner")
            """),
        exploit=_d("""
            import pytest
            from directory import Directory


            def test_member_cannot_promote_itself():
                team = Directory()
                team.add("root", "admin")
                team.add("eve")
                with pytest.raises(PermissionError):
                    team.set_role("eve", "eve", "admin")
                assert team.roles["eve"] == "member"
            """),
    ),
    Spec(
        name="authz-invoice-tenant",
        cwe="CWE-862",
        module="billing.py",
        source=_d('''
            """Invoices of a multi-tenant billing service."""


            class Billing:
                def __init__(self):
                    self._invoices = {}

                def add(self, tenant, invoice_id, amount):
                    self._invoices[invoice_id] = (tenant, amount)

                def invoice(self, tenant, invoice_id):
                    """The invoice as a dict, for the tenant that asks."""
                    owner, amount = self._invoices[invoice_id]
                    return {"id": invoice_id, "tenant": owner, "amount": amount}
            '''),
        fix=(
            (
                "        owner, amount = self._invoices[invoice_id]\n",
                "        owner, amount = self._invoices[invoice_id]\n"
                "        if owner != tenant:\n"
                '            raise PermissionError(f"invoice {invoice_id} belongs to another tenant")\n',
            ),
        ),
        functional=_d("""
            from billing import Billing


            def test_tenant_reads_own_invoice():
                billing = Billing()
                billing.add("acme", "INV-1", 120)
                assert billing.invoice("acme", "INV-1") == {"id": "INV-1", "tenant": "acme", "amount": 120}
            """),
        exploit=_d("""
            import pytest
            from billing import Billing


            def test_other_tenant_cannot_read_the_invoice():
                billing = Billing()
                billing.add("acme", "INV-1", 120)
                with pytest.raises((PermissionError, KeyError)):
                    billing.invoice("globex", "INV-1")
            """),
    ),
    # --- CWE-1333 ReDoS -----------------------------------------------------------------------------------------
    Spec(
        name="redos-email",
        cwe="CWE-1333",
        module="emails.py",
        source=_d('''
            """Sign-up form validation."""

            import re

            _EMAIL = re.compile(r"^([a-zA-Z0-9_.+-]+)+@[a-zA-Z0-9-]+\\.[a-zA-Z0-9.-]+$")


            def is_valid_email(text):
                return _EMAIL.match(text) is not None
            '''),
        fix=(
            (
                'r"^([a-zA-Z0-9_.+-]+)+@[a-zA-Z0-9-]+\\.[a-zA-Z0-9.-]+$"',
                'r"^[a-zA-Z0-9_.+-]+@[a-zA-Z0-9-]+\\.[a-zA-Z0-9.-]+$"',
            ),
        ),
        functional=_d("""
            from emails import is_valid_email


            def test_valid_and_invalid():
                assert is_valid_email("ann.lee+news@example.com")
                assert not is_valid_email("ann.example.com")
            """),
        exploit=_d("""
            import subprocess
            import sys
            """)
        + REDOS_CHECK
        + _d("""


            def test_long_invalid_input_is_rejected_quickly():
                assert _finishes_quickly("import emails; emails.is_valid_email('a' * 40 + '!')")
            """),
    ),
    Spec(
        name="redos-title-words",
        cwe="CWE-1333",
        module="titles.py",
        source=_d('''
            """Validate article titles: words separated by single spaces."""

            import re

            _TITLE = re.compile(r"^(\\w+\\s?)*$")


            def is_valid_title(text):
                return bool(text) and _TITLE.match(text) is not None
            '''),
        fix=(('r"^(\\w+\\s?)*$"', 'r"^\\w+(\\s\\w+)*$"'),),
        functional=_d("""
            from titles import is_valid_title


            def test_titles():
                assert is_valid_title("hello world")
                assert not is_valid_title("hello, world")
            """),
        exploit=_d("""
            import subprocess
            import sys
            """)
        + REDOS_CHECK
        + _d("""


            def test_long_invalid_title_is_rejected_quickly():
                assert _finishes_quickly("import titles; titles.is_valid_title('a' * 40 + '!')")
            """),
    ),
    Spec(
        name="redos-number-list",
        cwe="CWE-1333",
        module="numberlist.py",
        source=_d('''
            """Parse comma-separated lists of integers from a form field."""

            import re

            _NUMBERS = re.compile(r"^(\\d+,?)+$")


            def parse_numbers(text):
                if not _NUMBERS.match(text):
                    raise ValueError(f"not a list of numbers: {text!r}")
                return [int(part) for part in text.split(",") if part]
            '''),
        fix=(('r"^(\\d+,?)+$"', 'r"^\\d+(,\\d+)*$"'),),
        functional=_d("""
            import pytest
            from numberlist import parse_numbers


            def test_parses_numbers():
                assert parse_numbers("1,22,333") == [1, 22, 333]


            def test_rejects_words():
                with pytest.raises(ValueError):
                    parse_numbers("1,two")
            """),
        exploit=_d("""
            import subprocess
            import sys
            """)
        + REDOS_CHECK
        + _d("""


            def test_long_invalid_list_is_rejected_quickly():
                call = (
                    "import numberlist\\n"
                    "try:\\n"
                    "    numberlist.parse_numbers('1' * 40 + 'x')\\n"
                    "except ValueError:\\n"
                    "    pass"
                )
                assert _finishes_quickly(call)
            """),
    ),
]


def candidates() -> list[data.Candidate]:
    """The specs as candidates: vulnerable project, fixed project, test roles."""
    out: list[data.Candidate] = []
    for spec in SPECS:
        fixed = spec.source
        for old, new in spec.fix:
            if fixed.count(old) != 1:
                raise SystemExit(f"{spec.name}: fix text must occur exactly once in the module: {old!r}")
            fixed = fixed.replace(old, new)
        tests = {"tests/test_functional.py": spec.functional, "tests/test_exploit.py": spec.exploit}
        out.append(
            data.Candidate(
                name=spec.name,
                cwe=spec.cwe,
                module_path=spec.module,
                files={spec.module: spec.source, **tests},
                fixed_files={spec.module: fixed, **tests},
                functional_files=("tests/test_functional.py",),
                exploit_files=("tests/test_exploit.py",),
                source_corpus=data.EMBEDDED_CORPUS,
                source_meta={"name": spec.name, "author": "secverify"},
            )
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare with the shipped file instead of writing")
    args = parser.parse_args()
    started = time.perf_counter()
    env = CodeVulnerabilityEnvironment(load_env_config("e3"))
    frame, rejected = data.build_repair_items(candidates(), env.verifier)
    for name, problems in rejected.items():
        print(f"REJECTED {name}:", *problems, sep="\n  ", file=sys.stderr)
    if rejected:
        return 1
    counts = frame.group_by("cwe").len().sort("cwe").rows()
    print(f"built {frame.height} items in {time.perf_counter() - started:.1f} s: {counts}")
    files = {data.embedded_path(): data.items_text(frame)}
    return check_or_write(files, check=args.check, script="scripts/build_e3_embedded.py")


if __name__ == "__main__":
    sys.exit(main())

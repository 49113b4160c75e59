"""E3 rule baselines: the source rewrites of scanner-fix, and both baselines' answers."""

from __future__ import annotations

import json

import pytest

from sv_env_code_vulnerability import baseline
from sv_env_code_vulnerability.scanners import CodeScanners
from sv_env_code_vulnerability.verify import parse_answer
from sv_shared.execution.patching import apply_patch_to_files

SCANNERS_READY = all(scanner.status().available for scanner in CodeScanners().scanners)


def test_no_patch_answer() -> None:
    parsed = parse_answer(baseline.no_patch({"files": {}}))
    assert parsed.output == {"diff": "", "cwe": "none", "explanation": "no change proposed"}


def test_yaml_pickle_hash_xxe_eval_rewrites() -> None:
    assert baseline.fix_yaml_load("d = yaml.load(t, Loader=yaml.Loader)\n") == "d = yaml.safe_load(t)\n"
    assert baseline.fix_yaml_load("d = yaml.unsafe_load(t)\n") == "d = yaml.safe_load(t)\n"
    pickled = '"""Doc."""\n\nimport pickle\n\n\ndef f(v, b):\n    return pickle.dumps(v), pickle.loads(b)\n'
    assert baseline.fix_pickle(pickled) == (
        '"""Doc."""\n\nimport json\n\n\ndef f(v, b):\n    return json.dumps(v).encode(), json.loads(b)\n'
    )
    assert (
        baseline.fix_weak_hash('hashlib.md5(x); hashlib.new("sha1", y)')
        == 'hashlib.sha256(x); hashlib.new("sha256", y)'
    )
    assert baseline.fix_xxe("p.setFeature(feature_external_ges, True)") == "p.setFeature(feature_external_ges, False)"
    evaluated = baseline.fix_eval("def f(s):\n    return eval(s)\n")
    assert evaluated == "import ast\n\n\ndef f(s):\n    return ast.literal_eval(s)\n"


def test_secret_rewrite() -> None:
    source = 'import hmac\n\nAPI_KEY = "sk_live_123456"\nSECRET = b"abcdef"\nNAME = "app"\n'
    assert baseline.fix_hardcoded_secret(source) == (
        'import hmac\nimport os\n\nAPI_KEY = os.environ.get("API_KEY", "")\n'
        'SECRET = os.environ.get("SECRET", "").encode()\nNAME = "app"\n'
    )


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (
            'subprocess.run(f"wc -l {path}", shell=True, check=True)',
            "subprocess.run(['wc', '-l', str(path)], check=True)",
        ),
        ('subprocess.run("grep -c \'" + p + "\' " + f, shell=True)', "subprocess.run(['grep', '-c', p, f])"),
        ('subprocess.run(f"cat {p} | wc -l", shell=True)', None),
    ],
)
def test_shell_rewrite(call: str, expected: str | None) -> None:
    source = f"import subprocess\n\n\ndef f(path, p, f):\n    return {call}\n"
    rewritten = baseline.fix_shell(source)
    if expected is None:
        assert rewritten == source  # a pipe needs a shell: left alone rather than guessed
    else:
        assert rewritten == source.replace(call, expected)


def test_os_system_rewrite() -> None:
    source = 'import os\n\n\ndef f(name):\n    return os.system("tar -cf " + name + ".tar .")\n'
    assert baseline.fix_shell(source) == (
        "import subprocess\n\n\ndef f(name):\n"
        "    return subprocess.run(['tar', '-cf', name + '.tar', '.']).returncode\n"
    )


def test_sql_rewrites_direct_and_through_a_variable() -> None:
    direct = "def f(c, n):\n    return c.execute(f\"SELECT * FROM u WHERE n = '{n}' AND k = {k}\")\n"
    assert baseline.fix_sql(direct) == (
        "def f(c, n):\n    return c.execute('SELECT * FROM u WHERE n = ? AND k = ?', (n, k,))\n"
    )
    variable = "def f(c, n):\n    q = f\"SELECT * FROM u WHERE n = '{n}'\"\n    return c.execute(q).fetchone()\n"
    assert baseline.fix_sql(variable) == (
        "def f(c, n):\n    q = 'SELECT * FROM u WHERE n = ?'\n    return c.execute(q, (n,)).fetchone()\n"
    )


def test_unparsable_code_is_left_alone() -> None:
    broken = "def f(:\n    eval(x)\n"
    for fixer in (baseline.fix_yaml_load, baseline.fix_pickle, baseline.fix_eval, baseline.fix_hardcoded_secret,
                  baseline.fix_shell, baseline.fix_sql):  # fmt: skip
        assert fixer(broken) == broken


@pytest.mark.skipif(not SCANNERS_READY, reason="bandit/semgrep tools environment not built")
def test_scanner_fix_writes_an_applicable_diff() -> None:
    module = "import yaml\n\n\ndef load(text):\n    return yaml.load(text, Loader=yaml.Loader)\n"
    files = {"conf.py": module, "tests/test_conf.py": "from conf import load\n"}
    observation = {"task": "repair", "language": "python", "module_path": "conf.py", "files": files}
    answer = json.loads(baseline.scanner_fix(CodeScanners)(observation))
    assert answer["cwe"] == "CWE-502"
    patched = apply_patch_to_files(answer["diff"], files).updated(files)
    assert patched["conf.py"] == module.replace("yaml.load(text, Loader=yaml.Loader)", "yaml.safe_load(text)")
    assert patched["tests/test_conf.py"] == files["tests/test_conf.py"]
    clean = {**observation, "files": {"ok.py": "def f():\n    return 1\n"}}
    assert json.loads(baseline.scanner_fix(CodeScanners)(clean)) == {
        "diff": "",
        "cwe": "none",
        "explanation": "bandit and semgrep report nothing",
    }

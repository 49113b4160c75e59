"""The documentation site (mkdocs.yml, docs/): it builds with warnings as errors, its generated CLI reference lists
every command and option the parser has, the figures and defaults the hand-written pages name match the code and the
configs, and a real browser renders it.

The site is built once per module into a temporary folder. The values the pages are checked against are read from the
code and the configs here (typed configs, constants read from the source, the parser, the sensor's own functions),
never written down a second time in this file.
"""

from __future__ import annotations

import argparse
import functools
import html
import importlib.util
import inspect
import os
import re
import shlex
import subprocess
import sys
import threading
from collections import defaultdict
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from browser import CHROMIUM, chromium_page
from file_modules import load_file_module

from sv_shared.registry import ENV_IDS, get_environment, load_env_config

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
HOOK = DOCS / "hooks" / "reference.py"


# -- fixtures -------------------------------------------------------------------------------------------------------


@functools.cache
def hook() -> ModuleType:
    """docs/hooks/reference.py, the MkDocs hook that renders the reference's generated parts."""
    return load_file_module(HOOK, "secverify_docs_reference_hook")


def reference(module: str) -> ModuleType:
    """A module of docs/hooks/docs_reference/, the package the hook renders with (source: find_definition, constant;
    configs, automation, make), as the hook, loaded first, imports it."""
    hook()
    return importlib.import_module(f"docs_reference.{module}")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built with `mkdocs build --strict` (any warning fails the build)."""
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout}\n{result.stderr}"
    return out


def page_html(site: Path, page: str) -> str:
    """The built HTML of a docs page given by its source path (reference/cli.md → reference/cli/index.html)."""
    stem = page.removesuffix(".md")
    built = site / ("index.html" if stem == "index" else f"{stem.removesuffix('/index')}/index.html")
    return built.read_text(encoding="utf-8")


def text_of(markup: str) -> str:
    """The visible text of some HTML, whitespace collapsed."""
    markup = re.sub(r"<(script|style)\b.*?</\1>", " ", markup, flags=re.DOTALL)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())


def handwritten() -> dict[str, str]:
    """Every hand-written page (and the README), by path, with whitespace collapsed."""
    pages = {path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8") for path in DOCS.rglob("*.md")}
    pages["README.md"] = (ROOT / "README.md").read_text(encoding="utf-8")
    return {path: " ".join(text.split()) for path, text in pages.items()}


def nav_pages(nav: Any) -> Iterator[str]:
    if isinstance(nav, str):
        yield nav
    elif isinstance(nav, list):
        for entry in nav:
            yield from nav_pages(entry)
    elif isinstance(nav, dict):
        for value in nav.values():
            yield from nav_pages(value)


def mkdocs_config() -> dict[str, Any]:
    class Loader(yaml.SafeLoader):
        pass

    # mkdocs.yml may use !ENV / !relative tags; this test only reads the nav.
    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    return yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)


# -- (a) the site builds --------------------------------------------------------------------------------------------


def test_the_site_builds_strict_with_every_page_and_nothing_left_unrendered(site: Path) -> None:
    pages = list(nav_pages(mkdocs_config()["nav"]))
    on_disk = sorted(path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md"))
    assert sorted(pages) == on_disk, "every page under docs/ is in the nav, and every nav entry exists"
    for page in pages:
        built = page_html(site, page)
        assert "<!-- generated:" not in built, f"{page}: a generated part was not rendered"
    # Built for reading offline: no page loads a resource (script, style, font, image) from another host.
    for built in site.rglob("*.html"):
        remote = re.findall(
            r"""<(?:script|img|link)\b[^>]*\b(?:src|href)=["'](https?:)?//(?!127\.0\.0\.1)""", built.read_text()
        )
        assert not remote, f"{built.relative_to(site)} loads a remote resource"


def test_every_config_file_and_environment_has_a_reference_page(site: Path) -> None:
    shipped = {path.relative_to(ROOT / "configs").as_posix() for path in (ROOT / "configs").rglob("*.yaml")}
    covered = reference("configs").config_files_covered()
    assert covered == shipped, "a config file under configs/ has no generated reference"
    for path in shipped:
        # Each shipped file is shown whole on a reference page.
        assert any(f"configs/{path}" in text_of(p.read_text()) for p in (site / "reference").rglob("*.html")), path
    for env_id in ENV_IDS:
        text = text_of(page_html(site, f"reference/environments/{env_id}.md"))
        assert f"configs/envs/{env_id}.yaml" in text and get_environment(env_id).name in text


# -- (b) the generated CLI reference --------------------------------------------------------------------------------


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ("secverify",)) -> Iterator[Any]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*path, name))


def _sections(markup: str) -> dict[str, str]:
    """The CLI page's text under each heading, by heading id."""
    parts = re.split(r'<h[1-4] id="([^"]+)"', markup)
    return {parts[index]: text_of(parts[index + 1]) for index in range(1, len(parts), 2)}


def _default_shown(default: Any) -> str | None:
    if default is None or default is argparse.SUPPRESS or default in ([], False, ""):
        return None
    if isinstance(default, float) and default.is_integer():
        return str(int(default))
    return str(default)


def test_the_cli_reference_lists_every_command_option_and_default(site: Path) -> None:
    from secverify_dagster.cli import build_parser

    sections = _sections(page_html(site, "reference/cli.md"))
    commands = list(_commands(build_parser()))
    assert len(commands) > 20
    for path, parser in commands[1:]:
        anchor = "-".join(path)
        assert anchor in sections, f"no section for `{' '.join(path)}` in the CLI reference"
        section = sections[anchor]
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            names = action.option_strings or [action.metavar or action.dest]
            for name in names:
                assert name in section, f"`{' '.join(path)}`: {name} is missing from the CLI reference"
            if action.help:
                # The help as shown: its `code` spans rendered as code, so compared without backticks and spaces.
                shown_help = re.sub(r"[\s`]", "", action.help.replace("%%", "%"))
                assert shown_help in re.sub(r"\s", "", section), f"`{' '.join(path)}` {names[0]}: help not shown"
            shown = _default_shown(action.default)
            if shown is not None:
                assert shown in section, f"`{' '.join(path)}` {names[0]}: default {shown} not shown"


def test_every_secverify_command_the_docs_show_parses() -> None:
    from secverify_dagster.cli import build_parser

    parser = build_parser()
    lines = []
    for path, text in handwritten().items():
        raw = (ROOT / path).read_text(encoding="utf-8")
        for block in re.findall(r"```(?:bash|sh)?\n(.*?)```", raw, flags=re.DOTALL):
            lines += [(path, line) for line in block.replace("\\\n", " ").splitlines()]
        # Inline commands with arguments (a bare `secverify score` in prose names the command, it is no invocation).
        spans = re.findall(r"`(secverify [^`]+ -[^`]+)`", text)
        lines += [(path, span) for span in spans if not re.search(r"[|\[…]", span)]
    commands = [(path, line.split(" #")[0].strip()) for path, line in lines]
    commands = [(path, line) for path, line in commands if line.startswith("secverify ")]
    assert len(commands) > 40
    for path, line in commands:
        if line.split()[1].startswith("<"):
            continue  # `secverify <command> -h`: a pattern, not a command
        concrete = re.sub(r"<[^>]+>", "x", line.replace("$env", "e1").replace("<env>", "e1"))
        try:
            parser.parse_args(shlex.split(concrete)[1:])
        except SystemExit:
            pytest.fail(f"{path}: `{line}` is not a valid secverify command")


def test_every_make_target_the_docs_name_exists() -> None:
    targets = {name for rule in reference("make").make_targets() for name in rule["targets"]}
    named = {
        (path, target)
        for path, text in handwritten().items()
        for target in re.findall(r"(?:`|^|\$ |; )make ([a-z][\w-]*)", text, re.MULTILINE)
    }
    assert named
    for path, target in sorted(named):
        assert target in targets, f"{path} names `make {target}`, which the Makefile does not have"


# -- (c) figures and defaults match the code ------------------------------------------------------------------------


def test_default_n_per_environment_matches_the_configs(site: Path) -> None:
    pages = handwritten()
    for env_id in ENV_IDS:
        default_n = load_env_config(env_id).eval.default_n
        number = env_id[1:]
        # The concepts table and the configs index, both hand-written.
        row = re.search(rf"\| \[E{number}\]\([^)]*\) [^\n]*?\| (\d+) \|", pages["docs/concepts/environments.md"])
        assert row and int(row.group(1)) == default_n, f"docs/concepts/environments.md: E{number}'s default N"
        row = re.search(rf"`configs/envs/{env_id}.yaml` \| (\d+) \|", pages["docs/reference/configs/envs.md"])
        assert row and int(row.group(1)) == default_n, f"docs/reference/configs/envs.md: {env_id}'s default N"
        # The generated page renders the config's value.
        assert f"default N ( eval.default_n ) {default_n} " in text_of(
            page_html(site, f"reference/environments/{env_id}.md")
        )
    # make run: E1 at its default N.
    assert f"on the same {load_env_config('e1').eval.default_n} test items" in pages["README.md"]


def _seeds_in_code() -> set[int]:
    from sv_shared.answers.statistics import paired_bootstrap

    seeds = {load_env_config(env_id).eval.seed for env_id in ENV_IDS}
    seeds.add(int(re.search(r"^SEED \?= (\d+)$", (ROOT / "Makefile").read_text(), re.MULTILINE).group(1)))
    seeds.add(inspect.signature(paired_bootstrap).parameters["seed"].default)
    seeds.add(reference("source").constant("SLICE_SEED"))
    seeds.add(yaml.safe_load((ROOT / "configs" / "sft_datasets.yaml").read_text())["review"]["seed"])
    return seeds


def test_the_seed_the_docs_name_is_the_seed_the_code_uses() -> None:
    seeds = _seeds_in_code()
    assert len(seeds) == 1, f"the code and configs disagree on the default seed: {seeds}"
    named = defaultdict(set)
    for path, text in handwritten().items():
        # `--env.taskset.seed 7` in the interop guide shows how to override the seed; every other seed is the default.
        for match in re.finditer(r"(?<!taskset\.)\bseed[ =:]+(\d+)", text, re.IGNORECASE):
            named[int(match.group(1))].add(path)
    assert set(named) == seeds, f"seeds named in the docs: {dict(named)}; in the code: {seeds}"


def _schedule_rows() -> dict[str, dict[str, Any]]:
    return {item["name"]: item for item in reference("automation").automation()["schedule"]}


WEEKDAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")


def test_the_times_the_docs_give_each_schedule_are_its_cron() -> None:
    schedules = _schedule_rows()
    assert {"weekly_sweep", "biweekly_full_eval", "nightly_regression", "monthly_report"} <= set(schedules)
    checked = 0
    for path, text in handwritten().items():
        for name, item in schedules.items():
            minute, hour, _, _, weekday = item["cron_schedule"].split()
            for match in re.finditer(rf"`{name}`", text):
                window = text[match.end() : match.end() + 90]
                time = re.search(r"(\d{2}):(\d{2})", window)
                if time is None or "`" in window[: time.start()]:
                    continue
                checked += 1
                assert (int(time.group(1)), int(time.group(2))) == (int(hour), int(minute)), f"{path}: {name}"
                days = [day for day in WEEKDAYS if day in window[: time.start()]]
                if days and weekday != "*":
                    assert days[0] == WEEKDAYS[int(weekday)], f"{path}: {name} runs on {WEEKDAYS[int(weekday)]}"
    assert checked >= 6


def _sweep_call(name: str) -> dict[str, Any]:
    """The keyword arguments a schedule passes to sweep_requests, read from its source."""
    import ast

    _, path = reference("source").find_definition(name)
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "sweep_requests":
                    return {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords if kw.arg in ("n", "tag")}
    raise AssertionError(f"{name} does not call sweep_requests")


def test_the_weekly_and_nightly_sweeps_are_described_as_the_code_runs_them() -> None:
    constant = reference("source").constant
    weekly_n = _sweep_call("weekly_sweep")["n"]
    assert weekly_n == constant("WEEKLY_N"), "the weekly sweep and the weekly report's slice disagree on N"
    assert _sweep_call("biweekly_full_eval")["n"] is None, "the full eval runs each environment's default N"
    nightly_n = _sweep_call("nightly_regression")["n"]

    def span(envs: tuple[str, ...]) -> str:
        return f"E{envs[0][1:]}–E{envs[-1][1:]}"

    table = dict(re.findall(r"^\| `(\w+)` \|(.*)\|$", (DOCS / "how-to" / "run-a-sweep.md").read_text(), re.MULTILINE))
    weekly, nightly = span(constant("WEEKLY_ENVS")), span(constant("NIGHTLY_ENVS"))
    assert weekly in table["weekly_sweep"] and f"N={weekly_n}" in table["weekly_sweep"]
    assert nightly in table["nightly_regression"] and f"N={nightly_n}" in table["nightly_regression"]
    assert "default N" in table["biweekly_full_eval"]
    automation = handwritten()["docs/reference/automation.md"]
    assert f"`weekly_sweep` asks for {weekly} at N={weekly_n}" in automation
    assert f"on {nightly} at N={nightly_n}" in automation


def test_the_regression_gate_is_described_with_its_thresholds() -> None:
    text = handwritten()["docs/concepts/statistics.md"]
    constant = reference("source").constant
    drop = constant("MAX_RELATIVE_DROP")
    assert f"dropped by more than {drop:.0%} of the previous value" in text
    assert f"share at least {constant('MIN_PAIRED_ITEMS')} items" in text
    assert f"{constant('CONFIDENCE', beside='MAX_RELATIVE_DROP'):.0%} CI" in text
    assert f"{constant('N_RESAMPLES'):,} resamples" in text


def test_the_default_models_the_docs_name_are_the_code_s() -> None:
    from secverify_dagster.cli import build_parser

    pair = reference("source").constant("DEFAULT_RUN_MODELS")
    pages = handwritten()
    stated = f"`{pair[0]}` and `{pair[1]}`"
    for page in ("docs/reference/make.md", "docs/how-to/run-a-sweep.md"):
        assert stated in pages[page], page
    for env_id in ENV_IDS:
        # E1–E4 fall back to the pair; E5/E6 list their own (rendered on their reference pages).
        assert (load_env_config(env_id).eval.default_models is None) == (env_id in ("e1", "e2", "e3", "e4"))
    run = next(sub for path, sub in _commands(build_parser()) if path == ("secverify", "run"))
    defaults = {action.dest: action.default for action in run._actions}
    assert defaults["env"] == "e1" and defaults["models"].split() == list(pair)
    assert "**SmolLM2-135M-Instruct**" in pages["README.md"] and f"**{pair[1]}**" in pages["README.md"]


def test_the_backfill_figures_are_what_the_sensor_code_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    from secverify_dagster.cadences import runnable_pairs
    from secverify_dagster.concurrency import provider_tags
    from secverify_dagster.resources.models import parse_registry, reachability

    registry = parse_registry(yaml.safe_load((ROOT / "configs" / "models.yaml").read_text()))
    for spec in registry.values():
        for variable in (spec.api_key_env, spec.base_url_env):
            if variable:
                monkeypatch.delenv(variable, raising=False)
    local = "smollm2-135m-instruct"
    if not reachability(registry[local], "e1").ok:
        pytest.skip(f"{local} is not installed here (make setup installs it): the fresh-machine figures need it")
    envs = list(ENV_IDS)
    baselines = {env_id: list(get_environment(env_id).baselines) for env_id in envs}

    def first_tick(models: dict[str, Any]) -> tuple[int, list[int], int]:
        pairs, left_out = runnable_pairs(list(models), envs, models, baselines)
        groups: dict[tuple, int] = defaultdict(int)
        for _, model_id in pairs:
            groups[tuple(sorted(provider_tags(models[model_id]).items()))] += 1
        return len(pairs), sorted(groups.values()), len(left_out)

    text = handwritten()["docs/how-to/backfill-a-model.md"]
    n_pairs, groups, left_out = first_tick(registry)
    match = re.search(
        r"the registry holds (\d+) models, and the sensor's first tick requests (\d+) \(environment, model\) pairs "
        r"in (\d+) backfills: (\d+) for `([^`]+)` .*? and (\d+) for the rule baselines .*? the other (\d+) of the "
        r"(\d+) pairs",
        text,
    )
    assert match, "backfill-a-model.md no longer states the fresh-machine figures"
    models, pairs, backfills, local_pairs, local_id, baseline_pairs, others, total = match.groups()
    assert int(models) == len(registry)
    assert (int(pairs), int(backfills), int(others), int(total)) == (
        n_pairs,
        len(groups),
        left_out,
        len(registry) * len(envs),
    )
    assert local_id == local and sorted([int(local_pairs), int(baseline_pairs)]) == groups

    # The team's registry of 2026-11-24: the same portfolio and four trained checkpoints of the local model.
    checkpoints = {f"{local}.sft.{index}": registry[local] for index in range(4)}
    n_pairs, groups, _ = first_tick({**registry, **checkpoints})
    match = re.search(
        r"\((\d+) models, (\d+) pairs\) the first tick requested (\d+) pairs, again in (\d+) backfills: (\d+) "
        r"local-model pairs .*? and the same (\d+) baseline pairs",
        text,
    )
    assert match, "backfill-a-model.md no longer states the figures with the four checkpoints"
    models, total, pairs, backfills, local_pairs, baseline_pairs = map(int, match.groups())
    assert (models, total) == (len(registry) + 4, (len(registry) + 4) * len(envs))
    assert (pairs, backfills, sorted([local_pairs, baseline_pairs])) == (n_pairs, len(groups), groups)


def test_run_and_review_figures_match_the_code() -> None:
    pages = handwritten()
    runs = pages["docs/concepts/runs.md"]
    assert f"given up after {reference('source').constant('MAX_ITEM_ATTEMPTS')} attempts" in runs
    from sv_shared.runs.folder import LOCK_WAIT_S

    assert f"`--wait SECONDS`, default {LOCK_WAIT_S:g}" in runs
    review = yaml.safe_load((ROOT / "configs" / "sft_datasets.yaml").read_text())["review"]
    loop = pages["docs/how-to/research-loop.md"]
    assert f"queues a seeded {review['sample_share']:.0%} of its kept examples" in loop
    assert f"`review.max_rejection_rate` ({review['max_rejection_rate']:.0%})" in loop
    assert f"over-refusal cost; default {load_env_config('e6').costs.over_refusal:g}" in loop
    promotion = yaml.safe_load((ROOT / "configs" / "promotion.yaml").read_text())["safety_scan"]
    assert f"`safety_scan.env` ({promotion['env'].upper()})" in pages["docs/how-to/train-a-checkpoint.md"]


def test_the_environment_tables_name_each_environment_s_baselines_and_views() -> None:
    pages = handwritten()
    for env_id in ENV_IDS:
        env = get_environment(env_id)
        row = re.search(rf"\| \[E{env_id[1:]}\]\([^)]*\)([^\n]*?)\| \d+ \|", pages["docs/concepts/environments.md"])
        assert row, env_id
        assert re.findall(r"`([a-z-]+)`", row.group(1).split("|")[-1]) == list(env.baselines), env_id
    views = get_environment("e1").data.views
    assert all(f"`{view}`" in pages["docs/reference/environments/e1.md"] for view in views)
    assert (
        f"runs {['no', 'one', 'two', 'three', 'four', 'five'][len(views)]} views"
        in pages["docs/reference/environments/e1.md"]
    )


# -- (d) a browser opens it -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served_site(site: Path) -> Iterator[str]:
    """The built site over HTTP on 127.0.0.1 (a free port), as `make docs-serve` would show it."""
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *args: None  # type: ignore[method-assign]
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.skipif(not CHROMIUM.is_file(), reason=f"no {CHROMIUM}: install Debian's chromium (make setup does)")
def test_the_layout_figures_are_what_bench_layout_measures() -> None:
    """The architecture page's table of the package's shape (its "now" column) against bench/bench_layout.py."""
    layout = load_file_module(ROOT / "bench" / "bench_layout.py")
    package = ROOT / "secverify_dagster"
    files = layout.package_files(package)
    rows = {
        cells[0]: cells[2]
        for line in (DOCS / "concepts" / "architecture.md").read_text(encoding="utf-8").splitlines()
        if line.startswith("| ") and len(cells := [cell.strip() for cell in line.strip("|").split("|")]) == 3
    }
    top = [path for path in files.values() if path.parent == package]
    assert rows["modules at the top of `secverify_dagster/`"].startswith(f"{len(top)} (")
    for folder in ("runner", "cli", "reports", "audit", "training", "research", "publishing"):
        count = sum(1 for name in files if name.startswith(f"secverify_dagster.{folder}."))
        count += f"secverify_dagster.{folder}" in files
        assert f"`{folder}/` {count}" in rows["library packages (modules, `__init__` counted)"], folder
    largest = max(files.values(), key=lambda path: len(path.read_text(encoding="utf-8").splitlines()))
    lines = len(largest.read_text(encoding="utf-8").splitlines())
    assert rows["largest module"] == f"`{largest.relative_to(package)}`, {lines} lines"
    chain = layout.longest_chain(layout.import_graph(package))
    assert rows["longest module-level import chain"].startswith(f"{len(chain)} modules")


def test_a_browser_renders_the_navigation_and_the_cli_reference(served_site: str, tmp_path: Path) -> None:
    with chromium_page(tmp_path / "browser") as page:
        page.navigate(f"{served_site}/")
        nav = page.wait_for(
            "[...document.querySelectorAll('nav.md-nav--primary a.md-nav__link')].map((a) => a.textContent.trim())",
            "the site's navigation",
        )
        for entry in ("Backfill a model", "Run a sweep now", "The secverify command", "E6 red-team defense"):
            assert entry in nav, f"navigation lacks {entry!r}: {nav}"
        page.click_text("The secverify command", selector="nav.md-nav--primary a", timeout_s=15)
        page.wait_for("location.pathname.endsWith('/reference/cli/')", "the CLI reference page", timeout_s=15)
        entry = page.wait_for(
            "(() => { const h = document.getElementById('secverify-eval'); if (!h) return null;"
            " let text = ''; for (let n = h.nextElementSibling; n && n.tagName !== 'H2'; n = n.nextElementSibling)"
            " text += n.innerText + ' '; return {heading: h.innerText, text}; })()",
            "the `secverify eval` entry",
            timeout_s=15,
        )
        assert entry["heading"].startswith("secverify eval")
        assert "--include-tools" in entry["text"] and "--wait SECONDS" in entry["text"]
        assert page.evaluate("document.title").startswith("The secverify command")

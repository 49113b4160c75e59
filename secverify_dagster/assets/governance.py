"""Governance: the asset that lists every published number whose chain is incomplete, and the policy that gives
every asset its owners, kinds and code version.

`govern(assets)` is applied once, where the definitions are assembled: owners per group from configs/owners.yaml,
kinds by what an asset writes, and a code version that changes exactly when what produces the asset changes (an
eval: the verifier version and the environment's config; curated and synthetic sets: their config and the loader or
generator code; a checkpoint: its recipe's hash; a report: the report builder's code), so Dagster's staleness means
what it says.
"""

import importlib.util
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import dagster as dg
from pydantic import Field, StringConstraints

from secverify_dagster.assets.keys import BENCHMARK_SHEET, JUDGE_VALIDATION, TOURNAMENT, checkpoint_key, report_key
from secverify_dagster.audit.auditor import Auditor, governance_record
from secverify_dagster.audit.events import DagsterRecords
from secverify_dagster.resources.dagster_resources import ArtifactStoreResource
from secverify_dagster.training.settings import load_sft_dataset_settings
from sv_shared.config import ConfigModel, project_root, read_config, read_yaml
from sv_shared.contracts import Environment
from sv_shared.data.files import write_json_atomic
from sv_shared.data.hashing import sha256_hex, stable_json
from sv_shared.registry import ENV_IDS, PACKAGES, get_environment
from sv_shared.training.recipes import RlftRecipe, SftRecipe, load_rlft_recipe, load_sft_recipe, recipe_hash

GOVERNANCE_KEY = dg.AssetKey(["governance", "incomplete_chains"])
GOVERNANCE_GROUP = "governance"
CHAINS_CHECK = "chains_complete"
OWNER_PATTERN = r"^(team:[a-z0-9][a-z0-9_-]*|[^@\s]+@[^@\s]+\.[a-z]{2,})$"

# -- owners ----------------------------------------------------------------------------------------------------------


Owner = Annotated[str, StringConstraints(pattern=OWNER_PATTERN)]
"""A Dagster owner: a team ("team:security-ml") or an email."""


class OwnersConfig(ConfigModel):
    """configs/owners.yaml: the owners of each asset group, and of any group it does not list."""

    default: list[Owner] = Field(min_length=1)
    groups: dict[str, Annotated[list[Owner], Field(min_length=1)]] = Field(default_factory=dict)

    def for_group(self, group: str | None) -> list[str]:
        return list(self.groups.get(group or "", self.default))


def load_owners(path: Path | None = None) -> OwnersConfig:
    return read_config(OwnersConfig, path or project_root() / "configs" / "owners.yaml")


# -- code versions ---------------------------------------------------------------------------------------------------


def _file_bytes(module: str) -> bytes:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(f"no module {module!r} to version")
    return Path(spec.origin).read_bytes()


def _package_bytes(package: str) -> bytes:
    """Every file of a package (code and data), in path order, each prefixed by its path."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"no package {package!r} to version")
    root = Path(next(iter(spec.submodule_search_locations)))
    files = sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return b"".join(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes() for p in files)


def _digest(*parts: Any) -> str:
    """A short hash of configs (as canonical JSON) and source bytes."""
    return sha256_hex(b"".join(part if isinstance(part, bytes) else stable_json(part).encode() for part in parts))[:12]


def _env_code_version(env: Environment, asset: str) -> str | None:
    package = PACKAGES[env.env_id]
    config = env.config.as_dict()
    loaders = _file_bytes(f"{package}.data")
    if asset.startswith("raw_"):
        source = asset.removeprefix("raw_")
        return f"raw-{_digest(source, config['data'].get(source), loaders, _file_bytes('sv_shared.data.loading'))}"
    if asset == "curated_splits":
        return f"curated-{_digest(config['data'], loaders, _file_bytes('sv_shared.data.splits'))}"
    if asset == "synthetic":
        return f"synthetic-{_digest(config['synthetic'], _file_bytes(f'{package}.synth'))}"
    if asset == "sft_dataset":
        sft_code = _file_bytes("sv_shared.training.sft_data")
        return f"sft-data-{_digest(env.verifier.version, _sft_settings(env.env_id), sft_code)}"
    if asset == "eval_results":
        return f"{env.verifier.version}-{_digest(config)}"
    if asset == "synthetic_batch":
        modules = ("candidates", "batch_items", "batch_folder")
        batch_code = (_file_bytes(f"sv_shared.training.{name}") for name in modules)
        return f"batch-{_digest(env.verifier.version, config, *batch_code)}"
    if asset == "ablations":
        ablations = project_root() / "configs" / "ablations" / f"{env.env_id}.yaml"
        table_code = (_file_bytes(f"sv_shared.runs.{name}") for name in ("ablations", "rescore", "ablation_table"))
        return f"ablations-{_digest(env.verifier.version, config, ablations.read_bytes(), *table_code)}"
    return None


def _sft_settings(env_id: str) -> dict[str, Any]:
    return load_sft_dataset_settings().for_env(env_id).as_dict()


def _report_version() -> str:
    """The report builder's code: the reports package (the report, its sections and the regression gate it shows)."""
    return f"report-{_digest(_package_bytes('secverify_dagster.reports'))}"


def asset_code_version(key: dg.AssetKey) -> str | None:
    """The code version governance gives an asset (None: no rule; the asset keeps its own)."""
    path = key.path
    if len(path) == 2 and path[0] == "models":
        # A base model is its registry entry: a changed entry (other weights, other settings) is another model.
        entry = (read_yaml(project_root() / "configs" / "models.yaml").get("models") or {}).get(path[1])
        return f"model-{_digest(entry)}"
    if len(path) == 4 and path[0] == "training" and path[3] == "evals":
        load_recipe: Callable[..., SftRecipe | RlftRecipe] = load_sft_recipe if path[1] == "sft" else load_rlft_recipe
        envs = [get_environment(env_id) for env_id in load_recipe(path[2], check_references=False).envs]
        configs = [(env.verifier.version, env.config.as_dict()) for env in envs]
        return f"checkpoint-evals-{_digest(configs, _file_bytes('secverify_dagster.training.checkpoint_evals'))}"
    if len(path) == 4 and path[0] == "training" and path[3] == "learning_curve":
        # The curve is drawn from the checkpoint's recorded history: only the code that picks and draws it matters.
        curve_code = (
            _file_bytes("sv_shared.training.learning_curves"),
            _file_bytes("secverify_dagster.training.learning_curve"),
        )
        return f"learning-curve-{_digest(*curve_code)}"
    if len(path) == 3 and path[0] == "training":
        load: Callable[..., SftRecipe | RlftRecipe] = load_sft_recipe if path[1] == "sft" else load_rlft_recipe
        return f"recipe-{recipe_hash(load(path[2], check_references=False))[:12]}"
    if key == JUDGE_VALIDATION:
        return f"judges-{_digest(_package_bytes('sv_shared.judging'))}"
    if key == TOURNAMENT:
        versions = [get_environment(env_id).verifier.version for env_id in ("e5", "e6")]
        return f"tournament-{_digest(versions, _file_bytes('secverify_dagster.runner.tournament'))}"
    if key == GOVERNANCE_KEY:
        return f"audit-{_digest(_package_bytes('secverify_dagster.audit'))}"
    if key == BENCHMARK_SHEET:
        return f"sheet-{_digest(_file_bytes('secverify_dagster.publishing.benchmark_sheet'), _report_version())}"
    if any("report" in part for part in path):
        return _report_version()
    if len(path) == 2 and path[0] in ENV_IDS:
        return _env_code_version(get_environment(path[0]), path[1])
    return None


# -- kinds -----------------------------------------------------------------------------------------------------------


def asset_kinds(key: dg.AssetKey) -> set[str]:
    """Kinds by what an asset writes (added to those it declares)."""
    last = key.path[-1]
    if key.path[0] == "training" and last == "evals":
        return {"python", "json"}
    if key.path[0] in ("training", "models"):
        return {"pytorch", "huggingface"}
    if any("report" in part for part in key.path):
        return {"markdown", "json"}
    if last.startswith("raw_") or last in ("curated_splits", "synthetic"):
        return {"polars", "parquet"}
    if last == "sft_dataset":
        return {"json"}
    return {"python", "json"}


def govern(assets: Sequence[dg.AssetsDefinition], owners: OwnersConfig | None = None) -> list[dg.AssetsDefinition]:
    """The assets with owners (by group), kinds and code versions set; their checks and partitions are kept."""
    config = owners or load_owners()

    def governed(spec: dg.AssetSpec) -> dg.AssetSpec:
        code_version = asset_code_version(spec.key) or spec.code_version
        return spec.replace_attributes(
            owners=config.for_group(spec.group_name), code_version=code_version
        ).merge_attributes(kinds=asset_kinds(spec.key))

    return list(dg.map_asset_specs(governed, assets))


# -- the governance asset --------------------------------------------------------------------------------------------


def build_governance_asset(
    envs: Sequence[Environment], recipes: Sequence[SftRecipe | RlftRecipe]
) -> dg.AssetsDefinition:
    """governance/incomplete_chains: reads every report, the eval runs they used and the checkpoints (deps), and the
    Dagster event log; its check warns while any published number's chain is incomplete."""
    deps = [report_key(env.env_id) for env in envs]
    deps += [checkpoint_key("sft" if isinstance(r, SftRecipe) else "rlft", r.name) for r in recipes]

    @dg.asset(
        key=GOVERNANCE_KEY,
        group_name=GOVERNANCE_GROUP,
        deps=deps,
        kinds={"python", "json"},
        check_specs=[
            dg.AssetCheckSpec(
                CHAINS_CHECK,
                asset=GOVERNANCE_KEY,
                description="Every published number's chain holds: warns with the incomplete ones.",
            )
        ],
        description="Every published number (each report, each eval run a report used, each promoted checkpoint) "
        "audited like `secverify audit`: those whose chain is incomplete, with the links that do not hold.",
    )
    def incomplete_chains(context: dg.AssetExecutionContext, artifacts: ArtifactStoreResource):
        auditor = Auditor(artifacts.base(), DagsterRecords(context.instance))
        record = governance_record(auditor.published())
        path = artifacts.base() / "governance" / "incomplete_chains.json"
        write_json_atomic(path, record, default=str)
        incomplete = record["incomplete"]
        context.log.info(f"{record['audited']} published chains audited, {len(incomplete)} incomplete → {path}")
        rows = [
            dg.TableRecord(
                {
                    "kind": entry["kind"],
                    "subject": entry["subject"],
                    "links": len(entry["gaps"]),
                    "first gap": entry["gaps"][0]["describe"],
                }
            )
            for entry in incomplete
        ]
        schema = dg.TableSchema(
            columns=[
                dg.TableColumn("kind", "string"),
                dg.TableColumn("subject", "string"),
                dg.TableColumn("links", "int", description="links that do not hold"),
                dg.TableColumn("first gap", "string"),
            ]
        )
        yield dg.MaterializeResult(
            metadata={
                "path": dg.MetadataValue.path(str(path)),
                "audited": record["audited"],
                "complete": record["complete"],
                "incomplete": len(incomplete),
                "incomplete_chains": dg.MetadataValue.table(rows, schema=schema),
            }
        )
        yield dg.AssetCheckResult(
            check_name=CHAINS_CHECK,
            passed=not incomplete,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={
                "incomplete": len(incomplete),
                "subjects": dg.MetadataValue.json([f"{entry['kind']} {entry['subject']}" for entry in incomplete]),
            },
        )

    return incomplete_chains

"""E2 data layer: the item schema, the loaders on fixtures in the real layouts (The Stack / GenKubeSec parquet and
instruction JSON, Datree / Kubesec example directories, Terraform module trees), oracle labelling, the embedded
corpus and the curated splits.

Fixtures (tests/fixtures/e2_data): the_stack_yaml_k8s.parquet has The Stack's columns (hexsha, size, ext, lang,
max_stars_repo_path, ..., content) as in substratusai/the-stack-yaml-k8s; genkubesec_train_data.json holds
instruction / input / output records as in the public GenKubeSec reproductions.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

import polars as pl
import pytest
from e2_fakes import FakeOracle

from sv_env_config_verification import data, schema, synth
from sv_env_config_verification.adapters.opa import OpaAdapter
from sv_env_config_verification.loading import parse_config
from sv_env_config_verification.oracle import Oracle
from sv_env_config_verification.synth import canonical_form
from sv_shared.data.errors import CorpusUnavailableError, CorpusValidationError
from sv_shared.data.hashing import frame_hash

FIXTURES = Path(__file__).parent / "fixtures" / "e2_data"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def opa() -> Oracle:
    """The oracle with the project's own policies only: in-process and fast, with real findings."""
    return Oracle([OpaAdapter()])


@pytest.fixture(scope="module")
def embedded() -> pl.DataFrame:
    return data.load_embedded()


# --- schema ---


def test_columns_are_the_agreed_contract() -> None:
    assert schema.ITEM_COLUMNS == [
        "config_id", "kind", "filename", "content", "label", "oracle_findings", "source_corpus", "content_hash",
        "generator", "generator_params", "generator_seed", "secure_variant_id",
    ]  # fmt: skip
    assert schema.OBSERVATION_COLUMNS == ("kind", "filename", "content")
    assert set(schema.canonical_ids("kubernetes")) | set(schema.canonical_ids("terraform")) == set(schema.CANONICAL)


@pytest.mark.parametrize(
    ("edit", "rule"),
    [
        (pl.lit("secure").alias("label"), "vulnerable iff a canonical finding"),
        (pl.lit("[{").alias("oracle_findings"), "JSON list of findings"),
        (pl.lit("0000000000000000").alias("config_id"), "config_id_is_content_hash"),
        (pl.lit("gen").alias("generator"), "generator_set_iff_synthetic"),
        (pl.lit("web.tf").alias("filename"), "extension_matches_kind"),
        (pl.lit("../web.yaml").alias("filename"), "str_matches"),
        (pl.col("content") + pl.lit("# edited\n"), "equals hash of kind + content"),
    ],
)
def test_validate_items_names_the_rule(embedded: pl.DataFrame, edit: pl.Expr, rule: str) -> None:
    row = embedded.filter((pl.col("kind") == "kubernetes") & (pl.col("label") == "vulnerable")).head(1)
    with pytest.raises(CorpusValidationError) as error:
        schema.validate_items(row.with_columns(edit))
    assert rule in str(error.value)


def test_secure_variant_only_on_vulnerable_rows(embedded: pl.DataFrame) -> None:
    row = embedded.filter(pl.col("label") == "secure").head(1)
    with pytest.raises(CorpusValidationError, match="secure_variant_only_on_vulnerable"):
        schema.validate_items(row.with_columns(pl.col("config_id").alias("secure_variant_id")))


# --- the embedded corpus ---


def test_embedded_corpus_counts_and_shape(embedded: pl.DataFrame) -> None:
    hand_written = embedded.filter(pl.col("source_corpus") == data.EMBEDDED_CORPUS)
    assert data.value_counts(hand_written) == {
        "kubernetes/secure": 17,
        "kubernetes/vulnerable": 18,
        "terraform/secure": 13,
        "terraform/vulnerable": 16,
    }
    synthetic = embedded.filter(pl.col("source_corpus") == schema.SYNTHETIC_CORPUS)
    assert synthetic.height >= 300 and set(synthetic["label"]) == {"secure", "vulnerable"}
    assert set(embedded["source_corpus"]) == {data.EMBEDDED_CORPUS, schema.SYNTHETIC_CORPUS}
    kubernetes = embedded.filter(pl.col("kind") == "kubernetes")
    kinds = {r.kind for text in kubernetes["content"] for r in parse_config("kubernetes", text).resources}
    assert kinds >= {
        "Pod", "Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob", "Role", "ClusterRole", "Service",
        "NetworkPolicy", "ServiceAccount",
    }  # fmt: skip
    assert sum(len(parse_config("kubernetes", text).documents) > 1 for text in kubernetes["content"]) >= 15
    terraform = embedded.filter(pl.col("kind") == "terraform")
    types = {r.kind for text in terraform["content"] for r in parse_config("terraform", text).resources}
    assert types >= {
        "aws_s3_bucket", "aws_ebs_volume", "aws_db_instance", "aws_security_group", "aws_iam_policy",
        "google_storage_bucket", "google_compute_firewall",
    }  # fmt: skip
    found = {f.canonical_id for text in embedded["oracle_findings"] for f in schema.findings_from_json(text)}
    assert found == set(schema.CANONICAL)  # every canonical id occurs at least once


def test_embedded_manifests_are_in_canonical_yaml(embedded: pl.DataFrame) -> None:
    for row in embedded.filter(pl.col("kind") == "kubernetes").iter_rows(named=True):
        assert canonical_form("kubernetes", row["content"]) == row["content"], row["filename"]


def _build_script():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import build_e2_embedded as build
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    return build


def test_build_script_keeps_the_shipped_files_and_labels_every_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shipped manifests and modules are the corpus's source: the build rewrites none and labels each (with a
    fake oracle here; the real one is compared in test_corpus_sources), and grows it with variants that oracle
    confirms, each naming its base."""
    from sv_shared.data.embedded import stale_files

    build = _build_script()
    # The pair recipes try ~2,000 candidates, nearly all unconfirmable by the fake oracle: single steps suffice here.
    monkeypatch.setattr(build, "RECIPES", ((synth.mutations_for, build.EVERY), (synth.secure_edits_for, build.EVERY)))
    rendered = build.files(oracle=FakeOracle())
    labels = json.loads(rendered.pop(data.embedded_dir() / data.LABELS_FILE))
    records = [json.loads(line) for line in rendered.pop(data.embedded_dir() / data.SYNTHETIC_FILE).splitlines()]
    assert len(rendered) == 64 and stale_files(rendered) == []
    assert sorted(labels["files"]) == sorted(path.relative_to(data.embedded_dir()).as_posix() for path in rendered)
    secure_bases = {path for path, entry in labels["files"].items() if not entry["findings"]}
    assert records and {record["base"] for record in records} <= secure_bases
    fake_ids = {"K8S_PRIVILEGED", "K8S_RUN_AS_ROOT", "K8S_LATEST_TAG", "K8S_NO_MEMORY_LIMIT", "TF_EBS_UNENCRYPTED"}
    for record in records:
        found = {finding["canonical_id"] for finding in record["findings"]}
        assert set(synth.introduced_ids(record["generator"])) <= found <= fake_ids | {"TF_OPEN_INGRESS"}
        assert bool(found) == bool(synth.introduced_ids(record["generator"]))


def test_shipped_synthetic_items_are_what_the_recipe_makes(embedded: pl.DataFrame) -> None:
    """Every shipped variant is its generator applied to its base with its seed (no hand edit), confirmed: each id
    a mutation introduces is in its findings, and a secure edit has none."""
    bases = embedded.filter(pl.col("source_corpus") == data.EMBEDDED_CORPUS)
    texts = dict(zip(bases["config_id"], bases["content"], strict=True))
    synthetic = embedded.filter(pl.col("source_corpus") == schema.SYNTHETIC_CORPUS)
    generators = set()
    for row in synthetic.iter_rows(named=True):
        base_id = json.loads(row["generator_params"])["base_id"]
        again = synth.apply_mutation(row["kind"], texts[base_id], row["generator"], row["generator_seed"])
        assert again is not None and again[0] == row["content"]
        found = {f.canonical_id for f in schema.findings_from_json(row["oracle_findings"])}
        wanted = synth.introduced_ids(row["generator"])
        assert set(wanted) <= found and (bool(wanted) or not found)
        assert row["secure_variant_id"] == (base_id if wanted else None)
        generators.update(row["generator"].split(synth.COMBINATION))
    assert generators == set(synth.MUTATIONS) | set(synth.SECURE_EDITS)


def test_embedded_labels_agree_with_the_project_policies(embedded: pl.DataFrame, opa: Oracle) -> None:
    """Every finding the Rego policies report is in the shipped labels (other scanners may add more)."""
    results = opa.scan_many(list(zip(embedded["filename"], embedded["content"], strict=True)))
    for row, result in zip(embedded.iter_rows(named=True), results, strict=True):
        stored = {(f.canonical_id, f.resource) for f in schema.findings_from_json(row["oracle_findings"])}
        assert {(f.canonical_id, f.resource) for f in result.findings} <= stored, row["filename"]


@pytest.mark.slow
def test_shipped_labels_are_what_the_full_oracle_finds(embedded: pl.DataFrame, e2_full_oracle: Oracle) -> None:
    """labels.json and synthetic.jsonl are current: the same scanners (and versions) find the same findings in
    every item (~420 configs through every scanner: about a minute here, or cache hits after the corpus check)."""
    oracle = e2_full_oracle
    recorded = data.embedded_oracle_versions()
    if oracle.versions() != recorded:
        pytest.skip(f"scanners here {oracle.versions()} differ from those that labelled the corpus {recorded}")
    results = oracle.scan_many(list(zip(embedded["filename"], embedded["content"], strict=True)))
    for row, result in zip(embedded.iter_rows(named=True), results, strict=True):
        assert schema.findings_to_json(result.findings) == row["oracle_findings"], row["filename"]


def test_a_stale_label_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "data"
    shutil.copytree(data.embedded_dir(), copy)
    monkeypatch.setattr(data, "embedded_dir", lambda: copy)
    target = copy / "terraform" / "vpc-network.tf"
    target.write_text(target.read_text() + "\n# edited\n")
    with pytest.raises(CorpusValidationError, match="changed since it was labelled"):
        data.load_embedded()
    target.unlink()
    with pytest.raises(CorpusValidationError, match="disagree"):
        data.load_embedded()


def test_an_edited_synthetic_item_or_base_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "data"
    shutil.copytree(data.embedded_dir(), copy)
    monkeypatch.setattr(data, "embedded_dir", lambda: copy)
    synthetic = copy / data.SYNTHETIC_FILE
    shipped = synthetic.read_text(encoding="utf-8")
    first = json.loads(shipped.splitlines()[0])
    edited = {**first, "content": first["content"] + "\n# edited\n"}
    synthetic.write_text(json.dumps(edited) + "\n" + shipped.split("\n", 1)[1], encoding="utf-8")
    with pytest.raises(CorpusValidationError, match="line 1 was edited"):
        data.load_embedded()
    synthetic.write_text(shipped, encoding="utf-8")
    base = copy / first["base"]
    labels = json.loads((copy / data.LABELS_FILE).read_text(encoding="utf-8"))
    base.write_text(base.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    labels["files"][first["base"]]["sha256"] = hashlib.sha256(base.read_bytes()).hexdigest()
    (copy / data.LABELS_FILE).write_text(json.dumps(labels), encoding="utf-8")
    with pytest.raises(CorpusValidationError, match=f"its base {first['base']} changed"):
        data.load_embedded()


# --- loaders on real layouts ---


def test_genkubesec_from_the_stack_parquet(opa: Oracle) -> None:
    report = data.LoadReport(source="the-stack")
    frame = data.load_genkubesec(FIXTURES / "the_stack_yaml_k8s.parquet", oracle=opa, report=report)
    assert sorted(frame["filename"]) == ["metrics-svc.yaml", "pulsar-admin-pod.yaml"]
    pod = frame.filter(pl.col("filename") == "pulsar-admin-pod.yaml").row(0, named=True)
    assert pod["label"] == "vulnerable" and pod["source_corpus"] == "genkubesec"
    assert {f.canonical_id for f in schema.findings_from_json(pod["oracle_findings"])} >= {"K8S_LATEST_TAG"}
    assert report.files_read == 5 and report.items_loaded == 2 and report.duplicates == 1
    assert report.dropped == {"invalid_yaml": 1, "invalid_manifest": 1}  # a Helm template, a kustomization


def test_genkubesec_instruction_records(opa: Oracle, tmp_path: Path) -> None:
    report = data.LoadReport(source="genkubesec")
    frame = data.load_genkubesec(FIXTURES / "genkubesec_train_data.json", oracle=opa, report=report)
    assert frame.height == 3 and report.source_labels_ignored == 3
    assert set(frame["label"]) == {"secure", "vulnerable"}
    other_layout = tmp_path / "other.csv"
    other_layout.write_text("path,text\nmain.tf,x\n", encoding="utf-8")
    with pytest.raises(CorpusValidationError, match="no content or input column"):
        data.load_genkubesec(other_layout, oracle=opa)
    with pytest.raises(CorpusValidationError, match=r"main\.tf: unsupported file type '\.tf'"):
        data.load_genkubesec(FIXTURES / "terraform_modules" / "network" / "main.tf", oracle=opa)


def test_genkubesec_hub_id_unreachable_is_a_clear_error(opa: Oracle, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(CorpusUnavailableError, match="local mirror"):
        data.load_genkubesec(data.GENKUBESEC_HUB_ID, oracle=opa, limit=5)
    with pytest.raises(FileNotFoundError, match="neither an existing path nor a hub"):
        data.load_genkubesec("/no/such/mirror", oracle=opa)


def test_policy_sample_directories(opa: Oracle) -> None:
    report = data.LoadReport(source="datree")
    frame = data.load_manifest_dir(FIXTURES / "datree_examples", oracle=opa, report=report)
    assert sorted(frame["filename"]) == [
        "deployment-deployment-no-limits.yaml",
        "rbac-cluster-admin-like.yaml",
        "rbac-readonly.yml",
    ]
    assert report.dropped == {"invalid_yaml": 1, "not_utf8": 1}
    labels = dict(zip(frame["filename"], frame["label"], strict=True))
    assert labels["rbac-cluster-admin-like.yaml"] == "vulnerable" and labels["rbac-readonly.yml"] == "secure"
    report = data.LoadReport(source="kubesec")
    frame = data.load_manifest_dir(FIXTURES / "kubesec_assets", corpus="kubesec", oracle=opa, report=report)
    assert frame["filename"].to_list() == ["score-0-cap-sys-admin.yml"] and frame["label"][0] == "vulnerable"
    assert report.dropped == {"yaml_bomb": 1, "invalid_manifest": 1}


def test_terraform_directories_per_file_and_per_module(opa: Oracle) -> None:
    report = data.LoadReport(source="tf")
    frame = data.load_terraform_dir(FIXTURES / "terraform_modules", oracle=opa, report=report)
    assert dict(zip(frame["filename"], frame["label"], strict=True)) == {
        "network-main.tf": "vulnerable",
        "storage-main.tf": "secure",
    }
    assert report.dropped == {"no_resources": 1, "invalid_hcl": 1}
    modules = data.load_terraform_dir(FIXTURES / "terraform_modules", per="module", oracle=opa)
    assert modules["filename"].to_list() == ["network.tf"]  # storage/ holds an invalid file: the module is dropped
    assert "# file: variables.tf" in modules["content"][0]


def test_label_with_oracle_drops_what_the_oracle_rejects() -> None:
    raw = pl.DataFrame(
        {
            "kind": ["kubernetes", "kubernetes"],
            "filename": ["ok.yaml", "bad.yaml"],
            "content": ["apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers: []\n", "a: [\n"],
            "source_corpus": ["test", "test"],
        }
    )
    report = data.LoadReport(source="raw")
    labelled = data.label_with_oracle(raw, FakeOracle(), report=report)
    assert labelled["filename"].to_list() == ["ok.yaml"] and labelled.columns == schema.ITEM_COLUMNS
    assert report.dropped == {"oracle:invalid_yaml": 1}


def test_safe_filename() -> None:
    assert data.safe_filename("k8s/pulsar admin pod.yaml", "kubernetes", "x") == "pulsar-admin-pod.yaml"
    assert data.safe_filename("..\\..\\main", "terraform", "x") == "main.tf"
    assert data.safe_filename("", "kubernetes", "kcf-7") == "kcf-7.yaml"


# --- curation ---


def test_curate_is_deterministic_stratified_and_order_free(embedded: pl.DataFrame) -> None:
    splits = data.curate([embedded], seed=7)
    assert [name for name in splits] == ["train", "dev", "test"]
    assert sum(part.height for part in splits.values()) == embedded.height
    for part in splits.values():
        assert {"kubernetes/secure", "kubernetes/vulnerable", "terraform/secure", "terraform/vulnerable"} <= set(
            data.value_counts(part)
        )
    shuffled = data.curate([embedded.sample(fraction=1.0, shuffle=True, seed=3), embedded.head(5)], seed=7)
    assert {name: frame_hash(part) for name, part in shuffled.items()} == {
        name: frame_hash(part) for name, part in splits.items()
    }
    assert data.curate([embedded], seed=8)["test"]["config_id"].to_list() != splits["test"]["config_id"].to_list()


def test_curate_holds_out_whole_templates_and_the_test_split_is_large_enough(embedded: pl.DataFrame) -> None:
    """A base, its secure edits and its vulnerable variants never straddle splits; the embedded test split is big
    enough to report on (>= 50 items) and every split keeps both labels at >= 20%."""
    splits = data.curate([embedded], seed=42)
    templates = {name: set(data.template_ids(part)) for name, part in splits.items()}
    assert not templates["train"] & templates["test"]
    assert not templates["train"] & templates["dev"] and not templates["dev"] & templates["test"]
    assert splits["test"].height >= 50 and splits["dev"].height >= 50
    for part in splits.values():
        shares = part["label"].value_counts(normalize=True)
        assert shares.height == 2 and shares["proportion"].min() >= 0.2
    total = embedded.height
    assert abs(splits["test"].height / total - 0.15) < 0.05  # item shares follow the fractions


def test_template_ids_follow_the_base_a_variant_was_made_from(embedded: pl.DataFrame) -> None:
    synthetic = embedded.filter(pl.col("source_corpus") == schema.SYNTHETIC_CORPUS).head(3)
    hand_written = embedded.filter(pl.col("source_corpus") == data.EMBEDDED_CORPUS).head(2)
    assert data.template_ids(synthetic) == [json.loads(p)["base_id"] for p in synthetic["generator_params"]]
    assert data.template_ids(hand_written) == hand_written["config_id"].to_list()
    # A variant made from a secure edit belongs to the edit's own base.
    edit = embedded.filter((pl.col("source_corpus") == schema.SYNTHETIC_CORPUS) & (pl.col("label") == "secure")).head(1)
    grandchild = edit.with_columns(
        pl.lit(json.dumps({"base_id": edit["config_id"][0]})).alias("generator_params"),
        pl.lit("feedbeeffeedbeef").alias("config_id"),
    )
    root = json.loads(edit["generator_params"][0])["base_id"]
    assert data.template_ids(pl.concat([edit, grandchild])) == [root, root]


def test_curate_keeps_diff_pairs_in_one_split(embedded: pl.DataFrame) -> None:
    secure = embedded.filter(pl.col("label") == "secure")
    vulnerable = embedded.filter(pl.col("label") == "vulnerable")
    # Pretend every vulnerable embedded config is the mutated twin of a secure one of its kind.
    twins = {"kubernetes": secure.filter(pl.col("kind") == "kubernetes")["config_id"][0],
             "terraform": secure.filter(pl.col("kind") == "terraform")["config_id"][0]}  # fmt: skip
    paired = vulnerable.with_columns(
        pl.col("kind").replace_strict(twins).alias("secure_variant_id"),
        pl.lit(schema.SYNTHETIC_CORPUS).alias("source_corpus"),
        pl.lit("test").alias("generator"),
        pl.lit(json.dumps({})).alias("generator_params"),
        pl.lit(0, dtype=pl.Int64).alias("generator_seed"),
    )
    splits = data.curate([secure, paired], seed=1)
    for part in splits.values():
        present = set(part["config_id"])
        assert set(part["secure_variant_id"].drop_nulls()) <= present

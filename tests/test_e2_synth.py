"""E2 synthetic data: each mutation introduces exactly the flaw it names (confirmed by the project's policies),
variants stay valid configs, unconfirmed variants are dropped and counted, generation is reproducible, and the
(vulnerable, secure) diff pairs apply."""

from __future__ import annotations

import json

import polars as pl
import pytest
from e2_fakes import FakeOracle, make_item

from sv_env_config_verification import data, manifests, patching, schema, synth
from sv_env_config_verification.adapters.opa import OpaAdapter
from sv_env_config_verification.loading import parse_config
from sv_env_config_verification.oracle import Oracle
from sv_shared.data.hashing import frame_hash


@pytest.fixture(scope="module")
def opa() -> Oracle:
    return Oracle([OpaAdapter()])


@pytest.fixture(scope="module")
def embedded() -> pl.DataFrame:
    """The hand-written part of the embedded corpus: the bases every recipe starts from."""
    corpus = data.load_embedded()
    return corpus.filter(pl.col("source_corpus") == data.EMBEDDED_CORPUS)


def _content(frame: pl.DataFrame, filename: str) -> str:
    return frame.filter(pl.col("filename") == filename)["content"][0]


def _ids(oracle: Oracle, filename: str, text: str) -> set[str]:
    [result] = oracle.scan_many([(filename, text)])
    assert result.error is None
    return {finding.canonical_id for finding in result.findings}


# A secure base for every mutation (the embedded corpus has a target for each).
BASES = {
    **dict.fromkeys(synth.KUBERNETES_MUTATIONS, "storefront.yaml"),
    "k8s_rbac_wildcard": "config-reader-rbac.yaml",
    "tf_s3_public_acl": "s3-artifacts-private.tf",
    "tf_s3_public_access_block_off": "s3-artifacts-private.tf",
    "tf_s3_unencrypted": "s3-backups-sse-s3.tf",
    "tf_open_ingress": "sg-bastion-office.tf",
    "tf_ebs_unencrypted": "ebs-encrypted.tf",
    "tf_rds_unencrypted": "rds-postgres-private.tf",
    "tf_rds_public": "rds-postgres-private.tf",
    "tf_iam_wildcard": "iam-reader-policy.tf",
    "tf_gcs_public": "gcs-private-bucket.tf",
    "tf_gcp_open_firewall": "gcp-firewall-internal.tf",
}


@pytest.mark.parametrize("name", sorted(synth.MUTATIONS))
def test_each_mutation_introduces_its_flaw(name: str, embedded: pl.DataFrame, opa: Oracle) -> None:
    filename = BASES[name]
    kind = "kubernetes" if name.startswith("k8s") else "terraform"
    base = _content(embedded, filename)
    assert _ids(opa, filename, base) == set()
    text, params = synth.apply_mutation(kind, base, name, seed=11)
    parse_config(kind, text)  # still a valid manifest / module
    assert synth.MUTATIONS[name][1] in _ids(opa, filename, text)
    assert params["target"]
    assert synth.apply_mutation(kind, base, name, seed=11) == (text, params)  # a function of (base, seed)
    changed = [line for line in manifests.unified_diff(base, text, filename).splitlines()[2:] if line[:1] in "+-"]
    assert 0 < len(changed) <= 16, "a mutation is a small, local edit"


SECURE_EDIT_BASES = {
    "k8s_rename": "storefront.yaml",
    "k8s_scale": "storefront.yaml",
    "k8s_team_label": "config-reader-rbac.yaml",
    "tf_team_tags": "s3-artifacts-private.tf",
    "tf_rename": "s3-artifacts-private.tf",
}


@pytest.mark.parametrize("name", sorted(synth.SECURE_EDITS))
def test_each_secure_edit_changes_the_config_and_keeps_it_secure(
    name: str, embedded: pl.DataFrame, opa: Oracle
) -> None:
    filename = SECURE_EDIT_BASES[name]
    kind = "kubernetes" if name.startswith("k8s") else "terraform"
    base = _content(embedded, filename)
    text, params = synth.apply_mutation(kind, base, name, seed=3)
    assert text != base and params["target"]
    assert _ids(opa, filename, text) == set()
    assert synth.introduced_ids(name) == ()
    changed = [line for line in manifests.unified_diff(base, text, filename).splitlines()[2:] if line[:1] in "+-"]
    assert 0 < len(changed) <= 12


def test_a_terraform_rename_follows_every_reference(embedded: pl.DataFrame) -> None:
    base = _content(embedded, "s3-artifacts-private.tf")
    for seed in range(40):
        text, params = synth.apply_mutation("terraform", base, "tf_rename", seed=seed)
        if params["target"] == "aws_s3_bucket.artifacts":
            break
    assert "aws_s3_bucket.artifacts." in base and "aws_s3_bucket.artifacts." not in text
    assert params["name"] + ".id" in text or params["name"] + ".arn" in text
    assert len(parse_config("terraform", text).resources) == len(parse_config("terraform", base).resources)


def test_a_mutation_pair_introduces_both_flaws(embedded: pl.DataFrame, opa: Oracle) -> None:
    name = "k8s_privileged+k8s_latest_tag"
    assert name in synth.mutation_pairs_for("kubernetes")
    assert synth.introduced_ids(name) == ("K8S_PRIVILEGED", "K8S_LATEST_TAG")
    text, params = synth.apply_mutation("kubernetes", _content(embedded, "storefront.yaml"), name, seed=5)
    assert set(params) == {"k8s_privileged", "k8s_latest_tag"}
    assert {"K8S_PRIVILEGED", "K8S_LATEST_TAG"} <= _ids(opa, "storefront.yaml", text)
    # Two mutations of the same id make no pair.
    assert all(len(set(synth.introduced_ids(pair))) == 2 for pair in synth.mutation_pairs_for("terraform"))


def test_generate_with_secure_edits_keeps_only_variants_the_oracle_finds_clean(
    embedded: pl.DataFrame, opa: Oracle
) -> None:
    report = synth.SynthReport()
    frame = synth.generate(embedded, 12, 42, opa, report=report, recipe=synth.secure_edit_pairs_for)
    assert frame.height == 12 and set(frame["label"]) == {"secure"}
    assert frame["secure_variant_id"].null_count() == 12
    assert all(synth.COMBINATION in generator for generator in frame["generator"])


def test_mutation_without_a_target_is_not_applicable(embedded: pl.DataFrame) -> None:
    assert (
        synth.apply_mutation("kubernetes", _content(embedded, "default-deny-netpol.yaml"), "k8s_privileged", 1) is None
    )
    assert synth.apply_mutation("terraform", _content(embedded, "vpc-network.tf"), "tf_rds_public", 1) is None
    # A base that already has the flaw is not a target either.
    assert synth.apply_mutation("terraform", _content(embedded, "s3-website-public.tf"), "tf_s3_public_acl", 1) is None


def test_generate_confirms_records_and_pairs(embedded: pl.DataFrame, opa: Oracle) -> None:
    report = synth.SynthReport()
    frame = synth.generate(embedded, 16, 42, opa, report=report)
    assert frame.height == 16 and set(frame["label"]) == {"vulnerable"}
    assert set(frame["source_corpus"]) == {schema.SYNTHETIC_CORPUS}
    assert sum(report.confirmed.values()) == 16
    buckets = ("confirmed", "unconfirmed", "not_applicable", "rejected", "not_needed")
    assert sum(report.attempted.values()) == sum(sum(getattr(report, bucket).values()) for bucket in buckets)
    for row in frame.iter_rows(named=True):
        params = json.loads(row["generator_params"])
        wanted = synth.MUTATIONS[row["generator"]][1]
        assert wanted in {f.canonical_id for f in schema.findings_from_json(row["oracle_findings"])}
        assert row["secure_variant_id"] == params["base_id"]  # embedded bases are canonical: the base is the twin
        again = synth.apply_mutation(
            row["kind"], _content(embedded, row["filename"]), row["generator"], row["generator_seed"]
        )
        assert again is not None and again[0] == row["content"]
    assert frame_hash(synth.generate(embedded, 16, 42, opa)) == frame_hash(frame)
    assert frame_hash(synth.generate(embedded, 16, 43, opa)) != frame_hash(frame)

    pairs = synth.diff_pairs(frame, secure=embedded)
    assert pairs.height == 16
    for pair in pairs.iter_rows(named=True):
        assert patching.apply_unified_diff(pair["vulnerable"], pair["diff"], pair["filename"]) == pair["secure"]
        assert json.loads(pair["fixed_ids"])  # the fix removes at least the mutated flaw


def test_unconfirmed_mutations_are_dropped_and_counted(embedded: pl.DataFrame) -> None:
    """The fake oracle sees only a few ids: variants for the others are dropped, never labelled by assumption."""
    report = synth.SynthReport()
    frame = synth.generate(embedded.filter(pl.col("kind") == "kubernetes"), 200, 5, FakeOracle(), report=report)
    detectable = {"k8s_privileged", "k8s_run_as_root", "k8s_latest_tag"}
    assert set(frame["generator"]) <= detectable
    assert set(report.unconfirmed) >= {"k8s_host_path", "k8s_rbac_wildcard"} - set(report.not_applicable)
    assert sum(report.attempted.values()) == sum(
        sum(getattr(report, bucket).values())
        for bucket in ("confirmed", "unconfirmed", "not_applicable", "rejected", "not_needed")
    )


def test_non_canonical_base_gets_a_canonical_twin(opa: Oracle) -> None:
    text = (
        "# The team's API, hand-written with comments.\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: api}\nspec:\n"
        "  securityContext: {runAsNonRoot: true, runAsUser: 1000, seccompProfile: {type: RuntimeDefault}}\n"
        "  automountServiceAccountToken: false\n"
        "  containers:\n  - name: api\n    image: ghcr.io/acme/api@sha256:" + "a" * 64 + "\n"
        "    resources: {limits: {cpu: 100m, memory: 64Mi}}\n"
        "    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true,"
        " capabilities: {drop: [ALL]}}\n"
    )
    base = pl.DataFrame([make_item(opa, "kubernetes", "api.yaml", text)])
    assert base["label"][0] == "secure"
    frame = synth.generate(base, 3, 9, opa)
    twins = frame.filter(pl.col("generator") == "canonical_form")
    assert twins.height == 1 and twins["label"][0] == "secure"
    assert twins["content"][0] == synth.canonical_form("kubernetes", text)
    variants = frame.filter(pl.col("generator") != "canonical_form")
    assert variants.height == 3 and set(variants["secure_variant_id"]) == {twins["config_id"][0]}
    for pair in synth.diff_pairs(frame).iter_rows(named=True):
        changed = [line for line in pair["diff"].splitlines()[2:] if line[:1] in "+-"]
        assert len(changed) <= 8  # only the mutation, not the comment and flow-style rewrite

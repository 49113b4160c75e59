"""E2's mutations: the edits that make a secure config vulnerable in one known way (each must introduce its canonical
id, which the oracle confirms in generation.py), and the secure edits a repository's history makes without touching its
security. Kubernetes mutations edit the parsed documents and emit canonical YAML (manifests.dump_yaml); Terraform
mutations edit the HCL text at the exact block or attribute (hcltext), keeping the author's layout."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from sv_env_config_verification import hcltext
from sv_env_config_verification.loading import parse_config
from sv_env_config_verification.manifests import Docs, containers, dump_yaml, rbac_rules, workloads

Mutation = Callable[[Any, np.random.Generator], tuple[Any, dict[str, Any]] | None]
"""(parsed docs or HCL text, rng) -> (mutated docs or text, params) or None when the base has no target."""


def _pick(items: list[Any], rng: np.random.Generator) -> Any:
    return items[int(rng.integers(0, len(items)))] if items else None


def _context(container: dict[str, Any]) -> dict[str, Any]:
    context = container.get("securityContext")
    if not isinstance(context, dict):
        context = container["securityContext"] = {}
    return context


def _container_mutation(
    change: Callable[[dict[str, Any], dict[str, Any], np.random.Generator], dict[str, Any]],
) -> Mutation:
    """A mutation that edits one container (chosen by the rng) of one workload."""

    def mutate(documents: Docs, rng: np.random.Generator) -> tuple[Docs, dict[str, Any]] | None:
        mutated = copy.deepcopy(documents)
        targets = list(containers(mutated))
        if not targets:
            return None
        resource, spec, container = _pick(targets, rng)
        params = change(spec, container, rng)
        return mutated, {"target": resource, "container": container.get("name"), **params}

    return mutate


def _privileged(spec: dict, container: dict, rng: np.random.Generator) -> dict[str, Any]:
    _context(container)["privileged"] = True
    return {}


def _run_as_root(spec: dict, container: dict, rng: np.random.Generator) -> dict[str, Any]:
    context = _context(container)
    context["runAsUser"] = 0
    context["runAsNonRoot"] = False
    return {}


def _priv_escalation(spec: dict, container: dict, rng: np.random.Generator) -> dict[str, Any]:
    _context(container)["allowPrivilegeEscalation"] = True
    return {}


def _dangerous_capability(spec: dict, container: dict, rng: np.random.Generator) -> dict[str, Any]:
    capability = _pick(["SYS_ADMIN", "NET_ADMIN", "ALL"], rng)
    capabilities = _context(container).setdefault("capabilities", {})
    added = capabilities.get("add") if isinstance(capabilities.get("add"), list) else []
    capabilities["add"] = [*added, capability]
    return {"capability": capability}


def _writable_root(spec: dict, container: dict, rng: np.random.Generator) -> dict[str, Any]:
    _context(container)["readOnlyRootFilesystem"] = False
    return {}


def _drop_limit(key: str) -> Callable[[dict, dict, np.random.Generator], dict[str, Any]]:
    """Remove one of a container's limits (cpu or memory): each missing limit is its own canonical finding."""

    def change(spec: dict, container: dict, rng: np.random.Generator) -> dict[str, Any]:
        resources = container.get("resources") if isinstance(container.get("resources"), dict) else {}
        limits = resources.get("limits") if isinstance(resources.get("limits"), dict) else {}
        limits.pop(key, None)
        if limits:
            resources["limits"] = limits
        else:
            resources.pop("limits", None)
        if resources:
            container["resources"] = resources
        else:
            container.pop("resources", None)
        return {}

    return change


def _latest_tag(spec: dict, container: dict, rng: np.random.Generator) -> dict[str, Any]:
    image = str(container.get("image") or "busybox")
    repository = re.sub(r"@sha256:[0-9a-f]+$", "", image)
    repository = re.sub(r":[^/:]+$", "", repository)
    untagged = bool(rng.random() < 0.3)
    container["image"] = repository if untagged else f"{repository}:latest"
    return {"image": container["image"]}


_SECRET_NAMES = ("DB_PASSWORD", "API_TOKEN", "AWS_SECRET_ACCESS_KEY", "STRIPE_SECRET_KEY", "REDIS_PASSWORD")


def _secret_in_env(spec: dict, container: dict, rng: np.random.Generator) -> dict[str, Any]:
    name = _pick(list(_SECRET_NAMES), rng)
    value = "".join(_pick(list("abcdefghjkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"), rng) for _ in range(20))
    env = container.get("env") if isinstance(container.get("env"), list) else []
    container["env"] = [*env, {"name": name, "value": value}]
    return {"variable": name}


_HOST_PATHS = ("/var/run/docker.sock", "/", "/etc", "/var/log", "/var/lib/kubelet")


def _host_path(spec: dict, container: dict, rng: np.random.Generator) -> dict[str, Any]:
    path = _pick(list(_HOST_PATHS), rng)
    volumes = spec.get("volumes") if isinstance(spec.get("volumes"), list) else []
    taken = {volume.get("name") for volume in volumes if isinstance(volume, dict)}
    name = next(candidate for index in range(100) if (candidate := f"host-{index}") not in taken)
    spec["volumes"] = [*volumes, {"name": name, "hostPath": {"path": path}}]
    mounts = container.get("volumeMounts") if isinstance(container.get("volumeMounts"), list) else []
    container["volumeMounts"] = [*mounts, {"name": name, "mountPath": "/host" + path.rstrip("/")}]
    return {"host_path": path}


def _host_namespace(documents: Docs, rng: np.random.Generator) -> tuple[Docs, dict[str, Any]] | None:
    mutated = copy.deepcopy(documents)
    targets = list(workloads(mutated))
    if not targets:
        return None
    resource, spec = _pick(targets, rng)
    namespace = _pick(["hostNetwork", "hostPID", "hostIPC"], rng)
    spec[namespace] = True
    return mutated, {"target": resource, "field": namespace}


def _rbac_wildcard(documents: Docs, rng: np.random.Generator) -> tuple[Docs, dict[str, Any]] | None:
    mutated = copy.deepcopy(documents)
    targets = list(rbac_rules(mutated))
    if not targets:
        return None
    resource, rule = _pick(targets, rng)
    key = _pick(["verbs", "resources"] if "resources" in rule else ["verbs"], rng)
    rule[key] = ["*"]
    return mutated, {"target": resource, "field": key}


KUBERNETES_MUTATIONS: dict[str, tuple[Mutation, str]] = {
    "k8s_privileged": (_container_mutation(_privileged), "K8S_PRIVILEGED"),
    "k8s_host_namespace": (_host_namespace, "K8S_HOST_NAMESPACE"),
    "k8s_run_as_root": (_container_mutation(_run_as_root), "K8S_RUN_AS_ROOT"),
    "k8s_priv_escalation": (_container_mutation(_priv_escalation), "K8S_PRIV_ESCALATION"),
    "k8s_dangerous_capability": (_container_mutation(_dangerous_capability), "K8S_DANGEROUS_CAPABILITIES"),
    "k8s_host_path": (_container_mutation(_host_path), "K8S_HOSTPATH"),
    "k8s_latest_tag": (_container_mutation(_latest_tag), "K8S_LATEST_TAG"),
    "k8s_no_cpu_limit": (_container_mutation(_drop_limit("cpu")), "K8S_NO_CPU_LIMIT"),
    "k8s_no_memory_limit": (_container_mutation(_drop_limit("memory")), "K8S_NO_MEMORY_LIMIT"),
    "k8s_writable_root_fs": (_container_mutation(_writable_root), "K8S_WRITABLE_ROOT_FS"),
    "k8s_secret_in_env": (_container_mutation(_secret_in_env), "K8S_SECRET_IN_ENV"),
    "k8s_rbac_wildcard": (_rbac_wildcard, "K8S_RBAC_WILDCARD"),
}


# --- Terraform mutations (text) ---


def _resources_of(text: str, *types: str) -> list[hcltext.Block]:
    return [block for block in hcltext.HclText(text).resources() if block.labels[0] in types]


def _set_on(rtypes: tuple[str, ...], settings: dict[str, str], drop: tuple[str, ...] = ()) -> Mutation:
    """Set attributes (and remove others) on one resource of the given types."""

    def mutate(text: str, rng: np.random.Generator) -> tuple[str, dict[str, Any]] | None:
        targets = _resources_of(text, *rtypes)
        if not targets:
            return None
        block = _pick(targets, rng)
        address = ".".join(block.labels)
        for name, value in settings.items():
            block = hcltext.HclText(text).resource(*block.labels) or block
            text = hcltext.set_attribute(text, block, name, value)
        for name in drop:
            block = hcltext.HclText(text).resource(*block.labels) or block
            text = hcltext.remove_attribute(text, block, name)
        return text, {"target": address}

    return mutate


def _s3_unencrypted(text: str, rng: np.random.Generator) -> tuple[str, dict[str, Any]] | None:
    hcl = hcltext.HclText(text)
    candidates: list[tuple[str, int, int]] = []
    for block in hcl.resources():
        if block.labels[0] == "aws_s3_bucket":
            for child in hcl.children(block, "server_side_encryption_configuration"):
                candidates.append((".".join(block.labels), child.start, child.end))
        elif block.labels[0] == "aws_s3_bucket_server_side_encryption_configuration":
            candidates.append((".".join(block.labels), block.start, block.end))
    if not candidates:
        return None
    address, start, end = _pick(candidates, rng)
    return hcltext.remove_lines(text, start, end), {"target": address}


def _open_ingress(text: str, rng: np.random.Generator) -> tuple[str, dict[str, Any]] | None:
    hcl = hcltext.HclText(text)
    targets: list[tuple[str, hcltext.Block]] = []
    for block in hcl.resources():
        if block.labels[0] == "aws_security_group":
            targets.extend((".".join(block.labels), child) for child in hcl.children(block, "ingress"))
        elif block.labels[0] == "aws_security_group_rule" and hcl.value(block, "type") == '"ingress"':
            targets.append((".".join(block.labels), block))
    if not targets:
        return None
    address, block = _pick(targets, rng)
    return hcltext.set_attribute(text, block, "cidr_blocks", '["0.0.0.0/0"]'), {"target": address}


_POLICY_TYPES = ("aws_iam_policy", "aws_iam_role_policy", "aws_iam_user_policy", "aws_iam_group_policy")
_ACTION = re.compile(r'(\bAction\s*=\s*|"Action"\s*:\s*)(\[[^\]]*\]|"[^"]*")')


def _iam_wildcard(text: str, rng: np.random.Generator) -> tuple[str, dict[str, Any]] | None:
    hcl = hcltext.HclText(text)
    targets = []
    for block in _resources_of(text, *_POLICY_TYPES):
        policy = hcl.attribute(block, "policy")
        if policy is not None and _ACTION.search(text, policy.value_start, policy.value_end):
            targets.append((block, policy))
    if not targets:
        return None
    block, policy = _pick(targets, rng)
    match = _ACTION.search(text, policy.value_start, policy.value_end)
    assert match is not None
    return text[: match.start(2)] + '"*"' + text[match.end(2) :], {"target": ".".join(block.labels)}


def _gcs_public(text: str, rng: np.random.Generator) -> tuple[str, dict[str, Any]] | None:
    member = _pick(["allUsers", "allAuthenticatedUsers"], rng)
    members = _resources_of(text, "google_storage_bucket_iam_member")
    bindings = _resources_of(text, "google_storage_bucket_iam_binding")
    if members or bindings:
        block = _pick(members + bindings, rng)
        if block.labels[0] == "google_storage_bucket_iam_member":
            return hcltext.set_attribute(text, block, "member", f'"{member}"'), {"target": ".".join(block.labels)}
        return hcltext.set_attribute(text, block, "members", f'["{member}"]'), {"target": ".".join(block.labels)}
    buckets = _resources_of(text, "google_storage_bucket")
    if not buckets:
        return None
    bucket = _pick(buckets, rng)
    name = f"{bucket.labels[1]}_public"
    added = (
        f'\nresource "google_storage_bucket_iam_member" "{name}" {{\n'
        f"  bucket = google_storage_bucket.{bucket.labels[1]}.name\n"
        f'  role   = "roles/storage.objectViewer"\n'
        f'  member = "{member}"\n}}\n'
    )
    return text.rstrip("\n") + "\n" + added, {"target": f"google_storage_bucket_iam_member.{name}"}


TERRAFORM_MUTATIONS: dict[str, tuple[Mutation, str]] = {
    "tf_s3_public_acl": (_set_on(("aws_s3_bucket",), {"acl": '"public-read"'}), "TF_S3_PUBLIC"),
    "tf_s3_public_access_block_off": (
        _set_on(
            ("aws_s3_bucket_public_access_block",),
            {
                name: "false"
                for name in (
                    "block_public_acls",
                    "block_public_policy",
                    "ignore_public_acls",
                    "restrict_public_buckets",
                )
            },
        ),
        "TF_S3_PUBLIC",
    ),
    "tf_s3_unencrypted": (_s3_unencrypted, "TF_S3_UNENCRYPTED"),
    "tf_open_ingress": (_open_ingress, "TF_OPEN_INGRESS"),
    "tf_ebs_unencrypted": (
        _set_on(("aws_ebs_volume",), {"encrypted": "false"}, drop=("kms_key_id",)),
        "TF_EBS_UNENCRYPTED",
    ),
    "tf_rds_unencrypted": (
        _set_on(("aws_db_instance", "aws_rds_cluster"), {"storage_encrypted": "false"}, drop=("kms_key_id",)),
        "TF_RDS_UNENCRYPTED",
    ),
    "tf_rds_public": (_set_on(("aws_db_instance",), {"publicly_accessible": "true"}), "TF_RDS_PUBLIC"),
    "tf_iam_wildcard": (_iam_wildcard, "TF_IAM_WILDCARD"),
    "tf_gcs_public": (_gcs_public, "TF_GCS_PUBLIC"),
    "tf_gcp_open_firewall": (
        _set_on(("google_compute_firewall",), {"source_ranges": '["0.0.0.0/0"]'}),
        "TF_GCP_OPEN_FIREWALL",
    ),
}

MUTATIONS: dict[str, tuple[Mutation, str]] = {**KUBERNETES_MUTATIONS, **TERRAFORM_MUTATIONS}
"""Every mutation by generator name: (function, the canonical id it must introduce)."""


# --- secure edits: changes a real repository makes that leave a secure config secure ---

_NAME_SUFFIXES = ("v2", "canary", "blue", "eu", "staging", "internal")
_TEAMS = ("payments", "platform", "search", "data", "identity", "growth")
_SCALABLE_KINDS = ("Deployment", "StatefulSet", "ReplicaSet")


def _named_objects(documents: Docs) -> list[dict[str, Any]]:
    return [d for d in documents if isinstance(d, dict) and isinstance((d.get("metadata") or {}).get("name"), str)]


def _k8s_rename(documents: Docs, rng: np.random.Generator) -> tuple[Docs, dict[str, Any]] | None:
    mutated = copy.deepcopy(documents)
    target = _pick(_named_objects(mutated), rng)
    if target is None:
        return None
    old = target["metadata"]["name"]
    target["metadata"]["name"] = f"{old}-{_pick(list(_NAME_SUFFIXES), rng)}"
    return mutated, {"target": f"{target.get('kind')}/{old}", "name": target["metadata"]["name"]}


def _k8s_scale(documents: Docs, rng: np.random.Generator) -> tuple[Docs, dict[str, Any]] | None:
    mutated = copy.deepcopy(documents)
    targets = [
        d for d in _named_objects(mutated) if d.get("kind") in _SCALABLE_KINDS and isinstance(d.get("spec"), dict)
    ]
    target = _pick(targets, rng)
    if target is None:
        return None
    current = target["spec"].get("replicas", 1)
    replicas = _pick([count for count in range(1, 7) if count != current], rng)
    target["spec"]["replicas"] = replicas
    return mutated, {"target": f"{target['kind']}/{target['metadata']['name']}", "replicas": replicas}


def _k8s_team_label(documents: Docs, rng: np.random.Generator) -> tuple[Docs, dict[str, Any]] | None:
    mutated = copy.deepcopy(documents)
    target = _pick(_named_objects(mutated), rng)
    if target is None:
        return None
    team = _pick(list(_TEAMS), rng)
    labels = target["metadata"].get("labels") if isinstance(target["metadata"].get("labels"), dict) else {}
    target["metadata"]["labels"] = {**labels, "team": team}
    return mutated, {"target": f"{target.get('kind')}/{target['metadata']['name']}", "team": team}


_AWS_TAGGABLE = (
    "aws_s3_bucket", "aws_ebs_volume", "aws_db_instance", "aws_rds_cluster", "aws_security_group", "aws_iam_role",
    "aws_iam_policy", "aws_vpc", "aws_subnet", "aws_kms_key", "aws_instance",
)  # fmt: skip
_TAGS_ATTRIBUTE = {
    **dict.fromkeys(_AWS_TAGGABLE, "tags"),
    **dict.fromkeys(("google_storage_bucket", "google_compute_instance", "google_compute_disk"), "labels"),
}


def _tf_team_tags(text: str, rng: np.random.Generator) -> tuple[str, dict[str, Any]] | None:
    block = _pick(_resources_of(text, *_TAGS_ATTRIBUTE), rng)
    if block is None:
        return None
    team = _pick(list(_TEAMS), rng)
    attribute = _TAGS_ATTRIBUTE[block.labels[0]]
    key = "Team" if attribute == "tags" else "team"
    value = f'{{\n    {key} = "{team}"\n  }}'
    return hcltext.set_attribute(text, block, attribute, value), {"target": ".".join(block.labels), "team": team}


def _tf_rename(text: str, rng: np.random.Generator) -> tuple[str, dict[str, Any]] | None:
    """A resource's name label and every reference to it (`type.name` in code and interpolations) renamed."""
    block = _pick(hcltext.HclText(text).resources(), rng)
    if block is None:
        return None
    rtype, old = block.labels
    new = f"{old}_{_pick(list(_NAME_SUFFIXES), rng)}"
    if re.search(rf"(?<![\w.-]){re.escape(rtype)}\.{re.escape(new)}(?![\w-])", text):
        return None
    header = text[block.start : block.open].replace(f'"{old}"', f'"{new}"', 1)
    renamed = text[: block.start] + header + text[block.open :]
    reference = re.compile(rf"(?<![\w.-]){re.escape(rtype)}\.{re.escape(old)}(?![\w-])")
    return reference.sub(f"{rtype}.{new}", renamed), {"target": f"{rtype}.{old}", "name": f"{rtype}.{new}"}


SECURE_EDITS: dict[str, tuple[Mutation, None]] = {
    "k8s_rename": (_k8s_rename, None),
    "k8s_scale": (_k8s_scale, None),
    "k8s_team_label": (_k8s_team_label, None),
    "tf_team_tags": (_tf_team_tags, None),
    "tf_rename": (_tf_rename, None),
}
"""Edits that change a secure config the way a repository's history does, without touching its security: the
variant must stay secure (the oracle confirms it has no finding). They give held-out templates their secure items."""

COMBINATION = "+"
"""Generator names joined by this apply one after the other, e.g. "k8s_privileged+k8s_latest_tag"."""


def mutations_for(kind: str) -> list[str]:
    return list(KUBERNETES_MUTATIONS if kind == "kubernetes" else TERRAFORM_MUTATIONS)


def secure_edits_for(kind: str) -> list[str]:
    prefix = "k8s_" if kind == "kubernetes" else "tf_"
    return [name for name in SECURE_EDITS if name.startswith(prefix)]


def mutation_pairs_for(kind: str) -> list[str]:
    """Every two mutations of a kind that introduce different canonical ids, as combined generator names."""
    return _pairs(mutations_for(kind), distinct_ids=True)


def secure_edit_pairs_for(kind: str) -> list[str]:
    """Every two secure edits of a kind, as combined generator names."""
    return _pairs(secure_edits_for(kind), distinct_ids=False)


def _pairs(names: list[str], *, distinct_ids: bool) -> list[str]:
    return [
        f"{first}{COMBINATION}{second}"
        for index, first in enumerate(names)
        for second in names[index + 1 :]
        if not distinct_ids or _generator(first)[1] != _generator(second)[1]
    ]


def introduced_ids(name: str) -> tuple[str, ...]:
    """The canonical ids a (possibly combined) generator must introduce; () for secure edits."""
    return tuple(dict.fromkeys(i for part in name.split(COMBINATION) if (i := _generator(part)[1]) is not None))


def _generator(name: str) -> tuple[Mutation, str | None]:
    if name in MUTATIONS:
        return MUTATIONS[name]
    if name in SECURE_EDITS:
        return SECURE_EDITS[name]
    raise KeyError(f"unknown generator {name!r}")


def apply_mutation(kind: str, content: str, name: str, seed: int) -> tuple[str, dict[str, Any]] | None:
    """The mutated text and params for one (base, mutation, seed), or None when the base has no target (or the
    target already has the flaw). A combined name applies its parts in order from one seeded generator; the
    params of each part are kept under its name.

    Raises ConfigParseError if the base does not parse; the result is always re-parsed (a mutation that produced
    an invalid file would be a bug, and raises the same way).
    """
    parts = name.split(COMBINATION)
    functions = [_generator(part)[0] for part in parts]
    rng = np.random.default_rng(seed)
    parsed = parse_config(kind, content)
    mutated: Any = parsed.documents if kind == "kubernetes" else content
    combined: dict[str, Any] = {}
    for part, function in zip(parts, functions, strict=True):
        outcome = function(mutated, rng)
        if outcome is None:
            return None
        mutated, combined[part] = outcome
    params = combined[parts[0]] if len(parts) == 1 else combined
    text = dump_yaml(mutated) if kind == "kubernetes" else mutated
    if text == (dump_yaml(parsed.documents) if kind == "kubernetes" else content):
        return None  # the base already had what the mutation sets
    parse_config(kind, text)
    return text, params


def canonical_form(kind: str, content: str) -> str:
    """The base as the mutations write it: canonical YAML for Kubernetes, the text itself for Terraform."""
    return dump_yaml(parse_config(kind, content).documents) if kind == "kubernetes" else content

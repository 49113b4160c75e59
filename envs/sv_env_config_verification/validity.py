"""Whether a patched config is one Kubernetes or Terraform would accept, checked before its patch earns credit.

The loader and the scanners read a config more forgivingly than the systems that apply it: PyYAML and python-hcl2
keep the last of two equal keys, and a policy reads `hostIPC: "true"` (a string) as "not true" where the API server
refuses the object. A patch that removes a finding only in such a reading fixes nothing, so verify.py refuses it
(patch credit 0, the reason named) when the patched text has a problem the original did not have:

Kubernetes
- duplicate_key: a mapping key repeated at any depth of any document (the API server and kubectl refuse them).
- schema: an object that fails the Kubernetes OpenAPI schema of its apiVersion and kind (types, required fields,
  enums), strict: unknown fields are refused too, as `kubectl apply` does by default. The schemas and the validator
  are kubernetes-validate's (the JSON schemas bundled in its wheel, newest Kubernetes version, `-local-strict`)
  run by jsonschema; they are read from the installed package, never fetched. A document that is not an object
  (config_model.SkippedEntry) is a schema problem too.
  Kinds without a schema (CRDs such as an Argo Rollout): a pod template at spec.template or
  spec.jobTemplate.spec.template is validated against the core PodTemplateSpec, and every other pod spec the
  labels find (pod_specs.py, by shape) against the core PodSpec; the rest of the object cannot be, and the
  resource is named in `unvalidated` (results.jsonl details). Credit is not withheld for it: the scanners'
  verdict on it stands, and the details say what was not checked. A built-in kind under an apiVersion that does
  not serve it is a schema problem, so renaming the apiVersion cannot switch validation off.

Terraform (the patched text must already parse, terraform_parsing.parse_terraform)
- duplicate_key: an attribute set twice in one block body (Terraform: "Attribute redefined"; python-hcl2 keeps
  the last), or a property repeated in the JSON syntax.
- duplicate_resource: one resource address declared twice (Terraform: "Duplicate resource configuration").
- type: an attribute a policy reads (POLICY_ATTRIBUTE_TYPES, types from the AWS and Google providers' schemas)
  holding a value Terraform cannot convert to that type, by go-cty's conversion rules: a bool is true/false or one
  of the strings "true", "false", "1", "0"; a string is any primitive; a list(string) a list of primitives; a JSON
  policy a JSON string or an object; null leaves an attribute unset. Expressions and templates (${...}) are not
  evaluated and pass.
- syntax: text python-hcl2 parses but hcltext cannot scan (so its attributes cannot be checked).
  Not verified: the rest of each provider's schema (required arguments, enums, other attributes). No provider
  schema is installable here for offline use, and Terraform itself is not installed.

Only problems the patch introduces count: the original's own problems (an apiVersion removed from Kubernetes, an
unknown field in a corpus file) are not held against the patch. Problems compare without line numbers, so lines
the patch moves keep their problems the same.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib import resources
from importlib.metadata import version
from importlib.resources.abc import Traversable
from typing import Any

import yaml
from jsonschema import Draft202012Validator
from kubernetes_validate import latest_version
from referencing import Registry, Resource
from yaml.constructor import SafeConstructor

from sv_env_config_verification import hcltext
from sv_env_config_verification.config_model import ConfigResource, ParsedConfig
from sv_env_config_verification.kubernetes_parsing import json_key
from sv_env_config_verification.loading import parse_config
from sv_env_config_verification.patching import PatchErrorReason
from sv_env_config_verification.pod_specs import pod_specs

VALIDATOR_PACKAGE = "kubernetes-validate"
MAX_SCHEMA_ERRORS = 100
"""Schema errors kept per object: enough to tell a patch's new error from an original's, bounded for a hostile one."""
MAX_MESSAGE_CHARS = 300
"""jsonschema quotes the offending value in its message; a patch's value can be a megabyte."""

# kubernetes-validate's own rule for a schema file's name: the API group's first label and the version
# ("rbac.authorization.k8s.io/v1" -> "rbac-v1", "apps/v1" -> "apps-v1", "v1" -> "v1").
_API_GROUP = re.compile(r"^([^./]*)(?:\.[^/]*)?/")
_DEFINITIONS = "https://kubernetes.io/api/_definitions.json#/$defs/"
_POD_TEMPLATE = "io.k8s.api.core.v1.PodTemplateSpec"
_POD_SPEC = "io.k8s.api.core.v1.PodSpec"
# Where custom resources conventionally keep a pod template (Argo Rollout, OpenKruise CloneSet; CronJob-like kinds).
_TEMPLATE_PATHS: tuple[tuple[str, ...], ...] = (("spec", "template"), ("spec", "jobTemplate", "spec", "template"))
_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"


@dataclass(frozen=True, order=True)
class Problem:
    """One reason Kubernetes or Terraform would refuse a config; `line` is for the reader and not compared."""

    code: PatchErrorReason
    where: str
    message: str
    line: int | None = field(default=None, compare=False)

    def __str__(self) -> str:
        at = f" (line {self.line})" if self.line is not None else ""
        return f"{self.where}{at}: {self.message}"


@dataclass(frozen=True)
class Validity:
    """A config's problems, and what could not be validated (resource: why)."""

    problems: frozenset[Problem]
    unvalidated: tuple[str, ...] = ()


def check_config(parsed: ParsedConfig, text: str) -> Validity:
    """The problems of a config that parsed (`text` is what was parsed); never raises on any parsed config."""
    if parsed.kind == "kubernetes":
        return _kubernetes(parsed, text)
    return _terraform(parsed, text)


@lru_cache(maxsize=256)
def original_validity(kind: str, content: str) -> Validity:
    """An item's own validity, which every answer to the item is compared with: computed once per item (items are
    at most schema.MAX_CONTENT_BYTES, so the cache holds at most 64 MB of their text)."""
    return check_config(parse_config(kind, content), content)


def new_problems(before: Validity, after: Validity) -> list[Problem]:
    """The patched config's problems the original did not have, in file order."""
    return sorted(after.problems - before.problems, key=lambda problem: (problem.line or 0, problem))


def validator_versions() -> dict[str, str]:
    """What patched manifests are validated with, for a run's provenance."""
    return {VALIDATOR_PACKAGE: version(VALIDATOR_PACKAGE), "kubernetes_schema": f"{_kubernetes_version()} strict"}


def _short(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE_CHARS else message[: MAX_MESSAGE_CHARS - 3] + "..."


def _dotted(path: Sequence[str | int]) -> str:
    text = ""
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else f".{step}" if text else str(step)
    return text


# --- Kubernetes: duplicate keys ---


def _key(constructor: SafeConstructor, node: yaml.Node) -> str:
    if node.tag == _STR_TAG:  # nearly every key: its value is the key, no construction needed
        return str(node.value)
    return "<<" if node.tag == _MERGE_TAG else json_key(constructor.construct_object(node, deep=True))


def _duplicate_keys(text: str) -> Iterator[Problem]:
    """Keys repeated in one mapping, compared as the loader names them (1 and "1" name the same JSON key).

    Composed again from the text: the constructed values have already lost the repeats. The text passed the
    loader's limits, so composing is bounded; a node shared through an alias is walked once."""
    constructor = SafeConstructor()
    for number, root in enumerate(yaml.compose_all(text, Loader=yaml.CSafeLoader), start=1):
        stack: list[tuple[yaml.Node, tuple[str | int, ...]]] = [(root, ())] if root is not None else []
        walked: set[int] = set()
        while stack:
            node, path = stack.pop()
            if id(node) in walked:
                continue
            walked.add(id(node))
            if isinstance(node, yaml.SequenceNode):
                stack.extend((child, (*path, index)) for index, child in enumerate(node.value))
            elif isinstance(node, yaml.MappingNode):
                keys: set[str] = set()
                for key_node, value_node in node.value:
                    key = _key(constructor, key_node)
                    if key in keys:
                        where = f"document {number} {_dotted((*path, key))}"
                        message = f"key {key!r} appears twice; the last value would win"
                        line = key_node.start_mark.line + 1
                        yield Problem(PatchErrorReason.INVALID_DUPLICATE_KEY, where, message, line)
                    keys.add(key)
                    stack.append((value_node, (*path, key)))


# --- Kubernetes: schemas ---


@cache
def _kubernetes_version() -> str:
    """The newest Kubernetes version whose schemas the installed kubernetes-validate bundles ("1.37.0")."""
    return latest_version()


@cache
def _schema_dir() -> Traversable:
    return resources.files("kubernetes_validate") / "kubernetes-json-schema" / f"v{_kubernetes_version()}-local-strict"


@cache
def _served() -> dict[str, dict[str, str]]:
    """kind (lower case) -> the API group slug -> its schema file, from the bundled file names ("<kind>-<slug>.json").

    Lookups go through this table only, so no file name is ever built from a manifest's text."""
    table: dict[str, dict[str, str]] = {}
    for entry in _schema_dir().iterdir():
        kind, _, slug = entry.name.removesuffix(".json").partition("-")
        if entry.name.endswith(".json") and slug:
            table.setdefault(kind, {})[slug] = entry.name
    return table


@cache
def _registry() -> Registry:
    definitions = json.loads((_schema_dir() / "_definitions.json").read_text(encoding="utf-8"))
    return Resource.from_contents(definitions) @ Registry()


@cache
def _validator(schema_file: str) -> Draft202012Validator:
    """The compiled schema of one kind (kubernetes-validate reads and compiles it again on every call: ~40 ms)."""
    schema = json.loads((_schema_dir() / schema_file).read_text(encoding="utf-8"))
    return Draft202012Validator(schema, registry=Resource.from_contents(schema) @ _registry())


@cache
def _definition_validator(definition: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": _DEFINITIONS + definition}, registry=_registry())


def _schema_errors(
    parsed: ParsedConfig,
    resource: ConfigResource,
    validator: Draft202012Validator,
    instance: Any,
    prefix: tuple[str, ...] = (),
) -> Iterator[Problem]:
    try:
        errors = list(itertools.islice(validator.iter_errors(instance), MAX_SCHEMA_ERRORS))
    except RecursionError:  # jsonschema descends recursively; the loader's depth limit keeps this out of reach
        yield Problem(PatchErrorReason.INVALID_SCHEMA, resource.name, "too deeply nested to validate")
        return
    for error in errors:
        path = (*prefix, *error.absolute_path)
        where = f"{resource.name} {_dotted(path)}" if path else resource.name
        line = parsed.line_at(resource, path)
        yield Problem(PatchErrorReason.INVALID_SCHEMA, where, _short(error.message), line)


def _pod_parts(body: Mapping[str, Any]) -> Iterator[tuple[tuple[str, ...], dict[str, Any], str]]:
    """(path, value, core definition) of what a kind without a schema holds of a pod: a pod template where custom
    resources conventionally keep one, and every other pod spec the labels find (pod_specs.py) on its own, so no pod
    a label can come from goes unvalidated (a `containers:` turned into a mapping is a schema problem there too)."""
    covered: set[tuple[str, ...]] = set()
    for path in _TEMPLATE_PATHS:
        node: Any = body
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict):
            covered.add((*path, "spec"))
            yield path, node, _POD_TEMPLATE
    for path, spec in pod_specs(body):
        if path not in covered:
            yield path, spec, _POD_SPEC


def _kubernetes(parsed: ParsedConfig, text: str) -> Validity:
    problems = set(_duplicate_keys(text))
    problems.update(
        Problem(PatchErrorReason.INVALID_SCHEMA, entry.where, entry.problem, entry.line) for entry in parsed.skipped
    )
    unvalidated: list[str] = []
    for resource in parsed.resources:
        api_version = str(resource.body.get("apiVersion"))
        served = _served().get(resource.kind.lower(), {})
        schema_file = served.get(_API_GROUP.sub(r"\1-", api_version))
        if schema_file is not None:
            problems.update(_schema_errors(parsed, resource, _validator(schema_file), resource.body))
            continue
        if served:
            message = f"apiVersion {api_version!r} does not serve kind {resource.kind!r} in Kubernetes"
            problems.add(Problem(PatchErrorReason.INVALID_SCHEMA, resource.name, message, resource.line))
        parts = list(_pod_parts(resource.body))
        for path, part, definition in parts:
            problems.update(_schema_errors(parsed, resource, _definition_validator(definition), part, path))
        checked = ", ".join(_dotted(path) for path, _, _ in parts)
        what = f"only its pod template ({checked}) was validated" if parts else "nothing in it was validated"
        unvalidated.append(f"{resource.name}: no schema for {api_version} {resource.kind}; {what}")
    return Validity(frozenset(problems), tuple(unvalidated))


# --- Terraform ---

BOOL, STRING, STRINGS, POLICY_JSON = "bool", "string", "list(string)", "json"

POLICY_ATTRIBUTE_TYPES: dict[str, dict[tuple[str, ...], str]] = {
    "aws_s3_bucket": {("acl",): STRING},
    "aws_s3_bucket_acl": {("acl",): STRING, ("access_control_policy", "grant", "grantee", "uri"): STRING},
    "aws_s3_bucket_public_access_block": {
        (setting,): BOOL
        for setting in ("block_public_acls", "block_public_policy", "ignore_public_acls", "restrict_public_buckets")
    },
    "aws_s3_bucket_server_side_encryption_configuration": {("bucket",): STRING},
    "aws_security_group": {("ingress", "cidr_blocks"): STRINGS, ("ingress", "ipv6_cidr_blocks"): STRINGS},
    "aws_security_group_rule": {("type",): STRING, ("cidr_blocks",): STRINGS, ("ipv6_cidr_blocks",): STRINGS},
    "aws_vpc_security_group_ingress_rule": {("cidr_ipv4",): STRING, ("cidr_ipv6",): STRING},
    "google_compute_firewall": {("direction",): STRING, ("disabled",): BOOL, ("source_ranges",): STRINGS},
    "aws_ebs_volume": {("encrypted",): BOOL},
    "aws_instance": {("root_block_device", "encrypted"): BOOL, ("ebs_block_device", "encrypted"): BOOL},
    "aws_db_instance": {("storage_encrypted",): BOOL, ("publicly_accessible",): BOOL, ("replicate_source_db",): STRING},
    "aws_rds_cluster": {("storage_encrypted",): BOOL},
    "aws_rds_cluster_instance": {("publicly_accessible",): BOOL},
    "aws_iam_policy": {("policy",): POLICY_JSON},
    "aws_iam_role_policy": {("policy",): POLICY_JSON},
    "aws_iam_user_policy": {("policy",): POLICY_JSON},
    "aws_iam_group_policy": {("policy",): POLICY_JSON},
    "aws_iam_role": {("inline_policy", "policy"): POLICY_JSON},
    "data.aws_iam_policy_document": {
        ("statement", "effect"): STRING,
        ("statement", "actions"): STRINGS,
        ("statement", "resources"): STRINGS,
    },
    "google_storage_bucket_iam_member": {("member",): STRING},
    "google_storage_bucket_iam_binding": {("members",): STRINGS},
    "google_storage_bucket_acl": {("role_entity",): STRINGS},
    "google_storage_bucket_access_control": {("entity",): STRING},
    "google_storage_default_object_access_control": {("entity",): STRING},
}
"""Resource type ("data." for data sources) -> attribute path (through nested blocks) -> provider type, for every
attribute policies/terraform/*.rego read; a policy that reads a new attribute adds it here."""

_PRIMITIVE = (str, bool, int, float)


def _conversion_problem(value: Any, expected: str) -> str | None:
    """Why Terraform cannot assign `value` (python-hcl2's form) to an attribute of type `expected`, else None."""
    if value is None or (isinstance(value, str) and ("${" in value or "%{" in value)):
        return None
    if expected == BOOL:
        if isinstance(value, bool) or value in ("true", "false", "1", "0"):
            return None
        hint = f"; write {str(value).lower()} (lower case)" if str(value).lower() in ("true", "false") else ""
        return f"a bool is required, not {_short(json.dumps(value))}{hint}"
    if expected == STRING:
        return None if isinstance(value, _PRIMITIVE) else f"a string is required, not a {type(value).__name__}"
    if expected == STRINGS:
        if isinstance(value, list) and all(item is None or isinstance(item, _PRIMITIVE) for item in value):
            return None
        return f"a list of strings is required, not {_short(json.dumps(value))}"
    if isinstance(value, dict | list):
        return None
    try:
        json.loads(str(value))
    except ValueError:
        return "the policy is not a JSON document"
    return None


def _values(node: Any, path: tuple[str, ...], at: tuple[str | int, ...] = ()) -> Iterator[tuple[str, Any]]:
    """(location, value) of the attribute at `path`, through nested blocks (python-hcl2 gives them as lists)."""
    if not path:
        yield _dotted(at), node
    elif isinstance(node, dict) and path[0] in node:
        yield from _values(node[path[0]], path[1:], (*at, path[0]))
    elif isinstance(node, list):  # a nested block (python-hcl2 lists every block), or a list of objects
        for index, item in enumerate(node):
            if isinstance(item, dict):
                yield from _values(item, path, (*at, index))


def _redefined(text: str) -> Iterator[Problem]:
    if text.lstrip().startswith("{"):  # Terraform's JSON syntax
        repeats: list[str] = []

        def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
            counts = Counter(key for key, _ in items)
            repeats.extend(key for key, count in counts.items() if count > 1)
            return dict(items)

        json.loads(text, object_pairs_hook=pairs)
        for key in repeats:
            yield Problem(PatchErrorReason.INVALID_DUPLICATE_KEY, f"property {key!r}", "is set twice in one object")
        return
    try:
        found = hcltext.HclText(text).redefined_attributes()
    except hcltext.HclScanError as error:
        yield Problem(PatchErrorReason.INVALID_SYNTAX, "file", f"the attributes cannot be read: {error}")
        return
    for block, name, offset in found:
        line = text.count("\n", 0, offset) + 1
        yield Problem(PatchErrorReason.INVALID_DUPLICATE_KEY, f"{block} {name}", "is set twice in one block", line)


def _terraform(parsed: ParsedConfig, text: str) -> Validity:
    problems = set(_redefined(text.removeprefix("\ufeff")))  # the loader drops a BOM before parsing too
    for address, count in Counter(resource.name for resource in parsed.resources).items():
        if count > 1:
            message, line = f"is declared {count} times", parsed.line_of(address)
            problems.add(Problem(PatchErrorReason.INVALID_DUPLICATE_RESOURCE, address, message, line))
    for resource in parsed.resources:
        rtype = f"data.{resource.kind}" if resource.mode == "data" else resource.kind
        for path, expected in POLICY_ATTRIBUTE_TYPES.get(rtype, {}).items():
            for location, value in _values(resource.body, path):
                reason = _conversion_problem(value, expected)
                if reason is not None:
                    where = f"{resource.name} {location}"
                    problems.add(Problem(PatchErrorReason.INVALID_TYPE, where, reason, resource.line))
    return Validity(frozenset(problems))

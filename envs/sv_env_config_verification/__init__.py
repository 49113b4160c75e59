"""E2 config verification: Kubernetes manifests and Terraform modules checked against scanner oracles.

Untrusted configs are parsed only through `loading` (size, UTF-8, YAML alias-bomb, depth and document limits);
the project's own Rego policies (`policies/`, run in-process by `adapters.opa`) and the external scanners
(semgrep, checkov, trivy, kube-linter when installed) report findings that `canonical` maps onto one vocabulary,
and `oracle` merges them into deduplicated, cached labels with the tool versions that produced them. Where an
object's pods are is found by shape, whatever its kind (`pod_specs`), and `scanner_fixtures` measures the labels on
the scanners' own public test fixtures.
"""

from sv_shared.interop import verifiers_exports

# Prime `verifiers` discovers this environment by importing this package under its seed name (sv_shared.interop).
__all__, __getattr__ = verifiers_exports(__name__)

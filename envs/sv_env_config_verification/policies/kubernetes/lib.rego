# Shared helpers of the project's Kubernetes policies.
#
# Input (built by sv_env_config_verification.loading.ParsedConfig.policy_input):
#   {"kind": "kubernetes",
#    "resources": [{"name": "Kind/name", "kind": Kind, "object": manifest, "pod_specs": [path, ...]}, ...]}
#
# Every deny rule yields finding(...): rule_id, canonical_id, severity, resource (the input's name, which the
# loader guarantees is output-safe), path (field names and indices from the object to the offending value) and
# a constant message. Policies never echo other input strings: regopy 1.5.2 prints strings unescaped in its
# JSON output, so a quote in an attacker's container name would corrupt the result. The adapter renders the
# message with the subject found at `path` instead.
package secverify.kubernetes.lib

import rego.v1

# Every pod spec of a resource, as [path from the object, spec]. The loader finds pod specs by their shape, not by
# a list of kinds (sv_env_config_verification/pod_specs.py: a mapping holding a container field, reached through
# mapping keys, at most 8 keys deep), and passes their paths as r.pod_specs; reading them here, rather than
# searching again, keeps the labels, the baseline and the verifier on one definition of where pods are.
# (rego-cpp 1.5.2 rejects `some x in` inside comprehensions; an indexed reference iterates the same way.)
pod_specs(r) := [[path, spec] |
	path := r.pod_specs[_]
	spec := object.get(r.object, path, null)
	is_object(spec)
]

# Init and ephemeral containers run with the same privileges as the main ones, so every rule covers them.
container_fields := ["initContainers", "containers", "ephemeralContainers"]

# Every container of a pod spec, as [field, index, container]. A container field that is not a list (a mapping
# under containers:) is invalid input the API server refuses; it holds no containers, so it yields no findings.
containers(spec) := [[field, j, c] |
	field := container_fields[_]
	is_array(spec[field])
	c := spec[field][j]
	is_object(c)
]

# Path from the object to a field of one container of the pod spec at `at` (the pod spec's own path).
container_path(at, field, j, rest) := array.concat(at, array.concat([field, j], rest))

# The container's securityContext value for key, else the pod's, else null (Kubernetes' own precedence).
effective(spec, container, key) := object.get(
	container,
	["securityContext", key],
	object.get(spec, ["securityContext", key], null),
)

finding(rules, rule_id, resource, path, message) := {
	"rule_id": rule_id,
	"canonical_id": rules[rule_id].canonical_id,
	"severity": rules[rule_id].severity,
	"resource": resource,
	"path": path,
	"message": message,
}

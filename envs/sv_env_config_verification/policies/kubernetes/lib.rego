# Shared helpers of the project's Kubernetes policies.
#
# Input (built by sv_env_config_verification.loading.ParsedConfig.policy_input):
#   {"kind": "kubernetes", "resources": [{"name": "Kind/name", "kind": Kind, "object": manifest}, ...]}
#
# Every deny rule yields finding(...): rule_id, canonical_id, severity, resource (the input's name, which the
# loader guarantees is output-safe), path (field names and indices from the object to the offending value) and
# a constant message. Policies never echo other input strings: regopy 1.5.2 prints strings unescaped in its
# JSON output, so a quote in an attacker's container name would corrupt the result. The adapter renders the
# message with the subject found at `path` instead.
package secverify.kubernetes.lib

import rego.v1

# Path from a workload object to its pod spec.
pod_spec_paths := {
	"Pod": ["spec"],
	"PodTemplate": ["template", "spec"],
	"Deployment": ["spec", "template", "spec"],
	"StatefulSet": ["spec", "template", "spec"],
	"DaemonSet": ["spec", "template", "spec"],
	"ReplicaSet": ["spec", "template", "spec"],
	"ReplicationController": ["spec", "template", "spec"],
	"Job": ["spec", "template", "spec"],
	"CronJob": ["spec", "jobTemplate", "spec", "template", "spec"],
}

# Init and ephemeral containers run with the same privileges as the main ones, so every rule covers them.
container_fields := ["initContainers", "containers", "ephemeralContainers"]

pod_spec(r) := spec if {
	spec := object.get(r.object, pod_spec_paths[r.kind], null)
	is_object(spec)
}

# Path from the object to a field of its pod spec.
spec_path(r, rest) := array.concat(pod_spec_paths[r.kind], rest)

# Path from the object to a field of one container.
container_path(r, field, j, rest) := array.concat(pod_spec_paths[r.kind], array.concat([field, j], rest))

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

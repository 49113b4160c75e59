# Resource limits: a container without a CPU or a memory limit can starve its node (and every tenant on it).
# The two limits are separate findings, so a fix of only one of them is visible.
package secverify.kubernetes.resources

import data.secverify.kubernetes.lib
import rego.v1

rules := {
	"SV-K8S-005": {"canonical_id": "K8S_NO_CPU_LIMIT", "severity": "low", "title": "missing CPU limit"},
	"SV-K8S-012": {"canonical_id": "K8S_NO_MEMORY_LIMIT", "severity": "low", "title": "missing memory limit"},
}

limit_rules := {"cpu": "SV-K8S-005", "memory": "SV-K8S-012"}

limit_messages := {"cpu": "has no CPU limit", "memory": "has no memory limit"}

has_limit(container, key) if {
	value := container.resources.limits[key]
	value != null
	value != ""
}

deny contains f if {
	some r in input.resources
	some [at, spec] in lib.pod_specs(r)
	some [field, j, c] in lib.containers(spec)
	some key, rule_id in limit_rules
	not has_limit(c, key)
	f := lib.finding(rules, rule_id, r.name, lib.container_path(at, field, j, []), limit_messages[key])
}

# Resource limits: a container without CPU and memory limits can starve its node (and every tenant on it).
package secverify.kubernetes.resources

import data.secverify.kubernetes.lib
import rego.v1

rules := {"SV-K8S-005": {
	"canonical_id": "K8S_NO_RESOURCE_LIMITS",
	"severity": "low",
	"title": "missing CPU or memory limit",
}}

has_limit(container, key) if {
	value := container.resources.limits[key]
	value != null
	value != ""
}

deny contains f if {
	some r in input.resources
	spec := lib.pod_spec(r)
	some field in lib.container_fields
	some j, c in spec[field]
	is_object(c) # a malformed entry has no limits to miss; other rules skip it through object.get
	missing := [key | some key in ["cpu", "memory"]; not has_limit(c, key)]
	count(missing) > 0
	message := concat("", ["has no ", concat(" or ", missing), " limit"])
	f := lib.finding(rules, "SV-K8S-005", r.name, lib.container_path(r, field, j, []), message)
}

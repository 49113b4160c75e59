# RBAC: a Role or ClusterRole rule with "*" verbs or resources grants everything present and future.
package secverify.kubernetes.rbac

import data.secverify.kubernetes.lib
import rego.v1

rules := {"SV-K8S-010": {"canonical_id": "K8S_RBAC_WILDCARD", "severity": "high", "title": "RBAC wildcard"}}

wildcard_messages := {
	"verbs": "grants every verb (*)",
	"resources": "grants access to every resource (*)",
}

deny contains f if {
	some r in input.resources
	r.kind in {"Role", "ClusterRole"}
	some i, rule in r.object.rules
	some field, message in wildcard_messages
	"*" in rule[field]
	f := lib.finding(rules, "SV-K8S-010", r.name, ["rules", i, field], message)
}

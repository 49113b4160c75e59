# Network exposure: AWS security groups and GCP firewalls that admit traffic from anywhere (0.0.0.0/0, ::/0).
# Every port counts: "open to the internet" is the finding, the port is in the path for the reader.
package secverify.terraform.network

import data.secverify.terraform.lib
import rego.v1

rules := {
	"SV-TF-003": {"canonical_id": "TF_OPEN_INGRESS", "severity": "high", "title": "security group open to the world"},
	"SV-TF-009": {"canonical_id": "TF_GCP_OPEN_FIREWALL", "severity": "high", "title": "GCP firewall open to the world"},
}

anywhere := {"0.0.0.0/0", "::/0"}

# Paths (relative to a rule object) of CIDR entries that mean "anywhere".
open_cidrs(rule) := [[field, k] |
	some field in ["cidr_blocks", "ipv6_cidr_blocks"]
	cidr := lib.as_list(object.get(rule, field, []))[k] # `some k, cidr in` is rejected here by rego-cpp 1.5.2
	cidr in anywhere
]

deny contains f if {
	some r in lib.managed("aws_security_group")
	some i, ingress in lib.as_list(object.get(r.config, "ingress", []))
	some cidr_path in open_cidrs(ingress)
	path := array.concat(["ingress", i], cidr_path)
	f := lib.finding(rules, "SV-TF-003", r.address, path, "allows ingress from anywhere")
}

deny contains f if {
	some r in lib.managed("aws_security_group_rule")
	r.config.type == "ingress"
	some cidr_path in open_cidrs(r.config)
	f := lib.finding(rules, "SV-TF-003", r.address, cidr_path, "allows ingress from anywhere")
}

deny contains f if {
	some r in lib.managed("aws_vpc_security_group_ingress_rule")
	some field in ["cidr_ipv4", "cidr_ipv6"]
	r.config[field] in anywhere
	f := lib.finding(rules, "SV-TF-003", r.address, [field], "allows ingress from anywhere")
}

# A firewall that only denies traffic from anywhere is protective, so only rules with `allow` blocks count.
deny contains f if {
	some r in lib.managed("google_compute_firewall")
	upper(object.get(r.config, "direction", "INGRESS")) == "INGRESS"
	not lib.truthy(object.get(r.config, "disabled", false))
	count(lib.as_list(object.get(r.config, "allow", []))) > 0
	some k, source in lib.as_list(object.get(r.config, "source_ranges", []))
	source in anywhere
	f := lib.finding(rules, "SV-TF-009", r.address, ["source_ranges", k], "allows ingress from anywhere")
}

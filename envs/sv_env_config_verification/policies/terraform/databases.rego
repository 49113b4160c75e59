# Database exposure: an RDS instance with a public endpoint is one password away from the internet.
package secverify.terraform.databases

import data.secverify.terraform.lib
import rego.v1

rules := {"SV-TF-006": {"canonical_id": "TF_RDS_PUBLIC", "severity": "high", "title": "publicly accessible RDS"}}

deny contains f if {
	some type in ["aws_db_instance", "aws_rds_cluster_instance"]
	some r in lib.managed(type)
	lib.truthy(object.get(r.config, "publicly_accessible", false))
	f := lib.finding(rules, "SV-TF-006", r.address, ["publicly_accessible"], "is publicly accessible")
}

# Storage encryption at rest: EBS volumes (standalone and instance block devices) and RDS storage.
package secverify.terraform.encryption

import data.secverify.terraform.lib
import rego.v1

rules := {
	"SV-TF-004": {"canonical_id": "TF_EBS_UNENCRYPTED", "severity": "medium", "title": "unencrypted EBS volume"},
	"SV-TF-005": {"canonical_id": "TF_RDS_UNENCRYPTED", "severity": "medium", "title": "unencrypted RDS storage"},
}

deny contains f if {
	some r in lib.managed("aws_ebs_volume")
	not lib.truthy(object.get(r.config, "encrypted", false))
	f := lib.finding(rules, "SV-TF-004", r.address, ["encrypted"], "is not encrypted")
}

deny contains f if {
	some r in lib.managed("aws_instance")
	some field in ["root_block_device", "ebs_block_device"]
	some i, device in lib.as_list(object.get(r.config, field, []))
	not lib.truthy(object.get(device, "encrypted", false))
	f := lib.finding(rules, "SV-TF-004", r.address, [field, i, "encrypted"], "has an unencrypted block device")
}

# A read replica inherits its source's encryption, so it is judged by the source.
deny contains f if {
	some type in ["aws_db_instance", "aws_rds_cluster"]
	some r in lib.managed(type)
	object.get(r.config, "replicate_source_db", null) == null
	not lib.truthy(object.get(r.config, "storage_encrypted", false))
	f := lib.finding(rules, "SV-TF-005", r.address, ["storage_encrypted"], "does not encrypt its storage")
}

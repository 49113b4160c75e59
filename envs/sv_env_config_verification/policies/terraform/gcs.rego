# GCS: IAM members or ACL entities allUsers / allAuthenticatedUsers make a bucket readable by anyone.
package secverify.terraform.gcs

import data.secverify.terraform.lib
import rego.v1

rules := {"SV-TF-008": {"canonical_id": "TF_GCS_PUBLIC", "severity": "high", "title": "public GCS bucket"}}

public_members := {"allUsers", "allAuthenticatedUsers"}

# An ACL entity such as "READER:allUsers" or a role_entity entry; the principal is after the last colon.
public_entity(value) if {
	is_string(value)
	parts := split(value, ":")
	parts[count(parts) - 1] in public_members
}

deny contains f if {
	some r in lib.managed("google_storage_bucket_iam_member")
	r.config.member in public_members
	f := lib.finding(rules, "SV-TF-008", r.address, ["member"], "grants a role to the public")
}

deny contains f if {
	some r in lib.managed("google_storage_bucket_iam_binding")
	some k, member in lib.as_list(object.get(r.config, "members", []))
	member in public_members
	f := lib.finding(rules, "SV-TF-008", r.address, ["members", k], "grants a role to the public")
}

deny contains f if {
	some r in lib.managed("google_storage_bucket_acl")
	some k, entity in lib.as_list(object.get(r.config, "role_entity", []))
	public_entity(entity)
	f := lib.finding(rules, "SV-TF-008", r.address, ["role_entity", k], "grants ACL access to the public")
}

deny contains f if {
	some type in ["google_storage_bucket_access_control", "google_storage_default_object_access_control"]
	some r in lib.managed(type)
	public_entity(r.config.entity)
	f := lib.finding(rules, "SV-TF-008", r.address, ["entity"], "grants ACL access to the public")
}

# S3 buckets: public ACLs or a disabled public access block expose the data; a bucket without a server-side
# encryption configuration (inline, or a separate aws_s3_bucket_server_side_encryption_configuration for it)
# leaves encryption to account defaults the module does not control.
package secverify.terraform.s3

import data.secverify.terraform.lib
import rego.v1

rules := {
	"SV-TF-001": {"canonical_id": "TF_S3_PUBLIC", "severity": "high", "title": "public S3 bucket"},
	"SV-TF-002": {"canonical_id": "TF_S3_UNENCRYPTED", "severity": "medium", "title": "S3 bucket without SSE"},
}

public_acls := {"public-read", "public-read-write", "website"}

public_grantees := {
	"http://acs.amazonaws.com/groups/global/AllUsers",
	"http://acs.amazonaws.com/groups/global/AuthenticatedUsers",
}

public_access_block_settings := ["block_public_acls", "block_public_policy", "ignore_public_acls", "restrict_public_buckets"]

deny contains f if {
	some r in lib.managed("aws_s3_bucket")
	r.config.acl in public_acls
	f := lib.finding(rules, "SV-TF-001", r.address, ["acl"], "has a public canned ACL")
}

deny contains f if {
	some r in lib.managed("aws_s3_bucket_acl")
	r.config.acl in public_acls
	f := lib.finding(rules, "SV-TF-001", r.address, ["acl"], "sets a public canned ACL")
}

deny contains f if {
	some r in lib.managed("aws_s3_bucket_acl")
	some i, policy in lib.as_list(r.config.access_control_policy)
	some j, grant in lib.as_list(policy.grant)
	some k, grantee in lib.as_list(grant.grantee)
	grantee.uri in public_grantees
	path := ["access_control_policy", i, "grant", j, "grantee", k, "uri"]
	f := lib.finding(rules, "SV-TF-001", r.address, path, "grants access to all (authenticated) AWS users")
}

# Every setting defaults to false in the provider, so an absent one is as open as an explicit false.
deny contains f if {
	some r in lib.managed("aws_s3_bucket_public_access_block")
	some setting in public_access_block_settings
	not lib.truthy(object.get(r.config, setting, false))
	message := concat("", ["does not enable ", setting])
	f := lib.finding(rules, "SV-TF-001", r.address, [setting], message)
}

# The bucket's own settings hold an encryption configuration.
inline_encryption(bucket) if count(lib.as_list(object.get(bucket.config, "server_side_encryption_configuration", []))) > 0

# Some aws_s3_bucket_server_side_encryption_configuration points at the bucket by reference or by name.
separate_encryption(bucket) if {
	some sse in lib.managed("aws_s3_bucket_server_side_encryption_configuration")
	refers_to(sse.config.bucket, bucket)
}

refers_to(value, bucket) if {
	is_string(value)
	contains(value, concat("", ["aws_s3_bucket.", bucket.name, "."]))
}

refers_to(value, bucket) if {
	is_string(value)
	contains(value, concat("", ["aws_s3_bucket.", bucket.name, "["]))
}

refers_to(value, bucket) if {
	is_string(value)
	value == bucket.config.bucket
}

deny contains f if {
	some r in lib.managed("aws_s3_bucket")
	not inline_encryption(r)
	not separate_encryption(r)
	f := lib.finding(rules, "SV-TF-002", r.address, [], "has no server-side encryption configuration")
}

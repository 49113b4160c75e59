# METADATA
# title: S3 bucket has no server-side encryption configuration
# description: >-
#   Neither an inline server_side_encryption_configuration nor an aws_s3_bucket_server_side_encryption_configuration
#   resource applies to the bucket. trivy's embedded AWS-0088 reported nothing on such buckets here (trivy 0.76,
#   offline: it treats S3 default encryption as on), so the project adds this check.
# custom:
#   id: SV-TF-S3-UNENCRYPTED
#   avd_id: SV-TF-S3-UNENCRYPTED
#   severity: MEDIUM
#   input:
#     selector:
#       - type: cloud
#         subtypes:
#           - service: s3
#             provider: aws
package user.secverify.s3_unencrypted

import rego.v1

deny contains res if {
	some bucket in input.aws.s3.buckets
	not bucket.encryption.enabled.value
	res := result.new("S3 bucket has no server-side encryption configuration", bucket)
}

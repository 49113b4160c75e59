# METADATA
# title: IAM policy allows every action
# description: >-
#   An Allow statement with Action "*" grants every current and future AWS action. trivy's embedded AWS-0057
#   reported nothing on such policies here (trivy 0.76, offline), so the project adds this check.
# custom:
#   id: SV-TF-IAM-WILDCARD
#   avd_id: SV-TF-IAM-WILDCARD
#   severity: HIGH
#   input:
#     selector:
#       - type: cloud
#         subtypes:
#           - service: iam
#             provider: aws
package user.secverify.iam_wildcard

import rego.v1

_policies contains policy if {
	some policy in input.aws.iam.policies
}

_policies contains policy if {
	some collection in ["roles", "users", "groups"]
	some principal in input.aws.iam[collection]
	some policy in principal.policies
}

deny contains res if {
	some policy in _policies
	document := json.unmarshal(policy.document.value)
	some statement in document.Statement
	statement.Effect == "Allow"
	some action in statement.Action
	action == "*"
	res := result.new("IAM policy allows every action (Action \"*\")", policy)
}

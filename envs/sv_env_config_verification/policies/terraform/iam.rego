# IAM: an Allow statement with Action "*" grants every API action (with Resource "*" it is full admin).
# Policies arrive as objects (jsonencode, decoded by the loader), JSON strings (heredocs, file contents), or
# aws_iam_policy_document data sources.
package secverify.terraform.iam

import data.secverify.terraform.lib
import rego.v1

rules := {"SV-TF-007": {"canonical_id": "TF_IAM_WILDCARD", "severity": "high", "title": "IAM wildcard action"}}

policy_resources := {
	"aws_iam_policy": "policy",
	"aws_iam_role_policy": "policy",
	"aws_iam_user_policy": "policy",
	"aws_iam_group_policy": "policy",
}

document(value) := value if is_object(value)

document(value) := json.unmarshal(value) if {
	is_string(value)
	json.is_valid(value)
}

allows(statement) if object.get(statement, "Effect", "Allow") == "Allow"

wildcard(statement, key) if "*" in lib.as_list(object.get(statement, key, []))

wildcard(statement, key) if object.get(statement, key, null) == "*"

# JSON policies capitalize their keys (Action, Resource); policy-document blocks do not (actions, resources).
message(statement, resource_key) := "allows every action on every resource" if {
	wildcard(statement, resource_key)
} else := "allows every action (Action *)"

# (rego-cpp 1.5.2 rejects `some i, x in` inside comprehensions; an indexed reference iterates the same way.)
wildcard_statements(doc) := [[i, s] |
	s := lib.as_list(object.get(doc, "Statement", []))[i]
	allows(s)
	wildcard(s, "Action")
]

deny contains f if {
	some type, attribute in policy_resources
	some r in lib.managed(type)
	doc := document(r.config[attribute])
	some [i, s] in wildcard_statements(doc)
	path := [attribute, "Statement", i, "Action"]
	f := lib.finding(rules, "SV-TF-007", r.address, path, message(s, "Resource"))
}

deny contains f if {
	some r in lib.managed("aws_iam_role")
	some j, inline in lib.as_list(object.get(r.config, "inline_policy", []))
	doc := document(inline.policy)
	some [i, s] in wildcard_statements(doc)
	path := ["inline_policy", j, "policy", "Statement", i, "Action"]
	f := lib.finding(rules, "SV-TF-007", r.address, path, message(s, "Resource"))
}

deny contains f if {
	some r in lib.data_sources("aws_iam_policy_document")
	some i, s in lib.as_list(object.get(r.config, "statement", []))
	lower(object.get(s, "effect", "Allow")) == "allow"
	wildcard(s, "actions")
	f := lib.finding(rules, "SV-TF-007", r.address, ["statement", i, "actions"], message(s, "resources"))
}

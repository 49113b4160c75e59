# Shared helpers of the project's Terraform policies.
#
# Input (built by sv_env_config_verification.loading.ParsedConfig.policy_input from python-hcl2's JSON form):
#   {"kind": "terraform",
#    "managed": {type: [{"address": "type.name", "type": type, "name": name, "config": {attributes, blocks}}]},
#    "data": {type: [{"address": "data.type.name", ...}]}}
# Resources arrive grouped by type because every rule starts from one type (a scan of all resources per rule
# doubled evaluation time).
# python-hcl2 gives nested blocks as lists of objects and unquoted strings; jsonencode(...) arguments arrive
# decoded as objects. Findings follow the Kubernetes library's shape: constant messages and a path into the
# block's config, never echoed input strings (regopy 1.5.2 does not escape strings in its JSON output).
package secverify.terraform.lib

import rego.v1

managed(type) := object.get(input.managed, type, [])

data_sources(type) := object.get(input.data, type, [])

# Blocks and block-like attributes as a list, whether written once (an object) or repeated (a list).
as_list(value) := value if is_array(value)

as_list(value) := [value] if is_object(value)

as_list(value) := [] if {
	not is_array(value)
	not is_object(value)
}

# Terraform converts the strings "true"/"1" and "false"/"0" to booleans (go-cty's conversion), so every spelling
# counts; validity.py refuses a patch whose value converts to no boolean at all.
truthy(value) if value == true

truthy(value) if value == "true"

truthy(value) if value == "1"

falsy(value) if value == false

falsy(value) if value == "false"

falsy(value) if value == "0"

finding(rules, rule_id, resource, path, message) := {
	"rule_id": rule_id,
	"canonical_id": rules[rule_id].canonical_id,
	"severity": rules[rule_id].severity,
	"resource": resource,
	"path": path,
	"message": message,
}

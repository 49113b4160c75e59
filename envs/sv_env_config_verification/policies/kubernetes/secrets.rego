# Secrets written into manifests: a literal password or token in a container's env is readable by anyone who
# can read the workload (and lands in git). References (valueFrom.secretKeyRef) are the fix, so only literal
# `value`s are checked. The finding's path ends at the variable's name, never at its value.
package secverify.kubernetes.secrets

import data.secverify.kubernetes.lib
import rego.v1

rules := {"SV-K8S-011": {"canonical_id": "K8S_SECRET_IN_ENV", "severity": "high", "title": "secret in env value"}}

# Lower-cased variable names that hold credentials; names that point at a credential (a file, a URL, a
# duration, a length) are not credentials themselves.
secret_name_pattern := `(password|passwd|(^|_)pwd($|_)|secret|token|api_?key|access_?key|private_?key|credential)`

reference_name_pattern := `(_file|_path|_dir|_url|_uri|_ttl|_timeout|_expiry|_expires|_length|_len|_size|_name|_id)$`

# Values that are secrets whatever the variable is called.
secret_value_patterns := [
	`AKIA[0-9A-Z]{16}`,
	`-----BEGIN [A-Z ]*PRIVATE KEY-----`,
	`gh[pousr]_[A-Za-z0-9]{36}`,
	`xox[abprs]-[A-Za-z0-9-]{10,}`,
	`sk_live_[A-Za-z0-9]{16,}`,
]

# Values that are plainly not credentials: numbers, booleans, paths, Kubernetes $(VAR) references.
harmless_value(value) if regex.match(`^[0-9.]+$`, value)

harmless_value(value) if lower(value) in {"true", "false", "yes", "no", "on", "off", "none", "null"}

harmless_value(value) if startswith(value, "/")

harmless_value(value) if startswith(value, "$(")

secret_env(e) if {
	name := lower(e.name)
	regex.match(secret_name_pattern, name)
	not regex.match(reference_name_pattern, name)
	not harmless_value(e.value)
}

secret_env(e) if {
	some pattern in secret_value_patterns
	regex.match(pattern, e.value)
}

deny contains f if {
	some r in input.resources
	some [at, spec] in lib.pod_specs(r)
	some [field, j, c] in lib.containers(spec)
	some k, e in c.env
	is_string(e.name)
	is_string(e.value)
	e.value != ""
	secret_env(e)
	path := lib.container_path(at, field, j, ["env", k, "name"])
	f := lib.finding(rules, "SV-K8S-011", r.name, path, "sets a literal secret in an environment variable")
}

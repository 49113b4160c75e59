# Access to the node itself: sharing the host's network/PID/IPC namespaces, and mounting host paths.
package secverify.kubernetes.host_access

import data.secverify.kubernetes.lib
import rego.v1

rules := {
	"SV-K8S-002": {"canonical_id": "K8S_HOST_NAMESPACE", "severity": "high", "title": "host namespace shared"},
	"SV-K8S-009": {"canonical_id": "K8S_HOSTPATH", "severity": "high", "title": "hostPath volume"},
}

host_namespace_fields := ["hostNetwork", "hostPID", "hostIPC"]

deny contains f if {
	some r in input.resources
	some [at, spec] in lib.pod_specs(r)
	some field in host_namespace_fields
	spec[field] == true
	f := lib.finding(rules, "SV-K8S-002", r.name, array.concat(at, [field]), "shares a host namespace")
}

deny contains f if {
	some r in input.resources
	some [at, spec] in lib.pod_specs(r)
	is_array(spec.volumes) # like containers: volumes that are not a list are invalid input and mount nothing
	some k, volume in spec.volumes
	volume.hostPath != null
	path := array.concat(at, ["volumes", k, "hostPath"])
	f := lib.finding(rules, "SV-K8S-009", r.name, path, "mounts a hostPath volume")
}

# Container privilege: privileged mode, root users, privilege escalation, writable root filesystems and
# dangerous capabilities -- the Pod Security Standards' "restricted" profile, container by container.
package secverify.kubernetes.pod_security

import data.secverify.kubernetes.lib
import rego.v1

rules := {
	"SV-K8S-001": {"canonical_id": "K8S_PRIVILEGED", "severity": "high", "title": "privileged container"},
	"SV-K8S-003": {"canonical_id": "K8S_RUN_AS_ROOT", "severity": "medium", "title": "container may run as root"},
	"SV-K8S-004": {"canonical_id": "K8S_PRIV_ESCALATION", "severity": "medium", "title": "privilege escalation allowed"},
	"SV-K8S-006": {"canonical_id": "K8S_WRITABLE_ROOT_FS", "severity": "low", "title": "writable root filesystem"},
	"SV-K8S-007": {
		"canonical_id": "K8S_DANGEROUS_CAPABILITIES",
		"severity": "high",
		"title": "dangerous capability added",
	},
}

# Capabilities that amount to host or network control (names normalized: upper case, no CAP_ prefix).
dangerous_capabilities := {
	"ALL", "SYS_ADMIN", "NET_ADMIN", "SYS_PTRACE", "SYS_MODULE", "SYS_RAWIO", "SYS_BOOT", "SYS_TIME",
	"DAC_READ_SEARCH", "DAC_OVERRIDE", "BPF", "PERFMON", "NET_RAW", "MKNOD", "SETUID", "SETGID", "SYS_CHROOT",
	"LINUX_IMMUTABLE", "MAC_ADMIN", "MAC_OVERRIDE", "SYSLOG",
}

deny contains f if {
	some r in input.resources
	some [at, spec] in lib.pod_specs(r)
	some [field, j, c] in lib.containers(spec)
	c.securityContext.privileged == true
	path := lib.container_path(at, field, j, ["securityContext", "privileged"])
	f := lib.finding(rules, "SV-K8S-001", r.name, path, "runs privileged")
}

deny contains f if {
	some r in input.resources
	some [at, spec] in lib.pod_specs(r)
	some [field, j, c] in lib.containers(spec)
	lib.effective(spec, c, "runAsUser") == 0
	path := lib.container_path(at, field, j, [])
	f := lib.finding(rules, "SV-K8S-003", r.name, path, "runs as root (runAsUser: 0)")
}

# A UID Kubernetes would accept as non-root: a positive integer. A string such as "1000" is rejected by the API
# server, so it must not pass for a fix.
non_root_uid(uid) if {
	is_number(uid)
	uid > 0
	uid == floor(uid)
}

deny contains f if {
	some r in input.resources
	some [at, spec] in lib.pod_specs(r)
	some [field, j, c] in lib.containers(spec)
	uid := lib.effective(spec, c, "runAsUser")
	uid != 0
	not non_root_uid(uid)
	lib.effective(spec, c, "runAsNonRoot") != true
	path := lib.container_path(at, field, j, [])
	f := lib.finding(rules, "SV-K8S-003", r.name, path, "sets neither runAsNonRoot: true nor a non-zero runAsUser")
}

deny contains f if {
	some r in input.resources
	some [at, spec] in lib.pod_specs(r)
	some [field, j, c] in lib.containers(spec)
	object.get(c, ["securityContext", "allowPrivilegeEscalation"], null) != false
	path := lib.container_path(at, field, j, [])
	f := lib.finding(rules, "SV-K8S-004", r.name, path, "does not set allowPrivilegeEscalation: false")
}

deny contains f if {
	some r in input.resources
	some [at, spec] in lib.pod_specs(r)
	some [field, j, c] in lib.containers(spec)
	object.get(c, ["securityContext", "readOnlyRootFilesystem"], null) != true
	path := lib.container_path(at, field, j, [])
	f := lib.finding(rules, "SV-K8S-006", r.name, path, "does not set readOnlyRootFilesystem: true")
}

deny contains f if {
	some r in input.resources
	some [at, spec] in lib.pod_specs(r)
	some [field, j, c] in lib.containers(spec)
	some k, cap in c.securityContext.capabilities.add
	is_string(cap)
	trim_prefix(upper(cap), "CAP_") in dangerous_capabilities
	path := lib.container_path(at, field, j, ["securityContext", "capabilities", "add", k])
	f := lib.finding(rules, "SV-K8S-007", r.name, path, "adds a dangerous capability")
}

# Image pinning: an untagged or :latest image changes under the workload without any manifest change.
package secverify.kubernetes.images

import data.secverify.kubernetes.lib
import rego.v1

rules := {"SV-K8S-008": {"canonical_id": "K8S_LATEST_TAG", "severity": "medium", "title": "untagged or latest image"}}

# The tag of an image reference, "" when there is none. Only the last path segment can hold the tag, so a
# registry port ("registry:5000/app") is not mistaken for one.
image_tag(image) := tag if {
	segments := split(image, "/")
	last := segments[count(segments) - 1]
	contains(last, ":")
	parts := split(last, ":")
	tag := parts[count(parts) - 1]
}

image_tag(image) := "" if {
	segments := split(image, "/")
	not contains(segments[count(segments) - 1], ":")
}

unpinned_message := {"": "uses an untagged image", "latest": "uses the :latest image tag"}

deny contains f if {
	some r in input.resources
	some [at, spec] in lib.pod_specs(r)
	some [field, j, c] in lib.containers(spec)
	is_string(c.image)
	not contains(c.image, "@") # pinned by digest
	message := unpinned_message[image_tag(c.image)]
	f := lib.finding(rules, "SV-K8S-008", r.name, lib.container_path(at, field, j, ["image"]), message)
}

"""Open ingress is any internet-scale source CIDR, not the literal 0.0.0.0/0: every /0 admits every address, and
a patch that only narrows /0 to /1 (or splits it) still admits a large share of the internet, so it fixes nothing."""

from __future__ import annotations

import pytest
from e2_fakes import make_item

from sv_env_config_verification import verify
from sv_env_config_verification.adapters.opa import OpaAdapter
from sv_env_config_verification.adapters.semgrep import SemgrepAdapter
from sv_env_config_verification.baseline import remediate_terraform
from sv_env_config_verification.canonical import internet_scale
from sv_env_config_verification.manifests import unified_diff
from sv_env_config_verification.oracle import Oracle

OPEN = [
    "0.0.0.0/0",
    "127.0.0.0/0",  # the evasion
    "10.1.2.3/0",
    "255.255.255.255/0",
    "0.0.0.0/00",
    " 0.0.0.0/0 ",
    "0.0.0.0/1",
    "128.0.0.0/1",
    "64.0.0.0/7",
    "::/0",
    "1::/0",
    "::ffff:1.2.3.4/0",
    "2000::/3",
    "fc00::/6",  # wider than the private fc00::/7
]
CLOSED = [
    "10.0.0.0/8",
    "0.0.0.0/8",
    "203.0.113.0/24",
    "192.168.1.10/32",
    "2001:db8::/32",
    "fc00::/7",
    "fd12:3456::/16",
    "::ffff:1.2.3.4/100",
    "var.office_cidr",
    "0.0.0.0/abc",
    "",
]


def test_the_cases_are_what_the_definition_says() -> None:
    assert all(internet_scale(cidr) for cidr in OPEN)
    assert not any(internet_scale(cidr) for cidr in CLOSED)


def security_group(*cidrs: str) -> str:
    listed = ", ".join(f'"{cidr}"' for cidr in cidrs)
    field = "ipv6_cidr_blocks" if any(":" in cidr for cidr in cidrs) else "cidr_blocks"
    return (
        'resource "aws_security_group" "web" {\n  name = "web"\n  ingress {\n    from_port   = 22\n'
        f'    to_port     = 22\n    protocol    = "tcp"\n    {field} = [{listed}]\n  }}\n}}\n'
    )


def forms(cidr: str) -> dict[str, tuple[str, str]]:
    """Every Terraform form that admits a source CIDR, with the canonical id it raises when open."""
    field = "cidr_ipv6" if ":" in cidr else "cidr_ipv4"
    list_field = "ipv6_cidr_blocks" if ":" in cidr else "cidr_blocks"
    return {
        "security_group.tf": (security_group(cidr), "TF_OPEN_INGRESS"),
        "sg_rule.tf": (
            f'resource "aws_security_group_rule" "ssh" {{\n  type = "ingress"\n  from_port = 22\n  to_port = 22\n'
            f'  protocol = "tcp"\n  {list_field} = ["{cidr}"]\n  security_group_id = "sg-1"\n}}\n',
            "TF_OPEN_INGRESS",
        ),
        "vpc_rule.tf": (
            f'resource "aws_vpc_security_group_ingress_rule" "ssh" {{\n  security_group_id = "sg-1"\n'
            f'  {field} = "{cidr}"\n  from_port = 22\n  to_port = 22\n  ip_protocol = "tcp"\n}}\n',
            "TF_OPEN_INGRESS",
        ),
        "firewall.tf": (
            'resource "google_compute_firewall" "ssh" {\n  name = "ssh"\n  network = "default"\n'
            f'  allow {{\n    protocol = "tcp"\n    ports = ["22"]\n  }}\n  source_ranges = ["{cidr}"]\n}}\n',
            "TF_GCP_OPEN_FIREWALL",
        ),
    }


@pytest.fixture(scope="module")
def opa() -> OpaAdapter:
    return OpaAdapter()


@pytest.mark.parametrize("cidr", OPEN + CLOSED)
def test_the_reference_policy_implements_the_definition_in_every_form(opa: OpaAdapter, cidr: str) -> None:
    cases = forms(cidr)
    results = opa.scan({name: text for name, (text, _) in cases.items()})
    for name, (_, canonical_id) in cases.items():
        found = {f.canonical_id for f in results[name]}
        assert (canonical_id in found) is internet_scale(cidr), (name, cidr, found)


def test_the_semgrep_rules_implement_the_definition() -> None:
    semgrep = SemgrepAdapter()
    if not semgrep.status().available:
        pytest.skip(f"semgrep is not available: {semgrep.status().reason}")
    cidrs = [cidr for cidr in OPEN + CLOSED if cidr]  # an empty string is not a CIDR for any tool
    files = {f"{index}-{name}": text for index, cidr in enumerate(cidrs) for name, (text, _) in forms(cidr).items()}
    results = semgrep.scan(files)
    for index, cidr in enumerate(cidrs):
        for name, (_, canonical_id) in forms(cidr).items():
            found = {f.canonical_id for f in results[f"{index}-{name}"]}
            assert (canonical_id in found) is internet_scale(cidr), (name, cidr, found)


@pytest.fixture(scope="module")
def oracle() -> Oracle:
    return Oracle([OpaAdapter()])


@pytest.mark.parametrize(
    ("after", "fixed"),
    [
        (("0.0.0.0/1",), False),  # half the internet
        (("0.0.0.0/1", "128.0.0.0/1"), False),  # all of it, in two halves
        (("127.0.0.0/0",), False),  # the same /0 in disguise
        (("0.0.0.0/7",), False),
        (("10.0.0.0/8",), True),
        (("203.0.113.0/24", "198.51.100.7/32"), True),
    ],
)
def test_narrowing_to_a_still_internet_scale_range_earns_no_fix(
    oracle: Oracle, after: tuple[str, ...], fixed: bool
) -> None:
    original = security_group("0.0.0.0/0")
    item = make_item(oracle, "terraform", "sg.tf", original)
    patch = unified_diff(original, security_group(*after), "sg.tf")
    outcome = verify.evaluate_patch(item, patch, oracle, penalty=1.0)
    assert outcome.applies and outcome.valid
    assert outcome.fixes_all is fixed and outcome.score == (1.0 if fixed else 0.0), outcome


def test_the_baseline_fixes_a_disguised_slash_zero(oracle: Oracle) -> None:
    original = security_group("127.0.0.0/0")
    [scan] = oracle.scan_many([("sg.tf", original)])
    assert [f.canonical_id for f in scan.findings] == ["TF_OPEN_INGRESS"]
    [rescan] = oracle.scan_many([("sg.tf", remediate_terraform(original, scan.findings))])
    assert rescan.findings == []

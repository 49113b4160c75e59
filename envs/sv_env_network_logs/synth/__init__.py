"""Synthetic E1 flows, following the seed's recipe: perturb real flows (IP swapping, bounded noise), simulate
attack playbooks with event generators, balance the labels exactly, and tag every row with its scenario.

Every generated row records how it was made: `generator` (a playbook name or "perturb"), `generator_params`
(canonical JSON) and `generator_seed`. A playbook row comes back from
`PLAYBOOKS[generator](params["n"], generator_seed)`; a perturbed row names its base flow and the seed of the
perturb call; generate() as a whole is a pure function of its arguments (numpy.random.default_rng throughout).

One module per job: `flows` (addresses and single flow records), `benign` (the benign playbook), `attacks` (the five
attack playbooks), `playbooks` (a playbook run as a frame with its provenance), `perturb` (variants of real flows) and
`mix` (the balanced synthetic set). This package re-exports what callers use.
"""

from sv_env_network_logs.synth.flows import EPOCH_2024, MSS
from sv_env_network_logs.synth.mix import generate
from sv_env_network_logs.synth.perturb import perturb
from sv_env_network_logs.synth.playbooks import (
    ATTACK_PLAYBOOKS,
    PLAYBOOKS,
    benign_traffic,
    brute_force,
    c2_beaconing,
    ddos,
    exfiltration,
    port_scan,
)
from sv_shared.data.seeds import MAX_SEED

__all__ = [
    "ATTACK_PLAYBOOKS",
    "EPOCH_2024",
    "MAX_SEED",
    "MSS",
    "PLAYBOOKS",
    "benign_traffic",
    "brute_force",
    "c2_beaconing",
    "ddos",
    "exfiltration",
    "generate",
    "perturb",
    "port_scan",
]

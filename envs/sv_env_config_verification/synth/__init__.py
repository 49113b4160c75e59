"""Synthetic E2 items, following the seed's recipe: mutate secure configs into vulnerable variants, keep only the
variants the oracle confirms, and pair each with its secure twin for SFT.

Every mutated text is parsed again before it is scanned, so a variant is always a valid manifest or module.

A mutation is confirmed when the oracle reports the canonical id it was meant to introduce; otherwise the variant
is dropped and counted (SynthReport). Each row records how it was made: `generator` (the mutation), canonical-JSON
`generator_params` (base config id, target, choices) and `generator_seed`; `secure_variant_id` names the secure
twin. A base whose YAML is not already in canonical style gets a "canonical_form" twin row (same objects,
canonical layout, labelled by the oracle) so the pair's diff shows the mutation and nothing else.

One module per job: `mutations` (the mutations, the secure edits and their pairs; apply_mutation, canonical_form) and
`generation` (the confirmed set, its report and the SFT diff pairs). This package re-exports what callers use.
"""

from sv_env_config_verification.synth.generation import PAIR_SCHEMA, SynthReport, diff_pairs, generate
from sv_env_config_verification.synth.mutations import (
    COMBINATION,
    KUBERNETES_MUTATIONS,
    MUTATIONS,
    SECURE_EDITS,
    TERRAFORM_MUTATIONS,
    Mutation,
    apply_mutation,
    canonical_form,
    introduced_ids,
    mutation_pairs_for,
    mutations_for,
    secure_edit_pairs_for,
    secure_edits_for,
)

__all__ = [
    "COMBINATION",
    "KUBERNETES_MUTATIONS",
    "MUTATIONS",
    "PAIR_SCHEMA",
    "SECURE_EDITS",
    "TERRAFORM_MUTATIONS",
    "Mutation",
    "SynthReport",
    "apply_mutation",
    "canonical_form",
    "diff_pairs",
    "generate",
    "introduced_ids",
    "mutation_pairs_for",
    "mutations_for",
    "secure_edit_pairs_for",
    "secure_edits_for",
]

"""E5 red-team attack: an attacker model tries to elicit a behaviour (a sanitized, category-level goal in one of the
Llama Guard 3 / MLCommons hazard categories S1-S14) from a defended target model; a judge decides whether it worked.

The data rooms: `schema` (the behaviour frame, tactics), `data` (JailbreakBench JBB-Behaviors, HarmBench, the
embedded corpus, curation) and `synth` (attacker goal trees seeded by the defender failures of E6 runs, `failures`).
The dialogue rooms: `episodes` (attacker ↔ target in lockstep), `verify` (reward and metrics) and `archive` (the
novelty archive the verifier measures successes against). `env.build` composes them.
"""

from sv_shared.interop import verifiers_exports

# Prime `verifiers` discovers this environment by importing this package under its seed name (sv_shared.interop).
__all__, __getattr__ = verifiers_exports(__name__)

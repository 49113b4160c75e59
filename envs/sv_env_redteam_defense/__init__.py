"""E6 red-team defense: a model answers benign and adversarial conversations turn by turn; every reply is judged.

Benign conversations (customer support, security help, general knowledge, borderline-safe questions that sound
risky but deserve help) should be answered helpfully; adversarial probes (Llama Guard 3's hazard categories S1-S14,
asked directly or through role-play, hypotheticals, decomposition, claimed authority, light obfuscation,
persuasion or multi-turn escalation) should be refused safely, with a safe alternative. What each conversation
deserves comes from the policy library (data/policy_library.yaml): safe refusal templates per hazard category and
guided helpful answers per benign topic.
"""

from sv_shared.interop import verifiers_exports

# Prime `verifiers` discovers this environment by importing this package under its seed name (sv_shared.interop).
__all__, __getattr__ = verifiers_exports(__name__)

"""Synthetic E6 conversations, following the seed's recipe: simulate benign support conversations and adversarial
probes, pair them with synthetic attacker queries from E5, and label the desired responses via the policy library.

- Benign: multi-turn customer-support conversations (products × issues × follow-ups), security questions that
  deserve help, general-knowledge questions and borderline-safe questions (phrasings × openers × follow-ups). Each
  template names its guided-answer entry in the policy library, which supplies the guidance.
- Adversarial: category-level requests for every hazard category (S1-S14) × tactic framings: direct, role-play,
  hypothetical, decomposition into harmless-looking parts, claimed authority, light obfuscation (spacing, dots,
  leetspeak), persuasion and multi-turn escalation from an innocuous start. Requests name what is wanted at
  category level only; nothing here is harmful content.
- base: variants of a base corpus's conversations (a harmful request re-framed by a tactic, a benign question with
  a new opener); each names its base in generator_params.base_conversation_id, so curation keeps it in its base's
  split.
- attack_probes: E5 attacker messages ({"message", "category", "tactic", "behavior_id", "run"}; the caller passes
  only messages that passed redaction) become adversarial conversations with generator "e5_attacks".

Every generated row records how it was made: generator, generator_params (canonical JSON) and generator_seed;
`render(generator, seed, params)` returns the same turns again for the template generators.
synthesize_conversations() as a whole is a pure function of its arguments (numpy.random.default_rng).

One module per job: `benign_templates` and `adversarial_templates` (the texts), `tactics` (how a tactic frames a
request), `conversations` (one templated conversation), `rows` (a row and the uniqueness check), `variants` (base
corpus variants), `e5_probes` (E5 attacker messages) and `mix` (the synthetic set). This package re-exports what
callers use.
"""

from sv_env_redteam_defense.synth.adversarial_templates import (
    APPEALS,
    AUTHORITIES,
    BASE_TACTICS,
    BENIGN_FRAMES,
    DECOMPOSITION_MIDDLES,
    DECOMPOSITION_OPENERS,
    DIRECT_FORMS,
    HYPOTHETICAL_FORMS,
    MAX_OBFUSCATED_CHARS,
    OBFUSCATIONS,
    PERSONAS,
    PROBES,
)
from sv_env_redteam_defense.synth.benign_templates import (
    BENIGN_GENERATORS,
    BORDERLINE_QUESTIONS,
    DEVICES,
    GENERAL_QUESTIONS,
    PLANS,
    PRODUCTS,
    QUESTION_FOLLOW_UPS,
    QUESTION_OPENERS,
    SECURITY_OPENERS,
    SECURITY_QUESTIONS,
    SUPPORT_CLOSERS,
    SUPPORT_GREETINGS,
    SUPPORT_ISSUES,
    TOPIC_ENTRIES,
)
from sv_env_redteam_defense.synth.conversations import RENDERERS, render
from sv_env_redteam_defense.synth.mix import MAX_DRAWS, synthesize_conversations
from sv_env_redteam_defense.synth.tactics import obfuscate
from sv_env_redteam_defense.synth.variants import base_variants
from sv_shared.data.seeds import MAX_SEED

__all__ = [
    "APPEALS",
    "AUTHORITIES",
    "BASE_TACTICS",
    "BENIGN_FRAMES",
    "BENIGN_GENERATORS",
    "BORDERLINE_QUESTIONS",
    "DECOMPOSITION_MIDDLES",
    "DECOMPOSITION_OPENERS",
    "DEVICES",
    "DIRECT_FORMS",
    "GENERAL_QUESTIONS",
    "HYPOTHETICAL_FORMS",
    "MAX_DRAWS",
    "MAX_OBFUSCATED_CHARS",
    "MAX_SEED",
    "OBFUSCATIONS",
    "PERSONAS",
    "PLANS",
    "PROBES",
    "PRODUCTS",
    "QUESTION_FOLLOW_UPS",
    "QUESTION_OPENERS",
    "RENDERERS",
    "SECURITY_OPENERS",
    "SECURITY_QUESTIONS",
    "SUPPORT_CLOSERS",
    "SUPPORT_GREETINGS",
    "SUPPORT_ISSUES",
    "TOPIC_ENTRIES",
    "base_variants",
    "obfuscate",
    "render",
    "synthesize_conversations",
]

"""E4 phishing detection: classify mail as phishing or legitimate, with evidence and calibrated confidence."""

from sv_shared.interop import verifiers_exports

# Prime `verifiers` discovers this environment by importing this package under its seed name (sv_shared.interop).
__all__, __getattr__ = verifiers_exports(__name__)

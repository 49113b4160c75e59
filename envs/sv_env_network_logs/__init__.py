"""E1 network logs: calibrated anomaly detection on network flow records (IoT-23, CIC-IDS2017, UNSW-NB15)."""

from sv_shared.interop import verifiers_exports

# Prime `verifiers` discovers this environment by importing this package under its seed name (sv_shared.interop).
__all__, __getattr__ = verifiers_exports(__name__)

"""secverify's environments as Prime `verifiers` 0.4 (`verifiers.v1`) environments.

The library finds an environment by importing the module named after its id (`sv-env-network-logs` imports
`sv_env_network_logs`); each environment package names the classes of its adapter module
(`secverify.interop.verifiers.environments.<package>`) in its `__all__` when this extra is installed."""

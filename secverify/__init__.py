"""secverify's interop layer: the six environments as other libraries' environments and tasks (secverify.interop).

The package is named like the distribution so that inspect_ai namespaces its tasks `secverify/e1` … `secverify/e6`."""

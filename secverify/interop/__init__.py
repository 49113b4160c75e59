"""Adapters that run secverify's environments inside Prime `verifiers` (secverify.interop.verifiers) and inspect_ai
(secverify.interop.inspect). Each imports its library and is imported only when that extra is installed; both score
with the environments' own verifiers, so a completion earns the same reward through either library and our runner."""

"""Scanner adapters for E2 (semgrep, checkov, trivy, kube-linter): one normalized Finding shape per tool."""

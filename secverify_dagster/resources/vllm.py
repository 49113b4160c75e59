"""The vLLM resource: the endpoints of the open-weights models we serve, and which of them answer right now.

Endpoints follow the registry's convention for openai_compatible models (served_endpoints.py): the deployment sets
SV_<ID>_BASE_URL for each served model (deploy/ does it for the cluster's vLLM Deployments), and the model client,
this resource and the sweeps all read that one value.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import dagster as dg
from pydantic import Field

from secverify_dagster.resources.models import ModelSpec
from secverify_dagster.resources.served_endpoints import EndpointHealth, check_endpoints, served_endpoints


class VllmResource(dg.ConfigurableResource):
    """Served open-weights models (vLLM or any OpenAI-compatible server) as a resource a sweep asks before it
    requests runs: a model whose endpoint does not answer is left out with the reason, not launched to fail."""

    health_timeout_s: float = Field(default=5.0, gt=0)
    """How long one `GET /models` may take before its endpoint counts as down."""

    def endpoints(self, registry: Mapping[str, ModelSpec]) -> dict[str, str]:
        """Model id → base URL of every served model whose endpoint is configured here."""
        return served_endpoints(registry)

    def health(self, registry: Mapping[str, ModelSpec], model_ids: Collection[str]) -> dict[str, EndpointHealth]:
        """The health of each configured endpoint among model_ids (other models are not served: not listed)."""
        return check_endpoints(registry, model_ids, timeout_s=self.health_timeout_s)

    def down(self, registry: Mapping[str, ModelSpec], model_ids: Collection[str]) -> dict[str, str]:
        """Model id → why, for the served models among model_ids whose endpoint does not answer now."""
        return {
            model_id: health.reason for model_id, health in self.health(registry, model_ids).items() if not health.up
        }

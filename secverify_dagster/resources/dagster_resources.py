"""Dagster resources: the model registry, the artifact store and the response cache, injected into assets."""

from pathlib import Path

import dagster as dg

from secverify_dagster.resources.models import ModelSpec, Reachability, load_registry, reachability
from sv_shared.config import outputs_dir
from sv_shared.execution.cache import JsonCache


class ModelRegistryResource(dg.ConfigurableResource):
    """configs/models.yaml: the model portfolio the new-model sensor watches."""

    registry_path: str | None = None

    def specs(self) -> dict[str, ModelSpec]:
        return load_registry(Path(self.registry_path) if self.registry_path else None)

    def spec(self, model_id: str) -> ModelSpec:
        specs = self.specs()
        if model_id not in specs:
            raise dg.Failure(f"model {model_id!r} is not in the registry; known: {', '.join(sorted(specs))}")
        return specs[model_id]

    def parents(self) -> dict[str, str]:
        """Trained checkpoints → the model each was trained from."""
        return {model_id: spec.parent for model_id, spec in self.specs().items() if spec.parent}

    def reachability(self, model_id: str, env_id: str, baselines: list[str]) -> Reachability:
        return reachability(self.spec(model_id), env_id, available_baselines=baselines)


class ArtifactStoreResource(dg.ConfigurableResource):
    """Where datasets, eval runs and reports are written (outputs/ by default, git-ignored)."""

    root: str | None = None

    def base(self) -> Path:
        return Path(self.root) if self.root else outputs_dir()

    def datasets(self, env_id: str) -> Path:
        return self.base() / "datasets" / env_id

    def evals(self) -> Path:
        return self.base() / "evals"

    def reports(self, env_id: str) -> Path:
        return self.base() / "reports" / env_id

    def tournaments(self) -> Path:
        return self.base() / "tournaments"

    def response_cache(self) -> JsonCache:
        return JsonCache(self.base() / "cache" / "responses.sqlite")

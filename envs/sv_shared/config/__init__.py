"""Project paths and typed configs: every YAML under configs/ is read into a typed model, validated at load."""

from sv_shared.config.paths import SCANNER_CACHE_VARIABLE, outputs_dir, project_root, scanner_cache_path
from sv_shared.config.reading import ConfigError, read_config, read_yaml, validate_config
from sv_shared.config.sections import (
    ChecksSettings,
    ConfigModel,
    CostSettings,
    DataSettings,
    EnvConfig,
    EvalSettings,
    Generation,
    HubCorpus,
    MirrorCorpus,
    RewardWeightSettings,
    SplitFractions,
    SyntheticSettings,
)

__all__ = [
    "SCANNER_CACHE_VARIABLE",
    "ChecksSettings",
    "ConfigError",
    "ConfigModel",
    "CostSettings",
    "DataSettings",
    "EnvConfig",
    "EvalSettings",
    "Generation",
    "HubCorpus",
    "MirrorCorpus",
    "RewardWeightSettings",
    "SplitFractions",
    "SyntheticSettings",
    "outputs_dir",
    "project_root",
    "read_config",
    "read_yaml",
    "scanner_cache_path",
    "validate_config",
]

"""Training on the verifiers: SFT and RLFT data, trainers, rollouts and the checkpoint lineage (plain Python; never
imports dagster or secverify_dagster, so every part runs and is tested without the orchestration layer).

- `recipes`: typed strict training recipes read from configs/sft/<name>.yaml (`SftRecipe`) and
  configs/rlft/<name>.yaml (`RlftRecipe`), with `recipe_hash`; everything trainer-related lives in a recipe.
- `sft_data`: per-environment SFT datasets whose every target passes the environment's own verifier: reference
  answers (`CompletionVerifier.reference_answer`) and teacher completions or dialogue turns re-checked by the
  verifier (`build_sft_dataset`), written and read back as train.jsonl + manifest.json with their provenance.
- `rewards`: the verifiers as GRPO reward functions (total reward per environment, components logged) and the prompt
  rows they rebuild items from.
- `trainers`: `run_sft` and `run_grpo` (TRL; resumable from the newest checkpoint, LoRA merged into a plain HF
  folder) and the GPU settings (vLLM, bf16) a recipe implies.
- `episode_rollout`: TRL rollout functions that play multi-turn episodes (tool use, dialogues) through the
  environment's own episode code, with counterpart and tool tokens masked, plus the joint attacker/defender schedule.
- `checkpoints`, `promotion`: the checkpoint manifests and folder layout of a training run (lineage: parent, recipe,
  data hashes, metrics), and the safety scan and approval a checkpoint needs before promotion.
"""

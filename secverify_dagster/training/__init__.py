"""The training lineage: SFT datasets, SFT and RLFT checkpoints, the safety scan and approval before promotion.

The Dagster assets and the CLI call the same functions. The data builders, recipes, trainers, checkpoint records and
promotion records live in sv_shared.training (plain Python); these modules resolve models from the registry, place
files under outputs/ and run the model-facing parts (teacher samples, the safety scan's dialogues) through the eval
runner, so a checkpoint is judged by exactly the code that scores evals.

- paths: where the lineage's files live (TrainingPaths), TrainingError, the curated splits every step reads
- parents: what a run starts from (a registry model's trainable folder, a checkpoint by id, a recipe's latest)
- settings: configs/sft_datasets.yaml and configs/promotion.yaml, validated
- sft_datasets: one environment's SFT dataset
- inputs: what a run trains on (SFT examples, RLFT prompt rows, an experiment record's data slices)
- checkpoints: SFT, RLFT and joint training into checkpoints with their manifests
- promotion: the safety scan, approval and every checkpoint's promotion status
"""

"""NeMo Evaluator's files (``results.yml`` of a task, ``processed_results.json`` of an export, an output folder)."""

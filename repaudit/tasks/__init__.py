"""docs → requests: task definitions, data loading, few-shot samplers, prompt formats."""

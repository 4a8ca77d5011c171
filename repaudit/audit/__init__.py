"""two or more runs → findings: paired statistics, compare, replay, attribution, sweep, executors."""

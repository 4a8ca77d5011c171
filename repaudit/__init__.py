"""repaudit: a reproducibility auditor for language-model evaluations.

Data flows one way: Fingerprint -> requests -> Backend -> per-doc results -> RunRecord
-> Diff / Attribution -> report.
"""

__version__ = "0.1.0"

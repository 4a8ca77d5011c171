"""Readers of other tools' output files, mapped onto repaudit's factors and per-doc outcomes."""

"""Inference backends. Heavy backends are imported lazily, only when selected."""

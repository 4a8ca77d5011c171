"""HELM run folders (``run_spec.json``, ``stats.json``, ``per_instance_stats.json``, ``scenario_state.json``): the
adapter (:mod:`.adapter`), the typed files (:mod:`.schema`), the settings (:mod:`.record`) and the outcomes
(:mod:`.results`)."""

"""Every Eval Ever (EEE, schema 0.3.0): the adapter that reads its records as runs, the typed models and vendored
JSON Schemas of what it reads; ``repaudit export --format eee`` (:mod:`repaudit.report.eee`) writes them."""

"""Every Eval Ever (EEE, schema 0.3.0, and the 0.1.x/0.2.x records published on GitHub): the adapter that reads its
records as runs, the typed models and vendored JSON Schemas of what it reads; ``repaudit export --format eee``
(:mod:`repaudit.report.eee`) writes 0.3.0."""

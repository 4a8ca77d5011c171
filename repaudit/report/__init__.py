"""findings → text and figures: escaping per output language, Markdown / LaTeX / terminal / JSON renderers, plots."""

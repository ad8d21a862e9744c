"""The terminal UI: the app, its screens and widgets. The only package that imports Textual."""

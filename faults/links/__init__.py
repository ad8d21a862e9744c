"""Faults on the links between the console and the box.

Connections reset, black-holed, cut mid-deploy or loaded, and a console that stops reading: the
link must notice and recover, and no one else may wait.
"""

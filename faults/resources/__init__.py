"""Faults of the host's resources.

A full disk or state folder, a wall clock that steps, a budget cut short, requests past every
bound: the agent must answer, say why, and resume exactly.
"""

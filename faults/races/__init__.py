"""Faults of timing between two actors: two writers on one dataset, a person racing a restart."""

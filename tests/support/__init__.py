"""The shared test harness: real SSH servers, simulator and router processes, dataset writers.

Tests, faults/ and benchmarks/ import from here; nothing here imports a test module.
"""

"""The fault campaign: faults injected into real processes, links and files, with figures.

`python -m faults` (what `make faults` runs) runs every scenario at full scale and writes
docs/reliability.md; `tests/test_fault_campaign.py` runs the short version inside `make test`.
Each scenario is a module with a TITLE and `async def run(scale, workdir, seed)`, in the package
of its class of fault (`kills`, `links`, `resources`, `races`, `hostile`); `harness` holds what
they share, and a `_`-named module beside a scenario serves that scenario alone.
"""

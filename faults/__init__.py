"""The fault campaign: faults injected into real processes, links and files, with figures.

`python -m faults` (what `make faults` runs) runs every scenario at full scale and writes
docs/reliability.md; `tests/test_fault_campaign.py` runs the short version inside `make test`.
Each scenario is a module here with a TITLE and `async def run(scale, workdir, seed)`.
"""

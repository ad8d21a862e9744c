"""What the fault scenarios share: real parts started and cleaned up, and what they read back.

A local agent stopped afterwards with its jobs, its daemon's pid, memory and tracebacks
(`agents`, `memory`); responses files followed between kills (`responses`); runs the box carries
by itself under restart policies (`box_runs`); the real console link over a loopback SSH server,
and a relay whose connections can be cut (`link`, `relay`). Nothing here injects a fault or
decides a violation on its own: the scenarios do, each in the package of its class of fault.
"""

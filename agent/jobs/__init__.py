"""Jobs the agent runs: configured argv lists, each under a shim that outlives consoles and daemons.

`spec` fills in a job's argv, `shim` runs it and records how it ended, `registry` keeps each job's
files in the state directory, `stopper` stops a process group safely, `supervisor` ties them
together for the daemon, and `external` finds processes the agent did not start.
"""

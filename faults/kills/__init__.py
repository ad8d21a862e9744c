"""Faults that kill, freeze or crash processes: runners, servers, exports, the agent, the box.

What must hold: what was acknowledged survives, a stop stays a stop, and what the restart
policy should bring back comes back.
"""

"""What the box carries out by itself: multi-step operations, restart policies, the autopilot.

Beside `jobs/` (starting and stopping one job) and `watch/` (seeing what happens), this is where
the agent acts over time without a console: a redeploy or a start on many
datasets runs here to its end whatever the link does; a job that fails is started again under
its restart policy; the autopilot walks the pipeline's stages. Each records where it stands in
the state folder before every step, so a restarted agent resumes it, and each step is an event
in the history (and, where it matters, a webhook).
"""

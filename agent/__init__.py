"""The eagle-console agent: the part that runs on the GPU container, next to SGLang and the jobs.

It is pushed there by the console and run with the container's own Python (3.10+). Its core
imports the standard library only; heavy libraries are imported inside the jobs that need them.
"""

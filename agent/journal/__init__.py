"""What was asked of the agent, kept: the audit log of mutations and each request's one answer."""

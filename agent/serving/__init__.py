"""Answering the consoles: a session per connection, its outbox, handlers, bounds, idempotency, audit."""

"""The locks every `make` target installs from, and `make upgrade`, the one way they move."""

"""The HTTP parity test's reference side: a ``langgraph dev`` project serving the same scripted model."""

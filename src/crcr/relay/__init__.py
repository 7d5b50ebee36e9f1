"""The relay: webhooks in, dispatches out, callbacks verified and forwarded."""

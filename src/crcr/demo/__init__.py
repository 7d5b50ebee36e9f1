"""`crcr demo`: the whole loop on one machine, from upstream webhooks to the dashboard."""

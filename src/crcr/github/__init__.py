"""An async GitHub REST client for a GitHub App."""

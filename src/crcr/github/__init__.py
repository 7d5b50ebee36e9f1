"""An async GitHub REST client for a GitHub App."""

from crcr.github.client import GitHubClient, RerunOutcome
from crcr.github.errors import (
    GitHubAuthError,
    GitHubError,
    GitHubForbidden,
    GitHubNotFound,
    GitHubUnavailable,
    GitHubUnprocessable,
)
from crcr.github.factory import github_client_from_settings

__all__ = [
    "GitHubAuthError",
    "GitHubClient",
    "GitHubError",
    "GitHubForbidden",
    "GitHubNotFound",
    "GitHubUnavailable",
    "GitHubUnprocessable",
    "RerunOutcome",
    "github_client_from_settings",
]

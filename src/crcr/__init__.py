"""crcr: a Cross-Repository CI Relay."""

__version__ = "0.1.0"

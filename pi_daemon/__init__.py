"""pi-daemon: a stdio JSON-RPC coding-agent daemon for editors."""

__version__ = "0.1.0"

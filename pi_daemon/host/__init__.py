"""What both protocol faces serve: the workspace's agent host (:class:`.host.Host`).

A face (the native protocol in :mod:`pi_daemon.rpc`, ACP in :mod:`pi_daemon.acp`) maps
its protocol onto the host; the host builds everything the agent needs, applies the
settings, runs the slash commands and stops it all in order.
"""

"""Slash commands: the daemon's built-in commands, prompt templates and skills.

Typed input is a command when it starts with ``/`` followed by a command name and then
a space or the end (:func:`.catalog.parse`). A first word with another ``/`` in it (a
path such as ``/usr/bin/foo``) is ordinary text, and ``//`` sends the rest as text
starting with one ``/``.
"""

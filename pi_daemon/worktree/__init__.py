"""The record of what a run changed in the work tree: snapshots, the file watch, isolated git and line diffs."""

"""Rows to JSON text: the writers of answers, value texts and entity tags."""

"""Markdown to notes, chunks and links; the link index and link rewriting on a move."""

"""Exceptions shared by the environments' data layers, so callers can tell bad data from absent data."""

from __future__ import annotations


class CorpusValidationError(ValueError):
    """A corpus file or frame has the wrong layout or violates the schema; the message says where."""


class CorpusUnavailableError(ConnectionError):
    """A corpus cannot be reached (hub offline, nothing cached); the message says how to use a mirror."""

"""Notebook helpers: steppers (ipywidgets) and plain-text rendering of events."""

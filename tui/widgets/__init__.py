"""Widgets grouped by screen area: one module per tab, plus the run status line."""

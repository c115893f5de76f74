"""Trace: recognized calls, their headers and bodies -> trace context, app ids, call links."""

"""The HTTP server core: connections and their limits, the front door of every request, JSON
errors of the HTTP layer."""

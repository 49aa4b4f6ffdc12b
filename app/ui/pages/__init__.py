"""The wizard's pages, one module each. A page shows the session and starts workers; it never does the work."""

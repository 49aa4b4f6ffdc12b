"""The wizard: a real Qt window (offscreen, or Xvfb), driven by pytest-qt."""

"""Real headless Chromium against a live server: the pages for people."""

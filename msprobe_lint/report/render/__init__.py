"""The report's output formats: text, JSON and one HTML page."""

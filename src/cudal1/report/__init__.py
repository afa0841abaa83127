"""Report: running suites against solutions (`bench`), summary statistics, technique tags, and
Markdown/HTML reports with plots."""

"""HTML reports with charts. Modules here import plotly inside their render functions only."""

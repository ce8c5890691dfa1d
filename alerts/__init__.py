"""Alerts: managers hear of new fines and notifications by e-mail or webhook."""

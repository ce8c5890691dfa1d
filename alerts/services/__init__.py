"""The alerts' rules: preferences, the outbox, sending, unsubscribing, webhook subscriptions."""

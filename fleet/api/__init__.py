"""The Fleet Management API client: the portal's one outbound seam.

`client.FleetClient` speaks the vendor's API (spec/fleet-api.md) and nothing
else; it imports nothing from Django and works from a plain Python shell.
Failures are the exceptions of `errors`, results the frozen records of
`resources`, and `redaction.RedactingFilter` keeps credentials out of logs.
`values` reads the platform's amounts and times, for the API's answers and the
webhooks' payloads alike.
"""

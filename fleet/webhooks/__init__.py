"""Webhooks from the fleet platform (spec 2.6 and 6): fines and notifications.

- `receive`: the receiver's rules: the token, the headers kept, storing each
  delivery as received before anything else, asking the worker to process;
- `payloads`: the tolerant reader of a delivery's JSON and of what its members
  say (plate, texts, a fine's amount and time, through `fleet.api.values`, the
  one reader of the platform's amounts and times): read once, stored, shown;
- `processing`: the worker's runs over the stored deliveries, a batch at a
  time, once in effect whatever the order or repetition; replaying those kept;
- `records`: a fine's or a notification's state and how an event changes it
  (the history of `treated` included);
- `unknown_keys`: the report of payload keys the portal does not know;
- `tokens`: what a token must look like outside the emulator (checked at start-up).

The view is `fleet.views.webhook_receiver`; the worker's task is in `fleet.tasks`.
"""

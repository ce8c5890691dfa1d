"""Webhooks from the fleet platform (spec 2.6 and 6): fines and notifications.

- `receive`: the receiver's rules: the token, the headers kept, storing each
  delivery as received before anything else, asking the worker to process;
- `payloads`: the tolerant reader of a delivery's JSON and of what its members
  say (plate, texts, a fine's amount and time, through `fleet.api.values`, the
  one reader of the platform's amounts and times): read once, stored, shown;
- `processing`: the worker's runs over the stored deliveries, a batch at a
  time, once in effect whatever the order or repetition; replaying those kept;
- `effects`: what processing a batch does, in the order it does it;
- `records`: a fine's or a notification's state and how an event changes it
  (the history of `treated` included), and a batch's records under their locks;
- `wordings`: a record's infraction or title, once per text (`Wording`);
- `outcomes`: how processing went, written on each delivery's row;
- `changes`: what a batch did to the records, told to the alerts;
- `retention`: how long a delivery's raw body is kept;
- `unknown_keys`: the report of payload keys the portal does not know;
- `tokens`: what a token must look like outside the emulator (checked at start-up).

The view is `fleet.views.webhook_receiver`; the worker's task is in `fleet.tasks`.
"""

"""How people sign in to the portal: the organisation's identity providers (OpenID
Connect, through django-allauth), a small local login for administrators and the
demo (locked after repeated wrong passwords, through django-axes), and sessions
that end when idle."""

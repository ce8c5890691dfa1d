"""Keeping Fleet API credentials and CPFs out of logs and error messages.

The client never logs a credential or a CPF on purpose; this module is the
safety net for everything else that might: a third-party library's debug
line, a portal log call that prints a header dict or a request body, an
exception text. `RedactingFilter` scrubs the credential values this process
knows about (registered by every `FleetClient`) and anything shaped like an
`Authorization:`/`Key:` header, a password, an accessKey or the secrets of an
OpenID Connect sign-in (client secret, authorization code, tokens), and masks
anything shaped like a CPF (personal data, LGPD) as lists show it,
`***.456.789-**`; the token in a webhook URL (`/webhooks/fleet/<token>/`)
is scrubbed too, and so is a SCIM bearer token. The portal installs it on its log
handlers.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable

REDACTED = "[REDACTED]"

# Shorter values would scrub ordinary words out of every log line.
_MIN_SECRET_LENGTH = 6

_registry_lock = threading.Lock()
_registered: frozenset[str] = frozenset()

_QUOTED_OR_BARE = r"(?P<value>\"[^\"]*\"|'[^']*'|[^\s&,;}\]]+)"
_PATTERNS = (
    # Authorization: Basic <token>  /  'Authorization': 'Basic <token>'
    re.compile(
        r"(?P<head>\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)"
        r"(?P<value>(?:basic|bearer|token)\s+[^\s\"',;}\]]+|[^\s\"',;}\]]+)",
        re.IGNORECASE,
    ),
    # Key: <signature>. "key" is a common word: only long token-like values count.
    re.compile(
        r"(?P<head>\bkey[\"']?\s*[:=]\s*[\"']?)(?P<value>[A-Za-z0-9+/=_-]{16,})",
        re.IGNORECASE,
    ),
    # The token in the webhook receiver's path (FLEET_WEBHOOK_TOKENS), right or wrong:
    # a wrong one may be a token just rotated out. Django logs the path of every 4xx.
    re.compile(r"(?P<head>/webhooks/fleet/)(?P<value>[^/\s?#\"']+)"),
    # password=..., "password": "...", accessKey=..., secret_key=..., and the secrets of an
    # OpenID Connect sign-in (the portal's client secret, tokens, PKCE's verifier).
    re.compile(
        r"(?P<head>\b(?:password|passwd|access_?key|secret_?key|access_?token|client_?secret"
        r"|refresh_?token|id_?token(?:_hint)?|code_?verifier)[\"']?\s*[:=]\s*)" + _QUOTED_OR_BARE,
        re.IGNORECASE,
    ),
    # A SCIM bearer token (signin.scim.tokens), wherever it stands: only its prefix stays.
    re.compile(r"(?P<head>\bscim_[0-9a-f]{12}_)(?P<value>[A-Za-z0-9_-]{16,})"),
    # An authorization code in a query string (`/login/callback/?code=…&state=…`).
    re.compile(r"(?P<head>[?&]code=)(?P<value>[^&\s\"'#]+)"),
)
# A JSON Web Token (an ID or access token), wherever it stands.
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")


# Eleven digits, with or without the mask, standing alone (not inside a longer
# number or a hex trace id). Any such number is masked: better a phone number
# half hidden than a CPF in a log.
_CPF = re.compile(
    r"(?<![0-9A-Za-z])[0-9]{3}\.?(?P<middle>[0-9]{3}\.?[0-9]{3})-?[0-9]{2}(?![0-9A-Za-z])"
)


def mask_cpfs(text: str) -> str:
    """`text` with every CPF-shaped number masked: `123.456.789-09` → `***.456.789-**`."""
    return _CPF.sub(_masked_cpf, text)


def _masked_cpf(match: re.Match[str]) -> str:
    middle = match.group("middle").replace(".", "")
    return f"***.{middle[:3]}.{middle[3:]}-**"


def register_secret(*values: str) -> None:
    """Remember credential values so that every `RedactingFilter` scrubs them."""
    global _registered
    fresh = {v for v in values if len(v) >= _MIN_SECRET_LENGTH}
    if not fresh <= _registered:
        with _registry_lock:
            _registered = _registered | fresh


def _replace_value(match: re.Match[str]) -> str:
    value = match.group("value")
    if REDACTED[:-1] in value:
        # Scrubbed already (a JSON log line scrubs what the handler's filter did): as it is.
        return match.group(0)
    if value[:1] in "\"'" and value[-1:] == value[:1] and len(value) > 1:
        return f"{match.group('head')}{value[0]}{REDACTED}{value[0]}"
    return f"{match.group('head')}{REDACTED}"


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` without known secret values and credential-shaped fragments, CPFs masked."""
    # Longest first, so that a secret containing another is removed whole.
    for secret in sorted({*_registered, *secrets}, key=len, reverse=True):
        if secret and secret in text:
            text = text.replace(secret, REDACTED)
    for pattern in _PATTERNS:
        text = pattern.sub(_replace_value, text)
    text = _JWT.sub(REDACTED, text)
    return mask_cpfs(text)


class RedactingFilter(logging.Filter):
    """A logging filter that scrubs credentials and masks CPFs in every record it sees.

    Install it on handlers (a handler's filters see records from every
    logger); `secrets` adds values on top of the registered ones.
    """

    def __init__(self, name: str = "", *, secrets: Iterable[str] = ()) -> None:
        super().__init__(name)
        self._secrets = tuple(s for s in secrets if s)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record must still be scrubbed, not dropped
            message = f"{record.msg} {record.args}"
        clean = redact(message, self._secrets)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            # Format the traceback now, while we can still scrub it: the
            # handler's formatter would otherwise render it after filtering.
            text = logging.Formatter().formatException(record.exc_info)
            if (clean_text := redact(text, self._secrets)) != text:
                record.exc_text = clean_text
        elif record.exc_text:
            record.exc_text = redact(record.exc_text, self._secrets)
        if record.stack_info:
            record.stack_info = redact(record.stack_info, self._secrets)
        return True


# Loggers of the HTTP stack under the client. Logger filters only see records
# created on that very logger, so each module's logger gets one.
_LIBRARY_LOGGERS = (
    "fleet.api",
    "requests",
    "urllib3",
    "urllib3.connection",
    "urllib3.connectionpool",
    "urllib3.poolmanager",
    "urllib3.response",
    "urllib3.util.retry",
)
_library_filter = RedactingFilter()


def protect_library_loggers() -> None:
    """Scrub records of the client's own and its HTTP libraries' loggers.

    Idempotent; `FleetClient` calls it, so urllib3's debug output is safe
    even where the portal's handlers have no filter.
    """
    for name in _LIBRARY_LOGGERS:
        logger = logging.getLogger(name)
        if _library_filter not in logger.filters:
            logger.addFilter(_library_filter)

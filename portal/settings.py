"""Settings of Fleet Portal, read from the environment (and a local `.env`).

Every variable is listed in the README and in deploy/fleet-portal.env.example.
The readers are in portal/env.py: a bad value stops start-up with an
`ImproperlyConfigured` that names the variable and the problem, never the value.

One module: Django reads its settings from one, and an operator looking for where a
value comes from finds every setting, and the variable that sets it, here.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import django_stubs_ext
from django.utils.csp import CSP
from django.utils.translation import gettext_lazy as _

from fleet.api.client import CNH_BATCH, CNH_LOOKUP
from portal import env
from signin.local_login import LocalLogin

# Django's generic classes subscriptable at run time as in their stubs
# (`admin.ModelAdmin[Fine]`), so that the admins and forms say their model once.
django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent

# Tests set DJANGO_ENV_FILE to "" so that a developer's .env cannot change them.
env.load_file("DJANGO_ENV_FILE", default=BASE_DIR / ".env")

DEBUG = env.flag("DEBUG", default=False)

FLEET_ENVIRONMENTS = ("emulator", "sandbox", "production")
FLEET_ENVIRONMENT = env.choice("FLEET_ENVIRONMENT", choices=FLEET_ENVIRONMENTS, default="emulator")
_ON_EMULATOR = FLEET_ENVIRONMENT == "emulator"

_SECRET_KEY_DEFAULT = "django-insecure-dev-only-not-for-production" if DEBUG else None
SECRET_KEY = env.credential("DJANGO_SECRET_KEY", default=_SECRET_KEY_DEFAULT)
ALLOWED_HOSTS = env.comma_list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.comma_list("CSRF_TRUSTED_ORIGINS", default=[])

# --- The Fleet API -----------------------------------------------------------

_EMULATOR_URL = "http://127.0.0.1:8001"
FLEET_BASE_URL = env.url(
    "FLEET_BASE_URL", default=_EMULATOR_URL if _ON_EMULATOR else None, environment=FLEET_ENVIRONMENT
)
FLEET_LOGIN_URL = env.url(
    "FLEET_LOGIN_URL",
    default=f"{_EMULATOR_URL}/app" if _ON_EMULATOR else None,
    environment=FLEET_ENVIRONMENT,
)
# The emulator's demo pair is public (its README); real pairs must be given.
FLEET_ACCESS_TOKEN = env.credential(
    "FLEET_ACCESS_TOKEN", default="demo-access-token" if _ON_EMULATOR else None
)
FLEET_SECRET_KEY = env.credential(
    "FLEET_SECRET_KEY", default="demo-secret-key" if _ON_EMULATOR else None
)
# Tokens the webhook URL accepts (several while rotating); outside the emulator, random ones.
FLEET_WEBHOOK_TOKENS = env.webhook_tokens("FLEET_WEBHOOK_TOKENS", on_emulator=_ON_EMULATOR)
# Prometheus reads /metrics with `Authorization: Bearer <METRICS_TOKEN>`; unset, a 404.
METRICS_TOKEN = env.metrics_token("METRICS_TOKEN")
# Keys of the secrets kept in the database, newest first; derived from SECRET_KEY on the emulator.
FLEET_FIELD_KEYS = env.fernet_keys(
    "FLEET_FIELD_KEYS", default=[env.fernet_key_from(SECRET_KEY)] if _ON_EMULATOR else []
)
# The v1 codes with which `POST /key/generator` refuses a user's own e-mail or
# password. The spec documents none (7.1), so only the codes named here are shown
# to a manager as "wrong fleet password"; any other refusal is shown as what it
# is, with the vendor's code, message and trace id. The emulator's is fbk_003;
# for the vendor, set the code its documentation gives.
FLEET_WRONG_LOGIN_CODES = env.comma_list(
    "FLEET_WRONG_LOGIN_CODES", default=["fbk_003"] if _ON_EMULATOR else []
)
# Interactive pages may wait this long for a Retry-After before giving up.
FLEET_INTERACTIVE_RETRY_BUDGET = env.seconds("FLEET_INTERACTIVE_RETRY_BUDGET", default=2.0)
# Seconds to wait for an answer of the Fleet API (the CNH lookup has its own 70 s).
FLEET_READ_TIMEOUT = env.seconds("FLEET_READ_TIMEOUT", default=10.0, minimum=1.0)
# An answer of the Fleet API is read up to this size, this long after its headers, then
# refused: a hostile or broken server chooses both (a million vehicles' list is ~150 MB).
FLEET_ANSWER_MAX_BYTES = env.whole_number(
    "FLEET_ANSWER_MAX_BYTES", default=512 * 2**20, minimum=2**20, unit="bytes"
)
FLEET_ANSWER_SECONDS = env.seconds("FLEET_ANSWER_SECONDS", default=300.0, minimum=1.0)
# The hosts an e-CRLV download may send a browser to (fleet/services/crlv.py). Empty: the
# hosts of FLEET_BASE_URL and FLEET_LOGIN_URL; set it when the vendor serves documents
# from another host (a storage or CDN domain).
FLEET_DOWNLOAD_HOSTS = env.hosts("FLEET_DOWNLOAD_HOSTS")

# The shared snapshot of the vehicle list (fleet/services/vehicle_cache.py): fresh
# for FLEET_VEHICLES_TTL, then refreshed by one worker; served stale while the
# API fails for up to FLEET_VEHICLES_KEEP.
FLEET_VEHICLES_TTL = env.seconds("FLEET_VEHICLES_TTL", default=60.0, minimum=1.0)
FLEET_VEHICLES_KEEP = env.seconds(
    "FLEET_VEHICLES_KEEP", default=86400.0, minimum=FLEET_VEHICLES_TTL
)
# Whether each refresh of the vehicle list is taken into the history of who had each
# vehicle (fleet/services/driver_history.py), which attributes fines to who was driving.
FLEET_DRIVER_HISTORY = env.flag("FLEET_DRIVER_HISTORY", default=True)
# The most changes a refresh a page started writes into that history itself, after the
# response; more (the first observation of a large fleet) are the worker's, where no
# web server's timeout stops them.
FLEET_DRIVER_HISTORY_PAGE_CHANGES = 20_000
# The most changes one run of the worker writes into it (a few seconds); the rest in its
# next run, after the fines and notifications received meanwhile.
FLEET_DRIVER_HISTORY_TASK_CHANGES = 50_000
# How long a request with no data at all waits for another worker's refresh.
FLEET_VEHICLES_WAIT = env.seconds("FLEET_VEHICLES_WAIT", default=5.0)
# After a failed refresh (without Retry-After), no worker tries again for this long.
FLEET_VEHICLES_FAILURE_BACKOFF = env.seconds("FLEET_VEHICLES_FAILURE_BACKOFF", default=10.0)

# Days from a fine's notice (else its receipt) to the estimated deadline to indicate its
# driver, where the platform sends none (fleet/webhooks/deadlines.py; CTB art. 257 §7).
FLEET_INDICATION_DAYS = env.whole_number("FLEET_INDICATION_DAYS", default=30, minimum=1)
# The largest receipt an indication may carry (fleet/services/receipts.py), in bytes. An
# upload past Django's FILE_UPLOAD_MAX_MEMORY_SIZE (2.5 MiB) is spooled to a temporary
# file, never held whole in memory, and refused by its size before it is read; nginx
# lets the indication's form through up to a little more (deploy/nginx).
FLEET_INDICATION_RECEIPT_MAX_BYTES = env.whole_number(
    "FLEET_INDICATION_RECEIPT_MAX_BYTES", default=5 * 1024 * 1024, minimum=1, unit="bytes"
)
# Whether indications can go through the platform's POST /v2/driver-indications
# (fleet/services/platform_indications.py). Off by default: the spec shows no shape of
# that route, so the portal's are assumed (fleet/api/indications.py).
FLEET_DRIVER_INDICATIONS_API = env.flag("FLEET_DRIVER_INDICATIONS_API", default=False)

# Driver licence (CNH) lookups (fleet/services/cnh.py). The spec does not show
# their paths: the defaults are the emulator's; a deployment must set the
# vendor's documented values.
FLEET_CNH_LOOKUP_PATH = env.api_path("FLEET_CNH_LOOKUP_PATH", default=CNH_LOOKUP)
FLEET_CNH_BATCH_PATH = env.api_path("FLEET_CNH_BATCH_PATH", default=CNH_BATCH)
# Calls of one lookup (the first and its automatic retries) before it is marked failed.
FLEET_CNH_MAX_ATTEMPTS = env.whole_number("FLEET_CNH_MAX_ATTEMPTS", default=5, minimum=1)
# CPFs in one batch lookup (the spec does not show the API's limit).
FLEET_CNH_BATCH_LIMIT = env.whole_number("FLEET_CNH_BATCH_LIMIT", default=100, minimum=1)
# CPFs one user may look up in a day (the portal's time zone's day), and how many
# days lookups (CPFs and licences: personal data) are kept before the worker purges them.
FLEET_CNH_DAILY_LIMIT = env.whole_number("FLEET_CNH_DAILY_LIMIT", default=300, minimum=1)
FLEET_CNH_RETENTION_DAYS = env.whole_number("FLEET_CNH_RETENTION_DAYS", default=180, minimum=1)

# The webhook receiver (fleet/views/webhook_receiver.py): the largest body it stores,
# and how many reverse proxies in front of the portal append to X-Forwarded-For
# (0: the source address is the connection's own, REMOTE_ADDR).
FLEET_WEBHOOK_MAX_BYTES = env.whole_number(
    "FLEET_WEBHOOK_MAX_BYTES", default=256 * 1024, minimum=1024
)
FLEET_WEBHOOK_PROXY_COUNT = env.whole_number("FLEET_WEBHOOK_PROXY_COUNT", default=0, minimum=0)
# Seconds a stored webhook delivery may wait for the worker to process it with others.
FLEET_WEBHOOK_BATCH_SECONDS = env.seconds("FLEET_WEBHOOK_BATCH_SECONDS", default=1.0)
# Days the raw body of a processed delivery is kept (for the admin and a replay); the
# worker then empties it, every night, a chunk at a time: the delivery's row, its
# fields and what it made (a fine, a notification) stay.
FLEET_WEBHOOK_BODIES_KEEP_DAYS = env.whole_number(
    "FLEET_WEBHOOK_BODIES_KEEP_DAYS", default=90, minimum=1
)
# Payload keys never seen before that one delivery may add to the admin's report of
# unknown keys; beyond that they are counted on the delivery (a payload of thousands
# of made-up keys must not become thousands of rows).
FLEET_WEBHOOK_UNKNOWN_KEYS_MAX = env.whole_number(
    "FLEET_WEBHOOK_UNKNOWN_KEYS_MAX", default=100, minimum=0
)
# Seconds between two refreshes of the dashboard's counts of fines and notifications.
FLEET_COUNTS_POLL_SECONDS = env.whole_number("FLEET_COUNTS_POLL_SECONDS", default=10, minimum=1)

# --- Alerts (alerts/) ----------------------------------------------------------------

# E-mail through Django's mailers, from EMAIL_URL (and EMAIL_TIMEOUT for SMTP).
# `make run` (DEBUG) prints e-mails to the worker's console unless EMAIL_URL says otherwise.
MAILERS = {
    "default": env.mailer(
        "EMAIL_URL",
        default="consolemail://" if DEBUG else "smtp://",
        sent_folder=BASE_DIR / "sent-emails",
    )
}
DEFAULT_FROM_EMAIL = env.text("DEFAULT_FROM_EMAIL", default="Fleet Portal <fleet-portal@localhost>")
SERVER_EMAIL = env.text("SERVER_EMAIL", default=DEFAULT_FROM_EMAIL)
# The portal's own address, for the links in alerts (e-mails and outgoing webhooks are
# read outside any request). Empty outside the emulator until set: alerts then wait,
# and the worker says why in its log.
PORTAL_BASE_URL = env.url(
    "PORTAL_BASE_URL",
    default="http://127.0.0.1:8000",
    environment=FLEET_ENVIRONMENT,
    optional=not _ON_EMULATOR,
)
# Immediate e-mails one user gets in an hour; beyond it, alerts wait and go as one digest.
ALERTS_HOURLY_CAP = env.whole_number("ALERTS_HOURLY_CAP", default=10, minimum=1)
# A worker that claimed alerts and died: after this long another worker sends them.
ALERTS_SEND_LEASE_SECONDS = env.seconds("ALERTS_SEND_LEASE_SECONDS", default=300.0, minimum=1.0)
# Attempts of one alert before it is kept as failed (shown in the admin), and the first
# wait between attempts (doubled after each failure, at most six hours).
ALERTS_MAX_ATTEMPTS = env.whole_number("ALERTS_MAX_ATTEMPTS", default=8, minimum=1)
ALERTS_RETRY_SECONDS = env.seconds("ALERTS_RETRY_SECONDS", default=60.0, minimum=1.0)
# Days an e-mail's unsubscribe link works (long enough for any mailbox).
# Days before a fine's deadline to indicate its driver when its reminder is sent (one
# reminder for each, the nearest first-due only when several fall on one run).
ALERTS_INDICATION_DAYS = env.days_list("ALERTS_INDICATION_DAYS", default=[7, 2])
ALERTS_UNSUBSCRIBE_DAYS = env.whole_number("ALERTS_UNSUBSCRIBE_DAYS", default=90, minimum=1)
# Days without a sign-in after which a person whose access comes from an identity
# provider gets a last e-mail and no more alerts (until they sign in again).
ALERTS_INACTIVE_DAYS = env.whole_number("ALERTS_INACTIVE_DAYS", default=30, minimum=1)
# Outgoing webhooks (alerts/outbound.py): total seconds for one POST, from the address
# lookup to the last byte; whether a subscription may point at a loopback, private or
# link-local address (an SSRF door: off in production); the ports a subscription may use
# outside the emulator (https only there); and how many subscriptions one user may hold.
ALERTS_WEBHOOK_TIMEOUT = env.seconds("ALERTS_WEBHOOK_TIMEOUT", default=10.0, minimum=1.0)
ALERTS_WEBHOOK_ALLOW_PRIVATE = env.flag("ALERTS_WEBHOOK_ALLOW_PRIVATE", default=DEBUG)
ALERTS_WEBHOOK_PORTS = env.ports("ALERTS_WEBHOOK_PORTS", default=[443])
ALERTS_WEBHOOKS_PER_USER = env.whole_number("ALERTS_WEBHOOKS_PER_USER", default=5, minimum=1)

# --- Portal sign-in (signin/) -----------------------------------------------------
# The organisation's identity provider (OpenID Connect), one from the OIDC_* variables;
# more can be added in the admin (social applications). django-allauth runs the
# flow, signin/ decides who gets in and as what; django-axes locks local logins.

_OIDC_APP = env.oidc_provider(environment=FLEET_ENVIRONMENT)
SOCIALACCOUNT_PROVIDERS = {
    "openid_connect": {
        # allauth's provider, with PKCE, a nonce and the ID token's signature always checked.
        "provider_class": "signin.oidc.provider.OrganisationProvider",
        "APPS": [_OIDC_APP] if _OIDC_APP else [],
    }
}
SOCIALACCOUNT_ADAPTER = "signin.adapters.SocialAccountAdapter"
ACCOUNT_ADAPTER = "signin.adapters.AccountAdapter"
# The provider vouches for the person; nothing to confirm or fill in here.
SOCIALACCOUNT_AUTO_SIGNUP = True
SOCIALACCOUNT_EMAIL_VERIFICATION = "none"
SOCIALACCOUNT_EMAIL_REQUIRED = False
SOCIALACCOUNT_STORE_TOKENS = False
ACCOUNT_EMAIL_VERIFICATION = "none"
ACCOUNT_LOGIN_METHODS = {"username"}
ACCOUNT_SIGNUP_FIELDS = ["username*", "password1*", "password2*"]

# Unset: "on" without an identity provider, "staff" with one (decided per request,
# since providers may also come from the admin).
LOCAL_LOGIN = env.optional_choice("LOCAL_LOGIN", choices=LocalLogin)

# --- Django -------------------------------------------------------------------

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "allauth",
    "allauth.account",
    "allauth.socialaccount",
    "allauth.socialaccount.providers.openid_connect",
    # Each user's sessions (`UserSession`), so that theirs alone are ended, whatever the
    # session engine (signin.sessions.sessions_end).
    "allauth.usersessions",
    "axes",
    # The platform every app uses (portal/lib/): its start-up wiring.
    "portal.lib.apps.PlatformConfig",
    "signin",
    "fleet",
    # django_tasks_db, named for the admin; after fleet, whose `db_worker` (a worker per
    # queue) replaces the package's: Django takes a command from the app listed first.
    "portal.lib.tasks_app.BackgroundTasksConfig",
    "alerts",
]

MIDDLEWARE = [
    # First: every other middleware, the error pages and the request's log line run
    # with the request's id bound.
    "portal.lib.middleware.RequestIdMiddleware",
    # Then every request counted, with the time all the others take (portal.lib.metrics).
    "portal.lib.metrics.middleware.MetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # After WhiteNoise, which answers static files (long-cached) before it.
    "portal.lib.middleware.PrivateNoStoreMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "signin.middleware.SessionTimeoutMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "signin.middleware.ProviderFormsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, so that a lockout it answers has been through the others.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "portal.urls"
WSGI_APPLICATION = "portal.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.csp",
                "fleet.context_processors.fleet_environment",
                "fleet.context_processors.request_code",
            ],
        },
    },
]

DATABASES = {
    "default": env.database("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}"),
}
DATABASES["default"].setdefault(
    "CONN_MAX_AGE", env.whole_number("CONN_MAX_AGE", default=60, minimum=0, unit="seconds")
)
DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # A laptop's SQLite: WAL lets readers and a writer work at once, NORMAL sync
    # skips an fsync per commit, IMMEDIATE avoids "database is locked" upgrades.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
        }
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CACHES = {"default": env.cache("CACHE_URL", default="locmemcache://fleet-portal")}
_PER_PROCESS_CACHES = (
    "django.core.cache.backends.locmem.LocMemCache",
    "django.core.cache.backends.dummy.DummyCache",
)
if CACHES["default"]["BACKEND"] == "django.core.cache.backends.redis.RedisCache":
    CACHES["default"]["BACKEND"] = "portal.cache.RedisCache"  # one client per pool, not per call
# What the worker computes for the web processes to show (a part of the fleet's
# dashboard figures): the shared cache when there is one, else a table of the database
# (made by fleet/migrations/0027), since each process's memory is its own.
CACHES["shared"] = (
    CACHES["default"]
    if CACHES["default"]["BACKEND"] not in _PER_PROCESS_CACHES
    else {
        "BACKEND": "django.core.cache.backends.db.DatabaseCache",
        "LOCATION": "portal_shared_cache",
        "TIMEOUT": 86_400,
        "OPTIONS": {"MAX_ENTRIES": 10_000},
    }
)
# What the portal keeps for speed (portal/lib/caches.py): all of it, unless SPEED_CACHES
# is off, less the caches SPEED_CACHES_OFF names (for a benchmark of what each saves, or
# to rule one out while looking into a page).
SPEED_CACHES = env.flag("SPEED_CACHES", default=True)
SPEED_CACHES_OFF = env.comma_list("SPEED_CACHES_OFF", default=[])
# The lists' rows as rendered (`fleet.views.rows`): in each process's memory, apart from
# the shared cache so that they never push out what that holds (the vehicle list).
CACHES["rows"] = {
    "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
    "LOCATION": "fleet-portal-rows",
    "TIMEOUT": 3600,
    "OPTIONS": {"MAX_ENTRIES": 5000},
}

# Background tasks (django.tasks) stored in the database: `manage.py db_worker` runs them,
# each queue with a worker of its own, so that alerts (which wait on subscribers'
# endpoints) never delay webhook processing or CNH lookups ("default").
TASKS = {
    # django-tasks-db's backend; its worker is portal.lib.tasks_backend's (`db_worker`).
    "default": {
        "BACKEND": "django_tasks_db.backend.DatabaseBackend",
        "QUEUES": ["default", "alerts"],
    },
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "fleet:dashboard"
LOGOUT_REDIRECT_URL = "signed_out"

# The lockout check runs first; allauth signs people in through ModelBackend.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Sessions end after SESSION_IDLE_MINUTES without activity (signin.middleware)
# and SESSION_MAX_HOURS after sign-in whatever happens.
SESSION_IDLE_MINUTES = env.whole_number(
    "SESSION_IDLE_MINUTES", default=30, minimum=1, unit="minutes"
)
SESSION_MAX_HOURS = env.whole_number("SESSION_MAX_HOURS", default=12, minimum=1, unit="hours")
SESSION_COOKIE_AGE = SESSION_MAX_HOURS * 3600
# Requests one SCIM token may send in a minute (signin.scim): a directory's sync sends
# bursts; a leaked token sends no flood.
SCIM_REQUESTS_PER_MINUTE = env.whole_number("SCIM_REQUESTS_PER_MINUTE", default=600, minimum=1)
# Days the SCIM audit (its calls, and the requests counted by minute) is kept; the worker
# deletes older rows every night (signin.scim.retention).
SCIM_CALLS_KEEP_DAYS = env.whole_number("SCIM_CALLS_KEEP_DAYS", default=90, minimum=1)
# Local logins: after LOGIN_FAILURE_LIMIT wrong passwords for one username or from one
# address, that username or address is locked for LOGIN_LOCKOUT_MINUTES (django-axes).
AXES_FAILURE_LIMIT = env.whole_number("LOGIN_FAILURE_LIMIT", default=10, minimum=1)
AXES_COOLOFF_TIME = timedelta(
    minutes=env.whole_number("LOGIN_LOCKOUT_MINUTES", default=15, minimum=1, unit="minutes")
)
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_ENABLE_ACCESS_FAILURE_LOG = True
AXES_LOCKOUT_CALLABLE = "signin.views.locked_out"
AXES_CLIENT_IP_CALLABLE = "portal.lib.addresses.client_address"
AXES_SENSITIVE_PARAMETERS = ["password", "csrfmiddlewaretoken"]

LANGUAGE_CODE = "pt-br"
LANGUAGES = [("pt-br", _("Portuguese (Brazil)")), ("en", _("English"))]
LOCALE_PATHS = [BASE_DIR / "locale"]
# English dates as a Brazilian fleet reads them: day/month/year, 24-hour (portal/formats/en).
FORMAT_MODULE_PATH = ["portal.formats"]
TIME_ZONE = env.text("TIME_ZONE", default="America/Sao_Paulo")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Hashed, compressed files once `collectstatic` has run (production, `make run`);
# straight from the source folders before that (a test run, a fresh checkout).
_COLLECTED = (STATIC_ROOT / "staticfiles.json").is_file()
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if _COLLECTED
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}
WHITENOISE_USE_FINDERS = not _COLLECTED

# --- Security headers ---------------------------------------------------------

_login = urlsplit(FLEET_LOGIN_URL)
FLEET_LOGIN_ORIGIN = f"{_login.scheme}://{_login.netloc}"
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "frame-src": [FLEET_LOGIN_ORIGIN],
    "frame-ancestors": [CSP.NONE],
    # The deep link's POST (/app/open) is answered by a redirect into the fleet app, and
    # form-action governs where a form submission is redirected to as well.
    "form-action": [CSP.SELF, FLEET_LOGIN_ORIGIN],
    "base-uri": [CSP.NONE],
    "object-src": [CSP.NONE],
}
X_FRAME_OPTIONS = "DENY"
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin-allow-popups"
SESSION_COOKIE_SECURE = env.flag("SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = env.flag("CSRF_COOKIE_SECURE", default=not DEBUG)
SESSION_COOKIE_HTTPONLY = True
# In production the portal answers over HTTPS only: its cookies are Secure, so a page
# over plain http could not even sign in. Behind a proxy that ends TLS, Django must learn
# the scheme from it (USE_X_FORWARDED_PROTO, or gunicorn's forwarded_allow_ips), or these
# redirects would loop. Load balancers may probe /healthz over plain http.
_PRODUCTION = FLEET_ENVIRONMENT == "production"
SECURE_SSL_REDIRECT = env.flag("SECURE_SSL_REDIRECT", default=_PRODUCTION)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SECURE_HSTS_SECONDS = env.whole_number(
    "SECURE_HSTS_SECONDS", default=365 * 24 * 3600 if _PRODUCTION else 0, minimum=0, unit="seconds"
)
if env.flag("USE_X_FORWARDED_PROTO", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# `manage.py check --deploy` warnings the portal answers on purpose (a test runs the
# check with a production environment and fails on any other warning).
SILENCED_SYSTEM_CHECKS = [
    # HSTS includeSubDomains would bind every host under the portal's name to HTTPS,
    # hosts the portal does not run: the owner of the domain decides, not the portal.
    # Its cookies are host-only and its own host gets HSTS (SECURE_HSTS_SECONDS).
    "security.W005",
    # Preloading needs includeSubDomains on the whole registered domain and a
    # submission to the browsers' lists, undone only over months: the same owner's call.
    "security.W021",
    # The lists' indexes hold the id beside their keys on PostgreSQL (INCLUDE), so that
    # a deep page reads the index alone; SQLite's indexes hold the row's id already.
    "models.W040",
]

# --- Logging --------------------------------------------------------------------

_LOG_LEVEL = env.text("FLEET_LOG_LEVEL", default="INFO")
# `text` for people (`make run`), `json` for a log pipeline: one object per line, with
# the request id and the structured fields (portal.json_logging), in every handler
# and in gunicorn's logs.
LOG_FORMAT = env.choice("LOG_FORMAT", choices=("text", "json"), default="text")
_JSON_LINES = {"()": "portal.json_logging.JsonFormatter"}
LOGGING_CONFIG = "portal.json_logging.configure"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": _JSON_LINES
        if LOG_FORMAT == "json"
        else {
            "format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s",
            "defaults": {"request_id": "-"},
        },
        "server": _JSON_LINES
        if LOG_FORMAT == "json"
        else {
            "()": "django.utils.log.ServerFormatter",
            "format": "[{server_time}] {message}",
            "style": "{",
        },
    },
    # Second line of defence: scrub credentials from every record, whoever logs it. And
    # the id of the request (or of the task's request) on every record.
    "filters": {
        "redact": {"()": "portal.lib.redaction.RedactingFilter"},
        "request_id": {"()": "portal.lib.request_ids.RequestIdFilter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["request_id", "redact"],
        },
        # The development server's request lines carry query strings (an
        # identity provider's `?code=` among them): Django's own handler has no filter.
        "server": {
            "class": "logging.StreamHandler",
            "formatter": "server",
            "filters": ["request_id", "redact"],
        },
    },
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        "fleet": {"level": _LOG_LEVEL},
        "signin": {"level": _LOG_LEVEL},
        "portal": {"level": _LOG_LEVEL},  # portal.requests: a line per request
        "axes": {"level": "INFO"},  # every local sign-in, failure and lockout
        "axes.apps": {"level": "WARNING"},
        "django": {"level": "INFO"},
        "django.server": {"handlers": ["server"], "level": "INFO", "propagate": False},
    },
}

// A demo OpenID Connect provider on loopback, built on panva's certified oidc-provider (8.8.1).
// Used by the portal's tests (with --test-controls) and by `make run` (with idp/demo.json).
//
//   node idp/server.mjs --config PATH [--host 127.0.0.1] [--port 0] [--test-controls]
//
// The first line on stdout is exactly "listening on http://HOST:PORT" (the real port when 0 was
// given), and that is also the issuer. Nothing else goes to stdout; notices go to stderr.
// The groups claim comes with the openid scope, or, with "groups_scope_only": true in the
// configuration, only when the groups scope is asked for (as Dex, Authentik and Okta's custom
// authorization servers do); the groups scope is in scopes_supported either way.
// Users sign in on this provider's own page; consent is granted without a page; RP-initiated
// logout with a valid id_token_hint and a registered post_logout_redirect_uri needs no click.

import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as querystring from 'node:querystring';
import * as util from 'node:util';

import Provider from 'oidc-provider';

// oidc-provider prints its NOTICEs with console.info: keep stdout for the one line above.
console.log = console.error;
console.info = console.error;

const LOGIN_TITLE = 'Demo identity provider';
const MAX_BODY = 64 * 1024;

// ---------------------------------------------------------------------------------------------
// Command line and configuration

function parseArguments(argv) {
  const { values } = util.parseArgs({
    args: argv,
    options: {
      config: { type: 'string' },
      host: { type: 'string', default: '127.0.0.1' },
      port: { type: 'string', default: '0' },
      'test-controls': { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (!values.config) {
    throw new Error('usage: node idp/server.mjs --config PATH [--host 127.0.0.1] [--port 0] [--test-controls]');
  }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`--port must be an integer from 0 to 65535, not ${values.port}`);
  }
  return {
    configPath: values.config, host: values.host, port, testControls: values['test-controls'],
  };
}

const USER_FIELDS = [
  'sub', 'email', 'email_verified', 'name', 'given_name', 'family_name', 'groups',
];

function checkUser(user, where) {
  for (const key of ['username', 'password', 'sub']) {
    if (typeof user[key] !== 'string' || !user[key]) {
      throw new Error(`${where}: "${key}" must be a non-empty string`);
    }
  }
  if (user.groups !== undefined
      && (!Array.isArray(user.groups) || !user.groups.every((g) => typeof g === 'string'))) {
    throw new Error(`${where}: "groups" must be an array of strings`);
  }
}

function loadConfiguration(path) {
  const config = JSON.parse(fs.readFileSync(path, 'utf8'));
  if (!Array.isArray(config.clients) || config.clients.length === 0) {
    throw new Error(`${path}: "clients" must be a non-empty array`);
  }
  if (!Array.isArray(config.users)) {
    throw new Error(`${path}: "users" must be an array`);
  }
  config.users.forEach((user, i) => checkUser(user, `${path}: users[${i}]`));
  if (config.groups_scope_only !== undefined && typeof config.groups_scope_only !== 'boolean') {
    throw new Error(`${path}: "groups_scope_only" must be true or false`);
  }
  const usernames = new Set(config.users.map((u) => u.username));
  const subs = new Set(config.users.map((u) => u.sub));
  if (usernames.size !== config.users.length || subs.size !== config.users.length) {
    throw new Error(`${path}: usernames and subjects must be unique`);
  }
  return config;
}

function providerClients(clients) {
  return clients.map((client) => ({
    client_id: client.client_id,
    client_secret: client.client_secret,
    client_name: client.client_name,
    redirect_uris: client.redirect_uris,
    post_logout_redirect_uris: client.post_logout_redirect_uris ?? [],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    // oidc-provider accepts client_secret_post as well for a client_secret_basic client.
    token_endpoint_auth_method: client.token_endpoint_auth_method ?? 'client_secret_basic',
    id_token_signed_response_alg: client.id_token_signed_response_alg ?? 'RS256',
  }));
}

// ---------------------------------------------------------------------------------------------
// Keys

function randomId(bytes = 12) {
  return crypto.randomBytes(bytes).toString('base64url');
}

function generateSigningKeys() {
  const rsa = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const ec = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const stamp = Date.now().toString(36);
  return [
    { alg: 'RS256', privateKey: rsa.privateKey, kid: `rsa-${stamp}-${randomId(6)}` },
    { alg: 'ES256', privateKey: ec.privateKey, kid: `ec-${stamp}-${randomId(6)}` },
  ].map((key) => ({
    ...key,
    jwk: {
      ...key.privateKey.export({ format: 'jwk' }), kid: key.kid, use: 'sig', alg: key.alg,
    },
  }));
}

function foreignKey(alg) {
  if (alg === 'ES256') {
    return crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
  }
  return crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
}

function decodeJwt(token) {
  const [header, payload] = token.split('.');
  return {
    header: JSON.parse(Buffer.from(header, 'base64url').toString('utf8')),
    payload: JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')),
  };
}

function signJwt(header, payload, privateKey) {
  const encode = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const signingInput = `${encode(header)}.${encode(payload)}`;
  let options;
  if (header.alg === 'RS256') {
    options = privateKey;
  } else if (header.alg === 'ES256') {
    options = { key: privateKey, dsaEncoding: 'ieee-p1363' };
  } else {
    throw new Error(`cannot re-sign a token with alg ${header.alg}`);
  }
  const signature = crypto.sign('sha256', Buffer.from(signingInput), options);
  return `${signingInput}.${signature.toString('base64url')}`;
}

// ---------------------------------------------------------------------------------------------
// A small in-memory adapter, shared by every Provider instance of this process (key rotation
// builds a new instance and sessions, grants and interactions must survive it).

const storage = new Map();

function storageGet(key) {
  const entry = storage.get(key);
  if (!entry) return undefined;
  if (entry.expiresAt !== undefined && entry.expiresAt <= Date.now()) {
    storage.delete(key);
    return undefined;
  }
  return entry.value;
}

function storageSet(key, value, expiresIn) {
  storage.set(key, {
    value, expiresAt: expiresIn ? Date.now() + expiresIn * 1000 : undefined,
  });
}

// Only these belong to a grant and go with it when it is revoked (as oidc-provider's own
// memory adapter has it): an interaction carries a grantId too, and must survive the logout
// that switching accounts at the login prompt performs.
const GRANTABLE = new Set([
  'AccessToken', 'AuthorizationCode', 'RefreshToken', 'DeviceCode',
  'BackchannelAuthenticationRequest',
]);

class MemoryAdapter {
  constructor(model) {
    this.model = model;
  }

  key(id) {
    return `${this.model}:${id}`;
  }

  async upsert(id, payload, expiresIn) {
    storageSet(this.key(id), structuredClone(payload), expiresIn);
    if (GRANTABLE.has(this.model) && payload.grantId) {
      const grantKey = `grant:${payload.grantId}`;
      const members = storageGet(grantKey) ?? [];
      members.push(this.key(id));
      storageSet(grantKey, members, expiresIn);
    }
    if (payload.uid) storageSet(`sessionUid:${payload.uid}`, id, expiresIn);
    if (payload.userCode) storageSet(`userCode:${payload.userCode}`, id, expiresIn);
  }

  async find(id) {
    const value = storageGet(this.key(id));
    return value === undefined ? undefined : structuredClone(value);
  }

  async findByUid(uid) {
    const id = storageGet(`sessionUid:${uid}`);
    return id === undefined ? undefined : this.find(id);
  }

  async findByUserCode(userCode) {
    const id = storageGet(`userCode:${userCode}`);
    return id === undefined ? undefined : this.find(id);
  }

  async consume(id) {
    const entry = storage.get(this.key(id));
    if (entry) entry.value.consumed = Math.floor(Date.now() / 1000);
  }

  async destroy(id) {
    storage.delete(this.key(id));
  }

  async revokeByGrantId(grantId) {
    const grantKey = `grant:${grantId}`;
    for (const key of storageGet(grantKey) ?? []) storage.delete(key);
    storage.delete(grantKey);
  }
}

// ---------------------------------------------------------------------------------------------
// HTML

function escapeHtml(value) {
  return String(value ?? '')
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

const STYLE = `body{font-family:system-ui,sans-serif;background:#f3f4f6;margin:0;color:#111827}
main{max-width:22rem;margin:4rem auto;background:#fff;padding:1.5rem 2rem;border-radius:.5rem;
box-shadow:0 1px 3px rgba(0,0,0,.2)}h1{font-size:1.4rem;margin-top:0}label{display:block;
margin-top:1rem;font-weight:600}input{width:100%;box-sizing:border-box;padding:.5rem;
margin-top:.25rem;font-size:1rem}button{margin-top:1.5rem;width:100%;padding:.6rem;
font-size:1rem;background:#1d4ed8;color:#fff;border:0;border-radius:.25rem;cursor:pointer}
p.error{color:#b91c1c;font-weight:600}p.hint{color:#4b5563;font-size:.9rem}`;

function page(title, body, { script = '' } = {}) {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
${script ? `<script>${script}</script>` : ''}
</head>
<body>
<main>
${body}
</main>
</body>
</html>`;
}

function loginPage({ uid, clientName, username = '', error = '' }) {
  const errorHtml = error ? `<p class="error" role="alert">${escapeHtml(error)}</p>\n` : '';
  return page(LOGIN_TITLE, `<h1>Sign in</h1>
<p class="hint">${escapeHtml(LOGIN_TITLE)} — to continue to ${escapeHtml(clientName)}</p>
${errorHtml}<form method="post" action="/interaction/${encodeURIComponent(uid)}/login" autocomplete="off">
<label for="username">Username</label>
<input id="username" name="username" type="text" value="${escapeHtml(username)}" autofocus required>
<label for="password">Password</label>
<input id="password" name="password" type="password" required>
<button type="submit">Sign in</button>
</form>`);
}

// ---------------------------------------------------------------------------------------------
// State

const options = parseArguments(process.argv.slice(2));
const config = loadConfiguration(options.configPath);
const originalUsers = structuredClone(config.users);
let users = structuredClone(originalUsers);
const cookieKeys = [randomId(32), randomId(32)];
let signingKeys = generateSigningKeys();
let pendingIdToken = null; // { claims, signWith } for the next ID token (test controls)

function userByUsername(username) {
  return users.find((u) => u.username === username);
}

function claimsOf(user) {
  const claims = { sub: user.sub, preferred_username: user.username };
  for (const key of USER_FIELDS) {
    if (user[key] !== undefined && user[key] !== null) claims[key] = user[key];
  }
  return claims;
}

function passwordMatches(user, password) {
  const digest = (value) => crypto.createHash('sha256').update(String(value)).digest();
  return crypto.timingSafeEqual(digest(user.password), digest(password));
}

// ---------------------------------------------------------------------------------------------
// The provider

async function logoutSource(ctx, form) {
  // Without a click when the relying party proves who it is (a valid id_token_hint, which
  // oidc-provider has verified by now) and names a registered post_logout_redirect_uri.
  // logout=yes ends the whole provider session, not only this client's part of it.
  const automatic = Boolean(
    ctx.oidc.entities.IdTokenHint && ctx.oidc.params.post_logout_redirect_uri,
  );
  const withLogout = form.replace(
    '</form>',
    `<input type="hidden" name="logout" value="yes"/>
<noscript><button type="submit">Sign out</button></noscript>
</form>`,
  );
  ctx.type = 'html';
  if (automatic) {
    const marked = withLogout.replace('<form ', '<form data-auto-submit ');
    ctx.body = page('Signing out', `<h1>Signing out…</h1>\n${marked}`, {
      script: "document.addEventListener('DOMContentLoaded',function(){document.forms[0].submit()});",
    });
  } else {
    const visible = withLogout.replace(
      '<noscript><button type="submit">Sign out</button></noscript>',
      '<button type="submit">Sign out</button>',
    );
    ctx.body = page('Sign out', `<h1>Sign out of ${escapeHtml(ctx.host)}?</h1>\n${visible}`);
  }
}

async function postLogoutSuccessSource(ctx) {
  ctx.type = 'html';
  ctx.body = page('Signed out', '<h1>You are signed out</h1>');
}

async function renderError(ctx, out) {
  ctx.type = 'html';
  const details = Object.entries(out)
    .map(([key, value]) => `<p><strong>${escapeHtml(key)}</strong>: ${escapeHtml(value)}</p>`)
    .join('\n');
  ctx.body = page('Error', `<h1>Something went wrong</h1>\n${details}`);
}

function alterIdToken(idToken, override) {
  const { header, payload } = decodeJwt(idToken);
  let privateKey;
  if (override.signWith === 'foreign') {
    privateKey = foreignKey(header.alg);
  } else {
    const key = signingKeys.find((k) => k.kid === header.kid)
      ?? signingKeys.find((k) => k.alg === header.alg);
    privateKey = key.privateKey;
  }
  return signJwt(header, { ...payload, ...override.claims }, privateKey);
}

function buildProvider(issuer) {
  const provider = new Provider(issuer, {
    adapter: MemoryAdapter,
    clients: providerClients(config.clients),
    jwks: { keys: signingKeys.map((k) => k.jwk) },
    cookies: {
      keys: cookieKeys,
      names: {
        session: '_idp_session',
        interaction: '_idp_interaction',
        resume: '_idp_interaction_resume',
      },
      // Lax, not oidc-provider's SameSite=None: browsers drop SameSite=None without Secure,
      // and this provider speaks plain http on loopback.
      long: { httpOnly: true, sameSite: 'lax', signed: true },
      short: { httpOnly: true, sameSite: 'lax', signed: true },
    },
    scopes: ['openid'],
    claims: {
      openid: config.groups_scope_only ? ['sub'] : ['sub', 'groups'],
      profile: ['name', 'given_name', 'family_name', 'preferred_username'],
      email: ['email', 'email_verified'],
      groups: ['groups'],
    },
    conformIdTokenClaims: false,
    responseTypes: ['code'],
    clientAuthMethods: ['client_secret_basic', 'client_secret_post'],
    pkce: { methods: ['S256'], required: () => true },
    features: {
      devInteractions: { enabled: false },
      rpInitiatedLogout: { enabled: true, logoutSource, postLogoutSuccessSource },
      userinfo: { enabled: true },
    },
    interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
    async findAccount(ctx, sub) {
      const user = users.find((u) => u.sub === sub);
      if (!user) return undefined;
      return { accountId: sub, claims: async () => claimsOf(user) };
    },
    renderError,
    clientBasedCORS: () => false,
    ttl: {
      AccessToken: 60 * 60,
      AuthorizationCode: 60,
      IdToken: 60 * 60,
      Interaction: 60 * 60,
      Session: 24 * 60 * 60,
      Grant: 24 * 60 * 60,
    },
  });

  if (options.testControls) {
    provider.use(async (ctx, next) => {
      await next();
      if (ctx.oidc?.route !== 'token' || ctx.status !== 200 || !pendingIdToken) return;
      if (!ctx.body || typeof ctx.body.id_token !== 'string') return;
      const override = pendingIdToken;
      pendingIdToken = null;
      ctx.body = { ...ctx.body, id_token: alterIdToken(ctx.body.id_token, override) };
    });
  }
  provider.on('server_error', (ctx, error) => {
    console.error('oidc-provider server_error:', error);
  });
  return { provider, handle: provider.callback() };
}

// ---------------------------------------------------------------------------------------------
// HTTP plumbing

function send(res, status, body, type = 'text/html; charset=utf-8') {
  res.statusCode = status;
  res.setHeader('Content-Type', type);
  res.setHeader('Cache-Control', 'no-store');
  res.end(body);
}

function sendJson(res, status, value) {
  send(res, status, JSON.stringify(value), 'application/json; charset=utf-8');
}

async function readBody(req) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > MAX_BODY) throw Object.assign(new Error('body too large'), { status: 413 });
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function readJson(req) {
  const text = await readBody(req);
  if (!text.trim()) return {};
  try {
    return JSON.parse(text);
  } catch {
    throw Object.assign(new Error('the body is not JSON'), { status: 400 });
  }
}

let current; // { provider, handle }: the Provider instance that answers right now

async function interaction(req, res, uid, action) {
  const { provider } = current;
  let details;
  try {
    details = await provider.interactionDetails(req, res);
  } catch (error) {
    send(res, 400, page('Error', `<h1>This sign-in has expired</h1>
<p>${escapeHtml(error.error_description ?? error.message)}</p>
<p>Go back to the application and sign in again.</p>`));
    return;
  }
  if (details.uid !== uid) {
    send(res, 400, page('Error', '<h1>This sign-in does not match the current one</h1>'));
    return;
  }
  const { prompt, params } = details;
  const client = await provider.Client.find(params.client_id);
  const clientName = client?.clientName ?? params.client_id;

  if (prompt.name === 'login') {
    if (req.method === 'GET' && action === undefined) {
      send(res, 200, loginPage({ uid, clientName }));
      return;
    }
    if (req.method === 'POST' && action === 'login') {
      const form = querystring.parse(await readBody(req));
      const username = typeof form.username === 'string' ? form.username : '';
      const password = typeof form.password === 'string' ? form.password : '';
      const user = userByUsername(username);
      if (!user || !passwordMatches(user, password)) {
        send(res, 200, loginPage({
          uid, clientName, username, error: 'Wrong username or password.',
        }));
        return;
      }
      await provider.interactionFinished(
        req,
        res,
        { login: { accountId: user.sub } },
        { mergeWithLastSubmission: false },
      );
      return;
    }
  }

  if (prompt.name === 'consent' && req.method === 'GET' && action === undefined) {
    // The organisation's own provider: the portal is pre-approved for what it asks.
    const { accountId } = details.session;
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId, clientId: params.client_id });
    const { missingOIDCScope, missingOIDCClaims, missingResourceScopes } = prompt.details;
    if (missingOIDCScope) grant.addOIDCScope(missingOIDCScope.join(' '));
    if (missingOIDCClaims) grant.addOIDCClaims(missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries(missingResourceScopes ?? {})) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
    const grantId = await grant.save();
    const consent = details.grantId ? {} : { grantId };
    await provider.interactionFinished(req, res, { consent }, { mergeWithLastSubmission: true });
    return;
  }

  send(res, 400, page('Error', '<h1>Unexpected step in the sign-in</h1>'));
}

async function testControl(req, res, path) {
  if (req.method === 'GET' && path === 'health') {
    sendJson(res, 200, { ok: true });
    return;
  }
  if (req.method === 'POST' && path === 'rotate-keys') {
    signingKeys = generateSigningKeys();
    current = buildProvider(current.provider.issuer);
    sendJson(res, 200, { kids: signingKeys.map((k) => k.kid) });
    return;
  }
  if (req.method === 'POST' && path === 'next-id-token') {
    const body = await readJson(req);
    const claims = body.claims ?? {};
    const signWith = body.sign_with ?? 'provider';
    if (typeof claims !== 'object' || Array.isArray(claims) || claims === null
        || !['provider', 'foreign'].includes(signWith)) {
      sendJson(res, 400, { error: 'expected {"claims": {...}, "sign_with": "provider" | "foreign"}' });
      return;
    }
    pendingIdToken = { claims, signWith };
    sendJson(res, 200, { claims, sign_with: signWith });
    return;
  }
  const userMatch = /^users\/([^/]+)$/.exec(path);
  if (req.method === 'PUT' && userMatch) {
    const user = userByUsername(decodeURIComponent(userMatch[1]));
    if (!user) {
      sendJson(res, 404, { error: 'no such user' });
      return;
    }
    const fields = await readJson(req);
    if (typeof fields !== 'object' || Array.isArray(fields) || fields === null) {
      sendJson(res, 400, { error: 'expected a JSON object' });
      return;
    }
    const updated = { ...user, ...fields };
    checkUser(updated, 'user');
    users = users.map((u) => (u === user ? updated : u));
    const { password, ...shown } = updated; // eslint-disable-line no-unused-vars
    sendJson(res, 200, shown);
    return;
  }
  if (req.method === 'POST' && path === 'reset') {
    users = structuredClone(originalUsers);
    pendingIdToken = null;
    sendJson(res, 200, { ok: true });
    return;
  }
  sendJson(res, 404, { error: 'unknown test control' });
}

async function route(req, res) {
  const { pathname } = new URL(req.url, 'http://provider.invalid');
  if (pathname.startsWith('/_test/')) {
    if (!options.testControls) {
      sendJson(res, 404, { error: 'test controls are off' });
      return;
    }
    await testControl(req, res, pathname.slice('/_test/'.length));
    return;
  }
  const match = /^\/interaction\/([^/]+)(?:\/(login))?\/?$/.exec(pathname);
  if (match) {
    await interaction(req, res, decodeURIComponent(match[1]), match[2]);
    return;
  }
  current.handle(req, res);
}

// ---------------------------------------------------------------------------------------------
// Start and stop

const server = http.createServer((req, res) => {
  route(req, res).catch((error) => {
    if (!error.status) console.error('idp: error while answering', req.method, req.url, error);
    if (!res.headersSent) {
      sendJson(res, error.status ?? 500, { error: error.status ? error.message : 'server error' });
    } else {
      res.end();
    }
  });
});

server.on('error', (error) => {
  console.error(`idp: cannot listen on ${options.host}:${options.port}: ${error.message}`);
  process.exit(1);
});

server.listen(options.port, options.host, () => {
  const { port } = server.address();
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  const issuer = `http://${host}:${port}`;
  current = buildProvider(issuer);
  process.stdout.write(`listening on ${issuer}\n`);
});

let stopping = false;
function stop() {
  if (stopping) return;
  stopping = true;
  server.close(() => process.exit(0));
  server.closeAllConnections();
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

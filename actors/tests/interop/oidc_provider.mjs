// A real, independent OAuth 2.1 / OpenID authorization server for mcpd's resource-server tests:
// npm `oidc-provider` (pinned by scripts/setup-oidc.sh), on 127.0.0.1 at a free port.
//
//   OIDC_PROVIDER_ENTRY=<oidc-provider's lib/index.js> node oidc_provider.mjs KEYS_DIR
//
// KEYS_DIR/jwks.json (a private JWK set) holds the signing keys; when it is missing, one RSA key
// (kid "k1") is generated and written there with its PKCS#8 PEM (KEYS_DIR/k1.pem), plus a foreign
// RSA key that the provider never sees (KEYS_DIR/foreign.pem) and the provider's public key as PEM
// (KEYS_DIR/public.pem), so that the tests can mint their own good and bad tokens.
//
// Set up for the tests:
// - resource indicators (RFC 8707): any requested resource gets JWT access tokens (RS256) with
//   `aud` = that resource and the scopes asked for among `mcp tools:admin files:write`; the
//   client `opaque-client` gets opaque tokens instead (for introspection);
// - client_credentials, introspection and dynamic registration (RFC 7591) on; PKCE as usual;
// - static clients: `cc-client` / `cc-secret` and `opaque-client` / `opaque-secret`
//   (client_credentials), `introspector` / `introspector-secret` (introspection);
// - interactions approved at once: /interaction/:uid finishes login (account "alice") and
//   consent (every scope and resource asked for), so a headless client that follows redirects
//   with cookies completes the authorization-code flow.
//
// Prints `LISTENING <issuer>` once bound, and one `JWKS` line per key-set request (the tests
// count them).

import { generateKeyPairSync } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import http from 'node:http';

const entry = process.env.OIDC_PROVIDER_ENTRY;
if (!entry) throw new Error("OIDC_PROVIDER_ENTRY must name oidc-provider's lib/index.js (scripts/setup-oidc.sh prints it)");
const { default: Provider } = await import(pathToFileURL(entry).href);

const keysDir = process.argv[2];
if (!keysDir) throw new Error('usage: oidc_provider.mjs KEYS_DIR');
const jwksPath = join(keysDir, 'jwks.json');

function rsa(kid) {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = { ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' };
  return { jwk, pem: privateKey.export({ type: 'pkcs8', format: 'pem' }), publicPem: publicKey.export({ type: 'spki', format: 'pem' }) };
}

if (!existsSync(jwksPath)) {
  const own = rsa('k1');
  const foreign = rsa('k1');
  writeFileSync(join(keysDir, 'k1.pem'), own.pem);
  writeFileSync(join(keysDir, 'public.pem'), own.publicPem);
  writeFileSync(join(keysDir, 'foreign.pem'), foreign.pem);
  writeFileSync(jwksPath, JSON.stringify({ keys: [own.jwk] }));
}
const jwks = JSON.parse(readFileSync(jwksPath, 'utf8'));

const SCOPES = 'mcp tools:admin files:write';
const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  jwks,
  clients: [
    { client_id: 'cc-client', client_secret: 'cc-secret', grant_types: ['client_credentials'], redirect_uris: [], response_types: [], scope: SCOPES },
    { client_id: 'opaque-client', client_secret: 'opaque-secret', grant_types: ['client_credentials'], redirect_uris: [], response_types: [], scope: SCOPES },
    { client_id: 'introspector', client_secret: 'introspector-secret', grant_types: [], redirect_uris: [], response_types: [] },
  ],
  scopes: ['openid', 'offline_access', ...SCOPES.split(' ')],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    registration: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async (_ctx, _client, oneOf) => oneOf,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx, resource, client) => ({
        scope: SCOPES,
        audience: resource,
        accessTokenTTL: 300,
        accessTokenFormat: client.clientId === 'opaque-client' ? 'opaque' : 'jwt',
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
  // Registered clients ask for the resource's scopes; none is refused.
  loadExistingGrant: async (ctx) => {
    const id = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    return id ? ctx.oidc.provider.Grant.find(id) : undefined;
  },
  pkce: { required: () => true },
  findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
});

provider.use(async (ctx, next) => {
  if (ctx.path.endsWith('/jwks')) console.log('JWKS');
  if (!ctx.path.startsWith('/interaction/')) return next();
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  const { prompt, params, session } = details;
  let result;
  if (prompt.name === 'login') {
    result = { login: { accountId: 'alice' } };
  } else {
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    const missing = prompt.details;
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes || {})) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
    result = { consent: { grantId: await grant.save() } };
  }
  await provider.interactionFinished(ctx.req, ctx.res, result, { mergeWithLastSubmission: true });
});

provider.on('server_error', (_ctx, err) => console.error('server_error', err));
server.on('request', provider.callback());
console.log(`LISTENING ${issuer}`);

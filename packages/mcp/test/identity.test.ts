import { userInfo } from 'node:os';
import { defaultIdentity } from '@floodgate/mcp';

// Who a call counts against, from the callback's extra (docs/mcp.md, "Who a call counts against").
test('the auth subject first, then the OAuth client, then the session; HTTP with neither shares one identity; no transport is the process user', () => {
  const auth = { clientId: 'app-1', extra: { sub: 'ada' } };
  expect(defaultIdentity({ authInfo: auth, sessionId: 's-1', requestInfo: {} })).toBe('user:ada');
  expect(defaultIdentity({ authInfo: { clientId: 'app-1' }, sessionId: 's-1' })).toBe('oauth-client:app-1');
  expect(defaultIdentity({ authInfo: { clientId: 'app-1', extra: { sub: 42 } } })).toBe('oauth-client:app-1');
  expect(defaultIdentity({ sessionId: 's-1', requestInfo: {} })).toBe('session:s-1');
  expect(defaultIdentity({ requestInfo: { headers: {} } })).toBe('anonymous:http');
  expect(defaultIdentity({})).toBe(`process:${userInfo().username}`);
});

import { closeClients, connect } from '@floodgate/testing';

afterAll(closeClients);

test('the global setup started a real redis-server', async () => {
  const redis = connect();
  const info = await redis.info('server');
  expect(info).toMatch(/redis_version:\d+\.\d+/);
});

/**
 * Two small adapters called directly against the real emulator: provision()
 * (shared/aws/provision.ts: the queues with their DLQs, the tables with TTL, the bucket, made
 * idempotently from the topology) and the secret resolver (shared/aws/secrets.ts: Secrets
 * Manager reads, once per container, failures not cached, secret text never in an error). No mocks.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { DescribeTableCommand, DescribeTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { HeadBucketCommand } from '@aws-sdk/client-s3';
import {
  CreateSecretCommand,
  PutSecretValueCommand,
  SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { provision } from '../../../shared/aws/provision.ts';
import { createSecretResolver } from '../../../shared/aws/secrets.ts';
import { FRONTIER, FRONTIER_QUEUE, resourceNames, STAGE_QUEUES } from '../../../shared/topology.ts';
import { type AdapterEnv, sharedAdapterEnv } from '../../helpers/adapter-env.ts';
import { uniqueCrawlName } from '../../helpers/emulator.ts';

describe('provision and secrets', () => {
  let env: AdapterEnv;
  before(async () => {
    env = await sharedAdapterEnv();
  });

  describe('provision', () => {
    const attrs = async (url: string) =>
      (await env.clients.sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] })))
        .Attributes ?? {};

    it("makes every queue with its DLQ and the topology's settings, both tables with TTL, the bucket", async () => {
      const { res } = env;
      assert.deepEqual(Object.keys(res.queueUrls.frontier).sort(), FRONTIER.map((f) => f.name).sort());
      const user = await attrs(res.queueUrls.frontier.user);
      assert.equal(user.VisibilityTimeout, String(FRONTIER_QUEUE.visibilityTimeoutSeconds));
      const dlqArn = (await attrs(res.dlqUrls.frontier.user)).QueueArn;
      assert.deepEqual(JSON.parse(user.RedrivePolicy ?? '{}'), {
        deadLetterTargetArn: dlqArn,
        maxReceiveCount: FRONTIER_QUEUE.maxReceiveCount,
      });
      const extract = await attrs(res.queueUrls.extract);
      assert.equal(extract.VisibilityTimeout, String(STAGE_QUEUES.extract.visibilityTimeoutSeconds));
      assert.equal((await attrs(res.dlqUrls.extract)).MessageRetentionPeriod, String(14 * 86_400));
      for (const [table, key] of [
        [res.urlsTable, 'url'],
        [res.hostsTable, 'host'],
      ] as const) {
        const d = await env.clients.ddbRaw.send(new DescribeTableCommand({ TableName: table }));
        assert.equal(d.Table?.TableStatus, 'ACTIVE');
        assert.deepEqual(d.Table?.KeySchema, [{ AttributeName: key, KeyType: 'HASH' }]);
        const ttl = await env.clients.ddbRaw.send(new DescribeTimeToLiveCommand({ TableName: table }));
        assert.equal(ttl.TimeToLiveDescription?.AttributeName, 'expiresAt');
        assert.equal(ttl.TimeToLiveDescription?.TimeToLiveStatus, 'ENABLED');
      }
      await env.clients.s3.send(new HeadBucketCommand({ Bucket: res.bucket }));
    });

    it('is idempotent: a second run finds everything and returns the same addresses', async () => {
      assert.deepEqual(await provision(env.clients, resourceNames(env.crawl)), env.res);
    });

    it('takes test settings for the queues (shorter leases, fewer receives)', async () => {
      const res = await provision(env.clients, resourceNames(uniqueCrawlName('adapters-short')), {
        queueSettings: () => ({ visibilityTimeoutSeconds: 3, maxReceiveCount: 2 }),
      });
      const index = await attrs(res.queueUrls.index);
      assert.equal(index.VisibilityTimeout, '3');
      assert.equal(JSON.parse(index.RedrivePolicy ?? '{}').maxReceiveCount, 2);
    });
  });

  describe('secret resolver', () => {
    let sm: SecretsManagerClient;
    before(() => {
      sm = new SecretsManagerClient({ endpoint: env.emu.endpoint, region: 'us-east-1' });
    });
    const resolver = () => createSecretResolver({ env: { ...process.env, TOKEN: 'from-env' } });
    const create = async (name: string, value: string) =>
      (await sm.send(new CreateSecretCommand({ Name: name, SecretString: value }))).ARN as string;

    it('inline strings and environment variables; an unset variable names the config path', async () => {
      const resolve = resolver();
      assert.equal(await resolve('inline', 'p'), 'inline');
      assert.equal(await resolve({ env: 'TOKEN' }, 'p'), 'from-env');
      await assert.rejects(resolve({ env: 'TRAWL_NOT_SET_ANYWHERE' }, 'fetch.auth.0.bearer'), {
        name: 'ConfigError',
        message: 'fetch.auth.0.bearer: environment variable TRAWL_NOT_SET_ANYWHERE is not set',
      });
    });

    it('reads a secret once per container: a rotated value is seen by the next cold start', async () => {
      const arn = await create('trawl/rotating', 'v1');
      const warm = resolver();
      assert.equal(await warm({ secretArn: arn }, 'p'), 'v1');
      await sm.send(new PutSecretValueCommand({ SecretId: arn, SecretString: 'v2' }));
      assert.equal(await warm({ secretArn: arn }, 'p'), 'v1', 'cached in this container');
      assert.equal(await resolver()({ secretArn: arn }, 'p'), 'v2');
    });

    it('a key of a JSON secret; a missing key or a secret that is not JSON is a ConfigError without the secret', async () => {
      const arn = await create('trawl/json', JSON.stringify({ user: 'u', pass: 'hunter2', n: 3 }));
      const plain = await create('trawl/plain', 'hunter2-not-json');
      const resolve = resolver();
      assert.equal(await resolve({ secretArn: arn, key: 'pass' }, 'p'), 'hunter2');
      for (const [ref, key] of [
        [{ secretArn: arn, key: 'missing' }, 'missing'],
        [{ secretArn: arn, key: 'n' }, 'n'],
        [{ secretArn: plain, key: 'pass' }, 'pass'],
      ] as const) {
        await assert.rejects(resolve(ref, 'fetch.auth.1.basic.password'), (err: Error) => {
          assert.equal(err.name, 'ConfigError');
          assert.equal(err.message, `fetch.auth.1.basic.password: secret has no string key ${key}`);
          assert.ok(!err.message.includes('hunter2'));
          return true;
        });
      }
    });

    it('a failed read is not cached: the same container reads again next time', async () => {
      const name = `trawl/late-${process.pid}`;
      const resolve = resolver();
      // Secrets Manager takes a secret's name where an ARN goes; the name lets the test create it later.
      await assert.rejects(resolve({ secretArn: name }, 'p'), /ResourceNotFound|can't find/i);
      await create(name, 'now-there');
      assert.equal(await resolve({ secretArn: name }, 'p'), 'now-there');
    });
  });
});

/**
 * The commands on a crawl `trawl deploy` recorded, when the stack is not what the record says: the
 * real CLI, its deployment record (what `trawl deploy` writes under .trawl/deployments/) pointing at
 * resources made on the emulator as the stack would hold them. A stack deleted outside trawl (the
 * console, `cdk destroy`) is said in words, exit 2, and `trawl destroy` forgets it; a config FILE
 * edited since the deploy is said by every command that reads the crawl, not only `crawl`.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { Deployment } from '../../cli/deployment.ts';
import { createAwsClients } from '../../shared/aws/clients.ts';
import { createPageStore } from '../../shared/aws/page-store.ts';
import { provision } from '../../shared/aws/provision.ts';
import { parseConfig, storedConfig } from '../../shared/config.ts';
import { CONFIG_KEY } from '../../shared/layout.ts';
import { resourceNames } from '../../shared/topology.ts';
import { BIN, cliEnv, NODE } from '../helpers/cli.ts';
import { useEmulatorAndSite } from '../helpers/crawl-env.ts';
import { uniqueCrawlName } from '../helpers/emulator.ts';

describe('trawl on a deployed crawl whose stack is not what was deployed', () => {
  const env = useEmulatorAndSite({ routes: { '/': { body: '<title>Home</title><p>home</p>' } } });
  const keys = { AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test', AWS_REGION: 'us-east-1' };
  const trawl = (cwd: string, ...args: string[]) => {
    const r = spawnSync(NODE, [BIN, ...args], {
      cwd,
      env: { ...cliEnv(cwd), ...keys },
      encoding: 'utf8',
      timeout: 120_000,
    });
    return { code: r.status, out: r.stdout, err: r.stderr };
  };

  /** A folder with cfg.json and the deployment record of its crawl, as `trawl deploy` leaves them. */
  async function deployedFolder(live: boolean) {
    const cwd = mkdtempSync(join(tmpdir(), 'trawl-deployed-'));
    const input = {
      name: uniqueCrawlName('dep'),
      startUrls: [`${env.site.url}/`],
      fetch: { allowPrivateNetworks: true },
    };
    writeFileSync(join(cwd, 'cfg.json'), JSON.stringify(input));
    const config = parseConfig(input);
    const clients = createAwsClients({ count: false });
    const resources = await provision(clients, resourceNames(config.name));
    await createPageStore({ client: clients.s3, bucket: resources.bucket }).putJson(
      CONFIG_KEY,
      storedConfig(config),
    );
    // Deleted with its stack: the queues and functions go, the URL table and the bucket are retained.
    const queueUrls = live
      ? resources.queueUrls
      : { ...resources.queueUrls, extract: `${env.emu.endpoint}/123456789012/${config.name}-deleted` };
    const d: Deployment = {
      crawl: config.name,
      stackName: resourceNames(config.name).stack,
      endpoint: env.emu.endpoint,
      region: 'us-east-1',
      local: false,
      outputs: {
        BucketName: resources.bucket,
        UrlsTableName: resources.urlsTable,
        HostsTableName: resources.hostsTable,
        QueueUrls: JSON.stringify(queueUrls),
        FunctionNames: JSON.stringify({}),
        DeadLetterQueueUrls: JSON.stringify(resources.dlqUrls),
      },
      deployedAt: new Date().toISOString(),
    };
    mkdirSync(join(cwd, '.trawl', 'deployments'), { recursive: true });
    const record = join(cwd, '.trawl', 'deployments', `${config.name}.json`);
    writeFileSync(record, JSON.stringify(d));
    return { cwd, input, record };
  }

  it('a stack deleted outside trawl: every command says so (exit 2), and destroy forgets the deployment', async () => {
    const { cwd, record } = await deployedFolder(false);
    for (const command of [['urls'], ['docs'], ['status'], ['report', '-o', 'r.html']]) {
      const r = trawl(cwd, ...command, '-c', 'cfg.json');
      assert.equal(r.code, 2, `${command[0]}: ${r.err}`);
      assert.match(
        r.err,
        /which is gone \(deleted outside trawl\?\): "trawl deploy -c cfg\.json" deploys it again/,
      );
      assert.doesNotMatch(r.err, /QueueDoesNotExist|NonExistentQueue|at .*\.ts:\d+/);
      assert.equal(r.out, '', `${command[0]} printed nothing of the retained tables`);
    }
    const destroyed = trawl(cwd, 'destroy', '-c', 'cfg.json');
    assert.equal(destroyed.code, 0, destroyed.err);
    assert.match(destroyed.out, /forgot the deployment of .*: the stack is gone/);
    assert.equal(existsSync(record), false);
  });

  it('a config FILE edited since the deploy is said by the commands that read the crawl', async () => {
    const { cwd, input } = await deployedFolder(true);
    const urls = trawl(cwd, 'urls', '-c', 'cfg.json');
    assert.equal(urls.code, 0, urls.err);
    assert.doesNotMatch(urls.err, /differs from the config deployed/, 'the same config: no warning');
    writeFileSync(join(cwd, 'cfg.json'), JSON.stringify({ ...input, scope: { exclude: ['/private/'] } }));
    for (const command of [['urls'], ['docs'], ['status']]) {
      const r = trawl(cwd, ...command, '-c', 'cfg.json');
      assert.equal(r.code, 0, `${command[0]}: ${r.err}`);
      assert.match(
        r.err,
        /warning: cfg\.json differs from the config deployed to .*: run "trawl deploy -c cfg\.json"/,
      );
    }
  });
});

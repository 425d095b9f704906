/** The config as stored for the functions: taken as it is when its schema is the reader's, else validated. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { configFormat, parseConfig, storedConfig } from '../../shared/config.ts';
import { ConfigError } from '../../shared/errors.ts';
import { readStoredConfig } from '../../shared/stored-config.ts';

const raw = { name: 'stored', startUrls: ['https://example.com/'], fetch: { concurrency: 8 } };

describe('stored config', () => {
  it('names the schema: the same schema gives the same format, and the CLI stores the parsed config under it', () => {
    assert.match(configFormat(), /^trawl-config\/[0-9a-f]{16}$/);
    assert.equal(configFormat(), configFormat());
    const config = parseConfig(raw);
    const stored = JSON.parse(JSON.stringify(storedConfig(config)));
    assert.equal(stored.format, configFormat());
    // What goes through S3 as JSON comes back as the parsed config, defaults and all.
    assert.deepEqual(stored.config, config);
  });

  it('a function built from the same schema takes the stored config as it is (no validation)', async () => {
    const config = parseConfig(raw);
    const stored = JSON.parse(JSON.stringify(storedConfig(config)));
    const read = await readStoredConfig(stored, configFormat(), 's3://b/config/crawl.json');
    assert.equal(read, stored.config, 'the same object: nothing was parsed');
    assert.equal(read.fetch.concurrency, 8);
    assert.equal(read.fetch.keepAliveSeconds, config.fetch.keepAliveSeconds);
  });

  it("another schema's config, a config without a format and a reader without one are validated in full", async () => {
    const config = parseConfig(raw);
    const older = { format: 'trawl-config/0000000000000000', config: JSON.parse(JSON.stringify(config)) };
    const fromOlder = await readStoredConfig(older, configFormat(), 's3://b/k');
    assert.notEqual(fromOlder, older.config);
    assert.deepEqual(fromOlder, config);
    // A bare config (as written before the format existed, or by hand) gets the defaults.
    assert.deepEqual(await readStoredConfig(raw, configFormat(), 's3://b/k'), config);
    // A function given no format (an older stack) validates even a stored config of this schema.
    const stored = JSON.parse(JSON.stringify(storedConfig(config)));
    assert.notEqual(await readStoredConfig(stored, undefined, 's3://b/k'), stored.config);
  });

  it('a stored config that does not validate is a ConfigError naming the object and the field', async () => {
    const bad = { format: 'trawl-config/0000000000000000', config: { ...raw, fetch: { concurrency: 0 } } };
    await assert.rejects(
      readStoredConfig(bad, configFormat(), 's3://b/config/crawl.json'),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.match(err.message, /s3:\/\/b\/config\/crawl\.json \(config\): fetch\.concurrency/);
        return true;
      },
    );
    await assert.rejects(
      readStoredConfig({ startUrls: [] }, configFormat(), 's3://b/k'),
      /s3:\/\/b\/k: name/,
    );
    await assert.rejects(readStoredConfig(null, configFormat(), 's3://b/k'), ConfigError);
  });
});

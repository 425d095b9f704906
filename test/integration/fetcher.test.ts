import assert from 'node:assert/strict';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import type http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, mock } from 'node:test';
import zlib from 'node:zlib';
import { ByteBudget } from '../../shared/crawl/state/concurrency.ts';
import { type FetchOptions, type FetchOutcome, fetchUrl } from '../../shared/net/fetcher.ts';
import { fetchOptions as options } from '../helpers/fetch-options.ts';
import { type Handler, type Site, withSite } from '../helpers/http-site.ts';
import { withTcp } from '../helpers/tcp-server.ts';

const HARD_STOP_MS = 10_000; // every server-side write loop ends by then even if the client never closes

/** Streams `chunk` with backpressure until the client goes away, `limit` bytes, or HARD_STOP_MS. */
async function stream(res: NodeJS.WritableStream & { destroyed: boolean }, chunk: Buffer, limit = Infinity) {
  const stats = { written: 0 };
  const stopAt = Date.now() + HARD_STOP_MS;
  while (!res.destroyed && stats.written < limit && Date.now() < stopAt) {
    stats.written += chunk.length;
    if (!res.write(chunk)) await drainOrClose(res);
  }
  return stats;
}

function drainOrClose(res: NodeJS.WritableStream & { destroyed: boolean }): Promise<void> {
  return new Promise((resolve) => {
    if (res.destroyed) return resolve();
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

async function timed(run: () => Promise<FetchOutcome>): Promise<[FetchOutcome, number]> {
  const t0 = performance.now();
  const out = await run();
  return [out, Math.round(performance.now() - t0)];
}

function expectKind<K extends FetchOutcome['kind']>(
  out: FetchOutcome,
  kind: K,
): Extract<FetchOutcome, { kind: K }> {
  if (out.kind !== kind) assert.fail(`expected ${kind}, got ${JSON.stringify(out).slice(0, 300)}`);
  return out as Extract<FetchOutcome, { kind: K }>;
}

async function until(check: () => boolean, ms = 3000): Promise<void> {
  const stopAt = Date.now() + ms;
  while (!check()) {
    if (Date.now() > stopAt) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('fetchUrl: statuses (seed 001)', () => {
  it('fetches an ok page and sends UA and Accept-Encoding', async () => {
    await withSite(
      (_req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<p>hi</p>'),
      async (site) => {
        const ok = expectKind(await fetchUrl(`${site.base}/page#frag`, options()), 'ok');
        assert.equal(Buffer.from(ok.body).toString(), '<p>hi</p>');
        assert.deepEqual([ok.status, ok.truncated, ok.remoteAddress], [200, false, '127.0.0.1']);
        assert.equal(ok.headers['content-type'], 'text/html; charset=utf-8');
        const req = site.requests[0]!;
        assert.equal(req.url, '/page');
        assert.equal(req.headers['user-agent'], 'trawl-test');
        assert.equal(req.headers['accept-encoding'], 'gzip, deflate, br');
        assert.equal(req.headers['if-none-match'], undefined);
      },
    );
  });

  it('keeps repeated X-Robots-Tag headers apart (a line break), other repeated headers joined as Node joins them', async () => {
    await withSite(
      (_req, res) =>
        res
          .writeHead(200, [
            ['content-type', 'text/html'],
            ['x-robots-tag', 'otherbot: noindex'],
            ['x-robots-tag', 'noindex, nofollow'],
            ['vary', 'accept'],
            ['vary', 'cookie'],
          ])
          .end('<p>hi</p>'),
      async (site) => {
        const ok = expectKind(await fetchUrl(`${site.base}/page`, options()), 'ok');
        assert.equal(ok.headers['x-robots-tag'], 'otherbot: noindex\nnoindex, nofollow');
        assert.equal(ok.headers.vary, 'accept, cookie');
      },
    );
  });

  const errors: [string, number, Record<string, string>, string, 'permanent' | 'temporary', number?][] = [
    ['404', 404, {}, 'http-404', 'permanent'],
    ['500', 500, {}, 'http-500', 'permanent'],
    ['non-conditional 304', 304, {}, 'non-conditional-304', 'permanent'],
    ['503 without Retry-After', 503, {}, 'http-503', 'permanent'],
    ['503 with Retry-After', 503, { 'retry-after': '120' }, 'http-503', 'temporary', 120_000],
    ['429 without Retry-After', 429, {}, 'http-429', 'temporary', 60_000],
  ];
  for (const [label, status, headers, code, errorKind, retryAfterMs] of errors) {
    it(`maps ${label} to a ${errorKind} error`, async () => {
      await withSite(
        (_req, res) => res.writeHead(status, headers).end(),
        async (site) => {
          const err = expectKind(await fetchUrl(`${site.base}/x`, options()), 'error');
          assert.deepEqual(
            [err.code, err.errorKind, err.status, err.retryAfterMs],
            [code, errorKind, status, retryAfterMs],
          );
        },
      );
    });
  }

  it('sends conditional headers and reads a conditional 304 as not-modified', async () => {
    const lastModified = 'Wed, 01 Jan 2025 00:00:00 GMT';
    await withSite(
      (req, res) => {
        const fresh =
          req.headers['if-none-match'] === '"v1"' && req.headers['if-modified-since'] === lastModified;
        res.writeHead(fresh ? 304 : 200).end();
      },
      async (site) => {
        const out = await fetchUrl(
          `${site.base}/doc`,
          options({ conditional: { etag: '"v1"', lastModified } }),
        );
        assert.equal(expectKind(out, 'not-modified').status, 304);
      },
    );
  });

  it('returns an endless redirect once, with an absolute location, without following it', async () => {
    await withSite(
      (req, res) => res.writeHead(302, { location: `loop?n=${nextHop(req)}` }).end(),
      async (site) => {
        const out = expectKind(await fetchUrl(`${site.base}/a/start`, options()), 'redirect');
        assert.equal(out.location, `${site.base}/a/loop?n=1`);
        assert.equal(site.requests.length, 1);
      },
    );
  });

  const badLocations: [string, string | null][] = [
    ['a malformed Location', 'http://exa mple.com/'],
    ['an unclosed IPv6 host', 'http://[::1/'],
    ['no Location', null],
  ];
  for (const [label, location] of badLocations) {
    it(`gives location null for ${label}`, async () => {
      await withSite(
        (_req, res) => res.writeHead(301, location === null ? {} : { location }).end(),
        async (site) =>
          assert.equal(expectKind(await fetchUrl(`${site.base}/`, options()), 'redirect').location, null),
      );
    });
  }
});

function nextHop(req: http.IncomingMessage): number {
  return Number(new URL(req.url ?? '/', 'http://x').searchParams.get('n') ?? 0) + 1;
}

describe('fetchUrl: hostile bodies', () => {
  it('truncates a body that never ends at maxBytes', async () => {
    await withSite(
      (_req, res) =>
        void stream(res.writeHead(200, { 'content-type': 'text/plain' }), Buffer.alloc(16 * 1024, 97)),
      async (site) => {
        const [out, ms] = await timed(() => fetchUrl(`${site.base}/endless`, options({ maxBytes: 300_000 })));
        const ok = expectKind(out, 'ok');
        assert.deepEqual([ok.body.length, ok.truncated], [300_000, true]);
        console.log(`endless body: ${ms} ms`);
      },
    );
  });

  it('truncates a declared 5 GB body', async () => {
    await withSite(
      (_req, res) =>
        void stream(res.writeHead(200, { 'content-length': '5000000000' }), Buffer.alloc(64 * 1024)),
      async (site) => {
        const [out, ms] = await timed(() =>
          fetchUrl(`${site.base}/big`, options({ maxBytes: 2 * 1024 * 1024 })),
        );
        const ok = expectKind(out, 'ok');
        assert.deepEqual([ok.body.length, ok.truncated], [2 * 1024 * 1024, true]);
        console.log(`5 GB body: ${ms} ms`);
      },
    );
  });

  const bombs: [string, string, () => zlib.Gzip | zlib.BrotliCompress | zlib.Deflate | zlib.DeflateRaw][] = [
    ['gzip', 'gzip', () => zlib.createGzip({ level: 1 })],
    ['br', 'br', () => zlib.createBrotliCompress({ params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 1 } })],
    ['deflate', 'deflate', () => zlib.createDeflate({ level: 1 })],
    ['raw deflate', 'deflate', () => zlib.createDeflateRaw({ level: 1 })],
  ];
  for (const [label, encoding, compressor] of bombs) {
    it(`stops a ${label} bomb (1 GB of zeros) at maxDecompressedBytes`, async () => {
      const produced = { written: 0 };
      await withSite(
        (_req, res) => {
          const packer = compressor();
          packer.pipe(res.writeHead(200, { 'content-encoding': encoding }));
          void stream(packer, Buffer.alloc(256 * 1024), 1024 ** 3).then((s) => {
            produced.written = s.written;
            packer.end();
          });
          res.on('close', () => packer.destroy());
        },
        async (site) => {
          const opts = options({ maxBytes: 10 * 1024 * 1024, maxDecompressedBytes: 1024 * 1024 });
          const [out, ms] = await timed(() => fetchUrl(`${site.base}/bomb`, opts));
          const ok = expectKind(out, 'ok');
          assert.deepEqual(
            [ok.body.length, ok.truncated, ok.body.every((b) => b === 0)],
            [1024 * 1024, true, true],
          );
          await until(() => produced.written > 0);
          assert.ok(produced.written < 256 * 1024 * 1024, `server produced ${produced.written} bytes`);
          console.log(`${label} bomb: ${ms} ms, server inflated-side bytes ${produced.written}`);
        },
      );
    });
  }

  it('decodes what fits when maxBytes cuts a gzip stream', async () => {
    const text = Buffer.from(Array.from({ length: 20_000 }, (_, i) => `line ${i * 7919}\n`).join(''));
    const packed = zlib.gzipSync(text);
    await withSite(
      (_req, res) => res.writeHead(200, { 'content-encoding': 'gzip' }).end(packed),
      async (site) => {
        const ok = expectKind(await fetchUrl(`${site.base}/cut`, options({ maxBytes: 4096 })), 'ok');
        assert.equal(ok.truncated, true);
        assert.ok(ok.body.length > 0 && ok.body.length < text.length);
        assert.ok(text.subarray(0, ok.body.length).equals(Buffer.from(ok.body)));
      },
    );
  });

  it('decodes deflate zlib-wrapped (RFC 9110) and raw (as some servers send it), whole or cut; garbage is content-decoding', async () => {
    const text = Buffer.from(Array.from({ length: 20_000 }, (_, i) => `line ${i * 7919}\n`).join(''));
    for (const packed of [zlib.deflateSync(text), zlib.deflateRawSync(text)]) {
      await withSite(
        (_req, res) => res.writeHead(200, { 'content-encoding': 'deflate' }).end(packed),
        async (site) => {
          const ok = expectKind(await fetchUrl(`${site.base}/d`, options({ maxBytes: 1024 * 1024 })), 'ok');
          assert.deepEqual([Buffer.from(ok.body).equals(text), ok.truncated], [true, false]);
          const cut = expectKind(await fetchUrl(`${site.base}/d`, options({ maxBytes: 4096 })), 'ok');
          assert.equal(cut.truncated, true);
          assert.ok(cut.body.length > 0 && text.subarray(0, cut.body.length).equals(Buffer.from(cut.body)));
        },
      );
    }
    for (const coding of ['deflate', 'gzip', 'br']) {
      await withSite(
        (_req, res) => res.writeHead(200, { 'content-encoding': coding }).end('not compressed at all'),
        async (site) => {
          const err = expectKind(await fetchUrl(`${site.base}/bad`, options()), 'error');
          assert.deepEqual([coding, err.code, err.errorKind], [coding, 'content-decoding', 'permanent']);
        },
      );
    }
  });

  it('undoes stacked codings up to four; more is refused before any decoder is made (a hostile header)', async () => {
    const text = 'hello stacked codings';
    const stacked = (n: number) => {
      let body: Buffer = Buffer.from(text);
      for (let i = 0; i < n; i++) body = zlib.gzipSync(body);
      return body;
    };
    for (const n of [2, 4]) {
      await withSite(
        (_req, res) =>
          res.writeHead(200, { 'content-encoding': Array(n).fill('gzip').join(', ') }).end(stacked(n)),
        async (site) => {
          const ok = expectKind(await fetchUrl(`${site.base}/s`, options()), 'ok');
          assert.equal(Buffer.from(ok.body).toString(), text);
        },
      );
    }
    await withSite(
      (_req, res) => res.writeHead(200, { 'content-encoding': Array(20_000).fill('br').join(',') }).end('x'),
      async (site) => {
        const err = expectKind(await fetchUrl(`${site.base}/many`, options()), 'error');
        assert.deepEqual([err.code, err.errorKind], ['unsupported-encoding', 'permanent']);
        assert.match(err.message, /20000 codings \(at most 4\)/);
      },
    );
  });

  it('passes a body through under a label that is no coding (none, UTF-8, binary: as browsers do); decodes zstd; refuses compress', async () => {
    for (const label of ['none', 'UTF-8', 'binary', 'text/html', 'identity, none']) {
      await withSite(
        (_req, res) => res.writeHead(200, { 'content-encoding': label }).end('<p>plain</p>'),
        async (site) => {
          const ok = expectKind(await fetchUrl(`${site.base}/p`, options()), 'ok');
          assert.equal(Buffer.from(ok.body).toString(), '<p>plain</p>', label);
        },
      );
    }
    await withSite(
      (_req, res) =>
        res.writeHead(200, { 'content-encoding': 'zstd' }).end(zlib.zstdCompressSync('hello zstd')),
      async (site) => {
        const ok = expectKind(await fetchUrl(`${site.base}/z`, options()), 'ok');
        assert.equal(Buffer.from(ok.body).toString(), 'hello zstd');
      },
    );
    await withSite(
      (_req, res) => res.writeHead(200, { 'content-encoding': 'compress' }).end('\x1f\x9d...'),
      async (site) => {
        const err = expectKind(await fetchUrl(`${site.base}/c`, options()), 'error');
        assert.deepEqual([err.code, err.errorKind], ['unsupported-encoding', 'permanent']);
      },
    );
  });

  it('decodes a small gzip page completely', async () => {
    await withSite(
      (_req, res) => res.writeHead(200, { 'content-encoding': 'gzip' }).end(zlib.gzipSync('hello gzip')),
      async (site) => {
        const ok = expectKind(await fetchUrl(`${site.base}/gz`, options()), 'ok');
        assert.deepEqual([Buffer.from(ok.body).toString(), ok.truncated], ['hello gzip', false]);
      },
    );
  });

  it('skips an extensionless video after reading only its headers (seed 004)', async () => {
    const sent = { bytes: 0, closed: false };
    await withSite(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': '5000000000' });
        res.on('close', () => {
          sent.closed = true;
        });
        const drip = setInterval(() => {
          if (res.destroyed || sent.bytes > 50_000_000) return clearInterval(drip);
          res.write(Buffer.alloc(1024));
          sent.bytes += 1024;
        }, 5);
      },
      async (site) => {
        const [out, ms] = await timed(() => fetchUrl(`${site.base}/watch/clip`, options()));
        const skipped = expectKind(out, 'skipped');
        assert.deepEqual([skipped.reason, skipped.mimeType], ['mime-type', 'video/mp4']);
        await until(() => sent.closed);
        assert.ok(sent.bytes <= 8 * 1024, `server sent ${sent.bytes} body bytes`);
        console.log(`video skipped: ${ms} ms, ${sent.bytes} body bytes sent before the client hung up`);
      },
    );
  });

  it('reads the video when metadataFirst is off (the caller filters)', async () => {
    await withSite(
      (_req, res) => res.writeHead(200, { 'content-type': 'video/mp4' }).end('tiny'),
      async (site) => {
        const out = await fetchUrl(`${site.base}/v`, options({ metadataFirst: false }));
        assert.equal(Buffer.from(expectKind(out, 'ok').body).toString(), 'tiny');
      },
    );
  });
});

describe("fetchUrl: large bodies share a byte budget (the fetch invocation's memory)", () => {
  const MB = 1024 * 1024;
  const bigBody = Buffer.alloc(3 * MB, 98);
  const serveBig: Handler = (_req, res) => {
    res
      .writeHead(200, { 'content-type': 'text/plain', 'content-length': String(bigBody.length) })
      .end(bigBody);
  };
  /**
   * A real budget whose peak reservation is recorded, and the number of shares taken. With
   * `together`, no share is handed out before that many bodies have asked for one (or 5 s have
   * passed): all are then past afterBytes at once, whatever order the sockets are read in.
   */
  function watchedBudget(capacity: number, together = 1) {
    const budget = new ByteBudget(() => capacity);
    const seen = { shares: 0, peak: 0 };
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
      setTimeout(resolve, 5000).unref();
    });
    const share = async () => {
      seen.shares++;
      if (seen.shares >= together) open();
      await gate;
      const s = budget.share();
      return {
        reserve: async (bytes: number) => {
          await s.reserve(bytes);
          seen.peak = Math.max(seen.peak, budget.reserved);
        },
        release: () => s.release(),
      };
    };
    return { budget, seen, share };
  }

  it('reads past afterBytes within the budget: four 3 MB bodies, a 2 MB budget, each whole, none stalled', async () => {
    await withSite(serveBig, async (site) => {
      const { budget, seen, share } = watchedBudget(2 * MB);
      const small = await fetchUrl(
        `${site.base}/small`,
        options({ maxBytes: 8 * MB, largeBodies: { afterBytes: 8 * MB, share } }),
      );
      assert.equal(expectKind(small, 'ok').body.length, bigBody.length);
      assert.equal(seen.shares, 0, 'a body under afterBytes takes no share');
      const outs = await Promise.all(
        [0, 1, 2, 3].map((i) =>
          fetchUrl(
            `${site.base}/big${i}`,
            options({ maxBytes: 8 * MB, largeBodies: { afterBytes: MB, share } }),
          ),
        ),
      );
      for (const out of outs)
        assert.ok(Buffer.from(expectKind(out, 'ok').body).equals(bigBody), 'read whole');
      assert.equal(seen.shares, 4);
      // The oldest body may always grow (no two bodies wait on each other); the others share 2 MB.
      assert.ok(seen.peak <= 2 * MB + bigBody.length, `peak ${seen.peak} bytes reserved`);
      assert.equal(budget.reserved, 0, 'every byte given back');
    });
  });

  it('many bodies a little past afterBytes are read side by side, not one at a time', async () => {
    const page = Buffer.alloc(300 * 1024, 99);
    await withSite(
      (_req, res) => res.writeHead(200, { 'content-length': String(page.length) }).end(page),
      async (site) => {
        // All six past afterBytes before any share is handed out: they then hold bytes side by side.
        const { budget, seen, share } = watchedBudget(2 * MB, 6);
        const outs = await Promise.all(
          Array.from({ length: 6 }, (_, i) =>
            fetchUrl(
              `${site.base}/p${i}`,
              options({ maxBytes: 8 * MB, largeBodies: { afterBytes: 64 * 1024, share } }),
            ),
          ),
        );
        for (const out of outs) assert.equal(expectKind(out, 'ok').body.length, page.length);
        assert.equal(seen.shares, 6);
        assert.ok(seen.peak > page.length, `peak ${seen.peak}: more than one body held at once`);
        assert.equal(budget.reserved, 0);
      },
    );
  });

  it('counts a body decoded: a gzip body of a few KB that inflates past afterBytes takes a share', async () => {
    const inflated = Buffer.alloc(4 * MB, 'a');
    const packed = zlib.gzipSync(inflated);
    await withSite(
      (_req, res) => res.writeHead(200, { 'content-encoding': 'gzip' }).end(packed),
      async (site) => {
        const { seen, share } = watchedBudget(MB);
        const out = await fetchUrl(
          `${site.base}/bomb`,
          options({ maxBytes: 8 * MB, largeBodies: { afterBytes: MB, share } }),
        );
        assert.ok(packed.length < MB, `${packed.length} bytes on the wire`);
        assert.ok(Buffer.from(expectKind(out, 'ok').body).equals(inflated), 'the body is decoded whole');
        assert.equal(seen.shares, 1, 'the decoded size took a share');
        assert.equal(seen.peak, inflated.length, 'every decoded byte reserved');
      },
    );
  });

  it('the wait for room does not count towards timeoutMs', async () => {
    await withSite(serveBig, async (site) => {
      const budget = new ByteBudget(() => MB);
      const share = async () => {
        await new Promise((r) => setTimeout(r, 1500));
        return budget.share();
      };
      const out = await fetchUrl(
        `${site.base}/big`,
        options({ timeoutMs: 1000, maxBytes: 8 * MB, largeBodies: { afterBytes: 64 * 1024, share } }),
      );
      assert.equal(expectKind(out, 'ok').body.length, bigBody.length);
    });
  });
});

describe('fetchUrl: bodies past spool.afterBytes go on in a file (the fetch invocation keeps 1 MB of a 10 MB page)', () => {
  const MB = 1024 * 1024;
  /** A fresh folder whose files the test can count; removed afterwards. */
  async function withSpool(run: (spool: { dir: string; file: () => Promise<string> }) => Promise<void>) {
    const dir = mkdtempSync(join(tmpdir(), 'trawl-spool-test-'));
    let n = 0;
    try {
      await run({ dir, file: async () => join(dir, `body-${n++}`) });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  // Every byte differs from its neighbours' position: a chunk out of order or lost would show.
  const body = Buffer.from(Array.from({ length: 3 * MB }, (_, i) => (i * 7 + (i >> 10)) % 251));

  it('a body past afterBytes ends up in the file, byte for byte, and holds no large-body share after', async () => {
    await withSite(
      (_req, res) => res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(body),
      async (site) =>
        withSpool(async (spool) => {
          const budget = new ByteBudget(() => 8 * MB);
          const out = expectKind(
            await fetchUrl(
              `${site.base}/big`,
              options({
                maxBytes: 8 * MB,
                largeBodies: { afterBytes: 64 * 1024, share: async () => budget.share() },
                spool: { afterBytes: MB, file: spool.file },
              }),
            ),
            'ok',
          );
          assert.equal(out.body.length, 0, 'nothing of it in memory');
          assert.ok(out.spooled, 'spooled');
          assert.equal(out.spooled.bytes, body.length);
          assert.ok(readFileSync(out.spooled.path).equals(body), 'the file holds the body');
          assert.equal(out.truncated, false);
          assert.equal(budget.reserved, 0, 'its share went back when it moved to the file');
          // Under afterBytes: in memory as before, no file.
          const small = expectKind(
            await fetchUrl(
              `${site.base}/small`,
              options({ maxBytes: MB - 1, spool: { afterBytes: MB, file: spool.file } }),
            ),
            'ok',
          );
          assert.equal(small.spooled, undefined);
          assert.ok(Buffer.from(small.body).equals(body.subarray(0, MB - 1)));
          assert.equal(small.truncated, true);
          assert.deepEqual(readdirSync(spool.dir), ['body-0']);
        }),
    );
  });

  it('spools the decoded body and keeps the caps: gzip inflating past afterBytes, cut at maxBytes', async () => {
    const text = Buffer.alloc(6 * MB, 'trawl ');
    const packed = zlib.gzipSync(text);
    await withSite(
      (_req, res) =>
        res.writeHead(200, { 'content-encoding': 'gzip', 'content-type': 'text/plain' }).end(packed),
      async (site) =>
        withSpool(async (spool) => {
          const out = expectKind(
            await fetchUrl(
              `${site.base}/gz`,
              options({ maxBytes: 4 * MB, spool: { afterBytes: MB, file: spool.file } }),
            ),
            'ok',
          );
          assert.ok(packed.length < MB, `${packed.length} bytes on the wire`);
          assert.ok(out.spooled);
          assert.equal(out.spooled.bytes, 4 * MB, 'decoded bytes, up to the cap');
          assert.equal(out.truncated, true);
          assert.ok(readFileSync(out.spooled.path).equals(text.subarray(0, 4 * MB)));
        }),
    );
  });

  it('leaves no file behind when the body fails or outlives the deadline', async () => {
    await withSpool(async (spool) => {
      // A reset after 2 MB of a 3 MB body: a temporary error, and its file goes.
      await withTcp(
        (socket) =>
          socket.once('data', () => {
            socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n`);
            socket.write(body.subarray(0, 2 * MB), () => setTimeout(() => socket.resetAndDestroy(), 50));
          }),
        async (port) => {
          const out = await fetchUrl(
            `http://127.0.0.1:${port}/reset`,
            options({ maxBytes: 8 * MB, spool: { afterBytes: MB, file: spool.file } }),
          );
          assert.equal(expectKind(out, 'error').errorKind, 'temporary');
        },
      );
      // 2 MB at once, then a drip past the 1 s deadline: a timeout, and its file goes.
      await withSite(
        (_req, res) => {
          res.writeHead(200, { 'content-length': String(body.length) });
          res.write(body.subarray(0, 2 * MB));
          const drip = setInterval(() => res.write('x'), 100);
          setTimeout(() => {
            clearInterval(drip);
            res.destroy();
          }, HARD_STOP_MS);
          res.on('close', () => clearInterval(drip));
        },
        async (site) => {
          const out = await fetchUrl(
            `${site.base}/drip`,
            options({ timeoutMs: 1000, maxBytes: 8 * MB, spool: { afterBytes: MB, file: spool.file } }),
          );
          assert.equal(expectKind(out, 'error').code, 'timeout');
        },
      );
      // The files were made (the bodies got past afterBytes) and are gone.
      for (let i = 0; i < 50 && readdirSync(spool.dir).length > 0; i++)
        await new Promise((r) => setTimeout(r, 20));
      assert.deepEqual(readdirSync(spool.dir), []);
      assert.ok(!existsSync(join(spool.dir, 'body-0')) && !existsSync(join(spool.dir, 'body-1')));
      assert.equal(await spool.file(), join(spool.dir, 'body-2'), 'two bodies were spooled');
    });
  });
});

describe('fetchUrl: network failures (seed 001)', () => {
  it('reports a connection reset mid-response as temporary', async () => {
    await withTcp(
      (socket) =>
        socket.once('data', () => {
          socket.write('HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n');
          socket.write(Buffer.alloc(1000, 98), () => setTimeout(() => socket.resetAndDestroy(), 20));
        }),
      async (port) => {
        const err = expectKind(await fetchUrl(`http://127.0.0.1:${port}/`, options()), 'error');
        assert.deepEqual([err.errorKind, err.code], ['temporary', 'connection-reset']);
      },
    );
  });

  it('reports a malformed chunked body as the permanent protocol error it is, not a reset', async () => {
    await withTcp(
      (socket) =>
        socket.once('data', () =>
          socket.end(
            'HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n' +
              '10\r\n<html><body>chu\r\nZZZZ\r\nbroken\r\n0\r\n\r\n',
          ),
        ),
      async (port) => {
        const err = expectKind(await fetchUrl(`http://127.0.0.1:${port}/`, options()), 'error');
        assert.deepEqual([err.errorKind, err.code], ['permanent', 'protocol-error']);
        assert.match(err.message, /Parse Error/);
      },
    );
  });

  it('keeps a whole response its Content-Length ended, though more bytes follow it (not a protocol error)', async () => {
    await withTcp(
      (socket) =>
        socket.once('data', () =>
          socket.end(
            'HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 40\r\n\r\n' +
              '<html><title>short</title>ok</html>12345GARBAGE AFTER THE DECLARED BODY',
          ),
        ),
      async (port) => {
        const ok = expectKind(await fetchUrl(`http://127.0.0.1:${port}/`, options()), 'ok');
        assert.equal(Buffer.from(ok.body).toString(), '<html><title>short</title>ok</html>12345');
      },
    );
  });

  it('reports a refused connection as temporary', async () => {
    const probe = net.createServer().listen(0, '127.0.0.1');
    await once(probe, 'listening');
    const { port } = probe.address() as net.AddressInfo;
    probe.close();
    await once(probe, 'close');
    const err = expectKind(await fetchUrl(`http://127.0.0.1:${port}/`, options()), 'error');
    assert.deepEqual([err.errorKind, err.code], ['temporary', 'connection-refused']);
  });

  it('ends a slow drip (1 byte/s) at the overall deadline as a temporary timeout', async () => {
    await withSite(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        const drip = setInterval(() => (res.destroyed ? clearInterval(drip) : res.write('x')), 1000);
        res.on('close', () => clearInterval(drip));
      },
      async (site) => {
        const [out, ms] = await timed(() => fetchUrl(`${site.base}/drip`, options({ timeoutMs: 2500 })));
        const err = expectKind(out, 'error');
        assert.deepEqual([err.errorKind, err.code], ['temporary', 'timeout']);
        // The site answered (its headers came): slow, not silent.
        assert.equal(err.silent, undefined);
        assert.equal(err.message, 'no complete response within 2500 ms');
        // at the deadline, not before it (how soon after is the machine's business, not the test's)
        assert.ok(ms >= 2400, `took ${ms} ms`);
        console.log(`slow drip: ${ms} ms for timeoutMs 2500`);
      },
    );
  });

  it('times out when the headers never come', async () => {
    await withTcp(
      () => {},
      async (port) => {
        const [out, ms] = await timed(() =>
          fetchUrl(`http://127.0.0.1:${port}/`, options({ timeoutMs: 400 })),
        );
        const err = expectKind(out, 'error');
        assert.deepEqual([err.code, err.silent, err.message], ['timeout', true, 'no response within 400 ms']);
        assert.ok(ms >= 350, `took ${ms} ms`);
      },
    );
  });
});

describe('fetchUrl: SSRF guard (allowPrivateNetworks false)', () => {
  const guarded = options({ allowPrivateNetworks: false });
  const refusedWithoutConnecting = async (url: string, opts: FetchOptions, site?: Site) => {
    const connect = mock.method(net, 'connect');
    try {
      const [out] = await timed(() => fetchUrl(url, opts));
      const err = expectKind(out, 'error');
      assert.deepEqual([err.errorKind, err.code], ['permanent', 'private-address']);
      assert.equal(connect.mock.callCount(), 0);
    } finally {
      connect.mock.restore();
    }
    if (site) assert.deepEqual([site.connections, site.requests.length], [0, 0]);
  };

  it('refuses a literal 127.0.0.1 URL', async () => {
    await withSite(
      (_q, r) => r.end('secret'),
      (site) => refusedWithoutConnecting(`${site.base}/`, guarded, site),
    );
  });

  it('refuses a resolve override to 127.0.0.1, and honours it when private networks are allowed', async () => {
    await withSite(
      (req, res) => res.end(req.headers.host),
      async (site) => {
        const url = `http://intranet.test:${site.port}/admin`;
        const resolve = { 'intranet.test': '127.0.0.1' };
        await refusedWithoutConnecting(url, { ...guarded, resolve }, site);
        const connect = mock.method(net, 'connect');
        try {
          const ok = expectKind(await fetchUrl(url, options({ resolve })), 'ok');
          assert.equal(Buffer.from(ok.body).toString(), `intranet.test:${site.port}`); // Host header kept
          // The socket goes to the checked IP itself: nothing re-resolves the name (DNS rebinding).
          assert.deepEqual(connect.mock.calls[0]!.arguments[0], { host: '127.0.0.1', port: site.port });
        } finally {
          connect.mock.restore();
        }
      },
    );
  });

  it('refuses a hostname that resolves to loopback (localhost)', async () => {
    await withSite(
      (_q, r) => r.end('secret'),
      (site) => refusedWithoutConnecting(`http://localhost:${site.port}/`, guarded, site),
    );
  });

  it('refuses [::1]', async () => {
    await withSite(
      (_q, r) => r.end('secret'),
      (site) => refusedWithoutConnecting(`${site.base}/`, guarded, site),
      '::1',
    );
  });

  for (const url of [
    'http://169.254.169.254/latest/meta-data/',
    'http://[::ffff:127.0.0.1]/',
    'http://0x7f.1/',
    'https://10.0.0.1/',
  ]) {
    it(`refuses ${url} without a connection`, () => refusedWithoutConnecting(url, guarded));
  }
});

/** A loopback forward proxy: records each request head, answers plain requests itself, accepts CONNECT. */
function proxyHandler(log: { heads: string[]; hello: Buffer | null }) {
  return (socket: net.Socket) => {
    let buffered = Buffer.alloc(0);
    let tunnelled = false;
    socket.on('data', (chunk: Buffer) => {
      if (tunnelled) {
        log.hello = chunk; // the TLS ClientHello travelling through the tunnel
        socket.destroy();
        return;
      }
      buffered = Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buffered.subarray(0, end).toString('latin1');
      log.heads.push(head);
      if (head.startsWith('CONNECT ')) {
        tunnelled = true;
        socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      } else {
        socket.end('HTTP/1.1 200 OK\r\nContent-Length: 9\r\nConnection: close\r\n\r\nvia proxy');
      }
    });
  };
}

describe('fetchUrl: proxy (SMILA proxyHost/proxyPort)', () => {
  it('sends plain http in absolute-form through the proxy', async () => {
    const log = { heads: [] as string[], hello: null };
    await withTcp(proxyHandler(log), async (port) => {
      // the guard resolves the target before the proxy is asked: fetch.resolve names a public address
      const resolve = { 'origin.test': '93.184.215.14' };
      const opts = options({ proxy: { host: '127.0.0.1', port }, allowPrivateNetworks: false, resolve });
      const ok = expectKind(await fetchUrl('http://origin.test:8080/page?q=1#frag', opts), 'ok');
      assert.equal(Buffer.from(ok.body).toString(), 'via proxy');
      const [line, ...headers] = log.heads[0]!.split('\r\n');
      // The address checked is the one the proxy is asked for, as CONNECT is (it named the host, and
      // the proxy resolved it again, helper-51); the Host header keeps the name.
      assert.equal(line, 'GET http://93.184.215.14:8080/page?q=1 HTTP/1.1');
      assert.ok(headers.includes('host: origin.test:8080'), headers.join('|'));
    });
  });

  it('tunnels https with CONNECT and starts TLS for the URL host inside the tunnel', async () => {
    const log = { heads: [] as string[], hello: null as Buffer | null };
    await withTcp(proxyHandler(log), async (port) => {
      const opts = options({ proxy: { host: '127.0.0.1', port }, allowPrivateNetworks: true });
      const out = await fetchUrl('https://secure.test/private?x=1', opts);
      assert.equal(expectKind(out, 'error').errorKind, 'temporary'); // the fake proxy hangs up after the hello
      // with every target allowed and no fetch.resolve entry, the proxy resolves the name
      assert.equal(log.heads[0]!.split('\r\n')[0], 'CONNECT secure.test:443 HTTP/1.1');
      await until(() => log.hello !== null);
      assert.equal(log.hello![0], 0x16); // TLS handshake record
      assert.ok(log.hello!.includes('secure.test'), 'SNI names the URL host');
    });
  });

  it("a proxy that refuses CONNECT (a 407: it wants a login) is a temporary error: the proxy's, not the site's", async () => {
    // Permanent, one refresh through such a proxy deleted every https page of the crawl.
    const refuse = (socket: net.Socket) =>
      socket.once('data', () =>
        socket.end(
          'HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="p"\r\n\r\n',
        ),
      );
    await withTcp(refuse, async (port) => {
      const opts = options({ proxy: { host: '127.0.0.1', port }, allowPrivateNetworks: true });
      const err = expectKind(await fetchUrl('https://secure.test/page', opts), 'error');
      assert.deepEqual([err.errorKind, err.code, err.status], ['temporary', 'proxy-refused', undefined]);
      assert.match(
        err.message,
        /the proxy 127\.0\.0\.1:\d+ answered CONNECT secure\.test:443 with HTTP 407: it wants a login \(set fetch\.proxy\.username and fetch\.proxy\.password\)/,
      );
    });
  });

  it('honours fetch.resolve through the proxy: CONNECT goes to the mapped address, TLS names the host', async () => {
    const log = { heads: [] as string[], hello: null as Buffer | null };
    await withTcp(proxyHandler(log), async (port) => {
      const resolve = { 'secure.test': '93.184.215.14' };
      const opts = options({ proxy: { host: '127.0.0.1', port }, allowPrivateNetworks: false, resolve });
      await fetchUrl('https://secure.test/x', opts);
      assert.equal(log.heads[0]!.split('\r\n')[0], 'CONNECT 93.184.215.14:443 HTTP/1.1');
      await until(() => log.hello !== null);
      assert.ok(log.hello!.includes('secure.test'), 'SNI names the URL host');
    });
  });

  it('checks host names before the proxy: a name fetch.resolve maps to loopback never reaches it', async () => {
    const log = { heads: [] as string[], hello: null };
    await withTcp(proxyHandler(log), async (port) => {
      const resolve = { 'inside.test': '127.0.0.1', 'meta.test': '169.254.169.254' };
      const opts = options({ proxy: { host: '127.0.0.1', port }, allowPrivateNetworks: false, resolve });
      for (const url of ['http://inside.test/', 'https://meta.test/', 'http://localhost/']) {
        const out = expectKind(await fetchUrl(url, opts), 'error');
        assert.equal(out.code, 'private-address', `${url}: ${out.message}`);
      }
      assert.equal(log.heads.length, 0, 'nothing was sent to the proxy');
    });
  });

  it('allowPrivateNetworks as a list lets just the listed networks through the proxy', async () => {
    const log = { heads: [] as string[], hello: null };
    await withTcp(proxyHandler(log), async (port) => {
      const resolve = { 'wiki.corp': '10.20.0.7', 'db.corp': '10.30.0.7' };
      const allowPrivateNetworks = ['10.20.0.0/16'];
      const opts = options({ proxy: { host: '127.0.0.1', port }, allowPrivateNetworks, resolve });
      assert.equal(expectKind(await fetchUrl('http://wiki.corp/', opts), 'ok').status, 200);
      assert.equal(expectKind(await fetchUrl('http://db.corp/', opts), 'error').code, 'private-address');
      assert.deepEqual(
        log.heads.map((h) => h.split('\r\n')[0]),
        ['GET http://10.20.0.7/ HTTP/1.1'], // the address allowed, as fetch.resolve maps it
      );
    });
  });

  it('still refuses a literal private target through the proxy', async () => {
    const log = { heads: [] as string[], hello: null };
    await withTcp(proxyHandler(log), async (port) => {
      const opts = options({ proxy: { host: '127.0.0.1', port }, allowPrivateNetworks: false });
      assert.equal(expectKind(await fetchUrl('http://10.1.2.3/', opts), 'error').code, 'private-address');
      assert.equal(log.heads.length, 0);
    });
  });
});

import assert from 'node:assert/strict';
import { it } from 'node:test';
import { compileRules, MAX_RULE_DEPTH } from '../../../shared/crawl/rules/rules.ts';
import { ConfigError } from '../../../shared/errors.ts';

function nested(depth: number): unknown {
  let match: unknown = { path: '/a' };
  for (let i = 0; i < depth; i++) match = i % 2 ? { not: match } : { and: [match] };
  return match;
}

it('a rule nested 1,500 deep is a config error naming the field path, not a RangeError', () => {
  assert.throws(
    () => compileRules([{ match: nested(1500), actions: ['ignore'] }] as never),
    (err: unknown) =>
      err instanceof ConfigError && /rules\.0\.match.*nested deeper than 64 levels/.test(err.message),
  );
});

it('a rule nested up to the limit still compiles', () => {
  assert.equal(compileRules([{ match: nested(MAX_RULE_DEPTH), actions: ['ignore'] }] as never).length, 1);
});

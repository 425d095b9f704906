/**
 * User patterns run on RE2 semantics (re2js): `(a+)+$`, which takes JavaScript's backtracking
 * engine about 4× longer per 2 more characters, answers on a 5,000-character path; what RE2
 * cannot run is refused at config load with the field path and the reason.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConfig } from '../../../shared/config.ts';
import { createUrlDecider } from '../../../shared/crawl/rules/decide.ts';
import { compileLinearRegex, linearRegexProblem } from '../../../shared/crawl/rules/linear-regex.ts';
import { compileRules } from '../../../shared/crawl/rules/rules.ts';
import { ConfigError } from '../../../shared/errors.ts';

const LONG = `https://example.com/${'a'.repeat(5000)}!`;

describe('catastrophic patterns answer', () => {
  it('(a+)+$ on a 5,000-character path: no match, and a match without the trailing "!"', () => {
    const re = compileLinearRegex('(a+)+$');
    assert.equal(re.test(LONG), false);
    assert.equal(re.test(LONG.slice(0, -1)), true);
  });

  it('as a rule and as a scope exclude, decided through the real decider', () => {
    // As long as a URL the crawl keeps (2048): backtracking would take ages at a tenth of that.
    const long = `https://example.com/${'a'.repeat(2000)}!`;
    const config = parseConfig({
      name: 'redos',
      startUrls: ['https://example.com/'],
      rules: [{ match: { atom: { field: 'path', kind: 'inside', value: '(a+)+b' } }, actions: ['ignore'] }],
      scope: { exclude: ['(a|aa)+$', '(x+x+)+y'], maxUrlLength: 2048 },
    });
    const decider = createUrlDecider(config);
    const evil = decider.decide(long, { depth: 1 });
    assert.equal(evil.accepted, true, JSON.stringify(evil));
    const excluded = decider.decide(long.slice(0, -1), { depth: 1 });
    assert.deepEqual([excluded.accepted, excluded.reason], [false, 'excluded']);
    const ignored = decider.decide(`https://example.com/${'a'.repeat(2000)}b`, { depth: 1 });
    assert.deepEqual([ignored.accepted, ignored.reason], [false, 'rule 0: ignore']);
  });

  it('case-insensitive unless norm says otherwise, as before', () => {
    const [rule] = compileRules([{ match: { path: '/Docs' }, actions: ['index'] }] as never);
    assert.ok(rule);
    assert.equal(compileLinearRegex('^/DOCS', true).test('/docs/x'), true);
    assert.equal(compileLinearRegex('^/DOCS').test('/docs/x'), false);
  });
});

describe('what RE2 cannot run is refused at load, with the field path and the reason', () => {
  // biome-ignore format: one case per line
  const CASES: [string, Record<string, unknown>, RegExp][] = [
    ['backreference in scope.exclude', { scope: { exclude: ['ok', '(a)\\1'] } }, /scope\.exclude\.1: invalid regular expression "\(a\)\\\\1": backreferences/],
    ['lookahead in scope.include', { scope: { include: ['^/(?!private)'] } }, /scope\.include\.0: .*lookaround/],
    ['lookbehind in a rule', { rules: [{ match: { atom: { field: 'path', kind: 'inside', value: '(?<=x)y' } }, actions: ['ignore'] }] }, /rules\.0\.match\.atom\.value: .*lookaround/],
    ['possessive quantifier in a rule', { rules: [{ match: { atom: { field: 'url', kind: 'inside', value: 'a++' } }, actions: ['ignore'] }] }, /rules\.0\.match\.atom\.value: .*nested repetition/],
  ];
  for (const [label, extra, message] of CASES) {
    it(label, () => {
      const load = () =>
        createUrlDecider(parseConfig({ name: 'bad', startUrls: ['https://e.com/'], ...extra }));
      assert.throws(load, (err: unknown) => err instanceof ConfigError && message.test(err.message));
    });
  }

  it('linearRegexProblem is null for RE2 syntax', () => {
    assert.equal(linearRegexProblem('\\/docs\\/[a-z0-9-]+\\.html$'), null);
  });
});

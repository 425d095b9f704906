/** Bad crawl rules (issue #3): each throws a ConfigError whose message starts with the rule's path. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileRules, parseRange } from '../../../shared/crawl/rules/rules.ts';
import { ConfigError } from '../../../shared/errors.ts';

/** Bad rules: [label, rules, message pattern naming the path]. */
// biome-ignore format: one bad rule per line
const BAD: [string, unknown, RegExp][] = [
  ['unknown atom field', [{ match: { atom: { field: 'port', kind: 'exact', value: '80' } }, actions: ['index'] }], /^rules\.0\.match\.atom\.field: unknown field "port"/],
  ['invalid atom regex', [{ match: { path: '/' }, actions: ['index'] }, { match: { path: '/' }, actions: ['index'] }, { match: { atom: { field: 'url', kind: 'inside', value: 'a(' } }, actions: ['index'] }], /^rules\.2\.match\.atom\.value: invalid regular expression/],
  ['invalid regex names the value and the cause', [{ match: { atom: { field: 'path', kind: 'prefix', value: '/a[' } }, actions: ['index'] }], /^rules\.0\.match\.atom\.value: invalid regular expression "\/a\[": missing closing \]: `\[` \(RE2 syntax\)$/],
  ['literal not a boolean', [{ match: { atom: { field: 'path', kind: 'prefix', value: '/a', literal: 'yes' } }, actions: ['index'] }], /^rules\.0\.match\.atom\.literal: must be true or false/],
  ['unknown atom key', [{ match: { atom: { field: 'path', kind: 'prefix', value: '/a', regex: true } }, actions: ['index'] }], /^rules\.0\.match\.atom\.regex: unknown key/],
  ['bad length range', [{ match: { path: '/' }, actions: ['index'] }, { match: { length: { field: 'path', value: '[a:]' } }, actions: ['index'] }], /^rules\.1\.match\.length\.value: bad range "\[a:\]"/],
  ['inverted length range', [{ match: { atom: { field: 'path', kind: 'length', value: '[9:3]' } }, actions: ['index'] }], /^rules\.0\.match\.atom\.value: bad range/],
  ['unknown kind', [{ match: { atom: { field: 'path', kind: 'middle', value: 'x' } }, actions: ['index'] }], /^rules\.0\.match\.atom\.kind: unknown kind "middle"/],
  ['unknown norm', [{ match: { atom: { field: 'path', kind: 'exact', norm: 'upper', value: 'x' } }, actions: ['index'] }], /^rules\.0\.match\.atom\.norm: unknown norm/],
  ['unknown shortcut', [{ match: { port: '80' }, actions: ['index'] }], /^rules\.0\.match: unknown rule "port"/],
  ['two keys in a match', [{ match: { path: '/a', ext: '.b' }, actions: ['index'] }], /^rules\.0\.match: must have exactly one key/],
  ['nested error path', [{ match: { or: [{ path: '/a' }, { not: { atom: { field: 'x', kind: 'exact', value: '' } } }] }, actions: ['index'] }], /^rules\.0\.match\.or\.1\.not\.atom\.field: unknown field "x"/],
  ['empty and', [{ match: { and: [] }, actions: ['index'] }], /^rules\.0\.match\.and: must be a non-empty list/],
  ['unknown action', [{ match: { path: '/' }, actions: ['index', 'crawl'] }], /^rules\.0\.actions\.1: unknown action "crawl"/],
  ['no actions', [{ match: { path: '/' }, actions: [] }], /^rules\.0\.actions: must be a non-empty list/],
  ['index and noIndex', [{ match: { path: '/' }, actions: ['index', 'noIndex'] }], /^rules\.0\.actions\.1: "noIndex" contradicts/],
  ['accept and ignore', [{ match: { path: '/' }, actions: ['accept', 'ignore'] }], /^rules\.0\.actions: "accept" and "ignore" contradict/],
  ['priority out of range', [{ match: { path: '/' }, actions: [{ priority: 3 }] }], /^rules\.0\.actions\.0\.priority: must be an integer from -2/],
  ['refresh: not a duration', [{ match: { path: '/' }, actions: [{ refresh: { min: 'soon', max: '1d' } }] }], /^rules\.0\.actions\.0\.refresh\.min: not a duration: "soon"/],
  ['refresh: min above max', [{ match: { path: '/' }, actions: [{ refresh: { min: '2d', max: '1d' } }] }], /^rules\.0\.actions\.0\.refresh: min must be positive and not exceed max/],
  ['unknown rule key', [{ match: { path: '/' }, actions: ['index'], when: 1 }], /^rules\.0: unknown key "when"/],
  ['XML: not XML', '<Rules><Rule></Rules>', /^rules: invalid XML at line 1/],
  ['XML: elements never closed, named', '<rules><bad', /^rules: invalid XML at line 1, column 1: <rules>, <bad> never closed$/],
  ['XML: no Rules root', '<Rule><Path val="/"/><Index/></Rule>', /^rules: the XML needs a <Rules> root element/],
  ['XML: unknown element', '<Rules><Rule><Path val="/"/><Crawl/></Rule></Rules>', /^rules\.0\.actions\.0: unknown rule element or action <Crawl>/],
  ['XML: missing val', '<Rules><Rule><Path/><Index/></Rule></Rules>', /^rules\.0\.match\.path: needs a val attribute/],
  ['XML: two match elements', '<Rules><Rule><Path val="/"/><Ext val=".x"/><Index/></Rule></Rules>', /^rules\.0\.match: a <Rule> needs exactly one match element, found 2/],
  ['XML: rule without match', '<Rules><Rule><Index/></Rule></Rules>', /^rules\.0\.match: a <Rule> needs exactly one match element, found 0/],
  ['XML: a misspelt match element is named, not counted as a missing one', '<Rules><Rule><Bogus val="/"/><Index/></Rule></Rules>', /^rules\.0\.actions\.0: unknown rule element or action <Bogus>/],
  ['XML: bad atom field (path)', '<Rules><Rule><Atom field="port" kind="exact" value="1"/><Index/></Rule></Rules>', /^rules\.0\.match\.atom\.field: unknown field "port"/],
  ['XML: bad priority', '<Rules><Rule><Path val="/"/><Priority shift="high"/></Rule></Rules>', /^rules\.0\.actions\.0\.priority: <Priority shift> must be a whole number -2\.\.2, got "high"/],
  ['XML: empty priority', '<Rules><Rule><Path val="/"/><Priority shift=" "/></Rule></Rules>', /^rules\.0\.actions\.0\.priority: <Priority shift> must be a whole number -2\.\.2, got ""/],
  ['XML: priority without shift', '<Rules><Rule><Path val="/"/><Priority/></Rule></Rules>', /^rules\.0\.actions\.0\.priority: <Priority shift> must be a whole number -2\.\.2, got ""/],
  ['XML: priority in hex', '<Rules><Rule><Path val="/"/><Priority shift="0x2"/></Rule></Rules>', /must be a whole number -2\.\.2, got "0x2"/],
  ['XML: priority out of range', '<Rules><Rule><Path val="/"/><Priority shift="3"/></Rule></Rules>', /^rules\.0\.actions\.0/],
  ['XML: AddMeta without a value', '<Rules><Rule><Path val="/"/><AddMeta name="team"/></Rule></Rules>', /^rules\.0\.actions\.0: <AddMeta> needs a value attribute/],
  ['XML: a shortcut with elements inside (they were ignored)', '<Rules><Rule><Path val="/a"><Host val="x.test"/></Path><Index/></Rule></Rules>', /^rules\.0\.match: <Path> takes attributes only, not <Host> inside it/],
  ['XML: an atom with elements inside', '<Rules><Rule><And><Path val="/"/><Atom field="host" kind="exact" value="x"><Not/></Atom></And><Index/></Rule></Rules>', /^rules\.0\.match\.and\.1: <Atom> takes attributes only, not <Not> inside it/],
  ['XML: an action with elements inside', '<Rules><Rule><Path val="/"/><Index><Follow/></Index></Rule></Rules>', /^rules\.0\.actions\.0: <Index> takes attributes only, not <Follow> inside it/],
  ['XML: an unknown element with elements inside is still unknown', '<Rules><Rule><Path val="/"/><Port val="1"><Index/></Port></Rule></Rules>', /^rules\.0\.actions\.0: unknown rule element or action <Port>/],
  ['XML: bad regex', '<Rules><Rule><Or><Path val="/"/><Atom field="url" kind="inside" value="("/></Or><Index/></Rule></Rules>', /^rules\.0\.match\.or\.1\.atom\.value: invalid regular expression/],
];

describe('crawl rules: bad rules throw ConfigError naming the path', () => {
  for (const [label, rules, pattern] of BAD) {
    it(label, () =>
      assert.throws(
        () => compileRules(rules as never),
        (e: unknown) => e instanceof ConfigError && pattern.test(e.message),
      ),
    );
  }
});

describe('parseRange', () => {
  const cases: [string, [number, number]][] = [
    ['[:10]', [0, 10]],
    ['[11:12]', [11, 12]],
    ['[30:]', [30, Number.POSITIVE_INFINITY]],
    ['[ 1 : 2 ]', [1, 2]],
  ];
  for (const [text, range] of cases)
    it(`${text} -> ${range}`, () => assert.deepEqual(parseRange(text), range));
});
